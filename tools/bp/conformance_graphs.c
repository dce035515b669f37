/*
 * conformance_graphs.c — the "graphs" stage: a captured pipeline (gemm, a
 * broadcast add, softmax) launched from a graph must match cpu-ref, keep
 * matching after its input is rebound, and — where the backend offers native
 * graphs (ABI 1.2) — agree bit for bit with the same graph replayed op by op,
 * since both run the same kernels.
 */
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

enum { GM = 9, GK = 21, GN = 35 }; /* odd: the kernels' edge paths */

typedef struct graph_case {
  cf_run_t run;
  bp_tensor_t x, w, bias, y, out, x2;
} graph_case_t;

static bool graph_case_make(graph_case_t *g, bp_device_t *dev, bp_stream_t *s) {
  cf_run_init(&g->run, dev, s);
  cf_run_t *r = &g->run;
  g->x = cf_tensor(r, BP_F32, 2, (const int64_t[]){GM, GK}, CF_CONTIGUOUS, CF_FILL_NORMAL, 11);
  g->x2 = cf_tensor(r, BP_F32, 2, (const int64_t[]){GM, GK}, CF_CONTIGUOUS, CF_FILL_NORMAL, 12);
  g->w = cf_tensor(r, BP_F32, 2, (const int64_t[]){GK, GN}, CF_CONTIGUOUS, CF_FILL_NORMAL, 13);
  g->bias = cf_tensor(r, BP_F32, 2, (const int64_t[]){1, GN}, CF_CONTIGUOUS, CF_FILL_NORMAL, 14);
  g->y = cf_tensor(r, BP_F32, 2, (const int64_t[]){GM, GN}, CF_CONTIGUOUS, CF_FILL_NAN, 15);
  g->out = cf_tensor(r, BP_F32, 2, (const int64_t[]){GM, GN}, CF_CONTIGUOUS, CF_FILL_NAN, 16);
  return !r->failed;
}

static bp_status_t issue(graph_case_t *g, const bp_tensor_t *x) {
  bp_stream_t *s = g->run.s;
  bp_status_t st = bp_matmul(s, 1.0, x, &g->w, 0.0, &g->y);
  if (st == BP_OK) st = bp_binary(s, BP_BINARY_ADD, &g->y, &g->bias, &g->y);
  if (st == BP_OK) st = bp_softmax(s, &g->y, -1, false, &g->out);
  return st;
}

/* The pipeline's output for input x on cpu-ref. */
static double *reference(cf_child_t *c, bool second_input, int64_t *n) {
  graph_case_t g;
  double *v = NULL;
  if (graph_case_make(&g, c->ref, c->ref_s) && issue(&g, second_input ? &g.x2 : &g.x) == BP_OK)
    v = cf_read(&g.run, &g.out, n);
  cf_run_free(&g.run);
  return v;
}

static bp_graph_t *capture(graph_case_t *g) {
  bp_graph_t *graph = NULL;
  if (bp_stream_begin_capture(g->run.s) != BP_OK) return NULL;
  bp_status_t st = issue(g, &g->x);
  if (bp_stream_end_capture(g->run.s, &graph) != BP_OK || st != BP_OK) {
    bp_graph_destroy(graph);
    return NULL;
  }
  return graph;
}

/* Launches twice and compares with want; the result read is returned. */
static double *launch_and_check(cf_child_t *c, graph_case_t *g, bp_graph_t *graph, const double *want,
                                int64_t n, bool *out_ok, char *detail, size_t size) {
  bp_status_t st = BP_OK;
  for (int i = 0; i < 2 && st == BP_OK; i++) st = bp_graph_launch(graph, g->run.s);
  if (st == BP_OK) st = bp_stream_synchronize(g->run.s);
  int64_t got_n = 0;
  double *got = st == BP_OK ? cf_read(&g->run, &g->out, &got_n) : NULL;
  *out_ok = got && got_n == n && cf_compare(got, want, n, cf_tolerance(BP_F32, GK), detail, size);
  if (!got) snprintf(detail, size, "%s", bp_last_error());
  (void)c;
  return got;
}

void cf_stage_graphs(cf_child_t *c) {
  cf_begin(c, "graphs", "capture gemm+add+softmax, launch, rebind");
  const bp_op_t ops[] = {BP_OP_GEMM, BP_OP_BINARY, BP_OP_SOFTMAX};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    bool sup = false;
    bp_device_supports(c->dev, ops[i], BP_F32, &sup);
    if (!sup) {
      cf_end(c, CF_UNSUPPORTED, "device has no f32 %s", bp_op_name(ops[i]));
      return;
    }
  }
  if (!c->ref) {
    cf_end(c, CF_SKIP, "no cpu-ref device to compare against");
    return;
  }
  int64_t n0 = 0, n1 = 0;
  double *want0 = reference(c, false, &n0), *want1 = reference(c, true, &n1);
  graph_case_t g;
  bp_graph_t *graph = NULL;
  char detail[256] = "";
  bool made = want0 && want1;
  bool ok = made && graph_case_make(&g, c->dev, c->dev_s) && (graph = capture(&g));
  double *got = NULL, *replayed = NULL;
  bool native = false;
  if (!ok) snprintf(detail, sizeof detail, "setup: %s", bp_last_error());
  if (ok) {
    free(launch_and_check(c, &g, graph, want0, n0, &ok, detail, sizeof detail));
    native = bp_graph_is_native(graph);
  }
  if (ok) {
    /* A rebind that fails must fail the case: launching the graph unchanged
     * would compare the first input's result with the second's. */
    bp_status_t st = bp_graph_rebind(graph, g.x.buffer, g.x2.buffer);
    if (st != BP_OK) {
      ok = false;
      snprintf(detail, sizeof detail, "bp_graph_rebind: %s: %s", bp_status_name(st), bp_last_error());
    } else {
      got = launch_and_check(c, &g, graph, want1, n1, &ok, detail, sizeof detail);
    }
  }
  cf_end(c, ok ? CF_PASS : CF_FAIL, "%s%s%s", native ? "native graph" : "replayed op by op", ok ? "" : ": ",
         ok ? "" : detail);

  cf_begin(c, "graphs", "native graph vs replay, bit for bit");
  if (!ok) {
    cf_end(c, CF_SKIP, "the graph itself failed");
  } else if (!native) {
    cf_end(c, CF_UNSUPPORTED, "the backend has no native graphs (or could not record this one)");
  } else {
    /* The switch is read when a graph is first launched. */
    setenv("BACKPLANE_NATIVE_GRAPHS", "0", 1);
    bp_graph_t *plain = capture(&g);
    bool same = false;
    bp_status_t st = plain ? bp_graph_rebind(plain, g.x.buffer, g.x2.buffer) : BP_ERR_INTERNAL;
    if (st == BP_OK) replayed = launch_and_check(c, &g, plain, want1, n1, &same, detail, sizeof detail);
    unsetenv("BACKPLANE_NATIVE_GRAPHS");
    same = replayed && !bp_graph_is_native(plain) && !memcmp(replayed, got, (size_t)n1 * sizeof *got);
    if (!plain || st != BP_OK)
      cf_end(c, CF_FAIL, "replayed graph: %s: %s", plain ? "bp_graph_rebind" : "capture", bp_status_name(st));
    else
      cf_end(c, same ? CF_PASS : CF_FAIL, "%s", same ? "identical" : "native and replayed launches differ");
    bp_graph_destroy(plain);
  }
  free(got);
  free(replayed);
  bp_graph_destroy(graph);
  if (made) cf_run_free(&g.run);
  free(want0);
  free(want1);
}
