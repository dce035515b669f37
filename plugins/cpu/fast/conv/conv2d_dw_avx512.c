/*
 * fast/conv/conv2d_dw_avx512.c — the depthwise stencil of one plane for
 * stride-1 rows, AVX-512 (fast.mk): conv2d_dw_avx2.c's kernel with 16 lanes
 * and masked tails; called by fast/conv/conv2d.c only after the CPUID
 * check. Same contract as cpu_fast_vec_kernels_t.dw_plane (fast/vec.h) with
 * g->sw == 1, and a buffer of g->Hp + 2 rows of g->Wp (a multiple of 16).
 * The plane is copied into the zero-padded buffer with aligned whole-vector
 * moves and no calls (it then sits in L1 for the R output rows that read
 * each input row); output vectors are independent accumulators kept in
 * registers (on the stack, every FMA would wait for a store and a reload
 * of its accumulator; docs/performance.md), two output rows at a time where stride and dilation down
 * the rows are 1, so each input vector loaded feeds both rows' FMAs.
 * Outputs of cpu_fast_nt_min_bytes() and more are stored past the cache (nt;
 * the caller fences).
 */
#include <immintrin.h>
#include <stdint.h>

#include "conv2d.h"

#define DW_NV 8  /* output vectors in flight, one row */
#define DW_NV2 6 /* output vectors per row, two rows at once */

/* One output vector: left lanes of it are inside the row (all when 16 or
 * more), streamed past the cache when nt and aligned. */
static inline __attribute__((always_inline)) void dw_store(float *d, __m512 v, int64_t left,
                                                           int nt) {
  if (left < 16)
    _mm512_mask_storeu_ps(d, (__mmask16)((1u << left) - 1), v);
  else if (nt && ((uintptr_t)d & 63) == 0)
    _mm512_stream_ps(d, v);
  else
    _mm512_storeu_ps(d, v);
}

/* nv vectors of one output row from ow on (the last may be partial): the
 * taps read rows + toff[t] + ow, all inside the padded buffer. */
static inline __attribute__((always_inline)) void dw_strip(const float *rows, const int64_t *toff,
                                                           const float *w, int64_t taps, __m512 vb,
                                                           float *yr, int64_t ow, int64_t Q, int nv,
                                                           int nt) {
  __m512 acc[DW_NV];
  _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) acc[v] = vb;
  for (int64_t t = 0; t < taps; t++) {
    __m512 wt = _mm512_set1_ps(w[t]);
    const float *src = rows + toff[t] + ow;
    _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) acc[v] =
        _mm512_fmadd_ps(wt, _mm512_loadu_ps(src + 16 * v), acc[v]);
  }
  _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++)
      dw_store(yr + ow + 16 * v, acc[v], Q - ow - 16 * v, nt);
}

/* Two output rows (sh == dh == 1): nv vectors from ow on of rows oh and oh
 * + 1, whose R + 1 input rows start at rows. Each input vector is loaded
 * once and meets the weights of both output rows that read it, so the
 * loads per FMA drop from 1 to (R + 1) / (2 R). */
static inline __attribute__((always_inline)) void dw_strip2(const float *rows, int64_t Wp,
                                                            const float *w, int64_t R, int64_t S,
                                                            int64_t dw, __m512 vb, float *yr,
                                                            int64_t ow, int64_t Q, int nv, int nt) {
  __m512 a0[DW_NV2], a1[DW_NV2];
  _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) a0[v] = a1[v] = vb;
  for (int64_t s = 0; s < S; s++) {
    const float *src = rows + s * dw + ow;
    __m512 wa = _mm512_set1_ps(w[s]); /* input row 0: output row 0 only */
    _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) a0[v] =
        _mm512_fmadd_ps(wa, _mm512_loadu_ps(src + 16 * v), a0[v]);
    for (int64_t i = 1; i < R; i++) {
      const float *si = src + i * Wp;
      __m512 w0 = _mm512_set1_ps(w[i * S + s]), w1 = _mm512_set1_ps(w[(i - 1) * S + s]);
      _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) {
        __m512 xv = _mm512_loadu_ps(si + 16 * v);
        __asm__("" : "+v"(xv)); /* one load for both FMAs, not one each */
        a0[v] = _mm512_fmadd_ps(w0, xv, a0[v]);
        a1[v] = _mm512_fmadd_ps(w1, xv, a1[v]);
      }
    }
    __m512 wb = _mm512_set1_ps(w[(R - 1) * S + s]); /* row R: output row 1 only */
    _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) a1[v] =
        _mm512_fmadd_ps(wb, _mm512_loadu_ps(src + R * Wp + 16 * v), a1[v]);
  }
  _Pragma("GCC unroll 8") for (int v = 0; v < nv; v++) {
    dw_store(yr + ow + 16 * v, a0[v], Q - ow - 16 * v, nt);
    dw_store(yr + Q + ow + 16 * v, a1[v], Q - ow - 16 * v, nt);
  }
}

/* Zeros from d (64-byte aligned) in whole vectors until end or past it:
 * a few stores, inline (the compiler would make a loop of them a call). */
static inline void dw_zero(float *d, const float *end) {
  const __m512 z = _mm512_setzero_ps();
  for (; d < end; d += 16) {
    _mm512_store_ps(d, z);
    __asm__("" : "+r"(d));
  }
}

/* Input row s (W floats, unit stride) into d with pw zeros before it and
 * zeros after it up to Wp, in whole aligned vectors (d + pw is 64-byte
 * aligned, Wp a multiple of 16): the last vector of the row is a masked
 * load, so nothing past the row is read. The zeros before d + pw may
 * reach back into the previous row's trailing zeros, those after d + Wp
 * into the next row's leading pad (written after this row). */
static inline void dw_copy_row(const float *s, int64_t W, int64_t pw, int64_t Wp, float *d) {
  dw_zero(d + pw % 16 - (pw % 16 ? 16 : 0), d + pw);
  float *o = d + pw;
  int64_t i = 0;
  for (; i + 16 <= W; i += 16) _mm512_store_ps(o + i, _mm512_loadu_ps(s + i));
  if (i < W) {
    _mm512_store_ps(o + i, _mm512_maskz_loadu_ps((__mmask16)((1u << (W - i)) - 1), s + i));
    i += 16;
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

void cpu_fast_conv_dw_plane_avx512(const cpu_fast_dw_geom_t *g, const float *x, const float *w, float bias,
                             float *y, float *buf, int nt) {
  const int64_t Wp = g->Wp, Q = g->Q, R = g->R, S = g->S;
  /* the padded plane: rows of Wp (a multiple of 16) from buf + lead, so
   * that each row's copy (d + pw) is 64-byte aligned; buf holds Hp + 2
   * rows (see conv_depthwise), for the lead and the last row's spill */
  int64_t lead = (16 - g->pw % 16) % 16;
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
  const __m512 vb = _mm512_set1_ps(bias);
  int64_t oh = 0;
  if (g->sh == 1 && g->dh == 1) {
    /* two output rows at a time, in strips of at most DW_NV2 vectors of
     * about equal width */
    int64_t nvec = (Q + 15) / 16, strips = (nvec + DW_NV2 - 1) / DW_NV2;
    for (; oh + 2 <= g->P; oh += 2)
      for (int64_t k = 0; k < strips; k++) {
        int64_t v0 = k * nvec / strips, nv = (k + 1) * nvec / strips - v0;
#define DW_CALL2(n) dw_strip2(b0 + oh * Wp, Wp, w, R, S, g->dw, vb, y + oh * Q, 16 * v0, Q, n, nt)
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
      int64_t nv = (Q - ow + 15) / 16;
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
      ow += nv * 16;
    }
  }
}
