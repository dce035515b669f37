/*
 * fast/quant/qgemm_avx2.c — the int8 / uint8 GEMM's inner kernel for CPUs
 * without VNNI (AVX2): the same packed B as qgemm_vnni.c and rows of a as
 * u8 (an i8 a + 128), both widened to int16 by their signedness and
 * multiplied with vpmaddwd, whose int32 pair sums cannot saturate (unlike
 * vpmaddubsw, which ggml's path uses; u8 x u8 products reach 65025), so the
 * sums stay exact modulo 2^32.
 */
#include <immintrin.h>
#include <string.h>

#include "plugins/cpu/fast/quant/quant.h"

/* One row against one 16-column panel: the 16 sums, before the correction. */
static void panel_row(const cpu_qb_pack_t *p, const uint8_t *a, int64_t jp, int32_t out[16]) {
  const int8_t *b = p->b + jp * p->kp * 16;
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
  for (int64_t s = 0; s < p->kp / 4; s++) {
    uint32_t w;
    memcpy(&w, a + s * 4, 4);
    /* a's 4 bytes as 4 int16, repeated for 4 columns */
    __m128i a4 = _mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)w));
    __m256i av = _mm256_broadcastq_epi64(a4);
    for (int c = 0; c < 4; c++) {
      __m128i b16 = _mm_loadu_si128((const __m128i *)(b + s * 64 + c * 16));
      __m256i bv = p->b_u8 ? _mm256_cvtepu8_epi16(b16) : _mm256_cvtepi8_epi16(b16);
      acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(av, bv));
    }
  }
  for (int c = 0; c < 4; c++) {
    int32_t v[8];
    _mm256_storeu_si256((__m256i *)v, acc[c]);
    for (int q = 0; q < 4; q++) out[c * 4 + q] = (int32_t)((uint32_t)v[2 * q] + (uint32_t)v[2 * q + 1]);
  }
}

void cpu_qgemm_avx2_rows(const cpu_qb_pack_t *p, const uint8_t *const *arows, int rows, int32_t *acc,
                         int64_t ldacc) {
  int32_t out[16];
  for (int64_t jp = 0; jp < (p->n + 15) / 16; jp++)
    for (int r = 0; r < rows; r++) {
      panel_row(p, arows[r], jp, out);
      for (int q = 0; q < 16 && jp * 16 + q < p->n; q++)
        acc[r * ldacc + jp * 16 + q] =
            (int32_t)((uint32_t)out[q] - (p->a_flip ? (uint32_t)p->colsum[jp * 16 + q] << 7 : 0));
    }
}
