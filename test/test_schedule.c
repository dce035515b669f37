/*
 * test_schedule.c — the graph scheduler (core/schedule*.c, docs/runtime.md
 * "Graph scheduler"). The devices, best first: "partial" and "partial2"
 * (test plugins from test/fixtures/partial_plugin.c), cpu, cpu-ref.
 * partial has unary (f32) and binary (at most 64 elements, refused above
 * when it runs) but no softmax or gemm; partial2 adds softmax; gemm runs
 * on the CPU devices only.
 *
 * The graph captured on partial (fallback on) mixes them:
 *   c0 y0 = -x             c1 y1 = softmax(y0)     c2 y2 = exp(y1)
 *   c3 y3 = y2 + b (128)   c4 y4 = y3 . w (gemm)   c5 y5 = softmax(y4) into
 *                                                     a strided view
 * Each launch's six outputs (the whole y5 buffer, padding included) are
 * checked against the same ops run eagerly on cpu-ref, within the parity
 * tolerances of test/common, over several launches with rebinds, a write
 * into an input and a freed buffer in between. With measured times pinned
 * in the tuning cache the placement and the bytes copied are exact.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"
#include "tc.h"

#define ROWS 8
#define COLS 16
#define N (ROWS * COLS)
#define SENTINEL 7.0f

static bp_context_t *ctx;
static char cache_path[PATH_MAX];

/* ---- the graph's buffers and ops ------------------------------------------ */

enum { X, B, W, Y0, Y1, Y2, Y3, Y4, Y5, NBUF };
static const int outputs[6] = {Y0, Y1, Y2, Y3, Y4, Y5};
static const double reductions[6] = {1, COLS, 1, 1, COLS, ROWS};

typedef struct bufs {
  bp_buffer_t *b[NBUF];
} bufs_t;

static bp_buffer_t *buffer_with(bp_device_t *d, const float *v) {
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(d, N * sizeof(float), &b), BP_OK);
  assert_int_equal(bp_buffer_write(b, 0, v, N * sizeof(float)), BP_OK);
  return b;
}

static void values(float *v, int seed) {
  for (int i = 0; i < N; i++) v[i] = (float)(((i * 37 + seed * 11) % 23) - 11) * 0.125f;
}

static void sentinels(float *v) {
  for (int i = 0; i < N; i++) v[i] = SENTINEL;
}

/* Every buffer of the graph on d: inputs from seeds, outputs sentinels. */
static bufs_t bufs_make(bp_device_t *d, int seed) {
  bufs_t s;
  float v[N];
  for (int k = 0; k < NBUF; k++) {
    if (k <= W)
      values(v, seed + k);
    else
      sentinels(v);
    s.b[k] = buffer_with(d, v);
  }
  return s;
}

static void bufs_free(bufs_t *s) {
  for (int k = 0; k < NBUF; k++) bp_buffer_free(s->b[k]);
}

static bp_tensor_t tensor(bp_buffer_t *b, int64_t rows, int64_t cols, int64_t row_stride,
                          int64_t col_stride) {
  bp_tensor_t t;
  int64_t shape[2] = {rows, cols}, strides[2] = {row_stride, col_stride};
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 2, shape, strides, &t), BP_OK);
  return t;
}

/* Issues the six ops on s over the buffers in u. */
static void issue(bp_stream_t *s, const bufs_t *u) {
  bp_tensor_t x = tensor(u->b[X], ROWS, COLS, COLS, 1), b = tensor(u->b[B], ROWS, COLS, COLS, 1);
  bp_tensor_t y0 = tensor(u->b[Y0], ROWS, COLS, COLS, 1),
              y1 = tensor(u->b[Y1], ROWS, COLS, COLS, 1);
  bp_tensor_t y2 = tensor(u->b[Y2], ROWS, COLS, COLS, 1),
              y3 = tensor(u->b[Y3], ROWS, COLS, COLS, 1);
  bp_tensor_t y4 = tensor(u->b[Y4], ROWS, ROWS, ROWS, 1),
              y5 = tensor(u->b[Y5], ROWS, ROWS, COLS, 2);
  assert_int_equal(bp_unary(s, BP_UNARY_NEG, &x, &y0), BP_OK);
  assert_int_equal(bp_softmax(s, &y0, 1, false, &y1), BP_OK);
  assert_int_equal(bp_unary(s, BP_UNARY_EXP, &y1, &y2), BP_OK);
  assert_int_equal(bp_binary(s, BP_BINARY_ADD, &y2, &b, &y3), BP_OK);
  assert_int_equal(bp_gemm(s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, ROWS, ROWS, COLS, 1.0,
                           u->b[Y3], 0, COLS, u->b[W], 0, ROWS, 0.0, u->b[Y4], 0, ROWS),
                   BP_OK);
  assert_int_equal(bp_softmax(s, &y4, 1, false, &y5), BP_OK);
}

static void read_all(bp_buffer_t *b, double *out) {
  float v[N];
  assert_int_equal(bp_buffer_read(b, 0, v, sizeof v), BP_OK);
  for (int i = 0; i < N; i++) out[i] = v[i];
}

/* Copies buffer from's bytes into to (both on any device). */
static void copy_into(bp_buffer_t *to, bp_buffer_t *from) {
  float v[N];
  assert_int_equal(bp_buffer_read(from, 0, v, sizeof v), BP_OK);
  assert_int_equal(bp_buffer_write(to, 0, v, sizeof v), BP_OK);
}

/* The reference: the ops run eagerly on cpu-ref over the inputs in `in`
 * (buffers of the graph's device); each output compared with the graph's
 * (whole buffers: the strided view's padding must be untouched). */
static void check_against_cpu_ref(bp_buffer_t *const in[3], bp_buffer_t *const out[6],
                                  const char *what) {
  tc_env_t e;
  assert_true(tc_env_open(&e, ctx, "cpu-ref"));
  bufs_t r = bufs_make(e.dev, 0);
  for (int k = X; k <= W; k++) copy_into(r.b[k], in[k]);
  issue(e.s, &r);
  assert_int_equal(bp_stream_synchronize(e.s), BP_OK);
  snprintf(e.name, sizeof e.name, "graph on partial vs cpu-ref");
  for (int k = 0; k < 6; k++) {
    double got[N], want[N];
    read_all(out[k], got);
    read_all(r.b[outputs[k]], want);
    tc_expect_close(&e, BP_F32, got, want, N, reductions[k], "%s: output of call %d", what, k);
  }
  bufs_free(&r);
  tc_env_close(&e);
}

static void check_graph_outputs(const bufs_t *u, const char *what) {
  bp_buffer_t *in[3] = {u->b[X], u->b[B], u->b[W]};
  bp_buffer_t *out[6];
  for (int k = 0; k < 6; k++) out[k] = u->b[outputs[k]];
  check_against_cpu_ref(in, out, what);
}

/* ---- the tuning cache: measured times pinned per device ------------------- */

/* Writes a cache in which every (device, op) the graph uses has a time for
 * every size bucket: partial 0.001 ms, partial2 0.01, cpu 1, cpu-ref 5. */
static void pin_times(const char *path) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "{\"version\": 1, \"entries\": [");
  const char *ops[] = {"sched.unary", "sched.softmax", "sched.binary", "sched.gemm"};
  const double ms[] = {0.001, 0.01, 1.0, 5.0};
  bool first = true;
  for (uint32_t r = 0; r < 4; r++) {
    bp_device_entry_t e;
    assert_int_equal(bp_context_device_entry(ctx, r, &e), BP_OK);
    char version[64] = "";
    uint32_t np = 0;
    assert_int_equal(bp_context_plugin_count(ctx, &np), BP_OK);
    for (uint32_t p = 0; p < np; p++) {
      bp_plugin_report_t rep = {.struct_size = sizeof rep};
      assert_int_equal(bp_context_plugin_report(ctx, p, &rep), BP_OK);
      if (rep.loaded && !strcmp(rep.name, e.backend))
        snprintf(version, sizeof version, "%s", rep.version);
    }
    for (int o = 0; o < 4; o++)
      for (int bucket = 0; bucket < 32; bucket++) {
        fprintf(
            f,
            "%s{\"plugin\": \"%s\", \"plugin_version\": \"%s\", \"device\": \"%s\", "
            "\"driver_version\": "
            "\"%s\", \"op\": \"%s\", \"dtype\": \"f32\", \"bucket\": \"b%d\", \"value\": \"%g\"}",
            first ? "" : ", ", e.backend, version, e.info.name, e.info.driver_version, ops[o],
            bucket, ms[r]);
        first = false;
      }
  }
  fprintf(f, "]}\n");
  fclose(f);
}

/* ---- fixtures --------------------------------------------------------------- */

static int setup(void **state) {
  (void)state;
  char exe[PATH_MAX], path[2 * PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(path, sizeof path, "%s/partial-plugin:%s/../plugins", exe, exe);
  setenv("BACKPLANE_PLUGIN_PATH", path, 1);
  setenv("BACKPLANE_BACKENDS", "partial,partial2,cpu,-opencl,-vulkan,-cuda,-rocm", 1);
  unsetenv("BACKPLANE_FALLBACK");
  snprintf(cache_path, sizeof cache_path, "/tmp/bp-test-schedule-%d.json", (int)getpid());
  bp_context_options_t opt = {.struct_size = sizeof opt, .in_process_probe = true};
  if (bp_context_create(&opt, &ctx) != BP_OK) return -1;
  const char *want[4] = {"partial", "partial2", "cpu", "cpu-ref"};
  for (uint32_t r = 0; r < 4; r++) {
    bp_device_entry_t e;
    if (bp_context_device_entry(ctx, r, &e) != BP_OK || strcmp(e.info.name, want[r])) {
      fprintf(stderr, "ranked device %u is not '%s'\n", r, want[r]);
      return -1;
    }
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  bp_context_destroy(ctx);
  unlink(cache_path);
  char lock[PATH_MAX + 32];
  snprintf(lock, sizeof lock, "%s.lock", cache_path);
  unlink(lock);
  snprintf(lock, sizeof lock, "%s.static.lock", cache_path); /* test_mixed_graph_static's */
  unlink(lock);
  return 0;
}

typedef struct dev {
  bp_device_t *d;
  bp_stream_t *s;
} dev_t_;

static dev_t_ open_partial(const bp_device_config_t *cfg) {
  dev_t_ v = {0};
  assert_int_equal(bp_device_open(ctx, "partial", cfg, &v.d), BP_OK);
  assert_int_equal(bp_stream_create(v.d, &v.s), BP_OK);
  return v;
}

static void close_dev(dev_t_ v) {
  bp_stream_destroy(v.s);
  bp_device_close(v.d);
}

static bp_graph_t *capture(dev_t_ v, const bufs_t *u) {
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_begin_capture(v.s), BP_OK);
  issue(v.s, u);
  assert_int_equal(bp_stream_end_capture(v.s, &g), BP_OK);
  assert_int_equal(bp_graph_size(g), 6);
  return g;
}

static bp_graph_placement_t placement(bp_graph_t *g, uint32_t call) {
  bp_graph_placement_t p = {.struct_size = sizeof p};
  assert_int_equal(bp_graph_placement(g, call, &p), BP_OK);
  return p;
}

/* ---- cases ------------------------------------------------------------------ */

/* With times pinned: the placement, the reasons and every byte copied are
 * exact, and the results match cpu-ref over launches with rebinds, an input
 * written in place and a freed output buffer in between. */
static void test_mixed_graph_pinned(void **state) {
  (void)state;
  TC_BEGIN();
  pin_times(cache_path);
  assert_int_equal(bp_context_set_tuning_cache(ctx, cache_path), BP_OK);
  dev_t_ v = open_partial(NULL);
  bufs_t u = bufs_make(v.d, 1);
  bp_graph_t *g = capture(v, &u);

  const char *device[6] = {"partial", "partial2", "partial2", "partial2", "cpu", "partial2"};
  const bp_graph_place_reason_t reason[6] = {
      BP_GRAPH_PLACE_HERE, BP_GRAPH_PLACE_UNSUPPORTED, BP_GRAPH_PLACE_COST,
      BP_GRAPH_PLACE_COST, BP_GRAPH_PLACE_UNSUPPORTED, BP_GRAPH_PLACE_UNSUPPORTED};
  /* Working copies: b, y1, y2, y3, y4 and y5 on partial2 (most of their
   * uses; y3 and y4 tie between partial2 and cpu, and partial2 ranks
   * better), w on cpu, x and y0 stay in their
   * buffers. Bytes: y0 into partial2 for c1, b into its working copy for
   * c3; y3 (from partial2) and w into cpu for c4, y4 back to its buffer
   * (its working copy does not exist yet); y4 and the strided view's whole
   * range (508 B: it is not dense, its gaps must survive) into partial2's
   * working copies for c5. */
  const uint64_t in[6] = {0, 512, 0, 512, 1024, 256 + 508}, out[6] = {0, 0, 0, 0, 256, 0};
  for (uint32_t i = 0; i < 6; i++) {
    bp_graph_placement_t p = placement(g, i);
    assert_string_equal(p.device, device[i]);
    assert_int_equal(p.reason, reason[i]);
    assert_true(p.measured);
    assert_int_equal(p.bytes_in, in[i]);
    assert_int_equal(p.bytes_out, out[i]);
  }
  assert_non_null(strstr(placement(g, 1).why, "does not implement softmax"));
  assert_non_null(strstr(placement(g, 4).why, "does not implement gemm"));
  bp_graph_schedule_info_t info = {.struct_size = sizeof info};
  assert_int_equal(bp_graph_schedule(g, &info), BP_OK);
  assert_true(info.scheduled);
  assert_int_equal(info.calls, 6);
  assert_int_equal(info.runs, 4);
  assert_int_equal(info.devices, 3);
  assert_int_equal(info.regions, 9);
  assert_int_equal(info.bytes_from_owners, 512 + 512 + 256 + 508); /* b, w, y4, y5's view */
  assert_int_equal(info.bytes_between, 512 + 512 + 256);           /* y0, y3, y4 */
  assert_int_equal(info.bytes_to_owners, 512 + 512 + 512 + 508);   /* y1, y2, y3, y5 */
  assert_int_equal(bp_graph_launch(g, v.s), BP_OK);
  assert_false(bp_graph_is_native(g));
  check_graph_outputs(&u, "launch 1");
  /* Rebind an input and an output to new buffers. */
  bufs_t w = bufs_make(v.d, 5);
  assert_int_equal(bp_graph_rebind(g, u.b[X], w.b[X]), BP_OK);
  assert_int_equal(bp_graph_rebind(g, u.b[Y5], w.b[Y5]), BP_OK);
  double before[N], after[N];
  read_all(u.b[Y5], before);
  assert_int_equal(bp_graph_launch(g, v.s), BP_OK);
  read_all(u.b[Y5], after);
  assert_memory_equal(before, after, sizeof before); /* the old output is left alone */
  bp_buffer_t *in2[3] = {w.b[X], u.b[B], u.b[W]};
  bp_buffer_t *out2[6] = {u.b[Y0], u.b[Y1], u.b[Y2], u.b[Y3], u.b[Y4], w.b[Y5]};
  check_against_cpu_ref(in2, out2, "launch 2 (rebound x and y5)");
  /* New input values in place, then a freed output: refused until rebound. */
  float nv[N];
  values(nv, 9);
  assert_int_equal(bp_buffer_write(w.b[X], 0, nv, sizeof nv), BP_OK);
  assert_int_equal(bp_graph_launch(g, v.s), BP_OK);
  check_against_cpu_ref(in2, out2, "launch 3 (x written in place)");
  bp_buffer_t *freed = w.b[Y5];
  bp_buffer_free(freed);
  assert_int_equal(bp_graph_launch(g, v.s), BP_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(bp_last_error(), "freed"));
  assert_int_equal(bp_graph_rebind(g, freed, u.b[Y5]), BP_OK);
  w.b[Y5] = NULL;
  assert_int_equal(bp_graph_launch(g, v.s), BP_OK);
  out2[5] = u.b[Y5];
  check_against_cpu_ref(in2, out2, "launch 4 (freed y5 rebound)");
  char text[4096];
  size_t len = 0;
  assert_int_equal(bp_graph_explain(g, text, sizeof text, &len), BP_OK);
  assert_true(len > 0 && len < sizeof text);
  assert_non_null(strstr(text, "scheduled over 3 devices in 4 runs"));
  assert_non_null(strstr(text, "softmax     -> partial2"));
  assert_non_null(strstr(text, "unsupported here"));
  assert_non_null(
      strstr(text, "1788 B into working copies, 1280 B between runs, 2044 B back to the buffers"));
  char small[16];
  assert_int_equal(bp_graph_explain(g, small, sizeof small, &len), BP_OK);
  assert_int_equal(strlen(small), sizeof small - 1); /* cut, terminated */
  assert_true(len > sizeof small);
  bp_graph_destroy(g);
  for (int k = 0; k < NBUF; k++)
    if (w.b[k]) bp_buffer_free(w.b[k]);
  bufs_free(&u);
  close_dev(v);
  TC_END();
}

/* With no measured times (an empty cache): the static estimate places the
 * calls, every call the graph's device lacks goes elsewhere, the results
 * match cpu-ref, and the first launch stores what it measured. */
static void test_mixed_graph_static(void **state) {
  (void)state;
  TC_BEGIN();
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s.static", cache_path);
  unlink(path);
  assert_int_equal(bp_context_set_tuning_cache(ctx, path), BP_OK);
  dev_t_ v = open_partial(NULL);
  bufs_t u = bufs_make(v.d, 2);
  bp_graph_t *g = capture(v, &u);
  for (uint32_t i = 0; i < 6; i++) {
    bp_graph_placement_t p = placement(g, i);
    assert_false(p.measured);
    assert_true(p.estimate_ms > 0);
    if (i == 1 || i == 4 || i == 5) {
      assert_string_not_equal(p.device, "partial");
      assert_int_equal(p.reason, BP_GRAPH_PLACE_UNSUPPORTED);
    }
    if (i == 4) assert_true(!strcmp(p.device, "cpu") || !strcmp(p.device, "cpu-ref"));
  }
  for (int launch = 0; launch < 3; launch++) {
    assert_int_equal(bp_graph_launch(g, v.s), BP_OK);
    check_graph_outputs(&u, launch == 0 ? "static, launch 1" : "static, launch 2 or 3");
  }
  assert_int_equal(bp_context_flush_tuning_cache(ctx), BP_OK);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char text[65536];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  assert_non_null(strstr(text, "\"sched.softmax\""));
  assert_non_null(strstr(text, "\"sched.gemm\""));
  unlink(path);
  bp_graph_destroy(g);
  bufs_free(&u);
  close_dev(v);
  TC_END();
}

/* A call partial claims but refuses when it runs (binary over 128
 * elements): the graph is not scheduled at capture, the first launch moves
 * it to partial2 and finishes, later launches go straight there. */
static void test_refused_at_launch(void **state) {
  (void)state;
  TC_BEGIN();
  pin_times(cache_path);
  assert_int_equal(bp_context_set_tuning_cache(ctx, cache_path), BP_OK);
  dev_t_ v = open_partial(NULL);
  bufs_t u = bufs_make(v.d, 3);
  bp_tensor_t a = tensor(u.b[X], ROWS, COLS, COLS, 1), b = tensor(u.b[B], ROWS, COLS, COLS, 1);
  bp_tensor_t y0 = tensor(u.b[Y0], ROWS, COLS, COLS, 1), y1 = tensor(u.b[Y1], ROWS, COLS, COLS, 1);
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_begin_capture(v.s), BP_OK);
  assert_int_equal(bp_unary(v.s, BP_UNARY_NEG, &a, &y0), BP_OK);
  assert_int_equal(bp_binary(v.s, BP_BINARY_MUL, &y0, &b, &y1), BP_OK);
  assert_int_equal(bp_stream_end_capture(v.s, &g), BP_OK);
  bp_graph_schedule_info_t info = {.struct_size = sizeof info};
  assert_int_equal(bp_graph_schedule(g, &info), BP_OK);
  assert_false(info.scheduled);
  for (int launch = 0; launch < 2; launch++) {
    assert_int_equal(bp_graph_launch(g, v.s), BP_OK);
    double x[N], bv[N], got[N], want[N];
    read_all(u.b[X], x);
    read_all(u.b[B], bv);
    read_all(u.b[Y1], got);
    for (int i = 0; i < N; i++) want[i] = (double)(float)-x[i] * bv[i];
    tc_expect_close(NULL, BP_F32, got, want, N, 1, "refused binary, launch %d", launch + 1);
    assert_int_equal(bp_graph_schedule(g, &info), BP_OK);
    assert_true(info.scheduled);
    bp_graph_placement_t p = placement(g, 1);
    assert_int_equal(p.reason, BP_GRAPH_PLACE_REFUSED);
    assert_string_equal(p.device, "partial2");
    assert_non_null(strstr(p.why, "at most 64 elements"));
  }
  bp_graph_destroy(g);
  bufs_free(&u);
  close_dev(v);
  TC_END();
}

/* Adam (whose tensors come in arrays: here 12 of them, past the fixed
 * per-op list) after a NEG that makes one of its gradients: partial runs
 * the NEG, cpu the Adam step (partial has none); two launches match two
 * eager passes on cpu-ref, params and both moments updated in place. */
enum { ADAM_N = 3, ADAM_BUFS = 4 * ADAM_N + 1 };

static void adam_make(bp_device_t *d, bp_buffer_t **b) {
  float v[N];
  for (int k = 0; k < ADAM_BUFS; k++) {
    values(v, 20 + k);
    if (k >= 2 * ADAM_N && k < 4 * ADAM_N) /* moments: small, and v >= 0 */
      for (int i = 0; i < N; i++) v[i] = k < 3 * ADAM_N ? v[i] * 0.1f : v[i] * v[i] * 0.01f;
    b[k] = buffer_with(d, v);
  }
}

static void adam_issue(bp_stream_t *s, bp_buffer_t **b) {
  bp_tensor_t t[ADAM_BUFS];
  for (int k = 0; k < ADAM_BUFS; k++) t[k] = tensor(b[k], ROWS, COLS, COLS, 1);
  bp_adam_params_t p = {.struct_size = sizeof p,
                        .lr = 0.01,
                        .beta1 = 0.9,
                        .beta2 = 0.999,
                        .eps = 1e-8,
                        .weight_decay = 0.01,
                        .step = 3,
                        .adamw = true};
  assert_int_equal(bp_unary(s, BP_UNARY_NEG, &t[4 * ADAM_N], &t[ADAM_N]),
                   BP_OK); /* grads[0] = -in */
  assert_int_equal(bp_adam(s, &p, ADAM_N, &t[0], &t[ADAM_N], &t[2 * ADAM_N], &t[3 * ADAM_N]),
                   BP_OK);
}

static void test_adam_in_a_scheduled_graph(void **state) {
  (void)state;
  TC_BEGIN();
  pin_times(cache_path);
  assert_int_equal(bp_context_set_tuning_cache(ctx, cache_path), BP_OK);
  dev_t_ v = open_partial(NULL);
  bp_buffer_t *b[ADAM_BUFS], *r[ADAM_BUFS];
  adam_make(v.d, b);
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_begin_capture(v.s), BP_OK);
  adam_issue(v.s, b);
  assert_int_equal(bp_stream_end_capture(v.s, &g), BP_OK);
  assert_string_equal(placement(g, 0).device, "partial");
  assert_string_equal(placement(g, 1).device, "cpu");
  assert_int_equal(placement(g, 1).reason, BP_GRAPH_PLACE_UNSUPPORTED);
  /* Adam reads all twelve ranges (params and moments change in place). */
  assert_int_equal(placement(g, 1).bytes_in, 4 * ADAM_N * N * sizeof(float));
  for (int launch = 0; launch < 2; launch++) assert_int_equal(bp_graph_launch(g, v.s), BP_OK);
  tc_env_t e;
  assert_true(tc_env_open(&e, ctx, "cpu-ref"));
  adam_make(e.dev, r);
  for (int pass = 0; pass < 2; pass++) adam_issue(e.s, r);
  assert_int_equal(bp_stream_synchronize(e.s), BP_OK);
  snprintf(e.name, sizeof e.name, "adam graph on partial vs cpu-ref");
  for (int k = 0; k < 4 * ADAM_N; k++) {
    double got[N], want[N];
    read_all(b[k], got);
    read_all(r[k], want);
    tc_expect_close(&e, BP_F32, got, want, N, 1, "buffer %d after two launches", k);
  }
  for (int k = 0; k < ADAM_BUFS; k++) bp_buffer_free(r[k]), bp_buffer_free(b[k]);
  tc_env_close(&e);
  bp_graph_destroy(g);
  close_dev(v);
  TC_END();
}

/* A graph its device runs whole is not scheduled (and says so). */
static void test_supported_graph_not_scheduled(void **state) {
  (void)state;
  dev_t_ v = open_partial(NULL);
  bufs_t u = bufs_make(v.d, 4);
  bp_tensor_t x = tensor(u.b[X], ROWS, COLS, COLS, 1), y = tensor(u.b[Y0], ROWS, COLS, COLS, 1);
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_begin_capture(v.s), BP_OK);
  assert_int_equal(bp_unary(v.s, BP_UNARY_RELU, &x, &y), BP_OK);
  assert_int_equal(bp_stream_end_capture(v.s, &g), BP_OK);
  bp_graph_schedule_info_t info = {.struct_size = sizeof info};
  assert_int_equal(bp_graph_schedule(g, &info), BP_OK);
  assert_false(info.scheduled);
  assert_int_equal(info.runs, 1);
  assert_string_equal(placement(g, 0).device, "partial");
  assert_int_equal(placement(g, 0).reason, BP_GRAPH_PLACE_HERE);
  char text[1024];
  assert_int_equal(bp_graph_explain(g, text, sizeof text, NULL), BP_OK);
  assert_non_null(strstr(text, "not scheduled"));
  assert_int_equal(bp_graph_launch(g, v.s), BP_OK);
  bp_graph_destroy(g);
  bufs_free(&u);
  close_dev(v);
}

/* With fallback off the capture refuses the op, as it always has. */
static void test_fallback_off_refuses_capture(void **state) {
  (void)state;
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .no_fallback = true};
  dev_t_ v = open_partial(&cfg);
  bufs_t u = bufs_make(v.d, 5);
  bp_tensor_t x = tensor(u.b[X], ROWS, COLS, COLS, 1), y = tensor(u.b[Y0], ROWS, COLS, COLS, 1);
  double before[N], after[N];
  read_all(u.b[Y0], before);
  assert_int_equal(bp_stream_begin_capture(v.s), BP_OK);
  assert_int_equal(bp_softmax(v.s, &x, 1, false, &y), BP_ERR_UNSUPPORTED);
  assert_non_null(strstr(bp_last_error(), "softmax"));
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_end_capture(v.s, &g), BP_OK);
  assert_int_equal(bp_graph_size(g), 0);
  read_all(u.b[Y0], after);
  assert_memory_equal(before, after, sizeof before);
  bp_graph_destroy(g);
  bufs_free(&u);
  close_dev(v);
}

static void test_api_arguments(void **state) {
  (void)state;
  dev_t_ v = open_partial(NULL);
  bufs_t u = bufs_make(v.d, 6);
  bp_graph_t *g = capture(v, &u);
  bp_graph_placement_t p = {.struct_size = 4};
  assert_int_equal(bp_graph_placement(g, 0, &p), BP_ERR_INVALID_ARGUMENT);
  p.struct_size = sizeof p;
  assert_int_equal(bp_graph_placement(g, 6, &p), BP_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(bp_last_error(), "past the graph's 6 calls"));
  assert_int_equal(bp_graph_placement(NULL, 0, &p), BP_ERR_INVALID_ARGUMENT);
  bp_graph_schedule_info_t info = {.struct_size = 0};
  assert_int_equal(bp_graph_schedule(g, &info), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_graph_explain(g, NULL, 5, NULL), BP_ERR_INVALID_ARGUMENT);
  size_t len = 0;
  assert_int_equal(bp_graph_explain(g, NULL, 0, &len), BP_OK);
  assert_true(len > 0);
  bp_graph_destroy(g);
  assert_int_equal(bp_graph_explain(g, NULL, 0, &len), BP_ERR_INVALID_ARGUMENT);
  bufs_free(&u);
  close_dev(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mixed_graph_pinned),
      cmocka_unit_test(test_mixed_graph_static),
      cmocka_unit_test(test_refused_at_launch),
      cmocka_unit_test(test_adam_in_a_scheduled_graph),
      cmocka_unit_test(test_supported_graph_not_scheduled),
      cmocka_unit_test(test_fallback_off_refuses_capture),
      cmocka_unit_test(test_api_arguments),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
