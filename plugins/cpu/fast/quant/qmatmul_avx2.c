/*
 * fast/quant/qmatmul_avx2.c — the int8-activation qmatmul tile for CPUs
 * without VNNI (AVX2), ggml's way: one block per ymm, the weights as int8
 * (q4_0: nibbles minus 8), multiplied by vpmaddubsw as |w| (unsigned) times
 * the activation with w's sign, so neither operand needs a bias. The pair
 * sums cannot saturate int16: |w| <= 128 and |q_a| <= 127 give at most
 * 2 * 128 * 127. vpmaddwd by ones widens them to int32 lanes, which scale
 * by d_w * d_a in f32. Columns go two at a time (16 ymm registers).
 */
#include <immintrin.h>
#include <string.h>

#include "plugins/cpu/fast/quant/qmatmul.h"

static inline float block_scale(const uint8_t *blk) {
  uint16_t h;
  memcpy(&h, blk, 2);
  return _cvtsh_ss(h);
}

static inline __m256i decode(bool q4, const uint8_t *blk) {
  if (!q4) return _mm256_loadu_si256((const __m256i *)(blk + 2));
  __m128i q = _mm_loadu_si128((const __m128i *)(blk + 2)), m = _mm_set1_epi8(0x0F);
  __m256i x = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(q, m)),
                                      _mm_and_si128(_mm_srli_epi16(q, 4), m), 1);
  return _mm256_sub_epi8(x, _mm256_set1_epi8(8));
}

/* R rows x C (1 or 2) columns from column c0 of the part. */
static inline __attribute__((always_inline)) void tile(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a,
                                                       const cpu_qm8_part_t *p, int c0, float *out,
                                                       const bool q4, const int R, const int C) {
  __m256 acc[CPU_QM8_R][2];
  const uint8_t *wrow[2];
  const __m256i ones = _mm256_set1_epi16(1);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps();
  for (int c = 0; c < C; c++) wrow[c] = w->base + (p->j0 + c0 + c) * w->row_bytes;
  for (int64_t b = p->b0; b < p->b1; b++) {
    __m256i q[2], mag[2];
    float dw[2];
#pragma GCC unroll 2
    for (int c = 0; c < C; c++) {
      const uint8_t *blk = wrow[c] + b * w->block_bytes;
      q[c] = decode(q4, blk);
      mag[c] = _mm256_sign_epi8(q[c], q[c]);
      dw[c] = block_scale(blk);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
      const uint8_t *rec = a->base + (p->r0 + r) * a->row_bytes + b / 2 * CPU_QM8_PAIR + b % 2 * 32;
      __m256i x = _mm256_loadu_si256((const __m256i *)rec);
      float da;
      memcpy(&da, rec + 64, 4);
#pragma GCC unroll 2
      for (int c = 0; c < C; c++) {
        __m256i pairs = _mm256_maddubs_epi16(mag[c], _mm256_sign_epi8(x, q[c]));
        __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
        acc[r][c] = _mm256_fmadd_ps(dot, _mm256_set1_ps(dw[c] * da), acc[r][c]);
      }
    }
  }
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc[r][c]), _mm256_extractf128_ps(acc[r][c], 1));
      s = _mm_add_ps(s, _mm_movehl_ps(s, s));
      s = _mm_add_ss(s, _mm_movehdup_ps(s));
      out[r * CPU_QM8_C + c0 + c] = _mm_cvtss_f32(s);
    }
}

#define TILE_CASE(R, C)                                                                                \
  case (R - 1) * 2 + C - 1:                                                                            \
    if (q4) tile(w, a, p, c0, out, true, R, C);                                                        \
    else tile(w, a, p, c0, out, false, R, C);                                                          \
    break;

void cpu_qm8_avx2(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a, const cpu_qm8_part_t *p, float *out) {
  const bool q4 = w->dtype == BP_Q4_0;
  for (int c0 = 0; c0 < p->cols; c0 += 2) {
    int cols = p->cols - c0 < 2 ? p->cols - c0 : 2;
    switch ((p->rows - 1) * 2 + cols - 1) {
      TILE_CASE(1, 1) TILE_CASE(1, 2) TILE_CASE(2, 1) TILE_CASE(2, 2)
      TILE_CASE(3, 1) TILE_CASE(3, 2) TILE_CASE(4, 1) TILE_CASE(4, 2)
    default: break;
    }
  }
}
