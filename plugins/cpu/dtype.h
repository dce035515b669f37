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

#include "kernels/common/bp_half.h"
#include "plugins/cpu/fp8.h"
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
  case BP_I8:
  case BP_FP8_E4M3:
  case BP_FP8_E5M2:
    return 1;
  default:
    return 0;
  }
}

static inline int cpu_dtype_is_float(bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_F16 || dt == BP_BF16 || dt == BP_F64;
}

/* ---- half-width floats --------------------------------------------------*/

/* One implementation for every host user: kernels/common/bp_half.h. */
static inline uint16_t cpu_f16_from_double(double x) { return bp_f64_to_f16(x); }
static inline uint16_t cpu_bf16_from_double(double x) { return bp_f64_to_bf16(x); }

static inline float cpu_f32_from_bits(uint32_t b) { return bp_half_f32_from_bits(b); }

/* f16 / bf16 -> float are exact; a signalling NaN comes back quiet. */
static inline float cpu_f16_to_float(uint16_t h) { return bp_f16_to_f32(h); }
static inline float cpu_bf16_to_float(uint16_t h) { return bp_bf16_to_f32(h); }

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
  case BP_I8:
    return ((const int8_t *)base)[idx];
  case BP_FP8_E4M3:
    return cpu_fp8_decode(((const uint8_t *)base)[idx], 3);
  case BP_FP8_E5M2:
    return cpu_fp8_decode(((const uint8_t *)base)[idx], 2);
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
  case BP_I8:
    ((int8_t *)base)[idx] = (int8_t)cpu_double_to_int(v, -128.0, 127.0);
    break;
  case BP_FP8_E4M3:
    ((uint8_t *)base)[idx] = cpu_fp8_encode(v, 3);
    break;
  case BP_FP8_E5M2:
    ((uint8_t *)base)[idx] = cpu_fp8_encode(v, 2);
    break;
  default:
    break;
  }
}

#endif /* BACKPLANE_CPU_DTYPE_H */
