/*
 * bp_philox.h — backplane's random stream, bit for bit the same on every
 * backend. Header-only, plain C99 / CUDA / HIP; ports to GLSL and OpenCL C
 * are line-by-line translations of this file.
 *
 * THE STREAM (normative; docs/ops.md copies this text)
 * -----------------------------------------------------
 * bp_random(dist, seed, offset, a, b, y) fills y as follows. Let i be an
 * element's row-major linear index over y's logical shape (0 .. numel-1;
 * strides do not matter). Run Philox4x32-10 (Salmon et al., SC'11; the
 * Random123 "philox4x32" with 10 rounds, multipliers M0 = 0xD2511F53,
 * M1 = 0xCD9E8D57, Weyl key increments W0 = 0x9E3779B9, W1 = 0xBB67AE85) on
 *     counter = (lo32(i), hi32(i), lo32(offset), hi32(offset))
 *     key     = (lo32(seed), hi32(seed))
 * giving four 32-bit words r0, r1, r2, r3 (r2 and r3 are unused). Then:
 *
 *   uniform, y f32 / f16 / bf16:
 *     u = (float)(r0 >> 8) * 2^-24            (exact; u in [0, 1))
 *     v = fa + (fb - fa) * u                   (float, each op rounded: no FMA)
 *     where fa = (float)a, fb = (float)b. The half-open range: when fa < fb
 *     and v >= fb (the sum rounded up to b), v = the largest float below fb.
 *     f16 / bf16: h = v rounded to nearest even; when fa < fb and h >= fb
 *     (h may be +inf), h = the next value of the type below h (one step of
 *     its bit pattern toward -inf), which is below fb since v was.
 *   uniform, y f64:
 *     u = (double)(((uint64_t)r0 << 21) | (r1 >> 11)) * 2^-53   (exact)
 *     v = a + (b - a) * u                      (double, each op rounded)
 *     and when a < b and v >= b, v = the largest double below b.
 *   normal (mean a, standard deviation b), any float y:
 *     u1 = (float)((r0 >> 8) + 1) * 2^-24      (exact; u1 in (0, 1])
 *     u2 = (float)(r1 >> 8) * 2^-24            (exact; u2 in [0, 1))
 *     z  = bp_det_sqrtf(-2 * bp_det_logf(u1)) * bp_det_cos2pif(u2)   (float)
 *     f32 / f16 / bf16: v = fa + fb * z in float, then rounded to y's dtype.
 *     f64:              v = a + b * (double)z in double.
 *
 * Known answers (seed 42, offset 0, a = 0, b = 1), for checking a port:
 *   i = 0: r = 9ceaf053 77f5493b 12bf50ad 5742b3d7,
 *          uniform f32 0x3f1ceaf0, normal f32 0xbf785e5a (-0.970189691)
 *   i = 1: r = fcdb2127 53ba6cfd 838f5a6e 744e06fb,
 *          uniform f32 0x3f7cdb21, normal f32 0xbd95e014 (-0.0731813014)
 * and Philox4x32-10 itself matches Random123's kat_vectors (counter 0,
 * key 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8).
 *
 * bp_det_logf, bp_det_sqrtf and bp_det_cos2pif below use only IEEE float
 * add, subtract, multiply (each correctly rounded, never fused), exact
 * integer <-> float conversions of small integers, comparisons and integer
 * bit operations, in a fixed order, so every device that implements IEEE
 * binary32 arithmetic with round-to-nearest-even and denormals (no
 * flush-to-zero for the final a + b * z) gets identical bits. They are not
 * libm replacements: each is accurate to a few ulp over the domain the
 * stream uses, which is documented on the function.
 *
 * Porting rules: no FMA contraction anywhere in these functions. This
 * header enforces that itself (see BP_FMUL below), whatever -ffp-contract
 * or language mode the includer uses; a port to GLSL / OpenCL C must do the
 * same (OpenCL: #pragma OPENCL FP_CONTRACT OFF; GLSL: precise). Value-
 * changing optimisations (-ffast-math, nvcc --use_fast_math, which also
 * flushes denormals) are refused or must be off for code using it.
 * Constants are decimal literals that convert to the intended binary32
 * values (the polynomial coefficients are binary32 values printed in
 * shortest round-trip form; 2^-24 and 2^-53 are exact), so every language
 * and compiler reads the same bits.
 */
#ifndef BP_PHILOX_H
#define BP_PHILOX_H

#include <stdint.h>

#ifndef BP_PHILOX_QUALIFIER
#if defined(__CUDACC__) || defined(__HIPCC__)
#define BP_PHILOX_QUALIFIER static __host__ __device__ __forceinline__
#else
#define BP_PHILOX_QUALIFIER static inline
#endif
#endif

/* Rounded, never-fused float and double arithmetic. A fused multiply-add
 * rounds once where a * b + c rounds twice, so a compiler that contracts
 * (GCC with -std=gnu*, clang by default, nvcc by default) would change the
 * bits. On GPUs the _rn intrinsics are never contracted. In C each product
 * passes through bp_philox_keep_*, an empty asm statement the compiler cannot
 * see through (a volatile round trip where there is no such asm), so no
 * flag or optimisation level can fuse it into the following add. */
#if defined(__FAST_MATH__)
#error                                                                         \
    "bp_philox.h: -ffast-math reorders float arithmetic and so changes the stream"
#endif
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define BP_FMUL(x, y) __fmul_rn((x), (y))
#define BP_FADD(x, y) __fadd_rn((x), (y))
#define BP_FSUB(x, y) __fsub_rn((x), (y))
#define BP_DMUL(x, y) __dmul_rn((x), (y))
#define BP_DADD(x, y) __dadd_rn((x), (y))
#define BP_DSUB(x, y) __dsub_rn((x), (y))
#else
#if defined(__GNUC__) && defined(__SSE2__)
#define BP_PHILOX_KEEP(v) __asm__("" : "+x"(v))
#elif defined(__GNUC__) && defined(__aarch64__)
#define BP_PHILOX_KEEP(v) __asm__("" : "+w"(v))
#endif
BP_PHILOX_QUALIFIER float bp_philox_keep_f(float v) {
#ifdef BP_PHILOX_KEEP
  BP_PHILOX_KEEP(v);
  return v;
#else
  volatile float t = v;
  return t;
#endif
}
BP_PHILOX_QUALIFIER double bp_philox_keep_d(double v) {
#ifdef BP_PHILOX_KEEP
  BP_PHILOX_KEEP(v);
  return v;
#else
  volatile double t = v;
  return t;
#endif
}
#define BP_FMUL(x, y) bp_philox_keep_f((float)(x) * (float)(y))
#define BP_FADD(x, y) ((float)(x) + (float)(y))
#define BP_FSUB(x, y) ((float)(x) - (float)(y))
#define BP_DMUL(x, y) bp_philox_keep_d((double)(x) * (double)(y))
#define BP_DADD(x, y) ((double)(x) + (double)(y))
#define BP_DSUB(x, y) ((double)(x) - (double)(y))
#endif

/* 2^-24 and 2^-53, written as exact decimals (C++ before 17 and GLSL have
 * no hex float literals). */
#define BP_PHILOX_2POW_M24F 5.9604644775390625e-08f
#define BP_PHILOX_2POW_M53 1.1102230246251565404236316680908203125e-16

#define BP_PHILOX_M0 0xD2511F53u
#define BP_PHILOX_M1 0xCD9E8D57u
#define BP_PHILOX_W0 0x9E3779B9u
#define BP_PHILOX_W1 0xBB67AE85u

typedef struct bp_philox_u32x4 {
  uint32_t v[4];
} bp_philox_u32x4;

/* Float <-> bits without aliasing problems (device intrinsics on CUDA /
 * HIP, where union punning is not sanctioned C++). */
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
BP_PHILOX_QUALIFIER uint32_t bp_philox_f2u(float f) {
  return __float_as_uint(f);
}
BP_PHILOX_QUALIFIER float bp_philox_u2f(uint32_t u) {
  return __uint_as_float(u);
}
#else
BP_PHILOX_QUALIFIER uint32_t bp_philox_f2u(float f) {
  union {
    float f;
    uint32_t u;
  } c;
  c.f = f;
  return c.u;
}
BP_PHILOX_QUALIFIER float bp_philox_u2f(uint32_t u) {
  union {
    float f;
    uint32_t u;
  } c;
  c.u = u;
  return c.f;
}
#endif

/* One Philox round: two 32x32->64 multiplies, then the Feistel-like mix. */
BP_PHILOX_QUALIFIER bp_philox_u32x4 bp_philox_round(bp_philox_u32x4 c,
                                                    uint32_t k0, uint32_t k1) {
  uint64_t p0 = (uint64_t)BP_PHILOX_M0 * c.v[0];
  uint64_t p1 = (uint64_t)BP_PHILOX_M1 * c.v[2];
  bp_philox_u32x4 r;
  r.v[0] = (uint32_t)(p1 >> 32) ^ c.v[1] ^ k0;
  r.v[1] = (uint32_t)p1;
  r.v[2] = (uint32_t)(p0 >> 32) ^ c.v[3] ^ k1;
  r.v[3] = (uint32_t)p0;
  return r;
}

/* Philox4x32-10: ten rounds, the key bumped by (W0, W1) between rounds. */
BP_PHILOX_QUALIFIER bp_philox_u32x4 bp_philox4x32_10(bp_philox_u32x4 ctr,
                                                     uint32_t k0, uint32_t k1) {
  for (int i = 0; i < 10; i++) {
    if (i > 0) {
      k0 += BP_PHILOX_W0;
      k1 += BP_PHILOX_W1;
    }
    ctr = bp_philox_round(ctr, k0, k1);
  }
  return ctr;
}

/* The four words for element `index` of the stream (seed, offset). */
BP_PHILOX_QUALIFIER bp_philox_u32x4 bp_philox_element(uint64_t seed,
                                                      uint64_t offset,
                                                      uint64_t index) {
  bp_philox_u32x4 c;
  c.v[0] = (uint32_t)index;
  c.v[1] = (uint32_t)(index >> 32);
  c.v[2] = (uint32_t)offset;
  c.v[3] = (uint32_t)(offset >> 32);
  return bp_philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* Natural log for positive, normal, finite x (the stream passes
 * x in [2^-24, 1]); max error about 1 ulp there, log(1) == +0 exactly.
 * x = 2^e * m with m in [sqrt(1/2), sqrt(2)), taken from the bits; with
 * f = m - 1 (exact, Sterbenz), log(m) = f + f^2 * R(f), R a degree-9
 * Chebyshev fit of (log(1 + f) - f) / f^2 on [sqrt(1/2) - 1, sqrt(2) - 1]
 * (fit error 5e-9, far below float's). e * ln 2 is added in two parts
 * (ln2_hi has 12 significant bits, so e * ln2_hi is exact). */
BP_PHILOX_QUALIFIER float bp_det_logf(float x) {
  uint32_t bits = bp_philox_f2u(x);
  int32_t e = (int32_t)((bits >> 23) & 0xffu) - 127;
  uint32_t mant = bits & 0x7fffffu;
  /* 0x3504f3 is the mantissa of sqrt(2): fold [sqrt2, 2) to [sqrt2/2, 1). */
  uint32_t mexp = 0x3f800000u;
  if (mant > 0x3504f3u) {
    mexp = 0x3f000000u;
    e += 1;
  }
  float m = bp_philox_u2f(mexp | mant);
  float f = BP_FSUB(m, 1.0f);
  float r = 0.06769023835659027f;
  r = BP_FADD(BP_FMUL(r, f), -0.11557287722826004f);
  r = BP_FADD(BP_FMUL(r, f), 0.11812136322259903f);
  r = BP_FADD(BP_FMUL(r, f), -0.12420814484357834f);
  r = BP_FADD(BP_FMUL(r, f), 0.14232318103313446f);
  r = BP_FADD(BP_FMUL(r, f), -0.1666753739118576f);
  r = BP_FADD(BP_FMUL(r, f), 0.20001447200775146f);
  r = BP_FADD(BP_FMUL(r, f), -0.25000011920928955f);
  r = BP_FADD(BP_FMUL(r, f), 0.33333322405815125f);
  r = BP_FADD(BP_FMUL(r, f), -0.5f);
  float fe = (float)e; /* |e| <= 128: exact */
  float lo =
      BP_FADD(BP_FMUL(BP_FMUL(f, f), r), BP_FMUL(fe, 1.4286068203094172e-06f));
  return BP_FADD(BP_FADD(f, lo), BP_FMUL(fe, 0.693145751953125f));
}

/* Square root for x in [0, 2^126] (the stream passes -2 log(u1), at most
 * about 33.3); error within 2 ulp, sqrt(+-0) == +-0. A bit-trick seed for
 * 1/sqrt(x) (0x5f3759df, 3.4% error) is refined by four Newton steps
 * y' = y * (1.5 - 0.5 * x * y * y), each squaring the relative error, then
 * multiplied by x. */
BP_PHILOX_QUALIFIER float bp_det_sqrtf(float x) {
  float y = bp_philox_u2f(0x5f3759dfu - (bp_philox_f2u(x) >> 1));
  float hx = BP_FMUL(x, 0.5f);
  for (int i = 0; i < 4; i++) {
    float t = BP_FMUL(BP_FMUL(hx, y), y);
    y = BP_FMUL(y, BP_FSUB(1.5f, t));
  }
  return BP_FMUL(x, y);
}

/* cos(2 pi u) for u in [0, 1); absolute error below 1.5 * 2^-24. Folds by
 * symmetry with exact float subtractions (Sterbenz): u -> 1 - u onto
 * [0, 1/2], u -> 1/2 - u (negating) onto [0, 1/4], and above 1/8 uses
 * cos(2 pi u) = sin(2 pi (1/4 - u)). On w in [0, 1/8]:
 * cos(2 pi w) = C(w^2), sin(2 pi w) = w * S(w^2), C and S degree-4
 * Chebyshev fits in w^2 on [0, 1/64] (fit errors 5e-11 and 3e-11). */
BP_PHILOX_QUALIFIER float bp_det_cos2pif(float u) {
  float sign = 1.0f;
  if (u > 0.5f)
    u = BP_FSUB(1.0f, u);
  if (u > 0.25f) {
    u = BP_FSUB(0.5f, u);
    sign = -1.0f;
  }
  int use_sin = u > 0.125f;
  float w = use_sin ? BP_FSUB(0.25f, u) : u;
  float s = BP_FMUL(w, w);
  float p;
  if (use_sin) {
    p = 41.47283172607422f;
    p = BP_FADD(BP_FMUL(p, s), -76.69786834716797f);
    p = BP_FADD(BP_FMUL(p, s), 81.6052017211914f);
    p = BP_FADD(BP_FMUL(p, s), -41.34170150756836f);
    p = BP_FADD(BP_FMUL(p, s), 6.2831854820251465f);
    p = BP_FMUL(p, w);
  } else {
    p = 59.22016906738281f;
    p = BP_FADD(BP_FMUL(p, s), -85.4428482055664f);
    p = BP_FADD(BP_FMUL(p, s), 64.93931579589844f);
    p = BP_FADD(BP_FMUL(p, s), -19.739208221435547f);
    p = BP_FADD(BP_FMUL(p, s), 1.0f);
  }
  return BP_FMUL(sign, p);
}

/* The largest float below x (x not NaN, above -inf): one step of the bit
 * pattern toward -inf; below +-0 is the negative denormal -2^-149. */
BP_PHILOX_QUALIFIER float bp_philox_below_f32(float x) {
  uint32_t u = bp_philox_f2u(x);
  if ((u & 0x7fffffffu) == 0u)
    return bp_philox_u2f(0x80000001u);
  return bp_philox_u2f((u & 0x80000000u) ? u + 1u : u - 1u);
}

/* The same for double, and the next f16 / bf16 below the 16-bit pattern h
 * (both are sign-magnitude, so one rule serves). */
BP_PHILOX_QUALIFIER double bp_philox_below_f64(double x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  uint64_t u = (uint64_t)__double_as_longlong(x);
#else
  union {
    double d;
    uint64_t u;
  } c;
  c.d = x;
  uint64_t u = c.u;
#endif
  if ((u & 0x7fffffffffffffffull) == 0u)
    u = 0x8000000000000001ull;
  else
    u = (u & 0x8000000000000000ull) ? u + 1u : u - 1u;
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __longlong_as_double((long long)u);
#else
  c.u = u;
  return c.d;
#endif
}
BP_PHILOX_QUALIFIER uint32_t bp_philox_below_16(uint32_t h) {
  if ((h & 0x7fffu) == 0u)
    return 0x8001u;
  return (h & 0x8000u) ? h + 1u : h - 1u;
}

/* f32 -> f16 / bf16 bits, round to nearest even, denormals kept, overflow
 * to inf, NaN a quiet NaN: integer operations only, so no device's
 * conversion mode or denormal flushing can change them. */
BP_PHILOX_QUALIFIER uint32_t bp_philox_f2h(float f) {
  uint32_t x = bp_philox_f2u(f);
  uint32_t s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u)
    return s | 0x7e00u;
  if (a >= 0x477ff000u) /* rounds to at least 65520: inf */
    return s | 0x7c00u;
  if (a <= 0x33000000u) /* at most 2^-25: rounds to zero (2^-25 ties to 0) */
    return s;
  if (a < 0x38800000u) { /* below 2^-14: a denormal, in units of 2^-24 */
    uint32_t m = (a & 0x7fffffu) | 0x800000u, sh = 126u - (a >> 23);
    uint32_t q = m >> sh, rem = m & ((1u << sh) - 1u), mid = 1u << (sh - 1u);
    return s | (q + (rem > mid || (rem == mid && (q & 1u)) ? 1u : 0u));
  }
  return s | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13);
}
BP_PHILOX_QUALIFIER uint32_t bp_philox_f2bf(float f) {
  uint32_t x = bp_philox_f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (x >> 16) | 0x40u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

/* f16 bits -> float, exactly (a denormal m * 2^-24 is normalised by
 * shifting). */
BP_PHILOX_QUALIFIER float bp_philox_h2f(uint32_t h) {
  uint32_t s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 31u)
    return bp_philox_u2f(s | 0x7f800000u | (m << 13));
  if (e == 0u) {
    if (m == 0u)
      return bp_philox_u2f(s);
    e = 113u;
    while (!(m & 0x400u)) {
      m <<= 1;
      e--;
    }
    m &= 0x3ffu;
  } else {
    e += 112u;
  }
  return bp_philox_u2f(s | (e << 23) | (m << 13));
}

/* Uniform [fa, fb) in float from r0 (f32, f16 and bf16 outputs). */
BP_PHILOX_QUALIFIER float bp_philox_uniform_f32(bp_philox_u32x4 r, float fa,
                                                float fb) {
  float u = BP_FMUL((float)(r.v[0] >> 8), BP_PHILOX_2POW_M24F);
  float v = BP_FADD(fa, BP_FMUL(BP_FSUB(fb, fa), u));
  if (fa < fb && v >= fb) /* rounded up to b: the range is half-open */
    v = bp_philox_below_f32(fb);
  return v;
}

/* Uniform [fa, fb) as the bits of an f16 (bf16 != 0: bf16) output: the
 * float value rounded to nearest even, one step down when that reached fb
 * (the step stays >= fa whenever [fa, fb) holds a value of the type). */
BP_PHILOX_QUALIFIER uint32_t bp_philox_uniform_16(bp_philox_u32x4 r, float fa,
                                                  float fb, int bf16) {
  float v = bp_philox_uniform_f32(r, fa, fb);
  uint32_t h = bf16 ? bp_philox_f2bf(v) : bp_philox_f2h(v);
  float hv = bf16 ? bp_philox_u2f(h << 16) : bp_philox_h2f(h);
  if (fa < fb && hv >= fb)
    h = bp_philox_below_16(h);
  return h;
}

/* Uniform [a, b) in double from 53 bits of r0, r1 (f64 output). */
BP_PHILOX_QUALIFIER double bp_philox_uniform_f64(bp_philox_u32x4 r, double a,
                                                 double b) {
  uint64_t bits = ((uint64_t)r.v[0] << 21) | (r.v[1] >> 11);
  double u = BP_DMUL((double)bits, BP_PHILOX_2POW_M53);
  double v = BP_DADD(a, BP_DMUL(BP_DSUB(b, a), u));
  if (a < b && v >= b)
    v = bp_philox_below_f64(b);
  return v;
}

/* Standard normal z by Box-Muller (cosine branch) from r0, r1. */
BP_PHILOX_QUALIFIER float bp_philox_normal_z(bp_philox_u32x4 r) {
  float u1 = BP_FMUL((float)((r.v[0] >> 8) + 1u), BP_PHILOX_2POW_M24F);
  float u2 = BP_FMUL((float)(r.v[1] >> 8), BP_PHILOX_2POW_M24F);
  float rad = bp_det_sqrtf(BP_FMUL(-2.0f, bp_det_logf(u1)));
  return BP_FMUL(rad, bp_det_cos2pif(u2));
}

/* Normal with mean fa and standard deviation fb, in float. */
BP_PHILOX_QUALIFIER float bp_philox_normal_f32(bp_philox_u32x4 r, float fa,
                                               float fb) {
  return BP_FADD(fa, BP_FMUL(fb, bp_philox_normal_z(r)));
}

/* Normal for f64 outputs: the same float z, scaled in double. */
BP_PHILOX_QUALIFIER double bp_philox_normal_f64(bp_philox_u32x4 r, double a,
                                                double b) {
  return BP_DADD(a, BP_DMUL(b, (double)bp_philox_normal_z(r)));
}

#endif /* BP_PHILOX_H */
