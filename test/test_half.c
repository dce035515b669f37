/*
 * test_half.c — kernels/common/bp_half.h, the one host f16 / bf16
 * conversion (issue 23, item 15), against a reference written here from
 * first principles (double arithmetic: ilogb, ldexp, nearbyint) and against
 * the copies it replaced (kept below, for every non-NaN input: their NaN
 * handling differed from one another; the header keeps sign and top payload
 * and makes NaN quiet, as the cpu plugin always did).
 *
 *  - f16 -> f32 -> f16 over all 65536 patterns, and f16 -> f32 exact;
 *  - f32 -> f16 / bf16 over every 257th f32 pattern, and over every midpoint
 *    between neighbouring halves and its two f32 neighbours;
 *  - f64 -> f16 / bf16 (one rounding) at midpoints nudged by a double ulp;
 *  - bf16 -> f32 -> bf16 over all 65536 patterns.
 *
 * The same source is built a second time with -mf16c (test_half_f16c): the
 * F16C path must give the portable path's bits (skipped on a CPU without
 * F16C).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/common/bp_half.h"

static uint32_t fbits(float f) { return bp_half_f32_bits(f); }
static float ffrom(uint32_t u) { return bp_half_f32_from_bits(u); }

/* ---- the reference ---------------------------------------------------------*/

/* x rounded to a float with p significand bits, minimum normal exponent
 * emin and exponent field width ebits; the bit pattern. */
static uint16_t ref_round(double x, int ebits, int mbits) {
  int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
  uint16_t sign = signbit(x) ? (uint16_t)(1u << (ebits + mbits)) : 0;
  uint16_t inf = (uint16_t)(((1u << ebits) - 1u) << mbits);
  double a = fabs(x);
  if (isnan(x)) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return (uint16_t)(sign | inf | (1u << (mbits - 1)) |
                      ((u >> (52 - mbits)) & ((1u << mbits) - 1)));
  }
  if (isinf(x))
    return sign | inf;
  if (a < ldexp(1.0, emin)) { /* subnormal result: multiples of 2^(emin-mbits) */
    double q = nearbyint(ldexp(a, mbits - emin));
    return (uint16_t)(sign | (uint16_t)q); /* q == 2^mbits: smallest normal */
  }
  int e = ilogb(a);
  double m = nearbyint(ldexp(a, mbits - e)); /* in [2^mbits, 2^(mbits+1)] */
  double bits = ldexp((double)(e + bias), mbits) + m - ldexp(1.0, mbits);
  if (bits >= inf)
    return sign | inf;
  return (uint16_t)(sign | (uint16_t)bits);
}

static uint32_t ref_widen(uint16_t h, int ebits, int mbits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t sign = (uint32_t)(h >> (ebits + mbits)) << 31;
  uint32_t e = (h >> mbits) & ((1u << ebits) - 1u), m = h & ((1u << mbits) - 1u);
  if (e == (1u << ebits) - 1u)
    return sign | 0x7f800000u | (m << (23 - mbits)) | (m ? 0x400000u : 0u);
  double v = e == 0 ? ldexp((double)m, 1 - bias - mbits)
                    : ldexp((double)(m | (1u << mbits)), (int)e - bias - mbits);
  return fbits(sign ? -(float)v : (float)v);
}

/* ---- the copies the header replaced (behaviour for non-NaN input) ----------*/

/* tools/bp/conformance_data.c, plugins/opencl/ops_data.c, plugins/gpu. */
static uint16_t old_conf_f32_to_f16(float f) {
  uint32_t u = fbits(f);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (a < 0x38800000u) return (uint16_t)(sign | (uint32_t)lrintf(ffrom(a) * 16777216.0f));
  uint32_t r = a + 0x0fffu + ((a >> 13) & 1u) - 0x38000000u;
  return (uint16_t)(sign | (r >> 13));
}

/* test/shims/common/blas_ref.c */
static uint16_t old_blas_f32_to_f16(float f) {
  uint32_t x = fbits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  float a = fabsf(f);
  if (isnan(f)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;
  if (a < 6.103515625e-05f) return sign | (uint16_t)nearbyintf(a * 16777216.0f);
  uint32_t ax = fbits(a);
  uint32_t mant = ax & 0x7fffff, exp = (ax >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13), rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return sign | (uint16_t)h;
}

/* test/shims/cuda/kernels.c */
static uint16_t old_cuda_f32_to_f16(float f) {
  if (isnan(f)) return 0x7e00;
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  float a = fabsf(f);
  if (a >= 65520.0f) return sign | 0x7c00;
  if (a < 0x1p-14f) return sign | (uint16_t)rintf(a * 0x1p24f);
  int e;
  float m = frexpf(a, &e);
  uint32_t mant = (uint32_t)rintf(m * 2048.0f);
  if (mant == 2048) { mant = 1024; e++; }
  return sign | (uint16_t)(((uint32_t)(e + 14) << 10) | (mant & 0x3ffu));
}

/* every copy's bf16 rounding */
static uint16_t old_f32_to_bf16(float f) {
  uint32_t u = fbits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* ---- checks ----------------------------------------------------------------*/

static int have_f16c(void) {
#if defined(BP_HALF_USE_F16C)
  return __builtin_cpu_supports("f16c");
#else
  return 1; /* the dispatching functions are the portable ones */
#endif
}

static void check_f32(float f) {
  uint32_t u = fbits(f);
  uint16_t want = ref_round((double)f, 5, 10);
  uint16_t got = bp_half_portable_f32_to_f16(f);
  if (got != want) fail_msg("f32 %08x -> f16: got %04x, want %04x", u, got, want);
  if (bp_f32_to_f16(f) != want) fail_msg("f32 %08x -> f16 (dispatch) %04x", u, bp_f32_to_f16(f));
  if (bp_f64_to_f16((double)f) != want) fail_msg("f32 %08x as f64 -> f16", u);
  uint16_t wb = ref_round((double)f, 8, 7);
  if (bp_f32_to_bf16(f) != wb) fail_msg("f32 %08x -> bf16: got %04x, want %04x", u, bp_f32_to_bf16(f), wb);
  if (bp_f64_to_bf16((double)f) != wb) fail_msg("f32 %08x as f64 -> bf16", u);
  if (!isnan(f)) {
    if (old_conf_f32_to_f16(f) != want) fail_msg("f32 %08x: old conformance copy differs", u);
    if (old_blas_f32_to_f16(f) != want) fail_msg("f32 %08x: old blas shim copy differs", u);
    if (old_cuda_f32_to_f16(f) != want) fail_msg("f32 %08x: old cuda shim copy differs", u);
  }
  if (old_f32_to_bf16(f) != wb) fail_msg("f32 %08x: old bf16 copy differs", u);
}

static void test_f16_all_patterns(void **state) {
  (void)state;
  if (!have_f16c()) skip();
  for (uint32_t h = 0; h < 65536; h++) {
    uint32_t want = ref_widen((uint16_t)h, 5, 10);
    uint32_t got = fbits(bp_half_portable_f16_to_f32((uint16_t)h));
    if (got != want) fail_msg("f16 %04x -> f32: got %08x, want %08x", h, got, want);
    if (fbits(bp_f16_to_f32((uint16_t)h)) != want) fail_msg("f16 %04x -> f32 (dispatch)", h);
    uint16_t back = bp_f32_to_f16(bp_f16_to_f32((uint16_t)h));
    uint16_t wback = (uint16_t)((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) ? h | 0x200u : h);
    if (back != wback) fail_msg("f16 %04x round trip gave %04x", h, back);
    if (bp_half_portable_f32_to_f16(bp_half_portable_f16_to_f32((uint16_t)h)) != wback)
      fail_msg("f16 %04x portable round trip", h);
    double d = bp_f16_to_f64((uint16_t)h);
    if (!isnan(d) && bp_f64_to_f16(d) != h) fail_msg("f16 %04x f64 round trip", h);
  }
}

static void test_bf16_all_patterns(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    uint32_t want = ref_widen((uint16_t)h, 8, 7);
    if (fbits(bp_bf16_to_f32((uint16_t)h)) != want) fail_msg("bf16 %04x -> f32", h);
    uint16_t wback = (uint16_t)((h & 0x7f80u) == 0x7f80u && (h & 0x7fu) ? h | 0x40u : h);
    if (bp_f32_to_bf16(bp_bf16_to_f32((uint16_t)h)) != wback) fail_msg("bf16 %04x round trip", h);
    double d = bp_bf16_to_f64((uint16_t)h);
    if (!isnan(d) && bp_f64_to_bf16(d) != h) fail_msg("bf16 %04x f64 round trip", h);
  }
}

static void test_f32_stepping(void **state) {
  (void)state;
  if (!have_f16c()) skip();
  for (uint64_t u = 0; u <= 0xffffffffull; u += 257)
    check_f32(ffrom((uint32_t)u));
  /* the edges: zeros, subnormals, infinities, NaNs of both kinds */
  const uint32_t edge[] = {0u, 0x80000000u, 1u, 0x807fffffu, 0x7f800000u, 0xff800000u,
                           0x7f800001u, 0xffbfffffu, 0x7fc00000u, 0x7fffe000u, 0x477fefffu,
                           0x477ff000u, 0x38800000u, 0x387fffffu, 0x33000000u, 0x33000001u,
                           0x32ffffffu, 0x7f7fffffu, 0x7f7f8000u, 0x7f7f7fffu};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) check_f32(ffrom(edge[i]));
}

/* Every midpoint between neighbouring finite values (and past the largest,
 * where overflow begins) and the f32 / f64 values either side of it. */
static void test_midpoints(void **state) {
  (void)state;
  if (!have_f16c()) skip();
  for (int bf = 0; bf < 2; bf++) {
    int eb = bf ? 8 : 5, mb = bf ? 7 : 10;
    for (uint32_t h = 0; h < 0x8000u; h++) {
      uint16_t inf = (uint16_t)(((1u << eb) - 1u) << mb);
      if (h >= inf) break;
      double lo = bf ? bp_bf16_to_f64((uint16_t)h) : bp_f16_to_f64((uint16_t)h);
      double hi = h + 1 == inf ? ldexp(1.0, (1 << (eb - 1))) /* 2^(emax+1) */
                               : (bf ? bp_bf16_to_f64((uint16_t)(h + 1))
                                     : bp_f16_to_f64((uint16_t)(h + 1)));
      double mid = (lo + hi) / 2; /* exact */
      for (int s = 0; s < 2; s++) {
        double m = s ? -mid : mid;
        double ds[] = {m, nextafter(m, INFINITY), nextafter(m, -INFINITY)};
        for (int k = 0; k < 3; k++) {
          uint16_t want = ref_round(ds[k], eb, mb);
          uint16_t got = bf ? bp_f64_to_bf16(ds[k]) : bp_f64_to_f16(ds[k]);
          if (got != want) fail_msg("%s f64 %a: got %04x, want %04x", bf ? "bf16" : "f16", ds[k], got, want);
        }
        float fm = (float)m; /* exact: the midpoint has mbits + 2 bits */
        assert_true((double)fm == m);
        check_f32(fm);
        check_f32(nextafterf(fm, INFINITY));
        check_f32(nextafterf(fm, -INFINITY));
      }
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_all_patterns),
      cmocka_unit_test(test_bf16_all_patterns),
      cmocka_unit_test(test_f32_stepping),
      cmocka_unit_test(test_midpoints),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
