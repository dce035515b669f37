/*
 * fast/attention/attention_exp512.h — the online softmax's exponential for
 * the AVX-512 attention kernels (attention_avx512.c, f32, and
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

#endif /* BACKPLANE_CPU_FAST_ATTENTION_EXP512_H */
