/*
 * fast/vec_isa.h — the few vector operations fast/vec_kern.h is written in,
 * for AVX-512 (CPU_FAST_VEC_512) or AVX2 + FMA + F16C. Included only by
 * fast/vec_avx512.c / fast/vec_avx2.c and (AVX-512, for the GEMM epilogue's
 * activation) fast/gemm/gemm_amx.c, which carry the matching -m flags.
 * V is a float vector of VL lanes, M a lane mask, VI an int32 vector.
 */
#include <immintrin.h>

#ifdef CPU_FAST_VEC_512
#define VL 16
typedef __m512 V;
typedef __m512i VI;
typedef __mmask16 M;
static inline V vload(const float *p) { return _mm512_loadu_ps(p); }
static inline void vstore(float *p, V v) { _mm512_storeu_ps(p, v); }
static inline M tailmask(int64_t n) { return (M)((1u << n) - 1u); }
static inline V vload_n(const float *p, int64_t n) {
  return _mm512_maskz_loadu_ps(tailmask(n), p);
}
static inline void vstore_n(float *p, V v, int64_t n) {
  _mm512_mask_storeu_ps(p, tailmask(n), v);
}
/* the first n lanes from p, the rest fill */
static inline V vload_n_or(const float *p, int64_t n, float fill) {
  return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), tailmask(n), p);
}
/* non-temporal store; p aligned to the vector (VL * 4 bytes) */
static inline void vstream(float *p, V v) { _mm512_stream_ps(p, v); }
static inline V vset1(float x) { return _mm512_set1_ps(x); }
static inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
static inline V vdiv(V a, V b) { return _mm512_div_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
static inline V vfnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
static inline V vsqrt(V a) { return _mm512_sqrt_ps(a); }
/* max / min return b where either is NaN (the instruction's rule) */
static inline V vmax(V a, V b) { return _mm512_max_ps(a, b); }
static inline V vmin(V a, V b) { return _mm512_min_ps(a, b); }
#define VCMP(a, b, pred) _mm512_cmp_ps_mask((a), (b), (pred))
static inline V vsel(M m, V f, V t) { return _mm512_mask_blend_ps(m, f, t); }
static inline M mor(M a, M b) { return (M)(a | b); }
static inline M mand(M a, M b) { return (M)(a & b); }
static inline int many(M m) { return m != 0; }
static inline V vround(V a) {
  return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* a * 2^n for integral n in float (any range: scalef saturates) */
static inline V vscale2(V a, V n) { return _mm512_scalef_ps(a, n); }
static inline VI vcast_i(V a) { return _mm512_castps_si512(a); }
static inline V vcast_f(VI a) { return _mm512_castsi512_ps(a); }
static inline V vand(V a, V b) { return _mm512_and_ps(a, b); }
static inline V vor(V a, V b) { return _mm512_or_ps(a, b); }
static inline V vxor(V a, V b) { return _mm512_xor_ps(a, b); }
static inline float hsum(V a) { return _mm512_reduce_add_ps(a); }
static inline float hmax(V a) { return _mm512_reduce_max_ps(a); }
static inline float hmin(V a) { return _mm512_reduce_min_ps(a); }
/* exponent and mantissa in [1, 2) of normal or denormal x > 0 */
static inline V vgetexp(V a) { return _mm512_getexp_ps(a); }
static inline V vgetmant(V a) {
  return _mm512_getmant_ps(a, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
}
/* widen lanes [0, 8) and [8, 16) to double and add into two accumulators */
static inline void vacc_d(V a, __m512d *lo, __m512d *hi) {
  *lo = _mm512_add_pd(*lo, _mm512_cvtps_pd(_mm512_castps512_ps256(a)));
  *hi = _mm512_add_pd(
      *hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(
               _mm512_castps_pd(a), 1))));
}
typedef __m512d VD;
static inline VD vd_zero(void) { return _mm512_setzero_pd(); }
static inline double vd_hsum(VD a) { return _mm512_reduce_add_pd(a); }
#else
#include "tail_avx2.h"
#define VL 8
typedef __m256 V;
typedef __m256i VI;
typedef __m256 M;
static inline V vload(const float *p) { return _mm256_loadu_ps(p); }
static inline void vstore(float *p, V v) { _mm256_storeu_ps(p, v); }
static inline V vload_n(const float *p, int64_t n) {
  return _mm256_maskload_ps(p, cpu_fast_first_lanes8(n));
}
static inline void vstore_n(float *p, V v, int64_t n) { cpu_fast_store_first8(p, v, n); }
/* the first n lanes from p, the rest fill (a masked load, which is cheap,
 * and a blend: building the vector in memory would stall on the store) */
static inline V vload_n_or(const float *p, int64_t n, float fill) {
  __m256i m = cpu_fast_first_lanes8(n);
  return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m),
                          _mm256_castsi256_ps(m));
}
static inline void vstream(float *p, V v) { _mm256_stream_ps(p, v); }
static inline V vset1(float x) { return _mm256_set1_ps(x); }
static inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
static inline V vdiv(V a, V b) { return _mm256_div_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
static inline V vfnma(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
static inline V vsqrt(V a) { return _mm256_sqrt_ps(a); }
static inline V vmax(V a, V b) { return _mm256_max_ps(a, b); }
static inline V vmin(V a, V b) { return _mm256_min_ps(a, b); }
#define VCMP(a, b, pred) _mm256_cmp_ps((a), (b), (pred))
static inline V vsel(M m, V f, V t) { return _mm256_blendv_ps(f, t, m); }
static inline M mor(M a, M b) { return _mm256_or_ps(a, b); }
static inline M mand(M a, M b) { return _mm256_and_ps(a, b); }
static inline int many(M m) { return _mm256_movemask_ps(m) != 0; }
static inline V vround(V a) {
  return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* a * 2^n in two steps, so n in [-252, 254] stays exact (denormals too) */
static inline V vscale2(V a, V n) {
  n = _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-252.0f)),
                    _mm256_set1_ps(254.0f));
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i h = _mm256_srai_epi32(ni, 1), r = _mm256_sub_epi32(ni, h);
  __m256i b = _mm256_set1_epi32(127);
  V s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, b), 23));
  V s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(r, b), 23));
  return _mm256_mul_ps(_mm256_mul_ps(a, s1), s2);
}
static inline VI vcast_i(V a) { return _mm256_castps_si256(a); }
static inline V vcast_f(VI a) { return _mm256_castsi256_ps(a); }
static inline V vand(V a, V b) { return _mm256_and_ps(a, b); }
static inline V vor(V a, V b) { return _mm256_or_ps(a, b); }
static inline V vxor(V a, V b) { return _mm256_xor_ps(a, b); }
static inline float hsum(V a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
static inline float hmax(V a) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
static inline float hmin(V a) {
  __m128 s = _mm_min_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_min_ps(s, _mm_movehl_ps(s, s));
  s = _mm_min_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
/* x > 0 finite: exponent and mantissa in [1, 2); denormals are scaled up
 * by 2^32 first. */
static inline V vgetmant_exp(V a, V *e) {
  M den = _mm256_cmp_ps(a, _mm256_set1_ps(0x1p-126f), _CMP_LT_OQ);
  a = vsel(den, a, _mm256_mul_ps(a, _mm256_set1_ps(0x1p32f)));
  __m256i i = _mm256_castps_si256(a);
  __m256i ex = _mm256_sub_epi32(_mm256_srli_epi32(i, 23), _mm256_set1_epi32(127));
  *e = _mm256_sub_ps(_mm256_cvtepi32_ps(ex),
                     _mm256_and_ps(den, _mm256_set1_ps(32.0f)));
  i = _mm256_or_si256(_mm256_and_si256(i, _mm256_set1_epi32(0x007fffff)),
                      _mm256_set1_epi32(0x3f800000));
  return _mm256_castsi256_ps(i);
}
static inline void vacc_d(V a, __m256d *lo, __m256d *hi) {
  *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(a)));
  *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
}
typedef __m256d VD;
static inline VD vd_zero(void) { return _mm256_setzero_pd(); }
static inline double vd_hsum(VD a) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
#endif
