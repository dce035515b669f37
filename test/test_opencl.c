/*
 * test_opencl.c — every op the OpenCL backend claims, through the public
 * API, against the "cpu-ref" device on identical inputs (test/common/tc.h
 * tolerances). Without an OpenCL device it skips (exit 77) or, where PoCL
 * is installed, fails: see test/skip.h.
 * Shapes are small: PoCL compiles each program once (then the on-disk
 * binary cache serves later runs), and 2 cores run the rest.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "skip.h"
#include "tc.h"

static bp_context_t *ctx;
static tc_env_t cl, ref;
static bool have_cl;

static int setup(void **state) {
  (void)state;
  if (bp_context_create(NULL, &ctx) != BP_OK)
    return -1;
  have_cl = tc_env_open(&cl, ctx, "opencl");
  return tc_env_open(&ref, ctx, "cpu-ref") ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  if (have_cl)
    tc_env_close(&cl);
  tc_env_close(&ref);
  bp_context_destroy(ctx);
  return 0;
}

#define NEED_CL()                                                              \
  do {                                                                         \
    if (!have_cl) /* main() skipped or failed the suite already */           \
      TEST_SKIP_CASE("no OpenCL device");                                      \
    TC_BEGIN();                                                                \
  } while (0)

/* One logical tensor on both devices: [0] OpenCL, [1] cpu-ref. */
typedef struct pair {
  tc_tensor_t t[2];
} pair_t;

static pair_t mk(bp_dtype_t dt, int rank, const int64_t *shape,
                 tc_layout_t layout, const double *vals) {
  pair_t p;
  p.t[0] = tc_tensor(&cl, dt, rank, shape, layout, vals);
  p.t[1] = tc_tensor(&ref, dt, rank, shape, layout, vals);
  return p;
}

/* Random values in [lo, hi) for shape, owned by the caller. */
static double *vals(uint64_t seed, bp_dtype_t dt, int rank,
                    const int64_t *shape, double lo, double hi) {
  int64_t n = tc_numel(rank, shape);
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  tc_rng_t r;
  tc_rng_seed(&r, seed);
  tc_rng_fill(&r, dt, lo, hi, v, n);
  return v;
}

static pair_t mk_rand(uint64_t seed, bp_dtype_t dt, int rank,
                      const int64_t *shape, tc_layout_t layout, double lo,
                      double hi) {
  double *v = vals(seed, dt, rank, shape, lo, hi);
  pair_t p = mk(dt, rank, shape, layout, v);
  free(v);
  return p;
}

static void pfree(pair_t *p) {
  tc_tensor_free(&p->t[0]);
  tc_tensor_free(&p->t[1]);
}

/* Compares the two devices' y; exact when red < 0. */
static void check(pair_t *y, bp_dtype_t dt, double red, const char *what) {
  double *a = tc_download(&y->t[0]), *b = tc_download(&y->t[1]);
  if (red < 0)
    tc_expect_exact(&cl, dt, a, b, y->t[0].numel, "%s", what);
  else
    tc_expect_close(&cl, dt, a, b, y->t[0].numel, red, "%s", what);
  if (tc_outside_changed(&y->t[0]))
    tc_expect_status(&cl, BP_ERR_INTERNAL, BP_OK, "%s wrote outside y", what);
  free(a);
  free(b);
}

/* Runs the statement on both devices: E is the env, I its index. */
#define BOTH(stmt)                                                             \
  do {                                                                         \
    for (int I = 0; I < 2; I++) {                                              \
      tc_env_t *E = I ? &ref : &cl;                                            \
      bp_status_t st_ = (stmt);                                                \
      tc_expect_status(E, st_, BP_OK, "%s", #stmt);                            \
    }                                                                          \
  } while (0)

/* f32 always, then bf16 and f64 where the OpenCL device claims them. */
static int float_dtypes(bp_op_t op, bp_dtype_t *out) {
  static const bp_dtype_t all[] = {BP_F32, BP_BF16, BP_F64, BP_F16};
  int n = 0;
  for (int i = 0; i < 4; i++)
    if (tc_supports(&cl, op, all[i]) && tc_supports(&ref, op, all[i]))
      out[n++] = all[i];
  return n;
}

static void test_fill_copy_cast(void **state) {
  (void)state;
  NEED_CL();
  int64_t shape[3] = {3, 5, 7};
  const bp_dtype_t dts[] = {BP_F32, BP_BF16, BP_I32, BP_I64, BP_U8, BP_F64, BP_F16};
  for (int i = 0; i < 7; i++) {
    bp_dtype_t dt = dts[i];
    if (!tc_supports(&cl, BP_OP_FILL, dt))
      continue;
    pair_t y = mk(dt, 3, shape, TC_STRIDED, NULL);
    BOTH(bp_fill(E->s, &y.t[I].t, -2.5));
    check(&y, dt, -1, "fill");
    pair_t x = mk_rand(1 + i, dt, 3, shape, TC_PERMUTED, -100, 100);
    BOTH(bp_copy(E->s, &x.t[I].t, &y.t[I].t));
    check(&y, dt, -1, "copy permuted -> strided");
    pfree(&x);
    pfree(&y);
  }
  for (int i = 0; i < 7; i++)
    for (int j = 0; j < 7; j++) {
      if (i == j || !tc_supports(&cl, BP_OP_CAST, dts[i]) ||
          !tc_supports(&cl, BP_OP_CAST, dts[j]))
        continue;
      double v[8] = {1.5, 2.5, -1.5, NAN, 1e20, -1e20, 300.7, -0.4};
      int64_t n8[1] = {8};
      pair_t x = mk(dts[i], 1, n8, TC_CONTIG, v);
      pair_t y = mk(dts[j], 1, n8, TC_STRIDED, NULL);
      BOTH(bp_cast(E->s, &x.t[I].t, &y.t[I].t));
      char what[64];
      snprintf(what, sizeof what, "cast %s -> %s", bp_dtype_name(dts[i]),
               bp_dtype_name(dts[j]));
      check(&y, dts[j], -1, what);
      pfree(&x);
      pfree(&y);
    }
  TC_END();
}

static void test_unary_binary(void **state) {
  (void)state;
  NEED_CL();
  bp_dtype_t dts[4];
  int ndt = float_dtypes(BP_OP_UNARY, dts);
  int64_t shape[2] = {13, 29}, row[2] = {1, 29};
  for (int d = 0; d < ndt; d++) {
    bp_dtype_t dt = dts[d];
    pair_t x = mk_rand(7, dt, 2, shape, TC_PERMUTED, 0.1, 3);
    pair_t y = mk(dt, 2, shape, TC_STRIDED, NULL);
    for (int op = 0; op < BP_UNARY_COUNT; op++) {
      if (!tc_unary_claimed(&cl, (bp_unary_op_t)op)) continue; /* test_model_ops */
      BOTH(bp_unary(E->s, (bp_unary_op_t)op, &x.t[I].t, &y.t[I].t));
      char what[64];
      snprintf(what, sizeof what, "unary %d %s", op, bp_dtype_name(dt));
      check(&y, dt, 1, what);
    }
    pair_t b = mk_rand(8, dt, 2, row, TC_CONTIG, 0.5, 2);
    for (int op = 0; op < BP_BINARY_COUNT; op++) {
      BOTH(bp_binary(E->s, (bp_binary_op_t)op, &x.t[I].t, &b.t[I].t,
                     &y.t[I].t));
      char what[64];
      snprintf(what, sizeof what, "binary %d %s (broadcast row)", op,
               bp_dtype_name(dt));
      check(&y, dt, 1, what);
    }
    pfree(&x);
    pfree(&b);
    pfree(&y);
  }
  TC_END();
}

#include "test_opencl_ops.inc"
#include "test_opencl_dnn.inc"

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fill_copy_cast),
      cmocka_unit_test(test_unary_binary),
      OCL_MORE_TESTS,
      OCL_DNN_TESTS
  };
  /* No device is a skip, or a failure where PoCL is installed (skip.h). */
  if (setup(NULL) != 0)
    return 1;
  if (!have_cl) {
    char why[600];
    tc_plugin_reason(ctx, "opencl", why, sizeof why);
    teardown(NULL);
    return test_no_device("opencl", why);
  }
  int failed = cmocka_run_group_tests_name("opencl vs cpu-ref", tests, NULL, NULL);
  teardown(NULL);
  return failed;
}
