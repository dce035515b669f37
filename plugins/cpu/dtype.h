/*
 * dtype.h — element access for every bp_dtype_t, through double.
 *
 * The scalar reference computes in double and touches memory only through
 * cpu_load / cpu_store, so one kernel serves every dtype. double holds every
 * f32, f16, bf16, i32 and u8 value exactly (and i64 up to 2^53), so loads
 * lose nothing that matters; stores round once, to nearest even, straight
 * from double (never via float, which would round twice).
 *
 * Conversion rules (the ABI's):
 *  - to f16 / bf16: round to nearest even; overflow gives Inf; denormals
 *    are produced and read exactly; NaN stays NaN, made quiet, sign and top
 *    payload bits kept.
 *  - to i32 / i64 / u8: NaN gives 0, halves round to even, values outside
 *    the type saturate (so +-Inf give the extremes).
 */
#ifndef BACKPLANE_CPU_DTYPE_H
#define BACKPLANE_CPU_DTYPE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "plugin-api.h"

static inline size_t cpu_dtype_size(bp_dtype_t dt) {
  switch (dt) {
  case BP_F32:
  case BP_I32:
    return 4;
  case BP_F16:
  case BP_BF16:
    return 2;
  case BP_F64:
  case BP_I64:
    return 8;
  case BP_U8:
    return 1;
  default:
    return 0;
  }
}

static inline int cpu_dtype_is_float(bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_F16 || dt == BP_BF16 || dt == BP_F64;
}

/* ---- half-width floats --------------------------------------------------*/

/* Rounds x to a binary float with ebits exponent and mbits mantissa bits
 * (f16: 5, 10; bf16: 8, 7) and returns its bit pattern. Works on the double's
 * bits so there is exactly one rounding. */
static inline uint16_t cpu_round_small_float(double x, int ebits, int mbits) {
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

static inline uint16_t cpu_f16_from_double(double x) {
  return cpu_round_small_float(x, 5, 10);
}
static inline uint16_t cpu_bf16_from_double(double x) {
  return cpu_round_small_float(x, 8, 7);
}

static inline float cpu_f32_from_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* f16 -> float is exact; a signalling NaN comes back quiet. */
static inline float cpu_f16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f)
    return cpu_f32_from_bits(sign | 0x7f800000u | (m << 13) |
                             (m ? 0x400000u : 0u));
  if (e == 0) { /* zero or denormal: m * 2^-24, exact in float */
    float v = (float)m * 0x1p-24f;
    return sign ? -v : v;
  }
  return cpu_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

static inline float cpu_bf16_to_float(uint16_t h) {
  uint32_t b = (uint32_t)h << 16;
  if ((b & 0x7fffffffu) > 0x7f800000u)
    b |= 0x400000u; /* quiet */
  return cpu_f32_from_bits(b);
}

/* ---- integers -----------------------------------------------------------*/

/* Round half to even without depending on the FP rounding mode. */
static inline double cpu_round_half_even(double x) {
  double f = floor(x), d = x - f;
  if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0))
    f += 1.0;
  return f;
}

static inline int64_t cpu_double_to_int(double x, double lo, double hi) {
  if (x != x)
    return 0;
  if (x <= lo)
    return (int64_t)lo;
  if (x >= hi) /* hi may be 2^63, which no int64 holds: saturate first */
    return hi >= 0x1p63 ? INT64_MAX : (int64_t)hi;
  return (int64_t)cpu_round_half_even(x);
}

/* i64 -> double with round-to-odd, for casts to f32/f16/bf16: the later
 * rounding to the narrower type is then correct (no double rounding). */
static inline double cpu_i64_to_double_odd(int64_t v) {
  uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  if (mag >= (1ull << 53)) {
    int drop = 0;
    while ((mag >> drop) >= (1ull << 53))
      drop++;
    uint64_t kept = mag >> drop;
    if (mag & ((1ull << drop) - 1))
      kept |= 1; /* sticky */
    double d = ldexp((double)kept, drop);
    return v < 0 ? -d : d;
  }
  return (double)v;
}

/* ---- load / store -------------------------------------------------------*/

/* Element idx (in elements, may be negative) of the array at base. */
static inline double cpu_load(const void *base, bp_dtype_t dt, int64_t idx) {
  switch (dt) {
  case BP_F32:
    return ((const float *)base)[idx];
  case BP_F16:
    return cpu_f16_to_float(((const uint16_t *)base)[idx]);
  case BP_BF16:
    return cpu_bf16_to_float(((const uint16_t *)base)[idx]);
  case BP_F64:
    return ((const double *)base)[idx];
  case BP_I32:
    return ((const int32_t *)base)[idx];
  case BP_I64:
    return (double)((const int64_t *)base)[idx];
  case BP_U8:
    return ((const uint8_t *)base)[idx];
  default:
    return 0.0;
  }
}

static inline void cpu_store(void *base, bp_dtype_t dt, int64_t idx, double v) {
  switch (dt) {
  case BP_F32:
    ((float *)base)[idx] = (float)v;
    break;
  case BP_F16:
    ((uint16_t *)base)[idx] = cpu_f16_from_double(v);
    break;
  case BP_BF16:
    ((uint16_t *)base)[idx] = cpu_bf16_from_double(v);
    break;
  case BP_F64:
    ((double *)base)[idx] = v;
    break;
  case BP_I32:
    ((int32_t *)base)[idx] =
        (int32_t)cpu_double_to_int(v, -2147483648.0, 2147483647.0);
    break;
  case BP_I64:
    ((int64_t *)base)[idx] = cpu_double_to_int(v, -0x1p63, 0x1p63);
    break;
  case BP_U8:
    ((uint8_t *)base)[idx] = (uint8_t)cpu_double_to_int(v, 0.0, 255.0);
    break;
  default:
    break;
  }
}

#endif /* BACKPLANE_CPU_DTYPE_H */
