/*
 * test_fp8.c — fp8 e4m3 / e5m2 casts through bp_cast on "cpu" and
 * "cpu-ref": all 256 codes decoded (f64) against this file's own decoding of
 * the OCP spec, re-encoded to themselves; every midpoint between adjacent
 * codes rounds to the even one and a hair above it to the next; overflow
 * per the non-saturating mode (e4m3: NaN past 464, e5m2: inf from 61440);
 * NaN stays NaN, -0 stays -0.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/backplane.h"

/* The OCP FP8 value of code b (mbits 3: E4M3, 2: E5M2), written from the spec. */
static double spec_value(unsigned b, int mbits) {
  int bias = mbits == 3 ? 7 : 15, emax = mbits == 3 ? 15 : 31;
  unsigned e = (b & 0x7F) >> mbits, m = b & ((1u << mbits) - 1);
  double s = b & 0x80 ? -1 : 1;
  if (mbits == 3 && e == 15 && m == 7) return NAN;
  if (mbits == 2 && e == (unsigned)emax) return m ? NAN : s * INFINITY;
  double frac = (double)m / (1 << mbits);
  return e ? s * ldexp(1 + frac, (int)e - bias) : s * ldexp(frac, 1 - bias);
}

typedef struct env {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *bd, *b8;
} env_t;

#define N 512

static env_t open_env(const char *name) {
  env_t e = {0};
  assert_int_equal(bp_context_create(NULL, &e.ctx), BP_OK);
  assert_int_equal(bp_device_open(e.ctx, name, NULL, &e.dev), BP_OK);
  assert_int_equal(bp_stream_create(e.dev, &e.s), BP_OK);
  assert_int_equal(bp_buffer_alloc(e.dev, N * 8, &e.bd), BP_OK);
  assert_int_equal(bp_buffer_alloc(e.dev, N, &e.b8), BP_OK);
  return e;
}

/* f64 values -> fp8 codes on the device. */
static void encode(env_t *e, bp_dtype_t dt, const double *v, int n, uint8_t *codes) {
  int64_t shape = n;
  bp_tensor_t x, y;
  assert_int_equal(bp_buffer_write(e->bd, 0, v, (uint64_t)n * 8), BP_OK);
  assert_int_equal(bp_tensor_init(e->bd, 0, BP_F64, 1, &shape, NULL, &x), BP_OK);
  assert_int_equal(bp_tensor_init(e->b8, 0, dt, 1, &shape, NULL, &y), BP_OK);
  assert_int_equal(bp_cast(e->s, &x, &y), BP_OK);
  assert_int_equal(bp_buffer_read(e->b8, 0, codes, (uint64_t)n), BP_OK);
}

static void decode(env_t *e, bp_dtype_t dt, const uint8_t *codes, int n, double *v) {
  int64_t shape = n;
  bp_tensor_t x, y;
  assert_int_equal(bp_buffer_write(e->b8, 0, codes, (uint64_t)n), BP_OK);
  assert_int_equal(bp_tensor_init(e->b8, 0, dt, 1, &shape, NULL, &x), BP_OK);
  assert_int_equal(bp_tensor_init(e->bd, 0, BP_F64, 1, &shape, NULL, &y), BP_OK);
  assert_int_equal(bp_cast(e->s, &x, &y), BP_OK);
  assert_int_equal(bp_buffer_read(e->bd, 0, v, (uint64_t)n * 8), BP_OK);
}

static void all_codes(const char *dev, bp_dtype_t dt, int mbits) {
  env_t e = open_env(dev);
  uint8_t codes[256], back[256];
  double v[256];
  for (int i = 0; i < 256; i++) codes[i] = (uint8_t)i;
  decode(&e, dt, codes, 256, v);
  for (int i = 0; i < 256; i++) {
    double w = spec_value((unsigned)i, mbits);
    if (isnan(w)) assert_true(isnan(v[i]));
    else assert_true(v[i] == w && signbit(v[i]) == signbit(w));
  }
  encode(&e, dt, v, 256, back);
  for (int i = 0; i < 256; i++) {
    if (isnan(v[i])) assert_true(isnan(spec_value(back[i], mbits)));
    else assert_int_equal(back[i], i);
  }
  /* midpoints of adjacent positive finite codes: ties to the even code;
   * a hair above goes to the upper one */
  double mid[2 * 128];
  int pairs = 0, lo[128];
  for (int i = 0; i + 1 < 128; i++) {
    double a = spec_value((unsigned)i, mbits), b = spec_value((unsigned)i + 1, mbits);
    if (isnan(b) || isinf(b)) break;
    lo[pairs] = i;
    mid[2 * pairs] = (a + b) / 2;
    mid[2 * pairs + 1] = nextafter((a + b) / 2, INFINITY);
    pairs++;
  }
  uint8_t got[256];
  encode(&e, dt, mid, 2 * pairs, got);
  for (int p = 0; p < pairs; p++) {
    int even = lo[p] % 2 == 0 ? lo[p] : lo[p] + 1;
    assert_int_equal(got[2 * p], even);
    assert_int_equal(got[2 * p + 1], lo[p] + 1);
  }
  /* overflow, non-saturating: e4m3 NaN past 464 (464 itself ties to 448),
   * e5m2 inf from 61440 (the tie rounds to even, past the max) */
  double big[4] = {mbits == 3 ? 464 : 61439, mbits == 3 ? 465 : 61440, -1e9, NAN};
  encode(&e, dt, big, 4, got);
  assert_int_equal(got[0], mbits == 3 ? 0x7E : 0x7B);
  if (mbits == 3) {
    assert_true(isnan(spec_value(got[1], 3)) && isnan(spec_value(got[2], 3)) && (got[2] & 0x80));
  } else {
    assert_int_equal(got[1], 0x7C);
    assert_int_equal(got[2], 0xFC);
  }
  assert_true(isnan(spec_value(got[3], mbits)));
  bp_stream_destroy(e.s);
  bp_device_close(e.dev);
  bp_context_destroy(e.ctx);
}

static void test_e4m3(void **st) { all_codes(*st, BP_FP8_E4M3, 3); }
static void test_e5m2(void **st) { all_codes(*st, BP_FP8_E5M2, 2); }

int main(void) {
  static const char *const devs[] = {"cpu", "cpu-ref"};
  int fails = 0;
  for (int d = 0; d < 2; d++) {
    void *state = (void *)devs[d];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_e4m3, state),
        cmocka_unit_test_prestate(test_e5m2, state),
    };
    fails += _cmocka_run_group_tests(devs[d], tests, 2, NULL, NULL);
  }
  return fails ? 1 : 0;
}
