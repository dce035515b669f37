/*
 * test_ops_dnn.c — conv2d (stride, padding, dilation, groups, depthwise,
 * bias or none, views) and max / average pooling (padding, default
 * stride, count_include_pad) on every float dtype the device claims,
 * against test/common/ref.c. Norms, softmax and Adam are in
 * test_ops_norm.c; attention in test_ops_attention.c.
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

typedef struct conv_case {
  ref_conv_t p;
  bool bias;
  bool nan; /* one NaN in x */
} conv_case_t;

static const conv_case_t conv_cases[] = {
    {{1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1}, false, false},
    {{2, 3, 7, 13, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1}, true, false},
    {{1, 4, 13, 7, 6, 3, 2, 2, 1, 1, 0, 2, 1, 2}, true, false},   /* groups 2 */
    {{2, 6, 9, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6}, true, false},    /* depthwise */
    {{1, 3, 7, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 3}, false, false},   /* depthwise x2 */
    {{1, 3, 31, 7, 4, 5, 1, 3, 1, 2, 0, 1, 1, 1}, false, false},
    {{1, 2, 7, 7, 2, 7, 7, 1, 1, 0, 0, 1, 1, 1}, true, false},    /* 1x1 output */
    {{1, 2, 13, 13, 3, 3, 3, 1, 2, 2, 3, 3, 2, 1}, true, false},  /* dilation */
    {{0, 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1}, true, false},    /* N = 0 */
    {{1, 2, 6, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1}, false, true},    /* NaN */
    /* Wide enough for the GPU plugins' GEMM route (ops_conv_gemm.c). */
    {{2, 5, 9, 11, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1}, true, false},  /* patches */
    {{3, 20, 6, 7, 18, 1, 1, 1, 1, 0, 0, 1, 1, 1}, true, false},  /* x is the patches */
    {{2, 8, 10, 9, 32, 3, 3, 2, 2, 1, 1, 1, 1, 2}, false, false}, /* groups 2, stride 2 */
    {{3, 24, 7, 7, 16, 1, 1, 2, 2, 0, 0, 1, 1, 1}, true, false},  /* 1x1 stride 2 */
    {{2, 4, 11, 11, 20, 3, 3, 1, 1, 2, 2, 2, 2, 1}, false, true}, /* dilation, NaN */
};

static void conv_one(tc_env_t *e, bp_dtype_t dt, const conv_case_t *cc,
                     int variant, tc_rng_t *rng) {
  const ref_conv_t *p = &cc->p;
  int64_t P = ref_out_extent(p->H, p->R, p->ph, p->sh, p->dh);
  int64_t Q = ref_out_extent(p->W, p->S, p->pw, p->sw, p->dw);
  int64_t xs[4] = {p->N, p->C, p->H, p->W}, ws[4] = {p->K, p->C / p->groups, p->R, p->S};
  int64_t ys[4] = {p->N, p->K, P, Q}, bs = p->K;
  int64_t nx = tc_numel(4, xs), nw = tc_numel(4, ws), ny = tc_numel(4, ys);
  double *x = malloc(sizeof(double) * (size_t)(nx + 1));
  double *w = malloc(sizeof(double) * (size_t)(nw + 1));
  double *ref = malloc(sizeof(double) * (size_t)(ny + 1));
  double b[64];
  tc_rng_fill(rng, dt, -1, 1, x, nx);
  tc_rng_fill(rng, dt, -1, 1, w, nw);
  tc_rng_fill(rng, dt, -1, 1, b, bs);
  if (cc->nan)
    x[2 * p->W + 3] = NAN;
  /* variant < 0: every tensor dense (the layout real layers use, and the
   * one the GPU plugins' GEMM route needs beyond 1x1); else the layouts
   * rotate over the operands. */
#define CONV_LAYOUT(i) (variant < 0 ? TC_CONTIG : (tc_layout_t)((variant + (i)) % TC_LAYOUT_COUNT))
  tc_tensor_t X = tc_tensor(e, dt, 4, xs, CONV_LAYOUT(0), x);
  tc_tensor_t Wt = tc_tensor(e, dt, 4, ws, CONV_LAYOUT(1), w);
  tc_tensor_t Bt = tc_tensor(e, dt, 1, &bs, variant < 0 ? TC_CONTIG : TC_STRIDED, b);
  tc_tensor_t Y = tc_tensor(e, dt, 4, ys, CONV_LAYOUT(2), NULL);
#undef CONV_LAYOUT
  bp_conv2d_params_t prm = {.struct_size = sizeof prm, .stride_h = (int32_t)p->sh,
                            .stride_w = (int32_t)p->sw, .pad_h = (int32_t)p->ph,
                            .pad_w = (int32_t)p->pw, .dilation_h = (int32_t)p->dh,
                            .dilation_w = (int32_t)p->dw, .groups = (int32_t)p->groups};
  if (variant == 1 && p->sh == 1 && p->sw == 1 && p->dh == 1 && p->dw == 1 && p->groups == 1)
    prm.stride_h = prm.stride_w = prm.dilation_h = prm.dilation_w = prm.groups = 0; /* 0 means 1 */
  bp_status_t st = bp_conv2d(e->s, &prm, &X.t, &Wt.t, cc->bias ? &Bt.t : NULL, &Y.t);
  char what[200];
  snprintf(what, sizeof what,
           "conv2d N%lld C%lld %lldx%lld K%lld %lldx%lld s%lld,%lld p%lld,%lld d%lld,%lld g%lld%s v%d",
           (long long)p->N, (long long)p->C, (long long)p->H, (long long)p->W, (long long)p->K,
           (long long)p->R, (long long)p->S, (long long)p->sh, (long long)p->sw,
           (long long)p->ph, (long long)p->pw, (long long)p->dh, (long long)p->dw,
           (long long)p->groups, cc->bias ? " bias" : "", variant);
  if (tc_expect_status(e, st, BP_OK, "%s", what)) {
    double *xv = tc_values(&X), *wv = tc_values(&Wt), *bv = tc_values(&Bt);
    double *y = tc_download(&Y);
    ref_conv2d(p, xv, wv, cc->bias ? bv : NULL, ref);
    tc_expect_close(e, dt, y, ref, ny, (double)(p->C / p->groups * p->R * p->S), "%s", what);
    if (tc_outside_changed(&Y))
      print_error("FAIL [%s] %s wrote outside y\n", e->name, what), tc_failures++;
    free(xv), free(wv), free(bv), free(y);
  }
  tc_tensor_free(&X), tc_tensor_free(&Wt), tc_tensor_free(&Bt), tc_tensor_free(&Y);
  free(x), free(w), free(ref);
}

static void test_conv2d(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 51);
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_CONV2D, dt))
        continue;
      for (size_t c = 0; c < sizeof conv_cases / sizeof *conv_cases; c++)
        for (int v = 0; v < 3; v++)
          conv_one(&su->env[d], dt, &conv_cases[c], v < 2 ? v + (int)c : -1, &rng);
    }
  TC_END();
}

/* ---- pool2d ------------------------------------------------------------------*/

typedef struct pool_case {
  int64_t N, C, H, W, kh, kw, sh, sw, ph, pw; /* sh 0: the kernel size */
} pool_case_t;

static const pool_case_t pool_cases[] = {
    {1, 1, 1, 1, 1, 1, 1, 1, 0, 0},  {2, 3, 7, 13, 3, 3, 2, 2, 1, 1},
    {1, 2, 13, 7, 2, 3, 1, 2, 1, 1}, {1, 2, 9, 9, 3, 3, 0, 0, 0, 0},
    {1, 1, 4, 4, 4, 4, 1, 1, 2, 2},  {1, 3, 31, 5, 5, 1, 3, 1, 2, 0},
    {0, 3, 5, 5, 2, 2, 1, 1, 1, 1},
};

static void pool_one(tc_env_t *e, bp_dtype_t dt, const pool_case_t *pc, bool max,
                     bool include_pad, int variant, const double *xv_in,
                     tc_rng_t *rng) {
  int64_t sh = pc->sh ? pc->sh : pc->kh, sw = pc->sw ? pc->sw : pc->kw;
  int64_t P = ref_out_extent(pc->H, pc->kh, pc->ph, sh, 1);
  int64_t Q = ref_out_extent(pc->W, pc->kw, pc->pw, sw, 1);
  int64_t xs[4] = {pc->N, pc->C, pc->H, pc->W}, ys[4] = {pc->N, pc->C, P, Q};
  int64_t nx = tc_numel(4, xs), ny = tc_numel(4, ys);
  double *x = malloc(sizeof(double) * (size_t)(nx + 1));
  double *ref = malloc(sizeof(double) * (size_t)(ny + 1));
  if (xv_in)
    memcpy(x, xv_in, sizeof(double) * (size_t)nx);
  else
    tc_rng_fill(rng, dt, -2, 2, x, nx);
  tc_tensor_t X = tc_tensor(e, dt, 4, xs, (tc_layout_t)(variant % TC_LAYOUT_COUNT), x);
  tc_tensor_t Y = tc_tensor(e, dt, 4, ys, (tc_layout_t)((variant + 1) % TC_LAYOUT_COUNT), NULL);
  bp_pool2d_params_t prm = {.struct_size = sizeof prm, .kind = max ? BP_POOL_MAX : BP_POOL_AVG,
                            .kernel_h = (int32_t)pc->kh, .kernel_w = (int32_t)pc->kw,
                            .stride_h = (int32_t)pc->sh, .stride_w = (int32_t)pc->sw,
                            .pad_h = (int32_t)pc->ph, .pad_w = (int32_t)pc->pw,
                            .count_include_pad = include_pad};
  bp_status_t st = bp_pool2d(e->s, &prm, &X.t, &Y.t);
  char what[200];
  snprintf(what, sizeof what, "pool2d %s%s N%lld C%lld %lldx%lld k%lldx%lld s%lld,%lld p%lld,%lld",
           max ? "max" : "avg", include_pad ? " count_include_pad" : "", (long long)pc->N,
           (long long)pc->C, (long long)pc->H, (long long)pc->W, (long long)pc->kh,
           (long long)pc->kw, (long long)pc->sh, (long long)pc->sw, (long long)pc->ph,
           (long long)pc->pw);
  if (tc_expect_status(e, st, BP_OK, "%s", what)) {
    double *xv = tc_values(&X), *y = tc_download(&Y);
    ref_pool2d(max, pc->N, pc->C, pc->H, pc->W, pc->kh, pc->kw, sh, sw, pc->ph, pc->pw,
               include_pad, xv, ref);
    if (max)
      tc_expect_exact(e, dt, y, ref, ny, "%s", what);
    else
      tc_expect_close(e, dt, y, ref, ny, (double)(pc->kh * pc->kw), "%s", what);
    if (tc_outside_changed(&Y))
      print_error("FAIL [%s] %s wrote outside y\n", e->name, what), tc_failures++;
    free(xv), free(y);
  }
  tc_tensor_free(&X), tc_tensor_free(&Y);
  free(x), free(ref);
}

static void test_pool2d(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 52);
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_POOL2D, dt))
        continue;
      int v = 0;
      for (size_t c = 0; c < sizeof pool_cases / sizeof *pool_cases; c++)
        for (int kind = 0; kind < 3; kind++, v++)
          pool_one(&su->env[d], dt, &pool_cases[c], kind == 0, kind == 2, v, NULL, &rng);
    }
  TC_END();
}

/* All-negative input: max pooling over a window partly in the padding
 * must not return 0 (padding is -inf); +-Inf pass through; NaN reaches
 * every average that covers it. */
static void test_pool2d_special(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const pool_case_t pc = {1, 1, 4, 4, 3, 3, 1, 1, 1, 1};
  double neg[16], inf[16];
  for (int i = 0; i < 16; i++) {
    neg[i] = -1 - 0.25 * i;
    inf[i] = 0.5 * i;
  }
  inf[5] = INFINITY;
  inf[15] = -INFINITY;
  double nan[16];
  memcpy(nan, neg, sizeof nan);
  nan[0] = NAN;
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_POOL2D, dt))
        continue;
      pool_one(&su->env[d], dt, &pc, true, false, 0, neg, NULL);
      pool_one(&su->env[d], dt, &pc, true, false, 1, inf, NULL);
      pool_one(&su->env[d], dt, &pc, false, false, 2, nan, NULL);
      pool_one(&su->env[d], dt, &pc, false, true, 0, neg, NULL);
    }
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv2d),
      cmocka_unit_test(test_pool2d),
      cmocka_unit_test(test_pool2d_special),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
