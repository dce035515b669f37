/*
 * test/gemm_vals.h — element access for the GEMM / GEMV tests that run one
 * case in f32 or f64 (test_cpu_fast_gemm_edges.c, test_cpu_fast_gemm_dot.c,
 * test_cpu_fast_gemv_axpy.c): element i of a float or double array, read
 * as a double and written from one.
 */
#ifndef BACKPLANE_TEST_GEMM_VALS_H
#define BACKPLANE_TEST_GEMM_VALS_H

#include <stdbool.h>
#include <stdint.h>

static inline double getv(const void *p, bool f64, int64_t i) {
  return f64 ? ((const double *)p)[i] : ((const float *)p)[i];
}

static inline void setv(void *p, bool f64, int64_t i, double v) {
  if (f64)
    ((double *)p)[i] = v;
  else
    ((float *)p)[i] = (float)v;
}

#endif /* BACKPLANE_TEST_GEMM_VALS_H */
