/*
 * test_ops_norm.c — batch norm, layer norm, RMS norm (with and without
 * gamma / beta, in place, NaN confined to its row), softmax and
 * log-softmax along every axis (large values, -inf entries, NaN rows) and
 * the fused Adam / AdamW step over several tensors, on every float dtype
 * the device claims, against test/common/ref.c.
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

static void test_batch_norm(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 61);
  static const int64_t s4[4] = {2, 3, 5, 7}, s2[2] = {7, 13}, s3[3] = {2, 31, 1},
                       s1[4] = {1, 1, 1, 1}, s0[3] = {0, 3, 4};
  const struct {
    int r;
    const int64_t *s;
  } shapes[] = {{4, s4}, {2, s2}, {3, s3}, {4, s1}, {3, s0}};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_BATCH_NORM, dt))
        continue;
      for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
        for (int inplace = 0; inplace < 2; inplace++) {
          int r = shapes[k].r;
          const int64_t *s = shapes[k].s;
          int64_t n = tc_numel(r, s), C = s[1], inner = n / (s[0] ? s[0] * C : 1);
          double *x = malloc(sizeof(double) * (size_t)(n + 1)), *ref = malloc(sizeof(double) * (size_t)(n + 1));
          double mean[32], var[32], sc[32], bi[32];
          tc_rng_fill(&rng, dt, -2, 2, x, n);
          tc_rng_fill(&rng, dt, -0.5, 0.5, mean, C);
          tc_rng_fill(&rng, dt, 0.5, 2, var, C);
          tc_rng_fill(&rng, dt, -1.5, 1.5, sc, C);
          tc_rng_fill(&rng, dt, -1, 1, bi, C);
          tc_layout_t l = (tc_layout_t)(k % TC_LAYOUT_COUNT);
          tc_tensor_t X = tc_tensor(e, dt, r, s, l, x);
          tc_tensor_t M = tc_tensor(e, dt, 1, &C, TC_CONTIG, mean);
          tc_tensor_t V = tc_tensor(e, dt, 1, &C, TC_STRIDED, var);
          tc_tensor_t S = tc_tensor(e, dt, 1, &C, TC_CONTIG, sc);
          tc_tensor_t B = tc_tensor(e, dt, 1, &C, TC_STRIDED, bi);
          tc_tensor_t Y = inplace ? X : tc_tensor(e, dt, r, s, (tc_layout_t)((k + 1) % TC_LAYOUT_COUNT), NULL);
          bp_status_t st = bp_batch_norm(e->s, &X.t, &M.t, &V.t, &S.t, &B.t, 1e-3, &Y.t);
          if (tc_expect_status(e, st, BP_OK, "batch_norm rank %d", r)) {
            double *y = tc_download(&Y);
            ref_batch_norm(s[0], C, inner, x, mean, var, sc, bi, 1e-3, ref);
            tc_expect_close(e, dt, y, ref, n, 1, "batch_norm rank %d %s%s", r,
                            tc_layout_names[l], inplace ? " in place" : "");
            free(y);
          }
          tc_tensor_free(&X), tc_tensor_free(&M), tc_tensor_free(&V);
          tc_tensor_free(&S), tc_tensor_free(&B);
          if (!inplace)
            tc_tensor_free(&Y);
          free(x), free(ref);
        }
    }
  TC_END();
}

/* Layer norm (rms 0) or RMS norm (rms 1) over the last axis. */
static void norm_one(tc_env_t *e, bp_dtype_t dt, bool rms, int r, const int64_t *s,
                     bool with_gamma, bool with_beta, bool inplace, int variant,
                     bool nan_row, tc_rng_t *rng) {
  int64_t n = tc_numel(r, s), last = s[r - 1], rows = last ? n / last : 0;
  double *x = malloc(sizeof(double) * (size_t)(n + 1)), *ref = malloc(sizeof(double) * (size_t)(n + 1));
  double *g = malloc(sizeof(double) * (size_t)(last + 1)), *b = malloc(sizeof(double) * (size_t)(last + 1));
  tc_rng_fill(rng, dt, -2, 2, x, n);
  tc_rng_fill(rng, dt, 0.5, 1.5, g, last);
  tc_rng_fill(rng, dt, -1, 1, b, last);
  if (nan_row && n > last)
    x[last + 1] = NAN; /* row 1 only */
  tc_tensor_t X = tc_tensor(e, dt, r, s, (tc_layout_t)(variant % TC_LAYOUT_COUNT), x);
  tc_tensor_t G = tc_tensor(e, dt, 1, &last, TC_STRIDED, g);
  tc_tensor_t B = tc_tensor(e, dt, 1, &last, TC_CONTIG, b);
  tc_tensor_t Y = inplace ? X : tc_tensor(e, dt, r, s, (tc_layout_t)((variant + 1) % TC_LAYOUT_COUNT), NULL);
  bp_status_t st = rms ? bp_rms_norm(e->s, &X.t, with_gamma ? &G.t : NULL, 1e-5, &Y.t)
                       : bp_layer_norm(e->s, &X.t, with_gamma ? &G.t : NULL,
                                       with_beta ? &B.t : NULL, 1e-5, &Y.t);
  char what[160];
  snprintf(what, sizeof what, "%s rank %d last %lld%s%s%s%s", rms ? "rms_norm" : "layer_norm", r,
           (long long)last, with_gamma ? " gamma" : "", with_beta ? " beta" : "",
           inplace ? " in place" : "", nan_row ? " NaN row" : "");
  if (tc_expect_status(e, st, BP_OK, "%s", what)) {
    double *y = tc_download(&Y);
    if (rms)
      ref_rms_norm(rows, last, x, with_gamma ? g : NULL, 1e-5, ref);
    else
      ref_layer_norm(rows, last, x, with_gamma ? g : NULL, with_beta ? b : NULL, 1e-5, ref);
    tc_expect_close(e, dt, y, ref, n, (double)last, "%s", what);
    if (!inplace && tc_outside_changed(&Y))
      print_error("FAIL [%s] %s wrote outside y\n", e->name, what), tc_failures++;
    free(y);
  }
  tc_tensor_free(&X), tc_tensor_free(&G), tc_tensor_free(&B);
  if (!inplace)
    tc_tensor_free(&Y);
  free(x), free(ref), free(g), free(b);
}

static void test_layer_rms_norm(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 62);
  /* Wide rows too: the GPU kernels go one block per row from 512
   * elements up to 32 KiB of the compute type (f32 8192, f64 4096), one
   * warp per row past it. */
  static const int64_t s2[2] = {7, 13}, s3[3] = {3, 5, 31}, s1[2] = {5, 1},
                       s127[1] = {127}, s0[2] = {0, 7}, w600[2] = {3, 600},
                       w4100[2] = {2, 4100}, w8192[1] = {8192}, w8200[2] = {2, 8200};
  const struct {
    int r;
    const int64_t *s;
  } shapes[] = {{2, s2},    {3, s3},    {2, s1},     {1, s127},
                {2, s0},    {2, w600},  {2, w4100}, {1, w8192}, {2, w8200}};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      for (int rms = 0; rms < 2; rms++) {
        if (!tc_supports(&su->env[d], rms ? BP_OP_RMS_NORM : BP_OP_LAYER_NORM, dt))
          continue;
        int v = 0;
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
          for (int opt = 0; opt < 4; opt++, v++)
            norm_one(&su->env[d], dt, rms, shapes[k].r, shapes[k].s, opt & 1,
                     !rms && (opt & 2), opt == 3, v, (k == 0 || k == 5) && opt == 1, &rng);
      }
    }
  TC_END();
}

/* ---- softmax -----------------------------------------------------------------*/

static void softmax_one(tc_env_t *e, bp_dtype_t dt, int r, const int64_t *s, int axis,
                        bool lg, int variant, const double *xin, tc_rng_t *rng) {
  int64_t n = tc_numel(r, s);
  int ax = axis < 0 ? axis + r : axis;
  double *x = malloc(sizeof(double) * (size_t)(n + 1)), *ref = malloc(sizeof(double) * (size_t)(n + 1));
  if (xin)
    memcpy(x, xin, sizeof(double) * (size_t)n);
  else
    tc_rng_fill(rng, dt, -4, 4, x, n);
  tc_tensor_t X = tc_tensor(e, dt, r, s, (tc_layout_t)(variant % TC_LAYOUT_COUNT), x);
  tc_tensor_t Y = tc_tensor(e, dt, r, s, (tc_layout_t)((variant + 2) % TC_LAYOUT_COUNT), NULL);
  bp_status_t st = bp_softmax(e->s, &X.t, axis, lg, &Y.t);
  if (tc_expect_status(e, st, BP_OK, "%s rank %d axis %d", lg ? "log_softmax" : "softmax", r, axis)) {
    double *xv = tc_values(&X), *y = tc_download(&Y);
    ref_softmax(r, s, ax, lg, xv, ref);
    tc_expect_close(e, dt, y, ref, n, (double)s[ax], "%s rank %d axis %d (%s -> %s)%s",
                    lg ? "log_softmax" : "softmax", r, axis,
                    tc_layout_names[variant % TC_LAYOUT_COUNT],
                    tc_layout_names[(variant + 2) % TC_LAYOUT_COUNT], xin ? " special" : "");
    if (tc_outside_changed(&Y))
      print_error("FAIL [%s] softmax wrote outside y\n", e->name), tc_failures++;
    free(xv), free(y);
  }
  tc_tensor_free(&X), tc_tensor_free(&Y);
  free(x), free(ref);
}

static void test_softmax(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 63);
  /* Wide rows as for the norms, along the last axis and along the first
   * (rows whose elements are apart in memory). */
  static const int64_t s2[2] = {7, 13}, s3[3] = {3, 5, 31}, s1[1] = {1}, s4[3] = {2, 1, 7},
                       s127[1] = {127}, w600[2] = {3, 600}, w600t[2] = {600, 2},
                       w4100[2] = {2, 4100}, w8200[2] = {2, 8200};
  const struct {
    int r;
    const int64_t *s;
  } shapes[] = {{2, s2},   {3, s3},    {1, s1},     {3, s4},    {1, s127},
                {2, w600}, {2, w600t}, {2, w4100}, {2, w8200}};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_SOFTMAX, dt))
        continue;
      int v = 0;
      for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
        for (int ax = -shapes[k].r; ax < shapes[k].r; ax++)
          for (int lg = 0; lg < 2; lg++, v++)
            softmax_one(&su->env[d], dt, shapes[k].r, shapes[k].s, ax, lg, v, NULL, &rng);
    }
  TC_END();
}

/* Rows: large values (overflow without max subtraction), some -inf
 * entries (probability 0, log -inf), a NaN (whole row NaN), all equal. */
static void test_softmax_special(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const int64_t s[2] = {4, 5};
  const double x[20] = {1000, 1001, 999, 1000.5, 998, -INFINITY, 1, -INFINITY, 2, 0,
                        1, NAN, 2, 3, 4, 7, 7, 7, 7, 7};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_SOFTMAX, dt))
        continue;
      for (int lg = 0; lg < 2; lg++)
        softmax_one(&su->env[d], dt, 2, s, 1, lg, lg, x, NULL);
    }
  TC_END();
}

/* ---- adam ---------------------------------------------------------------------*/

static void test_adam(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 64);
  static const int64_t s0[1] = {1}, s1[1] = {13}, s2[2] = {7, 5};
  const int ranks[3] = {1, 1, 2};
  const int64_t *shapes[3] = {s0, s1, s2};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_ADAM, dt))
        continue;
      for (int var = 0; var < 4; var++) {
        bool adamw = var & 1;
        bp_adam_params_t p = {.struct_size = sizeof p, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.99,
                              .eps = 1e-8, .weight_decay = var & 2 ? 0.01 : 0.0,
                              .step = var & 2 ? 10 : 1, .adamw = adamw};
        tc_tensor_t T[4][3];
        double *h[4][3];
        bp_tensor_t views[4][3];
        for (int i = 0; i < 3; i++) {
          int64_t n = tc_numel(ranks[i], shapes[i]);
          for (int k = 0; k < 4; k++) {
            h[k][i] = malloc(sizeof(double) * (size_t)n);
            /* params, grads (|g| >= 0.25 so v stays normal in f16), m, v */
            const double lo[4] = {-2, 0.25, -0.5, 0.01}, hi[4] = {2, 1, 0.5, 1};
            tc_rng_fill(&rng, dt, lo[k], hi[k], h[k][i], n);
            if (k == 1)
              for (int64_t j = 0; j < n; j += 2)
                h[k][i][j] = -h[k][i][j];
            T[k][i] = tc_tensor(e, dt, ranks[i], shapes[i], (tc_layout_t)((i + k) % TC_LAYOUT_COUNT), h[k][i]);
            views[k][i] = T[k][i].t;
          }
        }
        bp_status_t st = bp_adam(e->s, &p, 3, views[0], views[1], views[2], views[3]);
        if (tc_expect_status(e, st, BP_OK, "adam%s step %lld", adamw ? "w" : "", (long long)p.step))
          for (int i = 0; i < 3; i++) {
            int64_t n = tc_numel(ranks[i], shapes[i]);
            ref_adam(n, adamw, p.step, p.lr, p.beta1, p.beta2, p.eps, p.weight_decay,
                     h[0][i], h[1][i], h[2][i], h[3][i]);
            const char *names[4] = {"param", "grad", "exp_avg", "exp_avg_sq"};
            for (int k = 0; k < 4; k++) {
              double *y = tc_download(&T[k][i]);
              tc_expect_close(e, dt, y, h[k][i], n, 1, "adam%s step %lld wd %g tensor %d %s",
                              adamw ? "w" : "", (long long)p.step, p.weight_decay, i, names[k]);
              free(y);
              if (tc_outside_changed(&T[k][i]))
                print_error("FAIL [%s] adam wrote outside %s\n", e->name, names[k]), tc_failures++;
            }
          }
        for (int i = 0; i < 3; i++)
          for (int k = 0; k < 4; k++) {
            tc_tensor_free(&T[k][i]);
            free(h[k][i]);
          }
      }
    }
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batch_norm),      cmocka_unit_test(test_layer_rms_norm),
      cmocka_unit_test(test_softmax),         cmocka_unit_test(test_softmax_special),
      cmocka_unit_test(test_adam),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
