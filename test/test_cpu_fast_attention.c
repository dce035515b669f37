/*
 * test_cpu_fast_attention.c — the "cpu" device's fused attention kernels
 * (plugins/cpu/fast/attention/) against the plugin's scalar double
 * reference (ref/ref_attention.c), both linked straight from the plugin's
 * objects so the ISA level and thread count can be forced; the comparison
 * is test/attention_harness.c's. Covers the AVX2 kernel: odd and
 * block-straddling sequence lengths, Sq != Skv with the bottom-right causal
 * mask (including rows that see no key), grouped-query heads (stacked into
 * one block's lanes when Sq is short), head dims 1 to 128 (D != Dv),
 * permuted and strided layouts, f32, f16 and bf16, NaN rows and large
 * scores (no spurious NaN); and the fused kernels' task ranges
 * (cpu_fast_att_sched_t).
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
#include "plugins/cpu/fast/attention/attention.h"
#include "test/attention_harness.h"
#include "test/cpu_fast_devs.h"
#include "test/skip.h"

/* The dispatcher, forced to the AVX2 level by the devices it is given. */
static att_harness_t h = {.fn = cpu_fast_attention, .name = "avx2"};

/* The AVX2 level with 1 and 2 threads (above it the AVX-512 kernel would
 * be chosen); none without AVX2 + FMA + F16C. */
static void devs_open_avx2(dev_set_t *s) {
  devs_open_levels(s, BP_ISA_AVX2, BP_ISA_AVX2);
}

static const bp_dtype_t dts[] = {BP_F32, BP_F16, BP_BF16};

/* The shapes the brief of the kernel names, each dtype, both mask modes. */
static void test_attention_avx2_shapes(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx2(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX2 with FMA and F16C on this CPU");
  srand(1);
  att_reset(&h);
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
        att_run_all(&h, &s, c);
      }
  devs_close(&s);
  att_finish(&h, "shapes");
}

/* Random shapes, layouts and dtypes. */
static void test_attention_avx2_random(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx2(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX2 with FMA and F16C on this CPU");
  srand(2);
  att_reset(&h);
  static const int64_t S[] = {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 161};
  static const int64_t Dim[] = {1, 5, 8, 40, 64, 72, 80, 128};
  for (int it = 0; it < 80; it++) {
    int64_t hk = 1 + rand() % 2, grp = 1 + rand() % 3;
    att_case_t c = {1 + rand() % 2,  hk * grp,       hk,
                    S[rand() % 13],  S[rand() % 13], Dim[rand() % 8],
                    Dim[rand() % 8], rand() % 2,     rand() % LAYOUT_COUNT,
                    SPECIAL_NONE,    dts[rand() % 3]};
    att_run_all(&h, &s, c);
  }
  devs_close(&s);
  att_finish(&h, "random");
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
  att_reset(&h);
  for (int d = 0; d < 3; d++) {
    for (int sp = SPECIAL_NAN_Q; sp <= SPECIAL_NAN_V; sp++) {
      att_run_all(&h, &s, (att_case_t){1, 2, 1, 70, 70, 64, 64, 1, 0, sp, dts[d]});
      att_run_all(&h, &s, (att_case_t){1, 2, 2, 45, 90, 40, 40, 1, 1, sp, dts[d]});
      att_run_all(&h, &s, (att_case_t){1, 1, 1, 33, 129, 72, 72, 0, 2, sp, dts[d]});
      att_run_all(&h, &s, (att_case_t){1, 6, 2, 6, 20, 32, 32, 1, 1, sp, dts[d]});
    }
    /* Sq > Skv causal: rows 0 .. Sq - Skv - 1 see nothing */
    att_run_all(&h, &s, (att_case_t){1, 2, 1, 100, 37, 64, 64, 1, 0, 0, dts[d]});
  }
  /* the zeros explicitly, not only "as the reference" */
  att_expect_masked_rows_zero(&h, &s.dev[1], 9, 3);
  devs_close(&s);
  att_finish(&h, "special");
}

/* Below AVX2, and for f64, the fast path declines and the reference runs. */
static void test_attention_dispatch(void **state) {
  (void)state;
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  dev.isa = BP_ISA_SCALAR;
  dev.threads = 1;
  att_reset(&h);
  att_case_t c = {1, 1, 1, 4, 4, 8, 8, 1, 0, 0, BP_F32};
  assert_int_equal(att_run_case(&h, &dev, &c), BP_ERR_UNIMPLEMENTED);
  const cpu_features_t *f = cpu_features_get();
  if (!(f->avx2 && f->fma && f->f16c)) TEST_SKIP_CASE("no AVX2 with FMA and F16C on this CPU");
  dev.isa = BP_ISA_AVX2;
  c.dt = BP_F64;
  assert_int_equal(att_run_case(&h, &dev, &c), BP_ERR_UNIMPLEMENTED);
  c.dt = BP_BF16;
  dev.isa = BP_ISA_BEST; /* AVX-512 declines bf16, AVX2 takes it */
  assert_int_equal(att_run_case(&h, &dev, &c), BP_OK);
  att_finish(&h, "dispatch");
}

/* The fused kernels' task ranges (fast/task_ranges.h, through
 * attention.h): workers taking turns, some stopping early (as one without
 * scratch memory does), take every task exactly once; a worker takes its
 * own range in order from the front, then the others' from their backs;
 * task t decodes to head t / per and block t % per, paired with
 * nqb - 1 - c when causal. */
static void test_attention_task_ranges(void **state) {
  (void)state;
  for (unsigned n = 1; n <= 5; n++)
    for (int64_t ntasks = 0; ntasks <= 40; ntasks += 3) {
      cpu_fast_att_sched_t s;
      int64_t per = 4, nqb = 7;
      cpu_fast_att_sched_init(&s, ntasks, per, 3, nqb, 1);
      s.ranges.nranges = n;
      int seen[64] = {0};
      int64_t last[5] = {-1, -1, -1, -1, -1};
      bool done[5] = {false}, any = true;
      while (any) {
        any = false;
        for (unsigned w = 0; w < n; w++) {
          if (done[w] || (w == 1 && n > 2)) continue; /* worker 1 never starts */
          int64_t b, h, blocks[2];
          int nb = cpu_fast_att_sched_next(&s, w, &b, &h, blocks);
          if (!nb) {
            done[w] = true;
            continue;
          }
          any = true;
          int64_t t = (b * 3 + h) * per + blocks[0];
          assert_true(t >= 0 && t < ntasks);
          seen[t]++;
          assert_int_equal(nb, blocks[1] != blocks[0] ? 2 : 1);
          assert_int_equal(blocks[1], nqb - 1 - blocks[0]);
          int64_t lo = cpu_fast_ranges_start(&s.ranges, w);
          int64_t hi = cpu_fast_ranges_start(&s.ranges, w + 1);
          if (t >= lo && t < hi) { /* its own range: in order */
            assert_true(last[w] < t);
            last[w] = t;
          }
        }
      }
      for (int64_t t = 0; t < ntasks; t++) assert_int_equal(seen[t], 1);
      assert_true(cpu_fast_att_sched_done(&s));
    }
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
    att_buf_t q = att_buf_make(BP_F32, 1, 8, S, 64, 0, -1, 1);
    att_buf_t k = att_buf_make(BP_F32, 1, 8, S, 64, 0, -1, 1);
    att_buf_t v = att_buf_make(BP_F32, 1, 8, S, 64, 0, -1, 1);
    att_buf_t o = att_buf_make(BP_F32, 1, 8, S, 64, 0, 0, 0);
    bp_attention_args_t a = att_args(&q, &k, &v, &o, 1, 0.125);
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
      clockid_t clk = nt == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
      double t0 = att_now(clk);
      assert_int_equal(cpu_fast_attention(&s.dev[nt - 1], &a), BP_OK);
      double t = att_now(clk) - t0;
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
      cmocka_unit_test(test_attention_task_ranges),  cmocka_unit_test(bench_attention_avx2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
