/*
 * test_cpu_fast_attention512_lowp.c — the AVX-512 attention kernel
 * (plugins/cpu/fast/attention/attention_avx512.c) on bf16 and f16
 * tensors, the route a CPU with AVX-512 but no AMX takes for them. The
 * kernel is called directly (a decline fails the case) with 1 and 2
 * threads, against the plugin's scalar double reference
 * (ref/ref_attention.c) run with an f64 output: every element must be the
 * exact result rounded to the output's dtype, within half an ulp of it
 * plus the f32 kernel's own error (test/attention_harness.c's f32
 * tolerance), so a key block left out, a value row widened wrongly or an
 * output rounded the wrong way fails where the harness's bf16 tolerance
 * (2e-2) would let it through. Cases: sequence lengths on the query block
 * (48), key block (128) and tile (12 x 32) boundaries, Sq != Skv with the
 * bottom-right causal mask, grouped-query heads, Dv != D, odd head dims,
 * permuted and strided views, the masks of ABI 1.5, mixed dtypes; NaN and
 * inf inputs through the harness; and the dispatcher choosing this kernel
 * for bf16 and f16 at the AVX-512 level on a CPU without AMX.
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
#include "plugins/cpu/fast/attention/attention.h"
#include "plugins/cpu/fast/gemm/gemm.h"
#include "plugins/cpu/ref/ref.h"
#include "test/attention_harness.h"
#include "test/cpu_fast_devs.h"
#include "test/skip.h"

static att_harness_t h = {.fn = cpu_fast_attention_avx512, .name = "avx512-lowp"};

/* The AVX-512 level with 1 and 2 threads; none without AVX-512. */
static void devs_open_avx512(dev_set_t *s) {
  const cpu_features_t *f = cpu_features_get();
  s->n = 0;
  if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->fma)
    devs_open_levels(s, BP_ISA_AVX512, BP_ISA_AVX512);
}

/* A case: shapes as att_case_t, and a dtype per tensor (the bias, when a
 * mask adds one, is q's). */
typedef struct lp_case {
  int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
  int causal, layout;
  bp_dtype_t dq, dk, dv, dout;
} lp_case_t;

/* Half an ulp of x in dt (0 for f32: the f32 tolerance covers it). */
static double half_ulp(double x, bp_dtype_t dt) {
  if (dt == BP_F32 || x == 0 || !isfinite(x)) return 0;
  int e, p = dt == BP_BF16 ? 7 : 10;
  frexp(x, &e);                         /* |x| = m 2^e, m in [0.5, 1) */
  if (dt == BP_F16 && e < -13) e = -13; /* subnormal: a fixed ulp of 2^-24 */
  return ldexp(1.0, e - 2 - p);
}

static int fails, checks;

/* Runs c (masks m, NULL: none) through the kernel on dev and through the
 * reference into f64, and checks every element as the file comment says. */
static void lp_run(cpu_device_t *dev, const lp_case_t *c, const att_masks_t *m) {
  att_case_t ac = {c->B, c->Hq, c->Hkv, c->Sq, c->Skv, c->D, c->Dv, c->causal, c->layout, 0, c->dq};
  int kvl = c->layout, ql = c->layout == LAYOUT_KV_TRANSPOSED ? 0 : c->layout;
  const double amp = 2.0;
  att_buf_t q = att_buf_make(c->dq, c->B, c->Hq, c->Sq, c->D, ql, -amp, amp);
  att_buf_t k = att_buf_make(c->dk, c->B, c->Hkv, c->Skv, c->D, kvl, -amp, amp);
  att_buf_t v = att_buf_make(c->dv, c->B, c->Hkv, c->Skv, c->Dv, kvl, -2, 2);
  att_buf_t o = att_buf_make(c->dout, c->B, c->Hq, c->Sq, c->Dv, ql, 0, 0);
  att_buf_t r = att_buf_make(BP_F64, c->B, c->Hq, c->Sq, c->Dv, ql, 0, 0);
  for (int64_t i = 0; i < o.n; i++) cpu_store(o.p, c->dout, i, NAN); /* unwritten shows */
  bp_attention_args_t a = att_args(&q, &k, &v, &o, c->causal, 1.0 / sqrt((double)c->D));
  att_buf_t masks[3];
  att_masks_make(&ac, m, &a, masks);
  bp_status_t st = cpu_fast_attention_avx512(dev, &a);
  checks++;
  if (st != BP_OK) {
    printf("avx512-lowp: status %d for Sq%ld Skv%ld D%ld\n", st, (long)c->Sq, (long)c->Skv,
           (long)c->D);
    fails++;
  } else {
    a.out = r.t;
    int64_t tasks = cpu_ref_attention_tasks(&a);
    assert_true(tasks >= 0);
    assert_int_equal(cpu_ref_attention_range(&a, 0, tasks), BP_OK);
  }
  for (int64_t b = 0; st == BP_OK && b < c->B; b++)
    for (int64_t hd = 0; hd < c->Hq; hd++)
      for (int64_t i = 0; i < c->Sq; i++)
        for (int64_t e = 0; e < c->Dv; e++) {
          int64_t x = att_at4(&o.t, b, hd, i, e);
          double g = cpu_load(o.p, c->dout, x), w = ((double *)r.p)[x];
          double tol =
              half_ulp(w, c->dout) + 1e-4 * fabs(w) + 2e-5 + 4e-8 * (double)c->D * amp * amp;
          if (isnan(w) ? isnan(g) : !isnan(g) && fabs(g - w) <= tol) continue;
          printf("MISMATCH avx512-lowp thr%u dt q%d k%d v%d o%d B%ld Hq%ld Hkv%ld Sq%ld Skv%ld "
                 "D%ld Dv%ld causal%d layout%d window%d kv_lens%d bias%d alibi%d at "
                 "[%ld,%ld,%ld,%ld]: got %.9g want %.9g\n",
                 dev->threads, c->dq, c->dk, c->dv, c->dout, (long)c->B, (long)c->Hq, (long)c->Hkv,
                 (long)c->Sq, (long)c->Skv, (long)c->D, (long)c->Dv, c->causal, c->layout,
                 m ? m->window : 0, m ? m->kv_lens : 0, m ? m->bias : 0, m ? m->alibi : 0, (long)b,
                 (long)hd, (long)i, (long)e, g, w);
          fails++;
          b = c->B, hd = c->Hq, i = c->Sq; /* one line a case */
          break;
        }
  free(q.p), free(k.p), free(v.p), free(o.p), free(r.p);
  for (int x = 0; x < 3; x++) free(masks[x].p);
}

static void lp_run_all(dev_set_t *s, lp_case_t c, const att_masks_t *m) {
  for (int i = 0; i < s->n; i++) lp_run(&s->dev[i], &c, m);
}

static void lp_finish(const char *what) {
  printf("attention avx512-lowp %s: %d cases, %d failures\n", what, checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0);
  fails = checks = 0;
}

static const bp_dtype_t lowp[] = {BP_BF16, BP_F16};

/* Sequence lengths around the query block (48), the key block (128) and
 * the tile (12 x 32), Sq == Skv and not, both masks, dense. */
static void test_lowp_block_boundaries(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) with FMA on this CPU");
  srand(21);
  static const int64_t S[] = {1, 12, 13, 33, 47, 48, 49, 127, 128, 129, 257};
  size_t n = sizeof S / sizeof S[0];
  for (int t = 0; t < 2; t++)
    for (size_t x = 0; x < n; x++)
      for (int causal = 0; causal <= 1; causal++) {
        bp_dtype_t dt = lowp[t];
        int64_t other = S[(x + 4) % n];
        lp_run_all(&s, (lp_case_t){1, 2, 2, S[x], S[x], 64, 64, causal, 0, dt, dt, dt, dt}, NULL);
        lp_run_all(&s, (lp_case_t){1, 2, 1, S[x], other, 32, 48, causal, 0, dt, dt, dt, dt}, NULL);
        lp_run_all(&s, (lp_case_t){1, 2, 1, other, S[x], 40, 24, causal, 0, dt, dt, dt, dt}, NULL);
      }
  devs_close(&s);
  lp_finish("block boundaries");
}

/* Grouped-query heads, Dv != D (both ways, odd, past one tile), head dims
 * 1 to 160, the three layouts (K and V transposed: strided rows), two
 * batches. */
static void test_lowp_heads_dims_layouts(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) with FMA on this CPU");
  srand(22);
  static const int64_t shapes[][7] = {
      /* B, Hq, Hkv, Sq, Skv, D, Dv */
      {1, 8, 2, 100, 100, 64, 64}, {2, 6, 3, 65, 130, 128, 128}, {1, 4, 1, 50, 300, 64, 33},
      {1, 3, 1, 140, 90, 1, 1},    {2, 2, 2, 49, 49, 7, 5},      {1, 2, 1, 129, 129, 160, 96},
      {1, 4, 4, 3, 260, 64, 64},   {1, 1, 1, 97, 97, 24, 128},   {1, 2, 2, 5, 0, 8, 8},
      {1, 2, 1, 61, 61, 17, 31},
  };
  for (int t = 0; t < 2; t++)
    for (size_t x = 0; x < sizeof shapes / sizeof shapes[0]; x++)
      for (int layout = 0; layout < LAYOUT_COUNT; layout++)
        for (int causal = 0; causal <= 1; causal++) {
          const int64_t *p = shapes[x];
          bp_dtype_t dt = lowp[t];
          lp_run_all(
              &s,
              (lp_case_t){p[0], p[1], p[2], p[3], p[4], p[5], p[6], causal, layout, dt, dt, dt, dt},
              NULL);
        }
  devs_close(&s);
  lp_finish("heads, dims, layouts");
}

/* The masks of ABI 1.5 (window, kv_lens, a bias in q's dtype dense or
 * broadcast, ALiBi), and q, k, v and out of different dtypes. */
static void test_lowp_masks_mixed(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) with FMA on this CPU");
  srand(23);
  static const att_masks_t ms[] = {
      {.window = 40},
      {.kv_lens = 1},
      {.bias = BIAS_DENSE},
      {.bias = BIAS_BROADCAST},
      {.alibi = ALIBI_STANDARD},
      {.alibi = ALIBI_SLOPES},
      {.window = 17, .kv_lens = 1, .bias = BIAS_DENSE, .alibi = ALIBI_STANDARD},
  };
  for (int t = 0; t < 2; t++)
    for (size_t x = 0; x < sizeof ms / sizeof ms[0]; x++)
      for (int causal = 0; causal <= 1; causal++) {
        bp_dtype_t dt = lowp[t];
        lp_run_all(&s, (lp_case_t){3, 4, 2, 70, 200, 64, 48, causal, 0, dt, dt, dt, dt}, &ms[x]);
        lp_run_all(&s, (lp_case_t){2, 2, 1, 45, 45, 32, 32, causal, 1, dt, dt, dt, dt}, &ms[x]);
      }
  static const bp_dtype_t mix[][4] = {
      {BP_BF16, BP_F16, BP_F32, BP_BF16},
      {BP_F32, BP_BF16, BP_BF16, BP_F16},
      {BP_F16, BP_F32, BP_F16, BP_F32},
      {BP_F32, BP_F32, BP_F32, BP_BF16},
  };
  for (size_t x = 0; x < sizeof mix / sizeof mix[0]; x++)
    for (int layout = 0; layout < LAYOUT_COUNT; layout++) {
      const bp_dtype_t *d = mix[x];
      lp_run_all(&s, (lp_case_t){1, 4, 2, 60, 140, 40, 24, 1, layout, d[0], d[1], d[2], d[3]},
                 NULL);
    }
  devs_close(&s);
  lp_finish("masks and mixed dtypes");
}

/* NaN queries and keys, NaN / inf values hidden from most rows, large
 * scores (the running max moves a lot between key blocks): the harness's
 * comparison, NaN where the reference has NaN. */
static void test_lowp_special(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) with FMA on this CPU");
  srand(24);
  att_reset(&h);
  for (int t = 0; t < 2; t++)
    for (int sp = SPECIAL_NAN_Q; sp <= SPECIAL_NAN_V; sp++) {
      att_run_all(&h, &s, (att_case_t){1, 2, 1, 70, 70, 64, 64, 1, 0, sp, lowp[t]});
      att_run_all(&h, &s, (att_case_t){1, 2, 2, 45, 300, 40, 40, 1, 1, sp, lowp[t]});
      att_run_all(&h, &s, (att_case_t){1, 1, 1, 33, 129, 72, 72, 0, 2, sp, lowp[t]});
    }
  devs_close(&s);
  att_finish(&h, "special values");
}

/* On a CPU with AVX-512 but no AMX, the dispatcher at the AVX-512 level
 * runs this kernel for bf16 and f16: its output is the kernel's, bit for
 * bit (the AVX2 kernel adds in another order). A few queries of a GQA
 * group go to the decode or the AVX2 kernel and still match the
 * reference. */
static void test_lowp_dispatch(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) with FMA on this CPU");
  if (cpu_features_get()->amx_bf16) TEST_SKIP_CASE("AMX-BF16 present: bf16 runs on the tiles");
  srand(25);
  for (int t = 0; t < 2; t++) {
    bp_dtype_t dt = lowp[t];
    att_buf_t q = att_buf_make(dt, 1, 4, 150, 64, 0, -2, 2);
    att_buf_t k = att_buf_make(dt, 1, 2, 150, 64, 0, -2, 2);
    att_buf_t v = att_buf_make(dt, 1, 2, 150, 64, 0, -2, 2);
    att_buf_t o1 = att_buf_make(dt, 1, 4, 150, 64, 0, 0, 0);
    att_buf_t o2 = att_buf_make(dt, 1, 4, 150, 64, 0, 0, 0);
    bp_attention_args_t a = att_args(&q, &k, &v, &o1, 1, 0.125);
    assert_int_equal(cpu_fast_attention(&s.dev[1], &a), BP_OK);
    a.out = o2.t;
    assert_int_equal(cpu_fast_attention_avx512(&s.dev[1], &a), BP_OK);
    assert_memory_equal(o1.p, o2.p, (size_t)o1.n * 2);
    free(q.p), free(k.p), free(v.p), free(o1.p), free(o2.p);
  }
  att_harness_t hd = {.fn = cpu_fast_attention, .name = "avx512-lowp dispatcher"};
  att_reset(&hd);
  for (int t = 0; t < 2; t++)
    for (int64_t sq = 1; sq <= 6; sq++) {
      att_run_all(&hd, &s, (att_case_t){2, 8, 2, sq, 300, 64, 64, 1, 0, 0, lowp[t]});
      att_run_all(&hd, &s, (att_case_t){1, 4, 1, sq, 70, 40, 24, 0, 1, 0, lowp[t]});
    }
  devs_close(&s);
  att_finish(&hd, "few queries");
}

/* Not a test: BP_FAST_BENCH=1 prints, on one thread (CPU time, best of 5
 * alternating rounds), this kernel on bf16 beside itself on f32 and the
 * AVX2 kernel on bf16, B1 H8, S 512 to 2048, D 64 and 128, causal and
 * not. */
static void bench_lowp(void **state) {
  (void)state;
  dev_set_t s;
  if (!getenv("BP_FAST_BENCH")) TEST_SKIP_CASE("benchmark: set BP_FAST_BENCH=1 to run it");
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) with FMA on this CPU");
  for (int64_t S = 512; S <= 2048; S *= 2)
    for (int64_t D = 64; D <= 128; D *= 2)
      for (int causal = 1; causal >= 0; causal--) {
        att_buf_t in[2][3], out[2];
        bp_attention_args_t a[2];
        bp_dtype_t dts[2] = {BP_F32, BP_BF16};
        for (int t = 0; t < 2; t++) {
          for (int x = 0; x < 3; x++) in[t][x] = att_buf_make(dts[t], 1, 8, S, D, 0, -1, 1);
          out[t] = att_buf_make(dts[t], 1, 8, S, D, 0, 0, 0);
          a[t] = att_args(&in[t][0], &in[t][1], &in[t][2], &out[t], causal, 1.0 / sqrt((double)D));
        }
        double best[3] = {1e9, 1e9, 1e9};
        for (int rep = 0; rep < 5; rep++)
          for (int x = 0; x < 3; x++) {
            double t0 = att_now(CLOCK_THREAD_CPUTIME_ID);
            bp_status_t st = x == 2 ? cpu_fast_attention_avx2(&s.dev[0], &a[1])
                                    : cpu_fast_attention_avx512(&s.dev[0], &a[x]);
            assert_int_equal(st, BP_OK);
            double t = att_now(CLOCK_THREAD_CPUTIME_ID) - t0;
            best[x] = t < best[x] ? t : best[x];
          }
        printf("B1 H8 S%ld D%ld%s, 1 thread: avx512 f32 %.2f ms, avx512 bf16 %.2f ms, avx2 bf16 "
               "%.2f ms: bf16 %.2fx the avx2 kernel, %.2fx f32\n",
               (long)S, (long)D, causal ? " causal" : "", best[0] * 1e3, best[1] * 1e3,
               best[2] * 1e3, best[2] / best[1], best[0] / best[1]);
        for (int t = 0; t < 2; t++) {
          for (int x = 0; x < 3; x++) free(in[t][x].p);
          free(out[t].p);
        }
      }
  devs_close(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lowp_block_boundaries), cmocka_unit_test(test_lowp_heads_dims_layouts),
      cmocka_unit_test(test_lowp_masks_mixed),      cmocka_unit_test(test_lowp_special),
      cmocka_unit_test(test_lowp_dispatch),         cmocka_unit_test(bench_lowp),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
