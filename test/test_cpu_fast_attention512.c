/*
 * test_cpu_fast_attention512.c — the FlashAttention-2 style AVX-512 kernel
 * (plugins/cpu/fast/attention/attention_avx512.c), called directly so that
 * a decline cannot pass unseen, against the plugin's scalar double
 * reference (ref/ref_attention.c), with 1 and 2 threads. The cases sit on
 * the kernel's block boundaries: sequence lengths on either side of the
 * query block (48) and the key block (128) and of the micro-kernel's tile
 * (12 rows, 32 keys); Sq != Skv with the bottom-right causal mask (rows
 * that see no key give zeros); grouped-query heads; Dv != D; strided and
 * permuted views; scores large enough that the running max moves a lot
 * between key blocks (the rescale matters); NaN and inf inputs.
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
#include "plugins/cpu/fast/gemm/gemm.h"
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

typedef bp_status_t (*att_fn)(cpu_device_t *dev, const bp_attention_args_t *a);

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
static bp_status_t run_kernel(cpu_device_t *dev, const att_case_t *c, att_fn fn) {
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
  bp_status_t st = fn(dev, &a);
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

/* The AVX-512 level with 1 and 2 threads; none without AVX-512. */
static void devs_open_avx512(dev_set_t *s) {
  const cpu_features_t *f = cpu_features_get();
  s->n = 0;
  if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq)
    devs_open_levels(s, BP_ISA_AVX512, BP_ISA_AVX512);
}

static void run_all(dev_set_t *s, att_case_t c) {
  for (int i = 0; i < s->n; i++)
    if (run_kernel(&s->dev[i], &c, cpu_fast_attention_avx512) != BP_OK) {
      printf("status != BP_OK for dt%d Sq%ld Skv%ld D%ld\n", c.dt, (long)c.Sq, (long)c.Skv,
             (long)c.D);
      fails++;
    }
}

static void finish(const char *what) {
  printf("attention avx512 %s: %d cases, %d failures\n", what, checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* Sequence lengths around the query block (48), the key block (128) and
 * the tile (12 x 32), Sq == Skv and not, both masks, dense. */
static void test_fa_block_boundaries(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  srand(11);
  fails = checks = 0;
  static const int64_t S[] = {1, 11, 12, 13, 31, 33, 47, 48, 49, 96, 127, 128, 129, 200, 257};
  for (size_t x = 0; x < sizeof S / sizeof S[0]; x++)
    for (int causal = 0; causal <= 1; causal++) {
      run_all(&s, (att_case_t){1, 2, 2, S[x], S[x], 64, 64, causal, LAYOUT_DENSE, 0, BP_F32});
      /* Sq != Skv: the causal mask aligned to the bottom right */
      int64_t other = S[(x + 5) % (sizeof S / sizeof S[0])];
      run_all(&s, (att_case_t){1, 2, 1, S[x], other, 32, 48, causal, LAYOUT_DENSE, 0, BP_F32});
      run_all(&s, (att_case_t){1, 2, 1, other, S[x], 40, 24, causal, LAYOUT_DENSE, 0, BP_F32});
    }
  devs_close(&s);
  finish("block boundaries");
}

/* Grouped-query heads, Dv != D (both ways, odd and past one tile), head
 * dims 1 to 160, strided and permuted views, two batches. */
static void test_fa_heads_dims_layouts(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  srand(12);
  fails = checks = 0;
  static const int64_t shapes[][7] = {
      /* B, Hq, Hkv, Sq, Skv, D, Dv */
      {1, 8, 2, 100, 100, 64, 64}, {2, 6, 3, 65, 130, 128, 128}, {1, 4, 1, 50, 300, 64, 33},
      {1, 3, 1, 140, 90, 1, 1},    {2, 2, 2, 49, 49, 7, 5},      {1, 2, 1, 129, 129, 160, 96},
      {1, 4, 4, 3, 260, 64, 64},   {1, 1, 1, 97, 97, 24, 128},   {1, 2, 2, 5, 0, 8, 8},
  };
  for (size_t x = 0; x < sizeof shapes / sizeof shapes[0]; x++)
    for (int layout = 0; layout < LAYOUT_COUNT; layout++)
      for (int causal = 0; causal <= 1; causal++) {
        const int64_t *p = shapes[x];
        run_all(&s,
                (att_case_t){p[0], p[1], p[2], p[3], p[4], p[5], p[6], causal, layout, 0, BP_F32});
      }
  devs_close(&s);
  finish("heads, dims, layouts");
}

/* Scores of +-24^2 D: the running max jumps between key blocks, so a
 * missing or wrong rescale of the output and the sum shows; NaN queries
 * and keys, NaN / inf values (hidden from most rows of the diagonal
 * tile), and Sq > Skv causal rows that see nothing. */
static void test_fa_special(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  srand(13);
  fails = checks = 0;
  for (int sp = SPECIAL_NAN_Q; sp <= SPECIAL_NAN_V; sp++) {
    run_all(&s, (att_case_t){1, 2, 1, 70, 70, 64, 64, 1, 0, sp, BP_F32});
    run_all(&s, (att_case_t){1, 2, 2, 45, 300, 40, 40, 1, 1, sp, BP_F32});
    run_all(&s, (att_case_t){1, 1, 1, 33, 129, 72, 72, 0, 2, sp, BP_F32});
    run_all(&s, (att_case_t){1, 2, 1, 200, 200, 16, 16, 1, 0, sp, BP_F32});
  }
  run_all(&s, (att_case_t){1, 2, 1, 100, 37, 64, 64, 1, 0, 0, BP_F32});
  devs_close(&s);
  finish("special values");
}

/* Causal with Sq > Skv: the first Sq - Skv rows see no key and are zeros
 * (checked as zeros, not only as the reference), the rest finite. */
static void test_fa_masked_rows_zero(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  att_buf_t q = buf_make(BP_F32, 1, 1, 60, 8, 0, -1, 1);
  att_buf_t k = buf_make(BP_F32, 1, 1, 5, 8, 0, -1, 1);
  att_buf_t v = buf_make(BP_F32, 1, 1, 5, 8, 0, -1, 1);
  att_buf_t o = buf_make(BP_F32, 1, 1, 60, 8, 0, 0, 0);
  for (int i = 0; i < s.n; i++) {
    for (int64_t x = 0; x < o.n; x++) ((float *)o.p)[x] = NAN;
    bp_attention_args_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.causal = 1;
    a.scale = 0.5;
    a.q = q.t, a.k = k.t, a.v = v.t, a.out = o.t;
    assert_int_equal(cpu_fast_attention_avx512(&s.dev[i], &a), BP_OK);
    for (int64_t x = 0; x < 60 * 8; x++) {
      float y = ((float *)o.p)[x];
      if (x < 55 * 8)
        assert_true(y == 0.0f);
      else
        assert_false(isnan(y));
    }
  }
  free(q.p), free(k.p), free(v.p), free(o.p);
  devs_close(&s);
}

/* A query whose every score is -inf (the reference's max is -inf, and
 * e^(-inf - -inf) NaN) gives a NaN row, over several key blocks; the
 * other rows stay finite. */
static void test_fa_neg_inf_row(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  att_buf_t q = buf_make(BP_F32, 1, 1, 20, 16, 0, -1, 1);
  att_buf_t k = buf_make(BP_F32, 1, 1, 300, 16, 0, 0.5, 1);
  att_buf_t v = buf_make(BP_F32, 1, 1, 300, 16, 0, -1, 1);
  att_buf_t o = buf_make(BP_F32, 1, 1, 20, 16, 0, 0, 0);
  ((float *)q.p)[3 * 16] = -INFINITY; /* row 3: every score -inf */
  for (int i = 0; i < s.n; i++)
    for (int causal = 0; causal <= 1; causal++) {
      bp_attention_args_t a;
      memset(&a, 0, sizeof a);
      a.struct_size = sizeof a;
      a.causal = causal;
      a.scale = 0.25;
      a.q = q.t, a.k = k.t, a.v = v.t, a.out = o.t;
      assert_int_equal(cpu_fast_attention_avx512(&s.dev[i], &a), BP_OK);
      for (int64_t x = 0; x < 20 * 16; x++)
        assert_true(x / 16 == 3 ? isnan(((float *)o.p)[x]) : isfinite(((float *)o.p)[x]));
    }
  free(q.p), free(k.p), free(v.p), free(o.p);
  devs_close(&s);
}

/* Declines what it does not cover (the next kernel runs), and the
 * dispatcher picks it at the AVX-512 level for f32. */
static void test_fa_declines(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  fails = checks = 0;
  att_case_t c = {1, 2, 2, 20, 20, 16, 16, 1, 0, 0, BP_BF16};
  assert_int_equal(run_kernel(&s.dev[0], &c, cpu_fast_attention_avx512), BP_ERR_UNIMPLEMENTED);
  c.dt = BP_F32;
  c.Hkv = 3; /* Hq not a multiple of Hkv */
  c.Hq = 4;
  assert_int_equal(run_kernel(&s.dev[0], &c, cpu_fast_attention_avx512), BP_ERR_UNIMPLEMENTED);
  c.Hq = 6;
  assert_int_equal(run_kernel(&s.dev[1], &c, cpu_fast_attention), BP_OK);
  assert_int_equal(fails, 0);
  devs_close(&s);
}

/* One thread is timed by its CPU time, which the other processes of a
 * shared machine disturb much less than the wall clock. */
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Not a test: BP_FAST_BENCH=1 prints the kernel's time on one thread
 * (CPU time, best of 5) for B1 H8, S 1024 and 2048, D 64 and 128, with
 * and without the causal mask. */
static void bench_fa_avx512(void **state) {
  (void)state;
  dev_set_t s;
  if (!getenv("BP_FAST_BENCH")) TEST_SKIP_CASE("benchmark: set BP_FAST_BENCH=1 to run it");
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  for (int64_t S = 1024; S <= 2048; S *= 2)
    for (int64_t D = 64; D <= 128; D *= 2)
      for (int causal = 1; causal >= 0; causal--) {
        att_buf_t q = buf_make(BP_F32, 1, 8, S, D, 0, -1, 1);
        att_buf_t k = buf_make(BP_F32, 1, 8, S, D, 0, -1, 1);
        att_buf_t v = buf_make(BP_F32, 1, 8, S, D, 0, -1, 1);
        att_buf_t o = buf_make(BP_F32, 1, 8, S, D, 0, 0, 0);
        bp_attention_args_t a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.causal = causal;
        a.scale = 1.0 / sqrt((double)D);
        a.q = q.t, a.k = k.t, a.v = v.t, a.out = o.t;
        double best = 1e9;
        for (int rep = 0; rep < 5; rep++) {
          double t0 = cpu_now();
          assert_int_equal(cpu_fast_attention_avx512(&s.dev[0], &a), BP_OK);
          double t = cpu_now() - t0;
          best = t < best ? t : best;
        }
        double flops = 4.0 * 8 * (double)S * (double)S * (double)D * (causal ? 0.5 : 1.0);
        printf("avx512 attention B1 H8 S%ld D%ld%s, 1 thread: %.2f ms, %.1f GFLOP/s\n", (long)S,
               (long)D, causal ? " causal" : "", best * 1e3, flops / best * 1e-9);
        free(q.p), free(k.p), free(v.p), free(o.p);
      }
  devs_close(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fa_block_boundaries), cmocka_unit_test(test_fa_heads_dims_layouts),
      cmocka_unit_test(test_fa_special),          cmocka_unit_test(test_fa_masked_rows_zero),
      cmocka_unit_test(test_fa_neg_inf_row),      cmocka_unit_test(test_fa_declines),
      cmocka_unit_test(bench_fa_avx512),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
