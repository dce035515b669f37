/*
 * fast/conv/conv2d_dw_avx512.c — the depthwise stencils of one plane for
 * stride-1 rows, AVX-512 (fast.mk): fast/conv/conv2d_dw_kern.h with 16
 * lanes and masked tails, and the 3 x 3 stride-1 kernel that keeps three
 * output rows in flight and reads x in place under lane masks
 * (cpu_fast_conv_dw3_plane_avx512).
 */
#include <immintrin.h>
#include <stdbool.h>

#define DW_L 16
#define DW_VEC __m512
#define DW_SET1(x) _mm512_set1_ps(x)
#define DW_FMA _mm512_fmadd_ps
#define DW_LOADU _mm512_loadu_ps
#define DW_ZERO _mm512_setzero_ps
#define DW_STORE _mm512_store_ps
#define DW_STOREU _mm512_storeu_ps
#define DW_STREAM _mm512_stream_ps
#define DW_STORE_FIRST(d, v, n) _mm512_mask_storeu_ps(d, (__mmask16)((1u << (n)) - 1), v)
#define DW_LOAD_FIRST(s, n) _mm512_maskz_loadu_ps((__mmask16)((1u << (n)) - 1), s)
#define DW_ASM_VEC(x) "+v"(x)
#define DW_PLANE_FN cpu_fast_conv_dw_plane_avx512
#include "conv2d_dw_kern.h"

/* ---- 3 x 3, stride 1 down the rows: three output rows in rotation ------ */

#define DW3_NV 4 /* vectors of a strip: 3 rows x 4 accumulators, 9 weights */

/* Lanes lo .. hi - 1 of a 16-lane mask, both clipped to 0 .. 16. */
static inline __mmask16 dw3_lanes(int64_t lo, int64_t hi) {
  lo = lo < 0 ? 0 : lo, hi = hi > 16 ? 16 : hi;
  if (hi <= lo) return 0;
  return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* One output vector: sm its lanes inside the row; streamed past the cache
 * when nt, whole and aligned. */
static inline __attribute__((always_inline)) void dw3_store(float *d, __m512 v, __mmask16 sm,
                                                            int nt) {
  if (sm != 0xFFFF)
    _mm512_mask_storeu_ps(d, sm, v);
  else if (nt && ((uintptr_t)d & 63) == 0)
    _mm512_stream_ps(d, v);
  else
    _mm512_storeu_ps(d, v);
}

/* Tap s of vector v at q: masked to the row's columns, except for the
 * vectors between the first and the last when edges says they lie inside
 * the row and the row is not dilated (the masks would not fit the mask
 * registers, and each one moved in from memory costs a port the FMAs
 * use). */
#define DW3_LOAD(v, s, q)                                                                          \
  (!edges          ? _mm512_maskz_loadu_ps(lm[v][s], q)                                            \
   : (v) == 0      ? _mm512_maskz_loadu_ps(first##s, q)                                            \
   : (v) == nv - 1 ? _mm512_maskz_loadu_ps(last##s, q)                                             \
                   : _mm512_loadu_ps(q))

/* Vector v (a constant) of step k: its three taps of the input row at p_
 * (each loaded once, masked to the row's columns, so the padding is never
 * read nor copied) meet tap row 0 of output row k (N, started at the
 * bias), tap row 1 of row k - 1 (M) and tap row 2 of row k - 2 (F). */
#define DW3_VEC(v, N, M, F)                                                                        \
  if ((v) < nv) {                                                                                  \
    const float *q_ = p_ + 16 * (v);                                                               \
    __m512 x0 = DW3_LOAD(v, 0, q_);                                                                \
    __m512 x1 = DW3_LOAD(v, 1, q_ + dw);                                                           \
    __m512 x2 = DW3_LOAD(v, 2, q_ + 2 * dw);                                                       \
    __asm__("" : "+v"(x0), "+v"(x1), "+v"(x2)); /* one load for three FMAs, not one each */       \
    N##v = _mm512_fmadd_ps(w00, x0, vb);                                                           \
    M##v = _mm512_fmadd_ps(w10, x0, M##v);                                                         \
    F##v = _mm512_fmadd_ps(w20, x0, F##v);                                                         \
    N##v = _mm512_fmadd_ps(w01, x1, N##v);                                                         \
    M##v = _mm512_fmadd_ps(w11, x1, M##v);                                                         \
    F##v = _mm512_fmadd_ps(w21, x1, F##v);                                                         \
    N##v = _mm512_fmadd_ps(w02, x2, N##v);                                                         \
    M##v = _mm512_fmadd_ps(w12, x2, M##v);                                                         \
    F##v = _mm512_fmadd_ps(w22, x2, F##v);                                                         \
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
      dw3_store(yr_, F##0, nv > 1 ? 0xFFFF : sm[0], nt);                                           \
      if (nv > 1) dw3_store(yr_ + 16, F##1, nv > 2 ? 0xFFFF : sm[1], nt);                          \
      if (nv > 2) dw3_store(yr_ + 32, F##2, nv > 3 ? 0xFFFF : sm[2], nt);                          \
      if (nv > 3) dw3_store(yr_ + 48, F##3, sm[3], nt);                                            \
    }                                                                                              \
  } while (0)

/* Output columns ow0 .. ow0 + 16 nv - 1 (the last vector's lanes past Q
 * masked off) of every row, walking down the plane: k runs over the P + 2
 * input rows the output rows read, and the three accumulator sets trade
 * roles each step (unrolled by three, so no set is copied). */
static inline __attribute__((always_inline)) void dw3_strip(const cpu_fast_dw_geom_t *g,
                                                            const float *x, const float *w,
                                                            __m512 vb, float *y, int64_t ow0,
                                                            int nv, bool edges, int nt) {
  /* fast: undilated rows, so every load is the row pointer plus a constant */
  const int64_t H = g->H, Q = g->Q, ph = g->ph, pw = g->pw, dw = edges ? 1 : g->dw, sxh = g->sxh;
  const __m512 w00 = _mm512_set1_ps(w[0]), w01 = _mm512_set1_ps(w[1]), w02 = _mm512_set1_ps(w[2]);
  const __m512 w10 = _mm512_set1_ps(w[3]), w11 = _mm512_set1_ps(w[4]), w12 = _mm512_set1_ps(w[5]);
  const __m512 w20 = _mm512_set1_ps(w[6]), w21 = _mm512_set1_ps(w[7]), w22 = _mm512_set1_ps(w[8]);
  __mmask16 lm[DW3_NV][3], sm[DW3_NV];
  for (int v = 0; v < DW3_NV; v++) {
    int64_t o = ow0 + 16 * v;
    sm[v] = v < nv ? dw3_lanes(0, Q - o) : 0;
    for (int s = 0; s < 3; s++) {
      int64_t c0 = o - pw + s * dw; /* input column of lane 0 */
      lm[v][s] = dw3_lanes(-c0, g->W - c0) & sm[v];
    }
  }
  /* the edge vectors' masks as scalars, which GCC keeps in registers */
  const __mmask16 first0 = lm[0][0], first1 = lm[0][1], first2 = lm[0][2];
  const __mmask16 last0 = lm[nv - 1][0], last1 = lm[nv - 1][1], last2 = lm[nv - 1][2];
  __m512 A0 = vb, A1 = vb, A2 = vb, A3 = vb, B0 = vb, B1 = vb, B2 = vb, B3 = vb;
  __m512 C0 = vb, C1 = vb, C2 = vb, C3 = vb;
  int64_t end = g->P + 2;
  for (int64_t k = 0; k < end; k += 3) {
    DW3_STEP(k, A, B, C);
    if (k + 1 >= end) break;
    DW3_STEP(k + 1, C, A, B);
    if (k + 2 >= end) break;
    DW3_STEP(k + 2, B, C, A);
  }
}

/* Whether the row is not dilated and every tap of the strip's vectors
 * between its first and its last lies inside it (only those two then need
 * masks). */
static bool dw3_edges_only(const cpu_fast_dw_geom_t *g, int64_t ow0, int64_t nv) {
  if (g->dw != 1) return false;
  for (int64_t v = 1; v + 1 < nv; v++)
    for (int64_t s = 0; s < 3; s++) {
      int64_t c0 = ow0 + 16 * v - g->pw + s * g->dw;
      if (c0 < 0 || c0 + 16 > g->W) return false;
    }
  return true;
}

void cpu_fast_conv_dw3_plane_avx512(const cpu_fast_dw_geom_t *g, const float *x, const float *w,
                                    float bias, float *y, int nt) {
  const __m512 vb = _mm512_set1_ps(bias);
  /* strips of at most DW3_NV vectors, of about equal width */
  int64_t nvec = (g->Q + 15) / 16, strips = (nvec + DW3_NV - 1) / DW3_NV;
  for (int64_t k = 0; k < strips; k++) {
    int64_t v0 = k * nvec / strips, nv = (k + 1) * nvec / strips - v0;
    bool e = dw3_edges_only(g, 16 * v0, nv);
#define DW3_CALL(n)                                                                                \
  do {                                                                                             \
    if (e)                                                                                         \
      dw3_strip(g, x, w, vb, y, 16 * v0, n, true, nt);                                             \
    else                                                                                           \
      dw3_strip(g, x, w, vb, y, 16 * v0, n, false, nt);                                            \
  } while (0)
    switch (nv) {
    case 4:
      DW3_CALL(4);
      break;
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
