/*
 * fast/conv/conv2d_dw_avx2.c — the depthwise stencil of one plane for
 * stride-1 rows, AVX2 + FMA (fast.mk): fast/conv/conv2d_dw_kern.h with 8
 * lanes (the tail through tail_avx2.h's masks).
 */
#include <immintrin.h>

#include "plugins/cpu/fast/tail_avx2.h"

#define DW_L 8
#define DW_VEC __m256
#define DW_SET1(x) _mm256_set1_ps(x)
#define DW_FMA _mm256_fmadd_ps
#define DW_LOADU _mm256_loadu_ps
#define DW_ZERO _mm256_setzero_ps
#define DW_STORE _mm256_store_ps
#define DW_STOREU _mm256_storeu_ps
#define DW_STREAM _mm256_stream_ps
#define DW_STORE_FIRST(d, v, n) cpu_fast_store_first8(d, v, n)
#define DW_LOAD_FIRST(s, n) _mm256_maskload_ps(s, cpu_fast_first_lanes8(n))
#define DW_ASM_VEC(x) "+x"(x)
#define DW_PLANE_FN cpu_fast_conv_dw_plane_avx2
#include "conv2d_dw_kern.h"
