/*
 * graph.c — `bp graph`: captures a demo graph on a device, launches it,
 * checks its result against the same ops run eagerly on cpu-ref, and with
 * --explain prints where the graph scheduler placed each call and what it
 * copies (bp_graph_explain; docs/runtime.md "Graph scheduler").
 *
 * The demo mixes ops and dtypes that devices support unevenly, so that a
 * device lacking some of them shows a scheduled graph:
 *   t = gemm(a, b) [n x n, f32]   u = softmax(t, axis 1)   v = gelu(u)
 *   w = cast(v, f64)   e = exp(w) [f64]   r = sum(e, axis 1) [f64]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp.h"

typedef struct graph_opts {
  const char *device;
  bool explain, no_fallback;
  unsigned long long n, time; /* --size; --time: runs to time, 0: none */
  bpt_context_flags_t ctx;
} graph_opts_t;

static void graph_help(FILE *f) {
  fprintf(f, "usage: bp graph [--explain] [--device SEL] [--size N] [--time RUNS]\n"
             "                [--no-fallback] [--no-isolate]\n\n"
             "Captures a demo graph on a device (gemm n x n, softmax, gelu in f32, then a\n"
             "cast to f64, exp and a row sum in f64), launches it once and checks the\n"
             "result against the same ops run one by one on cpu-ref. When the device\n"
             "cannot run some of the ops and fallback is on, the graph scheduler places\n"
             "them on other devices (docs/runtime.md, \"Graph scheduler\").\n\n"
             "  --explain      print each call's device, why it runs there, the cost\n"
             "                 model's estimate and the bytes copied, and each region's\n"
             "                 working copy\n"
             "  --device SEL   the device to capture on, as in 'bp devices' (default:\n"
             "                 the best)\n"
             "  --size N       n, from 1 to 4096 (default 64)\n"
             "  --time RUNS    then times RUNS launches of the graph and RUNS passes of\n"
             "                the same ops issued one by one (fallback per op where\n"
             "                the device cannot run one): the median of each and the\n"
             "                bytes each copies between devices\n"
             "  --no-fallback  open the device with fallback off: an op it cannot run\n"
             "                 is refused at capture, as without the scheduler\n"
             "  --no-isolate   probe plugins in this process instead of a child\n\n"
             "Exit status: 0 when the graph ran and matched cpu-ref, 1 when it could\n"
             "not be captured or run or did not match, 2 on a usage error.\n");
}

static int parse(int argc, char **argv, graph_opts_t *o) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},         {"explain", no_argument, NULL, 'e'},
      {"device", required_argument, NULL, 'd'}, {"size", required_argument, NULL, 's'},
      {"no-fallback", no_argument, NULL, 'f'},  {"no-isolate", no_argument, NULL, 'n'},
      {"time", required_argument, NULL, 't'},   {NULL, 0, NULL, 0}};
  bool started = false;
  for (int c; (c = bpt_getopt("graph", argc, argv, "h", longopts, &started)) != -1;) {
    switch (c) {
    case 'h':
      graph_help(stdout);
      return -1;
    case 'e':
      o->explain = true;
      break;
    case 'd':
      o->device = optarg;
      break;
    case 's':
      if (!bpt_parse_count("graph", "--size", optarg, 1, 4096, &o->n)) return BPT_EXIT_USAGE;
      break;
    case 't':
      if (!bpt_parse_count("graph", "--time", optarg, 1, 100000, &o->time)) return BPT_EXIT_USAGE;
      break;
    case 'f':
      o->no_fallback = true;
      break;
    case 'n':
      o->ctx.no_isolate = true;
      break;
    default:
      return BPT_EXIT_USAGE;
    }
  }
  if (optind < argc) return bpt_usage_error("graph", "unexpected argument '%s'", argv[optind]);
  return 0;
}

enum { A, B, T, U, V, W, E, R, NBUF };

/* The demo's buffers on one device, and its stream. */
typedef struct demo {
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *b[NBUF];
} demo_t;

static bool ok(bp_status_t st, const char *what) {
  if (st == BP_OK) return true;
  fprintf(stderr, "bp graph: %s: %s (%s)\n", what, bp_status_string(st), bp_last_error());
  return false;
}

static void demo_free(demo_t *d) {
  for (int k = 0; k < NBUF; k++)
    if (d->b[k]) bp_buffer_free(d->b[k]);
  if (d->s) bp_stream_destroy(d->s);
  if (d->dev) bp_device_close(d->dev);
  memset(d, 0, sizeof *d);
}

/* Opens sel and allocates the buffers, a and b filled with a fixed pattern. */
static bool demo_open(bp_context_t *ctx, const char *sel, bool no_fallback, int64_t n, demo_t *d) {
  memset(d, 0, sizeof *d);
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .no_fallback = no_fallback};
  if (!ok(bp_device_open(ctx, sel, &cfg, &d->dev), sel ? sel : "opening the best device") ||
      !ok(bp_stream_create(d->dev, &d->s), "creating a stream"))
    return false;
  const uint64_t bytes[NBUF] = {4, 4, 4, 4, 4, 8, 8, 8};
  float *v = malloc((size_t)(n * n) * sizeof *v);
  bool good = v != NULL;
  for (int k = 0; k < NBUF && good; k++)
    good =
        ok(bp_buffer_alloc(d->dev, (k == R ? 1 : (uint64_t)n) * (uint64_t)n * bytes[k], &d->b[k]),
           "allocating");
  for (int k = A; k <= B && good; k++) {
    for (int64_t i = 0; i < n * n; i++) v[i] = (float)(((i * 7 + k * 3) % 19) - 9) / (float)(8 * n);
    good = ok(bp_buffer_write(d->b[k], 0, v, (uint64_t)(n * n) * sizeof *v), "writing the inputs");
  }
  free(v);
  return good;
}

static bp_tensor_t view(bp_buffer_t *b, bp_dtype_t dt, int64_t rows, int64_t cols) {
  bp_tensor_t t;
  int64_t shape[2] = {rows, cols};
  bp_tensor_init(b, 0, dt, cols ? 2 : 1, shape, NULL, &t);
  return t;
}

/* Issues the demo's ops on d's stream (captured or run). */
static bool demo_issue(demo_t *d, int64_t n) {
  bp_tensor_t t = view(d->b[T], BP_F32, n, n), u = view(d->b[U], BP_F32, n, n),
              v = view(d->b[V], BP_F32, n, n);
  bp_tensor_t w = view(d->b[W], BP_F64, n, n), e = view(d->b[E], BP_F64, n, n),
              r = view(d->b[R], BP_F64, n, 0);
  return ok(bp_gemm(d->s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, n, n, n, 1.0, d->b[A], 0,
                    n, d->b[B], 0, n, 0.0, d->b[T], 0, n),
            "gemm") &&
         ok(bp_softmax(d->s, &t, 1, false, &u), "softmax") &&
         ok(bp_unary(d->s, BP_UNARY_GELU, &u, &v), "gelu") &&
         ok(bp_cast(d->s, &v, &w), "cast to f64") &&
         ok(bp_unary(d->s, BP_UNARY_EXP, &w, &e), "exp (f64)") &&
         ok(bp_reduce(d->s, BP_REDUCE_SUM, &e, 1, &r), "sum (f64)");
}

/* The largest relative difference between the two devices' row sums. */
static bool compare(demo_t *g, demo_t *ref, int64_t n, double *out_err) {
  double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  bool good =
      x && y && ok(bp_buffer_read(g->b[R], 0, x, (uint64_t)n * sizeof *x), "reading the result") &&
      ok(bp_buffer_read(ref->b[R], 0, y, (uint64_t)n * sizeof *y), "reading cpu-ref's result");
  *out_err = 0;
  for (int64_t i = 0; good && i < n; i++) {
    double rel = fabs(x[i] - y[i]) / fmax(fabs(y[i]), 1e-30);
    if (!(rel <= *out_err)) *out_err = rel; /* NaN sticks */
  }
  free(x);
  free(y);
  return good;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Bytes fallback has copied for d so far, both ways. */
static uint64_t fallback_bytes(bp_device_t *d) {
  bp_fallback_stat_t st[64] = {{.struct_size = sizeof st[0]}};
  uint32_t count = 0;
  uint64_t sum = 0;
  if (bp_device_fallback_stats(d, st, 64, &count) != BP_OK) return 0;
  for (uint32_t i = 0; i < count && i < 64; i++) sum += st[i].bytes_in + st[i].bytes_out;
  return sum;
}

/* Times o->time launches of graph, then as many passes of the ops issued
 * directly (each waited for), and prints the medians and bytes copied. */
static bool time_demo(demo_t *g, bp_graph_t *graph, const graph_opts_t *o) {
  uint32_t runs = (uint32_t)o->time;
  double *t = malloc(2 * runs * sizeof *t);
  bool good = t != NULL;
  for (uint32_t i = 0; i < runs && good; i++) {
    double t0 = bpt_now();
    good =
        ok(bp_graph_launch(graph, g->s), "launching") && ok(bp_stream_synchronize(g->s), "waiting");
    t[i] = bpt_now() - t0;
  }
  uint64_t before = fallback_bytes(g->dev);
  for (uint32_t i = 0; i < runs && good; i++) {
    double t0 = bpt_now();
    good = demo_issue(g, (int64_t)o->n) && ok(bp_stream_synchronize(g->s), "waiting");
    t[runs + i] = bpt_now() - t0;
  }
  uint64_t eager_bytes = (fallback_bytes(g->dev) - before) / runs;
  bp_graph_schedule_info_t info = {.struct_size = sizeof info};
  good = good && ok(bp_graph_schedule(graph, &info), "reading the schedule");
  if (good) {
    qsort(t, runs, sizeof *t, by_value);
    qsort(t + runs, runs, sizeof *t, by_value);
    printf(
        "timed %u runs, medians: graph launch %.3f ms, %llu B copied between devices per launch; "
        "the same ops issued one by one %.3f ms, %llu B copied by fallback per pass\n",
        runs, t[runs / 2] * 1e3,
        (unsigned long long)(info.bytes_from_owners + info.bytes_between + info.bytes_to_owners),
        t[runs + runs / 2] * 1e3, (unsigned long long)eager_bytes);
  }
  free(t);
  return good;
}

static int run_demo(bp_context_t *ctx, const graph_opts_t *o) {
  int64_t n = (int64_t)o->n;
  demo_t g, ref;
  bp_graph_t *graph = NULL;
  int rc = BPT_EXIT_FAIL;
  bool good =
      demo_open(ctx, o->device, o->no_fallback, n, &g) && demo_open(ctx, "cpu-ref", true, n, &ref);
  if (good) good = ok(bp_stream_begin_capture(g.s), "beginning the capture");
  if (good) {
    bool issued = demo_issue(&g, n);
    good = ok(bp_stream_end_capture(g.s, &graph), "ending the capture") && issued;
  }
  if (good && o->explain) {
    size_t len = 0;
    bp_graph_explain(graph, NULL, 0, &len);
    char *text = malloc(len + 1);
    if (text && ok(bp_graph_explain(graph, text, len + 1, NULL), "explaining")) fputs(text, stdout);
    free(text);
  }
  double err = 0;
  good = good && ok(bp_graph_launch(graph, g.s), "launching") &&
         ok(bp_stream_synchronize(g.s), "waiting") && demo_issue(&ref, n) &&
         ok(bp_stream_synchronize(ref.s), "running on cpu-ref") && compare(&g, &ref, n, &err);
  /* f32 ops before the f64 tail: the f32 tolerance over a row of n. */
  double tol = 1e-5 * sqrt((double)n) * 8;
  bp_device_entry_t entry = {.struct_size = sizeof entry};
  if (good && ok(bp_device_entry(g.dev, &entry), "reading the device's entry")) {
    printf("graph of %u calls on '%s': launched; row sums vs cpu-ref: max relative difference %.3g "
           "(%s)\n",
           bp_graph_size(graph), entry.info.name, err, err <= tol ? "match" : "MISMATCH");
    rc = err <= tol ? BPT_EXIT_OK : BPT_EXIT_FAIL;
    if (rc == BPT_EXIT_OK && o->time && !time_demo(&g, graph, o)) rc = BPT_EXIT_FAIL;
  }
  bp_graph_destroy(graph);
  demo_free(&g);
  demo_free(&ref);
  return rc;
}

int bp_cmd_graph(int argc, char **argv) {
  graph_opts_t o = {.n = 64};
  int rc = parse(argc, argv, &o);
  if (rc) return rc < 0 ? BPT_EXIT_OK : rc;
  bp_context_t *ctx = bpt_context_open(&o.ctx);
  if (!ctx) return BPT_EXIT_FAIL;
  rc = run_demo(ctx, &o);
  bp_context_destroy(ctx);
  return rc;
}
