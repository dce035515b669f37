/*
 * fast/conv/conv2d_pointwise_avx512.c — the pointwise route's AVX-512 tile
 * (fast/conv/conv2d_pointwise.c): up to PW512_MR output channels by up to
 * 64 pixels (four vectors), 24 accumulators. Per k step it loads four
 * vectors of one channel row of x (whole lines when the strip is) and
 * broadcasts the MR weights of the step from the k-major panel, so each
 * broadcast feeds four FMAs and each load six. Compiled with the AVX-512
 * flags (fast.mk); called only after the CPUID check.
 */
#include <immintrin.h>

#include "conv2d.h"
#include "plugins/cpu/fast/tile16_avx512.h"

#define PW512_PF 8 /* k rows of x fetched ahead */

/* MR rows x 4 vectors; a holds the weights of a k step side by side (as
 * apart; rows past `rows` are the panel's zeros), b the k rows of x (ldb
 * apart), c the output rows (ldc apart). The first `rows` rows and `cols`
 * (at most 64) pixels are stored; beta 0 or 1. */
#define PW512_TILE(name, MR)                                                                       \
  static void name(int64_t k, const float *a, int64_t as, const float *b, int64_t ldb, float *c,   \
                   int64_t ldc, int rows, int cols, float beta) {                                  \
    __m512 acc[MR][4];                                                                             \
    __mmask16 m[4];                                                                                \
    _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) m[v] =                                     \
        cpu_fast_first_lanes16(cols - 16 * v);                                                     \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                           \
        _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) acc[i][v] = _mm512_setzero_ps();       \
    if (cols == 64) {                                                                              \
      for (int64_t p = 0; p < k; p++, a += as, b += ldb) {                                         \
        __m512 x[4];                                                                               \
        _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) {                                      \
          x[v] = _mm512_loadu_ps(b + 16 * v);                                                      \
          _mm_prefetch((const char *)(b + PW512_PF * ldb + 16 * v), _MM_HINT_T0);                  \
        }                                                                                          \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                     \
          __m512 w = _mm512_set1_ps(a[i]);                                                         \
          _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) acc[i][v] =                          \
              _mm512_fmadd_ps(w, x[v], acc[i][v]);                                                 \
        }                                                                                          \
      }                                                                                            \
    } else {                                                                                       \
      for (int64_t p = 0; p < k; p++, a += as, b += ldb) {                                         \
        __m512 x[4];                                                                               \
        _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) x[v] =                                 \
            _mm512_maskz_loadu_ps(m[v], b + 16 * v);                                               \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                     \
          __m512 w = _mm512_set1_ps(a[i]);                                                         \
          _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) acc[i][v] =                          \
              _mm512_fmadd_ps(w, x[v], acc[i][v]);                                                 \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                           \
        _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) {                                      \
      if (i >= rows) break;                                                                        \
      float *ci = c + i * ldc + 16 * v;                                                            \
      __m512 r =                                                                                   \
          beta != 0 ? _mm512_add_ps(acc[i][v], _mm512_maskz_loadu_ps(m[v], ci)) : acc[i][v];       \
      _mm512_mask_storeu_ps(ci, m[v], r);                                                          \
    }                                                                                              \
  }

PW512_TILE(pw512_tile6, 6)
PW512_TILE(pw512_tile4, 4)
PW512_TILE(pw512_tile2, 2)

void cpu_fast_conv_pw_tile_avx512(int64_t k, const float *a, int64_t as, const float *b,
                                  int64_t ldb, float *c, int64_t ldc, int rows, int cols,
                                  float beta) {
  if (rows <= 2)
    pw512_tile2(k, a, as, b, ldb, c, ldc, rows, cols, beta);
  else if (rows <= 4)
    pw512_tile4(k, a, as, b, ldb, c, ldc, rows, cols, beta);
  else
    pw512_tile6(k, a, as, b, ldb, c, ldc, rows, cols, beta);
}
