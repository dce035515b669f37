/*
 * fast/tail_avx2.h — storing the first n lanes of an 8-float vector
 * without vmaskmovps: a masked store costs a dozen cycles or more on
 * AMD's cores (it is microcoded there), against one or two for the 4-, 2-
 * and 1-lane pieces below, and the ragged ends of rows and tiles take one
 * per row. And the lane mask of a ragged end, for the masked loads (which
 * are cheap). For files compiled with AVX (the AVX2 kernels).
 */
#ifndef BACKPLANE_CPU_FAST_TAIL_AVX2_H
#define BACKPLANE_CPU_FAST_TAIL_AVX2_H

#include <immintrin.h>
#include <stdint.h>

/* A mask with the first n of 8 lanes set (none for n <= 0, all from 8). */
static inline __m256i cpu_fast_first_lanes8(int64_t n) {
  n = n < 0 ? 0 : n > 8 ? 8 : n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* d[0, n) = the first n lanes of v (all 8 when n >= 8, none when n <= 0);
 * nothing past them is touched. */
static inline __attribute__((always_inline)) void cpu_fast_store_first8(float *d, __m256 v,
                                                                    int64_t n) {
  if (n >= 8) {
    _mm256_storeu_ps(d, v);
    return;
  }
  if (n <= 0) return;
  __m128 x = _mm256_castps256_ps128(v);
  if (n & 4) {
    _mm_storeu_ps(d, x);
    x = _mm256_extractf128_ps(v, 1);
    d += 4;
  }
  if (n & 2) {
    _mm_storel_pi((__m64 *)(void *)d, x);
    x = _mm_movehl_ps(x, x);
    d += 2;
  }
  if (n & 1) _mm_store_ss(d, x);
}

#endif /* BACKPLANE_CPU_FAST_TAIL_AVX2_H */
