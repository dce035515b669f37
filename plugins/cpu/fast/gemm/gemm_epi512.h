/*
 * fast/gemm/gemm_epi512.h — the GEMM epilogue's vector pieces in AVX-512,
 * shared by the kernels that apply it to C's f32 values while they are
 * still in registers (gemm_amx.c's merge, gemm_skinny_lowp.c's store):
 * bf16 / f16 widening and nearest-even narrowing, bias loads and the
 * activations of the elementwise kernels (fast/vec_math.h), so a value is
 * computed in f32 and rounded once. Header-only (static inline): each
 * includer is compiled with the AVX-512 flags (fast.mk) and is called only
 * after the CPU checks.
 */
#ifndef BACKPLANE_CPU_FAST_GEMM_EPI512_H
#define BACKPLANE_CPU_FAST_GEMM_EPI512_H

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>

#include "plugins/cpu/dtype.h"

/* the f32 vector math of the elementwise kernels */
#ifndef CPU_FAST_VEC_512
#define CPU_FAST_VEC_512 1
#endif
#include "plugins/cpu/fast/vec_isa.h"
#include "plugins/cpu/fast/vec_math.h"

/* The first n of 16 lanes (none for n <= 0). */
static inline __mmask16 epi_lanes(int64_t n) {
  return n <= 0 ? 0 : n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}

/* Round 16 floats to bf16, nearest even; NaN stays NaN (quieted). */
static inline __m256i epi_bf16_round16(__m512 v) {
  __m512i u = _mm512_castps_si512(v);
  __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff)));
  __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                          _mm512_set1_epi32(0x7f800000));
  r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x400000));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}

static inline __m512 epi_bf16_widen16(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline __m512 epi_half_widen16(__m256i h, bool f16) {
  return f16 ? _mm512_cvtph_ps(h) : epi_bf16_widen16(h);
}

static inline __m256i epi_half_narrow16(__m512 v, bool f16) {
  return f16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
             : epi_bf16_round16(v);
}

static inline float epi_half_to_float(uint16_t h, bool f16) {
  return f16 ? cpu_f16_to_float(h) : cpu_bf16_to_float(h);
}

/* 16 (m: the first lanes) bias values of a half type from b, sbn apart,
 * widened. */
static inline __m512 epi_half_bias16(const uint16_t *b, int64_t sbn, __mmask16 m, bool f16) {
  if (sbn == 1) return epi_half_widen16(_mm256_maskz_loadu_epi16(m, b), f16);
  if (sbn == 0) return _mm512_set1_ps(epi_half_to_float(*b, f16));
  alignas(64) float v[16] = {0};
  for (int j = 0; j < 16 && (m >> j & 1); j++) v[j] = epi_half_to_float(b[j * sbn], f16);
  return _mm512_load_ps(v);
}

/* The same for f32 bias values. */
static inline __m512 epi_f32_bias16(const float *b, int64_t sbn, __mmask16 m) {
  if (sbn == 1) return _mm512_maskz_loadu_ps(m, b);
  if (sbn == 0) return _mm512_set1_ps(*b);
  alignas(64) float v[16] = {0};
  for (int j = 0; j < 16 && (m >> j & 1); j++) v[j] = b[j * sbn];
  return _mm512_load_ps(v);
}

/* act(v) with the elementwise kernels' vector forms (cpu_fast_gemm_act_known
 * lists the ones that reach here; -1: none). */
static inline __m512 epi_act16(__m512 v, int act) {
  switch (act) {
  case BP_UNARY_RELU: { /* x > 0 ? x : (NaN ? x : 0) */
    M keep = mor(VCMP(v, vset1(0.0f), _CMP_GT_OQ), VCMP(v, v, _CMP_UNORD_Q));
    return vsel(keep, vset1(0.0f), v);
  }
  case BP_UNARY_GELU: return vgelu(v);
  case BP_UNARY_SILU: return vsilu(v);
  case BP_UNARY_SIGMOID: return vsigmoid(v);
  case BP_UNARY_TANH: return vtanh(v);
  default: return v;
  }
}

#endif /* BACKPLANE_CPU_FAST_GEMM_EPI512_H */
