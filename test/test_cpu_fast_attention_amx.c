/*
 * test_cpu_fast_attention_amx.c — the bf16 attention kernel on AMX tiles
 * (plugins/cpu/fast/attention/attention_amx.c), called directly so that a
 * decline cannot pass unseen, against the plugin's scalar double reference
 * (ref/ref_attention.c) with a bf16 tolerance, with 1 and 2 threads. The
 * cases sit on the kernel's block edges: sequence lengths on either side
 * of the tile (16 rows), the query block (32) and the key block (256);
 * Sq != Skv with the bottom-right causal mask (rows that see no key give
 * zeros); grouped-query heads; Dv != D and head dims off the 32-wide tile
 * row; strided and permuted views; scores large enough that the running
 * max moves between key blocks; NaN and inf inputs. cpu_fast_attention
 * must pick the kernel by itself for bf16 inputs.
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
#include "test/cpu_fast_devs.h"
#include "test/skip.h"

static int fails, checks;

enum { LAYOUT_DENSE, LAYOUT_BSHD, LAYOUT_LAST_STRIDED };
enum { SPECIAL_NONE, SPECIAL_LARGE, SPECIAL_NAN_Q, SPECIAL_NAN_K, SPECIAL_INF_V, SPECIAL_INF_K };

typedef struct amx_case {
  int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
  int causal, layout, special;
} amx_case_t;

typedef struct amx_buf {
  bp_plugin_tensor_t t;
  uint16_t *p;
  int64_t n; /* elements of storage */
} amx_buf_t;

/* A bf16 [d0, d1, d2, d3] tensor of values in [lo, hi]: dense, with dims 1
 * and 2 swapped in memory ([B, S, H, D]), or with dims 2 and 3 swapped
 * (last dim strided). */
static amx_buf_t buf_make(int64_t d0, int64_t d1, int64_t d2, int64_t d3, int layout, double lo,
                          double hi) {
  amx_buf_t b;
  memset(&b, 0, sizeof b);
  int64_t shape[4] = {d0, d1, d2, d3}, st[4];
  int order[4] = {0, 1, 2, 3}; /* outermost to innermost in memory */
  if (layout == LAYOUT_BSHD) order[1] = 2, order[2] = 1;
  if (layout == LAYOUT_LAST_STRIDED) order[2] = 3, order[3] = 2;
  int64_t s = 1;
  for (int x = 3; x >= 0; x--) st[order[x]] = s, s *= shape[order[x]];
  b.n = s;
  b.p = malloc(sizeof(uint16_t) * (size_t)(s + 1));
  for (int64_t i = 0; i < s; i++)
    cpu_store(b.p, BP_BF16, i, lo + (hi - lo) * (rand() % 10001) / 10000.0);
  b.t.ptr = (uint64_t)(uintptr_t)b.p;
  b.t.dtype = BP_BF16;
  b.t.rank = 4;
  for (int x = 0; x < 4; x++) b.t.shape[x] = shape[x], b.t.strides[x] = st[x];
  return b;
}

static int64_t at4(const bp_plugin_tensor_t *t, int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * t->strides[0] + b * t->strides[1] + c * t->strides[2] + d * t->strides[3];
}

/* Compares out with the reference's; prints the first mismatch. */
static void compare(const cpu_device_t *dev, const amx_case_t *c, const amx_buf_t *o,
                    const amx_buf_t *r, double amp) {
  /* bf16 inputs are exact in both; the kernel rounds the weights and the
   * output to bf16 (2^-9 relative each) and sums the scores in f32 */
  double rtol = 2e-2, atol = 2e-2 + 4e-8 * (double)c->D * amp * amp;
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t h = 0; h < c->Hq; h++)
      for (int64_t i = 0; i < c->Sq; i++)
        for (int64_t e = 0; e < c->Dv; e++) {
          int64_t x = at4(&o->t, b, h, i, e);
          double g = cpu_load(o->p, BP_BF16, x), w = cpu_load(r->p, BP_BF16, x);
          bool ok = isnan(w)   ? isnan(g)
                    : isinf(w) ? g == w
                               : !isnan(g) && fabs(g - w) <= atol + rtol * fabs(w);
          if (ok) continue;
          printf("MISMATCH thr%u B%ld Hq%ld Hkv%ld Sq%ld Skv%ld D%ld Dv%ld causal%d layout%d "
                 "special%d at [%ld,%ld,%ld,%ld]: got %.9g want %.9g\n",
                 dev->threads, (long)c->B, (long)c->Hq, (long)c->Hkv, (long)c->Sq, (long)c->Skv,
                 (long)c->D, (long)c->Dv, c->causal, c->layout, c->special, (long)b, (long)h,
                 (long)i, (long)e, g, w);
          fails++;
          return;
        }
}

/* Runs one case through fn and, when it ran, the reference; returns fn's
 * status. */
static bp_status_t run_case(cpu_device_t *dev, const amx_case_t *c,
                            bp_status_t (*fn)(cpu_device_t *, const bp_attention_args_t *)) {
  double amp = c->special == SPECIAL_LARGE ? 24.0 : 2.0;
  int ql = c->layout == LAYOUT_LAST_STRIDED ? LAYOUT_DENSE : c->layout;
  amx_buf_t q = buf_make(c->B, c->Hq, c->Sq, c->D, ql, -amp, amp);
  amx_buf_t k = buf_make(c->B, c->Hkv, c->Skv, c->D, c->layout, -amp, amp);
  amx_buf_t v = buf_make(c->B, c->Hkv, c->Skv, c->Dv, c->layout, -2, 2);
  amx_buf_t o = buf_make(c->B, c->Hq, c->Sq, c->Dv, c->layout, 0, 0);
  amx_buf_t r = buf_make(c->B, c->Hq, c->Sq, c->Dv, c->layout, 0, 0);
  for (int64_t i = 0; i < o.n; i++) cpu_store(o.p, BP_BF16, i, NAN);
  if (c->special == SPECIAL_NAN_Q && c->Sq > 1)
    cpu_store(q.p, BP_BF16, at4(&q.t, 0, 0, c->Sq / 2, c->D - 1), NAN);
  if (c->special == SPECIAL_NAN_K && c->Skv > 0)
    cpu_store(k.p, BP_BF16, at4(&k.t, 0, 0, c->Skv - 1, 0), NAN);
  if (c->special == SPECIAL_INF_K && c->Skv > 1)
    cpu_store(k.p, BP_BF16, at4(&k.t, 0, 0, c->Skv / 2, 0), INFINITY);
  if (c->special == SPECIAL_INF_V && c->Skv > 2) {
    cpu_store(v.p, BP_BF16, at4(&v.t, 0, 0, c->Skv - 1, 0), NAN);
    cpu_store(v.p, BP_BF16, at4(&v.t, 0, 0, c->Skv - 2, c->Dv - 1), INFINITY);
  }
  bp_attention_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.causal = c->causal;
  a.scale = c->special == SPECIAL_LARGE ? 1.0 : 1.0 / sqrt((double)c->D);
  a.q = q.t, a.k = k.t, a.v = v.t, a.out = o.t;
  bp_status_t st = fn(dev, &a);
  checks++;
  if (st == BP_OK) {
    a.out = r.t;
    int64_t tasks = cpu_ref_attention_tasks(&a);
    assert_true(tasks >= 0);
    assert_int_equal(cpu_ref_attention_range(&a, 0, tasks), BP_OK);
    compare(dev, c, &o, &r, amp);
  }
  free(q.p), free(k.p), free(v.p), free(o.p), free(r.p);
  return st;
}

/* The AVX-512 level with 1 and 2 threads when the CPU has AMX-BF16 and
 * Linux grants tile state; none otherwise. */
static bool devs_open_amx(dev_set_t *s) {
  const cpu_features_t *f = cpu_features_get();
  s->n = 0;
  if (!f->amx_bf16 || !f->avx512_bf16 || !f->avx512f || !f->avx512bw || !f->avx512vl || !f->avx512dq ||
      !cpu_amx_request())
    return false;
  devs_open_levels(s, BP_ISA_AVX512, BP_ISA_AVX512);
  return s->n > 0;
}

#define OPEN_OR_SKIP(s)                                                                         \
  do {                                                                                          \
    if (!devs_open_amx(s)) TEST_SKIP_CASE("no AMX-BF16 with AVX-512 and AVX512-BF16, or no tile permission"); \
  } while (0)

static void run_all(dev_set_t *s, amx_case_t c) {
  for (int i = 0; i < s->n; i++)
    if (run_case(&s->dev[i], &c, cpu_fast_attention_amx) != BP_OK) {
      printf("status != BP_OK for Sq%ld Skv%ld D%ld Dv%ld causal%d special%d\n", (long)c.Sq,
             (long)c.Skv, (long)c.D, (long)c.Dv, c.causal, c.special);
      fails++;
    }
}

static void finish(dev_set_t *s, const char *what) {
  devs_close(s);
  printf("attention amx %s: %d cases, %d failures\n", what, checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* Sequence lengths around the tile (16), the query block (32) and the key
 * block (256), Sq == Skv and not (bottom-right mask), both masks. */
static void test_amx_block_edges(void **state) {
  (void)state;
  dev_set_t s;
  OPEN_OR_SKIP(&s);
  srand(21);
  fails = checks = 0;
  static const int64_t S[] = {1, 15, 16, 17, 31, 32, 33, 63, 65, 129, 200, 255, 256, 257, 300};
  int ns = (int)(sizeof S / sizeof S[0]);
  for (int x = 0; x < ns; x++)
    for (int causal = 0; causal <= 1; causal++) {
      run_all(&s, (amx_case_t){1, 2, 2, S[x], S[x], 64, 64, causal, LAYOUT_DENSE, 0});
      int64_t other = S[(x + 5) % ns];
      run_all(&s, (amx_case_t){1, 2, 1, S[x], other, 32, 48, causal, LAYOUT_DENSE, 0});
      run_all(&s, (amx_case_t){1, 2, 1, other, S[x], 40, 24, causal, LAYOUT_DENSE, 0});
    }
  finish(&s, "block edges");
}

/* Grouped-query heads, Dv != D both ways, head dims 1 to 160 (off the
 * 32-wide tile row), strided and permuted views, two batches. */
static void test_amx_heads_dims_layouts(void **state) {
  (void)state;
  dev_set_t s;
  OPEN_OR_SKIP(&s);
  srand(22);
  fails = checks = 0;
  static const int64_t shapes[][7] = {
      /* B, Hq, Hkv, Sq, Skv, D, Dv */
      {1, 8, 2, 100, 100, 64, 64}, {2, 6, 3, 65, 130, 128, 128}, {1, 4, 1, 50, 300, 64, 33},
      {1, 2, 2, 40, 40, 1, 1},     {1, 3, 1, 70, 90, 80, 160},   {2, 4, 4, 33, 17, 96, 16},
      {1, 4, 2, 129, 129, 128, 64}};
  for (size_t x = 0; x < sizeof shapes / sizeof shapes[0]; x++)
    for (int layout = LAYOUT_DENSE; layout <= LAYOUT_LAST_STRIDED; layout++)
      for (int causal = 0; causal <= 1; causal++) {
        const int64_t *p = shapes[x];
        run_all(&s, (amx_case_t){p[0], p[1], p[2], p[3], p[4], p[5], p[6], causal, layout, 0});
      }
  finish(&s, "heads, dims, layouts");
}

/* Scores of +-24^2 * 64 (the running max moves between key blocks), NaN
 * in q or k, inf in k, and NaN and inf in v without the mask. */
static void test_amx_special(void **state) {
  (void)state;
  dev_set_t s;
  OPEN_OR_SKIP(&s);
  srand(23);
  fails = checks = 0;
  for (int causal = 0; causal <= 1; causal++) {
    run_all(&s, (amx_case_t){1, 2, 1, 200, 300, 64, 64, causal, LAYOUT_DENSE, SPECIAL_LARGE});
    run_all(&s, (amx_case_t){1, 2, 2, 70, 140, 64, 64, causal, LAYOUT_DENSE, SPECIAL_NAN_Q});
    run_all(&s, (amx_case_t){1, 2, 2, 70, 140, 64, 64, causal, LAYOUT_DENSE, SPECIAL_NAN_K});
    run_all(&s, (amx_case_t){1, 2, 2, 70, 140, 64, 64, causal, LAYOUT_DENSE, SPECIAL_INF_K});
  }
  run_all(&s, (amx_case_t){1, 2, 2, 70, 140, 64, 64, 0, LAYOUT_DENSE, SPECIAL_INF_V});
  finish(&s, "special values");
}

/* Causal with Sq > Skv: the first Sq - Skv rows see no key and must be
 * zeros, not NaN (the output starts as NaN). */
static void test_amx_masked_rows_zero(void **state) {
  (void)state;
  dev_set_t s;
  OPEN_OR_SKIP(&s);
  srand(24);
  fails = checks = 0;
  run_all(&s, (amx_case_t){1, 2, 1, 100, 40, 64, 64, 1, LAYOUT_DENSE, 0});
  run_all(&s, (amx_case_t){2, 2, 2, 33, 1, 32, 16, 1, LAYOUT_BSHD, 0});
  finish(&s, "fully masked rows");
}

/* What the kernel does not cover goes back to the next kernel: f32 and
 * mixed dtypes, D == 0, Hq not a multiple of Hkv, and causal attention
 * over values that are not all finite (a hidden key's 0 * inf). */
static void test_amx_declines(void **state) {
  (void)state;
  dev_set_t s;
  OPEN_OR_SKIP(&s);
  amx_buf_t q = buf_make(1, 4, 8, 16, LAYOUT_DENSE, -1, 1);
  amx_buf_t k = buf_make(1, 2, 8, 16, LAYOUT_DENSE, -1, 1);
  amx_buf_t o = buf_make(1, 4, 8, 16, LAYOUT_DENSE, 0, 0);
  bp_attention_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.scale = 0.25;
  a.q = q.t, a.k = k.t, a.v = k.t, a.out = o.t;
  assert_int_equal(cpu_fast_attention_amx(&s.dev[0], &a), BP_OK);
  a.out.dtype = BP_F32;
  assert_int_equal(cpu_fast_attention_amx(&s.dev[0], &a), BP_ERR_UNIMPLEMENTED);
  a.out.dtype = BP_BF16, a.q.dtype = a.k.dtype = a.v.dtype = BP_F32;
  assert_int_equal(cpu_fast_attention_amx(&s.dev[0], &a), BP_ERR_UNIMPLEMENTED);
  a.q.dtype = a.k.dtype = a.v.dtype = BP_BF16;
  a.k.shape[1] = a.v.shape[1] = 3;
  assert_int_equal(cpu_fast_attention_amx(&s.dev[0], &a), BP_ERR_UNIMPLEMENTED);
  a.k = k.t, a.v = k.t;
  cpu_store(k.p, BP_BF16, at4(&k.t, 0, 1, 7, 3), INFINITY);
  a.causal = 1;
  assert_int_equal(cpu_fast_attention_amx(&s.dev[0], &a), BP_ERR_UNIMPLEMENTED);
  checks = 1, fails = 0;
  free(q.p), free(k.p), free(o.p);
  finish(&s, "declines");
}

/* cpu_fast_attention runs this kernel for bf16 inputs: its output is the
 * kernel's, bit for bit, which the AVX2 kernel's f32 arithmetic is not. */
static void test_amx_chosen_for_bf16(void **state) {
  (void)state;
  dev_set_t s;
  OPEN_OR_SKIP(&s);
  srand(25);
  fails = checks = 0;
  amx_case_t c = {1, 4, 2, 150, 150, 64, 64, 1, LAYOUT_DENSE, 0};
  for (int i = 0; i < s.n; i++) {
    srand(26);
    assert_int_equal(run_case(&s.dev[i], &c, cpu_fast_attention_amx), BP_OK);
    amx_buf_t q = buf_make(1, 4, 150, 64, LAYOUT_DENSE, -2, 2);
    amx_buf_t k = buf_make(1, 2, 150, 64, LAYOUT_DENSE, -2, 2);
    amx_buf_t o1 = buf_make(1, 4, 150, 64, LAYOUT_DENSE, 0, 0);
    amx_buf_t o2 = buf_make(1, 4, 150, 64, LAYOUT_DENSE, 0, 0);
    bp_attention_args_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.causal = 1;
    a.scale = 0.125;
    a.q = q.t, a.k = k.t, a.v = k.t, a.out = o1.t;
    assert_int_equal(cpu_fast_attention_amx(&s.dev[i], &a), BP_OK);
    a.out = o2.t;
    assert_int_equal(cpu_fast_attention(&s.dev[i], &a), BP_OK);
    if (memcmp(o1.p, o2.p, sizeof(uint16_t) * (size_t)o1.n) != 0) {
      printf("cpu_fast_attention's bf16 output is not the AMX kernel's (thr%u)\n",
             s.dev[i].threads);
      fails++;
    }
    free(q.p), free(k.p), free(o1.p), free(o2.p);
  }
  finish(&s, "chosen for bf16");
}

static double thread_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Best of reps calls of fn on a, by this thread's CPU time (one thread:
 * the time other processes take from the core does not count). */
static double best_seconds(cpu_device_t *dev, const bp_attention_args_t *a, int reps,
                           bp_status_t (*fn)(cpu_device_t *, const bp_attention_args_t *)) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = thread_seconds();
    assert_int_equal(fn(dev, a), BP_OK);
    double t = thread_seconds() - t0;
    best = t < best ? t : best;
  }
  return best;
}

/* Not a test: with BP_FAST_BENCH=1, bp bench's B1 H8 attention shapes on
 * one thread, the bf16 kernel on AMX beside the f32 AVX-512 kernel on the
 * same values. */
static void bench_amx_vs_f32(void **state) {
  (void)state;
  dev_set_t s;
  if (!getenv("BP_FAST_BENCH")) TEST_SKIP_CASE("benchmark: set BP_FAST_BENCH=1 to run it");
  OPEN_OR_SKIP(&s);
  for (int64_t S = 512; S <= 2048; S *= 2)
    for (int64_t D = 64; D <= 128; D *= 2)
      for (int causal = 1; causal >= 0; causal--) {
        int64_t n = 8 * S * D;
        float *f[4];
        amx_buf_t h[4];
        bp_attention_args_t a[2];
        for (int x = 0; x < 4; x++) {
          h[x] = buf_make(1, 8, S, D, LAYOUT_DENSE, -1, 1);
          f[x] = malloc(sizeof(float) * (size_t)n);
          for (int64_t i = 0; i < n; i++) f[x][i] = (float)cpu_load(h[x].p, BP_BF16, i);
        }
        for (int t = 0; t < 2; t++) {
          memset(&a[t], 0, sizeof a[t]);
          a[t].struct_size = sizeof a[t];
          a[t].causal = causal;
          a[t].scale = 1.0 / sqrt((double)D);
          bp_plugin_tensor_t *ts[4] = {&a[t].q, &a[t].k, &a[t].v, &a[t].out};
          for (int x = 0; x < 4; x++) {
            *ts[x] = h[x].t;
            if (t == 0) ts[x]->dtype = BP_F32, ts[x]->ptr = (uint64_t)(uintptr_t)f[x];
          }
        }
        double t32 = best_seconds(&s.dev[0], &a[0], 3, cpu_fast_attention_avx512);
        double t16 = best_seconds(&s.dev[0], &a[1], 3, cpu_fast_attention_amx);
        double flops = 4.0 * 8 * (double)S * (double)S * (double)D * (causal ? 0.5 : 1.0);
        printf("attention B1 H8 S%ld D%ld%s, 1 thread: f32 %.2f ms %.1f GFLOP/s, bf16 AMX %.2f ms "
               "%.1f GFLOP/s, %.2fx\n",
               (long)S, (long)D, causal ? " causal" : "", t32 * 1e3, flops / t32 * 1e-9, t16 * 1e3,
               flops / t16 * 1e-9, t32 / t16);
        for (int x = 0; x < 4; x++) free(h[x].p), free(f[x]);
      }
  devs_close(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_amx_block_edges),      cmocka_unit_test(test_amx_heads_dims_layouts),
      cmocka_unit_test(test_amx_special),          cmocka_unit_test(test_amx_masked_rows_zero),
      cmocka_unit_test(test_amx_declines),         cmocka_unit_test(test_amx_chosen_for_bf16),
      cmocka_unit_test(bench_amx_vs_f32),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
