/*
 * test_ops_elementwise.c — all 13 unary and all 7 binary ops on every float
 * dtype the device claims: awkward shapes, strided / permuted views,
 * NumPy broadcasting (including rank 0 and explicit stride 0), in-place
 * updates, and NaN / Inf / -0.0 behaviour, against test/common/ref.c.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ref.h"
#include "tc.h"

/* Inputs in the op's domain. */
static void unary_domain(bp_unary_op_t op, double *lo, double *hi) {
  bool pos = op == BP_UNARY_LOG || op == BP_UNARY_SQRT || op == BP_UNARY_RSQRT;
  *lo = pos ? 0.125 : -3;
  *hi = pos ? 4 : 3;
}

/* Ops whose result is exactly representable: compared bit for bit. */
static bool unary_exact(bp_unary_op_t op) {
  return op == BP_UNARY_NEG || op == BP_UNARY_ABS || op == BP_UNARY_RELU;
}

/* y (shape ys, layout ly) = op(x) with x of shape xs (broadcast). xv NULL:
 * random values. */
static void unary_case(tc_env_t *e, bp_dtype_t dt, bp_unary_op_t op, int ry,
                       const int64_t *ys, int rx, const int64_t *xs,
                       tc_layout_t lx, tc_layout_t ly, const double *xv,
                       tc_rng_t *rng) {
  int64_t nx = tc_numel(rx, xs), ny = tc_numel(ry, ys);
  double *x = malloc(sizeof(double) * (size_t)(nx + 1));
  double *ref = malloc(sizeof(double) * (size_t)(ny + 1));
  double lo, hi;
  unary_domain(op, &lo, &hi);
  if (xv)
    memcpy(x, xv, sizeof(double) * (size_t)nx);
  else
    tc_rng_fill(rng, dt, lo, hi, x, nx);
  tc_tensor_t X = tc_tensor(e, dt, rx, xs, lx, x);
  tc_tensor_t Y = tc_tensor(e, dt, ry, ys, ly, NULL);
  bp_status_t st = bp_unary(e->s, op, &X.t, &Y.t);
  if (tc_expect_status(e, st, BP_OK, "unary %s", ref_unary_names[op])) {
    double *xs_v = tc_values(&X), *y = tc_download(&Y);
    for (int64_t i = 0; i < ny; i++)
      ref[i] = ref_unary(op, xs_v[tc_bcast_index(ry, ys, i, rx, xs)]);
    if (unary_exact(op))
      tc_expect_exact(e, dt, y, ref, ny, "unary %s rank %d x %s y %s",
                      ref_unary_names[op], ry, tc_layout_names[lx],
                      tc_layout_names[ly]);
    else
      tc_expect_close(e, dt, y, ref, ny, 1, "unary %s rank %d x %s y %s",
                      ref_unary_names[op], ry, tc_layout_names[lx],
                      tc_layout_names[ly]);
    if (tc_outside_changed(&Y))
      print_error("FAIL [%s] unary %s wrote outside y\n", e->name,
                  ref_unary_names[op]),
          tc_failures++;
    free(xs_v);
    free(y);
  }
  tc_tensor_free(&X);
  tc_tensor_free(&Y);
  free(x);
  free(ref);
}

static void test_unary_shapes(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 11);
  static const int64_t s0[1] = {0}, s1[1] = {1}, s2[2] = {7, 13},
                       s3[3] = {3, 1, 31}, s4[1] = {127};
  const struct {
    int rank;
    const int64_t *shape;
  } shapes[] = {{1, s0}, {1, s1}, {2, s2}, {3, s3}, {1, s4}, {0, s1}};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_UNARY, dt))
        continue;
      for (int op = 0; op < BP_UNARY_COUNT; op++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
          for (int l = 0; l < TC_LAYOUT_COUNT; l++)
            unary_case(&su->env[d], dt, (bp_unary_op_t)op, shapes[s].rank,
                       shapes[s].shape, shapes[s].rank, shapes[s].shape,
                       (tc_layout_t)l, (tc_layout_t)((l + 1) % TC_LAYOUT_COUNT),
                       NULL, &rng);
    }
  TC_END();
}

/* x broadcasts to y: a row, a column, a scalar, a lower rank. */
static void test_unary_broadcast(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 12);
  const int64_t ys[2] = {7, 13}, row[2] = {1, 13}, col[2] = {7, 1}, vec[1] = {13};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_UNARY, dt))
        continue;
      for (int op = 0; op < BP_UNARY_COUNT; op += 3) {
        unary_case(&su->env[d], dt, op, 2, ys, 2, row, TC_CONTIG, TC_STRIDED, NULL, &rng);
        unary_case(&su->env[d], dt, op, 2, ys, 2, col, TC_STRIDED, TC_CONTIG, NULL, &rng);
        unary_case(&su->env[d], dt, op, 2, ys, 1, vec, TC_CONTIG, TC_PERMUTED, NULL, &rng);
        unary_case(&su->env[d], dt, op, 2, ys, 0, vec, TC_CONTIG, TC_CONTIG, NULL, &rng);
      }
    }
  TC_END();
}

/* NaN, +-Inf, +-0 and ordinary values through every op. */
static void test_unary_special(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const double sp[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5};
  const int64_t n = sizeof sp / sizeof *sp;
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_UNARY, dt))
        continue;
      for (int op = 0; op < BP_UNARY_COUNT; op++) {
        double v[sizeof sp / sizeof *sp];
        memcpy(v, sp, sizeof sp);
        /* x * sigmoid(x) and x * Phi(x) at -Inf are 0 in the limit but NaN
         * evaluated as written; the ABI does not say which. */
        if (op == BP_UNARY_GELU || op == BP_UNARY_SILU)
          v[2] = -8;
        if (op == BP_UNARY_RELU) /* relu(-0) may be +-0 */
          v[4] = -0.25;
        unary_case(&su->env[d], dt, op, 1, &n, 1, &n, TC_CONTIG, TC_CONTIG, v, NULL);
      }
    }
  TC_END();
}

/* y may be x itself (the identical view). */
static void test_unary_in_place(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 13);
  const int64_t shape[2] = {13, 7};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_UNARY, dt))
        continue;
      double x[91], ref[91];
      tc_rng_fill(&rng, dt, -2, 2, x, 91);
      tc_tensor_t X = tc_tensor(e, dt, 2, shape, TC_STRIDED, x);
      if (tc_expect_status(e, bp_unary(e->s, BP_UNARY_TANH, &X.t, &X.t), BP_OK,
                           "unary in place")) {
        double *y = tc_download(&X);
        for (int i = 0; i < 91; i++)
          ref[i] = tanh(x[i]);
        tc_expect_close(e, dt, y, ref, 91, 1, "unary tanh in place");
        free(y);
      }
      tc_tensor_free(&X);
    }
  TC_END();
}

/* ---- binary ----------------------------------------------------------------*/

static void binary_domain(bp_binary_op_t op, bool second, double *lo,
                          double *hi) {
  *lo = -2;
  *hi = 2;
  if (op == BP_BINARY_POW && !second)
    *lo = 0.25; /* positive base */
  if (op == BP_BINARY_DIV && second)
    *lo = 0.5; /* away from zero; sign flipped below */
}

static void binary_case(tc_env_t *e, bp_dtype_t dt, bp_binary_op_t op, int ry,
                        const int64_t *ys, int ra, const int64_t *as, int rb,
                        const int64_t *bs, tc_layout_t la, tc_layout_t lb,
                        tc_layout_t ly, const double *av, const double *bv,
                        tc_rng_t *rng) {
  int64_t na = tc_numel(ra, as), nb = tc_numel(rb, bs), ny = tc_numel(ry, ys);
  double *a = malloc(sizeof(double) * (size_t)(na + 1));
  double *b = malloc(sizeof(double) * (size_t)(nb + 1));
  double *ref = malloc(sizeof(double) * (size_t)(ny + 1));
  double lo, hi;
  if (av) {
    memcpy(a, av, sizeof(double) * (size_t)na);
    memcpy(b, bv, sizeof(double) * (size_t)nb);
  } else {
    binary_domain(op, false, &lo, &hi);
    tc_rng_fill(rng, dt, lo, hi, a, na);
    binary_domain(op, true, &lo, &hi);
    tc_rng_fill(rng, dt, lo, hi, b, nb);
    if (op == BP_BINARY_DIV)
      for (int64_t i = 0; i < nb; i += 2)
        b[i] = -b[i];
  }
  tc_tensor_t A = tc_tensor(e, dt, ra, as, la, a);
  tc_tensor_t B = tc_tensor(e, dt, rb, bs, lb, b);
  tc_tensor_t Y = tc_tensor(e, dt, ry, ys, ly, NULL);
  bp_status_t st = bp_binary(e->s, op, &A.t, &B.t, &Y.t);
  if (tc_expect_status(e, st, BP_OK, "binary %s", ref_binary_names[op])) {
    double *aa = tc_values(&A), *bb = tc_values(&B), *y = tc_download(&Y);
    for (int64_t i = 0; i < ny; i++)
      ref[i] = ref_binary(op, aa[tc_bcast_index(ry, ys, i, ra, as)],
                          bb[tc_bcast_index(ry, ys, i, rb, bs)]);
    if (op == BP_BINARY_MAX || op == BP_BINARY_MIN)
      tc_expect_exact(e, dt, y, ref, ny, "binary %s ranks %d,%d->%d (%s,%s->%s)",
                      ref_binary_names[op], ra, rb, ry, tc_layout_names[la],
                      tc_layout_names[lb], tc_layout_names[ly]);
    else
      tc_expect_close(e, dt, y, ref, ny, 1, "binary %s ranks %d,%d->%d (%s,%s->%s)",
                      ref_binary_names[op], ra, rb, ry, tc_layout_names[la],
                      tc_layout_names[lb], tc_layout_names[ly]);
    if (tc_outside_changed(&Y))
      print_error("FAIL [%s] binary %s wrote outside y\n", e->name,
                  ref_binary_names[op]),
          tc_failures++;
    free(aa), free(bb), free(y);
  }
  tc_tensor_free(&A);
  tc_tensor_free(&B);
  tc_tensor_free(&Y);
  free(a), free(b), free(ref);
}

static void test_binary_broadcast(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 21);
  static const int64_t full[2] = {7, 13}, row[2] = {1, 13}, col[2] = {7, 1},
                       vec[1] = {13}, one[1] = {1}, y3[3] = {3, 5, 31},
                       a3[3] = {3, 1, 31}, b3[2] = {5, 1}, z[2] = {0, 13},
                       zr[2] = {1, 13};
  const struct {
    int ry, ra, rb;
    const int64_t *ys, *as, *bs;
  } cases[] = {
      {2, 2, 2, full, full, full}, {2, 2, 2, full, row, col},
      {2, 1, 2, full, vec, col},   {2, 0, 2, full, one, full},
      {2, 2, 1, full, full, one},  {3, 3, 2, y3, a3, b3},
      {2, 2, 2, z, z, zr},         {1, 1, 1, one, one, one},
  };
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_BINARY, dt))
        continue;
      for (int op = 0; op < BP_BINARY_COUNT; op++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
          for (int l = 0; l < TC_LAYOUT_COUNT; l++)
            binary_case(&su->env[d], dt, op, cases[c].ry, cases[c].ys,
                        cases[c].ra, cases[c].as, cases[c].rb, cases[c].bs,
                        (tc_layout_t)l, (tc_layout_t)((l + 1) % TC_LAYOUT_COUNT),
                        (tc_layout_t)((l + 2) % TC_LAYOUT_COUNT), NULL, NULL,
                        &rng);
    }
  TC_END();
}

/* An explicit stride-0 operand (not a size-1 axis) also broadcasts. */
static void test_binary_stride0(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const int64_t shape[2] = {5, 7}, st0[2] = {0, 1}, st1[2] = {7, 1};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_BINARY, dt))
        continue;
      double a[35], b[35], ref[35];
      for (int i = 0; i < 35; i++) {
        a[i] = tc_round(dt, 0.25 * (i % 7) - 1); /* same row 5 times */
        b[i] = tc_round(dt, 0.125 * i);
      }
      tc_tensor_t A = tc_tensor_strided(e, dt, 2, shape, st0, 1, a);
      tc_tensor_t B = tc_tensor_strided(e, dt, 2, shape, st1, 0, b);
      tc_tensor_t Y = tc_tensor(e, dt, 2, shape, TC_CONTIG, NULL);
      if (tc_expect_status(e, bp_binary(e->s, BP_BINARY_MUL, &A.t, &B.t, &Y.t),
                           BP_OK, "binary stride 0")) {
        double *y = tc_download(&Y);
        for (int i = 0; i < 35; i++)
          ref[i] = a[i] * b[i];
        tc_expect_close(e, dt, y, ref, 35, 1, "binary mul with a stride-0 row");
        free(y);
      }
      tc_tensor_free(&A);
      tc_tensor_free(&B);
      tc_tensor_free(&Y);
    }
  TC_END();
}

static void test_binary_special(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  /* every pair of these, as a 9 x 9 outer product by broadcasting */
  const double sp[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -2.0, 0.5, 3.0};
  const int64_t n = sizeof sp / sizeof *sp, ys[2] = {n, n}, as[2] = {n, 1},
                bs[2] = {1, n};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_BINARY, dt))
        continue;
      for (int op = 0; op < BP_BINARY_COUNT; op++) {
        double a[sizeof sp / sizeof *sp], b[sizeof sp / sizeof *sp];
        memcpy(a, sp, sizeof sp);
        memcpy(b, sp, sizeof sp);
        if (op == BP_BINARY_MAX || op == BP_BINARY_MIN)
          a[4] = b[4] = -0.75; /* max(-0, +0) may be either zero */
        binary_case(&su->env[d], dt, op, 2, ys, 2, as, 2, bs, TC_CONTIG,
                    TC_CONTIG, TC_CONTIG, a, b, NULL);
      }
    }
  TC_END();
}

static void test_binary_in_place(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 22);
  const int64_t shape[2] = {13, 7};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_BINARY, dt))
        continue;
      double a[91], b[91], ref[91];
      tc_rng_fill(&rng, dt, -2, 2, a, 91);
      tc_rng_fill(&rng, dt, -2, 2, b, 91);
      tc_tensor_t A = tc_tensor(e, dt, 2, shape, TC_PERMUTED, a);
      tc_tensor_t B = tc_tensor(e, dt, 2, shape, TC_STRIDED, b);
      if (tc_expect_status(e, bp_binary(e->s, BP_BINARY_SUB, &A.t, &B.t, &A.t),
                           BP_OK, "binary in place")) {
        double *y = tc_download(&A);
        for (int i = 0; i < 91; i++)
          ref[i] = a[i] - b[i];
        tc_expect_close(e, dt, y, ref, 91, 1, "binary sub in place (y = a)");
        free(y);
      }
      tc_tensor_free(&A);
      tc_tensor_free(&B);
    }
  TC_END();
}

/* Every operand one contiguous run (the GPU kernels load and store f32
 * four at a time where the view starts 16-byte aligned, the tail one by
 * one): lengths around multiples of 4, views starting 0, 1 and 4 elements
 * into their buffers (aligned, not, aligned again), every binary op and
 * two unary ones. The suites above mix layouts, so never reach that path. */
static void flat_case(tc_env_t *e, bp_dtype_t dt, int op, bool unary, int64_t n, int64_t off,
                      tc_rng_t *rng) {
  const int64_t one = 1;
  double *a = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
  double *ref = malloc(sizeof(double) * (size_t)n), lo, hi;
  if (unary) {
    unary_domain((bp_unary_op_t)op, &lo, &hi);
    tc_rng_fill(rng, dt, lo, hi, a, n);
  } else {
    binary_domain((bp_binary_op_t)op, false, &lo, &hi);
    tc_rng_fill(rng, dt, lo, hi, a, n);
    binary_domain((bp_binary_op_t)op, true, &lo, &hi);
    tc_rng_fill(rng, dt, lo, hi, b, n);
  }
  tc_tensor_t A = tc_tensor_strided(e, dt, 1, &n, &one, off, a);
  tc_tensor_t B = tc_tensor_strided(e, dt, 1, &n, &one, off, b);
  tc_tensor_t Y = tc_tensor_strided(e, dt, 1, &n, &one, off, NULL);
  const char *name = unary ? ref_unary_names[op] : ref_binary_names[op];
  bp_status_t st = unary ? bp_unary(e->s, (bp_unary_op_t)op, &A.t, &Y.t)
                         : bp_binary(e->s, (bp_binary_op_t)op, &A.t, &B.t, &Y.t);
  if (tc_expect_status(e, st, BP_OK, "flat %s", name)) {
    double *av = tc_values(&A), *bv = tc_values(&B), *y = tc_download(&Y);
    for (int64_t i = 0; i < n; i++)
      ref[i] = unary ? ref_unary((bp_unary_op_t)op, av[i]) : ref_binary((bp_binary_op_t)op, av[i], bv[i]);
    tc_expect_close(e, dt, y, ref, n, 1, "flat %s n %lld offset %lld", name, (long long)n,
                    (long long)off);
    if (tc_outside_changed(&Y))
      print_error("FAIL [%s] flat %s wrote outside y\n", e->name, name), tc_failures++;
    free(av), free(bv), free(y);
  }
  tc_tensor_free(&A), tc_tensor_free(&B), tc_tensor_free(&Y);
  free(a), free(b), free(ref);
}

static void test_flat_contiguous(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 25);
  static const int64_t lens[] = {3, 4, 7, 1027}, offs[] = {0, 1, 4};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      tc_env_t *e = &su->env[d];
      for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
        for (size_t o = 0; o < sizeof offs / sizeof *offs; o++) {
          if (tc_supports(e, BP_OP_BINARY, dt))
            for (int op = 0; op < BP_BINARY_COUNT; op++)
              flat_case(e, dt, op, false, lens[l], offs[o], &rng);
          if (tc_supports(e, BP_OP_UNARY, dt)) {
            flat_case(e, dt, BP_UNARY_NEG, true, lens[l], offs[o], &rng);
            flat_case(e, dt, BP_UNARY_EXP, true, lens[l], offs[o], &rng);
          }
        }
    }
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unary_shapes),    cmocka_unit_test(test_unary_broadcast),
      cmocka_unit_test(test_unary_special),   cmocka_unit_test(test_unary_in_place),
      cmocka_unit_test(test_binary_broadcast), cmocka_unit_test(test_binary_stride0),
      cmocka_unit_test(test_binary_special),  cmocka_unit_test(test_binary_in_place),
      cmocka_unit_test(test_flat_contiguous),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
