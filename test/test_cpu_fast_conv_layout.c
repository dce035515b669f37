/*
 * test_cpu_fast_conv_layout.c — the "cpu" device's conv2d fast path over
 * tensors whose planes are not dense (fast/conv/conv2d_relayout.c):
 * channels-last (NHWC) x and y seen as NCHW views (a 1x1 layer as one
 * GEMM, the others through dense copies), y with gaps between its rows,
 * and y with H innermost; f32 on every vector level this CPU has, bf16
 * on AMX where it has it and through widened f32 copies
 * (fast/conv/conv2d_widen.c) at AVX2. Each call must run on the fast path (not
 * decline to the reference), match the scalar reference (ref_dnn.c) and
 * leave the bytes between y's elements as they were.
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

typedef enum layout { NCHW, NHWC, ROW_GAPS, H_INNER } layout_t;

typedef struct lcase {
  int64_t N, C, H, W, K, R, S;
  int st, pad, groups, bias;
  layout_t xl, yl;
} lcase_t;

/* Strides of an [N, C, H, W] tensor in layout l; returns the elements
 * its buffer spans. */
static int64_t strides_of(layout_t l, const int64_t s[4], int64_t st[4]) {
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  switch (l) {
  case NHWC: st[1] = 1, st[3] = C, st[2] = W * C, st[0] = H * W * C; break;
  case ROW_GAPS: st[3] = 1, st[2] = W + 3, st[1] = H * (W + 3), st[0] = C * H * (W + 3); break;
  case H_INNER: st[2] = 1, st[3] = H, st[1] = W * H, st[0] = C * W * H; break;
  default: st[3] = 1, st[2] = W, st[1] = H * W, st[0] = C * H * W; break;
  }
  return N * st[0];
}

static double value(int64_t i) { return (double)((i * 7919) % 2001 - 1000) / 500.0; }

static void fill(void *p, bp_dtype_t dt, int64_t n) {
  for (int64_t i = 0; i < n; i++) cpu_store(p, dt, i, dt == BP_BF16 ? value(i) : value(i) * 0.37);
}

/* Runs c in dtype dt on dev; returns the mismatches (values or gap bytes). */
static int run_case(cpu_device_t *dev, const lcase_t *c, bp_dtype_t dt) {
  int64_t P = (c->H + 2 * c->pad - c->R) / c->st + 1, Q = (c->W + 2 * c->pad - c->S) / c->st + 1;
  int64_t xs[4] = {c->N, c->C, c->H, c->W}, ws[4] = {c->K, c->C / c->groups, c->R, c->S};
  int64_t ys[4] = {c->N, c->K, P, Q}, xst[4], wst[4], yst[4], bs[1] = {c->K}, bst[1] = {1};
  int64_t nx = strides_of(c->xl, xs, xst), nw = strides_of(NCHW, ws, wst);
  int64_t ny = strides_of(c->yl, ys, yst);
  size_t es = cpu_dtype_size(dt);
  void *x = malloc((size_t)nx * es), *w = malloc((size_t)nw * es), *b = malloc((size_t)c->K * es);
  unsigned char *y = malloc((size_t)ny * es), *yr = malloc((size_t)ny * es);
  fill(x, dt, nx), fill(w, dt, nw), fill(b, dt, c->K);
  memset(y, 0x5a, (size_t)ny * es); /* the gaps must keep this */
  bp_conv2d_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.stride_h = a.stride_w = c->st, a.pad_h = a.pad_w = c->pad;
  a.dilation_h = a.dilation_w = 1, a.groups = c->groups;
  a.x = plugin_tensor(x, dt, 4, xs, xst);
  a.w = plugin_tensor(w, dt, 4, ws, wst);
  if (c->bias) a.bias = plugin_tensor(b, dt, 1, bs, bst);
  a.y = plugin_tensor(y, dt, 4, ys, yst);
  assert_int_equal(cpu_fast_conv2d(dev, &a), BP_OK); /* the fast path, not a decline */
  memset(yr, 0x5a, (size_t)ny * es);
  a.y.ptr = (uint64_t)(uintptr_t)yr;
  cpu_ref_conv2d_range(&a, 0, cpu_ref_conv2d_tasks(&a));
  double kterms = (double)(c->C / c->groups * c->R * c->S);
  int bad = 0;
  for (int64_t i = 0; i < ny; i++) {
    double got = cpu_load(y, dt, i), want = cpu_load(yr, dt, i);
    bool gap = !memcmp(yr + i * (int64_t)es, "\x5a\x5a\x5a\x5a", es);
    double tol = dt == BP_BF16 ? fabs(want) / 128.0 + 2e-2 : fabs(want) * 1e-5 + 3e-5 * kterms;
    bool ok = gap ? !memcmp(y + i * (int64_t)es, yr + i * (int64_t)es, es)
                  : fabs(got - want) <= tol;
    if (!ok && bad++ < 3)
      print_message("%s N%ld C%ld %ldx%ld K%ld %ldx%ld s%d p%d g%d b%d x%d y%d: y[%ld] = %g, "
                    "reference %g%s\n",
                    dt == BP_BF16 ? "bf16" : "f32", (long)c->N, (long)c->C, (long)c->H,
                    (long)c->W, (long)c->K, (long)c->R, (long)c->S, c->st, c->pad, c->groups,
                    c->bias, c->xl, c->yl, (long)i, got, want, gap ? " (a gap)" : "");
  }
  free(x), free(w), free(b), free(y), free(yr);
  return bad;
}

static const lcase_t cases[] = {
    /* N  C   H   W   K  R  S st pad g  b  x         y */
    {1, 20, 9, 8, 12, 3, 3, 1, 1, 1, 1, NCHW, NCHW},       /* dense (bf16 at AVX2: widened) */
    {1, 16, 9, 11, 24, 3, 3, 1, 1, 1, 1, NCHW, NHWC},      /* channels-last y only */
    {2, 32, 8, 8, 40, 3, 3, 1, 1, 1, 0, NHWC, NHWC},       /* both channels-last */
    {1, 64, 7, 9, 32, 1, 1, 1, 0, 1, 1, NHWC, NHWC},       /* 1x1: one GEMM */
    {2, 40, 5, 6, 70, 1, 1, 1, 0, 1, 0, NHWC, NHWC},       /* 1x1 GEMM, two images */
    {1, 48, 6, 5, 24, 1, 1, 1, 0, 1, 1, NCHW, NHWC},       /* 1x1, NCHW x: copies */
    {1, 24, 32, 32, 20, 1, 1, 1, 0, 1, 1, NCHW, NCHW},     /* 1x1 over 32 x 32: pointwise at AVX2 */
    {1, 24, 13, 10, 16, 3, 3, 2, 1, 1, 1, NHWC, NHWC},     /* stride 2 */
    {1, 32, 6, 7, 32, 3, 3, 1, 1, 2, 1, NHWC, NHWC},       /* groups */
    {2, 20, 9, 9, 28, 3, 3, 1, 1, 1, 1, NHWC, ROW_GAPS},   /* y with gaps between rows */
    {1, 16, 10, 7, 20, 3, 3, 1, 0, 1, 1, NCHW, H_INNER},   /* y with H innermost */
    {1, 33, 5, 6, 17, 3, 3, 1, 1, 1, 1, H_INNER, NHWC},    /* x with H innermost */
    {1, 1, 12, 12, 8, 3, 3, 1, 1, 1, 1, NHWC, NHWC},       /* one channel: C stride moot */
};
static const lcase_t depthwise = {1, 16, 12, 10, 16, 3, 3, 1, 1, 16, 1, NHWC, NHWC};

static int run_all(bp_isa_level_t isa, bp_dtype_t dt) {
  int bad = 0;
  for (unsigned t = 1; t <= 2; t++) {
    cpu_device_t dev;
    memset(&dev, 0, sizeof dev);
    dev.isa = isa;
    dev.threads = t;
    dev.pool = t > 1 ? cpu_pool_create(t) : NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) bad += run_case(&dev, &cases[i], dt);
    if (dt == BP_F32) bad += run_case(&dev, &depthwise, dt);
    cpu_pool_destroy(dev.pool);
  }
  return bad;
}

static void test_layouts_f32(void **state) {
  (void)state;
  int bad = run_all(BP_ISA_AVX2, BP_F32);
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) bad += run_all(BP_ISA_BEST, BP_F32);
  assert_int_equal(bad, 0);
}

static void test_layouts_bf16(void **state) {
  (void)state;
  cpu_device_t probe;
  memset(&probe, 0, sizeof probe);
  probe.isa = BP_ISA_BEST;
  /* below AVX-512 (or without AMX) bf16 runs the f32 routes on widened copies */
  int bad = run_all(BP_ISA_AVX2, BP_BF16);
  if (cpu_fast_conv_amx_ok(&probe)) bad += run_all(BP_ISA_BEST, BP_BF16);
  assert_int_equal(bad, 0);
}

int main(void) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    return test_skip_suite("no AVX2 + FMA: conv2d has no fast path on this CPU");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layouts_f32),
      cmocka_unit_test(test_layouts_bf16),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
