/*
 * bp_half.h — the one host-side f16 / bf16 conversion for plugins, tools and
 * tests (issue 23, item 15). Header only, static inline, C11.
 *
 *  - to f16 / bf16: round to nearest even with one rounding (f32 and f64
 *    inputs alike); overflow gives Inf; results in the subnormal range are
 *    exact multiples of the smallest subnormal, correctly rounded; NaN keeps
 *    its sign and top payload bits and comes back quiet.
 *  - from f16 / bf16: exact; a signalling NaN comes back quiet.
 *
 * None of it depends on the FP rounding mode, FTZ/DAZ or -ffast-math: the
 * portable path works on bit patterns only (bp_half_portable_*). Where the
 * compiler targets F16C (__F16C__, e.g. -mf16c or -march=native) the f32 <->
 * f16 pair uses its instructions, which give the same bits (test/test_half.c
 * checks all of this exhaustively). Device kernels keep their own
 * conversions (kernels/common/bp_philox.h is normative for the random
 * stream); this header is for host C only.
 */
#ifndef BP_HALF_H
#define BP_HALF_H

#include <stdint.h>
#include <string.h>

#if defined(__F16C__) && !defined(BP_HALF_PORTABLE) && \
    (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define BP_HALF_USE_F16C 1
#endif

static inline uint32_t bp_half_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float bp_half_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Rounds x to a binary float with ebits exponent and mbits mantissa bits
 * (f16: 5, 10; bf16: 8, 7) and returns its bit pattern. Works on the
 * double's bits so there is exactly one rounding. */
static inline uint16_t bp_half_round_small(double x, int ebits, int mbits) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  uint16_t sign = (uint16_t)((u >> 63) << (ebits + mbits));
  uint64_t abs = u & 0x7fffffffffffffffull, frac = abs & 0xfffffffffffffull;
  uint16_t expmask = (uint16_t)(((1u << ebits) - 1u) << mbits);
  if (abs > 0x7ff0000000000000ull) /* NaN: quiet it, keep top payload */
    return (uint16_t)(sign | expmask | (1u << (mbits - 1)) |
                      (uint16_t)(frac >> (52 - mbits)));
  if (abs == 0x7ff0000000000000ull)
    return sign | expmask;
  int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
  int e = (int)(abs >> 52) - 1023;
  if (e > bias) /* at least 2^(emax+1): overflows even before rounding */
    return sign | expmask;
  if ((abs >> 52) == 0) /* double denormal: far below any half's range */
    return sign;
  uint64_t m = frac | (1ull << 52);
  int shift = 52 - mbits + (e < emin ? emin - e : 0);
  if (shift > 60)
    return sign; /* below half the smallest denormal */
  uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1);
  uint64_t half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (q & 1)))
    q++;
  /* Denormals: q is the bit pattern (a carry into 2^mbits is exactly the
   * smallest normal). Normals: a mantissa carry bumps the exponent. */
  uint64_t bits =
      e < emin ? q : ((uint64_t)(e + bias) << mbits) + q - (1ull << mbits);
  if (bits >= expmask)
    return sign | expmask;
  return (uint16_t)(sign | bits);
}

/* ---- portable path --------------------------------------------------------*/

static inline uint16_t bp_half_portable_f32_to_f16(float f) {
  return bp_half_round_small((double)f, 5, 10); /* f32 -> f64 is exact */
}

static inline float bp_half_portable_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) /* Inf or NaN (quiet) */
    return bp_half_f32_from_bits(sign | 0x7f800000u | (m << 13) |
                                 (m ? 0x400000u : 0u));
  if (e == 0) { /* zero or subnormal: m * 2^-24, normalised by hand */
    if (m == 0)
      return bp_half_f32_from_bits(sign);
    uint32_t ex = 113; /* f32 biased exponent of 2^-14 */
    while (!(m & 0x400u)) {
      m <<= 1;
      ex--;
    }
    return bp_half_f32_from_bits(sign | (ex << 23) | ((m & 0x3ffu) << 13));
  }
  return bp_half_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/* ---- f16 ------------------------------------------------------------------*/

static inline uint16_t bp_f32_to_f16(float f) {
#ifdef BP_HALF_USE_F16C
  return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
  return bp_half_portable_f32_to_f16(f);
#endif
}

static inline float bp_f16_to_f32(uint16_t h) {
#ifdef BP_HALF_USE_F16C
  return _cvtsh_ss(h);
#else
  return bp_half_portable_f16_to_f32(h);
#endif
}

/* One rounding straight from double (no double -> float step first). */
static inline uint16_t bp_f64_to_f16(double x) {
  return bp_half_round_small(x, 5, 10);
}

static inline double bp_f16_to_f64(uint16_t h) {
  return (double)bp_f16_to_f32(h);
}

/* ---- bf16 -----------------------------------------------------------------*/

static inline uint16_t bp_f32_to_bf16(float f) {
  uint32_t u = bp_half_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, payload kept */
    return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float bp_bf16_to_f32(uint16_t h) {
  uint32_t b = (uint32_t)h << 16;
  if ((b & 0x7fffffffu) > 0x7f800000u)
    b |= 0x400000u; /* quiet */
  return bp_half_f32_from_bits(b);
}

static inline uint16_t bp_f64_to_bf16(double x) {
  return bp_half_round_small(x, 8, 7);
}

static inline double bp_bf16_to_f64(uint16_t h) {
  return (double)bp_bf16_to_f32(h);
}

#endif /* BP_HALF_H */
