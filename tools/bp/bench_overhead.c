/*
 * bench_overhead.c — what a call costs beyond its work: a one-element op
 * through the public API (validation, handle checks, the plugin call), and
 * the same ops launched from a captured graph, once as the backend's native
 * graph where it has one and once replayed op by op
 * (BACKPLANE_NATIVE_GRAPHS=0). Printed after the suite.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bp.h"

enum { CALLS = 20000, GRAPH_OPS = 64, GRAPH_REPS = 300 };

/* Best of 5 of the mean time per call of `calls` unary ops, in µs. */
static double time_direct(bp_stream_t *s, const bp_tensor_t *t) {
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = bpt_now();
    for (int i = 0; i < CALLS; i++) bp_unary(s, BP_UNARY_NEG, t, t);
    bp_stream_synchronize(s);
    double us = (bpt_now() - t0) * 1e6 / CALLS;
    if (us < best) best = us;
  }
  return best;
}

/* Per-op time of a launched graph of GRAPH_OPS one-element ops, in µs;
 * *out_native says whether the launches ran a native graph. */
static double time_graph(bp_stream_t *s, const bp_tensor_t *t, bool native, bool *out_native) {
  bp_graph_t *g = NULL;
  *out_native = false;
  if (bp_stream_begin_capture(s) != BP_OK) return -1;
  for (int i = 0; i < GRAPH_OPS; i++) bp_unary(s, BP_UNARY_NEG, t, t);
  if (bp_stream_end_capture(s, &g) != BP_OK) return -1;
  const char *env = getenv("BACKPLANE_NATIVE_GRAPHS");
  char *saved = env ? strdup(env) : NULL;
  if (!native) setenv("BACKPLANE_NATIVE_GRAPHS", "0", 1);
  bp_graph_launch(g, s); /* builds the native graph, outside the timing */
  if (!native) {
    if (saved) setenv("BACKPLANE_NATIVE_GRAPHS", saved, 1);
    else unsetenv("BACKPLANE_NATIVE_GRAPHS");
  }
  free(saved);
  *out_native = bp_graph_is_native(g);
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = bpt_now();
    for (int i = 0; i < GRAPH_REPS; i++) bp_graph_launch(g, s);
    bp_stream_synchronize(s);
    double us = (bpt_now() - t0) * 1e6 / (GRAPH_REPS * GRAPH_OPS);
    if (us < best) best = us;
  }
  bp_graph_destroy(g);
  return best;
}

void bench_overhead(bp_device_t *dev) {
  bp_stream_t *s = NULL;
  bp_buffer_t *b = NULL;
  bool ok = false;
  if (bp_stream_create(dev, &s) == BP_OK && bp_buffer_alloc(dev, 4, &b) == BP_OK) {
    bp_tensor_t t;
    int64_t one = 1;
    bp_tensor_init(b, 0, BP_F32, 1, &one, NULL, &t);
    bool sup = false;
    bp_device_supports(dev, BP_OP_UNARY, BP_F32, &sup);
    if (sup && bp_fill(s, &t, 1.0) == BP_OK) {
      bool native = false, replay_native = false;
      double direct = time_direct(s, &t), graph = time_graph(s, &t, true, &native);
      double replay = native ? time_graph(s, &t, false, &replay_native) : -1;
      printf("overhead   1-element neg through the API     %8.3f us/call (target <= 1 us)\n", direct);
      if (graph >= 0)
        printf("overhead   same op from a %s graph     %8.3f us/op\n", native ? "native  " : "replayed", graph);
      if (replay >= 0) printf("overhead   same op from a replayed graph     %8.3f us/op\n", replay);
      ok = true;
    }
  }
  if (!ok) printf("overhead   not measured: %s\n", bp_last_error()[0] ? bp_last_error() : "no f32 unary");
  bp_buffer_free(b);
  bp_stream_destroy(s);
}
