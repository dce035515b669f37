/*
 * fast/quant/qgemm_vnni.c — the int8 / uint8 GEMM's micro-kernel on
 * AVX512-VNNI, for the cache-blocked driver of qgemm_amx.c (same packed A
 * and B, same 32 x 32 blocks of int32 sums). vpdpbusd multiplies u8 (its
 * first operand) by s8 (its second) four at a time into int32 lanes that
 * wrap modulo 2^32 like the reference's, so each signedness pair of a and b
 * takes the form that needs the least correction:
 *  - u8 a x i8 b: a (broadcast) first, b second, exact as it is.
 *  - i8 a x u8 b: b first, a second (the product commutes), exact.
 *  - i8 a x i8 b: a packed as a ^ 0x80 = a + 128 (u8) first; the block
 *    subtracts 128 * (its k range's column sums of b), which one vpdpbusd
 *    of 0x80 bytes against the same b vectors gives.
 *  - u8 a x u8 b: a packed as a ^ 0x80 = a - 128 (s8) second, b first; the
 *    block adds 128 * (b's column sums), the negation of one vpdpbusd of b
 *    against 0x80 (= -128) bytes.
 * Eight rows x 32 columns per pass (16 accumulators, each b load feeding 8
 * rows), four passes per block, so the b pair of a k block is read from L1
 * four times.
 */
#include <immintrin.h>
#include <string.h>

#include "plugins/cpu/fast/quant/qgemm_amx.h"

#define ROWS 8

/* x += the products of u8 and s8 bytes in the order the pair needs:
 * b_first puts b's vector in the unsigned slot. */
#define DP(x, bv, av)                                                                              \
  ((x) = b_first ? _mm512_dpbusd_epi32((x), (bv), (av)) : _mm512_dpbusd_epi32((x), (av), (bv)))

/* Rows [r0, r0 + 8) of the block; corr (the correction from b's column
 * sums, when `flipped`) is summed on the first pass (fill) and reused by the
 * others. Inlined into each of the four kernels with constant b_first and
 * flipped. */
static inline __attribute__((always_inline)) void
pass8(int64_t chunks, const int8_t *ap, const int8_t *b0, const int8_t *b1, const int32_t *w,
      int64_t ld, bool first, int32_t *out, int64_t ldo, int r0, __m512i corr[2], bool fill,
      bool b_first, bool flipped) {
  const __m512i flip = _mm512_set1_epi32((int)0x80808080u);
  __m512i acc[ROWS][2];
  /* unrolled, so the 16 accumulators live in registers */
#pragma GCC unroll 8
  for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
      acc[r][h] = first ? _mm512_setzero_si512() : _mm512_loadu_si512(w + (r0 + r) * ld + 16 * h);
  if (fill) corr[0] = corr[1] = _mm512_setzero_si512();
  for (int64_t s = 0; s < chunks * 16; s++) {
    __m512i v0 = _mm512_loadu_si512(b0 + s * 64), v1 = _mm512_loadu_si512(b1 + s * 64);
    if (flipped && fill) {
      DP(corr[0], v0, flip);
      DP(corr[1], v1, flip);
    }
    const int8_t *a = ap + (s / 16) * CPU_QA_APANEL_CHUNK + r0 * CPU_QA_KC + (s % 16) * 4;
#pragma GCC unroll 8
    for (int r = 0; r < ROWS; r++) {
      int32_t x;
      memcpy(&x, a + r * CPU_QA_KC, 4);
      __m512i u = _mm512_set1_epi32(x);
      DP(acc[r][0], v0, u);
      DP(acc[r][1], v1, u);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
      _mm512_storeu_si512(out + (r0 + r) * ldo + 16 * h,
                          flipped ? _mm512_sub_epi32(acc[r][h], corr[h]) : acc[r][h]);
}

#define VNNI_UKR(name, b_first, flipped)                                                           \
  static void name(int64_t chunks, const int8_t *ap, const int8_t *b0, const int8_t *b1,           \
                   const int32_t *w, int64_t ld, bool first, int32_t *out, int64_t ldo) {          \
    __m512i corr[2];                                                                               \
    for (int r0 = 0; r0 < 32; r0 += ROWS)                                                          \
      pass8(chunks, ap, b0, b1, w, ld, first, out, ldo, r0, corr, r0 == 0, b_first, flipped);      \
  }

VNNI_UKR(vnni_ukr_ss, false, true)
VNNI_UKR(vnni_ukr_us, false, false)
VNNI_UKR(vnni_ukr_su, true, false)
VNNI_UKR(vnni_ukr_uu, true, true)

cpu_qa_ukr_fn cpu_qgemm_vnni_ukr_for(bool a_u8, bool b_u8) {
  return a_u8 ? (b_u8 ? vnni_ukr_uu : vnni_ukr_us) : (b_u8 ? vnni_ukr_su : vnni_ukr_ss);
}
