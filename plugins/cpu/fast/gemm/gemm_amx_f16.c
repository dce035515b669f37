/*
 * fast/gemm/gemm_amx_f16.c — f16 GEMM on the bf16 AMX tiles, every product
 * exact: the packers that fast/gemm/gemm_amx.c runs for f16.
 *
 * A CPU with AMX-BF16 but no AMX-FP16 has no f16 tile product, and
 * AVX512-FP16's FMAs accumulate in f16, which would break the f32
 * accumulation the API promises (k = 4096 terms summed in an 11-bit
 * mantissa). Instead each f16 value x is split into two bf16 values: hi, x
 * with its mantissa cut to bf16's 8 bits, and lo = x - hi, the at most 3
 * bits left, which bf16 holds exactly (its exponent range is f32's). Then
 *   A * B = Ah*Bh + Al*Bh + Ah*Bl + Al*Bl
 * is four bf16 products, each exact in f32, summed in f32 by the tiles: the
 * same arithmetic as widening to f32, at four times the k of a bf16 GEMM,
 * which the tiles still run faster than the f32 FMAs run the original.
 *
 * Layout, k' = 4k: for source k step p, A's row holds (Ah, Al, Ah, Al) at
 * k' = 4p..4p+3 and B holds (Bh, Bh, Bl, Bl), so in the tiles' VNNI pairs
 * one pair of B rows is (Bh, Bh) and gives Ah*Bh + Al*Bh, the next (Bl, Bl)
 * gives Ah*Bl + Al*Bl. One AMX k chunk (32 bf16) covers 8 source steps.
 *
 * Inf and NaN: x goes whole into hi, and a zero lo would meet the other
 * operand's Inf as 0 * Inf = NaN. So a non-finite A value is laid out as
 * (Ah, 0, 0, 0) and a non-finite B value as (Bh, 0, 0, 0): Inf * finite
 * gives Ah*Bh = Inf plus zeros, and only Inf * 0 or a NaN gives NaN, as in
 * f32.
 * Compiled with the AVX-512 flags (fast.mk); reached only from gemm_amx.c.
 */
#include <immintrin.h>
#include <string.h>

#include "gemm.h"
#include "plugins/cpu/dtype.h"

#define SPLIT_STEPS 8 /* source k steps per 32-wide AMX k chunk */

/* hi and lo bf16 halves of 16 f32 values widened from f16, each in the
 * top 16 bits of its lane (the low 16 are zero). Inf and NaN go whole
 * into hi with lo 0; *finite says which lanes are finite. */
static inline void split16(__m512 x, __m512i *hi, __m512i *lo, __mmask16 *finite) {
  __m512i xi = _mm512_castps_si512(x);
  __m512i h = _mm512_and_si512(xi, _mm512_set1_epi32((int)0xffff0000u));
  __m512 l = _mm512_sub_ps(x, _mm512_castsi512_ps(h));
  *finite = _mm512_cmplt_epu32_mask(_mm512_and_si512(xi, _mm512_set1_epi32(0x7fffffff)),
                                    _mm512_set1_epi32(0x7f800000));
  *hi = h;
  *lo = _mm512_maskz_mov_epi32(*finite, _mm512_castps_si512(l));
}

/* Up to 16 f16 values n apart (n == 1: one masked load), widened. */
static inline __m512 load16(const uint16_t *s, int64_t stride, int cnt) {
  if (cnt <= 0) return _mm512_setzero_ps();
  __mmask16 m = cnt >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cnt) - 1);
  if (stride == 1) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, s));
  uint16_t t[16] = {0};
  for (int i = 0; i < cnt && i < 16; i++) t[i] = s[i * stride];
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)t));
}

void cpu_fast_amx_f16_pack_a(const uint16_t *a, int64_t sam, int64_t sak, int64_t rows, int64_t k,
                             int64_t kp, uint16_t *dst) {
  /* step q's two words, pairs (Ah, Al) and again (Ah, Al), or (Ah, 0) and
   * (0, 0) when A is not finite: lanes q of w1 and w2 side by side */
  const __m512i lo8 = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi8 = _mm512_add_epi32(lo8, _mm512_set1_epi32(8));
  int64_t chunks = kp / 32;
  for (int64_t i = 0; i < 32; i++) {
    const uint16_t *s = a + i * sam;
    uint16_t *d = dst + i * 32;
    for (int64_t c = 0; c < chunks; c += 2, s += 2 * SPLIT_STEPS * sak) {
      /* two chunks at a time: 16 source steps, one vector */
      int64_t p0 = c * SPLIT_STEPS;
      int cnt = i < rows ? (int)(k - p0 < 16 ? k - p0 : 16) : 0;
      __m512i hi, lo;
      __mmask16 fin;
      split16(load16(s, sak, cnt), &hi, &lo, &fin);
      __m512i w1 = _mm512_or_si512(_mm512_srli_epi32(hi, 16), lo);
      __m512i w2 = _mm512_maskz_mov_epi32(fin, w1);
      _mm512_storeu_si512(d + c * 1024, _mm512_permutex2var_epi32(w1, lo8, w2));
      if (c + 1 < chunks)
        _mm512_storeu_si512(d + (c + 1) * 1024, _mm512_permutex2var_epi32(w1, hi8, w2));
    }
  }
}

void cpu_fast_amx_f16_pack_b(const uint16_t *b, int64_t sbk, int64_t sbn, int64_t cols, int64_t k,
                             int64_t kp, uint16_t *dst) {
  int64_t chunks = kp / 32;
  for (int64_t c = 0; c < chunks; c++, dst += 1024)
    for (int64_t q = 0; q < SPLIT_STEPS; q++) {
      int64_t p = c * SPLIT_STEPS + q;
      uint16_t *d0 = dst + 2 * q * 32, *d1 = dst + 512 + 2 * q * 32;
      for (int h = 0; h < 2; h++) {
        int cnt = p < k ? (int)(cols - 16 * h) : 0;
        __m512i hi, lo;
        __mmask16 fin;
        split16(load16(b + p * sbk + 16 * h * sbn, sbn, cnt), &hi, &lo, &fin);
        /* rows 2q and 2q + 1 of the VNNI tile: (Bh, Bh) and (Bl, Bl);
         * (Bh, 0) and (0, 0) when B is not finite */
        __m512i wh = _mm512_or_si512(_mm512_maskz_mov_epi32(fin, hi), _mm512_srli_epi32(hi, 16));
        __m512i wl = _mm512_or_si512(lo, _mm512_srli_epi32(lo, 16));
        uint16_t *d = h ? d1 : d0;
        _mm512_storeu_si512(d, wh);
        _mm512_storeu_si512(d + 32, wl);
      }
    }
}
