/*
 * test_vulkan_model_texel.c — binary_scalar and GLU on the Vulkan texel
 * path (scalar_f32_tex, glu_f32_tex: f32, rank 1 or 2, from 1024 elements,
 * on CPU implementations such as lavapipe), against a double reference:
 * contiguous and padded-row operands (the rank-2 case a packed gate / up
 * pair gives), a broadcast row, every GLU kind, the scalar first and last.
 * test_ops_model_gpu covers the per-lane kernels at sizes below the texel
 * path's threshold.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "skip.h"
#include "tc.h"

enum { R = 48, C = 72 }; /* R * C = 3456 elements */

static bp_context_t *ctx;
static tc_env_t dev;

static double act(int kind, double g) {
  switch (kind) {
  case BP_GLU_SWIGLU:
    return g / (1 + exp(-g));
  case BP_GLU_GEGLU:
    return 0.5 * g * erfc(-g * M_SQRT1_2);
  case BP_GLU_GEGLU_TANH:
    return 0.5 * g * (1 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
  default:
    return g > 0 ? g : 0;
  }
}

/* Operands with rows padded to 2C: the row stride of a packed pair. */
static tc_tensor_t padded(double *v) {
  int64_t shape[2] = {R, C}, strides[2] = {2 * C, 1};
  return tc_tensor_strided(&dev, BP_F32, 2, shape, strides, 3, v);
}

static void test_glu_texel(void **state) {
  (void)state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 2881);
  double *g = malloc(sizeof(double) * R * C), *u = malloc(sizeof(double) * R * C),
         *ref = malloc(sizeof(double) * R * C);
  tc_rng_fill(&rng, BP_F32, -3, 3, g, R * C);
  tc_rng_fill(&rng, BP_F32, -1, 1, u, R * C);
  int64_t shape[2] = {R, C};
  for (int kind = 0; kind < 4; kind++) {
    tc_tensor_t G = padded(g), U = padded(u),
                Y = tc_tensor(&dev, BP_F32, 2, shape, TC_CONTIG, NULL);
    if (tc_expect_status(&dev, bp_glu(dev.s, (bp_glu_kind_t)kind, &G.t, &U.t, &Y.t), BP_OK,
                         "glu kind %d", kind)) {
      double *y = tc_download(&Y);
      for (int i = 0; i < R * C; i++) ref[i] = act(kind, g[i]) * u[i];
      tc_expect_close(&dev, BP_F32, y, ref, R * C, 1, "glu kind %d, padded rows", kind);
      free(y);
    }
    tc_tensor_free(&G), tc_tensor_free(&U), tc_tensor_free(&Y);
  }
  free(g), free(u), free(ref);
  TC_END();
}

static void test_scalar_texel(void **state) {
  (void)state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 2882);
  double *a = malloc(sizeof(double) * R * C), *ref = malloc(sizeof(double) * R * C);
  tc_rng_fill(&rng, BP_F32, 0.5, 2, a, R * C);
  int64_t shape[2] = {R, C}, flat[1] = {R * C};
  /* contiguous (rank 1 after merging), then padded rows (rank 2) */
  for (int layout = 0; layout < 2; layout++) {
    tc_tensor_t A = layout ? padded(a) : tc_tensor(&dev, BP_F32, 1, flat, TC_CONTIG, a);
    tc_tensor_t Y = tc_tensor(&dev, BP_F32, 2, shape, TC_CONTIG, NULL);
    bp_tensor_t yv = Y.t;
    if (!layout) yv.rank = 1, yv.shape[0] = R * C, yv.strides[0] = 1;
    bp_status_t st = bp_binary_scalar(dev.s, BP_BINARY_POW, &A.t, 1.5, &yv);
    if (tc_expect_status(&dev, st, BP_OK, "binary_scalar pow, layout %d", layout)) {
      double *y = tc_download(&Y);
      for (int i = 0; i < R * C; i++) ref[i] = pow(a[i], 1.5);
      tc_expect_close(&dev, BP_F32, y, ref, R * C, 1, "a ^ 1.5, layout %d", layout);
      free(y);
    }
    st = bp_binary_scalar_first(dev.s, BP_BINARY_SUB, 0.25, &A.t, &yv);
    if (tc_expect_status(&dev, st, BP_OK, "binary_scalar_first sub, layout %d", layout)) {
      double *y = tc_download(&Y);
      for (int i = 0; i < R * C; i++) ref[i] = 0.25 - a[i];
      tc_expect_close(&dev, BP_F32, y, ref, R * C, 1, "0.25 - a, layout %d", layout);
      free(y);
    }
    tc_tensor_free(&A), tc_tensor_free(&Y);
  }
  /* one row broadcast over R rows (stride 0) */
  int64_t bshape[2] = {R, C}, bstrides[2] = {0, 1};
  tc_tensor_t A = tc_tensor_strided(&dev, BP_F32, 2, bshape, bstrides, 1, a);
  tc_tensor_t Y = tc_tensor(&dev, BP_F32, 2, shape, TC_CONTIG, NULL);
  if (tc_expect_status(&dev, bp_binary_scalar(dev.s, BP_BINARY_MUL, &A.t, -3.0, &Y.t), BP_OK,
                       "binary_scalar mul, broadcast row")) {
    double *y = tc_download(&Y), *in = tc_values(&A); /* the row as it was stored */
    for (int i = 0; i < R * C; i++) ref[i] = in[i] * -3.0;
    tc_expect_close(&dev, BP_F32, y, ref, R * C, 1, "a * -3, broadcast row");
    free(y), free(in);
  }
  tc_tensor_free(&A), tc_tensor_free(&Y);
  free(a), free(ref);
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_glu_texel),
      cmocka_unit_test(test_scalar_texel),
  };
  if (bp_context_create(NULL, &ctx) != BP_OK) return 1;
  if (!tc_env_open(&dev, ctx, "vulkan")) {
    bp_context_destroy(ctx);
    return test_no_device("vulkan", "no Vulkan device");
  }
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  tc_env_close(&dev);
  bp_context_destroy(ctx);
  return failed ? 1 : 0;
}
