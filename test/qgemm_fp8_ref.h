/*
 * qgemm_fp8_ref.h — what test_qgemm_fp8 (cpu, cpu-ref) and
 * test_qgemm_fp8_gpu check fp8 bp_qgemm with, written once: random fp8
 * codes, the test's own decoding of fp8 and of f16 / bf16 results, docs/
 * ops.md's bound, and a case's shape and logical offsets. Static
 * functions: included by those two test files only.
 */
#ifndef BP_TEST_QGEMM_FP8_REF_H
#define BP_TEST_QGEMM_FP8_REF_H
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/backplane.h"

static uint64_t rng = 7;

static uint8_t rand_byte(void) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint8_t)(rng >> 56);
}

/* ---- this file's own decoding ----------------------------------------------- */

static double fp8_value(uint8_t b, bp_dtype_t dt) {
  bool e4 = dt == BP_FP8_E4M3;
  int mb = e4 ? 3 : 2, bias = e4 ? 7 : 15, e = (b & 0x7F) >> mb, m = b & ((1 << mb) - 1);
  double s = (b & 0x80) ? -1.0 : 1.0;
  if (e4 && (b & 0x7F) == 0x7F) return NAN;
  if (!e4 && e == 31) return m ? NAN : s * INFINITY;
  double f = (double)m / (1 << mb);
  return s * (e ? ldexp(1.0 + f, e - bias) : ldexp(f, 1 - bias));
}

static bool fp8_finite(uint8_t b, bp_dtype_t dt) {
  return isfinite(fp8_value(b, dt));
}

/* A random finite code. */
static uint8_t rand_code(bp_dtype_t dt) {
  for (;;) {
    uint8_t b = rand_byte();
    if (fp8_finite(b, dt)) return b;
  }
}

static double half_value(uint16_t h, bool f16) {
  if (!f16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  int e = (h >> 10) & 31, m = h & 1023;
  double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return m ? NAN : s * INFINITY;
  return s * (e ? ldexp(1024 + m, e - 25) : ldexp(m, -24));
}

static double c_value(const char *c, bp_dtype_t dt, int64_t e) {
  if (dt == BP_F32) return ((const float *)c)[e];
  return half_value(((const uint16_t *)c)[e], dt == BP_F16);
}

/* Half an ulp of c's dtype at x (0 for f32: inside the (k + 2) term). */
static double half_ulp(double x, bp_dtype_t dt) {
  if (dt == BP_F32 || x == 0 || !isfinite(x)) return 0;
  int e;
  frexp(x, &e);
  if (dt == BP_F16) return e < -13 ? ldexp(1, -25) : ldexp(1, e - 12);
  return ldexp(1, e - 9);
}

/* got against the exact value x with sum |a b| * |sa sb| = t over k terms:
 * docs/ops.md's bound; NaN and infinities exactly; an f16 overflow is an
 * infinity of x's sign. */
static bool within(double got, double x, double t, int64_t k, bp_dtype_t dt, double slack) {
  if (isnan(x)) return isnan(got);
  if (isinf(x)) return got == x;
  double bound = slack * ((double)(k + 2) * ldexp(t, -24) + half_ulp(fabs(x) + fabs(got), dt));
  if (isinf(got)) return dt == BP_F16 && fabs(x) + bound >= 65504.0 && (got > 0) == (x > 0);
  return fabs(got - x) <= bound;
}

typedef struct gcase {
  int64_t batch, m, n, k;
  bool b_batched, at, bt, ct; /* a, b, c as transposed views */
  int scales;                 /* 0 none, 1 per tensor, 2 per row / column */
} gcase_t;

typedef struct gdata {
  uint8_t *a, *b; /* logical a[batch][m][k], b[(batch)][k][n] */
  float sa[512], sb[512];
} gdata_t;

/* Logical element offsets into the stored (maybe transposed) layouts. */
static int64_t a_off(const gcase_t *g, int64_t bi, int64_t i, int64_t l) {
  return bi * g->m * g->k + (g->at ? l * g->m + i : i * g->k + l);
}
static int64_t b_off(const gcase_t *g, int64_t bi, int64_t l, int64_t j) {
  return (g->b_batched ? bi * g->k * g->n : 0) + (g->bt ? j * g->k + l : l * g->n + j);
}
static int64_t c_off(const gcase_t *g, int64_t bi, int64_t i, int64_t j) {
  return bi * g->m * g->n + (g->ct ? j * g->m + i : i * g->n + j);
}

#endif /* BP_TEST_QGEMM_FP8_REF_H */
