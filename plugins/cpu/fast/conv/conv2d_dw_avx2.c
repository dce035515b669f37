/*
 * fast/conv/conv2d_dw_avx2.c — the depthwise stencils of one plane for
 * stride-1 rows, AVX2 + FMA (fast.mk): fast/conv/conv2d_dw_kern.h with 8
 * lanes (the tail through tail_avx2.h's masks), and the 3 x 3 stride-1
 * kernel of fast/conv/conv2d_dw3_kern.h (cpu_fast_conv_dw3_plane_avx2), 3
 * vectors a strip (9 accumulators of the 16 ymm registers; the weights
 * the compiler cannot keep there are read from the stack by the FMAs),
 * its lane masks as vectors.
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

#define D3_L 8
#define D3_NV 3
#define D3_VEC __m256
#define D3_MASK __m256i
#define D3_LANES(lo, hi) _mm256_andnot_si256(cpu_fast_first_lanes8(lo), cpu_fast_first_lanes8(hi))
#define D3_MLOAD(m, p) _mm256_maskload_ps((p), (m))
#define D3_LOADU _mm256_loadu_ps
#define D3_FMA _mm256_fmadd_ps
#define D3_SET1 _mm256_set1_ps
#define D3_ASM_VEC(x) "+x"(x)
#define D3_PLANE_FN cpu_fast_conv_dw3_plane_avx2
#include "conv2d_dw3_kern.h"
