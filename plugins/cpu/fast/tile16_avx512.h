/*
 * fast/tile16_avx512.h — a 16 x 16 block of floats held in 16 zmm
 * registers: its transpose in registers, and the mask of a ragged edge's
 * first lanes. Shared by the kernels that turn rows into columns on the
 * way to or from memory (the GEMM packers, the direct conv2d's NCHW
 * store). For files compiled with AVX-512 (fast.mk); inlined so that the
 * callers' unrolled loops keep the block in registers.
 */
#ifndef BACKPLANE_CPU_FAST_TILE16_AVX512_H
#define BACKPLANE_CPU_FAST_TILE16_AVX512_H

#include <immintrin.h>
#include <stdint.h>

/* Transposes 16 rows of 16 floats in place: r[i] lane j -> r[j] lane i. */
static inline __attribute__((always_inline)) void cpu_fast_transpose16x16(__m512 r[16]) {
  __m512 t[16];
  _Pragma("GCC unroll 16") for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  /* r[4q + s]: per 128-bit lane L, column 4L + s of rows 4q..4q+3 */
  _Pragma("GCC unroll 16") for (int i = 0; i < 16; i += 4) {
    __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 2]);
    __m512d c = _mm512_castps_pd(t[i + 1]), d = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
  }
  /* then the 128-bit lanes across the groups of four rows */
  _Pragma("GCC unroll 16") for (int i = 0; i < 4; i++) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  _Pragma("GCC unroll 16") for (int i = 0; i < 4; i++) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
  }
}

/* A mask with the first n of 16 lanes set (none for n <= 0, all from 16). */
static inline __mmask16 cpu_fast_first_lanes16(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

#endif
