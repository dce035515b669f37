/*
 * test_vulkan_graph.c — native graphs on Vulkan: a gemm → broadcast add →
 * softmax chain captured once, launched many times (the recorded command
 * buffer is resubmitted), rebound to a new input, launched on a second
 * stream and destroyed with launches in flight; every result against the
 * same ops run directly on cpu-ref. The gemm is large enough for the
 * texel-buffer kernel, whose scratch and views the graph must keep alive.
 * With BACKPLANE_NATIVE_GRAPHS=0 the same graph replays op by op and must
 * give the native launch's result bit for bit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_vulkan.h"

enum { M = 40, K = 36, N = 50 };

typedef struct chain {
  vt_pair_t x, w, bias, y, out;
} chain_t;

/* y = x·w; y += bias (broadcast over rows); out = softmax(y), on env I. */
static bp_status_t chain_issue(chain_t *c, int I, bp_stream_t *s) {
  bp_tensor_t bias = c->bias.t[I].t;
  bias.rank = 2;
  bias.shape[0] = 1, bias.shape[1] = N;
  bias.strides[0] = N, bias.strides[1] = c->bias.t[I].t.strides[0];
  bp_status_t st = bp_matmul(s, 1.0, &c->x.t[I].t, &c->w.t[I].t, 0.0, &c->y.t[I].t);
  if (st == BP_OK) st = bp_binary(s, BP_BINARY_ADD, &c->y.t[I].t, &bias, &c->y.t[I].t);
  if (st == BP_OK) st = bp_softmax(s, &c->y.t[I].t, -1, false, &c->out.t[I].t);
  return st;
}

/* Runs the chain on cpu-ref and compares out with the Vulkan side. */
static void check_out(chain_t *c, const char *what) {
  assert_int_equal(chain_issue(c, 1, vt_ref.s), BP_OK);
  assert_int_equal(bp_device_synchronize(vt_vk.dev), BP_OK);
  vt_check(&c->out, BP_F32, (double)K, what);
}

static bp_graph_t *capture(chain_t *c) {
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_begin_capture(vt_vk.s), BP_OK);
  assert_int_equal(chain_issue(c, 0, vt_vk.s), BP_OK);
  assert_int_equal(bp_stream_end_capture(vt_vk.s, &g), BP_OK);
  return g;
}

static void read_vk(vt_pair_t *p, float *host) {
  assert_int_equal(bp_device_synchronize(vt_vk.dev), BP_OK);
  bp_tensor_t t = p->t[0].t;
  assert_int_equal(bp_buffer_read(p->t[0].buf, t.offset, host, M * N * sizeof *host), BP_OK);
}

void vt_test_graph(void **state) {
  (void)state;
  VT_NEED();
  int64_t sx[2] = {M, K}, sw[2] = {K, N}, sb[1] = {N}, sy[2] = {M, N};
  chain_t c = {.x = vt_rand(31, BP_F32, 2, sx, TC_STRIDED, -1, 1),
               .w = vt_rand(32, BP_F32, 2, sw, TC_CONTIG, -1, 1),
               .bias = vt_rand(33, BP_F32, 1, sb, TC_CONTIG, -1, 1),
               .y = vt_rand(34, BP_F32, 2, sy, TC_CONTIG, -1, 1),
               .out = vt_rand(35, BP_F32, 2, sy, TC_CONTIG, -1, 1)};

  bp_graph_t *g = capture(&c);
  assert_int_equal(bp_graph_size(g), 3);
  for (int r = 0; r < 20; r++) assert_int_equal(bp_graph_launch(g, vt_vk.s), BP_OK);
  assert_true(bp_graph_is_native(g));
  check_out(&c, "graph: 20 native launches");

  /* A new input: the core drops the native graph and records a new one. */
  vt_pair_t x1 = vt_rand(41, BP_F32, 2, sx, TC_STRIDED, -1, 1);
  assert_int_equal(bp_graph_rebind(g, c.x.t[0].buf, x1.t[0].buf), BP_OK);
  vt_pair_t x0 = c.x;
  c.x = x1;
  for (int r = 0; r < 3; r++) assert_int_equal(bp_graph_launch(g, vt_vk.s), BP_OK);
  assert_true(bp_graph_is_native(g));
  check_out(&c, "graph: launches after rebinding x");

  /* A second stream keeps its own order: the fill runs before the graph. */
  bp_stream_t *s2;
  assert_int_equal(bp_stream_create(vt_vk.dev, &s2), BP_OK);
  assert_int_equal(bp_fill(s2, &c.out.t[0].t, 0.0), BP_OK);
  assert_int_equal(bp_graph_launch(g, s2), BP_OK);
  assert_int_equal(bp_stream_synchronize(s2), BP_OK);
  check_out(&c, "graph: launch on a second stream");
  float native[M * N], replayed[M * N];
  read_vk(&c.out, native);

  /* Destroying a graph with launches in flight waits for them. */
  assert_int_equal(bp_fill(vt_vk.s, &c.out.t[0].t, 0.0), BP_OK);
  for (int r = 0; r < 10; r++) assert_int_equal(bp_graph_launch(g, r % 2 ? s2 : vt_vk.s), BP_OK);
  bp_graph_destroy(g);
  check_out(&c, "graph: destroyed with launches in flight");
  bp_stream_destroy(s2);

  /* Replay (BACKPLANE_NATIVE_GRAPHS=0) gives the native result exactly. */
  setenv("BACKPLANE_NATIVE_GRAPHS", "0", 1);
  assert_int_equal(bp_fill(vt_vk.s, &c.out.t[0].t, 0.0), BP_OK);
  bp_graph_t *g2 = capture(&c);
  for (int r = 0; r < 3; r++) assert_int_equal(bp_graph_launch(g2, vt_vk.s), BP_OK);
  assert_false(bp_graph_is_native(g2));
  read_vk(&c.out, replayed);
  unsetenv("BACKPLANE_NATIVE_GRAPHS");
  bp_graph_destroy(g2);
  assert_memory_equal(native, replayed, sizeof native);

  vt_free(&x0);
  vt_free(&c.x);
  vt_free(&c.w);
  vt_free(&c.bias);
  vt_free(&c.y);
  vt_free(&c.out);
  TC_END();
}
