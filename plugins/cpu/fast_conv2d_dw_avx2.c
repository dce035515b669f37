/*
 * fast_conv2d_dw_avx2.c — the depthwise stencil of one plane for stride-1
 * rows, AVX2 + FMA (fast.mk); called by fast_conv2d.c only after the CPUID
 * check. Same contract and padded buffer as fast_vec_kernels_t.dw_plane
 * (fast_vec.h) with g->sw == 1; it differs in keeping a whole output row's
 * vectors (up to DW_NV) as independent accumulators, so the taps' FMAs
 * overlap instead of waiting on one another, and in storing large outputs
 * past the cache (the caller fences).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "fast_conv2d.h"

#define DW_NV 8 /* output vectors in flight per row */

/* Lane mask with the first n of 8 lanes set. */
static inline __m256i dw_lanes(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* nv vectors of one output row from ow on (the last may be partial). */
static inline __attribute__((always_inline)) void dw_vecs(const float *rows, const int64_t *toff,
                                                          const float *w, int64_t taps, float bias,
                                                          float *yr, int64_t ow, int64_t Q, int nv,
                                                          int nt) {
  __m256 acc[DW_NV];
  for (int v = 0; v < nv; v++) acc[v] = _mm256_set1_ps(bias);
  for (int64_t t = 0; t < taps; t++) {
    __m256 wt = _mm256_set1_ps(w[t]);
    const float *src = rows + toff[t] + ow;
    for (int v = 0; v < nv; v++) acc[v] = _mm256_fmadd_ps(wt, _mm256_loadu_ps(src + 8 * v), acc[v]);
  }
  for (int v = 0; v < nv; v++) {
    float *d = yr + ow + 8 * v;
    int64_t left = Q - ow - 8 * v;
    if (left < 8)
      _mm256_maskstore_ps(d, dw_lanes(left), acc[v]);
    else if (nt && ((uintptr_t)d & 31) == 0)
      _mm256_stream_ps(d, acc[v]);
    else
      _mm256_storeu_ps(d, acc[v]);
  }
}

void fast_conv_dw_plane_avx2(const fast_dw_geom_t *g, const float *x, const float *w, float bias,
                             float *y, float *buf, int nt) {
  const int64_t Wp = g->Wp, Q = g->Q;
  int64_t w0 = g->pw < Wp ? g->pw : Wp;
  int64_t w1 = g->pw + g->W < Wp ? g->pw + g->W : Wp;
  for (int64_t h = 0; h < g->Hp; h++) {
    int64_t ih = h - g->ph;
    float *d = buf + h * Wp;
    if (ih < 0 || ih >= g->H) {
      memset(d, 0, (size_t)Wp * sizeof *d);
      continue;
    }
    const float *s = x + ih * g->sxh;
    memset(d, 0, (size_t)w0 * sizeof *d);
    if (g->sxw == 1)
      memcpy(d + w0, s, (size_t)(w1 - w0) * sizeof *s);
    else
      for (int64_t c = w0; c < w1; c++) d[c] = s[(c - g->pw) * g->sxw];
    memset(d + w1, 0, (size_t)(Wp - w1) * sizeof *d);
  }
  const int64_t R = g->R, S = g->S;
  int64_t toff[64]; /* tap (r, s): offset from the output row's first row */
  for (int64_t r = 0; r < R; r++)
    for (int64_t s = 0; s < S; s++) toff[r * S + s] = r * g->dh * Wp + s * g->dw;
  for (int64_t oh = 0; oh < g->P; oh++) {
    const float *rows = buf + oh * g->sh * Wp;
    float *yr = y + oh * Q;
    for (int64_t ow = 0; ow < Q;) {
      int64_t nv = (Q - ow + 7) / 8;
      if (nv > DW_NV) nv = DW_NV;
      switch (nv) { /* independent accumulators hide the FMA latency */
      case 8:
        dw_vecs(rows, toff, w, R * S, bias, yr, ow, Q, 8, nt);
        break;
      case 7:
        dw_vecs(rows, toff, w, R * S, bias, yr, ow, Q, 7, nt);
        break;
      case 6:
        dw_vecs(rows, toff, w, R * S, bias, yr, ow, Q, 6, nt);
        break;
      case 5:
        dw_vecs(rows, toff, w, R * S, bias, yr, ow, Q, 5, nt);
        break;
      case 4:
        dw_vecs(rows, toff, w, R * S, bias, yr, ow, Q, 4, nt);
        break;
      case 3:
        dw_vecs(rows, toff, w, R * S, bias, yr, ow, Q, 3, nt);
        break;
      case 2:
        dw_vecs(rows, toff, w, R * S, bias, yr, ow, Q, 2, nt);
        break;
      default:
        dw_vecs(rows, toff, w, R * S, bias, yr, ow, Q, 1, nt);
        break;
      }
      ow += nv * 8;
    }
  }
}
