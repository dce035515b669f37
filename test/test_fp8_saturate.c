/*
 * test_fp8_saturate.c — bp_cast_ex with BP_CAST_SATURATE (fp8 targets) on
 * "cpu" and "cpu-ref", beside the non-saturating mode of bp_cast: all 256
 * codes re-encode to themselves in both modes (infinities and NaN aside),
 * overflow values (the largest finite value, its rounding midpoint, just
 * past it, huge values, infinities, NaN) in both modes, from f64, f32 and
 * f16; the argument checks; and every other device of this machine either
 * refuses the flag (it does not claim BP_FEATURE_CAST_SATURATE) or gives
 * the saturated codes (fallback ran it on a device that does).
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

#include "core/backplane.h"
#include "kernels/common/bp_half.h"

/* The OCP FP8 value of code b (mbits 3: E4M3, 2: E5M2), from the spec. */
static double spec_value(unsigned b, int mbits) {
  int bias = mbits == 3 ? 7 : 15;
  unsigned e = (b & 0x7F) >> mbits, m = b & ((1u << mbits) - 1);
  double s = b & 0x80 ? -1 : 1;
  if (mbits == 3 && e == 15 && m == 7) return NAN;
  if (mbits == 2 && e == 31) return m ? NAN : s * INFINITY;
  double frac = (double)m / (1 << mbits);
  return e ? s * ldexp(1 + frac, (int)e - bias) : s * ldexp(frac, 1 - bias);
}

typedef struct env {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
} env_t;

static env_t open_env(bp_context_t *ctx, const char *name) {
  env_t e = {ctx, NULL, NULL};
  if (!e.ctx) assert_int_equal(bp_context_create(NULL, &e.ctx), BP_OK);
  assert_int_equal(bp_device_open(e.ctx, name, NULL, &e.dev), BP_OK);
  assert_int_equal(bp_stream_create(e.dev, &e.s), BP_OK);
  return e;
}

static void close_env(env_t *e, bool ctx_too) {
  bp_stream_destroy(e->s);
  bp_device_close(e->dev);
  if (ctx_too) bp_context_destroy(e->ctx);
}

/* n values of dtype xt (given as doubles, representable in xt) cast to fp8
 * dtype yt by bp_cast_ex with flags (ex false: bp_cast); returns the
 * status, codes in out. */
static char last_error[512]; /* cast()'s message, before later calls clear it */

static bp_status_t cast(env_t *e, bp_dtype_t xt, const double *v, int n, bp_dtype_t yt, bool ex,
                        uint32_t flags, uint8_t *out) {
  size_t es = xt == BP_F64 ? 8 : xt == BP_F32 ? 4 : 2;
  uint8_t *h = malloc(n * es);
  for (int i = 0; i < n; i++) {
    if (xt == BP_F64) memcpy(h + i * 8, &v[i], 8);
    else if (xt == BP_F32) {
      float f = (float)v[i];
      memcpy(h + i * 4, &f, 4);
    } else {
      uint16_t b = bp_f64_to_f16(v[i]);
      memcpy(h + i * 2, &b, 2);
    }
  }
  bp_buffer_t *bx, *by;
  assert_int_equal(bp_buffer_alloc(e->dev, n * es, &bx), BP_OK);
  assert_int_equal(bp_buffer_alloc(e->dev, (uint64_t)n, &by), BP_OK);
  assert_int_equal(bp_buffer_write(bx, 0, h, n * es), BP_OK);
  memset(out, 0xA5, (size_t)n);
  assert_int_equal(bp_buffer_write(by, 0, out, (uint64_t)n), BP_OK);
  int64_t shape = n;
  bp_tensor_t x, y;
  assert_int_equal(bp_tensor_init(bx, 0, xt, 1, &shape, NULL, &x), BP_OK);
  assert_int_equal(bp_tensor_init(by, 0, yt, 1, &shape, NULL, &y), BP_OK);
  bp_status_t st = ex ? bp_cast_ex(e->s, &x, &y, flags) : bp_cast(e->s, &x, &y);
  snprintf(last_error, sizeof last_error, "%s", st == BP_OK ? "" : bp_last_error());
  assert_int_equal(bp_stream_synchronize(e->s), BP_OK);
  assert_int_equal(bp_buffer_read(by, 0, out, (uint64_t)n), BP_OK);
  bp_buffer_free(bx), bp_buffer_free(by), free(h);
  return st;
}

/* Every code's value re-encodes to the code in both modes; +-inf (e5m2)
 * saturates to +-max; NaN gives the canonical NaN of its sign. */
static void all_codes(const char *dev, bp_dtype_t dt, int mbits) {
  env_t e = open_env(NULL, dev);
  double v[256];
  uint8_t plain[256], sat[256], ex0[256];
  for (unsigned b = 0; b < 256; b++) v[b] = spec_value(b, mbits);
  assert_int_equal(cast(&e, BP_F64, v, 256, dt, false, 0, plain), BP_OK);
  assert_int_equal(cast(&e, BP_F64, v, 256, dt, true, 0, ex0), BP_OK);
  assert_memory_equal(plain, ex0, 256); /* flags 0: bp_cast */
  assert_int_equal(cast(&e, BP_F64, v, 256, dt, true, BP_CAST_SATURATE, sat), BP_OK);
  uint8_t maxc = mbits == 3 ? 0x7E : 0x7B, nanc = mbits == 3 ? 0x7F : 0x7E;
  for (unsigned b = 0; b < 256; b++) {
    uint8_t sign = b & 0x80;
    if (isnan(v[b])) { /* spec_value's NaN has no sign */
      assert_int_equal(plain[b] & 0x7F, nanc);
      assert_int_equal(sat[b] & 0x7F, nanc);
    } else if (isinf(v[b])) {
      assert_int_equal(plain[b], b);
      assert_int_equal(sat[b], sign | maxc);
    } else {
      assert_int_equal(plain[b], b);
      assert_int_equal(sat[b], b);
    }
  }
  close_env(&e, true);
}

static void test_codes_e4m3(void **st) { all_codes(*st, BP_FP8_E4M3, 3); }
static void test_codes_e5m2(void **st) { all_codes(*st, BP_FP8_E5M2, 2); }

/* value, non-saturating code, saturating code (positive; each also negated) */
typedef struct ovf {
  double v;
  uint8_t plain, sat;
} ovf_t;

static const ovf_t e4m3_ovf[] = {
    {448, 0x7E, 0x7E},   {464, 0x7E, 0x7E}, /* the midpoint ties to even: 448 */
    {465, 0x7F, 0x7E},   {480, 0x7F, 0x7E},    {1e6, 0x7F, 0x7E},
    {65504, 0x7F, 0x7E}, {INFINITY, 0x7F, 0x7E}, {416, 0x7D, 0x7D},
};
static const ovf_t e5m2_ovf[] = {
    {57344, 0x7B, 0x7B},    {61439, 0x7B, 0x7B}, {61440, 0x7C, 0x7B}, /* the tie rounds up */
    {65504, 0x7C, 0x7B},    {1e30, 0x7C, 0x7B},  {INFINITY, 0x7C, 0x7B},
    {49152, 0x7A, 0x7A},
};

static void overflow(const char *dev, bp_dtype_t dt, const ovf_t *t, int n) {
  env_t e = open_env(NULL, dev);
  static const bp_dtype_t from[3] = {BP_F64, BP_F32, BP_F16};
  for (int f = 0; f < 3; f++) {
    double v[32];
    uint8_t plain[32], sat[32];
    int k = 0, row[16];
    for (int i = 0; i < n; i++) {
      /* f16 holds neither 61439 nor 1e30 (nor 1e6): only what each can */
      if (from[f] == BP_F16 && isfinite(t[i].v) && bp_f16_to_f64(bp_f64_to_f16(t[i].v)) != t[i].v) continue;
      if (from[f] == BP_F32 && (double)(float)t[i].v != t[i].v) continue;
      row[k / 2] = i;
      v[k++] = t[i].v;
      v[k++] = -t[i].v;
    }
    v[k++] = NAN;
    assert_int_equal(cast(&e, from[f], v, k, dt, false, 0, plain), BP_OK);
    assert_int_equal(cast(&e, from[f], v, k, dt, true, BP_CAST_SATURATE, sat), BP_OK);
    for (int j = 0; j + 1 < k; j += 2) {
      const ovf_t *o = &t[row[j / 2]];
      assert_int_equal(plain[j], o->plain);
      assert_int_equal(sat[j], o->sat);
      assert_int_equal(plain[j + 1], 0x80 | o->plain);
      assert_int_equal(sat[j + 1], 0x80 | o->sat);
    }
    uint8_t nanc = dt == BP_FP8_E4M3 ? 0x7F : 0x7E;
    assert_int_equal(plain[k - 1] & 0x7F, nanc);
    assert_int_equal(sat[k - 1] & 0x7F, nanc);
  }
  close_env(&e, true);
}

static void test_overflow_e4m3(void **st) {
  overflow(*st, BP_FP8_E4M3, e4m3_ovf, (int)(sizeof e4m3_ovf / sizeof e4m3_ovf[0]));
}
static void test_overflow_e5m2(void **st) {
  overflow(*st, BP_FP8_E5M2, e5m2_ovf, (int)(sizeof e5m2_ovf / sizeof e5m2_ovf[0]));
}

/* An unknown flag, and BP_CAST_SATURATE with a y that is not fp8, are
 * refused and write nothing. */
static void test_bad_flags(void **st) {
  env_t e = open_env(NULL, *st);
  double v[4] = {1, 2, 1000, -1000};
  uint8_t out[4];
  assert_int_equal(cast(&e, BP_F64, v, 4, BP_FP8_E4M3, true, 0x2, out), BP_ERR_INVALID_ARGUMENT);
  for (int i = 0; i < 4; i++) assert_int_equal(out[i], 0xA5);
  assert_non_null(strstr(last_error, "flags"));
  assert_int_equal(cast(&e, BP_F64, v, 4, BP_U8, true, BP_CAST_SATURATE, out), BP_ERR_INVALID_ARGUMENT);
  for (int i = 0; i < 4; i++) assert_int_equal(out[i], 0xA5);
  assert_non_null(strstr(last_error, "fp8"));
  bp_device_entry_t entry;
  assert_int_equal(bp_device_entry(e.dev, &entry), BP_OK);
  assert_true(entry.info.op_features[BP_OP_CAST] & BP_FEATURE_CAST_SATURATE);
  close_env(&e, true);
}

/* Every other device: refused (BP_ERR_UNSUPPORTED) unless it claims the
 * feature or fallback runs the cast where it is claimed; a result, when
 * there is one, is the saturated one. */
static void test_other_devices(void **st) {
  (void)st;
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  uint32_t count = 0;
  assert_int_equal(bp_context_device_count(ctx, &count), BP_OK);
  int tried = 0;
  for (uint32_t i = 0; i < count; i++) {
    bp_device_entry_t entry;
    assert_int_equal(bp_context_device_entry(ctx, i, &entry), BP_OK);
    if (!strcmp(entry.backend, "cpu")) continue; /* cpu and cpu-ref: the suites above */
    char sel[16];
    snprintf(sel, sizeof sel, "%u", i);
    bp_device_t *dev;
    if (bp_device_open(ctx, sel, NULL, &dev) != BP_OK) continue;
    bp_device_close(dev);
    env_t e = open_env(ctx, sel);
    double v[2] = {1000, -INFINITY};
    uint8_t out[2];
    bp_status_t s = cast(&e, BP_F32, v, 2, BP_FP8_E4M3, true, BP_CAST_SATURATE, out);
    bool claims = entry.info.op_features[BP_OP_CAST] & BP_FEATURE_CAST_SATURATE;
    if (s == BP_OK) {
      assert_int_equal(out[0], 0x7E);
      assert_int_equal(out[1], 0xFE);
    } else {
      assert_false(claims);
      assert_int_equal(s, BP_ERR_UNSUPPORTED);
    }
    tried++;
    close_env(&e, false);
  }
  print_message("%d other device(s) tried\n", tried);
  bp_context_destroy(ctx);
}

int main(void) {
  static const char *const devs[] = {"cpu", "cpu-ref"};
  int fails = 0;
  for (int d = 0; d < 2; d++) {
    void *state = (void *)devs[d];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_codes_e4m3, state),    cmocka_unit_test_prestate(test_codes_e5m2, state),
        cmocka_unit_test_prestate(test_overflow_e4m3, state), cmocka_unit_test_prestate(test_overflow_e5m2, state),
        cmocka_unit_test_prestate(test_bad_flags, state),
    };
    fails += _cmocka_run_group_tests(devs[d], tests, sizeof tests / sizeof tests[0], NULL, NULL);
  }
  const struct CMUnitTest others[] = {cmocka_unit_test(test_other_devices)};
  fails += cmocka_run_group_tests(others, NULL, NULL);
  return fails ? 1 : 0;
}
