/*
 * test_cpu_fast_attention.c — the "cpu" device's fused attention kernels
 * (plugins/cpu/fast/attention/) against the plugin's scalar double
 * reference (ref/ref_attention.c), both linked straight from the plugin's
 * objects so the ISA level and thread count can be forced. Covers the AVX2
 * kernel: odd and block-straddling sequence lengths, Sq != Skv with the
 * bottom-right causal mask (including rows that see no key), grouped-query
 * heads (stacked into one block's lanes when Sq is short), head dims 1 to 128 (D != Dv), permuted
 * and strided layouts, f32, f16 and bf16, NaN rows and large scores (no spurious NaN).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/ref/ref.h"
#include "test/cpu_fast_devs.h"
#include "test/skip.h"

static int fails, checks;

enum { LAYOUT_DENSE, LAYOUT_BSHD, LAYOUT_KV_TRANSPOSED, LAYOUT_COUNT };
enum { SPECIAL_NONE, SPECIAL_NAN_Q, SPECIAL_LARGE, SPECIAL_NAN_K, SPECIAL_NAN_V };

typedef struct att_case {
  int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
  int causal, layout, special;
  bp_dtype_t dt;
} att_case_t;

typedef struct att_buf {
  bp_plugin_tensor_t t;
  void *p;
  int64_t n; /* elements of storage */
} att_buf_t;

/* A [d0, d1, d2, d3] tensor: dense, or with dims 1 and 2 swapped in memory
 * ([B, S, H, D]), or with dims 2 and 3 swapped (last dim strided). */
static att_buf_t buf_make(bp_dtype_t dt, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int layout,
                          double lo, double hi) {
  att_buf_t b;
  memset(&b, 0, sizeof b);
  int64_t shape[4] = {d0, d1, d2, d3}, st[4];
  int order[4] = {0, 1, 2, 3}; /* outermost to innermost in memory */
  if (layout == LAYOUT_BSHD) order[1] = 2, order[2] = 1;
  if (layout == LAYOUT_KV_TRANSPOSED) order[2] = 3, order[3] = 2;
  int64_t s = 1;
  for (int x = 3; x >= 0; x--) st[order[x]] = s, s *= shape[order[x]];
  b.n = s;
  b.p = malloc(cpu_dtype_size(dt) * (size_t)(s + 1));
  for (int64_t i = 0; i < s; i++)
    cpu_store(b.p, dt, i, lo + (hi - lo) * (rand() % 10001) / 10000.0);
  b.t.ptr = (uint64_t)(uintptr_t)b.p;
  b.t.dtype = dt;
  b.t.rank = 4;
  for (int x = 0; x < 4; x++) b.t.shape[x] = shape[x], b.t.strides[x] = st[x];
  return b;
}

static int64_t at4(const bp_plugin_tensor_t *t, int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * t->strides[0] + b * t->strides[1] + c * t->strides[2] + d * t->strides[3];
}

static void tol_for(bp_dtype_t dt, double *rtol, double *atol) {
  *rtol = dt == BP_F32 ? 1e-4 : dt == BP_F16 ? 4e-3 : 2e-2;
  *atol = dt == BP_F32 ? 2e-5 : dt == BP_F16 ? 4e-3 : 2e-2;
}

/* Runs one case on dev and on the reference; returns the fast status. */
static bp_status_t run_case(cpu_device_t *dev, const att_case_t *c) {
  double amp = c->special == SPECIAL_LARGE ? 24.0 : 2.0;
  /* k and v transposed in memory: the kernel widens them per key block */
  int kvl = c->layout, ql = c->layout == LAYOUT_KV_TRANSPOSED ? 0 : c->layout;
  att_buf_t q = buf_make(c->dt, c->B, c->Hq, c->Sq, c->D, ql, -amp, amp);
  att_buf_t k = buf_make(c->dt, c->B, c->Hkv, c->Skv, c->D, kvl, -amp, amp);
  att_buf_t v = buf_make(c->dt, c->B, c->Hkv, c->Skv, c->Dv, kvl, -2, 2);
  att_buf_t o = buf_make(c->dt, c->B, c->Hq, c->Sq, c->Dv, ql, 0, 0);
  att_buf_t r = buf_make(c->dt, c->B, c->Hq, c->Sq, c->Dv, ql, 0, 0);
  for (int64_t i = 0; i < o.n; i++) cpu_store(o.p, c->dt, i, NAN);
  if (c->special == SPECIAL_NAN_Q && c->Sq > 1 && c->D > 0)
    cpu_store(q.p, c->dt, at4(&q.t, 0, 0, c->Sq / 2, c->D - 1), NAN);
  if (c->special == SPECIAL_NAN_K && c->Skv > 0 && c->D > 0)
    cpu_store(k.p, c->dt, at4(&k.t, 0, 0, c->Skv - 1, 0), NAN);
  if (c->special == SPECIAL_NAN_V && c->Skv > 2) { /* hidden from most rows */
    cpu_store(v.p, c->dt, at4(&v.t, 0, 0, c->Skv - 1, 0), NAN);
    cpu_store(v.p, c->dt, at4(&v.t, 0, 0, c->Skv - 2, c->Dv - 1), INFINITY);
  }
  bp_attention_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.causal = c->causal;
  a.scale = c->D > 0 ? 1.0 / sqrt((double)c->D) : 1.0;
  if (c->special == SPECIAL_LARGE) a.scale = 1.0;
  a.q = q.t, a.k = k.t, a.v = v.t, a.out = o.t;
  bp_status_t st = cpu_fast_attention(dev, &a);
  checks++;
  if (st == BP_OK) {
    a.out = r.t;
    int64_t tasks = cpu_ref_attention_tasks(&a);
    assert_true(tasks >= 0);
    assert_int_equal(cpu_ref_attention_range(&a, 0, tasks), BP_OK);
    double rtol, atol;
    tol_for(c->dt, &rtol, &atol);
    /* f32 scores carry a rounding error of about eps * D * amp^2, which
     * the exponential turns into a relative error of the weights */
    atol += 4e-8 * (double)c->D * amp * amp;
    for (int64_t b = 0; b < c->B; b++)
      for (int64_t h = 0; h < c->Hq; h++)
        for (int64_t i = 0; i < c->Sq; i++)
          for (int64_t e = 0; e < c->Dv; e++) {
            int64_t x = at4(&o.t, b, h, i, e);
            double g = cpu_load(o.p, c->dt, x), w = cpu_load(r.p, c->dt, x);
            bool ok = isnan(w)   ? isnan(g)
                      : isinf(w) ? g == w
                                 : !isnan(g) && fabs(g - w) <= atol + rtol * fabs(w);
            if (ok) continue;
            printf("MISMATCH dt%d isa%d thr%u B%ld Hq%ld Hkv%ld Sq%ld Skv%ld "
                   "D%ld Dv%ld causal%d layout%d special%d at [%ld,%ld,%ld,%ld]:"
                   " got %.9g want %.9g\n",
                   c->dt, dev->isa, dev->threads, (long)c->B, (long)c->Hq, (long)c->Hkv,
                   (long)c->Sq, (long)c->Skv, (long)c->D, (long)c->Dv, c->causal, c->layout,
                   c->special, (long)b, (long)h, (long)i, (long)e, g, w);
            fails++;
            goto out;
          }
  }
out:
  free(q.p), free(k.p), free(v.p), free(o.p), free(r.p);
  return st;
}

/* The AVX2 level with 1 and 2 threads (above it the AVX-512 kernel would
 * be chosen); none without AVX2 + FMA + F16C. */
static void devs_open_avx2(dev_set_t *s) { devs_open_levels(s, BP_ISA_AVX2, BP_ISA_AVX2); }

static void run_all(dev_set_t *s, att_case_t c) {
  for (int i = 0; i < s->n; i++)
    if (run_case(&s->dev[i], &c) != BP_OK) {
      printf("status != BP_OK for dt%d Sq%ld Skv%ld D%ld\n", c.dt, (long)c.Sq, (long)c.Skv,
             (long)c.D);
      fails++;
    }
}

static const bp_dtype_t dts[] = {BP_F32, BP_F16, BP_BF16};

/* The shapes the brief of the kernel names, each dtype, both mask modes. */
static void test_attention_avx2_shapes(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx2(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX2 with FMA and F16C on this CPU");
  srand(1);
  fails = checks = 0;
  static const int64_t shapes[][7] = {
      /* B, Hq, Hkv, Sq, Skv, D, Dv */
      {1, 2, 2, 1, 1, 64, 64},
      {1, 2, 2, 7, 7, 64, 64},
      {1, 2, 2, 33, 33, 64, 64},
      {1, 1, 1, 65, 65, 128, 128},
      {2, 3, 3, 129, 129, 72, 72},
      {1, 2, 2, 100, 100, 40, 40},
      {1, 4, 1, 31, 97, 64, 64},
      {1, 6, 2, 97, 31, 64, 64},
      {1, 4, 2, 1, 200, 64, 64},
      {1, 2, 1, 130, 70, 16, 24},
      {2, 2, 1, 17, 250, 7, 5},
      {1, 1, 1, 40, 40, 1, 1},
      {1, 2, 2, 64, 64, 3, 130},
      {1, 1, 1, 5, 0, 8, 8},
      /* short Sq: the query heads of a kv head share a block's lanes */
      {1, 8, 2, 3, 40, 64, 64},
      {1, 12, 1, 5, 77, 72, 72},
      {2, 6, 2, 7, 7, 40, 40},
      {1, 4, 1, 9, 3, 16, 16},
      {1, 16, 1, 1, 300, 128, 128},
  };
  for (size_t x = 0; x < sizeof shapes / sizeof shapes[0]; x++)
    for (int d = 0; d < 3; d++)
      for (int causal = 0; causal <= 1; causal++) {
        const int64_t *p = shapes[x];
        att_case_t c = {p[0], p[1],   p[2],         p[3],         p[4],  p[5],
                        p[6], causal, LAYOUT_DENSE, SPECIAL_NONE, dts[d]};
        run_all(&s, c);
      }
  devs_close(&s);
  printf("attention avx2 shapes: %d cases, %d failures\n", checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* Random shapes, layouts and dtypes. */
static void test_attention_avx2_random(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx2(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX2 with FMA and F16C on this CPU");
  srand(2);
  fails = checks = 0;
  static const int64_t S[] = {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 161};
  static const int64_t Dim[] = {1, 5, 8, 40, 64, 72, 80, 128};
  for (int it = 0; it < 80; it++) {
    int64_t hk = 1 + rand() % 2, grp = 1 + rand() % 3;
    att_case_t c = {1 + rand() % 2,  hk * grp,       hk,
                    S[rand() % 13],  S[rand() % 13], Dim[rand() % 8],
                    Dim[rand() % 8], rand() % 2,     rand() % LAYOUT_COUNT,
                    SPECIAL_NONE,    dts[rand() % 3]};
    run_all(&s, c);
  }
  devs_close(&s);
  printf("attention avx2 random: %d cases, %d failures\n", checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* Rows that see no key are zeros; a NaN in a query makes that row NaN and
 * nothing else; a NaN key, or a NaN / inf value, poisons exactly the rows
 * that see it; large scores (softmax near one-hot) stay finite. */
static void test_attention_avx2_special(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx2(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX2 with FMA and F16C on this CPU");
  srand(3);
  fails = checks = 0;
  for (int d = 0; d < 3; d++) {
    for (int sp = SPECIAL_NAN_Q; sp <= SPECIAL_NAN_V; sp++) {
      run_all(&s, (att_case_t){1, 2, 1, 70, 70, 64, 64, 1, 0, sp, dts[d]});
      run_all(&s, (att_case_t){1, 2, 2, 45, 90, 40, 40, 1, 1, sp, dts[d]});
      run_all(&s, (att_case_t){1, 1, 1, 33, 129, 72, 72, 0, 2, sp, dts[d]});
      run_all(&s, (att_case_t){1, 6, 2, 6, 20, 32, 32, 1, 1, sp, dts[d]});
    }
    /* Sq > Skv causal: rows 0 .. Sq - Skv - 1 see nothing */
    run_all(&s, (att_case_t){1, 2, 1, 100, 37, 64, 64, 1, 0, 0, dts[d]});
  }
  /* the zeros explicitly, not only "as the reference" */
  att_buf_t q = buf_make(BP_F32, 1, 1, 9, 8, 0, -1, 1);
  att_buf_t k = buf_make(BP_F32, 1, 1, 3, 8, 0, -1, 1);
  att_buf_t v = buf_make(BP_F32, 1, 1, 3, 8, 0, -1, 1);
  att_buf_t o = buf_make(BP_F32, 1, 1, 9, 8, 0, 0, 0);
  for (int64_t i = 0; i < o.n; i++) ((float *)o.p)[i] = NAN;
  bp_attention_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.causal = 1;
  a.scale = 0.5;
  a.q = q.t, a.k = k.t, a.v = v.t, a.out = o.t;
  assert_int_equal(cpu_fast_attention(&s.dev[1], &a), BP_OK);
  for (int64_t i = 0; i < 9 * 8; i++) {
    float x = ((float *)o.p)[i];
    if (i < 6 * 8)
      assert_true(x == 0.0f);
    else
      assert_false(isnan(x));
  }
  free(q.p), free(k.p), free(v.p), free(o.p);
  devs_close(&s);
  printf("attention avx2 special: %d cases, %d failures\n", checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* Below AVX2, and for f64, the fast path declines and the reference runs. */
static void test_attention_dispatch(void **state) {
  (void)state;
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  dev.isa = BP_ISA_SCALAR;
  dev.threads = 1;
  fails = checks = 0;
  att_case_t c = {1, 1, 1, 4, 4, 8, 8, 1, 0, 0, BP_F32};
  assert_int_equal(run_case(&dev, &c), BP_ERR_UNIMPLEMENTED);
  const cpu_features_t *f = cpu_features_get();
  if (!(f->avx2 && f->fma && f->f16c)) TEST_SKIP_CASE("no AVX2 with FMA and F16C on this CPU");
  dev.isa = BP_ISA_AVX2;
  c.dt = BP_F64;
  assert_int_equal(run_case(&dev, &c), BP_ERR_UNIMPLEMENTED);
  c.dt = BP_BF16;
  dev.isa = BP_ISA_BEST; /* AVX-512 declines bf16, AVX2 takes it */
  assert_int_equal(run_case(&dev, &c), BP_OK);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* One thread is timed by its CPU time, which the other processes of a
 * shared machine disturb much less than the wall clock. */
static double now(clockid_t clk) {
  struct timespec t;
  clock_gettime(clk, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Not a test: BP_FAST_BENCH=1 (one thread, CPU time) or 2 (two threads,
 * wall clock) prints the AVX2 kernel's causal timings (best of 5) for
 * B1 H8 D64. */
static void bench_attention_avx2(void **state) {
  (void)state;
  dev_set_t s;
  if (!getenv("BP_FAST_BENCH")) TEST_SKIP_CASE("benchmark: set BP_FAST_BENCH=1 to run it");
  devs_open_avx2(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX2 with FMA and F16C on this CPU");
  int nt = getenv("BP_FAST_BENCH")[0] == '1' ? 1 : 2;
  for (int64_t S = 512; S <= 2048; S *= 2) {
    att_buf_t q = buf_make(BP_F32, 1, 8, S, 64, 0, -1, 1);
    att_buf_t k = buf_make(BP_F32, 1, 8, S, 64, 0, -1, 1);
    att_buf_t v = buf_make(BP_F32, 1, 8, S, 64, 0, -1, 1);
    att_buf_t o = buf_make(BP_F32, 1, 8, S, 64, 0, 0, 0);
    bp_attention_args_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.causal = 1;
    a.scale = 0.125;
    a.q = q.t, a.k = k.t, a.v = v.t, a.out = o.t;
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
      clockid_t clk = nt == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
      double t0 = now(clk);
      assert_int_equal(cpu_fast_attention(&s.dev[nt - 1], &a), BP_OK);
      double t = now(clk) - t0;
      best = t < best ? t : best;
    }
    printf("avx2 attention causal B1 H8 S%ld D64, %d thread(s): %.2f ms, "
           "%.1f GFLOP/s\n",
           (long)S, nt, best * 1e3, 2.0 * 8 * S * S * 128 / 2 / best * 1e-9);
    free(q.p), free(k.p), free(v.p), free(o.p);
  }
  devs_close(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attention_avx2_shapes),  cmocka_unit_test(test_attention_avx2_random),
      cmocka_unit_test(test_attention_avx2_special), cmocka_unit_test(test_attention_dispatch),
      cmocka_unit_test(bench_attention_avx2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
