/*
 * bp_qcodec.h — bit-level conversions of the quantized dtypes (docs/ops.md,
 * "Quantized types"), in integer code so that every target runs the same
 * steps and gets the CPU reference's bits (plugins/cpu/fp8.h,
 * plugins/cpu/quant_blocks.h): OCP FP8 E4M3 / E5M2 from a double in one
 * rounding (nearest even; non-saturating overflow) and back, and IEEE f16
 * bits to and from float (the scale of a q8_0 / q4_0 block).
 *
 * Compiled three ways: by nvcc and hiprtc into the CUDA and HIP kernels
 * (kernels/cuda/quant.cu), by gcc into the plugins (bp_fill's values) and
 * into the CUDA shim's C stand-ins (test/shims/cuda/kernels_quant.inc).
 * No float arithmetic that a compiler could contract or reassociate: only
 * integer operations and comparisons. sm_89's cvt.rn.satfinite.e4m3x2
 * saturates where the ABI does not, and older targets lack it, hence this.
 */
#ifndef BP_QCODEC_H
#define BP_QCODEC_H

#include <stdint.h>

#ifndef BP_QCODEC_FN
#if defined(__CUDACC__) || defined(__HIPCC__)
#define BP_QCODEC_FN static __host__ __device__ __forceinline__
#else
#define BP_QCODEC_FN static inline
#endif
#endif

BP_QCODEC_FN uint64_t bp_qcodec_f64_bits(double v) {
  union {
    double d;
    uint64_t u;
  } x;
  x.d = v;
  return x.u;
}

BP_QCODEC_FN float bp_qcodec_f32_from_bits(uint32_t u) {
  union {
    uint32_t u;
    float f;
  } x;
  x.u = u;
  return x.f;
}

BP_QCODEC_FN uint32_t bp_qcodec_f32_bits(float v) {
  union {
    float f;
    uint32_t u;
  } x;
  x.f = v;
  return x.u;
}

/* Shifts sig right by sh (>= 1) rounding to nearest, ties to even. */
BP_QCODEC_FN uint64_t bp_qcodec_shift_rne(uint64_t sig, int sh) {
  if (sh > 62) return 0; /* sig < 2^53: below half of the last quantum */
  const uint64_t q = sig >> sh, rem = sig & ((1ull << sh) - 1), half = 1ull << (sh - 1);
  return q + (rem > half || (rem == half && (q & 1)));
}

/* FP8 code of v, mbits 3 (E4M3, bias 7) or 2 (E5M2, bias 15). NaN gives
 * S.1111.111 / S.11111.10; E4M3 is NaN past 464 (the midpoint above 448,
 * which rounds down to it), E5M2 +-inf from 61440 (the tie above 57344,
 * which rounds to even, i.e. up); -0 keeps its sign. */
BP_QCODEC_FN uint8_t bp_fp8_encode(double v, int mbits) {
  const uint64_t bits = bp_qcodec_f64_bits(v), a = bits & 0x7fffffffffffffffull;
  const uint8_t sign = (uint8_t)((bits >> 56) & 0x80);
  const uint8_t nan = mbits == 3 ? 0x7F : 0x7E;
  if (a > 0x7ff0000000000000ull) return (uint8_t)(sign | nan);
  /* 464.0 = 0x407D000000000000, 61440.0 = 0x40EE000000000000 */
  if (mbits == 3 ? a > 0x407D000000000000ull : a >= 0x40EE000000000000ull)
    return (uint8_t)(sign | (mbits == 3 ? nan : 0x7C));
  const int bias = mbits == 3 ? 7 : 15, emin = 1 - bias;
  const int e = (int)(a >> 52);
  if (e == 0) return sign; /* zero or a double subnormal: far below the smallest quantum */
  const uint64_t sig = (a & 0xfffffffffffffull) | (1ull << 52);
  const int E = e - 1023, Eeff = E < emin ? emin : E; /* below emin: FP8 subnormal */
  /* The significand in quanta of 2^(Eeff - mbits); a carry moves up an
   * exponent, which the code's layout absorbs. */
  const uint64_t n = bp_qcodec_shift_rne(sig, 52 - mbits + (Eeff - E));
  return (uint8_t)(sign | (uint8_t)(((Eeff - emin) << mbits) + (int)n));
}

/* The float of an FP8 code (exact: every FP8 value is a float). NaN codes
 * give the positive quiet NaN, as the CPU's decoding does. */
BP_QCODEC_FN float bp_fp8_decode(uint8_t b, int mbits) {
  const int ebits = 7 - mbits, bias = (1 << (ebits - 1)) - 1;
  const int e = (b >> mbits) & ((1 << ebits) - 1);
  uint32_t m = b & ((1u << mbits) - 1);
  const uint32_t sign = (uint32_t)(b & 0x80) << 24;
  if (mbits == 3 && e == 15 && m == 7) return bp_qcodec_f32_from_bits(0x7fc00000u);
  if (mbits == 2 && e == 31) return bp_qcodec_f32_from_bits(m ? 0x7fc00000u : (sign | 0x7f800000u));
  int exp = e - bias; /* of the leading bit */
  if (e == 0) {
    if (m == 0) return bp_qcodec_f32_from_bits(sign);
    exp = 1 - bias;
    while (!(m & (1u << mbits))) m <<= 1, exp--; /* normalise the subnormal */
    m &= (1u << mbits) - 1;
  }
  return bp_qcodec_f32_from_bits(sign | ((uint32_t)(exp + 127) << 23) | (m << (23 - mbits)));
}

/* IEEE f16 bits to float (exact; NaN stays NaN, quiet). */
BP_QCODEC_FN float bp_qcodec_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  int e = (h >> 10) & 0x1f;
  uint32_t m = h & 0x3ffu;
  if (e == 31) return bp_qcodec_f32_from_bits(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0));
  if (e == 0) {
    if (m == 0) return bp_qcodec_f32_from_bits(sign);
    e = 1;
    while (!(m & 0x400u)) m <<= 1, e--;
    m &= 0x3ffu;
  }
  return bp_qcodec_f32_from_bits(sign | ((uint32_t)(e - 15 + 127) << 23) | (m << 13));
}

/* float to IEEE f16 bits, nearest even; overflow gives inf, NaN a quiet
 * NaN with the sign and top payload bits kept. */
BP_QCODEC_FN uint16_t bp_qcodec_f32_to_f16(float f) {
  const uint32_t u = bp_qcodec_f32_bits(f), a = u & 0x7fffffffu;
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* 65520 and up round to inf */
  const int e = (int)(a >> 23);
  if (e < 102) return sign; /* below half the smallest subnormal, 2^-25 */
  const uint32_t sig = (a & 0x7fffffu) | 0x800000u;
  const int E = e - 127, Eeff = E < -14 ? -14 : E;
  const uint32_t n = (uint32_t)bp_qcodec_shift_rne(sig, 13 + (Eeff - E));
  return (uint16_t)(sign | (uint16_t)(((Eeff + 14) << 10) + (int)n));
}

#endif /* BP_QCODEC_H */
