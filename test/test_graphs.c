/*
 * test_graphs.c — captured graphs on every device present, native (ABI 1.2:
 * OpenCL command buffers, reused Vulkan command buffers, ...) or replayed.
 *
 * One small pipeline (gemm, a broadcast add, softmax) is captured once and
 * launched several times, rebound to new input, launched on another stream
 * and after BACKPLANE_NATIVE_GRAPHS=0: each result is compared with the same
 * ops run directly on "cpu-ref", and the native and replayed launches must
 * agree bit for bit, since they run the same kernels.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backplane.h"

enum { M = 7, K = 19, N = 33 }; /* odd sizes: every kernel's edge path */

typedef struct pipeline {
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *x, *w, *bias, *y, *out;
} pipeline_t;

static bp_tensor_t t2(bp_buffer_t *b, int64_t r, int64_t c) {
  int64_t shape[2] = {r, c};
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 2, shape, NULL, &t), BP_OK);
  return t;
}

static void fill_inputs(float *x, float *w, float *bias, unsigned seed) {
  for (int i = 0; i < M * K; i++) x[i] = (float)((i * 7 + seed) % 23) / 11.0f - 1.0f;
  for (int i = 0; i < K * N; i++) w[i] = (float)((i * 5 + seed) % 17) / 13.0f - 0.6f;
  for (int i = 0; i < N; i++) bias[i] = (float)(i % 5) * 0.25f;
}

static bp_buffer_t *upload(bp_device_t *d, const float *v, size_t n) {
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(d, n * sizeof *v, &b), BP_OK);
  if (v) assert_int_equal(bp_buffer_write(b, 0, v, n * sizeof *v), BP_OK);
  return b;
}

static void pipeline_open(bp_context_t *ctx, const char *sel, pipeline_t *p, unsigned seed) {
  float x[M * K], w[K * N], bias[N];
  fill_inputs(x, w, bias, seed);
  memset(p, 0, sizeof *p);
  assert_int_equal(bp_device_open(ctx, sel, NULL, &p->dev), BP_OK);
  assert_int_equal(bp_stream_create(p->dev, &p->s), BP_OK);
  p->x = upload(p->dev, x, M * K);
  p->w = upload(p->dev, w, K * N);
  p->bias = upload(p->dev, bias, N);
  p->y = upload(p->dev, NULL, M * N);
  p->out = upload(p->dev, NULL, M * N);
}

/* y = x·w; y = y + bias (broadcast over rows); out = softmax(y). */
static void pipeline_issue(pipeline_t *p) {
  bp_tensor_t x = t2(p->x, M, K), w = t2(p->w, K, N), y = t2(p->y, M, N), out = t2(p->out, M, N);
  bp_tensor_t bias = t2(p->bias, 1, N);
  assert_int_equal(bp_matmul(p->s, 1.0, &x, &w, 0.0, &y), BP_OK);
  assert_int_equal(bp_binary(p->s, BP_BINARY_ADD, &y, &bias, &y), BP_OK);
  assert_int_equal(bp_softmax(p->s, &y, -1, false, &out), BP_OK);
}

static void read_out(pipeline_t *p, float *out) {
  assert_int_equal(bp_stream_synchronize(p->s), BP_OK);
  assert_int_equal(bp_buffer_read(p->out, 0, out, M * N * sizeof *out), BP_OK);
}

static void pipeline_close(pipeline_t *p) {
  bp_device_close(p->dev); /* frees its buffers and streams */
}

/* The expected output for inputs made from seed, computed on cpu-ref. */
static void reference(bp_context_t *ctx, unsigned seed, float *out) {
  pipeline_t p;
  pipeline_open(ctx, "cpu-ref", &p, seed);
  pipeline_issue(&p);
  read_out(&p, out);
  pipeline_close(&p);
}

static void expect_close(const float *got, const float *want, const char *what, const char *dev) {
  for (int i = 0; i < M * N; i++)
    if (!(fabsf(got[i] - want[i]) <= 1e-5f + 1e-4f * fabsf(want[i]))) {
      fail_msg("%s on %s: element %d is %g, cpu-ref says %g", what, dev, i, got[i], want[i]);
    }
}

/* Whether this backend is expected to run graphs natively here. */
static bool expect_native(const bp_device_entry_t *e) {
  return strcmp(e->backend, "opencl") == 0 && strstr(e->info.name, "pthread") != NULL; /* PoCL */
}

static void check_device(bp_context_t *ctx, const bp_device_entry_t *e, const float *want0,
                         const float *want1) {
  char sel[16];
  snprintf(sel, sizeof sel, "%u", e->rank);
  pipeline_t p;
  pipeline_open(ctx, sel, &p, 0);
  float got[M * N], replayed[M * N];

  assert_int_equal(bp_stream_begin_capture(p.s), BP_OK);
  pipeline_issue(&p);
  bp_graph_t *g;
  assert_int_equal(bp_stream_end_capture(p.s, &g), BP_OK);
  for (int r = 0; r < 4; r++) assert_int_equal(bp_graph_launch(g, p.s), BP_OK);
  read_out(&p, got);
  expect_close(got, want0, "graph launch", e->info.name);
  bool native = bp_graph_is_native(g);
  printf("  %-8s %-40s %s\n", e->backend, e->info.name, native ? "native graph" : "replayed op by op");
  if (expect_native(e)) assert_true(native);
  if (strncmp(e->backend, "cpu", 3) == 0) assert_false(native); /* no native graphs on the CPU */

  /* Another stream of the same device keeps that stream's order. */
  bp_stream_t *s2;
  assert_int_equal(bp_stream_create(p.dev, &s2), BP_OK);
  bp_fill(s2, &(bp_tensor_t){p.out, 0, BP_F32, 1, {M * N}, {1}}, 0.0);
  assert_int_equal(bp_graph_launch(g, s2), BP_OK);
  assert_int_equal(bp_stream_synchronize(s2), BP_OK);
  assert_int_equal(bp_buffer_read(p.out, 0, got, sizeof got), BP_OK);
  expect_close(got, want0, "graph launch on a second stream", e->info.name);

  /* Rebinding the input drops the native graph; the next launch rebuilds. */
  float x1[M * K], w1[K * N], b1[N];
  fill_inputs(x1, w1, b1, 1);
  bp_buffer_t *x1b = upload(p.dev, x1, M * K), *w1b = upload(p.dev, w1, K * N);
  assert_int_equal(bp_graph_rebind(g, p.x, x1b), BP_OK);
  assert_int_equal(bp_graph_rebind(g, p.w, w1b), BP_OK);
  assert_int_equal(bp_graph_launch(g, p.s), BP_OK);
  read_out(&p, got);
  expect_close(got, want1, "graph launch after rebind", e->info.name);
  assert_int_equal(bp_graph_is_native(g), native);

  /* The same graph captured again with native graphs off replays op by op
   * and must give the same bits. */
  setenv("BACKPLANE_NATIVE_GRAPHS", "0", 1);
  bp_graph_t *g2;
  assert_int_equal(bp_stream_begin_capture(p.s), BP_OK);
  pipeline_issue(&p);
  assert_int_equal(bp_stream_end_capture(p.s, &g2), BP_OK);
  assert_int_equal(bp_graph_rebind(g2, p.x, x1b), BP_OK);
  assert_int_equal(bp_graph_rebind(g2, p.w, w1b), BP_OK);
  assert_int_equal(bp_graph_launch(g2, p.s), BP_OK);
  unsetenv("BACKPLANE_NATIVE_GRAPHS");
  read_out(&p, replayed);
  assert_false(bp_graph_is_native(g2));
  assert_memory_equal(got, replayed, sizeof got);
  bp_graph_destroy(g2);

  /* A graph outlives its device: closing the device releases the native
   * graph, after which launches fail and destroy only frees. */
  pipeline_close(&p);
  assert_int_equal(bp_graph_rebind(g, x1b, x1b), BP_ERR_INVALID_ARGUMENT);
  bp_graph_destroy(g);
}

static void test_graphs_on_every_device(void **state) {
  (void)state;
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  float want0[M * N], want1[M * N];
  reference(ctx, 0, want0);
  reference(ctx, 1, want1);
  uint32_t n = 0;
  assert_int_equal(bp_context_device_count(ctx, &n), BP_OK);
  for (uint32_t r = 0; r < n; r++) {
    bp_device_entry_t e;
    assert_int_equal(bp_context_device_entry(ctx, r, &e), BP_OK);
    check_device(ctx, &e, want0, want1);
  }
  bp_context_destroy(ctx);
}

/* Many launches of one native graph, interleaved with direct ops on the same
 * stream, stay in stream order (the command buffer is pending many times). */
static void test_graph_interleaved_with_direct_ops(void **state) {
  (void)state;
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  float want[M * N];
  reference(ctx, 0, want);
  uint32_t n = 0;
  bp_context_device_count(ctx, &n);
  for (uint32_t r = 0; r < n; r++) {
    bp_device_entry_t e;
    bp_context_device_entry(ctx, r, &e);
    char sel[16];
    snprintf(sel, sizeof sel, "%u", e.rank);
    pipeline_t p;
    pipeline_open(ctx, sel, &p, 0);
    assert_int_equal(bp_stream_begin_capture(p.s), BP_OK);
    pipeline_issue(&p);
    bp_graph_t *g;
    assert_int_equal(bp_stream_end_capture(p.s, &g), BP_OK);
    bp_tensor_t out = t2(p.out, M, N);
    for (int i = 0; i < 20; i++) {
      assert_int_equal(bp_fill(p.s, &out, -1.0), BP_OK); /* overwritten by the graph */
      assert_int_equal(bp_graph_launch(g, p.s), BP_OK);
    }
    float got[M * N];
    read_out(&p, got);
    expect_close(got, want, "interleaved launches", e.info.name);
    bp_graph_destroy(g);
    pipeline_close(&p);
  }
  bp_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_graphs_on_every_device),
      cmocka_unit_test(test_graph_interleaved_with_direct_ops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
