/*
 * fast/quant/qgemm_vnni.c — the int8 GEMM's inner kernel on AVX512-VNNI:
 * vpdpbusd multiplies u8 by s8 four at a time into int32 lanes, so A is fed
 * as a + 128 and the caller subtracts 128 * colsum(B); the sums are exact
 * modulo 2^32 like the reference. Up to 4 rows of A x 32 columns of B per
 * step: 8 accumulators, each B load feeding 4 rows.
 */
#include <immintrin.h>
#include <string.h>

#include "plugins/cpu/fast/quant/quant.h"

/* One 16-column panel pair (or one panel when `two` is false). */
static void panel(const cpu_qb_pack_t *p, const uint8_t *const *a, int rows, int64_t jp, bool two,
                  __m512i acc[4][2]) {
  const int8_t *b0 = p->b + jp * p->kp * 16, *b1 = b0 + p->kp * 16;
  for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  for (int64_t s = 0; s < p->kp / 4; s++) {
    __m512i v0 = _mm512_loadu_si512(b0 + s * 64);
    __m512i v1 = two ? _mm512_loadu_si512(b1 + s * 64) : _mm512_setzero_si512();
    for (int r = 0; r < rows; r++) {
      int32_t w;
      memcpy(&w, a[r] + s * 4, 4);
      __m512i x = _mm512_set1_epi32(w);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], x, v0);
      if (two) acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], x, v1);
    }
  }
}

void cpu_qgemm_vnni_rows(const cpu_qb_pack_t *p, const uint8_t *const *arows, int rows, int32_t *acc,
                         int64_t ldacc) {
  int64_t panels = (p->n + 15) / 16;
  __m512i c[4][2];
  for (int64_t jp = 0; jp < panels; jp += 2) {
    bool two = jp + 1 < panels;
    panel(p, arows, rows, jp, two, c);
    for (int h = 0; h < (two ? 2 : 1); h++) {
      int64_t j0 = (jp + h) * 16, left = p->n - j0;
      __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
      __m512i corr = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(m, p->colsum + j0), 7);
      for (int r = 0; r < rows; r++)
        _mm512_mask_storeu_epi32(acc + r * ldacc + j0, m, _mm512_sub_epi32(c[r][h], corr));
    }
  }
}
