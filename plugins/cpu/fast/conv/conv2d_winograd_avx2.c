/*
 * fast/conv/conv2d_winograd_avx2.c — the Winograd transforms
 * (fast/conv/conv2d_winograd_kern.h) in AVX2 + FMA, 8 lanes at a time:
 * masks are vectors of lanes, the ragged ends stored through tail_avx2.h
 * (a masked store is microcoded on AMD's cores). Called only after the
 * CPUID check.
 */
#include <immintrin.h>

#include "plugins/cpu/fast/tail_avx2.h"

/* The largest of v's lanes. */
static inline float reduce_max8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

/* The even (sel 0x88) or odd (0xdd) floats of a then b: shuffle_ps picks
 * them per 128-bit half, the 64-bit permute puts a's before b's. */
#define PICK8(a, b, sel)                                                                           \
  _mm256_castpd_ps(                                                                                \
      _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps((a), (b), (sel))), 0xd8))

#define WK_L 8
#define WK_VEC __m256
#define WK_MASK __m256
#define WK_ADD _mm256_add_ps
#define WK_SUB _mm256_sub_ps
#define WK_MUL _mm256_mul_ps
#define WK_SET1 _mm256_set1_ps
#define WK_ZERO _mm256_setzero_ps
#define WK_ABS(v) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (v))
#define WK_MAX _mm256_max_ps
#define WK_NAN(v) _mm256_cmp_ps((v), (v), _CMP_UNORD_Q)
#define WK_OR _mm256_or_ps
#define WK_NONE _mm256_setzero_ps()
#define WK_ANY(m) (_mm256_movemask_ps(m) != 0)
#define WK_REDUCE_MAX reduce_max8
#define WK_FIRST(n) _mm256_castsi256_ps(cpu_fast_first_lanes8(n))
#define WK_BETWEEN(lo, hi)                                                                         \
  _mm256_castsi256_ps(_mm256_andnot_si256(cpu_fast_first_lanes8(lo), cpu_fast_first_lanes8(hi)))
#define WK_MLOAD(p, m) _mm256_maskload_ps((p), _mm256_castps_si256(m))
#define WK_STORE_FIRST(p, v, n) cpu_fast_store_first8((p), (v), (n))
#define WK_EVEN(a, b) PICK8(a, b, 0x88)
#define WK_ODD(a, b) PICK8(a, b, 0xdd)
/* unpack interleaves per 128-bit half; the lane permute joins the halves */
#define WK_ZIP_LO(a, b)                                                                            \
  _mm256_permute2f128_ps(_mm256_unpacklo_ps((a), (b)), _mm256_unpackhi_ps((a), (b)), 0x20)
#define WK_ZIP_HI(a, b)                                                                            \
  _mm256_permute2f128_ps(_mm256_unpacklo_ps((a), (b)), _mm256_unpackhi_ps((a), (b)), 0x31)
#define WK_IDX_T __m256i
#define WK_STRIDE_IDX(s)                                                                           \
  _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)(s)))
#define WK_GATHER(base, idx, m) _mm256_mask_i32gather_ps(_mm256_setzero_ps(), (base), (idx), (m), 4)
#define WK_NAME(f) f##_avx2

#include "conv2d_winograd_kern.h"
