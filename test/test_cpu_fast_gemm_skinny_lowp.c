/*
 * test_cpu_fast_gemm_skinny_lowp.c — the GEMM kernel for a few rows of C
 * (plugins/cpu/fast/gemm/gemm_skinny_lowp.c), which one-token decode's
 * projections take, bf16 / f16 (m <= 16) and f32 (m <= 7), against a
 * double-precision reference at the dtype's rounding: odd n and k (column tails, k not a multiple
 * of the four rows a pass sums), A and C transposed by strides, B's rows
 * padded, batch 2 with a shared B, alpha / beta, beta == 0 over a NaN C,
 * 1 and 2 threads (W split by columns and by rows), and the ABI 1.5
 * epilogue (bias broadcast over rows, GELU / SiLU, beta 1 for a residual
 * add) applied before the one rounding, through cpu_fast_gemm as the
 * plugin calls it. Shapes the kernel does not take (m = 17, f32 m = 8,
 * B's columns contiguous) are declined. bf16 runs twice: on the AMX
 * kernel (gemm_skinny_amx.c: whole and ragged 64-column blocks and 32-row
 * chunks) and on the AVX-512 one, and which calls take AMX is checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/gemm/gemm.h"
#include "plugins/cpu/fast/gemm/gemm_skinny.h"
#include "test/skip.h"

static int fails, checks;

typedef struct skcase {
  bp_dtype_t dt;
  int64_t batch, m, n, k;
  bool a_cols, c_cols; /* A / C column-major (transposed by strides) */
  double alpha, beta;
  bool bias;
  int act;       /* -1: none */
  bool via_gemm; /* through cpu_fast_gemm (the epilogue's door) */
} skcase_t;

static bp_plugin_tensor_t t3(void *p, bp_dtype_t dt, int64_t d0, int64_t d1, int64_t d2, int64_t s0,
                             int64_t s1, int64_t s2) {
  bp_plugin_tensor_t t = {.ptr = (uint64_t)(uintptr_t)p, .dtype = dt, .rank = 3};
  t.shape[0] = d0, t.shape[1] = d1, t.shape[2] = d2;
  t.strides[0] = s0, t.strides[1] = s1, t.strides[2] = s2;
  return t;
}

static double rnd(void) {
  return (rand() % 2001 - 1000) / 997.0;
}

static double act_ref(int op, double x) {
  if (op == BP_UNARY_GELU) return 0.5 * x * erfc(-x * M_SQRT1_2);
  if (op == BP_UNARY_SILU) return x / (1.0 + exp(-x));
  return x;
}

static void run_case(cpu_device_t *dev, const skcase_t *s) {
  int64_t m = s->m, n = s->n, k = s->k, nb = s->batch;
  int64_t ldb = n + 3;
  size_t es = s->dt == BP_F32 ? 4 : 2;
  void *a = malloc(es * (size_t)(nb * m * k)), *b = malloc(es * (size_t)(k * ldb));
  void *c = malloc(es * (size_t)(nb * m * n)), *bias = malloc(es * (size_t)n);
  double *want = malloc(sizeof(double) * (size_t)(nb * m * n));
  for (int64_t e = 0; e < nb * m * k; e++) cpu_store(a, s->dt, e, rnd());
  for (int64_t e = 0; e < k * ldb; e++) cpu_store(b, s->dt, e, rnd());
  for (int64_t e = 0; e < n; e++) cpu_store(bias, s->dt, e, rnd());
  for (int64_t e = 0; e < nb * m * n; e++) cpu_store(c, s->dt, e, s->beta == 0 ? NAN : rnd());
  /* A [m, k]: row-major, or column-major (k x m stored) */
  int64_t sam = s->a_cols ? 1 : k, sak = s->a_cols ? m : 1;
  int64_t scm = s->c_cols ? 1 : n, scn = s->c_cols ? m : 1;
  double eps = s->dt == BP_BF16 ? 1.0 / 256 : s->dt == BP_F16 ? 1.0 / 2048 : 1e-6;
  double *mag = malloc(sizeof(double) * (size_t)(nb * m * n));
  for (int64_t bt = 0; bt < nb; bt++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t jj = 0; jj < n; jj++) {
        double acc = 0, sum_abs = 0;
        for (int64_t p = 0; p < k; p++) {
          double t =
              cpu_load(a, s->dt, bt * m * k + i * sam + p * sak) * cpu_load(b, s->dt, p * ldb + jj);
          acc += t, sum_abs += fabs(t);
        }
        int64_t off = bt * m * n + i * scm + jj * scn;
        double v = s->alpha * acc + (s->beta == 0 ? 0 : s->beta * cpu_load(c, s->dt, off));
        if (s->bias) v += cpu_load(bias, s->dt, jj);
        want[off] = s->act >= 0 ? act_ref(s->act, v) : v;
        mag[off] = fabs(s->alpha) * sum_abs + fabs(v) + 1e-3;
      }
  bp_gemm_args_t g = {.struct_size = sizeof g, .alpha = s->alpha, .beta = s->beta};
  g.a = t3(a, s->dt, nb, m, k, m * k, sam, sak);
  g.b = t3(b, s->dt, nb, k, n, 0, ldb, 1);
  g.c = t3(c, s->dt, nb, m, n, m * n, scm, scn);
  if (s->bias) g.bias = t3(bias, s->dt, nb, m, n, 0, 0, 1);
  if (s->act >= 0) g.flags |= BP_GEMM_FLAG_ACTIVATION, g.activation = s->act;
  bool f32 = s->dt == BP_F32;
  assert_true(f32 ? cpu_fast_gemm_skinny_f32_ok(dev, &g) : cpu_fast_gemm_skinny_lowp_ok(dev, &g));
  bp_status_t st = s->via_gemm ? cpu_fast_gemm(dev, &g)
                   : f32       ? cpu_fast_gemm_skinny_f32(dev, &g)
                               : cpu_fast_gemm_skinny_lowp(dev, &g);
  assert_int_equal(st, BP_OK);
  checks++;
  for (int64_t e = 0; e < nb * m * n; e++) {
    double got = cpu_load(c, s->dt, e);
    /* one rounding of the result, and f32 sums of k products */
    double tol = eps * fabs(want[e]) + 1e-5 * mag[e];
    if (!(fabs(got - want[e]) <= tol)) {
      printf("MISMATCH %s thr%u b%ld m%ld n%ld k%ld acol%d ccol%d alpha %g beta %g bias %d "
             "act %d gemm %d at %ld: %.6g vs %.6g\n",
             s->dt == BP_BF16 ? "bf16" : s->dt == BP_F16 ? "f16" : "f32", dev->threads, (long)nb, (long)m, (long)n, (long)k,
             s->a_cols, s->c_cols, s->alpha, s->beta, s->bias, s->act, s->via_gemm, (long)e, got,
             want[e]);
      fails++;
      break;
    }
  }
  free(a), free(b), free(c), free(bias), free(want), free(mag);
}

static bool have_avx512(void) {
  const cpu_features_t *f = cpu_features_get();
  return f->avx512f && f->avx512bw && f->avx512vl && f->fma;
}

/* The bf16 / f16 grid on one kernel: bf16 on AMX tiles (amx, where the
 * CPU has them) or on the AVX-512 kernel. */
static void skinny_grid(bool amx) {
  srand(5);
  fails = checks = 0;
  cpu_fast_skinny_amx_enabled = amx;
  bp_dtype_t dts[2] = {BP_BF16, BP_F16};
  for (unsigned thr = 1; thr <= 2; thr++) {
    cpu_device_t dev = {.isa = BP_ISA_BEST, .threads = thr, .pool = cpu_pool_create(thr)};
    for (int d = 0; d < 2; d++) {
      for (int64_t m = 1; m <= 16; m++) {
        skcase_t s = {dts[d], 1, m, 37 + 2 * m, 19 + m, m % 2, m % 3 == 0, 1, 0, false, -1, false};
        run_case(&dev, &s);
      }
      /* W split by columns (several blocks), ragged tails */
      run_case(&dev,
               &(skcase_t){dts[d], 1, 2, 4111, 131, false, false, -1.5, 0.5, false, -1, false});
      /* W split by rows between the workers, partial sums added after */
      run_case(&dev, &(skcase_t){dts[d], 1, 2, 1001, 1027, false, false, 0.5, 0, false, -1, false});
      run_case(&dev, &(skcase_t){dts[d], 1, 16, 300, 613, true, true, 1, 1, false, -1, false});
      /* batch 2 over one shared B, one column of C */
      run_case(&dev, &(skcase_t){dts[d], 2, 3, 1, 77, false, true, 2, 0, false, -1, false});
      run_case(&dev, &(skcase_t){dts[d], 2, 5, 45, 9, true, false, 1, -1, false, -1, false});
      /* the AMX kernel's edges: whole 64-column blocks and 32-row chunks,
       * a last block of 32 or fewer columns, k one past a chunk, decode's
       * shapes with the epilogue */
      run_case(&dev, &(skcase_t){dts[d], 1, 2, 256, 256, false, false, 1, 0, false, -1, false});
      run_case(&dev, &(skcase_t){dts[d], 1, 4, 96, 33, false, false, 1, 0, false, -1, false});
      run_case(&dev, &(skcase_t){dts[d], 1, 2, 1024, 256, false, false, 1, 0, true,
                                 BP_UNARY_GELU, true});
      run_case(&dev, &(skcase_t){dts[d], 1, 2, 256, 1024, false, false, 1, 1, true, -1, true});
      /* W past 768 KiB with 8 rows and more (AMX), ragged last block */
      run_case(&dev, &(skcase_t){dts[d], 1, 12, 600, 1030, false, true, 1, 0.5, false, -1, false});
    }
    cpu_pool_destroy(dev.pool);
  }
  cpu_fast_skinny_amx_enabled = -1;
  printf("skinny lowp (bf16 on %s): %d cases, %d failures\n", amx ? "AMX" : "AVX-512", checks,
         fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

static void test_skinny_grid(void **state) {
  (void)state;
  if (!have_avx512()) TEST_SKIP_CASE("no AVX-512 F/BW/VL on this CPU");
  skinny_grid(false);
}

static void test_skinny_grid_amx(void **state) {
  (void)state;
  if (!have_avx512()) TEST_SKIP_CASE("no AVX-512 F/BW/VL on this CPU");
  const cpu_features_t *f = cpu_features_get();
  if (!f->amx_bf16 || !cpu_amx_request()) TEST_SKIP_CASE("no AMX-BF16 tiles on this CPU");
  skinny_grid(true);
}

/* Which bf16 calls the AMX kernel takes: m <= 16 and W up to a small
 * model's layer (768 KiB), any W from 8 rows on; the switch turns it
 * off. */
static void test_skinny_amx_choice(void **state) {
  (void)state;
  const cpu_features_t *f = cpu_features_get();
  if (!have_avx512() || !f->amx_bf16 || !cpu_amx_request())
    TEST_SKIP_CASE("no AMX-BF16 tiles on this CPU");
  skinny_job_t j = {.kind = SKINNY_BF16, .m = 2, .k = 256, .n = 1408};
  cpu_fast_skinny_amx_enabled = 1;
  assert_true(cpu_fast_skinny_amx_ok(&j)); /* 704 KiB: a small model's W */
  j.k = 1024, j.n = 512; /* 1 MiB of W: streamed from memory by the AVX-512 kernel */
  assert_false(cpu_fast_skinny_amx_ok(&j));
  j.m = 8; /* unless C has 8 rows or more: the FMAs, not W, bound that kernel */
  assert_true(cpu_fast_skinny_amx_ok(&j));
  j.m = 7;
  assert_false(cpu_fast_skinny_amx_ok(&j));
  j.m = 2;
  j.k = 256, j.n = 1408, j.kind = SKINNY_F16;
  assert_false(cpu_fast_skinny_amx_ok(&j));
  j.kind = SKINNY_BF16, j.m = 17;
  assert_false(cpu_fast_skinny_amx_ok(&j));
  j.m = 2;
  cpu_fast_skinny_amx_enabled = 0;
  assert_false(cpu_fast_skinny_amx_ok(&j));
  cpu_fast_skinny_amx_enabled = -1;
}

/* f32 with m = 1..7: the same grid, and the epilogue of a decode step's
 * projections (bias + GELU, bias + the residual add as beta 1). */
static void test_skinny_f32(void **state) {
  (void)state;
  if (!have_avx512()) TEST_SKIP_CASE("no AVX-512 F/BW/VL on this CPU");
  srand(9);
  fails = checks = 0;
  for (unsigned thr = 1; thr <= 2; thr++) {
    cpu_device_t dev = {.isa = BP_ISA_BEST, .threads = thr, .pool = cpu_pool_create(thr)};
    for (int64_t m = 1; m <= CPU_FAST_SKINNY_F32_MAX_M; m++) {
      run_case(&dev, &(skcase_t){BP_F32, 1, m, 37 + 2 * m, 19 + m, m % 2, m % 3 == 0, 1, 0, false,
                                 -1, false});
      run_case(&dev, &(skcase_t){BP_F32, 1, m, 4111, 131, false, false, -1.5, 0.5, false, -1, false});
      run_case(&dev, &(skcase_t){BP_F32, 1, m, 1001, 1027, false, false, 0.5, 0, false, -1, false});
      run_case(&dev, &(skcase_t){BP_F32, 1, m, 1537, 257, false, false, 1, 0, true, BP_UNARY_GELU,
                                 true});
      run_case(&dev, &(skcase_t){BP_F32, 1, m, 300, 613, false, m == 3, 1, 1, true, -1, true});
      run_case(&dev, &(skcase_t){BP_F32, 2, m, 45, 9, true, false, 1, -1, false, BP_UNARY_SILU,
                                 true});
    }
    cpu_pool_destroy(dev.pool);
  }
  printf("skinny f32: %d cases, %d failures\n", checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0);
}

static void test_skinny_epilogue(void **state) {
  (void)state;
  if (!have_avx512()) TEST_SKIP_CASE("no AVX-512 F/BW/VL on this CPU");
  srand(7);
  fails = checks = 0;
  cpu_device_t dev = {.isa = BP_ISA_BEST, .threads = 2, .pool = cpu_pool_create(2)};
  bp_dtype_t dts[2] = {BP_BF16, BP_F16};
  for (int d = 0; d < 2; d++) {
    run_case(&dev,
             &(skcase_t){dts[d], 1, 2, 1537, 257, false, false, 1, 0, true, BP_UNARY_GELU, true});
    run_case(&dev, &(skcase_t){dts[d], 1, 7, 33, 65, true, false, 1, 1, true, -1, true});
    run_case(&dev, &(skcase_t){dts[d], 2, 16, 95, 31, false, true, -0.5, 0.25, false, BP_UNARY_SILU,
                               true});
    run_case(&dev,
             &(skcase_t){dts[d], 1, 1, 64, 1024, false, false, 1, 0, true, BP_UNARY_SILU, false});
  }
  cpu_pool_destroy(dev.pool);
  printf("skinny lowp epilogue: %d cases, %d failures\n", checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0);
}

/* Shapes outside the kernel are declined before anything is written. */
static void test_skinny_declines(void **state) {
  (void)state;
  cpu_device_t dev = {.isa = BP_ISA_BEST, .threads = 1};
  uint16_t buf[64] = {0};
  bp_gemm_args_t g = {.struct_size = sizeof g, .alpha = 1};
  g.a = t3(buf, BP_BF16, 1, 17, 2, 34, 2, 1);
  g.b = t3(buf, BP_BF16, 1, 2, 2, 0, 2, 1);
  g.c = t3(buf, BP_BF16, 1, 17, 2, 34, 2, 1);
  assert_false(cpu_fast_gemm_skinny_lowp_ok(&dev, &g)); /* m = 17 */
  g.a.shape[1] = g.c.shape[1] = 2;
  if (have_avx512()) assert_true(cpu_fast_gemm_skinny_lowp_ok(&dev, &g));
  g.b.strides[1] = 1, g.b.strides[2] = 2; /* B's columns contiguous */
  assert_false(cpu_fast_gemm_skinny_lowp_ok(&dev, &g));
  g.b.strides[1] = 2, g.b.strides[2] = 1;
  g.a.dtype = g.b.dtype = g.c.dtype = BP_F32;
  assert_false(cpu_fast_gemm_skinny_lowp_ok(&dev, &g));
  if (have_avx512()) assert_true(cpu_fast_gemm_skinny_f32_ok(&dev, &g));
  g.a.shape[1] = g.c.shape[1] = CPU_FAST_SKINNY_F32_MAX_M + 1;
  assert_false(cpu_fast_gemm_skinny_f32_ok(&dev, &g)); /* f32: m = 8 */
  g.a.shape[1] = g.c.shape[1] = 2;
  g.a.dtype = g.b.dtype = g.c.dtype = BP_BF16;
  dev.isa = BP_ISA_AVX2;
  assert_false(cpu_fast_gemm_skinny_lowp_ok(&dev, &g));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_skinny_grid),
                                     cmocka_unit_test(test_skinny_grid_amx),
                                     cmocka_unit_test(test_skinny_amx_choice),
                                     cmocka_unit_test(test_skinny_f32),
                                     cmocka_unit_test(test_skinny_epilogue),
                                     cmocka_unit_test(test_skinny_declines)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
