/*
 * test_cpu_fast_ops.c — the "cpu" device's fast paths for conv2d,
 * elementwise, softmax, norms, reductions and casts against the scalar
 * reference (ref_*.c), both linked straight from the plugin's objects so
 * every ISA level (AVX2, AVX-512) and thread count can be forced. Shapes
 * include 1, primes, broadcasts, strided views that must fall back, and
 * NaN / Inf inputs; NaN must land exactly where the reference puts it.
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
#include "plugins/cpu/fast/conv/conv2d.h"
#include "plugins/cpu/tensor.h"
#include "plugins/cpu/ref/ref.h"
#include "test/cpu_fast_devs.h"
#include "test/plugin_tensor.h"
#include "test/skip.h"

static int fails, checks, fallbacks;


/* Row-major strides of shape. */
static void dense(int rank, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) strides[d] = s, s *= shape[d];
}
static float frand(void) { return (float)(rand() % 20001 - 10000) / 2500.0f; }
static float *falloc(int64_t n) {
  float *p = malloc(sizeof(float) * (size_t)(n + 16));
  for (int64_t i = 0; i < n + 16; i++) p[i] = frand();
  return p;
}

/* Compares n elements of dtype dt: NaN where the reference has NaN, equal
 * infinities, else |got - want| <= atol + rtol * |want|. */
static int compare(const char *what, bp_dtype_t dt, const void *got,
                   const void *want, int64_t n, double rtol, double atol) {
  checks++;
  for (int64_t i = 0; i < n; i++) {
    double g = cpu_load(got, dt, i), w = cpu_load(want, dt, i);
    bool ok = isnan(w) ? isnan(g)
              : isinf(w) ? g == w
                         : !isnan(g) && fabs(g - w) <= atol + rtol * fabs(w);
    if (!ok) {
      printf("MISMATCH %s at %ld: got %.9g want %.9g\n", what, (long)i, g, w);
      fails++;
      return 0;
    }
  }
  return 1;
}

#include "test_cpu_fast_ops_conv.inc"
#include "test_cpu_fast_ops_ew.inc"
#include "test_cpu_fast_ops_short.inc"

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv2d),
      cmocka_unit_test(test_conv2d_winograd),
      cmocka_unit_test(test_conv2d_pointwise),
      cmocka_unit_test(test_unary),
      cmocka_unit_test(test_binary),
      cmocka_unit_test(test_half_unary),
      cmocka_unit_test(test_half_binary),
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_norms),
      cmocka_unit_test(test_half_rows),
      cmocka_unit_test(test_reduce),
      cmocka_unit_test(test_half_reduce),
      cmocka_unit_test(test_cast),
      cmocka_unit_test(test_short_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
