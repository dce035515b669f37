/*
 * fast/attention/attention_exp512.h — the online softmax's exponential for
 * the AVX-512 attention kernels (attention_avx512.c, f32 arithmetic, and
 * attention_amx.c, bf16 on AMX). Include only from files compiled with
 * AVX-512 flags (fast.mk).
 */
#ifndef BACKPLANE_CPU_FAST_ATTENTION_EXP512_H
#define BACKPLANE_CPU_FAST_ATTENTION_EXP512_H

#include <immintrin.h>
#include <stdint.h>

/* e^x for x <= 0 (a score minus the running max): Cody-Waite reduction,
 * e^r = 1 + r + r^2 P(r) with P a degree-3 Remez fit (relative error
 * 1.1e-7, the AVX2 kernel's), 2^n from the bits of x log2(e) + 1.5 * 2^23
 * + 127 (no rounding or scaling instruction). Below -87 (and -inf) the
 * result is exactly 0, so hidden keys add nothing; NaN gives NaN. */
static inline __m512 fa_exp(__m512 x) {
  __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_NLT_UQ);
  /* max returns its second operand when either is NaN: a NaN stays NaN */
  x = _mm512_max_ps(_mm512_set1_ps(-87.0f), x);
  __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504f), _mm512_set1_ps(12583039.0f));
  __m512 n = _mm512_sub_ps(t, _mm512_set1_ps(12583039.0f));
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);
  __m512 p = _mm512_set1_ps(8.312524866e-03f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.189011315e-02f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.666711447e-01f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.999923179e-01f));
  p = _mm512_fmadd_ps(_mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f)), r, _mm512_set1_ps(1.0f));
  __m512 two_n = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(t), 23));
  return _mm512_maskz_mul_ps(live, p, two_n);
}

/* The first n of 16 lanes (none for n <= 0). */
static inline __mmask16 fa_lanes(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

/* ALiBi on scores [c0, c1): s[c] -= slope * |d0 - c| (d0: the query's
 * aligned position minus the first key of s). The distance is exact in
 * f32 below 2^24 keys. */
static inline void fa_alibi_add(float *s, int64_t c0, int64_t c1, int64_t d0, float slope) {
  const __m512 lanes = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512 ns = _mm512_set1_ps(-slope);
  for (int64_t c = c0; c < c1; c += 16) {
    __mmask16 k = fa_lanes(c1 - c);
    __m512 d = _mm512_sub_ps(_mm512_set1_ps((float)(d0 - c)), lanes);
    __m512 x = _mm512_fmadd_ps(ns, _mm512_abs_ps(d), _mm512_maskz_loadu_ps(k, s + c));
    _mm512_mask_storeu_ps(s + c, k, x);
  }
}

#endif /* BACKPLANE_CPU_FAST_ATTENTION_EXP512_H */
