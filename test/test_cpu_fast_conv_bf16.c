/*
 * test_cpu_fast_conv_bf16.c — the "cpu" device's bf16 conv2d on AMX tiles
 * (plugins/cpu/fast/conv/conv2d_bf16.c) against the scalar reference
 * (ref_dnn.c, double accumulation, one rounding), both linked straight from
 * the plugin's objects so thread counts can be forced. Shapes: strides,
 * padding, dilation, groups, odd channel counts, bias (f32 and bf16),
 * 1x1 read in place, a strided x; the stride-1 implicit GEMMs of
 * conv2d_amx.c and (1x1) conv2d_amx_pairs.c. Tolerance: the bf16 rounding of the
 * result (2^-8 relative) and of the bias (prefilled as bf16), as the
 * products of bf16 values are exact in the f32 accumulators.
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
#include "plugins/cpu/ref/ref.h"
#include "test/plugin_tensor.h"
#include "test/skip.h"

typedef struct bcase {
  int64_t N, C, H, W, K, R, S;
  int sh, sw, ph, pw, dh, dw, groups, bias; /* bias: 0 none, 1 f32, 2 bf16 */
  int xpad;                                 /* x rows this much wider */
} bcase_t;

static uint16_t brand(void) {
  return cpu_bf16_from_double((double)(rand() % 2001 - 1000) / 500.0);
}

/* Runs c on dev, compares with the reference; returns the mismatches. */
static int run_case(cpu_device_t *dev, const bcase_t *c) {
  int64_t P = (c->H + 2 * c->ph - c->dh * (c->R - 1) - 1) / c->sh + 1;
  int64_t Q = (c->W + 2 * c->pw - c->dw * (c->S - 1) - 1) / c->sw + 1;
  int64_t cg = c->C / c->groups, xw = c->W + c->xpad;
  int64_t xs[4] = {c->N, c->C, c->H, c->W};
  int64_t xst[4] = {c->C * c->H * xw, c->H * xw, xw, 1};
  int64_t ws[4] = {c->K, cg, c->R, c->S};
  int64_t wst[4] = {cg * c->R * c->S, c->R * c->S, c->S, 1};
  int64_t ys[4] = {c->N, c->K, P, Q}, yst[4] = {c->K * P * Q, P * Q, Q, 1};
  int64_t bs[1] = {c->K}, bst[1] = {1};
  int64_t nx = xst[0] * c->N, nw = wst[0] * c->K, ny = yst[0] * c->N;
  uint16_t *x = malloc((size_t)nx * 2), *w = malloc((size_t)nw * 2);
  uint16_t *y = malloc((size_t)ny * 2), *yr = malloc((size_t)ny * 2);
  float *bf = malloc((size_t)c->K * 4);
  uint16_t *bb = malloc((size_t)c->K * 2);
  for (int64_t i = 0; i < nx; i++) x[i] = brand();
  for (int64_t i = 0; i < nw; i++) w[i] = brand();
  for (int64_t i = 0; i < ny; i++) y[i] = 0x7fc1; /* NaN: every output must be written */
  for (int64_t k = 0; k < c->K; k++) bf[k] = (float)(rand() % 2001 - 1000) / 300.0f;
  for (int64_t k = 0; k < c->K; k++) bb[k] = cpu_bf16_from_double(bf[k]);
  bp_conv2d_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.stride_h = c->sh, a.stride_w = c->sw, a.pad_h = c->ph, a.pad_w = c->pw;
  a.dilation_h = c->dh, a.dilation_w = c->dw, a.groups = c->groups;
  a.x = plugin_tensor(x, BP_BF16, 4, xs, xst);
  a.w = plugin_tensor(w, BP_BF16, 4, ws, wst);
  if (c->bias == 1) a.bias = plugin_tensor(bf, BP_F32, 1, bs, bst);
  if (c->bias == 2) a.bias = plugin_tensor(bb, BP_BF16, 1, bs, bst);
  a.y = plugin_tensor(y, BP_BF16, 4, ys, yst);
  bp_status_t st = cpu_fast_conv2d(dev, &a);
  assert_int_equal(st, BP_OK); /* AMX is there: the fast path must run */
  a.y.ptr = (uint64_t)(uintptr_t)yr;
  cpu_ref_conv2d_range(&a, 0, cpu_ref_conv2d_tasks(&a));
  int bad = 0;
  for (int64_t i = 0; i < ny; i++) {
    double got = cpu_bf16_to_float(y[i]), want = cpu_bf16_to_float(yr[i]);
    double b = c->bias ? fabs(bf[(i / (P * Q)) % c->K]) : 0.0;
    double tol = fabs(want) / 128.0 + b / 256.0 + 1e-3;
    if (!(fabs(got - want) <= tol)) {
      if (bad++ < 3)
        print_message("N%ld C%ld H%ld W%ld K%ld %ldx%ld s%d,%d p%d,%d d%d,%d g%d b%d: "
                      "y[%ld] = %g, reference %g\n",
                      (long)c->N, (long)c->C, (long)c->H, (long)c->W, (long)c->K, (long)c->R,
                      (long)c->S, c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->groups, c->bias,
                      (long)i, got, want);
    }
  }
  free(x), free(w), free(y), free(yr), free(bf), free(bb);
  return bad;
}

static const bcase_t cases[] = {
    /* N  C   H   W   K  R  S sh sw ph pw dh dw  g  b xpad */
    {1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0},  /* 3x3, same padding */
    {2, 17, 11, 13, 19, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0},  /* odd channels, f32 bias */
    {1, 3, 37, 41, 33, 7, 7, 2, 2, 3, 3, 1, 1, 1, 2, 0},   /* stem, bf16 bias */
    {1, 40, 15, 17, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 0},  /* stride 2 */
    {1, 24, 16, 16, 24, 3, 3, 1, 1, 2, 2, 2, 2, 1, 1, 0},  /* dilation 2 */
    {2, 32, 9, 10, 36, 3, 3, 1, 1, 1, 1, 1, 1, 4, 1, 0},   /* groups */
    {1, 8, 12, 12, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, 1, 0},    /* depthwise */
    {2, 70, 13, 9, 45, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0},   /* 1x1 in place */
    {1, 64, 8, 8, 96, 1, 1, 1, 1, 0, 0, 1, 1, 2, 0, 0},    /* 1x1 in place, groups */
    {1, 30, 10, 10, 20, 1, 1, 2, 2, 0, 0, 1, 1, 1, 1, 0},  /* 1x1 stride 2 */
    {1, 20, 10, 11, 40, 3, 2, 1, 3, 0, 2, 1, 1, 1, 1, 5},  /* strided x rows */
    {1, 33, 7, 7, 65, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 3},    /* 1x1, strided x rows */
    {1, 256, 14, 14, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0}, /* k past a k block */
    {1, 20, 12, 11, 24, 3, 3, 2, 1, 1, 2, 1, 1, 1, 1, 0},  /* stride 2 on rows only */
    {1, 12, 9, 10, 16, 3, 5, 1, 1, 2, 1, 2, 1, 1, 2, 3},   /* unit-stride rows, wider x */
    /* the implicit GEMM of conv2d_amx.c (stride 1): filter rows read in
     * place (crs and the group's channels multiples of 32) or copied */
    {1, 64, 57, 57, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0},   /* 1x1 in place, a short last block */
    {1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 2, 0}, /* the bench's 3x3, channel parts */
    {1, 32, 9, 11, 32, 3, 3, 1, 1, 0, 0, 1, 1, 1, 0, 0},    /* unpadded 3x3: x in place */
    {2, 64, 10, 10, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2, 1, 0},   /* groups of 32, filter in place */
    {3, 48, 5, 6, 40, 3, 3, 1, 1, 2, 1, 1, 2, 1, 1, 2},     /* Q < pitch, wide-grid gaps */
    {1, 37, 3, 40, 33, 1, 3, 1, 1, 0, 1, 1, 1, 1, 1, 0},    /* one output row, k tail */
    /* 1x1 through the row blocks of conv2d_amx_pairs.c */
    {1, 256, 20, 20, 640, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0}, /* filter in place (> 256 KiB) */
    {3, 40, 9, 12, 36, 1, 1, 1, 1, 1, 2, 1, 1, 1, 2, 0},    /* padded: zero rows and columns */
    {2, 66, 7, 9, 48, 1, 1, 1, 1, 0, 0, 1, 1, 2, 1, 4},     /* groups of 33: a zero pair, wide rows */
    {1, 96, 33, 33, 70, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0},   /* runs of blocks, a short last one */
    /* more stride-1 layers of conv2d_amx.c */
    {2, 32, 11, 13, 40, 3, 3, 1, 1, 2, 2, 2, 2, 1, 1, 0},   /* dilation 2 */
    {1, 64, 6, 30, 48, 1, 3, 1, 1, 0, 1, 1, 1, 1, 2, 3},    /* 1x3, strided rows */
    {1, 62, 9, 9, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0},     /* 62 channels: a zero pair */
    {1, 32, 12, 12, 32, 5, 5, 1, 1, 2, 2, 1, 1, 1, 0, 0},   /* 5x5: 13 windows per span */
};

static void test_conv_bf16(void **state) {
  (void)state;
  srand(7);
  int bad = 0;
  for (unsigned t = 1; t <= 2; t++) {
    cpu_device_t dev;
    memset(&dev, 0, sizeof dev);
    dev.isa = BP_ISA_BEST;
    dev.threads = t;
    dev.pool = cpu_pool_create(t);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) bad += run_case(&dev, &cases[i]);
    cpu_pool_destroy(dev.pool);
  }
  assert_int_equal(bad, 0);
}

/* Below AVX-512 the AMX route is not taken: the reference runs instead. */
static void test_conv_bf16_isa_ceiling(void **state) {
  (void)state;
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  dev.isa = BP_ISA_AVX2;
  dev.threads = 1;
  assert_false(cpu_fast_conv_amx_ok(&dev));
}

int main(void) {
  cpu_device_t probe;
  memset(&probe, 0, sizeof probe);
  probe.isa = BP_ISA_BEST;
  if (!cpu_fast_conv_amx_ok(&probe))
    return test_skip_suite("no AMX-BF16 (or no tile permission) on this CPU");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_bf16),
      cmocka_unit_test(test_conv_bf16_isa_ceiling),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
