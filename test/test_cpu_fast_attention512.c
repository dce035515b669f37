/*
 * test_cpu_fast_attention512.c — the FlashAttention-2 style AVX-512 kernel
 * (plugins/cpu/fast/attention/attention_avx512.c), called directly so that
 * a decline cannot pass unseen, against the plugin's scalar double
 * reference (ref/ref_attention.c; the comparison is
 * test/attention_harness.c's), with 1 and 2 threads. The cases sit on
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
#include "plugins/cpu/fast/gemm/gemm.h"
#include "test/attention_harness.h"
#include "test/cpu_fast_devs.h"
#include "test/skip.h"

/* The kernel itself, not the dispatcher: a decline fails the case. */
static att_harness_t h = {.fn = cpu_fast_attention_avx512, .name = "avx512"};

/* The AVX-512 level with 1 and 2 threads; none without AVX-512. */
static void devs_open_avx512(dev_set_t *s) {
  const cpu_features_t *f = cpu_features_get();
  s->n = 0;
  if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq)
    devs_open_levels(s, BP_ISA_AVX512, BP_ISA_AVX512);
}

/* Sequence lengths around the query block (48), the key block (128) and
 * the tile (12 x 32), Sq == Skv and not, both masks, dense. */
static void test_fa_block_boundaries(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  srand(11);
  att_reset(&h);
  static const int64_t S[] = {1, 11, 12, 13, 31, 33, 47, 48, 49, 96, 127, 128, 129, 200, 257};
  for (size_t x = 0; x < sizeof S / sizeof S[0]; x++)
    for (int causal = 0; causal <= 1; causal++) {
      att_run_all(&h, &s,
                  (att_case_t){1, 2, 2, S[x], S[x], 64, 64, causal, LAYOUT_DENSE, 0, BP_F32});
      /* Sq != Skv: the causal mask aligned to the bottom right */
      int64_t other = S[(x + 5) % (sizeof S / sizeof S[0])];
      att_run_all(&h, &s,
                  (att_case_t){1, 2, 1, S[x], other, 32, 48, causal, LAYOUT_DENSE, 0, BP_F32});
      att_run_all(&h, &s,
                  (att_case_t){1, 2, 1, other, S[x], 40, 24, causal, LAYOUT_DENSE, 0, BP_F32});
    }
  devs_close(&s);
  att_finish(&h, "block boundaries");
}

/* Grouped-query heads, Dv != D (both ways, odd and past one tile), head
 * dims 1 to 160, strided and permuted views, two batches. */
static void test_fa_heads_dims_layouts(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  srand(12);
  att_reset(&h);
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
        att_run_all(
            &h, &s,
            (att_case_t){p[0], p[1], p[2], p[3], p[4], p[5], p[6], causal, layout, 0, BP_F32});
      }
  devs_close(&s);
  att_finish(&h, "heads, dims, layouts");
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
  att_reset(&h);
  for (int sp = SPECIAL_NAN_Q; sp <= SPECIAL_NAN_V; sp++) {
    att_run_all(&h, &s, (att_case_t){1, 2, 1, 70, 70, 64, 64, 1, 0, sp, BP_F32});
    att_run_all(&h, &s, (att_case_t){1, 2, 2, 45, 300, 40, 40, 1, 1, sp, BP_F32});
    att_run_all(&h, &s, (att_case_t){1, 1, 1, 33, 129, 72, 72, 0, 2, sp, BP_F32});
    att_run_all(&h, &s, (att_case_t){1, 2, 1, 200, 200, 16, 16, 1, 0, sp, BP_F32});
  }
  att_run_all(&h, &s, (att_case_t){1, 2, 1, 100, 37, 64, 64, 1, 0, 0, BP_F32});
  devs_close(&s);
  att_finish(&h, "special values");
}

/* Causal with Sq > Skv: the first Sq - Skv rows see no key and are zeros
 * (checked as zeros, not only as the reference), the rest finite. */
static void test_fa_masked_rows_zero(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  for (int i = 0; i < s.n; i++) att_expect_masked_rows_zero(&h, &s.dev[i], 60, 5);
  devs_close(&s);
}

/* A query whose every score is -inf gives a row of zeros, as a row whose
 * keys are all masked (plugin-api.h, ABI 1.5; the reference's max is
 * -inf), over several key blocks; the other rows stay finite. */
static void test_fa_neg_inf_row(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  att_buf_t q = att_buf_make(BP_F32, 1, 1, 20, 16, 0, -1, 1);
  att_buf_t k = att_buf_make(BP_F32, 1, 1, 300, 16, 0, 0.5, 1);
  att_buf_t v = att_buf_make(BP_F32, 1, 1, 300, 16, 0, -1, 1);
  att_buf_t o = att_buf_make(BP_F32, 1, 1, 20, 16, 0, 0, 0);
  ((float *)q.p)[3 * 16] = -INFINITY; /* row 3: every score -inf */
  for (int i = 0; i < s.n; i++)
    for (int causal = 0; causal <= 1; causal++) {
      bp_attention_args_t a = att_args(&q, &k, &v, &o, causal, 0.25);
      assert_int_equal(cpu_fast_attention_avx512(&s.dev[i], &a), BP_OK);
      for (int64_t x = 0; x < 20 * 16; x++)
        assert_true(x / 16 == 3 ? ((float *)o.p)[x] == 0.0f : isfinite(((float *)o.p)[x]));
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
  att_reset(&h);
  att_case_t c = {1, 2, 2, 20, 20, 16, 16, 1, 0, 0, BP_F64};
  assert_int_equal(att_run_case(&h, &s.dev[0], &c), BP_ERR_UNIMPLEMENTED);
  c.dt = BP_F32;
  c.Hkv = 3; /* Hq not a multiple of Hkv */
  c.Hq = 4;
  assert_int_equal(att_run_case(&h, &s.dev[0], &c), BP_ERR_UNIMPLEMENTED);
  c.Hq = 6;
  att_harness_t dispatcher = {.fn = cpu_fast_attention, .name = "dispatcher"};
  assert_int_equal(att_run_case(&dispatcher, &s.dev[1], &c), BP_OK);
  assert_int_equal(h.fails + dispatcher.fails, 0);
  devs_close(&s);
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
        att_buf_t q = att_buf_make(BP_F32, 1, 8, S, D, 0, -1, 1);
        att_buf_t k = att_buf_make(BP_F32, 1, 8, S, D, 0, -1, 1);
        att_buf_t v = att_buf_make(BP_F32, 1, 8, S, D, 0, -1, 1);
        att_buf_t o = att_buf_make(BP_F32, 1, 8, S, D, 0, 0, 0);
        bp_attention_args_t a = att_args(&q, &k, &v, &o, causal, 1.0 / sqrt((double)D));
        double best = 1e9;
        for (int rep = 0; rep < 5; rep++) {
          double t0 = att_now(CLOCK_THREAD_CPUTIME_ID);
          assert_int_equal(cpu_fast_attention_avx512(&s.dev[0], &a), BP_OK);
          double t = att_now(CLOCK_THREAD_CPUTIME_ID) - t0;
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
