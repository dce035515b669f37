/*
 * fast/gemm/ukr_avx2_f32.h — the f32 AVX2 + FMA vector operations that the
 * micro-kernel templates (fast/gemm/gemm_ukr.h, fast/gemm/gemm_ukr_rows.h) are
 * written in, for the files that instantiate them with those -m flags
 * (fast/gemm/gemm_avx2.c, fast/conv/conv2d_ukr_avx2.c). The includer #undefs them
 * when it moves on to another element type.
 */
#include <immintrin.h>

#include "plugins/cpu/fast/tail_avx2.h"

#define VEC __m256
#define W 8
#define LOAD _mm256_loadu_ps
#define STORE _mm256_storeu_ps
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define MUL _mm256_mul_ps
#define ZERO _mm256_setzero_ps
#define MASK_T __m256i
#define MASK(n) cpu_fast_first_lanes8(n)
#define MLOAD(p, m) _mm256_maskload_ps((p), (m))
/* not vmaskmovps: see fast/tail_avx2.h */
#define STORE_N(p, v, n) cpu_fast_store_first8((p), (v), (n))
