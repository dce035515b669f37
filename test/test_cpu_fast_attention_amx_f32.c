/*
 * test_cpu_fast_attention_amx_f32.c — the f32 attention kernel on the bf16
 * AMX tiles (plugins/cpu/fast/attention/attention_amx_f32.c: each f32
 * value split into three bf16 parts, six part products per f32 product),
 * called directly so that a decline cannot pass unseen, against the
 * plugin's scalar double reference (ref/ref_attention.c) with the f32
 * tolerance of the other f32 kernels, with 1 and 2 threads, through the
 * attention tests' shared harness (test/attention_harness.h). The cases
 * sit on the kernel's edges: sequence lengths on either side of the tile
 * (16 rows), the 32-row sub-block, the query block (64) and the key block
 * (256); Sq != Skv with the bottom-right causal mask (rows that see no key
 * give zeros); grouped-query heads; Dv != D and head dims off the 32-wide
 * tile row; strided and permuted views; scores of +-24^2 * 64 (an error of
 * a bf16-sized part in a score would show there). cpu_fast_attention must
 * pick the kernel by itself for f32 inputs, and leave inputs it cannot
 * split (NaN, inf, 2^127) and the masks of ABI 1.5 to the next kernel.
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
#include "plugins/cpu/fast/gemm/gemm.h"
#include "test/attention_harness.h"
#include "test/cpu_fast_devs.h"
#include "test/skip.h"

static att_harness_t H = {cpu_fast_attention_amx_f32, "amx-f32", 0, 0};

static att_case_t f32_case(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Skv, int64_t D,
                           int64_t Dv, int causal, int layout, int special) {
  return (att_case_t){B, Hq, Hkv, Sq, Skv, D, Dv, causal, layout, special, BP_F32};
}

/* The AVX-512 level with 1 and 2 threads when the CPU has AMX-BF16 and
 * Linux grants tile state; none otherwise. */
static bool devs_open_amx(dev_set_t *s) {
  const cpu_features_t *f = cpu_features_get();
  s->n = 0;
  if (!f->amx_bf16 || !f->avx512_bf16 || !f->avx512f || !f->avx512bw || !f->avx512vl ||
      !f->avx512dq || !cpu_amx_request())
    return false;
  devs_open_levels(s, BP_ISA_AVX512, BP_ISA_AVX512);
  return s->n > 0;
}

#define OPEN_OR_SKIP(s)                                                                            \
  do {                                                                                             \
    if (!devs_open_amx(s))                                                                         \
      TEST_SKIP_CASE("no AMX-BF16 with AVX-512 and AVX512-BF16, or no tile permission");           \
  } while (0)

static void finish(dev_set_t *s, const char *what) {
  devs_close(s);
  att_finish(&H, what);
}

/* Sequence lengths around the tile (16), the sub-block (32), the query
 * block (64) and the key block (256), Sq == Skv and not, both masks. */
static void test_amxf_block_edges(void **state) {
  (void)state;
  dev_set_t s;
  OPEN_OR_SKIP(&s);
  srand(31);
  att_reset(&H);
  static const int64_t S[] = {1, 15, 16, 17, 31, 33, 63, 64, 65, 129, 200, 255, 256, 257, 300};
  int ns = (int)(sizeof S / sizeof S[0]);
  for (int x = 0; x < ns; x++)
    for (int causal = 0; causal <= 1; causal++) {
      att_run_all(&H, &s, f32_case(1, 2, 2, S[x], S[x], 64, 64, causal, LAYOUT_DENSE, 0));
      int64_t other = S[(x + 5) % ns];
      att_run_all(&H, &s, f32_case(1, 2, 1, S[x], other, 32, 48, causal, LAYOUT_DENSE, 0));
      att_run_all(&H, &s, f32_case(1, 2, 1, other, S[x], 40, 24, causal, LAYOUT_DENSE, 0));
    }
  finish(&s, "block edges");
}

/* Grouped-query heads, Dv != D both ways, head dims 1 to 160 (off the
 * 32-wide tile row), strided and permuted views, two batches. */
static void test_amxf_heads_dims_layouts(void **state) {
  (void)state;
  dev_set_t s;
  OPEN_OR_SKIP(&s);
  srand(32);
  att_reset(&H);
  static const int64_t shapes[][7] = {/* B, Hq, Hkv, Sq, Skv, D, Dv */
                                      {1, 8, 2, 100, 100, 64, 64}, {2, 6, 3, 65, 130, 128, 128},
                                      {1, 4, 1, 50, 300, 64, 33},  {1, 2, 2, 40, 40, 1, 1},
                                      {1, 3, 1, 70, 90, 80, 160},  {2, 4, 4, 33, 17, 96, 16},
                                      {1, 4, 2, 129, 129, 128, 64}};
  for (size_t x = 0; x < sizeof shapes / sizeof shapes[0]; x++)
    for (int layout = LAYOUT_DENSE; layout <= LAYOUT_KV_TRANSPOSED; layout++)
      for (int causal = 0; causal <= 1; causal++) {
        const int64_t *p = shapes[x];
        att_run_all(&H, &s, f32_case(p[0], p[1], p[2], p[3], p[4], p[5], p[6], causal, layout, 0));
      }
  finish(&s, "heads, dims, layouts");
}

/* Scores of +-24^2 * 64 with scale 1: the weights hang on every bit of a
 * score (a product short of f32 precision would be off by far more than
 * the tolerance), and the running max moves between key blocks; causal
 * with Sq > Skv, whose first rows see no key and must be zeros. */
static void test_amxf_large_and_masked_rows(void **state) {
  (void)state;
  dev_set_t s;
  OPEN_OR_SKIP(&s);
  srand(33);
  att_reset(&H);
  for (int causal = 0; causal <= 1; causal++) {
    att_run_all(&H, &s, f32_case(1, 2, 1, 200, 600, 64, 64, causal, LAYOUT_DENSE, SPECIAL_LARGE));
    att_run_all(&H, &s, f32_case(1, 2, 2, 90, 90, 128, 128, causal, LAYOUT_BSHD, SPECIAL_LARGE));
  }
  att_run_all(&H, &s, f32_case(1, 2, 1, 100, 40, 64, 64, 1, LAYOUT_DENSE, 0));
  att_run_all(&H, &s, f32_case(2, 2, 2, 33, 1, 32, 16, 1, LAYOUT_BSHD, 0));
  finish(&s, "large scores, fully masked rows");
}

/* What the kernel does not cover goes to the next kernel: bf16 and mixed
 * dtypes, Hq not a multiple of Hkv, NaN, inf or 2^127 in q, k or v (found
 * while the tasks run), an additive bias, a window, kv_lens, out over q
 * or k. */
static void test_amxf_declines(void **state) {
  (void)state;
  dev_set_t s;
  OPEN_OR_SKIP(&s);
  att_buf_t q = att_buf_make(BP_F32, 1, 4, 8, 16, LAYOUT_DENSE, -1, 1);
  att_buf_t k = att_buf_make(BP_F32, 1, 2, 8, 16, LAYOUT_DENSE, -1, 1);
  att_buf_t o = att_buf_make(BP_F32, 1, 4, 8, 16, LAYOUT_DENSE, 0, 0);
  bp_attention_args_t a = att_args(&q, &k, &k, &o, 0, 0.25);
  assert_int_equal(cpu_fast_attention_amx_f32(&s.dev[0], &a), BP_OK);
  a.out.dtype = BP_BF16;
  assert_int_equal(cpu_fast_attention_amx_f32(&s.dev[0], &a), BP_ERR_UNIMPLEMENTED);
  a.out.dtype = BP_F32, a.k.shape[1] = a.v.shape[1] = 3;
  assert_int_equal(cpu_fast_attention_amx_f32(&s.dev[0], &a), BP_ERR_UNIMPLEMENTED);
  a.k = k.t, a.v = k.t;
  a.window = 4;
  assert_int_equal(cpu_fast_attention_amx_f32(&s.dev[0], &a), BP_ERR_UNIMPLEMENTED);
  a.window = 0;
  a.bias = q.t;
  assert_int_equal(cpu_fast_attention_amx_f32(&s.dev[0], &a), BP_ERR_UNIMPLEMENTED);
  a.bias.rank = 0;
  att_buf_t v = att_buf_make(BP_F32, 1, 2, 8, 16, LAYOUT_DENSE, -1, 1);
  a.v = v.t; /* each of q, k and v checked on its own */
  static const float bad[] = {NAN, INFINITY, -INFINITY, 1.7014118e38f, -3e38f};
  for (size_t x = 0; x < sizeof bad / sizeof bad[0]; x++) {
    float *cells[3] = {(float *)k.p + att_at4(&k.t, 0, 1, 7, 3),
                       (float *)q.p + att_at4(&q.t, 0, 3, 0, 15),
                       (float *)v.p + att_at4(&v.t, 0, 0, 5, 9)};
    for (int c = 0; c < 3; c++) {
      float keep = *cells[c];
      *cells[c] = bad[x];
      assert_int_equal(cpu_fast_attention_amx_f32(&s.dev[0], &a), BP_ERR_UNIMPLEMENTED);
      *cells[c] = keep;
    }
  }
  assert_int_equal(cpu_fast_attention_amx_f32(&s.dev[0], &a), BP_OK);
  /* out over an input: values found unsplittable only while the tasks run
   * could not be redone by the FMA kernel, so such calls go there at once */
  a.out = q.t;
  assert_int_equal(cpu_fast_attention_amx_f32(&s.dev[0], &a), BP_ERR_UNIMPLEMENTED);
  a.out = o.t, a.out.ptr = k.t.ptr, a.out.offset = k.t.offset + 4 * 7;
  assert_int_equal(cpu_fast_attention_amx_f32(&s.dev[0], &a), BP_ERR_UNIMPLEMENTED);
  a.out = o.t;
  assert_int_equal(cpu_fast_attention_amx_f32(&s.dev[0], &a), BP_OK);
  free(q.p), free(k.p), free(v.p), free(o.p);
  devs_close(&s);
}

/* cpu_fast_attention runs this kernel for f32 inputs (its output is the
 * kernel's, bit for bit, which the AVX-512 FMA kernel's is not), and the
 * FMA kernel for short causal attention and for values the split cannot
 * take (the NaN row matches). */
static void test_amxf_chosen_for_f32(void **state) {
  (void)state;
  dev_set_t s;
  OPEN_OR_SKIP(&s);
  srand(35);
  att_reset(&H);
  for (int i = 0; i < s.n; i++) {
    att_buf_t q = att_buf_make(BP_F32, 1, 4, 150, 64, LAYOUT_DENSE, -2, 2);
    att_buf_t k = att_buf_make(BP_F32, 1, 2, 150, 64, LAYOUT_DENSE, -2, 2);
    att_buf_t o1 = att_buf_make(BP_F32, 1, 4, 150, 64, LAYOUT_DENSE, 0, 0);
    att_buf_t o2 = att_buf_make(BP_F32, 1, 4, 150, 64, LAYOUT_DENSE, 0, 0);
    /* different starting values: two outputs left unwritten differ */
    for (int64_t x = 0; x < o1.n; x++) ((float *)o1.p)[x] = NAN, ((float *)o2.p)[x] = 7.0f;
    bp_attention_args_t a = att_args(&q, &k, &k, &o1, 0, 0.125);
    assert_int_equal(cpu_fast_attention_amx_f32(&s.dev[i], &a), BP_OK);
    a.out = o2.t;
    assert_int_equal(cpu_fast_attention(&s.dev[i], &a), BP_OK);
    H.checks++;
    if (memcmp(o1.p, o2.p, sizeof(float) * (size_t)o1.n) != 0) {
      printf("cpu_fast_attention's f32 output is not the AMX kernel's (thr%u)\n", s.dev[i].threads);
      H.fails++;
    }
    /* causal over at most CPU_FAST_ATTENTION_AMX_F32_MIN_CAUSAL keys: the
     * FMA kernel's output, bit for bit */
    for (int64_t x = 0; x < o1.n; x++) ((float *)o1.p)[x] = NAN, ((float *)o2.p)[x] = 7.0f;
    a.causal = 1, a.out = o1.t;
    assert_int_equal(cpu_fast_attention_avx512(&s.dev[i], &a), BP_OK);
    a.out = o2.t;
    assert_int_equal(cpu_fast_attention(&s.dev[i], &a), BP_OK);
    H.checks++;
    if (memcmp(o1.p, o2.p, sizeof(float) * (size_t)o1.n) != 0) {
      printf("cpu_fast_attention's short causal f32 output is not the FMA kernel's (thr%u)\n",
             s.dev[i].threads);
      H.fails++;
    }
    free(q.p), free(k.p), free(o1.p), free(o2.p);
    /* NaN in q: declined here, the FMA kernel gives the reference's row */
    att_run_all(&(att_harness_t){cpu_fast_attention, "dispatch", 0, 0}, &s,
                f32_case(1, 2, 2, 70, 140, 64, 64, 0, LAYOUT_DENSE, SPECIAL_NAN_Q));
  }
  finish(&s, "chosen for f32");
}

/* Best of reps calls of fn on a, by this thread's CPU time (one thread:
 * the time other processes take from the core does not count). */
static double best_seconds(cpu_device_t *dev, const bp_attention_args_t *a, int reps,
                           bp_status_t (*fn)(cpu_device_t *, const bp_attention_args_t *)) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = att_now(CLOCK_THREAD_CPUTIME_ID);
    assert_int_equal(fn(dev, a), BP_OK);
    double t = att_now(CLOCK_THREAD_CPUTIME_ID) - t0;
    best = t < best ? t : best;
  }
  return best;
}

/* Not a test: with BP_FAST_BENCH=1, bp bench's B1 H8 attention shapes on
 * one thread, this kernel beside the AVX-512 FMA kernel on the same
 * values. */
static void bench_amxf_vs_fma(void **state) {
  (void)state;
  dev_set_t s;
  if (!getenv("BP_FAST_BENCH")) TEST_SKIP_CASE("benchmark: set BP_FAST_BENCH=1 to run it");
  OPEN_OR_SKIP(&s);
  for (int64_t S = 512; S <= 2048; S *= 2)
    for (int64_t D = 64; D <= 128; D *= 2)
      for (int causal = 1; causal >= 0; causal--) {
        att_buf_t h[4];
        for (int x = 0; x < 4; x++) h[x] = att_buf_make(BP_F32, 1, 8, S, D, LAYOUT_DENSE, -1, 1);
        bp_attention_args_t a = att_args(&h[0], &h[1], &h[2], &h[3], causal, 1.0 / sqrt((double)D));
        double tf = best_seconds(&s.dev[0], &a, 3, cpu_fast_attention_avx512);
        double tx = best_seconds(&s.dev[0], &a, 3, cpu_fast_attention_amx_f32);
        double flops = 4.0 * 8 * (double)S * (double)S * (double)D * (causal ? 0.5 : 1.0);
        printf("attention f32 B1 H8 S%ld D%ld%s, 1 thread: FMA %.2f ms %.1f GFLOP/s, AMX x3 %.2f "
               "ms %.1f GFLOP/s, %.2fx\n",
               (long)S, (long)D, causal ? " causal" : "", tf * 1e3, flops / tf * 1e-9, tx * 1e3,
               flops / tx * 1e-9, tf / tx);
        for (int x = 0; x < 4; x++) free(h[x].p);
      }
  devs_close(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_amxf_block_edges),
      cmocka_unit_test(test_amxf_heads_dims_layouts),
      cmocka_unit_test(test_amxf_large_and_masked_rows),
      cmocka_unit_test(test_amxf_declines),
      cmocka_unit_test(test_amxf_chosen_for_f32),
      cmocka_unit_test(bench_amxf_vs_fma),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
