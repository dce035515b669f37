/*
 * fast/quant/qmatmul_vnni.c — the int8-activation qmatmul tile on
 * AVX512-VNNI: vpdpbusd multiplies 4 u8 by 4 s8 per int32 lane, and each
 * lane's int32 sum then scales by d_w * d_a of its block in f32.
 *  q4_0: blocks go in groups of 4 (72 bytes of a weight row, the
 *        activations' quad records, qmatmul.h). Two loads fetch a group;
 *        one word permute packs its 64 nibble bytes (the 18-byte blocks
 *        keep them word-aligned) and another spreads its 4 f16 scales over
 *        their blocks' 4 lanes, converted in one vcvtph2ps; a mask and a
 *        shift split the nibbles into the low and high halves (0..15, the
 *        unsigned side), two vpdpbusd add their dot products with the
 *        activations (the signed side) to the nibbles' offset of 8, -8 *
 *        the activations' lane sums made once per row, and one conversion,
 *        one product and one FMA per output scale a group.
 *  q8_0: blocks go in pairs, one zmm per weight pair; the activations,
 *        stored + 128, are the unsigned side; the bias comes out through
 *        -128 * the weights' lane sums, made once per weight pair and
 *        shared by every activation row of the tile.
 */
#include <immintrin.h>
#include <string.h>

#include "plugins/cpu/fast/quant/qmatmul.h"

/* Weights stream from memory: fetch this far ahead along each weight row
 * into L1, and the next tile's rows (the same offset C rows on) into L2.
 * The rows of a tile interleave C streams, which the hardware prefetcher
 * follows only a short way ahead; the L2 fetch keeps a whole tile's worth
 * of lines in flight, what one core needs to reach the memory's
 * bandwidth. */
#define PREFETCH_BYTES 640

/* ---- q4_0: groups of 4 blocks ------------------------------------------------- */

/* A weight group, decoded: the low and high nibbles, 16 bytes per block in
 * block order, and the block scales over their 4 lanes each. */
typedef struct wquad {
  __m512i lo, hi;
  __m512 d;
} wquad_t;

/* blocks (1-4) blocks from blk: a group short of 4 (the row's end) loads
 * only its own bytes, so the missing blocks decode as zero weights and
 * zero scales, against the activations' zero pad blocks. */
static inline wquad_t q4_quad(const uint8_t *blk, int64_t blocks) {
  __m512i x, y;
  if (blocks >= 4) {
    x = _mm512_loadu_si512(blk);
    y = _mm512_castsi128_si512(_mm_loadl_epi64((const __m128i *)(blk + 64)));
  } else {
    x = _mm512_maskz_loadu_epi8(((__mmask64)1 << (18 * blocks)) - 1, blk);
    y = _mm512_setzero_si512();
  }
  /* word 9i holds block i's scale, words 9i+1..9i+8 its nibbles (from y
   * past word 31) */
  const __m512i nib_idx = _mm512_set_epi16(35, 34, 33, 32, 31, 30, 29, 28, 26, 25, 24, 23, 22, 21, 20, 19, 17, 16,
                                           15, 14, 13, 12, 11, 10, 8, 7, 6, 5, 4, 3, 2, 1);
  const __m512i scale_idx = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 27, 27, 27, 27, 18,
                                             18, 18, 18, 9, 9, 9, 9, 0, 0, 0, 0);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512i nib = _mm512_permutex2var_epi16(x, nib_idx, y);
  wquad_t q;
  q.lo = _mm512_and_si512(nib, m4);
  q.hi = _mm512_and_si512(_mm512_srli_epi16(nib, 4), m4);
  q.d = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(scale_idx, x)));
  return q;
}

/* One group of the tile's columns against its rows: acc[r][c] += the
 * group's sum per lane, scaled. */
static inline __attribute__((always_inline)) void group_q4(__m512 acc[CPU_QM8_R][CPU_QM8_C],
                                                           const uint8_t *const *wrow, const uint8_t *const *rec,
                                                           int64_t blocks, int64_t next_tile, const int R,
                                                           const int C) {
#pragma GCC unroll 4
  for (int c = 0; c < C; c++) {
    _mm_prefetch((const char *)wrow[c] + PREFETCH_BYTES, _MM_HINT_T0);
    _mm_prefetch((const char *)wrow[c] + next_tile, _MM_HINT_T1);
    wquad_t q = q4_quad(wrow[c], blocks);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
      __m512i t = _mm512_loadu_si512(rec[r] + 128);
      t = _mm512_dpbusd_epi32(t, q.lo, _mm512_loadu_si512(rec[r]));
      t = _mm512_dpbusd_epi32(t, q.hi, _mm512_loadu_si512(rec[r] + 64));
      __m512 da = _mm512_loadu_ps(rec[r] + 192);
      acc[r][c] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(t), da), q.d, acc[r][c]);
    }
  }
}

/* One group's int32 lane sums against its quad record: the nibble offset
 * of 8 as the start value, then the low and the high halves. */
static inline __m512i group_sums_q4(const uint8_t *blk, const uint8_t *rec, __m512i *raw) {
  const __m512i nib_idx = _mm512_set_epi16(35, 34, 33, 32, 31, 30, 29, 28, 26, 25, 24, 23, 22, 21, 20, 19, 17, 16,
                                           15, 14, 13, 12, 11, 10, 8, 7, 6, 5, 4, 3, 2, 1);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  *raw = _mm512_loadu_si512(blk);
  __m512i y = _mm512_castsi128_si512(_mm_loadl_epi64((const __m128i *)(blk + 64)));
  __m512i nib = _mm512_permutex2var_epi16(*raw, nib_idx, y);
  __m512i t = _mm512_dpbusd_epi32(_mm512_loadu_si512(rec + 128), _mm512_and_si512(nib, m4), _mm512_loadu_si512(rec));
  return _mm512_dpbusd_epi32(t, _mm512_and_si512(_mm512_srli_epi16(nib, 4), m4), _mm512_loadu_si512(rec + 64));
}

/* Lane 4i + g of the result: lanes 4i..4i+3 of a (g = 0), b, c, d (g = 3)
 * summed, i.e. block i of each of 4 groups, one lane per block. */
static inline __m512i block_sums4(__m512i a, __m512i b, __m512i c, __m512i d) {
  __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  __m512i v = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(u, v), _mm512_unpackhi_epi64(u, v));
}

/* The activation scales of 4 quad records in block_sums4's order (lane
 * 4i + g: block i of record g). */
static inline __m512 act_scales16(const uint8_t *rec) {
  __m512i d0 = _mm512_loadu_si512(rec + 192), d1 = _mm512_loadu_si512(rec + CPU_QM8_QUAD + 192);
  __m512i d2 = _mm512_loadu_si512(rec + 2 * CPU_QM8_QUAD + 192), d3 = _mm512_loadu_si512(rec + 3 * CPU_QM8_QUAD + 192);
  return _mm512_castsi512_ps(
      _mm512_unpacklo_epi64(_mm512_unpacklo_epi32(d0, d1), _mm512_unpacklo_epi32(d2, d3)));
}

/* The GEMV's tile (one activation row, C weight rows) over 16 blocks (4
 * whole groups) per step. A group's lanes hold 4 lanes per block, and
 * scaling them lane by lane (group_q4) costs a conversion, a product and
 * an FMA per group and spreads each group's 4 scales with a word permute;
 * here one horizontal step first sums the 4 groups' lanes to one lane per
 * block, so one conversion, product and FMA serve 16 blocks, and 16 weight
 * scales come from the 4 groups' loads with two word permutes and a blend
 * into one vcvtph2ps. Fewer vector uops per block on ports 0 and 5 leave
 * more of each core's time to wait on the weights' lines. Returns the
 * first block not done (the rest go by groups). */
static inline __attribute__((always_inline)) int64_t gemv16_q4(__m512 acc[CPU_QM8_R][CPU_QM8_C],
                                                               const uint8_t **wrow, const uint8_t **rec,
                                                               int64_t b, int64_t b1, int64_t next_tile,
                                                               const int C) {
  /* lane 4i + g: word 9i (block i's scale) of group g's first 64 bytes,
   * from (g0, g1) for g = 0, 1 and from (g2, g3) for g = 2, 3 */
  const __m512i scale_idx =
      _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 59, 27, 59, 27, 50, 18, 50, 18, 41, 9, 41, 9,
                       32, 0, 32, 0);
  for (; b + 16 <= b1; b += 16) {
    __m512 da = act_scales16(rec[0]);
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
      for (int l = 0; l < 5; l++) {
        _mm_prefetch((const char *)wrow[c] + PREFETCH_BYTES + 64 * l, _MM_HINT_T0);
        _mm_prefetch((const char *)wrow[c] + next_tile + 64 * l, _MM_HINT_T1);
      }
      __m512i x0, x1, x2, x3;
      __m512i t0 = group_sums_q4(wrow[c], rec[0], &x0);
      __m512i t1 = group_sums_q4(wrow[c] + 72, rec[0] + CPU_QM8_QUAD, &x1);
      __m512i t2 = group_sums_q4(wrow[c] + 144, rec[0] + 2 * CPU_QM8_QUAD, &x2);
      __m512i t3 = group_sums_q4(wrow[c] + 216, rec[0] + 3 * CPU_QM8_QUAD, &x3);
      __m512i h01 = _mm512_permutex2var_epi16(x0, scale_idx, x1), h23 = _mm512_permutex2var_epi16(x2, scale_idx, x3);
      __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_mask_blend_epi16(0xCCCC, h01, h23)));
      acc[0][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(block_sums4(t0, t1, t2, t3)), _mm512_mul_ps(dw, da), acc[0][c]);
      wrow[c] += 4 * 72;
    }
    rec[0] += 4 * CPU_QM8_QUAD;
  }
  return b;
}

/* The q4_0 tile with its shape fixed at compile time (R rows, C columns)
 * and its loops unrolled, so the accumulators stay in registers; whole
 * groups in the loop, a short last one after it. */
static inline __attribute__((always_inline)) void tile_q4(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a,
                                                          const cpu_qm8_part_t *p, float *out, const int R,
                                                          const int C) {
  __m512 acc[CPU_QM8_R][CPU_QM8_C];
  const uint8_t *wrow[CPU_QM8_C];
  const uint8_t *rec[CPU_QM8_R];
  for (int r = 0; r < R; r++) {
    rec[r] = a->base + (p->r0 + r) * a->row_bytes + p->b0 / 4 * CPU_QM8_QUAD;
    for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps();
  }
  for (int c = 0; c < C; c++) wrow[c] = w->base + (p->j0 + c) * w->row_bytes + p->b0 * 18;
  const int64_t next_tile = C * w->row_bytes;
  int64_t b = p->b0;
  if (R == 1) b = gemv16_q4(acc, wrow, rec, b, p->b1, next_tile, C);
  for (; b + 4 <= p->b1; b += 4) {
    group_q4(acc, wrow, rec, 4, next_tile, R, C);
    for (int c = 0; c < C; c++) wrow[c] += 72;
    for (int r = 0; r < R; r++) rec[r] += CPU_QM8_QUAD;
  }
  if (b < p->b1) group_q4(acc, wrow, rec, p->b1 - b, next_tile, R, C);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) out[r * CPU_QM8_C + c] = _mm512_reduce_add_ps(acc[r][c]);
}

/* One activation row of f32, contiguous along k, into quad records: the
 * scalar quantizer's arithmetic (qmatmul.c) 16 values at a time. The
 * conversion rounds to nearest even as the scalar code does, and a block
 * holding a NaN or an infinity gets a NaN scale. */
void cpu_qm8_vnni_quad_row(const float *x, int64_t nb, uint8_t *recs) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m128i ones = _mm_set1_epi8(1);
  for (int64_t b = 0; b < nb; b++) {
    __m512 v0 = _mm512_loadu_ps(x + b * 32), v1 = _mm512_loadu_ps(x + b * 32 + 16);
    float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
    bool finite = !(_mm512_fpclass_ps_mask(v0, 0x99) | _mm512_fpclass_ps_mask(v1, 0x99));
    float d = amax / 127.0f, inv = d != 0.0f && finite ? 1.0f / d : 0.0f;
    __m128i q0 = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, _mm512_set1_ps(inv))));
    __m128i q1 = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, _mm512_set1_ps(inv))));
    uint8_t *rec = recs + b / 4 * CPU_QM8_QUAD + b % 4 * 16;
    _mm_storeu_si128((__m128i *)rec, q0);
    _mm_storeu_si128((__m128i *)(rec + 64), q1);
    __m128i sums = _mm_dpbusd_epi32(_mm_dpbusd_epi32(_mm_setzero_si128(), ones, q0), ones, q1);
    _mm_storeu_si128((__m128i *)(rec + 128), _mm_sub_epi32(_mm_setzero_si128(), _mm_slli_epi32(sums, 3)));
    _mm_storeu_ps((float *)(rec + 192), _mm_set1_ps(finite ? d : __builtin_nanf("")));
  }
  for (int64_t b = nb; b % 4; b++) { /* the pad blocks: zero values, sums and scales */
    uint8_t *rec = recs + b / 4 * CPU_QM8_QUAD + b % 4 * 16;
    for (int part = 0; part < 4; part++) memset(rec + 64 * part, 0, 16);
  }
}

/* ---- q8_0: pairs of blocks ---------------------------------------------------- */

/* A weight pair, decoded: the weights, the bias correction, and the weight
 * scales spread over the 8 lanes of each block. */
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

/* A lone last block (blk1 NULL) leaves the second half's weights and scale
 * zero, so the pad block of the activations adds nothing. */
static inline wpair_t q8_pair(const uint8_t *blk0, const uint8_t *blk1) {
  wpair_t p;
  p.d = pair_scales(blk0, blk1);
  __m256i q0 = _mm256_loadu_si256((const __m256i *)(blk0 + 2));
  __m256i q1 = blk1 ? _mm256_loadu_si256((const __m256i *)(blk1 + 2)) : _mm256_setzero_si256();
  p.q = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
  __m512i biased = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)0x80), p.q);
  p.corr = _mm512_sub_epi32(_mm512_setzero_si512(), biased);
  return p;
}

/* The q8_0 tile, R x C fixed at compile time as tile_q4. */
static inline __attribute__((always_inline)) void tile_q8(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a,
                                                          const cpu_qm8_part_t *p, float *out, const int R,
                                                          const int C) {
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
      wp[c] = q8_pair(blk, two ? blk + bb : NULL);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
      const uint8_t *rec = arow[r] + b / 2 * CPU_QM8_PAIR;
      __m512i x = _mm512_loadu_si512(rec);
      __m512 da = _mm512_loadu_ps(rec + 64);
#pragma GCC unroll 4
      for (int c = 0; c < C; c++) {
        __m512i t = _mm512_dpbusd_epi32(wp[c].corr, x, wp[c].q);
        acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_mul_ps(wp[c].d, da), acc[r][c]);
      }
    }
  }
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) out[r * CPU_QM8_C + c] = _mm512_reduce_add_ps(acc[r][c]);
}

#define TILE_CASE(R, C)                                                                                \
  case (R - 1) * CPU_QM8_C + C - 1:                                                                    \
    if (q4) tile_q4(w, a, p, out, R, C);                                                               \
    else tile_q8(w, a, p, out, R, C);                                                                  \
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
