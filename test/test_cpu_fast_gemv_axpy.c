/*
 * test_cpu_fast_gemv_axpy.c — the "axpy" matrix-vector product of the CPU
 * fast path (plugins/cpu/fast/gemm/gemv.c), which a GEMM whose C is one row
 * takes: y = alpha * x B + beta * y with B's rows contiguous, in its
 * baseline and its AVX-512 builds (each device's ISA level picks one),
 * against a double-precision reference. Edges: n across several column
 * blocks and not a multiple of 16, k not a multiple of the four rows a
 * pass sums, a strided x (A's row read with a stride) and C, B rows padded,
 * f32 and f64, beta == 0 over NaN, beta != 0, 1 and 2 threads; with two
 * threads and one block of whole rows, B's rows split between the workers
 * and their partial sums added up in order.
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
#include "plugins/cpu/fast/gemm/gemm.h"
#include "test/gemm_vals.h"
#include "test/skip.h"

static int fails, checks;

static void run_case(cpu_device_t *dev, bool f64, int64_t k, int64_t n, int64_t incx, int64_t incy,
                     double alpha, double beta) {
  size_t es = f64 ? 8 : 4;
  int64_t ldb = n + 7;
  void *x = malloc(es * (size_t)(k * incx + 1)), *b = malloc(es * (size_t)(k * ldb + 1));
  void *y = malloc(es * (size_t)(n * incy + 1));
  double *want = malloc(sizeof(double) * (size_t)(n + 1));
  for (int64_t p = 0; p < k * incx; p++) setv(x, f64, p, (rand() % 2001 - 1000) / 997.0);
  for (int64_t i = 0; i < k * ldb; i++) setv(b, f64, i, (rand() % 2001 - 1000) / 991.0);
  for (int64_t j = 0; j < n * incy; j++)
    setv(y, f64, j, beta == 0 ? NAN : (rand() % 2001 - 1000) / 983.0);
  for (int64_t j = 0; j < n; j++) {
    double acc = 0;
    for (int64_t p = 0; p < k; p++) acc += getv(x, f64, p * incx) * getv(b, f64, p * ldb + j);
    want[j] = alpha * acc + (beta == 0 ? 0 : beta * getv(y, f64, j * incy));
  }
  cpu_fast_gemv_axpy(dev, f64, k, n, x, incx, b, ldb, y, incy, alpha, beta);
  checks++;
  double tol = f64 ? 1e-12 : 1e-5;
  for (int64_t j = 0; j < n; j++) {
    double got = getv(y, f64, j * incy);
    if (!(fabs(got - want[j]) <= tol * (1 + fabs(want[j])) * sqrt((double)k + 1))) {
      printf("MISMATCH isa%d thr%u f64 %d k%ld n%ld incx%ld incy%ld beta %g at %ld: %.9g vs %.9g\n",
             dev->isa, dev->threads, f64, (long)k, (long)n, (long)incx, (long)incy, beta, (long)j,
             got, want[j]);
      fails++;
      break;
    }
  }
  free(x), free(b), free(y), free(want);
}

static void test_gemv_axpy(void **state) {
  (void)state;
  const cpu_features_t *f = cpu_features_get();
  srand(3);
  fails = checks = 0;
  for (int isa = BP_ISA_SCALAR; isa <= BP_ISA_AVX512; isa++) {
    if (isa == BP_ISA_AVX512 && !(f->avx512f && f->avx512vl && f->fma)) continue;
    for (unsigned thr = 1; thr <= 2; thr++) {
      cpu_device_t dev = {.isa = (bp_isa_level_t)isa, .threads = thr, .pool = cpu_pool_create(thr)};
      for (int d = 0; d < 2; d++) {
        run_case(&dev, d, 1, 1, 1, 1, 1, 0);
        run_case(&dev, d, 7, 33, 1, 1, -1.5, 0);
        run_case(&dev, d, 130, 5000, 1, 1, 1, 0.5); /* three column blocks */
        run_case(&dev, d, 301, 4111, 3, 2, 0.5, 0);
        run_case(&dev, d, 64, 47, 2, 1, 1, 1);
        /* one block of whole rows, B's rows split between the workers
         * (partial sums added after) */
        run_case(&dev, d, 1030, 3000, 1, 1, 1, 0.5);
        run_case(&dev, d, 613, 1999, 2, 3, -1, 0);
      }
      cpu_pool_destroy(dev.pool);
    }
  }
  printf("gemv axpy: %d cases, %d failures\n", checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_gemv_axpy)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
