/*
 * test_constant_buffers.c — buffers marked constant (bp_buffer_set_constant)
 * and the CPU backend's prepared weights behind them.
 *
 * Every write the library sees is refused while the mark is set, and
 * changes nothing: a host write (synchronous or on a stream), a copy into
 * the buffer, an op's output, Adam's updates. On the "cpu" device a 3x3
 * layer over a 14 x 14 image with constant weights takes the Winograd
 * route with its filter transform kept between calls; the results are
 * checked against a double-precision reference after every change that
 * must not reuse a kept transform: new weights under a new mark, another
 * view of the same buffer, a graph captured before the weights changed.
 * The direct, pixel-major, widened bf16 and pointwise routes' kept forms
 * are checked the same way.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backplane.h"
#include "backplane_graph.h"

/* A layer the prepared Winograd route takes (C, K >= 32, 196 pixels),
 * with padding so that the edge tiles count; at stride 2 the direct route
 * takes it, with its weight panels packed once. */
enum { C = 32, K = 32, H = 14, R = 3, WN = K * C * R * R, XN = C * H * H, YN = K * H * H };

typedef struct fixture {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  assert_non_null(f);
  assert_int_equal(bp_context_create(NULL, &f->ctx), BP_OK);
  assert_int_equal(bp_device_open(f->ctx, "cpu", NULL, &f->dev), BP_OK);
  assert_int_equal(bp_stream_create(f->dev, &f->s), BP_OK);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  bp_device_close(f->dev);
  bp_context_destroy(f->ctx);
  free(f);
  return 0;
}

static bp_buffer_t *upload(bp_device_t *d, const float *v, size_t n) {
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(d, n * sizeof(float), &b), BP_OK);
  if (v) assert_int_equal(bp_buffer_write(b, 0, v, n * sizeof(float)), BP_OK);
  return b;
}

static bp_tensor_t t4(bp_buffer_t *b, uint64_t offset, int64_t n, int64_t c, int64_t h, int64_t w) {
  int64_t shape[4] = {n, c, h, w};
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, offset, BP_F32, 4, shape, NULL, &t), BP_OK);
  return t;
}

static void fill(float *v, int n, unsigned seed) {
  for (int i = 0; i < n; i++) v[i] = (float)((i * 37 + seed * 11) % 29) / 14.0f - 1.0f;
}

/* Output rows (and columns) of an hw x hw image at stride st, padding 1. */
static int out_size_of(int hw, int st) {
  return (hw + 2 - R) / st + 1;
}

static int out_size(int st) {
  return out_size_of(H, st);
}

/* y = conv(x, w) over an hw x hw image, stride st, padding 1, in double. */
static void reference_of(const float *x, const float *w, int hw, int st, double *y) {
  int P = out_size_of(hw, st);
  for (int k = 0; k < K; k++)
    for (int p = 0; p < P; p++)
      for (int q = 0; q < P; q++) {
        double s = 0;
        for (int c = 0; c < C; c++)
          for (int r = 0; r < R; r++)
            for (int t = 0; t < R; t++) {
              int ih = p * st + r - 1, iw = q * st + t - 1;
              if (ih >= 0 && ih < hw && iw >= 0 && iw < hw)
                s += (double)x[(c * hw + ih) * hw + iw] * w[((k * C + c) * R + r) * R + t];
            }
        y[(k * P + p) * P + q] = s;
      }
}

static void reference(const float *x, const float *w, int st, double *y) {
  reference_of(x, w, H, st, y);
}

/* y's contents against the reference for x and w at stride st. */
static void expect_conv_st(bp_buffer_t *yb, const float *x, const float *w, int st) {
  static double ref[YN];
  static float y[YN];
  int n = K * out_size(st) * out_size(st);
  reference(x, w, st, ref);
  assert_int_equal(bp_buffer_read(yb, 0, y, sizeof(float) * (size_t)n), BP_OK);
  int bad = 0;
  for (int i = 0; i < n; i++)
    if (!(fabs(y[i] - ref[i]) <= 1e-4 * (1.0 + fabs(ref[i])))) {
      if (bad++ < 3) print_error("y[%d] = %g, expected %g\n", i, y[i], ref[i]);
    }
  assert_int_equal(bad, 0);
}

static void expect_conv(bp_buffer_t *yb, const float *x, const float *w) {
  expect_conv_st(yb, x, w, 1);
}

static bp_status_t conv_st(fixture_t *f, bp_buffer_t *xb, bp_buffer_t *wb, uint64_t woff,
                           bp_buffer_t *yb, int st) {
  bp_conv2d_params_t p = {sizeof p, st, st, 1, 1, 1, 1, 1};
  int P = out_size(st);
  bp_tensor_t x = t4(xb, 0, 1, C, H, H), w = t4(wb, woff, K, C, R, R), y = t4(yb, 0, 1, K, P, P);
  bp_status_t rc = bp_conv2d(f->s, &p, &x, &w, NULL, &y);
  if (rc == BP_OK) assert_int_equal(bp_stream_synchronize(f->s), BP_OK);
  return rc;
}

static bp_status_t conv(fixture_t *f, bp_buffer_t *xb, bp_buffer_t *wb, uint64_t woff,
                        bp_buffer_t *yb) {
  return conv_st(f, xb, wb, woff, yb, 1);
}

static void expect_refused(bp_status_t st) {
  assert_int_equal(st, BP_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(bp_last_error(), "constant"));
}

/* Host writes and copies into a constant buffer are refused and change
 * nothing; reads and copies out of it work; clearing the mark allows
 * writes again. */
static void test_writes_refused(void **state) {
  fixture_t *f = *state;
  float v[64], other[64], back[64];
  fill(v, 64, 1), fill(other, 64, 2);
  bp_buffer_t *b = upload(f->dev, v, 64), *src = upload(f->dev, other, 64),
              *dst = upload(f->dev, NULL, 64);
  bool is = true;
  assert_int_equal(bp_buffer_is_constant(b, &is), BP_OK);
  assert_false(is);
  assert_int_equal(bp_buffer_set_constant(b, true), BP_OK);
  assert_int_equal(bp_buffer_is_constant(b, &is), BP_OK);
  assert_true(is);
  expect_refused(bp_buffer_write(b, 0, other, sizeof other));
  expect_refused(bp_buffer_write_async(f->s, b, 8, other, 16));
  expect_refused(bp_buffer_copy(b, 0, src, 0, sizeof other));
  expect_refused(bp_buffer_copy_async(f->s, b, 0, src, 0, sizeof other));
  assert_int_equal(bp_stream_synchronize(f->s), BP_OK);
  assert_int_equal(bp_buffer_read(b, 0, back, sizeof back), BP_OK);
  assert_memory_equal(back, v, sizeof v);
  /* reading it, and copying out of it, are what constant data is for */
  assert_int_equal(bp_buffer_copy(dst, 0, b, 0, sizeof v), BP_OK);
  assert_int_equal(bp_buffer_read(dst, 0, back, sizeof back), BP_OK);
  assert_memory_equal(back, v, sizeof v);
  assert_int_equal(bp_buffer_set_constant(b, false), BP_OK);
  assert_int_equal(bp_buffer_write(b, 0, other, sizeof other), BP_OK);
  assert_int_equal(bp_buffer_read(b, 0, back, sizeof back), BP_OK);
  assert_memory_equal(back, other, sizeof other);
  assert_int_equal(bp_buffer_is_constant(b, NULL), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_buffer_set_constant(NULL, true), BP_ERR_INVALID_ARGUMENT);
  bp_buffer_free(b), bp_buffer_free(src), bp_buffer_free(dst);
}

/* An op whose output lies in a constant buffer is refused before it runs:
 * conv2d's y, and Adam's parameters. */
static void test_outputs_refused(void **state) {
  fixture_t *f = *state;
  static float x[XN], w[WN], y0[YN], back[YN];
  fill(x, XN, 3), fill(w, WN, 4), fill(y0, YN, 5);
  bp_buffer_t *xb = upload(f->dev, x, XN), *wb = upload(f->dev, w, WN),
              *yb = upload(f->dev, y0, YN);
  assert_int_equal(bp_buffer_set_constant(yb, true), BP_OK);
  expect_refused(conv(f, xb, wb, 0, yb));
  assert_int_equal(bp_buffer_read(yb, 0, back, sizeof back), BP_OK);
  assert_memory_equal(back, y0, sizeof back);

  float p[8] = {1, 2, 3, 4, 5, 6, 7, 8}, g[8] = {1, 1, 1, 1, 1, 1, 1, 1}, z[8] = {0}, pb[8];
  bp_buffer_t *pbuf = upload(f->dev, p, 8), *gbuf = upload(f->dev, g, 8), *m = upload(f->dev, z, 8),
              *v = upload(f->dev, z, 8);
  int64_t n = 8;
  bp_tensor_t tp, tg, tm, tv;
  assert_int_equal(bp_tensor_init(pbuf, 0, BP_F32, 1, &n, NULL, &tp), BP_OK);
  assert_int_equal(bp_tensor_init(gbuf, 0, BP_F32, 1, &n, NULL, &tg), BP_OK);
  assert_int_equal(bp_tensor_init(m, 0, BP_F32, 1, &n, NULL, &tm), BP_OK);
  assert_int_equal(bp_tensor_init(v, 0, BP_F32, 1, &n, NULL, &tv), BP_OK);
  bp_adam_params_t ap = {sizeof ap, 0.1, 0.9, 0.999, 1e-8, 0.0, 1, false};
  assert_int_equal(bp_buffer_set_constant(pbuf, true), BP_OK);
  expect_refused(bp_adam(f->s, &ap, 1, &tp, &tg, &tm, &tv));
  assert_int_equal(bp_stream_synchronize(f->s), BP_OK);
  assert_int_equal(bp_buffer_read(pbuf, 0, pb, sizeof pb), BP_OK);
  assert_memory_equal(pb, p, sizeof p);
  /* a constant gradient is only read */
  assert_int_equal(bp_buffer_set_constant(pbuf, false), BP_OK);
  assert_int_equal(bp_buffer_set_constant(gbuf, true), BP_OK);
  assert_int_equal(bp_adam(f->s, &ap, 1, &tp, &tg, &tm, &tv), BP_OK);
  assert_int_equal(bp_stream_synchronize(f->s), BP_OK);
  bp_buffer_free(xb), bp_buffer_free(wb), bp_buffer_free(yb);
  bp_buffer_free(pbuf), bp_buffer_free(gbuf), bp_buffer_free(m), bp_buffer_free(v);
}

/* Constant weights, called again and again: the kept transform gives the
 * reference's results every time, and never outlives the contents it was
 * made from (new weights under a new mark, another view of the buffer). */
static void test_prepared_weights(void **state) {
  fixture_t *f = *state;
  static float x[XN], w[2 * WN], w2[WN], first[YN], again[YN];
  fill(x, XN, 6), fill(w, 2 * WN, 7), fill(w2, WN, 8);
  bp_buffer_t *xb = upload(f->dev, x, XN), *wb = upload(f->dev, w, 2 * WN),
              *yb = upload(f->dev, NULL, YN);
  assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
  assert_int_equal(conv(f, xb, wb, 0, yb), BP_OK);
  expect_conv(yb, x, w);
  assert_int_equal(bp_buffer_read(yb, 0, first, sizeof first), BP_OK);
  assert_int_equal(conv(f, xb, wb, 0, yb), BP_OK);
  assert_int_equal(bp_buffer_read(yb, 0, again, sizeof again), BP_OK);
  assert_memory_equal(again, first, sizeof first);
  /* the buffer's second filter: another view, another form */
  assert_int_equal(conv(f, xb, wb, WN * sizeof(float), yb), BP_OK);
  expect_conv(yb, x, w + WN);
  /* new weights in the same place under a new mark */
  assert_int_equal(bp_buffer_set_constant(wb, false), BP_OK);
  assert_int_equal(bp_buffer_write(wb, 0, w2, sizeof w2), BP_OK);
  assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
  assert_int_equal(conv(f, xb, wb, 0, yb), BP_OK);
  expect_conv(yb, x, w2);
  /* and without the mark */
  assert_int_equal(bp_buffer_set_constant(wb, false), BP_OK);
  assert_int_equal(bp_buffer_write(wb, 0, w, sizeof(float) * WN), BP_OK);
  assert_int_equal(conv(f, xb, wb, 0, yb), BP_OK);
  expect_conv(yb, x, w);
  bp_buffer_free(xb), bp_buffer_free(wb), bp_buffer_free(yb);
}

/* The same at stride 2, where the direct route keeps its packed panels. */
static void test_prepared_panels(void **state) {
  fixture_t *f = *state;
  static float x[XN], w[WN], w2[WN];
  fill(x, XN, 12), fill(w, WN, 13), fill(w2, WN, 14);
  bp_buffer_t *xb = upload(f->dev, x, XN), *wb = upload(f->dev, w, WN),
              *yb = upload(f->dev, NULL, YN);
  assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(conv_st(f, xb, wb, 0, yb, 2), BP_OK);
    expect_conv_st(yb, x, w, 2);
  }
  assert_int_equal(bp_buffer_set_constant(wb, false), BP_OK);
  assert_int_equal(bp_buffer_write(wb, 0, w2, sizeof w2), BP_OK);
  assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
  assert_int_equal(conv_st(f, xb, wb, 0, yb, 2), BP_OK);
  expect_conv_st(yb, x, w2, 2);
  bp_buffer_free(xb), bp_buffer_free(wb), bp_buffer_free(yb);
}

/* f32 to bf16, nearest even (the inputs are finite). */
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* bf16 weights (widened to f32 once where there are no AMX tiles, and the
 * f32 route's transform kept of that copy): two filters in one constant
 * buffer, called in turn, each gives its own results. */
static void test_prepared_bf16_views(void **state) {
  fixture_t *f = *state;
  static float x[XN], w[2 * WN], want_y[YN];
  static uint16_t xh[XN], wh[2 * WN], yh[YN];
  fill(x, XN, 17), fill(w, 2 * WN, 18);
  for (int i = 0; i < XN; i++) x[i] = from_bf16(xh[i] = to_bf16(x[i]));
  for (int i = 0; i < 2 * WN; i++) w[i] = from_bf16(wh[i] = to_bf16(w[i]));
  bp_buffer_t *xb, *wb, *yb;
  assert_int_equal(bp_buffer_alloc(f->dev, sizeof xh, &xb), BP_OK);
  assert_int_equal(bp_buffer_alloc(f->dev, sizeof wh, &wb), BP_OK);
  assert_int_equal(bp_buffer_alloc(f->dev, sizeof yh, &yb), BP_OK);
  assert_int_equal(bp_buffer_write(xb, 0, xh, sizeof xh), BP_OK);
  assert_int_equal(bp_buffer_write(wb, 0, wh, sizeof wh), BP_OK);
  assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
  bp_conv2d_params_t p = {sizeof p, 1, 1, 1, 1, 1, 1, 1};
  int64_t xs[4] = {1, C, H, H}, ws[4] = {K, C, R, R}, ys[4] = {1, K, H, H};
  bp_tensor_t tx, ty;
  assert_int_equal(bp_tensor_init(xb, 0, BP_BF16, 4, xs, NULL, &tx), BP_OK);
  assert_int_equal(bp_tensor_init(yb, 0, BP_BF16, 4, ys, NULL, &ty), BP_OK);
  static double ref[YN];
  for (int call = 0; call < 4; call++) {
    int which = call % 2; /* filter 0, 1, 0, 1 */
    bp_tensor_t tw;
    assert_int_equal(
        bp_tensor_init(wb, (uint64_t)which * WN * sizeof(uint16_t), BP_BF16, 4, ws, NULL, &tw),
        BP_OK);
    assert_int_equal(bp_conv2d(f->s, &p, &tx, &tw, NULL, &ty), BP_OK);
    assert_int_equal(bp_stream_synchronize(f->s), BP_OK);
    assert_int_equal(bp_buffer_read(yb, 0, yh, sizeof yh), BP_OK);
    reference(x, w + which * WN, 1, ref);
    int bad = 0;
    for (int i = 0; i < YN; i++) {
      want_y[i] = from_bf16(yh[i]);
      /* bf16 output: 8 bits of mantissa */
      if (!(fabs(want_y[i] - ref[i]) <= 1e-2 * (1.0 + fabs(ref[i])))) bad++;
    }
    if (bad) print_error("call %d (filter %d): %d outputs wrong\n", call, which, bad);
    assert_int_equal(bad, 0);
  }
  bp_buffer_free(xb), bp_buffer_free(wb), bp_buffer_free(yb);
}

/* At AVX2 (the device's ISA held there) a 7 x 7 image takes the route with
 * output channels along the vector, whose weight blocks are packed once
 * for constant weights: new weights under a new mark must show. */
static void test_prepared_pix_avx2(void **state) {
  fixture_t *f = *state;
  enum { HS = 7, XS = C * HS * HS, YS = K * HS * HS };
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .isa_max = BP_ISA_AVX2};
  bp_device_t *d;
  bp_stream_t *s;
  if (bp_device_open(f->ctx, "cpu", &cfg, &d) != BP_OK) skip();
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  static float x[XS], w[WN], w2[WN], y[YS];
  static double ref[YS];
  fill(x, XS, 19), fill(w, WN, 20), fill(w2, WN, 21);
  bp_buffer_t *xb = upload(d, x, XS), *wb = upload(d, w, WN), *yb = upload(d, NULL, YS);
  bp_conv2d_params_t p = {sizeof p, 1, 1, 1, 1, 1, 1, 1};
  bp_tensor_t tx = t4(xb, 0, 1, C, HS, HS), tw = t4(wb, 0, K, C, R, R),
              ty = t4(yb, 0, 1, K, HS, HS);
  assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
  for (int call = 0; call < 3; call++) {
    const float *wv = call < 2 ? w : w2;
    if (call == 2) {
      assert_int_equal(bp_buffer_set_constant(wb, false), BP_OK);
      assert_int_equal(bp_buffer_write(wb, 0, w2, sizeof w2), BP_OK);
      assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
    }
    assert_int_equal(bp_conv2d(s, &p, &tx, &tw, NULL, &ty), BP_OK);
    assert_int_equal(bp_stream_synchronize(s), BP_OK);
    assert_int_equal(bp_buffer_read(yb, 0, y, sizeof y), BP_OK);
    reference_of(x, wv, HS, 1, ref);
    int bad = 0;
    for (int i = 0; i < YS; i++)
      if (!(fabs(y[i] - ref[i]) <= 1e-4 * (1.0 + fabs(ref[i])))) bad++;
    if (bad) print_error("call %d: %d outputs wrong\n", call, bad);
    assert_int_equal(bad, 0);
  }
  bp_device_close(d);
}

/* A 1x1 layer over a 48 x 48 image takes the pointwise route (its weight
 * panels kept between calls) on the default device and on one held at
 * AVX2: repeat calls, the buffer's second filter, new weights under a new
 * mark, each against a double-precision reference. */
static void pointwise_calls(bp_device_t *d, bp_stream_t *s) {
  enum { HP = 48, XP = C * HP * HP, YP = K * HP * HP, WP = K * C };
  static float x[XP], w[2 * WP], w2[WP], y[YP], first[YP];
  static double ref[YP];
  fill(x, XP, 31), fill(w, 2 * WP, 32), fill(w2, WP, 33);
  bp_buffer_t *xb = upload(d, x, XP), *wb = upload(d, w, 2 * WP), *yb = upload(d, NULL, YP);
  bp_conv2d_params_t p = {sizeof p, 1, 1, 0, 0, 1, 1, 1};
  bp_tensor_t tx = t4(xb, 0, 1, C, HP, HP), ty = t4(yb, 0, 1, K, HP, HP);
  assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
  for (int call = 0; call < 4; call++) {
    const float *wv = call < 2 ? w : call == 2 ? w + WP : w2;
    if (call == 3) {
      assert_int_equal(bp_buffer_set_constant(wb, false), BP_OK);
      assert_int_equal(bp_buffer_write(wb, 0, w2, sizeof w2), BP_OK);
      assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
    }
    bp_tensor_t tw = t4(wb, call == 2 ? WP * sizeof(float) : 0, K, C, 1, 1);
    assert_int_equal(bp_conv2d(s, &p, &tx, &tw, NULL, &ty), BP_OK);
    assert_int_equal(bp_stream_synchronize(s), BP_OK);
    assert_int_equal(bp_buffer_read(yb, 0, y, sizeof y), BP_OK);
    for (int k = 0; k < K; k++)
      for (int q = 0; q < HP * HP; q++) {
        double acc = 0;
        for (int c = 0; c < C; c++) acc += (double)wv[k * C + c] * x[c * HP * HP + q];
        ref[k * HP * HP + q] = acc;
      }
    int bad = 0;
    for (int i = 0; i < YP; i++)
      if (!(fabs(y[i] - ref[i]) <= 1e-4 * (1.0 + fabs(ref[i])))) bad++;
    if (bad) print_error("call %d: %d outputs wrong\n", call, bad);
    assert_int_equal(bad, 0);
    if (call == 0) memcpy(first, y, sizeof y);
    if (call == 1) assert_memory_equal(y, first, sizeof y);
  }
  bp_buffer_free(xb), bp_buffer_free(wb), bp_buffer_free(yb);
}

static void test_prepared_pointwise(void **state) {
  fixture_t *f = *state;
  pointwise_calls(f->dev, f->s);
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .isa_max = BP_ISA_AVX2};
  bp_device_t *d;
  bp_stream_t *s;
  if (bp_device_open(f->ctx, "cpu", &cfg, &d) != BP_OK) return;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  pointwise_calls(d, s);
  bp_device_close(d);
}

/* Threads on their own streams call conv2d with the same constant weights
 * at once: one fills the kept transform while the others find it being
 * filled (and prepare their own) or ready (and read it). */
typedef struct racer {
  fixture_t *f;
  bp_stream_t *s;
  bp_buffer_t *xb, *wb, *yb;
  bp_status_t st;
} racer_t;

static void *race(void *arg) {
  racer_t *r = arg;
  bp_conv2d_params_t p = {sizeof p, 1, 1, 1, 1, 1, 1, 1};
  bp_tensor_t x = t4(r->xb, 0, 1, C, H, H), w = t4(r->wb, 0, K, C, R, R),
              y = t4(r->yb, 0, 1, K, H, H);
  for (int i = 0; i < 4 && r->st == BP_OK; i++) {
    r->st = bp_conv2d(r->s, &p, &x, &w, NULL, &y);
    if (r->st == BP_OK) r->st = bp_stream_synchronize(r->s);
  }
  return NULL;
}

static void test_prepared_threads(void **state) {
  fixture_t *f = *state;
  enum { NT = 3 };
  static float x[XN], w[WN];
  fill(x, XN, 15), fill(w, WN, 16);
  bp_buffer_t *xb = upload(f->dev, x, XN), *wb = upload(f->dev, w, WN);
  assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
  racer_t r[NT];
  pthread_t th[NT];
  for (int i = 0; i < NT; i++) {
    r[i] = (racer_t){f, NULL, xb, wb, upload(f->dev, NULL, YN), BP_OK};
    assert_int_equal(bp_stream_create(f->dev, &r[i].s), BP_OK);
  }
  for (int i = 0; i < NT; i++) assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
  for (int i = 0; i < NT; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  for (int i = 0; i < NT; i++) {
    assert_int_equal(r[i].st, BP_OK);
    expect_conv(r[i].yb, x, w);
    bp_stream_destroy(r[i].s);
    bp_buffer_free(r[i].yb);
  }
  bp_buffer_free(xb), bp_buffer_free(wb);
}

/* A graph records its calls without the constant id: replayed after the
 * weights changed (mark cleared, new contents, marked again), it uses the
 * new weights. */
static void test_graph_after_change(void **state) {
  fixture_t *f = *state;
  static float x[XN], w[WN], w2[WN];
  fill(x, XN, 9), fill(w, WN, 10), fill(w2, WN, 11);
  bp_buffer_t *xb = upload(f->dev, x, XN), *wb = upload(f->dev, w, WN),
              *yb = upload(f->dev, NULL, YN);
  assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
  assert_int_equal(conv(f, xb, wb, 0, yb), BP_OK); /* a kept transform of w */
  assert_int_equal(bp_stream_begin_capture(f->s), BP_OK);
  bp_conv2d_params_t p = {sizeof p, 1, 1, 1, 1, 1, 1, 1};
  bp_tensor_t tx = t4(xb, 0, 1, C, H, H), tw = t4(wb, 0, K, C, R, R), ty = t4(yb, 0, 1, K, H, H);
  assert_int_equal(bp_conv2d(f->s, &p, &tx, &tw, NULL, &ty), BP_OK);
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_end_capture(f->s, &g), BP_OK);
  assert_int_equal(bp_buffer_set_constant(wb, false), BP_OK);
  assert_int_equal(bp_buffer_write(wb, 0, w2, sizeof w2), BP_OK);
  assert_int_equal(bp_buffer_set_constant(wb, true), BP_OK);
  assert_int_equal(bp_graph_launch(g, f->s), BP_OK);
  assert_int_equal(bp_stream_synchronize(f->s), BP_OK);
  expect_conv(yb, x, w2);
  bp_graph_destroy(g);
  bp_buffer_free(xb), bp_buffer_free(wb), bp_buffer_free(yb);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_writes_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_outputs_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_prepared_weights, setup, teardown),
      cmocka_unit_test_setup_teardown(test_prepared_panels, setup, teardown),
      cmocka_unit_test_setup_teardown(test_prepared_threads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_prepared_pix_avx2, setup, teardown),
      cmocka_unit_test_setup_teardown(test_prepared_pointwise, setup, teardown),
      cmocka_unit_test_setup_teardown(test_prepared_bf16_views, setup, teardown),
      cmocka_unit_test_setup_teardown(test_graph_after_change, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
