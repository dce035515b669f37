/*
 * test_cpu_fast_mem.c — the memory-bound fast paths' streaming-store and
 * cached-row machinery (fast/rows/vec_rows.h, cpu_fast_nt_ok) against the scalar
 * reference, linked straight from the plugin's objects so each ISA level,
 * thread count and the non-temporal store threshold can be forced.
 *
 * Every case runs twice: with each device's tune.nt_min_bytes at 1 (every eligible
 * output takes streaming stores) and at its default (these small outputs
 * keep normal stores). Row lengths cover 1, below, at and past the vector
 * width, primes, rows longer than the cached form (softmax online) and
 * outputs that start off the 64-byte line (the normally stored head). Rows
 * hold NaN, +inf and -inf, and all -inf rows. Identical rows give identical
 * bits whether written in place or deferred to the next row's pass.
 * Results only; no timings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/ref/ref.h"
#include "test/cpu_fast_devs.h"
#include "test/plugin_tensor.h"
#include "test/skip.h"

static int fails, checks;


static bp_plugin_tensor_t tens(float *p, int rank, const int64_t *shape,
                               const int64_t *strides) {
  return plugin_tensor(p, BP_F32, rank, shape, strides);
}

static float frand(void) { return (float)(rand() % 20001 - 10000) / 2500.0f; }

/* Row r of [rows, n]: 0 random, 1 one NaN, 2 all -inf, 3 every third -inf,
 * 4 one +inf, 5 a large offset, 6 the first element far out (a one-pass
 * variance about it would cancel). norm != 0 keeps infinities out. */
static void fill_rows(float *x, int64_t rows, int64_t n, int norm) {
  for (int64_t r = 0; r < rows; r++) {
    float *p = x + r * n;
    int kind = (int)(r % 7);
    for (int64_t i = 0; i < n; i++) {
      p[i] = frand();
      if (!norm && (kind == 2 || (kind == 3 && i % 3 == 0))) p[i] = -INFINITY;
      if (kind == 5) p[i] = 1000.0f + p[i] * 0.01f;
    }
    if (kind == 6) p[0] = 3000.0f;
    if (kind == 1) p[rand() % n] = NAN;
    if (kind == 4 && !norm) p[rand() % n] = INFINITY;
  }
}

/* NaN where the reference has NaN, equal infinities, else within
 * atol + rtol * |want|. */
static void compare(const char *what, const float *got, const float *want,
                    int64_t n, double rtol, double atol) {
  checks++;
  for (int64_t i = 0; i < n; i++) {
    double g = got[i], w = want[i];
    bool ok = isnan(w) ? isnan(g)
              : isinf(w) ? g == w
                         : !isnan(g) && fabs(g - w) <= atol + rtol * fabs(w);
    if (!ok) {
      printf("MISMATCH %s at %ld: got %.9g want %.9g\n", what, (long)i, g, w);
      fails++;
      return;
    }
  }
}

/* A buffer of n floats whose first element sits `skew` floats past a
 * 64-byte boundary; *base is what to free. */
static float *skewed(int64_t n, int skew, float **base) {
  /* aligned_alloc wants a multiple of the alignment */
  size_t bytes = ((size_t)(n + 32) * sizeof(float) + 63) & ~(size_t)63;
  *base = aligned_alloc(64, bytes);
  for (int64_t i = 0; i < n + 32; i++) (*base)[i] = -7.0f; /* poison */
  return *base + skew;
}

/* The floats just past y must still be poison: tails stay in bounds. */
static void check_tail(const char *what, const float *y, int64_t n) {
  checks++;
  for (int i = 0; i < 16; i++)
    if (y[n + i] != -7.0f) {
      printf("OVERRUN %s: y[%ld] written\n", what, (long)(n + i));
      fails++;
      return;
    }
}

static void run_softmax(cpu_device_t *dev, int64_t rows, int64_t n, int log,
                        int skew) {
  int64_t shape[2] = {rows, n}, st[2] = {n, 1};
  float *bx, *by, *br;
  float *x = skewed(rows * n, 0, &bx), *y = skewed(rows * n, skew, &by),
        *yr = skewed(rows * n, 0, &br);
  fill_rows(x, rows, n, 0);
  bp_softmax_args_t a = {sizeof a, 1, log, tens(x, 2, shape, st),
                         tens(y, 2, shape, st)};
  char what[96];
  snprintf(what, sizeof what, "softmax isa%d t%u %ldx%ld log%d skew%d nt%d",
           dev->isa, dev->threads, (long)rows, (long)n, log, skew,
           dev->tune.nt_min_bytes == 1);
  assert_int_equal(cpu_fast_softmax(dev, &a), BP_OK);
  a.y.ptr = (uint64_t)(uintptr_t)yr;
  cpu_ref_softmax_range(&a, 0, cpu_ref_softmax_tasks(&a));
  compare(what, y, yr, rows * n, 2e-6 + 2e-8 * (double)n, log ? 4e-7 : 1e-37);
  check_tail(what, y, rows * n);
  free(bx), free(by), free(br);
}

/* Layer norm (rms 0) or RMS norm args over [rows, n] x and y; gb: bit 0
 * gamma g, bit 1 beta b (layer norm only). */
static bp_norm_args_t norm_args(float *x, float *y, const int64_t *shape,
                                const int64_t *st, float *g, float *b, int gb,
                                int rms) {
  int64_t ps[1] = {shape[1]}, pst[1] = {1};
  bp_norm_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.eps = 1e-5;
  a.x = tens(x, 2, shape, st);
  a.y = tens(y, 2, shape, st);
  if (gb & 1) a.gamma = tens(g, 1, ps, pst);
  if ((gb & 2) && !rms) a.beta = tens(b, 1, ps, pst);
  return a;
}

static void run_norm(cpu_device_t *dev, int rms, int64_t rows, int64_t n,
                     int skew, int gb) {
  int64_t shape[2] = {rows, n}, st[2] = {n, 1};
  float *bx, *by, *br;
  float *x = skewed(rows * n, 0, &bx), *y = skewed(rows * n, skew, &by),
        *yr = skewed(rows * n, 0, &br);
  float *g = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) g[i] = frand(), b[i] = frand();
  fill_rows(x, rows, n, 1);
  bp_norm_args_t a = norm_args(x, y, shape, st, g, b, gb, rms);
  char what[96];
  snprintf(what, sizeof what, "%s isa%d t%u %ldx%ld skew%d gb%d nt%d",
           rms ? "rms" : "layer", dev->isa, dev->threads, (long)rows, (long)n,
           skew, gb, dev->tune.nt_min_bytes == 1);
  assert_int_equal(rms ? cpu_fast_rms_norm(dev, &a) : cpu_fast_layer_norm(dev, &a),
                   BP_OK);
  a.y.ptr = (uint64_t)(uintptr_t)yr;
  if (rms) cpu_ref_rms_norm_range(&a, 0, cpu_ref_rms_norm_tasks(&a));
  else cpu_ref_layer_norm_range(&a, 0, cpu_ref_layer_norm_tasks(&a));
  compare(what, y, yr, rows * n, 1e-5, 1e-5);
  check_tail(what, y, rows * n);
  free(bx), free(by), free(br), free(g), free(b);
}

static void run_unary(cpu_device_t *dev, bp_unary_op_t op, int64_t n, int skew) {
  int64_t shape[1] = {n}, st[1] = {1};
  float *bx, *by, *br;
  float *x = skewed(n, 0, &bx), *y = skewed(n, skew, &by), *yr = skewed(n, 0, &br);
  static const float sp[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, 90.0f, -120.0f};
  for (int64_t i = 0; i < n; i++) x[i] = i % 11 == 0 ? sp[i / 11 % 8] : frand() * 8;
  bp_unary_args_t a = {sizeof a, op, tens(x, 1, shape, st), tens(y, 1, shape, st)};
  char what[96];
  snprintf(what, sizeof what, "unary%d isa%d t%u n%ld skew%d nt%d", op, dev->isa,
           dev->threads, (long)n, skew, dev->tune.nt_min_bytes == 1);
  assert_int_equal(cpu_fast_unary(dev, &a), BP_OK);
  a.y.ptr = (uint64_t)(uintptr_t)yr;
  cpu_ref_unary_range(&a, 0, cpu_ref_unary_tasks(&a));
  compare(what, y, yr, n, 5e-7, 1e-37); /* a few ulp, as test_cpu_fast_ops */
  check_tail(what, y, n);
  free(bx), free(by), free(br);
}

/* y[rows, n] = a[rows, n] + b, b a full tensor or one row broadcast. */
static void run_add(cpu_device_t *dev, int64_t rows, int64_t n, int bcast,
                    int skew) {
  int64_t shape[2] = {rows, n}, st[2] = {n, 1}, bst[2] = {bcast ? 0 : n, 1};
  float *ba, *bb, *by, *br;
  float *x = skewed(rows * n, 0, &ba), *w = skewed(rows * n, 0, &bb);
  float *y = skewed(rows * n, skew, &by), *yr = skewed(rows * n, 0, &br);
  fill_rows(x, rows, n, 0);
  for (int64_t i = 0; i < rows * n; i++) w[i] = frand();
  bp_binary_args_t a = {sizeof a, BP_BINARY_ADD, tens(x, 2, shape, st),
                        tens(w, 2, shape, bst), tens(y, 2, shape, st)};
  char what[96];
  snprintf(what, sizeof what, "add isa%d t%u %ldx%ld bcast%d skew%d nt%d",
           dev->isa, dev->threads, (long)rows, (long)n, bcast, skew,
           dev->tune.nt_min_bytes == 1);
  assert_int_equal(cpu_fast_binary(dev, &a), BP_OK);
  a.y.ptr = (uint64_t)(uintptr_t)yr;
  cpu_ref_binary_range(&a, 0, cpu_ref_binary_tasks(&a));
  compare(what, y, yr, rows * n, 0, 0);
  check_tail(what, y, rows * n);
  free(ba), free(bb), free(by), free(br);
}

/* Every device of s streams outputs of at least bytes (0: the default). */
static void set_nt(dev_set_t *s, int64_t bytes) {
  for (int d = 0; d < s->n; d++) s->dev[d].tune.nt_min_bytes = bytes;
}

static const int64_t lens[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1031, 4096};

static void sweep(dev_set_t *s) {
  for (int d = 0; d < s->n; d++) {
    cpu_device_t *dev = &s->dev[d];
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
      int64_t n = lens[i], rows = n < 100 ? 37 : 7;
      /* output 0, 5, 10 or 15 floats past a 64-byte line: streamed rows
       * begin with up to 15 normally stored lanes */
      int skew = (int)(i % 4) * 5;
      for (int log = 0; log < 2; log++) run_softmax(dev, rows, n, log, skew);
      for (int rms = 0; rms < 2; rms++)
        run_norm(dev, rms, rows, n, skew, (int)(i % 4));
      run_unary(dev, BP_UNARY_EXP, rows * n, skew);
      run_unary(dev, BP_UNARY_TANH, rows * n, skew);
      run_add(dev, rows, n, 0, skew);
      run_add(dev, rows, n, 1, skew);
    }
    /* rows past the stack scratch, past the cached form (softmax online)
     * and one huge norm row */
    for (int log = 0; log < 2; log++) {
      run_softmax(dev, 3, 4097, log, 2);
      run_softmax(dev, 3, 20011, log, 1);
    }
    run_norm(dev, 0, 2, 300007, 3, 3);
    run_norm(dev, 1, 2, 300007, 2, 1);
  }
}

static void test_streaming_stores(void **state) {
  (void)state;
  dev_set_t s;
  devs_open(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX2 (with FMA and F16C) or AVX-512F on this CPU");
  fails = checks = 0;
  srand(11);
  set_nt(&s, 1);
  sweep(&s);
  printf("streaming stores: %d cases, %d failures\n", checks, fails);
  devs_close(&s);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

static void test_normal_stores(void **state) {
  (void)state;
  dev_set_t s;
  devs_open(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX2 (with FMA and F16C) or AVX-512F on this CPU");
  fails = checks = 0;
  srand(12);
  sweep(&s);
  printf("normal stores: %d cases, %d failures\n", checks, fails);
  devs_close(&s);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* When cpu_fast_nt_ok says yes and no: size, alignment, overlap. */
static void test_nt_decision(void **state) {
  (void)state;
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  float *buf = aligned_alloc(64, 4096 * sizeof(float));
  int64_t sh[1] = {1024}, st[1] = {1};
  bp_plugin_tensor_t x = tens(buf, 1, sh, st), y = tens(buf + 2048, 1, sh, st);
  const bp_plugin_tensor_t *in[1] = {&x};
  assert_false(cpu_fast_nt_ok(&dev, &y, in, 1)); /* the default: 16 MiB */
  dev.tune.nt_min_bytes = 4096;
  assert_true(cpu_fast_nt_ok(&dev, &y, in, 1));  /* 4 KiB, apart */
  dev.tune.nt_min_bytes = 4097;
  assert_false(cpu_fast_nt_ok(&dev, &y, in, 1)); /* too small */
  dev.tune.nt_min_bytes = 1;
  bp_plugin_tensor_t yo = tens(buf + 1000, 1, sh, st);
  assert_false(cpu_fast_nt_ok(&dev, &yo, in, 1)); /* overlaps x's tail */
  assert_false(cpu_fast_nt_ok(&dev, &x, in, 1));  /* in place */
  bp_plugin_tensor_t yodd = y;
  yodd.ptr += 2; /* not f32-aligned */
  assert_false(cpu_fast_nt_ok(&dev, &yodd, in, 1));
  int64_t bsh[2] = {4, 1024}, bst[2] = {0, 1}; /* x broadcast over rows */
  bp_plugin_tensor_t xb = tens(buf, 2, bsh, bst);
  int64_t ysh[2] = {1, 1024}, yst[2] = {1024, 1};
  bp_plugin_tensor_t y2 = tens(buf + 1024, 2, ysh, yst);
  in[0] = &xb;
  assert_true(cpu_fast_nt_ok(&dev, &y2, in, 1)); /* adjacent, not overlapping */
  y2.ptr -= 4;
  assert_false(cpu_fast_nt_ok(&dev, &y2, in, 1)); /* one element shared */
  free(buf);
}

/* In place (y == x) with the threshold at 0: normal stores, right answers. */
static void test_in_place(void **state) {
  (void)state;
  dev_set_t s;
  devs_open(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX2 (with FMA and F16C) or AVX-512F on this CPU");
  fails = checks = 0;
  set_nt(&s, 1);
  int64_t rows = 9, n = 1031, shape[2] = {rows, n}, st[2] = {n, 1};
  float *x = malloc(sizeof(float) * (size_t)(rows * n)),
        *x0 = malloc(sizeof(float) * (size_t)(rows * n)),
        *yr = malloc(sizeof(float) * (size_t)(rows * n));
  for (int d = 0; d < s.n; d++) {
    fill_rows(x0, rows, n, 0);
    memcpy(x, x0, sizeof(float) * (size_t)(rows * n));
    bp_softmax_args_t a = {sizeof a, 1, 0, tens(x, 2, shape, st),
                           tens(x, 2, shape, st)};
    assert_int_equal(cpu_fast_softmax(&s.dev[d], &a), BP_OK);
    a.x.ptr = (uint64_t)(uintptr_t)x0;
    a.y.ptr = (uint64_t)(uintptr_t)yr;
    cpu_ref_softmax_range(&a, 0, cpu_ref_softmax_tasks(&a));
    compare("softmax in place", x, yr, rows * n, 2e-6 + 2e-8 * (double)n, 1e-37);
  }
  free(x), free(x0), free(yr);
  devs_close(&s);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* A row's output does not depend on whether it was written in place or
 * left pending and streamed out during the next row's pass (softmax's
 * cpu_fast_sm_defer_t): identical rows give identical bits wherever they fall
 * in a claimed range; the norms are held to the same. gb: bit 0 gamma,
 * bit 1 beta. */
static void same_rows(cpu_device_t *dev, int op, int gb, int64_t rows, int64_t n) {
  int64_t shape[2] = {rows, n}, st[2] = {n, 1};
  size_t bytes = sizeof(float) * (size_t)((rows * n + 15) / 16 * 16);
  float *x = aligned_alloc(64, bytes), *y = aligned_alloc(64, bytes),
        *g = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) x[i] = frand(), g[i] = frand(), b[i] = frand();
  for (int64_t r = 1; r < rows; r++) memcpy(x + r * n, x, sizeof(float) * (size_t)n);
  static const char *names[4] = {"softmax", "log-softmax", "layer", "rms"};
  if (op < 2) {
    bp_softmax_args_t a = {sizeof a, 1, op, tens(x, 2, shape, st), tens(y, 2, shape, st)};
    assert_int_equal(cpu_fast_softmax(dev, &a), BP_OK);
  } else {
    bp_norm_args_t a = norm_args(x, y, shape, st, g, b, gb, op == 3);
    assert_int_equal(op == 3 ? cpu_fast_rms_norm(dev, &a) : cpu_fast_layer_norm(dev, &a), BP_OK);
  }
  checks++;
  for (int64_t r = 1; r < rows; r++)
    if (memcmp(y + r * n, y, sizeof(float) * (size_t)n) != 0) {
      if (fails++ < 5)
        printf("%s gb%d isa%d t%u %ldx%ld nt%d: row %ld differs from row 0\n", names[op], gb,
               dev->isa, dev->threads, (long)rows, (long)n, dev->tune.nt_min_bytes == 1, (long)r);
      break;
    }
  free(x), free(y), free(g), free(b);
}

static void test_deferred_rows_same_bits(void **state) {
  (void)state;
  dev_set_t s;
  devs_open(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX2 (with FMA and F16C) or AVX-512F on this CPU");
  fails = checks = 0;
  srand(13);
  static const int64_t ns[] = {33, 1000, 1024, 4101};
  for (int nt = 0; nt < 2; nt++) {
    set_nt(&s, nt ? 1 : 0); /* 0: the default */
    for (int d = 0; d < s.n; d++)
      for (int op = 0; op < 4; op++)
        for (int gb = 0; gb < (op < 2 ? 1 : 4); gb++)
          for (int i = 0; i < 4; i++) same_rows(&s.dev[d], op, gb, 70, ns[i]);
  }
  printf("deferred rows: %d cases, %d failures\n", checks, fails);
  devs_close(&s);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nt_decision),
      cmocka_unit_test(test_streaming_stores),
      cmocka_unit_test(test_normal_stores),
      cmocka_unit_test(test_in_place),
      cmocka_unit_test(test_deferred_rows_same_bits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
