/*
 * fast/conv/conv2d_dw_kern.h — the depthwise stencil of one plane for
 * stride-1 rows, written once over the vector ISA: conv2d_dw_avx2.c
 * (8 lanes, AVX2 + FMA) and conv2d_dw_avx512.c (16 lanes, AVX-512) define
 * the macros below and include it; fast/conv/conv2d.c calls the plane
 * function only after the CPUID check. Same contract as
 * cpu_fast_vec_kernels_t.dw_plane (fast/vec.h) with g->sw == 1, and a
 * buffer of g->Hp + 2 rows of g->Wp (a multiple of DW_L).
 * The plane is copied into the zero-padded buffer with aligned whole-vector
 * moves and no calls (it then sits in L1 for the R output rows that read
 * each input row); output vectors are independent accumulators kept in
 * registers (on the stack, every FMA would wait for a store and a reload
 * of its accumulator), two output rows at a time where stride and
 * dilation down the rows are 1, so each input vector loaded feeds both
 * rows' FMAs. Outputs of cpu_fast_nt_min_bytes() and more are stored past
 * the cache (nt; the caller fences).
 *
 * The including file defines: DW_L (lanes), DW_VEC (the vector type),
 * DW_SET1, DW_FMA, DW_LOADU, DW_ZERO, DW_STORE (aligned), DW_STOREU,
 * DW_STREAM, DW_STORE_FIRST(d, v, n) and DW_LOAD_FIRST(s, n) (the first n
 * lanes only, nothing past them touched), DW_ASM_VEC(x) (the register
 * constraint that pins a vector) and DW_PLANE_FN (the function's name).
 */
#include <stdint.h>

#include "conv2d.h"

#define DW_NV 8  /* output vectors in flight, one row */
#define DW_NV2 6 /* output vectors per row, two rows at once */

/* One output vector: left lanes of it are inside the row (all when DW_L
 * or more), streamed past the cache when nt and aligned. */
static inline __attribute__((always_inline)) void dw_store(float *d, DW_VEC v, int64_t left,
                                                           int nt) {
  if (left < DW_L)
    DW_STORE_FIRST(d, v, left);
  else if (nt && ((uintptr_t)d & (sizeof(DW_VEC) - 1)) == 0)
    DW_STREAM(d, v);
  else
    DW_STOREU(d, v);
}

/* nv vectors of one output row from ow on (the last may be partial): the
 * taps read rows + toff[t] + ow, all inside the padded buffer. */
static inline __attribute__((always_inline)) void dw_strip(const float *rows, const int64_t *toff,
                                                           const float *w, int64_t taps, DW_VEC vb,
                                                           float *yr, int64_t ow, int64_t Q, int nv,
                                                           int nt) {
  DW_VEC acc[DW_NV];
  _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) acc[v] = vb;
  for (int64_t t = 0; t < taps; t++) {
    DW_VEC wt = DW_SET1(w[t]);
    const float *src = rows + toff[t] + ow;
    _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) acc[v] =
        DW_FMA(wt, DW_LOADU(src + DW_L * v), acc[v]);
  }
  _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++)
      dw_store(yr + ow + DW_L * v, acc[v], Q - ow - DW_L * v, nt);
}

/* Two output rows (sh == dh == 1): nv vectors from ow on of rows oh and oh
 * + 1, whose R + 1 input rows start at rows. Each input vector is loaded
 * once and meets the weights of both output rows that read it, so the
 * loads per FMA drop from 1 to (R + 1) / (2 R). */
static inline __attribute__((always_inline)) void dw_strip2(const float *rows, int64_t Wp,
                                                            const float *w, int64_t R, int64_t S,
                                                            int64_t dw, DW_VEC vb, float *yr,
                                                            int64_t ow, int64_t Q, int nv, int nt) {
  DW_VEC a0[DW_NV2], a1[DW_NV2];
  _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) a0[v] = a1[v] = vb;
  for (int64_t s = 0; s < S; s++) {
    const float *src = rows + s * dw + ow;
    DW_VEC wa = DW_SET1(w[s]); /* input row 0: output row 0 only */
    _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) a0[v] =
        DW_FMA(wa, DW_LOADU(src + DW_L * v), a0[v]);
    for (int64_t i = 1; i < R; i++) {
      const float *si = src + i * Wp;
      DW_VEC w0 = DW_SET1(w[i * S + s]), w1 = DW_SET1(w[(i - 1) * S + s]);
      _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) {
        DW_VEC xv = DW_LOADU(si + DW_L * v);
        __asm__("" : DW_ASM_VEC(xv)); /* one load for both FMAs, not one each */
        a0[v] = DW_FMA(w0, xv, a0[v]);
        a1[v] = DW_FMA(w1, xv, a1[v]);
      }
    }
    DW_VEC wb = DW_SET1(w[(R - 1) * S + s]); /* row R: output row 1 only */
    _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) a1[v] =
        DW_FMA(wb, DW_LOADU(src + R * Wp + DW_L * v), a1[v]);
  }
  _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) {
    dw_store(yr + ow + DW_L * v, a0[v], Q - ow - DW_L * v, nt);
    dw_store(yr + Q + ow + DW_L * v, a1[v], Q - ow - DW_L * v, nt);
  }
}

/* Zeros from d (vector-aligned) in whole vectors until end or past it:
 * a few stores, inline (the compiler would make a loop of them a call). */
static inline void dw_zero(float *d, const float *end) {
  const DW_VEC z = DW_ZERO();
  for (; d < end; d += DW_L) {
    DW_STORE(d, z);
    __asm__("" : "+r"(d));
  }
}

/* Input row s (W floats, unit stride) into d with pw zeros before it and
 * zeros after it up to Wp, in whole aligned vectors (d + pw is
 * vector-aligned, Wp a multiple of DW_L): the last vector of the row is a masked
 * load, so nothing past the row is read. The zeros before d + pw may
 * reach back into the previous row's trailing zeros, those after d + Wp
 * into the next row's leading pad (written after this row). */
static inline void dw_copy_row(const float *s, int64_t W, int64_t pw, int64_t Wp, float *d) {
  dw_zero(d + pw % DW_L - (pw % DW_L ? DW_L : 0), d + pw);
  float *o = d + pw;
  int64_t i = 0;
  for (; i + DW_L <= W; i += DW_L) DW_STORE(o + i, DW_LOADU(s + i));
  if (i < W) {
    DW_STORE(o + i, DW_LOAD_FIRST(s + i, W - i));
    i += DW_L;
  }
  dw_zero(o + i, d + Wp);
}

/* The cases of a switch on nv calling CALL(n) with n = nv for nv <= 6,
 * a constant, so the kernels unroll. */
#define DW_CASES6(CALL)                                                                            \
  case 6:                                                                                          \
    CALL(6);                                                                                       \
    break;                                                                                         \
  case 5:                                                                                          \
    CALL(5);                                                                                       \
    break;                                                                                         \
  case 4:                                                                                          \
    CALL(4);                                                                                       \
    break;                                                                                         \
  case 3:                                                                                          \
    CALL(3);                                                                                       \
    break;                                                                                         \
  case 2:                                                                                          \
    CALL(2);                                                                                       \
    break;                                                                                         \
  default:                                                                                         \
    CALL(1);                                                                                       \
    break;

void DW_PLANE_FN(const cpu_fast_dw_geom_t *g, const float *x, const float *w, float bias, float *y,
                 float *buf, int nt) {
  const int64_t Wp = g->Wp, Q = g->Q, R = g->R, S = g->S;
  /* the padded plane: rows of Wp (a multiple of DW_L) from buf + lead, so
   * that each row's copy (d + pw) is vector-aligned; buf holds Hp + 2
   * rows (see conv_depthwise), for the lead and the last row's spill */
  int64_t lead = (DW_L - g->pw % DW_L) % DW_L;
  float *b0 = buf + lead;
  for (int64_t h = 0; h < g->Hp; h++) {
    int64_t ih = h - g->ph;
    float *d = b0 + h * Wp;
    const float *s = x + ih * g->sxh;
    if (ih >= 0 && ih < g->H && g->sxw == 1) {
      dw_copy_row(s, g->W, g->pw, Wp, d);
      continue;
    }
    dw_zero(d - lead, d + Wp);
    if (ih >= 0 && ih < g->H)
      for (int64_t c = 0; c < g->W; c++) d[g->pw + c] = s[c * g->sxw];
  }
  const DW_VEC vb = DW_SET1(bias);
  int64_t oh = 0;
  if (g->sh == 1 && g->dh == 1) {
    /* two output rows at a time, in strips of at most DW_NV2 vectors of
     * about equal width */
    int64_t nvec = (Q + DW_L - 1) / DW_L, strips = (nvec + DW_NV2 - 1) / DW_NV2;
    for (; oh + 2 <= g->P; oh += 2)
      for (int64_t k = 0; k < strips; k++) {
        int64_t v0 = k * nvec / strips, nv = (k + 1) * nvec / strips - v0;
#define DW_CALL2(n) dw_strip2(b0 + oh * Wp, Wp, w, R, S, g->dw, vb, y + oh * Q, DW_L * v0, Q, n, nt)
        switch (nv) { DW_CASES6(DW_CALL2) }
#undef DW_CALL2
      }
  }
  int64_t toff[64]; /* tap (r, s): offset from the output row's first row */
  for (int64_t r = 0; r < R; r++)
    for (int64_t s = 0; s < S; s++) toff[r * S + s] = r * g->dh * Wp + s * g->dw;
  for (; oh < g->P; oh++) {
    const float *rows = b0 + oh * g->sh * Wp;
    float *yr = y + oh * Q;
    for (int64_t ow = 0; ow < Q;) {
      int64_t nv = (Q - ow + DW_L - 1) / DW_L;
      if (nv > DW_NV) nv = DW_NV;
#define DW_CALL1(n) dw_strip(rows, toff, w, R *S, vb, yr, ow, Q, n, nt)
      switch (nv) { /* independent accumulators hide the FMA latency */
      case 8:
        DW_CALL1(8);
        break;
      case 7:
        DW_CALL1(7);
        break;
        DW_CASES6(DW_CALL1)
      }
#undef DW_CALL1
      ow += nv * DW_L;
    }
  }
}
