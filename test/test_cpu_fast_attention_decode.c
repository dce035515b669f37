/*
 * test_cpu_fast_attention_decode.c — the attention kernel for a few
 * queries per head (plugins/cpu/fast/attention/attention_decode.c, the
 * one-token decode step), called directly so that a decline cannot pass
 * unseen, against the plugin's scalar double reference (the comparison is
 * test/attention_harness.c's), f32 and bf16, with 1 and 2 threads: Sq 1
 * to 4 over caches of 1 to 300 keys, the bottom-right causal mask (and
 * Sq > Skv rows that see nothing), grouped-query and multi-query heads,
 * head dims off the vector width, Dv != D, queries and outputs as strided
 * views, sliding windows and kv_lens, NaN and inf inputs, a row of -inf
 * scores; and what it declines (more queries, additive terms, keys with
 * strided rows, mixed dtypes), which the dispatcher then runs elsewhere.
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
#include "plugins/cpu/fast/attention/attention.h"
#include "test/attention_harness.h"
#include "test/cpu_fast_devs.h"
#include "test/skip.h"

/* The kernel itself, not the dispatcher: a decline fails the case. */
static att_harness_t h = {.fn = cpu_fast_attention_decode, .name = "decode"};

/* The AVX-512 level with 1 and 2 threads; none without AVX-512. */
static void devs_open_avx512(dev_set_t *s) {
  const cpu_features_t *f = cpu_features_get();
  s->n = 0;
  if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->fma)
    devs_open_levels(s, BP_ISA_AVX512, BP_ISA_AVX512);
}

/* Sq 1..4 over caches around the vector width and past it, GQA / MQA,
 * head dims 1 to 130 with Dv != D, dense and [B, S, H, D] views, both
 * dtypes, causal and not. */
static void test_decode_shapes(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  srand(21);
  att_reset(&h);
  static const int64_t shapes[][7] = {
      /* B, Hq, Hkv, Sq, Skv, D, Dv */
      {2, 16, 16, 1, 129, 64, 64}, {2, 8, 2, 1, 129, 32, 32}, {1, 4, 1, 2, 17, 16, 16},
      {1, 6, 3, 3, 300, 80, 48},   {3, 2, 2, 4, 1, 7, 5},     {1, 1, 1, 1, 16, 130, 1},
      {2, 3, 1, 4, 33, 1, 24},     {1, 2, 2, 1, 0, 8, 8},
  };
  bp_dtype_t dts[2] = {BP_F32, BP_BF16};
  for (size_t x = 0; x < sizeof shapes / sizeof shapes[0]; x++)
    for (int d = 0; d < 2; d++)
      for (int layout = LAYOUT_DENSE; layout <= LAYOUT_BSHD; layout++)
        for (int causal = 0; causal <= 1; causal++) {
          const int64_t *p = shapes[x];
          att_run_all(
              &h, &s,
              (att_case_t){p[0], p[1], p[2], p[3], p[4], p[5], p[6], causal, layout, 0, dts[d]});
        }
  devs_close(&s);
  att_finish(&h, "decode shapes");
}

/* NaN queries, keys and values, large scores, Sq > Skv causal rows that
 * see no key; sliding windows and kv_lens (rows of some batches see
 * nothing). */
static void test_decode_special_and_masks(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  srand(22);
  att_reset(&h);
  for (int sp = SPECIAL_NAN_Q; sp <= SPECIAL_NAN_V0; sp++)
    for (int causal = 0; causal <= 1; causal++) {
      att_run_all(&h, &s, (att_case_t){1, 4, 2, 1, 70, 64, 64, causal, 0, sp, BP_F32});
      att_run_all(&h, &s, (att_case_t){2, 2, 1, 3, 40, 24, 40, causal, 1, sp, BP_F32});
    }
  att_run_all(&h, &s, (att_case_t){1, 2, 1, 4, 2, 16, 16, 1, 0, 0, BP_F32});
  static const att_masks_t masks[] = {{3, 0, 0, 0}, {0, 1, 0, 0}, {5, 1, 0, 0}};
  for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++)
    for (int causal = 0; causal <= 1; causal++) {
      att_run_all_masked(&h, &s, (att_case_t){3, 4, 2, 2, 50, 32, 32, causal, 0, 0, BP_F32},
                         masks[m]);
      att_run_all_masked(&h, &s, (att_case_t){3, 2, 2, 1, 129, 64, 64, causal, 1, 0, BP_BF16},
                         masks[m]);
    }
  devs_close(&s);
  att_finish(&h, "decode special values and masks");
}

/* A query whose every score is -inf gives a row of zeros; the others
 * stay finite. */
static void test_decode_neg_inf_row(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  att_buf_t q = att_buf_make(BP_F32, 1, 4, 1, 16, 0, -1, 1);
  att_buf_t k = att_buf_make(BP_F32, 1, 4, 40, 16, 0, 0.5, 1);
  att_buf_t v = att_buf_make(BP_F32, 1, 4, 40, 16, 0, -1, 1);
  att_buf_t o = att_buf_make(BP_F32, 1, 4, 1, 16, 0, 0, 0);
  ((float *)q.p)[2 * 16] = -INFINITY; /* head 2: every score -inf */
  for (int i = 0; i < s.n; i++) {
    bp_attention_args_t a = att_args(&q, &k, &v, &o, 1, 0.25);
    assert_int_equal(cpu_fast_attention_decode(&s.dev[i], &a), BP_OK);
    for (int64_t x = 0; x < 4 * 16; x++)
      assert_true(x / 16 == 2 ? ((float *)o.p)[x] == 0.0f : isfinite(((float *)o.p)[x]));
  }
  free(q.p), free(k.p), free(v.p), free(o.p);
  devs_close(&s);
}

/* Causal with Sq > Skv: the first rows see no key and are zeros (checked
 * as zeros), in f32 and bf16, right after a case whose NaN values left
 * NaN in the kernel's per-thread sums (a row without keys must not read
 * them). */
static void test_decode_masked_rows_zero(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  att_reset(&h);
  for (int i = 0; i < s.n; i++) {
    for (int d = 0; d < 2; d++) {
      att_case_t nan_v = {1, 2, 1, 1, 20, 8, 8, 0, 0, SPECIAL_NAN_V, d ? BP_BF16 : BP_F32};
      assert_int_equal(att_run_case(&h, &s.dev[i], &nan_v), BP_OK);
      att_case_t none = {1, 2, 1, 4, 2, 8, 8, 1, 0, 0, d ? BP_BF16 : BP_F32};
      assert_int_equal(att_run_case(&h, &s.dev[i], &none), BP_OK);
    }
    att_run_case(&h, &s.dev[i], &(att_case_t){1, 2, 1, 1, 20, 8, 8, 0, 0, SPECIAL_NAN_V, BP_F32});
    att_expect_masked_rows_zero(&h, &s.dev[i], 4, 2);
  }
  devs_close(&s);
  att_finish(&h, "decode rows without keys");
}

/* Declines what it does not cover, before writing anything; the
 * dispatcher then runs another kernel. */
static void test_decode_declines(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_avx512(&s);
  if (!s.n) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  att_reset(&h);
  att_case_t c = {1, 2, 2, CPU_FAST_ATTENTION_DECODE_MAX_SQ + 1, 20, 16, 16, 1, 0, 0, BP_F32};
  assert_int_equal(att_run_case(&h, &s.dev[0], &c), BP_ERR_UNIMPLEMENTED);
  c.Sq = 1;
  c.dt = BP_F16;
  assert_int_equal(att_run_case(&h, &s.dev[0], &c), BP_ERR_UNIMPLEMENTED);
  c.dt = BP_F32;
  c.layout = LAYOUT_KV_TRANSPOSED; /* keys' rows strided */
  assert_int_equal(att_run_case(&h, &s.dev[0], &c), BP_ERR_UNIMPLEMENTED);
  c.layout = LAYOUT_DENSE;
  assert_int_equal(att_run_masked(&h, &s.dev[0], &c, &(att_masks_t){0, 0, BIAS_DENSE, 0}),
                   BP_ERR_UNIMPLEMENTED);
  assert_int_equal(att_run_masked(&h, &s.dev[0], &c, &(att_masks_t){0, 0, 0, ALIBI_STANDARD}),
                   BP_ERR_UNIMPLEMENTED);
  att_harness_t dispatcher = {.fn = cpu_fast_attention, .name = "dispatcher"};
  assert_int_equal(att_run_masked(&dispatcher, &s.dev[1], &c, &(att_masks_t){0, 0, BIAS_DENSE, 0}),
                   BP_OK);
  assert_int_equal(h.fails + dispatcher.fails, 0);
  devs_close(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_decode_shapes),
                                     cmocka_unit_test(test_decode_special_and_masks),
                                     cmocka_unit_test(test_decode_neg_inf_row),
                                     cmocka_unit_test(test_decode_masked_rows_zero),
                                     cmocka_unit_test(test_decode_declines)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
