/*
 * fast/conv/conv2d_dw_avx512.c — the depthwise stencils of one plane for
 * stride-1 rows, AVX-512 (fast.mk): fast/conv/conv2d_dw_kern.h with 16
 * lanes and masked tails, and fast/conv/conv2d_dw3_kern.h, the 3 x 3
 * stride-1 kernel that keeps three output rows in flight and reads x in
 * place under lane masks (cpu_fast_conv_dw3_plane_avx512), 4 vectors a
 * strip, its masks in mask registers.
 */
#include <immintrin.h>
#include <stdbool.h>

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

/* ---- 3 x 3, stride 1 down the rows: three output rows in rotation ------ */

/* Lanes lo .. hi - 1 of a 16-lane mask, both clipped to 0 .. 16. */
static inline __mmask16 dw3_lanes(int64_t lo, int64_t hi) {
  lo = lo < 0 ? 0 : lo, hi = hi > 16 ? 16 : hi;
  if (hi <= lo) return 0;
  return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

#define D3_L 16
#define D3_NV 4 /* 3 rows x 4 accumulators, 9 weights */
#define D3_VEC __m512
#define D3_MASK __mmask16
#define D3_LANES dw3_lanes
#define D3_MLOAD _mm512_maskz_loadu_ps
#define D3_LOADU _mm512_loadu_ps
#define D3_FMA _mm512_fmadd_ps
#define D3_SET1 _mm512_set1_ps
#define D3_ASM_VEC(x) "+v"(x)
#define D3_PLANE_FN cpu_fast_conv_dw3_plane_avx512
#include "conv2d_dw3_kern.h"
