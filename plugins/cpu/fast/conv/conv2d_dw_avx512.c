/*
 * fast/conv/conv2d_dw_avx512.c — the depthwise stencil of one plane for
 * stride-1 rows, AVX-512 (fast.mk): fast/conv/conv2d_dw_kern.h with 16
 * lanes and masked tails.
 */
#include <immintrin.h>

#define DW_L 16
#define DW_VEC __m512
#define DW_SET1(x) _mm512_set1_ps(x)
#define DW_FMA _mm512_fmadd_ps
#define DW_LOADU _mm512_loadu_ps
#define DW_ZERO _mm512_setzero_ps
#define DW_STORE _mm512_store_ps
#define DW_STOREU _mm512_storeu_ps
#define DW_STREAM _mm512_stream_ps
#define DW_STORE_FIRST(d, v, n) _mm512_mask_storeu_ps(d, (__mmask16)((1u << (n)) - 1), v)
#define DW_LOAD_FIRST(s, n) _mm512_maskz_loadu_ps((__mmask16)((1u << (n)) - 1), s)
#define DW_ASM_VEC(x) "+v"(x)
#define DW_PLANE_FN cpu_fast_conv_dw_plane_avx512
#include "conv2d_dw_kern.h"
