/*
 * fast/gemm/ukr_avx512_f32.h — the f32 AVX-512 vector operations that the
 * micro-kernel templates (fast/gemm/gemm_ukr.h, fast/gemm/gemm_ukr_rows.h)
 * are written in, for the files that instantiate them with the AVX-512
 * flags (fast/gemm/gemm_avx512.c, fast/attention/attention_avx512.c). The
 * includer #undefs them when it moves on to another element type.
 */
#include <immintrin.h>

#include "plugins/cpu/fast/tile16_avx512.h"

#define VEC __m512
#define T float
#define W 16
#define LOAD _mm512_loadu_ps
#define STORE _mm512_storeu_ps
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define MUL _mm512_mul_ps
#define ZERO _mm512_setzero_ps
#define MASK_T __mmask16
#define MASK(n) cpu_fast_first_lanes16(n)
#define MLOAD(p, m) _mm512_maskz_loadu_ps((m), (p))
#define STORE_N(p, v, n) _mm512_mask_storeu_ps((p), cpu_fast_first_lanes16(n), (v))
