/*
 * fast/quant/qmatmul_avx512.c — GEMM / GEMV with q8_0 / q4_0 weights on
 * AVX-512, f32 activations: each weight block is expanded to 32 f32 in two
 * registers (nibbles or bytes, minus 8 for q4_0, times the f16 scale) and
 * multiplied into up to CPU_QM_ROWS rows of a at once, so a block is decoded
 * once per row tile and never stored; the weights stream once per tile.
 */
#include <immintrin.h>
#include <string.h>

#include "plugins/cpu/fast/quant/qmatmul.h"
#include "plugins/cpu/quant_blocks.h"

/* The block's 32 weights as f32, in w[0] (0..15) and w[1] (16..31). */
static inline void decode(bp_dtype_t dt, const uint8_t *blk, __m512 w[2]) {
  uint16_t h;
  memcpy(&h, blk, 2);
  __m512 d = _mm512_set1_ps(_cvtsh_ss(h)); /* F16C: exact, like bp_f16_to_f32 */
  __m128i lo, hi;
  if (dt == BP_Q8_0) {
    lo = _mm_loadu_si128((const __m128i *)(blk + 2));
    hi = _mm_loadu_si128((const __m128i *)(blk + 18));
  } else {
    __m128i q = _mm_loadu_si128((const __m128i *)(blk + 2)), m = _mm_set1_epi8(0x0F), e = _mm_set1_epi8(8);
    lo = _mm_sub_epi8(_mm_and_si128(q, m), e);
    hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m), e);
  }
  w[0] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), d);
  w[1] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), d);
}

void cpu_qmatmul_avx512_tile(const cpu_qm_tile_t *t) {
  __m512 acc[CPU_QM_ROWS], w[2];
  for (int64_t j = t->j0; j < t->j1; j++) {
    const uint8_t *row = t->w + j * t->w_row_bytes;
    for (int r = 0; r < t->rows; r++) acc[r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < t->blocks; b++) {
      decode(t->dtype, row + b * t->block_bytes, w);
      for (int r = 0; r < t->rows; r++) {
        const float *a = t->a[r] + b * 32;
        acc[r] = _mm512_fmadd_ps(_mm512_loadu_ps(a), w[0], acc[r]);
        acc[r] = _mm512_fmadd_ps(_mm512_loadu_ps(a + 16), w[1], acc[r]);
      }
    }
    for (int r = 0; r < t->rows; r++) t->y[r][j * t->y_stride] = _mm512_reduce_add_ps(acc[r]);
  }
}
