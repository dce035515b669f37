/*
 * test_cpu_fast_gemm_f16.c — f16 GEMM on the AMX-BF16 tiles
 * (plugins/cpu/fast/gemm/gemm_amx_f16.c), where each f16 value is split into
 * two bf16 values so that every product stays exact. Called through
 * cpu_fast_gemm_lowp, which must take the case (BP_OK, not
 * BP_ERR_UNIMPLEMENTED) on a CPU with AMX-BF16, and checked against a
 * double-precision reference with a tolerance tight enough that losing the
 * low halves (an error of 2^-9 per product) fails: f16 output rounding plus
 * f32 accumulation only. Edges: m, n, k not multiples of the 32 x 32 tiles
 * or the 8-step k chunks, several k blocks and B blocks, transposed A and
 * B, padded leading dimensions, column-major C, batches, alpha / beta,
 * beta == 0 over a C full of NaN, and Inf / NaN inputs.
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
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/gemm/gemm.h"
#include "plugins/cpu/tensor.h"
#include "test/gemm_half_check.h"
#include "test/skip.h"

static bool amx_here(void) {
  const cpu_features_t *f = cpu_features_get();
  return f->amx_bf16 && f->avx512bw && f->avx512vl && f->f16c && cpu_amx_request();
}

static uint16_t f2h(double v) {
  return cpu_f16_from_double(v);
}
static double h2d(uint16_t h) {
  return cpu_f16_to_float(h);
}

/* A random f16 with a full 11-bit mantissa (most of them), in (-2, 2). */
static uint16_t rnd_h(void) {
  return f2h((rand() % 20001 - 10000) / 5003.0);
}

typedef struct shape {
  int64_t batch, m, n, k;
  int ta, tb, tc; /* A, B transposed; C column-major */
  double alpha, beta;
} shape_t;

static int fails, checks;

/* One case through cpu_fast_gemm_lowp on dev; counts a mismatch. */
static void run_case(cpu_device_t *dev, const shape_t *s) {
  int64_t m = s->m, n = s->n, k = s->k, nb = s->batch;
  int64_t lda = (s->ta ? m : k) + 3, ldb = (s->tb ? k : n) + 5, ldc = (s->tc ? m : n) + 2;
  int64_t sa = (s->ta ? k : m) * lda, sb = (s->tb ? n : k) * ldb, sc = (s->tc ? n : m) * ldc;
  uint16_t *A = malloc(2 * (size_t)(nb * sa)), *B = malloc(2 * (size_t)(nb * sb));
  uint16_t *C = malloc(2 * (size_t)(nb * sc));
  for (int64_t i = 0; i < nb * sa; i++) A[i] = rnd_h();
  for (int64_t i = 0; i < nb * sb; i++) B[i] = rnd_h();
  for (int64_t i = 0; i < nb * sc; i++) C[i] = s->beta == 0 ? 0x7e00 : rnd_h();
  int64_t am = s->ta ? 1 : lda, ak = s->ta ? lda : 1, bk = s->tb ? 1 : ldb, bn = s->tb ? ldb : 1,
          cm = s->tc ? 1 : ldc, cn = s->tc ? ldc : 1;
  /* the reference before C is overwritten */
  double *R = malloc(sizeof(double) * (size_t)(nb * m * n));
  double *T = malloc(sizeof(double) * (size_t)(nb * m * n));
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double acc = 0, mag = 0;
        for (int64_t p = 0; p < k; p++) {
          double x = h2d(A[b * sa + i * am + p * ak]) * h2d(B[b * sb + p * bk + j * bn]);
          acc += x;
          mag += fabs(x);
        }
        double c0 = s->beta == 0 ? 0 : h2d(C[b * sc + i * cm + j * cn]);
        double r = s->alpha * acc + s->beta * c0;
        R[(b * m + i) * n + j] = r;
        /* f16 rounding of the result, f32 rounding of alpha * acc and of
         * beta * C, and f32 accumulation of k exact products */
        T[(b * m + i) * n + j] = ldexp(fabs(r), -10) + ldexp(fabs(s->beta * c0), -22) +
                                 (double)(k + 4) * ldexp(mag * fabs(s->alpha), -23) + ldexp(1, -24);
      }
  bp_gemm_args_t g =
      test_gemm_args(s->alpha, s->beta, cpu_tensor_view3(A, BP_F16, nb, m, k, sa, am, ak),
                     cpu_tensor_view3(B, BP_F16, nb, k, n, sb, bk, bn),
                     cpu_tensor_view3(C, BP_F16, nb, m, n, sc, cm, cn));
  checks++;
  bp_status_t st = cpu_fast_gemm_lowp(dev, &g);
  if (st != BP_OK) {
    printf("status %d for %ldx%ldx%ldx%ld\n", st, (long)nb, (long)m, (long)n, (long)k);
    fails++;
    goto out;
  }
  int64_t x = test_gemm_first_miss(C, h2d, nb, m, n, sc, cm, cn, R, T);
  if (x >= 0) {
    int64_t b = x / (m * n), i = x / n % m, j = x % n;
    printf("MISMATCH thr%u %ldx%ldx%ldx%ld ta%d tb%d tc%d a%g b%g at %ld,%ld,%ld: "
           "%.8g vs %.8g\n",
           dev->threads, (long)nb, (long)m, (long)n, (long)k, s->ta, s->tb, s->tc, s->alpha,
           s->beta, (long)b, (long)i, (long)j, h2d(C[b * sc + i * cm + j * cn]), R[x]);
    fails++;
  }
out:
  free(A), free(B), free(C), free(R), free(T);
}

static void test_f16_amx_shapes(void **state) {
  (void)state;
  if (!amx_here()) {
    TEST_SKIP_CASE("no AMX-BF16 with AVX-512 BW / VL and F16C here, or no tile state");
    return;
  }
  /* ragged tiles (32), k chunks (8 source steps), several AMX k blocks
   * (64 source steps), B blocks (256 columns) and A blocks (256 rows) */
  static const shape_t shapes[] = {
      {1, 1, 1, 1, 0, 0, 0, 1, 0},       {1, 5, 7, 3, 0, 0, 0, 1, 0},
      {1, 33, 31, 17, 1, 0, 0, -1.5, 1}, {1, 32, 32, 8, 0, 1, 0, 1, 0.5},
      {2, 31, 33, 9, 1, 1, 1, 1, 0},     {1, 64, 48, 16, 0, 0, 1, 0.5, 1},
      {1, 70, 65, 100, 0, 1, 0, 1, 0},   {2, 97, 130, 257, 1, 0, 0, 1, -0.5},
      {1, 300, 70, 40, 0, 0, 0, 1, 0},   {1, 40, 300, 50, 0, 1, 1, -1, 1},
      {1, 130, 70, 1030, 0, 0, 0, 1, 0}, {1, 257, 289, 67, 1, 1, 0, 0.25, 0},
  };
  srand(5);
  fails = checks = 0;
  for (unsigned thr = 1; thr <= 2; thr++) {
    cpu_device_t dev = {.isa = BP_ISA_AVX512, .threads = thr, .pool = cpu_pool_create(thr)};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) run_case(&dev, &shapes[i]);
    cpu_pool_destroy(dev.pool);
  }
  printf("f16 amx: %d cases, %d failures\n", checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 rounds to 1 + 2^-9 in f16; the high
 * halves alone give 1. Inf times a finite value stays Inf, from A or from
 * B, also where the other value's low half is 0 (a split of Inf must not
 * meet it as 0 * Inf), NaN stays NaN, and beta == 0 ignores the NaN
 * already in C. */
static void test_f16_amx_special(void **state) {
  (void)state;
  if (!amx_here()) {
    TEST_SKIP_CASE("no AMX-BF16 with AVX-512 BW / VL and F16C here, or no tile state");
    return;
  }
  cpu_device_t dev = {.isa = BP_ISA_AVX512, .threads = 1, .pool = cpu_pool_create(1)};
  const double e = 0x1p-10;
  /* A: 3 x 2, B: 2 x 3, C: 3 x 3 */
  uint16_t A[6] = {f2h(1 + e), f2h(1), f2h(INFINITY), f2h(1), f2h(NAN), f2h(2)};
  uint16_t B[6] = {f2h(1 + e), f2h(1), f2h(1), 0, f2h(0.5), f2h(INFINITY)};
  uint16_t C[9];
  for (int i = 0; i < 9; i++) C[i] = 0x7e00; /* NaN */
  bp_gemm_args_t g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.alpha = 1;
  g.beta = 0;
  g.a = cpu_tensor_view3(A, BP_F16, 1, 3, 2, 6, 2, 1);
  g.b = cpu_tensor_view3(B, BP_F16, 1, 2, 3, 6, 3, 1);
  g.c = cpu_tensor_view3(C, BP_F16, 1, 3, 3, 9, 3, 1);
  assert_int_equal(cpu_fast_gemm_lowp(&dev, &g), BP_OK);
  double want[6] = {1 + 2 * e, 1.5 + e, INFINITY, INFINITY, INFINITY, INFINITY};
  for (int i = 0; i < 6; i++) {
    if (h2d(C[i]) != want[i]) printf("C[%d] = %g, want %g\n", i, h2d(C[i]), want[i]);
    assert_true(h2d(C[i]) == want[i]);
  }
  for (int i = 6; i < 9; i++) assert_true(isnan(h2d(C[i])));
  cpu_pool_destroy(dev.pool);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_amx_shapes),
      cmocka_unit_test(test_f16_amx_special),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
