/*
 * test_cpu_fast_gemm_amx.c — the bf16 GEMM driver (plugins/cpu/fast/gemm/
 * gemm_amx.c) with each of its block products: AMX-BF16 tiles
 * (cpu_fast_gemm_amx) and VDPBF16PS on zmm registers for CPUs without AMX
 * (cpu_fast_gemm_dpbf16, fast/gemm/gemm_dpbf16.c; it runs wherever the CPU
 * has AVX512-BF16, tiles or not). Each is called directly so that no other
 * path can stand in for it, one and two threads, against a
 * double-precision reference with a tolerance of bf16 output rounding
 * plus f32 accumulation. Its pieces each have cases here:
 *  - m, n, k not multiples of the 32 x 32 tiles or the 32-deep k chunks
 *    (the packers' zero padding, the merge's ragged rows and columns);
 *  - k past one and several k blocks (the f32 workspace between them), n
 *    past one block of B panels (the L2 prefetch of the next block), m
 *    past one row task (the units, columns split for few rows) and
 *    past one row group (cpu_fast_gemm_amx_group_bytes shrunk); units
 *    taken by helpers from the back of another worker's run
 *    (cpu_fast_gemm_amx_help_first);
 *  - transposed A and B, padded leading dimensions, column-major C and C
 *    with both strides apart from 1 (the strided merge), batches;
 *  - alpha / beta, beta == 0 over a C full of NaN;
 *  - the epilogue in the merge: a bias broadcast along rows or columns and
 *    relu, rounded once.
 * The VDPBF16PS product also gets k == 1, odd k around one and several
 * chunks and blocks, and the choice in cpu_fast_gemm_lowp: taken under
 * the hook that lifts its vendor rule, refused under an AVX2 ceiling.
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
  return f->amx_bf16 && f->avx512bw && f->avx512vl && cpu_amx_request();
}

static bool dpbf16_here(void) {
  const cpu_features_t *f = cpu_features_get();
  return f->avx512_bf16 && f->avx512bw && f->avx512vl;
}

/* The route a case runs through. */
typedef bp_status_t (*route_fn)(cpu_device_t *dev, const bp_gemm_args_t *g);

static double bf2d(uint16_t h) { return cpu_bf16_to_float(h); }

/* A random bf16 with a full 8-bit mantissa (most of them), in (-2, 2). */
static uint16_t rnd_bf(void) { return cpu_bf16_from_double((rand() % 20001 - 10000) / 5003.0); }

typedef struct shape {
  int64_t batch, m, n, k;
  int ta, tb, tc; /* A, B transposed; C column-major (2: both C strides > 1) */
  double alpha, beta;
  int bias;       /* 0 none, 1 per column (broadcast over rows), 2 per row */
  bool relu;
} shape_t;

static int fails, checks;

/* Reference of one element of C before the rounding to bf16, and its
 * tolerance (bf16 rounding of the result, f32 rounding of the terms, f32
 * accumulation of k exact products). */
static void ref_elem(const shape_t *s, const uint16_t *arow, int64_t ak, const uint16_t *bcol,
                     int64_t bk, double c0, double bias, double *out, double *tol) {
  double acc = 0, mag = 0;
  for (int64_t p = 0; p < s->k; p++) {
    double x = bf2d(arow[p * ak]) * bf2d(bcol[p * bk]);
    acc += x;
    mag += fabs(x);
  }
  double r = s->alpha * acc + s->beta * c0 + bias;
  double t = ldexp(fabs(r), -8) + ldexp(fabs(s->beta * c0) + fabs(bias), -22) +
             (double)(s->k + 4) * ldexp(mag * fabs(s->alpha), -23) + ldexp(1, -24);
  if (s->relu && r < 0) r = 0;
  *out = r;
  *tol = t;
}

/* One case through route on dev; counts a mismatch. */
static void run_case_on(cpu_device_t *dev, const shape_t *s, route_fn route) {
  int64_t m = s->m, n = s->n, k = s->k, nb = s->batch;
  int64_t lda = (s->ta ? m : k) + 3, ldb = (s->tb ? k : n) + 5;
  int64_t ldc = (s->tc == 1 ? m : n) + 2;
  int64_t sa = (s->ta ? k : m) * lda, sb = (s->tb ? n : k) * ldb;
  int64_t cm = s->tc == 1 ? 1 : s->tc == 2 ? 2 * n + 1 : ldc;
  int64_t cn = s->tc == 1 ? ldc : s->tc == 2 ? 2 : 1;
  int64_t sc = s->tc == 1 ? n * ldc : s->tc == 2 ? m * cm : m * ldc;
  uint16_t *A = malloc(2 * (size_t)(nb * sa)), *B = malloc(2 * (size_t)(nb * sb));
  uint16_t *C = malloc(2 * (size_t)(nb * sc)), *bias = malloc(2 * (size_t)(m > n ? m : n));
  for (int64_t i = 0; i < nb * sa; i++) A[i] = rnd_bf();
  for (int64_t i = 0; i < nb * sb; i++) B[i] = rnd_bf();
  for (int64_t i = 0; i < nb * sc; i++) C[i] = s->beta == 0 ? 0x7fc0 : rnd_bf();
  for (int64_t i = 0; i < (m > n ? m : n); i++) bias[i] = rnd_bf();
  int64_t am = s->ta ? 1 : lda, ak = s->ta ? lda : 1, bk = s->tb ? 1 : ldb, bn = s->tb ? ldb : 1;
  double *R = malloc(sizeof(double) * (size_t)(nb * m * n));
  double *T = malloc(sizeof(double) * (size_t)(nb * m * n));
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double c0 = s->beta == 0 ? 0 : bf2d(C[b * sc + i * cm + j * cn]);
        double bv = s->bias == 1 ? bf2d(bias[j]) : s->bias == 2 ? bf2d(bias[i]) : 0;
        int64_t x = (b * m + i) * n + j;
        ref_elem(s, A + b * sa + i * am, ak, B + b * sb + j * bn, bk, c0, bv, &R[x], &T[x]);
      }
  bp_gemm_args_t g =
      test_gemm_args(s->alpha, s->beta, cpu_tensor_view3(A, BP_BF16, nb, m, k, sa, am, ak),
                     cpu_tensor_view3(B, BP_BF16, nb, k, n, sb, bk, bn),
                     cpu_tensor_view3(C, BP_BF16, nb, m, n, sc, cm, cn));
  if (s->bias) g.bias = cpu_tensor_view3(bias, BP_BF16, nb, m, n, 0, s->bias == 2, s->bias == 1);
  if (s->relu) g.flags |= BP_GEMM_FLAG_ACTIVATION, g.activation = BP_UNARY_RELU;
  checks++;
  bp_status_t st = cpu_fast_gemm_amx_epilogue_ok(&g) ? route(dev, &g) : -1;
  if (st != BP_OK) {
    printf("status %d for %ldx%ldx%ldx%ld\n", st, (long)nb, (long)m, (long)n, (long)k);
    fails++;
    goto out;
  }
  int64_t x = test_gemm_first_miss(C, bf2d, nb, m, n, sc, cm, cn, R, T);
  if (x >= 0) {
    int64_t b = x / (m * n), i = x / n % m, j = x % n;
    printf("MISMATCH thr%u %ldx%ldx%ldx%ld ta%d tb%d tc%d a%g b%g bias%d relu%d at "
           "%ld,%ld,%ld: %.8g vs %.8g\n",
           dev->threads, (long)nb, (long)m, (long)n, (long)k, s->ta, s->tb, s->tc, s->alpha,
           s->beta, s->bias, s->relu, (long)b, (long)i, (long)j, bf2d(C[b * sc + i * cm + j * cn]),
           R[x]);
    fails++;
  }
out:
  free(A), free(B), free(C), free(bias), free(R), free(T);
}

static route_fn g_route;

static void run_case(cpu_device_t *dev, const shape_t *s) { run_case_on(dev, s, g_route); }

static const shape_t shapes[] = {
    /* ragged tiles and k chunks */
    {1, 1, 1, 1, 0, 0, 0, 1, 0, 0, false},
    {1, 17, 31, 33, 0, 0, 0, 1, 0, 0, false},
    {1, 33, 65, 47, 1, 0, 0, -1.5, 0.5, 0, false},
    {2, 45, 37, 61, 0, 1, 0, 1, 1, 0, false},
    {1, 63, 95, 31, 1, 1, 0, 0.5, 0, 0, false},
    /* several k blocks (workspace between them), a last block a chunk
     * long and one that is ragged */
    {1, 70, 90, 800, 0, 0, 0, 1, 0, 0, false},
    {1, 40, 50, 288, 1, 1, 0, 1, 1, 0, false},
    {1, 35, 41, 555, 0, 1, 1, 1, 0.5, 0, false},
    /* n past one block of B panels (8 x 32 columns), m past one row task
     * (8 x 32 rows): the task grid and its column split */
    {1, 300, 600, 100, 0, 0, 0, 1, 0, 0, false},
    {1, 530, 290, 300, 0, 0, 0, 1, 0.5, 0, false},
    {1, 64, 1000, 64, 1, 0, 0, 1, 0, 0, false},
    {3, 257, 129, 70, 0, 0, 0, -1, 0, 0, false},
    /* transposed A and B with whole panels and k a multiple of 32 (the
     * vector transposing packers), and ragged beside them */
    {1, 96, 100, 320, 1, 1, 0, 1, 0, 0, false},
    {2, 70, 64, 64, 1, 0, 0, 1, 0.5, 0, false},
    {1, 64, 70, 96, 0, 1, 0, -1, 0, 0, false},
    /* C column-major and with both strides apart from 1 */
    {1, 100, 70, 90, 0, 0, 1, 1, 1, 0, false},
    {2, 50, 45, 40, 1, 0, 2, 1, 0.5, 0, false},
    /* the epilogue: bias per column or per row, relu, C either way */
    {1, 77, 66, 300, 0, 0, 0, 1, 0, 1, true},
    {1, 40, 90, 50, 0, 1, 0, 0.5, 1, 2, false},
    {1, 33, 35, 40, 0, 0, 1, 1, 0.5, 1, true},
    {2, 20, 300, 40, 1, 0, 2, 1, 0, 2, true},
};

/* Odd k (one pair half zero), k == 1 and k around the 32-deep chunks and
 * the 256-deep blocks, for the VDPBF16PS product. */
static const shape_t odd_k[] = {
    {1, 9, 40, 1, 0, 0, 0, 1, 0, 0, false},     {1, 33, 33, 3, 1, 1, 0, 1, 0.5, 0, false},
    {1, 40, 64, 31, 0, 0, 0, 2, 0, 0, false},   {1, 31, 17, 63, 0, 1, 0, 1, 1, 1, false},
    {2, 65, 47, 255, 1, 0, 0, 1, 0, 0, false},  {1, 50, 96, 257, 0, 0, 1, 1, 0.5, 2, true},
    {1, 100, 70, 513, 1, 1, 0, -1, 0, 0, false},
};

/* All shapes, one and two threads, through g_route. */
static void run_all_shapes(const char *name, bool odd) {
  srand(3);
  fails = checks = 0;
  for (unsigned thr = 1; thr <= 2; thr++) {
    cpu_device_t dev;
    memset(&dev, 0, sizeof dev);
    dev.isa = BP_ISA_BEST;
    dev.threads = thr;
    dev.pool = thr > 1 ? cpu_pool_create(thr) : NULL;
    for (size_t c = 0; c < sizeof shapes / sizeof *shapes; c++) run_case(&dev, &shapes[c]);
    for (size_t c = 0; odd && c < sizeof odd_k / sizeof *odd_k; c++) run_case(&dev, &odd_k[c]);
    /* row groups of one row task (8 x 32 rows of A at kp = 96): B packed
     * with the first only, later groups' A in the same buffer */
    cpu_fast_gemm_amx_group_bytes = 8 * 64 * 96;
    run_case(&dev, &(shape_t){1, 600, 70, 90, 0, 0, 0, 1, 0.5, 0, false});
    run_case(&dev, &(shape_t){2, 520, 300, 70, 1, 1, 0, 1, 0, 1, true});
    cpu_fast_gemm_amx_group_bytes = 0;
    /* every unit taken by a helper, from the back of another worker's
     * run (one thread: its own run, front to back) */
    cpu_fast_gemm_amx_help_first = true;
    run_case(&dev, &(shape_t){1, 530, 600, 100, 0, 0, 0, 1, 0.5, 0, false});
    run_case(&dev, &(shape_t){1, 64, 1000, 64, 1, 0, 0, 1, 0, 0, false});
    cpu_fast_gemm_amx_help_first = false;
    if (dev.pool) cpu_pool_destroy(dev.pool);
  }
  printf("bf16 %s: %d cases, %d failures\n", name, checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0);
}

static void test_bf16_amx_shapes(void **state) {
  (void)state;
  if (!amx_here()) {
    TEST_SKIP_CASE("no AMX-BF16 with AVX-512 BW / VL here, or no tile state");
    return;
  }
  g_route = cpu_fast_gemm_amx;
  run_all_shapes("amx", false);
}

static void test_bf16_dpbf16_shapes(void **state) {
  (void)state;
  if (!dpbf16_here()) {
    TEST_SKIP_CASE("no AVX512-BF16 with AVX-512 BW / VL on this CPU");
    return;
  }
  g_route = cpu_fast_gemm_dpbf16;
  run_all_shapes("dpbf16", true);
}

/* cpu_fast_gemm_lowp: VDPBF16PS's result with the vendor rule lifted
 * (no AMX), and nothing under an AVX2 ceiling. */
static void test_bf16_dpbf16_choice(void **state) {
  (void)state;
  const cpu_features_t *f = cpu_features_get();
  if (!dpbf16_here() || (f->amx_bf16 && cpu_amx_request())) {
    TEST_SKIP_CASE("no AVX512-BF16 with AVX-512 BW / VL, or AMX takes bf16 on this CPU");
    return;
  }
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  dev.isa = BP_ISA_BEST;
  dev.threads = 1;
  fails = checks = 0;
  cpu_fast_gemm_dpbf16_any_vendor = true;
  run_case_on(&dev, &(shape_t){1, 70, 90, 77, 0, 0, 0, 1, 0.5, 1, true}, cpu_fast_gemm_lowp);
  assert_int_equal(fails, 0);
  dev.isa = BP_ISA_AVX2;
  uint16_t a[64 * 64] = {0}, c[64 * 64] = {0};
  bp_gemm_args_t g = test_gemm_args(1, 0, cpu_tensor_view3(a, BP_BF16, 1, 64, 64, 0, 64, 1),
                                    cpu_tensor_view3(a, BP_BF16, 1, 64, 64, 0, 64, 1),
                                    cpu_tensor_view3(c, BP_BF16, 1, 64, 64, 0, 64, 1));
  assert_int_equal(cpu_fast_gemm_lowp(&dev, &g), BP_ERR_UNIMPLEMENTED);
  cpu_fast_gemm_dpbf16_any_vendor = false;
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_bf16_amx_shapes),
                                     cmocka_unit_test(test_bf16_dpbf16_shapes),
                                     cmocka_unit_test(test_bf16_dpbf16_choice)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
