/*
 * fast/conv/conv2d_dw_avx512.c — the depthwise stencil of one plane for
 * stride-1 rows, AVX-512 (fast.mk): fast/conv/conv2d_dw_kern.h with 16
 * lanes and masked tails.
 */
#include <immintrin.h>

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

/* Step k of a strip: input row k - ph (when inside the plane) meets tap row
 * 0 of output row k (N, started at the bias here), tap row 1 of row k - 1
 * (M) and tap row 2 of row k - 2 (F), which is then complete and stored.
 * Each input vector is loaded once for its three FMAs; the loads are
 * masked to the row's columns, so the padding is never read nor copied. */
#define DW3_STEP(k, N, M, F)                                                                       \
  do {                                                                                             \
    int64_t i_ = (k) - g->ph;                                                                      \
    if (i_ >= 0 && i_ < g->H) {                                                                    \
      const float *p_ = x + i_ * g->sxh + ow0 - g->pw;                                             \
      _Pragma("GCC unroll 4") for (int v = 0; v < nv; v++) {                                       \
        _Pragma("GCC unroll 3") for (int s = 0; s < 3; s++) {                                      \
          __m512 xv = _mm512_maskz_loadu_ps(lm[v][s], p_ + 16 * v + s * g->dw);                    \
          N[v] = _mm512_fmadd_ps(w0[s], xv, s ? N[v] : vb);                                        \
          M[v] = _mm512_fmadd_ps(w1[s], xv, M[v]);                                                 \
          F[v] = _mm512_fmadd_ps(w2[s], xv, F[v]);                                                 \
        }                                                                                          \
      }                                                                                            \
    } else                                                                                         \
      _Pragma("GCC unroll 4") for (int v = 0; v < nv; v++) N[v] = vb;                              \
    if ((k) >= 2) {                                                                                \
      float *yr_ = y + ((k)-2) * g->Q + ow0;                                                       \
      _Pragma("GCC unroll 4") for (int v = 0; v < nv; v++)                                         \
          dw3_store(yr_ + 16 * v, F[v], sm[v], nt);                                                \
    }                                                                                              \
  } while (0)

/* Output columns ow0 .. ow0 + 16 nv - 1 (the last vector's lanes past Q
 * masked off) of every row, walking down the plane: k runs over the P + 2
 * input rows the output rows read, and the three accumulator sets trade
 * roles each step (unrolled by three, so no set is copied). */
static inline __attribute__((always_inline)) void dw3_strip(const cpu_fast_dw_geom_t *g,
                                                            const float *x, const float *w,
                                                            __m512 vb, float *y, int64_t ow0,
                                                            int nv, int nt) {
  __m512 w0[3], w1[3], w2[3], A[DW3_NV], B[DW3_NV], C[DW3_NV];
  __mmask16 lm[DW3_NV][3], sm[DW3_NV];
  for (int s = 0; s < 3; s++)
    w0[s] = _mm512_set1_ps(w[s]), w1[s] = _mm512_set1_ps(w[3 + s]),
    w2[s] = _mm512_set1_ps(w[6 + s]);
  for (int v = 0; v < nv; v++) {
    int64_t o = ow0 + 16 * v;
    sm[v] = dw3_lanes(0, g->Q - o);
    for (int s = 0; s < 3; s++) {
      int64_t c0 = o - g->pw + s * g->dw; /* input column of lane 0 */
      lm[v][s] = dw3_lanes(-c0, g->W - c0) & sm[v];
    }
    A[v] = B[v] = C[v] = vb;
  }
  int64_t end = g->P + 2;
  for (int64_t k = 0; k < end; k += 3) {
    DW3_STEP(k, A, B, C);
    if (k + 1 >= end) break;
    DW3_STEP(k + 1, C, A, B);
    if (k + 2 >= end) break;
    DW3_STEP(k + 2, B, C, A);
  }
}

void cpu_fast_conv_dw3_plane_avx512(const cpu_fast_dw_geom_t *g, const float *x, const float *w,
                                    float bias, float *y, int nt) {
  const __m512 vb = _mm512_set1_ps(bias);
  /* strips of at most DW3_NV vectors, of about equal width */
  int64_t nvec = (g->Q + 15) / 16, strips = (nvec + DW3_NV - 1) / DW3_NV;
  for (int64_t k = 0; k < strips; k++) {
    int64_t v0 = k * nvec / strips, nv = (k + 1) * nvec / strips - v0;
#define DW3_CALL(n) dw3_strip(g, x, w, vb, y, 16 * v0, n, nt)
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
