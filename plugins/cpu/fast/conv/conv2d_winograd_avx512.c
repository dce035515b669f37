/*
 * fast/conv/conv2d_winograd_avx512.c — the Winograd transforms
 * (fast/conv/conv2d_winograd_kern.h) in AVX-512, 16 lanes at a time, with
 * mask registers for the ragged ends. Called only after the CPUID check.
 */
#include <immintrin.h>

#include "plugins/cpu/fast/tile16_avx512.h"

#define WK_L 16
#define WK_VEC __m512
#define WK_MASK __mmask16
#define WK_ADD _mm512_add_ps
#define WK_SUB _mm512_sub_ps
#define WK_MUL _mm512_mul_ps
#define WK_SET1 _mm512_set1_ps
#define WK_ZERO _mm512_setzero_ps
#define WK_ABS _mm512_abs_ps
#define WK_MAX _mm512_max_ps
#define WK_NAN(v) _mm512_cmp_ps_mask((v), (v), _CMP_UNORD_Q)
#define WK_OR(a, b) ((__mmask16)((a) | (b)))
#define WK_NONE ((__mmask16)0)
#define WK_ANY(m) ((m) != 0)
#define WK_REDUCE_MAX _mm512_reduce_max_ps
#define WK_FIRST(n) cpu_fast_first_lanes16(n)
#define WK_BETWEEN(lo, hi) ((__mmask16)(cpu_fast_first_lanes16(hi) & ~cpu_fast_first_lanes16(lo)))
#define WK_MLOAD(p, m) _mm512_maskz_loadu_ps((m), (p))
#define WK_STORE_FIRST(p, v, n) _mm512_mask_storeu_ps((p), cpu_fast_first_lanes16(n), (v))
/* a's and b's floats as the 16 indices pick them (16 + i: b's i-th) */
#define PICK16(a, b, ...) _mm512_permutex2var_ps((a), _mm512_setr_epi32(__VA_ARGS__), (b))
#define WK_EVEN(a, b) PICK16(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
#define WK_ODD(a, b) PICK16(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31)
#define WK_ZIP_LO(a, b) PICK16(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23)
#define WK_ZIP_HI(a, b) PICK16(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)
#define WK_IDX_T __m512i
#define WK_STRIDE_IDX(s)                                                                           \
  _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),      \
                     _mm512_set1_epi32((int)(s)))
#define WK_GATHER(base, idx, m) _mm512_mask_i32gather_ps(_mm512_setzero_ps(), (m), (idx), (base), 4)
#define WK_NAME(f) f##_avx512

#include "conv2d_winograd_kern.h"
