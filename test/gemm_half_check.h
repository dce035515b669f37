/*
 * gemm_half_check.h — what the 16-bit GEMM tests (test_cpu_fast_gemm_amx,
 * test_cpu_fast_gemm_f16) share around their cases: the arguments of a
 * plain GEMM call over three views, and the comparison of a batched C of
 * 16-bit values against a double-precision reference with a tolerance per
 * element. Header-only (static inline), each test keeps its own reference
 * and messages.
 */
#ifndef BP_TEST_GEMM_HALF_CHECK_H
#define BP_TEST_GEMM_HALF_CHECK_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "plugin-api.h"

/* C = alpha A B + beta C over the views a, b, c: no bias, no activation. */
static inline bp_gemm_args_t test_gemm_args(double alpha, double beta, bp_plugin_tensor_t a,
                                            bp_plugin_tensor_t b, bp_plugin_tensor_t c) {
  bp_gemm_args_t g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.alpha = alpha;
  g.beta = beta;
  g.a = a, g.b = b, g.c = c;
  return g;
}

/* The first element (b * m + i) * n + j of the nb x m x n result C (element
 * (b, i, j) at C[b * sc + i * cm + j * cn], decoded by dec) whose distance
 * to R[x] is not within T[x] (R and T row-major, NaN never within); -1
 * when every one is. */
static inline int64_t test_gemm_first_miss(const uint16_t *C, double (*dec)(uint16_t), int64_t nb,
                                           int64_t m, int64_t n, int64_t sc, int64_t cm, int64_t cn,
                                           const double *R, const double *T) {
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        int64_t x = (b * m + i) * n + j;
        if (!(fabs(dec(C[b * sc + i * cm + j * cn]) - R[x]) <= T[x])) return x;
      }
  return -1;
}

#endif
