/*
 * fast/quant/qmatmul_vnni.c — the int8-activation qmatmul tile on
 * AVX512-VNNI. Blocks go in pairs: one zmm holds two weight blocks (q4_0:
 * the nibbles, low halves then high halves, so weight j of a block meets
 * activation j), and vpdpbusd multiplies 4 u8 by 4 s8 per int32 lane.
 *  q4_0: the nibbles (0..15) are the unsigned side and the activations the
 *        signed one; the nibbles' offset of 8 comes out through the
 *        accumulator's start value, -8 * the activations' lane sums, made
 *        once per row when the activations are quantized (qmatmul.h's
 *        records, one per pair and row).
 *  q8_0: the activations, stored + 128, are the unsigned side; the bias
 *        comes out through -128 * the weights' lane sums, made once per
 *        weight pair and shared by every activation row of the tile.
 * Each lane's int32 sum then scales by d_w * d_a of its block in f32.
 */
#include <immintrin.h>
#include <string.h>

#include "plugins/cpu/fast/quant/qmatmul.h"

/* A weight pair, decoded: the weights, q8_0's bias correction, and the
 * weight scales spread over the 8 lanes of each block. */
typedef struct wpair {
  __m512i q, corr;
  __m512 d;
} wpair_t;

/* f16 scales of two blocks (blk1 NULL: 0) in lanes 0-7 and 8-15. */
static inline __m512 pair_scales(const uint8_t *blk0, const uint8_t *blk1) {
  uint16_t h0, h1 = 0;
  memcpy(&h0, blk0, 2);
  if (blk1) memcpy(&h1, blk1, 2);
  __m128 s = _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)h0 | (uint32_t)h1 << 16)));
  const __m512i spread = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(s));
}

/* q4_0: the 16 nibble bytes of each block into [lo0 hi0 lo1 hi1], 0..15. */
static inline __m512i q4_pair(const uint8_t *blk0, const uint8_t *blk1) {
  /* [q0 q0 q1 q1] from two broadcast loads, the second merged under a
   * mask: one shuffle-port uop where an insert and a lane shuffle took two */
  __m128i q0 = _mm_loadu_si128((const __m128i *)(blk0 + 2));
  __m512i x = blk1 ? _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(q0), 0xFF00,
                                                 _mm_loadu_si128((const __m128i *)(blk1 + 2)))
                   : _mm512_maskz_broadcast_i32x4(0x00FF, q0);
  const long long s4 = 0x0004000400040004ll; /* 16-bit lanes shifted by 4: the high halves */
  const __m512i shift = _mm512_set_epi64(s4, s4, 0, 0, s4, s4, 0, 0);
  return _mm512_and_si512(_mm512_srlv_epi16(x, shift), _mm512_set1_epi8(0x0F));
}

static inline __m512i q8_pair(const uint8_t *blk0, const uint8_t *blk1) {
  __m256i q0 = _mm256_loadu_si256((const __m256i *)(blk0 + 2));
  __m256i q1 = blk1 ? _mm256_loadu_si256((const __m256i *)(blk1 + 2)) : _mm256_setzero_si256();
  return _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
}

/* A lone last block (blk1 NULL) leaves the second half's weights and scale
 * zero, so the pad block of the activations adds nothing. */
static inline wpair_t decode(bool q4, const uint8_t *blk0, const uint8_t *blk1) {
  wpair_t p;
  p.d = pair_scales(blk0, blk1);
  if (q4) {
    p.q = q4_pair(blk0, blk1);
    p.corr = _mm512_setzero_si512(); /* the rows carry it */
    return p;
  }
  p.q = q8_pair(blk0, blk1);
  __m512i biased = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)0x80), p.q);
  p.corr = _mm512_sub_epi32(_mm512_setzero_si512(), biased);
  return p;
}

/* Weights stream from memory: fetch this far ahead along each weight row
 * into L1, and the next tile's rows (the same offset C rows on) into L2.
 * The four rows of a tile interleave four streams, which the hardware
 * prefetcher follows only a short way ahead; the L2 fetch keeps a whole
 * tile's worth of lines in flight, what one core needs to reach the
 * memory's bandwidth. */
#define PREFETCH_BYTES 640

/* The tile with its shape fixed at compile time (R rows, C columns) and
 * its loops unrolled, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void tile(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a,
                                                       const cpu_qm8_part_t *p, float *out, const bool q4,
                                                       const int R, const int C) {
  __m512 acc[CPU_QM8_R][CPU_QM8_C];
  const uint8_t *wrow[CPU_QM8_C];
  const uint8_t *arow[CPU_QM8_R];
  for (int r = 0; r < R; r++) {
    arow[r] = a->base + (p->r0 + r) * a->row_bytes;
    for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps();
  }
  for (int c = 0; c < C; c++) wrow[c] = w->base + (p->j0 + c) * w->row_bytes;
  const int64_t bb = w->block_bytes, next_tile = C * w->row_bytes;
  for (int64_t b = p->b0; b < p->b1; b += 2) {
    bool two = b + 1 < p->b1;
    wpair_t wp[CPU_QM8_C];
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
      const uint8_t *blk = wrow[c] + b * bb;
      _mm_prefetch((const char *)blk + PREFETCH_BYTES, _MM_HINT_T0);
      _mm_prefetch((const char *)blk + next_tile, _MM_HINT_T1);
      wp[c] = decode(q4, blk, two ? blk + bb : NULL);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
      const uint8_t *rec = arow[r] + b / 2 * CPU_QM8_PAIR;
      __m512i x = _mm512_loadu_si512(rec);
      __m512 da = _mm512_loadu_ps(rec + 64);
#pragma GCC unroll 4
      for (int c = 0; c < C; c++) {
        __m512i t = q4 ? _mm512_dpbusd_epi32(_mm512_loadu_si512(rec + 128), wp[c].q, x)
                       : _mm512_dpbusd_epi32(wp[c].corr, x, wp[c].q);
        acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_mul_ps(wp[c].d, da), acc[r][c]);
      }
    }
  }
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) out[r * CPU_QM8_C + c] = _mm512_reduce_add_ps(acc[r][c]);
}

#define TILE_CASE(R, C)                                                                                \
  case (R - 1) * CPU_QM8_C + C - 1:                                                                    \
    if (q4) tile(w, a, p, out, true, R, C);                                                            \
    else tile(w, a, p, out, false, R, C);                                                              \
    break;

void cpu_qm8_vnni(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a, const cpu_qm8_part_t *p, float *out) {
  const bool q4 = w->dtype == BP_Q4_0;
  switch ((p->rows - 1) * CPU_QM8_C + p->cols - 1) {
    TILE_CASE(1, 1) TILE_CASE(1, 2) TILE_CASE(1, 3) TILE_CASE(1, 4)
    TILE_CASE(2, 1) TILE_CASE(2, 2) TILE_CASE(2, 3) TILE_CASE(2, 4)
    TILE_CASE(3, 1) TILE_CASE(3, 2) TILE_CASE(3, 3) TILE_CASE(3, 4)
    TILE_CASE(4, 1) TILE_CASE(4, 2) TILE_CASE(4, 3) TILE_CASE(4, 4)
  default: break;
  }
}
