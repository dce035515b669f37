/*
 * fast/conv/conv2d_dw3_kern.h — 3 x 3 depthwise conv of one plane with
 * stride 1 and no dilation down the rows, written once over the vector
 * ISA: three output rows in rotation, each input row loaded once per tap
 * column for the three output rows that read it, x read in place under
 * lane masks (no padded copy, no buffer). conv2d_dw_avx512.c (16 lanes,
 * mask registers) and conv2d_dw_avx2.c (8 lanes, vector masks) define
 * before including it:
 *   D3_L (lanes), D3_NV (vectors a strip at most, 4 at most: the
 *   accumulators of three rows must fit the registers), D3_VEC, D3_MASK,
 *   D3_LANES(lo, hi) (lanes lo .. hi - 1, both clipped to 0 .. D3_L),
 *   D3_MLOAD(m, p) (zeros where m is clear, nothing read there),
 *   D3_LOADU, D3_FMA, D3_SET1, D3_ASM_VEC(x) (the register constraint
 *   that pins a vector) and D3_PLANE_FN (the function's name).
 * Included after conv2d_dw_kern.h with the same vector type: its dw_store
 * writes the output vectors.
 */
#include <stdbool.h>
#include <stdint.h>

#include "conv2d.h"

/* How a strip's loads are masked: every vector to the row's columns; only
 * its first and last (the vectors between lie inside an undilated row:
 * their masks would not fit the registers, and each one moved in from
 * memory costs a port the FMAs use); none (all of it inside). */
enum { DW3_MASK_ALL, DW3_MASK_EDGES, DW3_MASK_NONE };

/* Tap s of vector v at q, masked as mode says. */
#define DW3_LOAD(v, s, q)                                                                          \
  (mode == DW3_MASK_NONE  ? D3_LOADU(q)                                                            \
   : mode == DW3_MASK_ALL ? D3_MLOAD(lm[v][s], q)                                                  \
   : (v) == 0             ? D3_MLOAD(first##s, q)                                                  \
   : (v) == nv - 1        ? D3_MLOAD(last##s, q)                                                   \
                          : D3_LOADU(q))

/* Vector v (a constant) of step k: its three taps of the input row at p_
 * (each loaded once) meet tap row 0 of output row k (N, started at the
 * bias), tap row 1 of row k - 1 (M) and tap row 2 of row k - 2 (F). */
#define DW3_VEC(v, N, M, F)                                                                        \
  if ((v) < nv) {                                                                                  \
    const float *q_ = p_ + D3_L * (v);                                                             \
    D3_VEC x0 = DW3_LOAD(v, 0, q_);                                                                \
    __asm__("" : D3_ASM_VEC(x0)); /* one load for three FMAs, not one each */                      \
    N##v = D3_FMA(w00, x0, vb);                                                                    \
    M##v = D3_FMA(w10, x0, M##v);                                                                  \
    F##v = D3_FMA(w20, x0, F##v);                                                                  \
    D3_VEC x1 = DW3_LOAD(v, 1, q_ + dw);                                                           \
    __asm__("" : D3_ASM_VEC(x1));                                                                  \
    N##v = D3_FMA(w01, x1, N##v);                                                                  \
    M##v = D3_FMA(w11, x1, M##v);                                                                  \
    F##v = D3_FMA(w21, x1, F##v);                                                                  \
    D3_VEC x2 = DW3_LOAD(v, 2, q_ + 2 * dw);                                                       \
    __asm__("" : D3_ASM_VEC(x2));                                                                  \
    N##v = D3_FMA(w02, x2, N##v);                                                                  \
    M##v = D3_FMA(w12, x2, M##v);                                                                  \
    F##v = D3_FMA(w22, x2, F##v);                                                                  \
  }

/* Step k of a strip: input row k - ph, when inside the plane, meets the
 * three output rows that read it; row k - 2 (F) is then complete and
 * stored. The accumulators are named variables, not arrays: as arrays GCC
 * kept them on the stack. */
#define DW3_STEP(k, N, M, F)                                                                       \
  do {                                                                                             \
    int64_t i_ = (k)-ph;                                                                           \
    if (i_ >= 0 && i_ < H) {                                                                       \
      const float *p_ = x + i_ * sxh + ow0 - pw;                                                   \
      DW3_VEC(0, N, M, F) DW3_VEC(1, N, M, F) DW3_VEC(2, N, M, F) DW3_VEC(3, N, M, F)              \
    } else                                                                                         \
      N##0 = N##1 = N##2 = N##3 = vb;                                                              \
    if ((k) >= 2) {                                                                                \
      float *yr_ = y + ((k)-2) * Q + ow0;                                                          \
      dw_store(yr_, F##0, nv > 1 ? D3_L : left, nt);                                               \
      if (nv > 1) dw_store(yr_ + D3_L, F##1, nv > 2 ? D3_L : left, nt);                            \
      if (nv > 2) dw_store(yr_ + 2 * D3_L, F##2, nv > 3 ? D3_L : left, nt);                        \
      if (nv > 3) dw_store(yr_ + 3 * D3_L, F##3, left, nt);                                        \
    }                                                                                              \
  } while (0)

/* Output columns ow0 .. ow0 + D3_L nv - 1 (the last vector's lanes past Q
 * left out) of every row, walking down the plane: k runs over the P + 2
 * input rows the output rows read, and the three accumulator sets trade
 * roles each step (unrolled by three, so no set is copied). */
static inline __attribute__((always_inline)) void dw3_strip(const cpu_fast_dw_geom_t *g,
                                                            const float *x, const float *w,
                                                            D3_VEC vb, float *y, int64_t ow0,
                                                            int nv, int mode, int nt) {
  /* undilated rows unless all masked, so every load is the row pointer
   * plus a constant */
  const int64_t H = g->H, Q = g->Q, ph = g->ph, pw = g->pw, sxh = g->sxh;
  const int64_t dw = mode == DW3_MASK_ALL ? g->dw : 1;
  const int64_t left = Q - ow0 - D3_L * (nv - 1); /* lanes of the last vector in the row */
  const D3_VEC w00 = D3_SET1(w[0]), w01 = D3_SET1(w[1]), w02 = D3_SET1(w[2]);
  const D3_VEC w10 = D3_SET1(w[3]), w11 = D3_SET1(w[4]), w12 = D3_SET1(w[5]);
  const D3_VEC w20 = D3_SET1(w[6]), w21 = D3_SET1(w[7]), w22 = D3_SET1(w[8]);
  D3_MASK lm[4][3]; /* as many as DW3_STEP names (vectors past nv: none) */
  for (int v = 0; v < 4; v++) {
    int64_t o = ow0 + D3_L * v, out = v < nv ? Q - o : 0; /* the vector's lanes in the row */
    for (int s = 0; s < 3; s++) {
      int64_t c0 = o - pw + s * dw; /* input column of lane 0 */
      lm[v][s] = D3_LANES(-c0, g->W - c0 < out ? g->W - c0 : out);
    }
  }
  /* the edge vectors' masks as scalars, which the compiler can keep in
   * registers */
  const D3_MASK first0 = lm[0][0], first1 = lm[0][1], first2 = lm[0][2];
  const D3_MASK last0 = lm[nv - 1][0], last1 = lm[nv - 1][1], last2 = lm[nv - 1][2];
  D3_VEC A0 = vb, A1 = vb, A2 = vb, A3 = vb, B0 = vb, B1 = vb, B2 = vb, B3 = vb;
  D3_VEC C0 = vb, C1 = vb, C2 = vb, C3 = vb;
  int64_t end = g->P + 2;
  for (int64_t k = 0; k < end; k += 3) {
    DW3_STEP(k, A, B, C);
    if (k + 1 >= end) break;
    DW3_STEP(k + 1, C, A, B);
    if (k + 2 >= end) break;
    DW3_STEP(k + 2, B, C, A);
  }
}

/* Whether vector v's three taps (undilated) lie inside the row. */
static bool dw3_inside(const cpu_fast_dw_geom_t *g, int64_t ow0, int64_t v) {
  for (int64_t s = 0; s < 3; s++) {
    int64_t c0 = ow0 + D3_L * v - g->pw + s;
    if (c0 < 0 || c0 + D3_L > g->W) return false;
  }
  return true;
}

/* How the strip's loads must be masked (DW3_MASK_*). A last vector that
 * runs past the output row is masked even inside the input row: its
 * lanes past Q would read columns the row does not have. */
static int dw3_mode(const cpu_fast_dw_geom_t *g, int64_t ow0, int64_t nv) {
  if (g->dw != 1) return DW3_MASK_ALL;
  for (int64_t v = 1; v + 1 < nv; v++)
    if (!dw3_inside(g, ow0, v)) return DW3_MASK_ALL;
  bool ends = dw3_inside(g, ow0, 0) && dw3_inside(g, ow0, nv - 1) && ow0 + D3_L * nv <= g->Q;
  return ends ? DW3_MASK_NONE : DW3_MASK_EDGES;
}

void D3_PLANE_FN(const cpu_fast_dw_geom_t *g, const float *x, const float *w, float bias, float *y,
                 int nt) {
  const D3_VEC vb = D3_SET1(bias);
  /* strips of at most D3_NV vectors, of about equal width */
  int64_t nvec = (g->Q + D3_L - 1) / D3_L, strips = (nvec + D3_NV - 1) / D3_NV;
  for (int64_t k = 0; k < strips; k++) {
    int64_t v0 = k * nvec / strips, nv = (k + 1) * nvec / strips - v0;
    int mode = dw3_mode(g, D3_L * v0, nv);
#define DW3_CALL(n)                                                                                \
  do {                                                                                             \
    if (mode == DW3_MASK_NONE)                                                                     \
      dw3_strip(g, x, w, vb, y, D3_L *v0, n, DW3_MASK_NONE, nt);                                   \
    else if (mode == DW3_MASK_EDGES)                                                               \
      dw3_strip(g, x, w, vb, y, D3_L *v0, n, DW3_MASK_EDGES, nt);                                  \
    else                                                                                           \
      dw3_strip(g, x, w, vb, y, D3_L *v0, n, DW3_MASK_ALL, nt);                                    \
  } while (0)
    switch (nv) {
#if D3_NV > 3
    case 4:
      DW3_CALL(4);
      break;
#endif
    case 3:
      DW3_CALL(3);
      break;
    case 2:
      DW3_CALL(2);
      break;
    default:
      DW3_CALL(1);
      break;
    }
#undef DW3_CALL
  }
}
