/*
 * test_cpu_fast_attention_mask.c — the masks of ABI 1.5 (kv_lens, sliding
 * window, additive bias, ALiBi; plugin-api.h) in the fused attention
 * kernels: the AVX-512 f32 kernel (attention_avx512.c), the bf16 AMX
 * kernel (attention_amx.c) and the AVX2 kernel (attention_avx2.c: f32, f16
 * and bf16, query heads stacked in its lanes when Sq is short), each
 * called directly so that a decline fails
 * the case, against the plugin's scalar double reference
 * (ref/ref_attention.c) through the shared harness
 * (test/attention_harness.h), with 1 and 2 threads. The cases put windows
 * and key lengths across the kernels' query and key blocks (a window of 1
 * key, windows shorter and longer than a key block, lengths of 0 and past
 * Skv, so whole rows are masked), bias tensors dense with -inf entries and
 * a row all -inf (zeros), or broadcast by stride 0, ALiBi with standard
 * slopes and with a slopes tensor, Sq != Skv, grouped-query heads and
 * strided layouts; non-finite values hidden by a window. The dispatcher
 * must run masked f32 and bf16 calls on these kernels (no decline).
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
#include "plugins/cpu/fast/gemm/gemm.h"
#include "plugins/cpu/ref/ref.h"
#include "test/attention_harness.h"
#include "test/cpu_fast_devs.h"
#include "test/skip.h"

static att_harness_t H512 = {.fn = cpu_fast_attention_avx512, .name = "avx512-mask"};
static att_harness_t HAMX = {.fn = cpu_fast_attention_amx, .name = "amx-mask"};
static att_harness_t HAVX2 = {.fn = cpu_fast_attention_avx2, .name = "avx2-mask"};

static bool devs_open_avx2(dev_set_t *s) {
  const cpu_features_t *f = cpu_features_get();
  s->n = 0;
  if (f->avx2 && f->fma && f->f16c) devs_open_levels(s, BP_ISA_AVX2, BP_ISA_AVX2);
  return s->n > 0;
}

static bool devs_open_avx512(dev_set_t *s) {
  const cpu_features_t *f = cpu_features_get();
  s->n = 0;
  if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq)
    devs_open_levels(s, BP_ISA_AVX512, BP_ISA_AVX512);
  return s->n > 0;
}

static bool devs_open_amx(dev_set_t *s) {
  const cpu_features_t *f = cpu_features_get();
  s->n = 0;
  if (!f->amx_bf16 || !f->avx512_bf16 || !devs_open_avx512(s)) return false;
  if (cpu_amx_request()) return true;
  devs_close(s);
  s->n = 0;
  return false;
}

/* Every mask alone and together over shapes around the blocks (AVX-512:
 * 48 queries x 128 keys; AMX: 32 x 256; AVX2: 32 x 64, and with Sq 1 the
 * grouped query heads share a block). */
static void run_mask_sweep(att_harness_t *h, dev_set_t *s, bp_dtype_t dt) {
  static const int64_t shapes[][2] = {{1, 300}, {60, 60}, {100, 300}, {37, 5}, {50, 530}};
  static const int windows[] = {1, 3, 40, 130, 400};
  for (size_t x = 0; x < sizeof shapes / sizeof *shapes; x++) {
    int64_t Sq = shapes[x][0], Skv = shapes[x][1];
    int layout = (int)(x % LAYOUT_COUNT);
    for (int causal = 0; causal <= 1; causal++) {
      for (size_t w = 0; w < sizeof windows / sizeof *windows; w++)
        att_run_all_masked(h, s, (att_case_t){1, 2, 1, Sq, Skv, 64, 64, causal, layout, 0, dt},
                           (att_masks_t){windows[w], 0, 0, 0});
      att_run_all_masked(h, s, (att_case_t){3, 2, 2, Sq, Skv, 40, 24, causal, layout, 0, dt},
                         (att_masks_t){0, 1, 0, 0});
      for (int bias = BIAS_DENSE; bias <= BIAS_BROADCAST; bias++)
        att_run_all_masked(h, s, (att_case_t){2, 2, 1, Sq, Skv, 64, 64, causal, 0, 0, dt},
                           (att_masks_t){0, 0, bias, 0});
      for (int alibi = ALIBI_STANDARD; alibi <= ALIBI_SLOPES; alibi++)
        att_run_all_masked(h, s, (att_case_t){1, 4, 2, Sq, Skv, 32, 32, causal, layout, 0, dt},
                           (att_masks_t){0, 0, 0, alibi});
      /* everything at once */
      att_run_all_masked(h, s, (att_case_t){3, 2, 1, Sq, Skv, 64, 48, causal, layout, 0, dt},
                         (att_masks_t){70, 1, BIAS_DENSE, ALIBI_STANDARD});
    }
  }
}

static void test_avx512_masks(void **state) {
  (void)state;
  dev_set_t s;
  if (!devs_open_avx512(&s)) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  att_reset(&H512);
  run_mask_sweep(&H512, &s, BP_F32);
  devs_close(&s);
  att_finish(&H512, "masks");
}

static void test_avx2_masks(void **state) {
  (void)state;
  dev_set_t s;
  if (!devs_open_avx2(&s)) TEST_SKIP_CASE("no AVX2 + FMA + F16C on this CPU");
  att_reset(&HAVX2);
  run_mask_sweep(&HAVX2, &s, BP_F32);
  att_run_all_masked(&HAVX2, &s, (att_case_t){2, 4, 1, 3, 150, 64, 64, 1, 0, 0, BP_F16},
                     (att_masks_t){70, 1, BIAS_DENSE, ALIBI_STANDARD});
  att_run_all_masked(&HAVX2, &s, (att_case_t){2, 2, 1, 45, 150, 64, 48, 0, 1, 0, BP_BF16},
                     (att_masks_t){20, 1, BIAS_BROADCAST, ALIBI_SLOPES});
  devs_close(&s);
  att_finish(&HAVX2, "masks");
}

static void test_amx_masks(void **state) {
  (void)state;
  dev_set_t s;
  if (!devs_open_amx(&s))
    TEST_SKIP_CASE("no AMX-BF16 with AVX-512 and AVX512-BF16, or no tile permission");
  att_reset(&HAMX);
  run_mask_sweep(&HAMX, &s, BP_BF16);
  devs_close(&s);
  att_finish(&HAMX, "masks");
}

/* NaN and inf values at keys 0 and 1 that a window hides from most rows
 * (the AVX-512 kernel's tiles then add the hidden keys row by row), and
 * at the last keys that kv_lens hides; the AMX kernel declines a ranged
 * mask over values that are not all finite. */
static void test_masked_nonfinite_values(void **state) {
  (void)state;
  dev_set_t s;
  if (!devs_open_avx512(&s)) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  att_reset(&H512);
  for (int w = 2; w <= 90; w += 44) {
    att_run_all_masked(&H512, &s,
                       (att_case_t){1, 2, 1, 100, 300, 64, 64, 1, 0, SPECIAL_NAN_V0, BP_F32},
                       (att_masks_t){w, 0, 0, 0});
    att_run_all_masked(&H512, &s,
                       (att_case_t){1, 1, 1, 70, 70, 32, 32, 0, 1, SPECIAL_NAN_V0, BP_F32},
                       (att_masks_t){w, 0, 0, 0});
  }
  att_run_all_masked(&H512, &s, (att_case_t){3, 2, 1, 50, 200, 64, 64, 0, 0, SPECIAL_NAN_V, BP_F32},
                     (att_masks_t){0, 1, 0, 0});
  devs_close(&s);
  att_finish(&H512, "masks over non-finite values");
  if (devs_open_avx2(&s)) {
    att_reset(&HAVX2);
    for (int w = 2; w <= 90; w += 44)
      att_run_all_masked(&HAVX2, &s,
                         (att_case_t){1, 2, 1, 100, 300, 64, 64, 1, 0, SPECIAL_NAN_V0, BP_F32},
                         (att_masks_t){w, 0, 0, 0});
    att_run_all_masked(&HAVX2, &s,
                       (att_case_t){3, 2, 1, 50, 200, 64, 64, 0, 0, SPECIAL_NAN_V, BP_F32},
                       (att_masks_t){0, 1, 0, 0});
    devs_close(&s);
    att_finish(&HAVX2, "masks over non-finite values");
  }
  if (!devs_open_amx(&s)) return;
  att_case_t c = {1, 2, 1, 40, 80, 32, 32, 0, 0, SPECIAL_NAN_V0, BP_BF16};
  att_masks_t m = {8, 0, 0, 0};
  assert_int_equal(att_run_masked(&HAMX, &s.dev[0], &c, &m), BP_ERR_UNIMPLEMENTED);
  devs_close(&s);
}

/* The dispatcher runs a masked f32 / bf16 call on the fused kernels: the
 * result is the reference's and the status BP_OK (a decline would be
 * BP_ERR_UNIMPLEMENTED). */
static void test_dispatcher_runs_masks(void **state) {
  (void)state;
  dev_set_t s;
  if (!devs_open_avx512(&s)) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  att_harness_t hd = {.fn = cpu_fast_attention, .name = "dispatch-mask"};
  att_run_all_masked(&hd, &s, (att_case_t){2, 2, 1, 33, 90, 64, 64, 1, 0, 0, BP_F32},
                     (att_masks_t){16, 1, BIAS_DENSE, ALIBI_SLOPES});
  if (cpu_features_get()->amx_bf16)
    att_run_all_masked(&hd, &s, (att_case_t){2, 2, 1, 33, 90, 64, 64, 1, 0, 0, BP_BF16},
                       (att_masks_t){16, 1, BIAS_BROADCAST, ALIBI_STANDARD});
  devs_close(&s);
  if (devs_open_avx2(&s)) {
    att_run_all_masked(&hd, &s, (att_case_t){2, 2, 1, 33, 90, 64, 64, 1, 0, 0, BP_F16},
                       (att_masks_t){16, 1, BIAS_DENSE, ALIBI_SLOPES});
    devs_close(&s);
  }
  att_finish(&hd, "dispatcher");
}

/* Benchmark (BP_FAST_BENCH=1): one thread by its CPU time, a masked f32
 * and bf16 call (window 256, kv_lens, dense bias, ALiBi) on the fused
 * kernel against the scalar reference the call took before. */
static void bench_masks(void **state) {
  (void)state;
  if (!getenv("BP_FAST_BENCH")) TEST_SKIP_CASE("benchmark: set BP_FAST_BENCH=1 to run it");
  dev_set_t s;
  if (!devs_open_avx512(&s)) TEST_SKIP_CASE("no AVX-512 (F, BW, VL, DQ) on this CPU");
  bool amx = cpu_features_get()->amx_bf16 && cpu_amx_request();
  for (int x = 0; x < (amx ? 2 : 1); x++) {
    bp_dtype_t dt = x ? BP_BF16 : BP_F32;
    att_case_t c = {1, 8, 8, 1024, 1024, 64, 64, 1, 0, 0, dt};
    att_masks_t mk = {256, 1, BIAS_DENSE, ALIBI_STANDARD};
    att_buf_t q = att_buf_make(dt, 1, 8, 1024, 64, 0, -2, 2);
    att_buf_t k = att_buf_make(dt, 1, 8, 1024, 64, 0, -2, 2);
    att_buf_t v = att_buf_make(dt, 1, 8, 1024, 64, 0, -2, 2);
    att_buf_t o = att_buf_make(dt, 1, 8, 1024, 64, 0, 0, 0), m[3];
    bp_attention_args_t a = att_args(&q, &k, &v, &o, 1, 0.125);
    att_masks_make(&c, &mk, &a, m);
    double best = 1e30, ref = 1e30;
    for (int r = 0; r < 3; r++) {
      double t0 = att_now(CLOCK_THREAD_CPUTIME_ID);
      assert_int_equal(cpu_fast_attention(&s.dev[0], &a), BP_OK);
      double t1 = att_now(CLOCK_THREAD_CPUTIME_ID);
      best = t1 - t0 < best ? t1 - t0 : best;
    }
    double t0 = att_now(CLOCK_THREAD_CPUTIME_ID);
    assert_int_equal(cpu_ref_attention_range(&a, 0, cpu_ref_attention_tasks(&a)), BP_OK);
    ref = att_now(CLOCK_THREAD_CPUTIME_ID) - t0;
    printf("masked attention %s B1 H8 S1024 D64 window 256 + kv_lens + bias + ALiBi, one "
           "thread: fused %.2f ms, reference %.2f ms, %.1fx\n",
           x ? "bf16" : "f32", best * 1e3, ref * 1e3, ref / best);
    free(q.p), free(k.p), free(v.p), free(o.p);
    for (int y = 0; y < 3; y++) free(m[y].p);
  }
  devs_close(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_avx512_masks),
      cmocka_unit_test(test_avx2_masks),
      cmocka_unit_test(test_amx_masks),
      cmocka_unit_test(test_masked_nonfinite_values),
      cmocka_unit_test(test_dispatcher_runs_masks),
      cmocka_unit_test(bench_masks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
