/*
 * test_ops_reduce.c — all 7 reductions along every axis (negative axes
 * too), with the reduced axis kept as 1 or removed, strided / permuted
 * inputs and outputs, empty axes (sum 0, prod 1), argmax to i32 and i64
 * with ties (first index wins), and NaN / Inf propagation, against
 * test/common/ref.c.
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

/* Reduces x (rank r, shape xs, layout lx) along axis with op into y of
 * dtype ydt, with the axis kept (keep) or removed. xv NULL: random. */
static void reduce_case(tc_env_t *e, bp_dtype_t dt, bp_reduce_op_t op,
                        bp_dtype_t ydt, int r, const int64_t *xs, int axis,
                        bool keep, tc_layout_t lx, tc_layout_t ly,
                        const double *xv, tc_rng_t *rng) {
  int ax = axis < 0 ? axis + r : axis;
  int64_t nx = tc_numel(r, xs), ny = xs[ax] ? nx / xs[ax] : 0;
  int64_t ys[BP_MAX_RANK];
  int ry = 0;
  for (int i = 0; i < r; i++)
    if (i != ax)
      ys[ry++] = xs[i];
    else if (keep)
      ys[ry++] = 1;
  if (!xs[ax])
    ny = tc_numel(ry, ys);
  double *x = malloc(sizeof(double) * (size_t)(nx + 1));
  double *ref = malloc(sizeof(double) * (size_t)(ny + 1));
  if (xv)
    memcpy(x, xv, sizeof(double) * (size_t)nx);
  else if (op == BP_REDUCE_PROD)
    tc_rng_fill(rng, dt, 0.8, 1.25, x, nx);
  else
    tc_rng_fill(rng, dt, -2, 2, x, nx);
  tc_tensor_t X = tc_tensor(e, dt, r, xs, lx, x);
  tc_tensor_t Y = tc_tensor(e, ydt, ry, ys, ly, NULL);
  bp_status_t st = bp_reduce(e->s, op, &X.t, axis, &Y.t);
  char what[160];
  snprintf(what, sizeof what, "reduce %s -> %s rank %d axis %d %s (%s -> %s)",
           ref_reduce_names[op], bp_dtype_name(ydt), r, axis,
           keep ? "keepdims" : "removed", tc_layout_names[lx],
           tc_layout_names[ly]);
  if (tc_expect_status(e, st, BP_OK, "%s", what)) {
    double *xx = tc_values(&X), *y = tc_download(&Y);
    if (xs[ax])
      ref_reduce(op, r, xs, ax, xx, ref);
    else
      for (int64_t i = 0; i < ny; i++)
        ref[i] = op == BP_REDUCE_PROD ? 1 : 0;
    if (op == BP_REDUCE_ARGMAX || op == BP_REDUCE_MAX || op == BP_REDUCE_MIN)
      tc_expect_exact(e, ydt, y, ref, ny, "%s", what);
    else
      tc_expect_close(e, dt, y, ref, ny, (double)xs[ax], "%s", what);
    if (tc_outside_changed(&Y))
      print_error("FAIL [%s] %s wrote outside y\n", e->name, what), tc_failures++;
    free(xx);
    free(y);
  }
  tc_tensor_free(&X);
  tc_tensor_free(&Y);
  free(x);
  free(ref);
}

static void test_reduce_all_axes(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 31);
  static const int64_t s1[1] = {1}, s2[2] = {7, 13}, s3[3] = {3, 5, 31},
                       s4[1] = {127}, s5[4] = {2, 1, 3, 7};
  const struct {
    int rank;
    const int64_t *shape;
  } shapes[] = {{1, s1}, {2, s2}, {3, s3}, {1, s4}, {4, s5}};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_REDUCE, dt))
        continue;
      int v = 0;
      for (int op = 0; op < BP_REDUCE_COUNT; op++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
          for (int ax = -shapes[s].rank; ax < shapes[s].rank; ax++, v++) {
            bp_dtype_t ydt = op != BP_REDUCE_ARGMAX ? dt : v % 2 ? BP_I64 : BP_I32;
            reduce_case(&su->env[d], dt, op, ydt, shapes[s].rank, shapes[s].shape,
                        ax, v % 3 != 0, (tc_layout_t)(v % TC_LAYOUT_COUNT),
                        (tc_layout_t)((v / 3) % TC_LAYOUT_COUNT), NULL, &rng);
          }
    }
  TC_END();
}

/* Empty reduced axis: sum is 0, prod 1; empty kept axes: nothing to do. */
static void test_reduce_empty(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const int64_t xs[2] = {5, 0}, xz[2] = {0, 7};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_REDUCE, dt))
        continue;
      reduce_case(&su->env[d], dt, BP_REDUCE_SUM, dt, 2, xs, 1, false, TC_CONTIG,
                  TC_STRIDED, NULL, NULL);
      reduce_case(&su->env[d], dt, BP_REDUCE_PROD, dt, 2, xs, -1, true, TC_CONTIG,
                  TC_CONTIG, NULL, NULL);
      for (int op = 0; op < BP_REDUCE_COUNT; op++) /* output of 0 elements */
        reduce_case(&su->env[d], dt, op, op == BP_REDUCE_ARGMAX ? BP_I64 : dt, 2,
                    xz, 1, true, TC_CONTIG, TC_CONTIG, NULL, NULL);
    }
  TC_END();
}

/* NaN in a row makes sum, mean, max, min, prod, var NaN; Inf gives Inf
 * for sum / max. Ties in argmax go to the first index. */
static void test_reduce_special(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  enum { R = 5, N = 6 };
  const int64_t xs[2] = {R, N};
  const double x[R * N] = {
      1, 2, NAN, 3, -1, 0,      /* NaN in the middle */
      NAN, 1, 2, 3, 4, 5,       /* NaN first */
      1, INFINITY, 2, 3, 4, 5,  /* +Inf */
      -1, -2, -INFINITY, 0, 1, 0.5, /* -Inf */
      2, 7, 7, 1, 7, -3,        /* ties */
  };
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_REDUCE, dt))
        continue;
      for (int op = 0; op < BP_REDUCE_ARGMAX; op++)
        reduce_case(&su->env[d], dt, op, dt, 2, xs, 1, false, TC_CONTIG,
                    TC_CONTIG, x, NULL);
      /* argmax: rows without NaN only (NaN ordering is not specified) */
      const int64_t xs3[2] = {R - 2, N};
      reduce_case(&su->env[d], dt, BP_REDUCE_ARGMAX, BP_I32, 2, xs3, 1, false,
                  TC_STRIDED, TC_CONTIG, x + 2 * N, NULL);
      reduce_case(&su->env[d], dt, BP_REDUCE_ARGMAX, BP_I64, 2, xs3, -1, true,
                  TC_PERMUTED, TC_STRIDED, x + 2 * N, NULL);
    }
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reduce_all_axes),
      cmocka_unit_test(test_reduce_empty),
      cmocka_unit_test(test_reduce_special),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
