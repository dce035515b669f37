/*
 * fp8.h — OCP FP8 (E4M3 and E5M2) to and from double (docs/ops.md,
 * "Quantized types and ops"). Encoding rounds to nearest even in one step
 * from double; out of range follows the OCP spec's non-saturating mode:
 * E4M3 (no infinities) gives NaN past 464 (the midpoint above its max 448),
 * E5M2 gives +-inf from 61440 (the tie above 57344 rounds to even, i.e. up).
 * NaN encodes as S.1111.111 (E4M3) or S.11111.10 (E5M2). The saturating
 * mode (bp_cast_ex's BP_CAST_SATURATE) gives the largest finite value
 * (448, 57344) with the sign wherever the non-saturating one overflows,
 * infinities included; NaN stays NaN.
 */
#ifndef BACKPLANE_CPU_FP8_H
#define BACKPLANE_CPU_FP8_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* mbits: 3 (E4M3) or 2 (E5M2). */
static inline double cpu_fp8_decode(uint8_t b, int mbits) {
  int ebits = 7 - mbits, bias = (1 << (ebits - 1)) - 1;
  int e = (b >> mbits) & ((1 << ebits) - 1), m = b & ((1 << mbits) - 1);
  double s = (b & 0x80) ? -1.0 : 1.0;
  if (mbits == 3 && e == 15 && m == 7) return NAN;
  if (mbits == 2 && e == 31) return m ? NAN : s * INFINITY;
  if (e == 0) return s * ldexp(m, 1 - bias - mbits);
  return s * ldexp((1 << mbits) + m, e - bias - mbits);
}

static inline uint8_t cpu_fp8_encode(double v, int mbits) {
  int ebits = 7 - mbits, bias = (1 << (ebits - 1)) - 1;
  uint8_t sign = signbit(v) ? 0x80 : 0;
  uint8_t nan = mbits == 3 ? 0x7F : 0x7E, inf = 0x7C;
  if (isnan(v)) return (uint8_t)(sign | nan);
  double a = fabs(v);
  if (mbits == 3 ? a > 464.0 : a >= 61440.0) return (uint8_t)(sign | (mbits == 3 ? nan : inf));
  int x;
  frexp(a, &x); /* a = f * 2^x, f in [0.5, 1) */
  int E = x - 1;
  if (a == 0 || E < 1 - bias) E = 1 - bias; /* subnormal: the code is the count of quanta */
  double n = nearbyint(ldexp(a, mbits - E)); /* significand in quanta, exact before rounding */
  int code = (E - (1 - bias)) * (1 << mbits) + (int)n; /* a carry moves up an exponent */
  return (uint8_t)(sign | code);
}

/* The saturating mode: out of range (after rounding) gives +-max finite. */
static inline uint8_t cpu_fp8_encode_sat(double v, int mbits) {
  uint8_t code = cpu_fp8_encode(v, mbits), sign = code & 0x80;
  bool overflow = mbits == 3 ? (code & 0x7F) == 0x7F && !isnan(v) : (code & 0x7C) == 0x7C && !isnan(v);
  return overflow ? (uint8_t)(sign | (mbits == 3 ? 0x7E : 0x7B)) : code;
}

#endif /* BACKPLANE_CPU_FP8_H */
