/*
 * test_ops_data.c — fill for every dtype, copy / permute / broadcast copy,
 * cast between every pair of dtypes (round to nearest even, NaN -> 0 for
 * integers, saturation), and random uniform / normal: the exact Philox
 * stream (checked against the tests' own Philox4x32-10, itself checked
 * against Random123's known answers), statistics, bit-identity between
 * devices, reproducibility and the effect of offset.
 * Built with -ffp-contract=off (test/ops.mk): the uniform formula must be
 * evaluated as written.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/common/bp_philox.h"
#include "ref.h"
#include "tc.h"

static const bp_dtype_t all_dtypes[BP_DTYPE_COUNT] = {
    BP_F32, BP_F16, BP_BF16, BP_F64, BP_I32, BP_I64, BP_U8};

/* ---- fill ------------------------------------------------------------------*/

static void test_fill(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const double values[] = {0.0, -0.0, 1.5, -2.75, 2.5, 3.5, -1.0, 300.0,
                           1e10, -1e10, 65520.0, NAN, INFINITY, -INFINITY,
                           1e-8, 1.0 + 0x1p-11};
  const int64_t shapes[][3] = {{7, 13, 1}, {1, 1, 1}, {3, 0, 5}, {2, 31, 3}};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < BP_DTYPE_COUNT; t++) {
      bp_dtype_t dt = all_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_FILL, dt))
        continue;
      for (size_t v = 0; v < sizeof values / sizeof *values; v++) {
        const int64_t *shape = shapes[v % 4];
        tc_tensor_t Y = tc_tensor(e, dt, 3, shape, (tc_layout_t)(v % TC_LAYOUT_COUNT), NULL);
        bp_status_t st = bp_fill(e->s, &Y.t, values[v]);
        if (tc_expect_status(e, st, BP_OK, "fill %g", values[v])) {
          double *y = tc_download(&Y), *ref = malloc(sizeof(double) * (size_t)(Y.numel + 1));
          for (int64_t i = 0; i < Y.numel; i++)
            ref[i] = values[v];
          tc_expect_exact(e, dt, y, ref, Y.numel, "fill %g (%s)", values[v],
                          tc_layout_names[v % TC_LAYOUT_COUNT]);
          if (tc_outside_changed(&Y))
            print_error("FAIL [%s] fill wrote outside y\n", e->name), tc_failures++;
          free(y), free(ref);
        }
        tc_tensor_free(&Y);
      }
    }
  TC_END();
}

/* ---- copy ------------------------------------------------------------------*/

/* y [3,5,7] (layout ly) = permute(x) where x is stored [7,3,5]; also a
 * broadcast copy from [5,1] and from a scalar. */
static void test_copy_permute_broadcast(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 41);
  const int64_t xs[3] = {7, 3, 5}, ys[3] = {3, 5, 7}, bs[2] = {5, 1}, one[1] = {1};
  const int32_t perm[3] = {1, 2, 0};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < BP_DTYPE_COUNT; t++) {
      bp_dtype_t dt = all_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_COPY, dt))
        continue;
      double lo = dt == BP_U8 ? 0 : -100, hi = 100;
      for (int l = 0; l < TC_LAYOUT_COUNT; l++) {
        double x[105], b[5], s[1], ref[105];
        tc_rng_fill(&rng, dt, lo, hi, x, 105);
        tc_rng_fill(&rng, dt, lo, hi, b, 5);
        tc_rng_fill(&rng, dt, lo, hi, s, 1);
        tc_tensor_t X = tc_tensor(e, dt, 3, xs, (tc_layout_t)l, x);
        tc_tensor_t Y = tc_tensor(e, dt, 3, ys, (tc_layout_t)((l + 1) % TC_LAYOUT_COUNT), NULL);
        bp_tensor_t xp;
        assert_int_equal(bp_tensor_permute(&X.t, perm, &xp), BP_OK);
        if (tc_expect_status(e, bp_copy(e->s, &xp, &Y.t), BP_OK, "copy permute")) {
          double *y = tc_download(&Y);
          for (int64_t i = 0; i < 3; i++)
            for (int64_t j = 0; j < 5; j++)
              for (int64_t k = 0; k < 7; k++)
                ref[(i * 5 + j) * 7 + k] = x[(k * 3 + i) * 5 + j];
          tc_expect_exact(e, dt, y, ref, 105, "copy permute (1,2,0) %s", tc_layout_names[l]);
          if (tc_outside_changed(&Y))
            print_error("FAIL [%s] copy wrote outside y\n", e->name), tc_failures++;
          free(y);
        }
        tc_tensor_t B = tc_tensor(e, dt, 2, bs, (tc_layout_t)l, b);
        if (tc_expect_status(e, bp_copy(e->s, &B.t, &Y.t), BP_OK, "copy broadcast")) {
          double *y = tc_download(&Y);
          for (int64_t i = 0; i < 105; i++)
            ref[i] = b[(i / 7) % 5];
          tc_expect_exact(e, dt, y, ref, 105, "copy broadcast [5,1] -> [3,5,7]");
          free(y);
        }
        tc_tensor_t S = tc_tensor(e, dt, 0, one, TC_CONTIG, s);
        if (tc_expect_status(e, bp_copy(e->s, &S.t, &Y.t), BP_OK, "copy scalar")) {
          double *y = tc_download(&Y);
          for (int64_t i = 0; i < 105; i++)
            ref[i] = s[0];
          tc_expect_exact(e, dt, y, ref, 105, "copy scalar -> [3,5,7]");
          free(y);
        }
        tc_tensor_free(&X), tc_tensor_free(&Y), tc_tensor_free(&B), tc_tensor_free(&S);
      }
    }
  TC_END();
}

/* copy moves bits: i64 beyond 2^53 and NaN payloads survive; -0.0 too. */
static void test_copy_bits(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  for (int d = 0; d < su->count; d++) {
    tc_env_t *e = &su->env[d];
    const int64_t big[3] = {(INT64_C(1) << 60) + 1, INT64_MIN, INT64_MAX - 2};
    const uint32_t fbits[3] = {0x7fa00001u, 0xffc12345u, 0x80000000u};
    const int64_t n3 = 3, st2 = 2;
    bp_tensor_t tx, ty;
    bp_buffer_t *bx, *by;
    for (int k = 0; k < 2; k++) {
      bp_dtype_t dt = k ? BP_F32 : BP_I64;
      size_t es = bp_dtype_size(dt);
      assert_int_equal(bp_buffer_alloc(e->dev, 6 * es, &bx), BP_OK);
      assert_int_equal(bp_buffer_alloc(e->dev, 6 * es, &by), BP_OK);
      assert_int_equal(bp_buffer_write(bx, 0, k ? (const void *)fbits : (const void *)big, 3 * es), BP_OK);
      assert_int_equal(bp_tensor_init(bx, 0, dt, 1, &n3, NULL, &tx), BP_OK);
      assert_int_equal(bp_tensor_init(by, es, dt, 1, &n3, &st2, &ty), BP_OK);
      if (tc_expect_status(e, bp_copy(e->s, &tx, &ty), BP_OK, "copy bits %s", bp_dtype_name(dt))) {
        unsigned char got[48];
        assert_int_equal(bp_buffer_read(by, 0, got, 6 * es), BP_OK);
        for (int i = 0; i < 3; i++)
          if (memcmp(got + (1 + 2 * i) * es, (k ? (const unsigned char *)fbits : (const unsigned char *)big) + i * es, es))
            print_error("FAIL [%s %s] copy changed the bits of element %d\n", e->name,
                        bp_dtype_name(dt), i),
                tc_failures++;
      }
      bp_buffer_free(bx);
      bp_buffer_free(by);
    }
  }
  TC_END();
}

/* ---- cast ------------------------------------------------------------------*/

static void test_cast_all_pairs(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const double vals[] = {0.0, -0.0, 0.5, 1.5, 2.5, -2.5, -0.5, 3.5, 255.5, 256.0,
                         -1.0, 127.0, 1e10, -1e10, 65504.0, 65520.0, 70000.0,
                         NAN, INFINITY, -INFINITY, 1.0 + 0x1p-11, 1.0 + 0x1p-8,
                         1.0 + 3 * 0x1p-9, 3e38, 1e39, 1e-8, 1e-40, 0x1p-24,
                         0x1p-25, 2147483647.0, -2147483649.0, 16777217.0,
                         0.1, -7.25, 0x1p62, -0x1p63};
  const int64_t n = sizeof vals / sizeof *vals;
  for (int d = 0; d < su->count; d++)
    for (int s = 0; s < BP_DTYPE_COUNT; s++)
      for (int t = 0; t < BP_DTYPE_COUNT; t++) {
        bp_dtype_t xd = all_dtypes[s], yd = all_dtypes[t];
        tc_env_t *e = &su->env[d];
        if (!tc_supports(e, BP_OP_CAST, xd) || !tc_supports(e, BP_OP_CAST, yd))
          continue;
        tc_tensor_t X = tc_tensor(e, xd, 1, &n, (tc_layout_t)(s % TC_LAYOUT_COUNT), vals);
        tc_tensor_t Y = tc_tensor(e, yd, 1, &n, (tc_layout_t)(t % TC_LAYOUT_COUNT), NULL);
        if (tc_expect_status(e, bp_cast(e->s, &X.t, &Y.t), BP_OK, "cast %s -> %s",
                             bp_dtype_name(xd), bp_dtype_name(yd))) {
          double *xv = tc_values(&X), *y = tc_download(&Y);
          tc_expect_exact(e, yd, y, xv, n, "cast %s -> %s", bp_dtype_name(xd),
                          bp_dtype_name(yd));
          if (tc_outside_changed(&Y))
            print_error("FAIL [%s] cast wrote outside y\n", e->name), tc_failures++;
          free(xv), free(y);
        }
        tc_tensor_free(&X);
        tc_tensor_free(&Y);
      }
  TC_END();
}

/* ---- random ------------------------------------------------------------------*/

static void test_philox_known_answers(void **state) {
  (void)state;
  /* Random123's kat_vectors for philox4x32_10 */
  const uint32_t kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
       0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1},
  };
  for (int i = 0; i < 3; i++) {
    uint32_t out[4];
    ref_philox4x32_10(kat[i], kat[i] + 4, out);
    for (int j = 0; j < 4; j++)
      assert_int_equal(out[j], kat[i][6 + j]);
  }
}

/* bp_philox.h's own f32 -> f16 / bf16 rounding and f16 -> f32 (which keep
 * uniform values below b on every backend) against tc_round: every f16
 * pattern, the floats on and next to every f16 rounding midpoint, and a
 * stride through all floats. */
static void test_philox_16bit_rounding(void **state) {
  (void)state;
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000u && bad < 5; h++) {
    uint16_t h16 = (uint16_t)h;
    double want = tc_load(&h16, BP_F16);
    float got = bp_philox_h2f(h);
    if (!(isnan(want) ? isnan(got) : (double)got == want && !signbit(got) == !signbit(want)))
      print_error("h2f(%04x) = %g, want %g\n", h, got, want), bad++;
    if ((h & 0x7c00u) == 0x7c00u)
      continue;
    /* the midpoint to the next pattern up in magnitude, and its neighbours */
    uint16_t n16 = (uint16_t)(h + 1);
    double mid = (want + tc_load(&n16, BP_F16)) / 2;
    float fm = (float)mid;
    for (int k = -1; k <= 1 && (float)mid == mid; k++) {
      uint32_t u = bp_philox_f2u(fm) + (uint32_t)k;
      float f = bp_philox_u2f(u);
      uint16_t w;
      tc_store(&w, BP_F16, f);
      if (bp_philox_f2h(f) != w)
        print_error("f2h(%a) = %04x, want %04x\n", (double)f, bp_philox_f2h(f), w), bad++;
    }
  }
  for (uint64_t u = 0; u < 0x100000000ull && bad < 5; u += 4099) {
    float f = bp_philox_u2f((uint32_t)u);
    if (isnan(f))
      continue;
    uint16_t w;
    tc_store(&w, BP_F16, f);
    if (bp_philox_f2h(f) != w)
      print_error("f2h(%a) = %04x, want %04x\n", (double)f, bp_philox_f2h(f), w), bad++;
    tc_store(&w, BP_BF16, f);
    if (bp_philox_f2bf(f) != w)
      print_error("f2bf(%a) = %04x, want %04x\n", (double)f, bp_philox_f2bf(f), w), bad++;
  }
  assert_int_equal(bad, 0);
}

/* The next value of dt (f16 / bf16) below h, itself a value of dt: the
 * step bp_random takes when a uniform value rounds up to b. */
static double below_dtype(bp_dtype_t dt, double h) {
  int p = dt == BP_F16 ? 11 : 8, emin = dt == BP_F16 ? -14 : -126;
  if (isinf(h))
    return h > 0 ? (dt == BP_F16 ? 65504.0 : 0x1.fep127) : h;
  if (h == 0)
    return -ldexp(1, emin - (p - 1));
  int e = ilogb(fabs(h));
  if (e < emin)
    e = emin;
  /* one quantum below; at a power of two going down the quantum halves */
  double q = ldexp(1, e - (p - 1));
  if (h > 0 && fabs(h) == ldexp(1, e) && e > emin)
    q /= 2;
  return h - q;
}

/* The value the stream gives element i (uniform exactly; normal through
 * libm, so only close). */
static double stream_value(bp_random_dist_t dist, bp_dtype_t dt, uint64_t seed,
                           uint64_t offset, uint64_t i, double a, double b) {
  uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32), (uint32_t)offset,
                     (uint32_t)(offset >> 32)};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, r[4];
  ref_philox4x32_10(ctr, key, r);
  if (dist == BP_RANDOM_UNIFORM) {
    if (dt == BP_F64) {
      double u = (double)(((uint64_t)r[0] << 21) | (r[1] >> 11)) * 0x1p-53;
      double v = a + (b - a) * u;
      return a < b && v >= b ? nextafter(b, -INFINITY) : v;
    }
    float u = (float)(r[0] >> 8) * 0x1p-24f, fa = (float)a, fb = (float)b;
    float v = fa + (fb - fa) * u;
    if (fa < fb && v >= fb) /* half-open: the largest float below fb */
      v = nextafterf(fb, -INFINITY);
    double h = tc_round(dt, v);
    if (fa < fb && h >= fb) /* rounded to b: the dtype's next value below */
      h = below_dtype(dt, h);
    return h;
  }
  double u1 = (double)((r[0] >> 8) + 1) * 0x1p-24, u2 = (double)(r[1] >> 8) * 0x1p-24;
  double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
  return a + b * z;
}

static double *random_run(tc_env_t *e, bp_dtype_t dt, bp_random_dist_t dist,
                          uint64_t seed, uint64_t offset, double a, double b,
                          int rank, const int64_t *shape, tc_layout_t l) {
  tc_tensor_t Y = tc_tensor(e, dt, rank, shape, l, NULL);
  bp_status_t st = bp_random(e->s, dist, seed, offset, a, b, &Y.t);
  double *y = NULL;
  if (tc_expect_status(e, st, BP_OK, "random %s", dist ? "normal" : "uniform")) {
    y = tc_download(&Y);
    if (tc_outside_changed(&Y))
      print_error("FAIL [%s] random wrote outside y\n", e->name), tc_failures++;
  }
  tc_tensor_free(&Y);
  return y;
}

static void test_random_stream(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const int64_t shape[2] = {13, 31}, n = 13 * 31;
  const uint64_t seeds[3] = {0, 42, 0x123456789abcdef0ull}, offs[3] = {0, 1, 1ull << 40};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_RANDOM, dt))
        continue;
      for (int dist = 0; dist < 2; dist++)
        for (int k = 0; k < 3; k++) {
          double a = dist ? 0.5 : -2, b = dist ? 3 : 5;
          double *y = random_run(e, dt, dist, seeds[k], offs[k], a, b, 2, shape,
                                 (tc_layout_t)k);
          if (!y)
            continue;
          double ref[13 * 31];
          for (int64_t i = 0; i < n; i++)
            ref[i] = stream_value(dist, dt, seeds[k], offs[k], (uint64_t)i, a, b);
          if (dist == BP_RANDOM_UNIFORM)
            tc_expect_exact(e, dt, y, ref, n, "uniform stream seed %llx offset %llx (%s)",
                            (unsigned long long)seeds[k], (unsigned long long)offs[k],
                            tc_layout_names[k]);
          else /* z is computed in float for every dtype: f32's tolerance */
            tc_expect_close(e, dt == BP_F64 ? BP_F32 : dt, y, ref, n, 1, "normal stream seed %llx offset %llx",
                            (unsigned long long)seeds[k], (unsigned long long)offs[k]);
          for (int64_t i = 0; dist == BP_RANDOM_UNIFORM && i < n; i++)
            if (!(y[i] >= a && y[i] < b)) { /* half-open, after rounding too */
              print_error("FAIL [%s %s] uniform value %g outside [%g, %g]\n", e->name,
                          bp_dtype_name(dt), y[i], a, b);
              tc_failures++;
              break;
            }
          free(y);
        }
    }
  TC_END();
}

static void test_random_statistics(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const int64_t n = 20000;
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_RANDOM, dt))
        continue;
      for (int dist = 0; dist < 2; dist++) {
        double a = dist ? -1.5 : 2, b = dist ? 2 : 6;
        double *y = random_run(e, dt, dist, 7, 0, a, b, 1, &n, TC_CONTIG);
        if (!y)
          continue;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < n; i++)
          mean += y[i];
        mean /= (double)n;
        for (int64_t i = 0; i < n; i++)
          var += (y[i] - mean) * (y[i] - mean);
        var /= (double)n;
        double want_mean = dist ? a : (a + b) / 2;
        double want_var = dist ? b * b : (b - a) * (b - a) / 12;
        /* 5 standard errors of the mean; 5% on the variance */
        if (fabs(mean - want_mean) > 5 * sqrt(want_var / (double)n) ||
            fabs(var / want_var - 1) > 0.05) {
          print_error("FAIL [%s %s] %s: mean %g (want %g), var %g (want %g)\n", e->name,
                      bp_dtype_name(dt), dist ? "normal" : "uniform", mean, want_mean,
                      var, want_var);
          tc_failures++;
        }
        free(y);
      }
    }
  TC_END();
}

/* Same (seed, offset): same numbers, on one device and across devices;
 * another offset or seed: other numbers. */
static void test_random_reproducible(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const int64_t shape[3] = {3, 7, 13}, n = 3 * 7 * 13;
  for (int t = 0; t < 4; t++) {
    bp_dtype_t dt = tc_float_dtypes[t];
    for (int dist = 0; dist < 2; dist++) {
      double *first = NULL;
      for (int d = 0; d < su->count; d++) {
        tc_env_t *e = &su->env[d];
        if (!tc_supports(e, BP_OP_RANDOM, dt))
          continue;
        double *y1 = random_run(e, dt, dist, 99, 5, 0, 1, 3, shape, TC_STRIDED);
        double *y2 = random_run(e, dt, dist, 99, 5, 0, 1, 3, shape, TC_CONTIG);
        double *y3 = random_run(e, dt, dist, 99, 6, 0, 1, 3, shape, TC_CONTIG);
        double *y4 = random_run(e, dt, dist, 100, 5, 0, 1, 3, shape, TC_CONTIG);
        if (!y1 || !y2 || !y3 || !y4)
          continue;
        tc_expect_exact(e, dt, y2, y1, n, "random dist %d: same (seed, offset) twice", dist);
        if (first)
          tc_expect_exact(e, dt, y1, first, n, "random dist %d: %s vs %s", dist,
                          e->name, su->env[0].name);
        int same3 = 0, same4 = 0;
        for (int64_t i = 0; i < n; i++)
          same3 += y3[i] == y1[i], same4 += y4[i] == y1[i];
        if (same3 > n / 8 || same4 > n / 8) {
          print_error("FAIL [%s %s] dist %d: another offset / seed repeats %d / %d of %lld values\n",
                      e->name, bp_dtype_name(dt), dist, same3, same4, (long long)n);
          tc_failures++;
        }
        if (!first)
          first = y1;
        else
          free(y1);
        free(y2), free(y3), free(y4);
      }
      free(first);
    }
  }
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fill),
      cmocka_unit_test(test_copy_permute_broadcast),
      cmocka_unit_test(test_copy_bits),
      cmocka_unit_test(test_cast_all_pairs),
      cmocka_unit_test(test_philox_known_answers),
      cmocka_unit_test(test_philox_16bit_rounding),
      cmocka_unit_test(test_random_stream),
      cmocka_unit_test(test_random_statistics),
      cmocka_unit_test(test_random_reproducible),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
