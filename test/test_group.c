/*
 * test_group.c — device groups (core/group*.c). A group of "cpu" and the
 * slow fixture device (backend-slow.so, $(B)/test/fixtures/group: plain
 * loops that sleep, memory that is not host memory, so its slices are
 * staged) runs GEMM (split over M, over N, over the batch), attention (over
 * kv heads, over the batch) and conv2d (over the batch), and must match
 * "cpu-ref" within the parity tolerance (tc.h), with both members running
 * a slice. The slow device must get the smaller measured share, measured
 * once and reused from the tuning cache. Real members whose memory is not
 * host memory (PoCL, lavapipe: a case skips when neither is present, and
 * fails when BP_REQUIRE_DEVICES names an absent one) have their slices
 * staged. Members that are the same hardware are refused unless allowed;
 * bad member lists are refused with nothing left open.
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

#include "skip.h"
#include "tc.h"
#include "test_group_cache.h"

static bp_context_t *ctx;
static tc_env_t ref; /* cpu-ref, the single device results are compared with */
static char tmpdir[64];

/* ---- helpers ----------------------------------------------------------------*/

static bp_device_t *group_open(const char *members, bool allow, bool split, uint64_t min_flops) {
  bp_device_group_options_t o = {.struct_size = sizeof o, .allow_shared_hardware = allow,
                                 .split_shared_hardware = split, .min_split_flops = min_flops};
  bp_device_t *g = NULL;
  bp_status_t st = bp_device_group_open(ctx, members, &o, &g);
  if (st != BP_OK) fail_msg("bp_device_group_open(%s): %s", members, bp_last_error());
  return g;
}

static void env_on(tc_env_t *e, bp_device_t *dev) {
  memset(e, 0, sizeof *e);
  e->ctx = ctx;
  e->dev = dev;
  assert_int_equal(bp_stream_create(dev, &e->s), BP_OK);
  bp_device_entry_t en;
  assert_int_equal(bp_device_entry(dev, &en), BP_OK);
  snprintf(e->name, sizeof e->name, "%s", en.info.name);
}

static void env_off(tc_env_t *e) {
  bp_stream_destroy(e->s);
  bp_device_close(e->dev);
}

static bp_device_group_member_t member(bp_device_t *g, uint32_t i) {
  bp_device_group_member_t m;
  assert_int_equal(bp_device_group_info(g, i, &m), BP_OK);
  return m;
}

/* ---- cases: run on the group and on cpu-ref, compare ---------------------- */

typedef bp_status_t (*case_fn)(tc_env_t *e, double **out, int64_t *n);

static tc_tensor_t in(tc_env_t *e, int r, const int64_t *s, tc_layout_t l, uint64_t seed) {
  tc_rng_t rng;
  tc_rng_seed(&rng, seed);
  int64_t n = tc_numel(r, s);
  double *v = malloc(sizeof(double) * (size_t)(n + 1));
  tc_rng_fill(&rng, BP_F32, -1, 1, v, n);
  tc_tensor_t t = tc_tensor(e, BP_F32, r, s, l, v);
  free(v);
  return t;
}

static bp_status_t finish(bp_status_t st, tc_tensor_t *y, double **out, int64_t *n, int nf, tc_tensor_t *f) {
  if (st == BP_OK) {
    *out = tc_download(y);
    *n = y->numel;
    if (tc_outside_changed(y)) st = BP_ERR_INTERNAL; /* wrote between the output's elements */
  }
  for (int i = 0; i < nf; i++) tc_tensor_free(&f[i]);
  tc_tensor_free(y);
  return st;
}

/* m = 67 > n = 23: split over M; A transposed, C strided and read (beta). */
static bp_status_t c_gemm_m(tc_env_t *e, double **out, int64_t *n) {
  const int64_t sa[2] = {29, 67}, sb[2] = {29, 23}, sc[2] = {67, 23};
  tc_tensor_t t[2] = {in(e, 2, sa, TC_STRIDED, 1), in(e, 2, sb, TC_CONTIG, 2)};
  tc_tensor_t y = in(e, 2, sc, TC_STRIDED, 3);
  bp_tensor_t at;
  bp_tensor_transpose(&t[0].t, 0, 1, &at);
  return finish(bp_matmul(e->s, 0.5, &at, &t[1].t, -1.0, &y.t), &y, out, n, 2, t);
}

/* m = 5 < n = 70: split over N, slices interleave in C's rows. */
static bp_status_t c_gemm_n(tc_env_t *e, double **out, int64_t *n) {
  const int64_t sa[2] = {5, 19}, sb[2] = {19, 70}, sc[2] = {5, 70};
  tc_tensor_t t[2] = {in(e, 2, sa, TC_CONTIG, 4), in(e, 2, sb, TC_STRIDED, 5)};
  tc_tensor_t y = in(e, 2, sc, TC_STRIDED, 6);
  return finish(bp_matmul(e->s, 1.0, &t[0].t, &t[1].t, 0.5, &y.t), &y, out, n, 2, t);
}

static bp_status_t c_gemm_batched(tc_env_t *e, double **out, int64_t *n) {
  const int64_t s1[1] = {6 * 33 * 17}, s2[1] = {6 * 33 * 9}, s3[1] = {6 * 17 * 9};
  tc_tensor_t t[2] = {in(e, 1, s1, TC_CONTIG, 7), in(e, 1, s2, TC_CONTIG, 8)};
  tc_tensor_t y = in(e, 1, s3, TC_CONTIG, 9);
  bp_status_t st = bp_gemm_strided_batched(e->s, BP_F32, BP_COL_MAJOR, BP_TRANS, BP_NO_TRANS, 17, 9, 33, 1.0,
                                           t[0].buf, 0, 33, 33 * 17, t[1].buf, 0, 33, 33 * 9, 0.0, y.buf, 0, 17,
                                           17 * 9, 6);
  return finish(st, &y, out, n, 2, t);
}

/* Grouped-query attention: 6 query heads over 3 kv heads, causal. */
static bp_status_t c_attention_heads(tc_env_t *e, double **out, int64_t *n) {
  const int64_t sq[4] = {2, 6, 9, 16}, sk[4] = {2, 3, 13, 16}, sv[4] = {2, 3, 13, 8}, so[4] = {2, 6, 9, 8};
  tc_tensor_t t[3] = {in(e, 4, sq, TC_CONTIG, 10), in(e, 4, sk, TC_STRIDED, 11), in(e, 4, sv, TC_CONTIG, 12)};
  tc_tensor_t y = tc_tensor(e, BP_F32, 4, so, TC_CONTIG, NULL);
  return finish(bp_attention(e->s, &t[0].t, &t[1].t, &t[2].t, 0, true, &y.t), &y, out, n, 3, t);
}

/* One kv head: split over the batch. */
static bp_status_t c_attention_batch(tc_env_t *e, double **out, int64_t *n) {
  const int64_t sq[4] = {4, 2, 7, 8}, sk[4] = {4, 1, 7, 8}, so[4] = {4, 2, 7, 8};
  tc_tensor_t t[3] = {in(e, 4, sq, TC_CONTIG, 13), in(e, 4, sk, TC_CONTIG, 14), in(e, 4, sk, TC_CONTIG, 15)};
  tc_tensor_t y = tc_tensor(e, BP_F32, 4, so, TC_STRIDED, NULL);
  return finish(bp_attention(e->s, &t[0].t, &t[1].t, &t[2].t, 0, false, &y.t), &y, out, n, 3, t);
}

static bp_status_t c_conv(tc_env_t *e, double **out, int64_t *n) {
  const int64_t sx[4] = {5, 4, 9, 9}, sw[4] = {6, 2, 3, 3}, sb[1] = {6}, sy[4] = {5, 6, 5, 9};
  tc_tensor_t t[3] = {in(e, 4, sx, TC_STRIDED, 16), in(e, 4, sw, TC_CONTIG, 17), in(e, 1, sb, TC_CONTIG, 18)};
  tc_tensor_t y = tc_tensor(e, BP_F32, 4, sy, TC_CONTIG, NULL);
  bp_conv2d_params_t p = {.struct_size = sizeof p, .stride_h = 2, .pad_h = 1, .pad_w = 2, .dilation_w = 2,
                          .groups = 2};
  return finish(bp_conv2d(e->s, &p, &t[0].t, &t[1].t, &t[2].t, &y.t), &y, out, n, 3, t);
}

/* The slow member has no softmax: a whole op runs on the member that can. */
static bp_status_t c_softmax(tc_env_t *e, double **out, int64_t *n) {
  const int64_t s[2] = {7, 33};
  tc_tensor_t t[1] = {in(e, 2, s, TC_STRIDED, 19)};
  tc_tensor_t y = tc_tensor(e, BP_F32, 2, s, TC_CONTIG, NULL);
  return finish(bp_softmax(e->s, &t[0].t, 1, false, &y.t), &y, out, n, 1, t);
}

/* Runs c on g and on cpu-ref; expects a match and, when split, a slice on
 * every member. */
static void check_case(tc_env_t *g, case_fn c, const char *what, double red, bool split) {
  uint32_t count = 0;
  assert_int_equal(bp_device_group_size(g->dev, &count), BP_OK);
  uint64_t before[BP_GROUP_MAX_MEMBERS];
  for (uint32_t i = 0; i < count; i++) before[i] = member(g->dev, i).slices_run;
  double *y = NULL, *r = NULL;
  int64_t ny = 0, nr = 0;
  bp_status_t st = c(g, &y, &ny);
  tc_expect_status(g, st, BP_OK, "%s on the group", what);
  tc_expect_status(&ref, c(&ref, &r, &nr), BP_OK, "%s on cpu-ref", what);
  if (y && r && ny == nr) tc_expect_close(g, BP_F32, y, r, ny, red, "%s", what);
  for (uint32_t i = 0; split && i < count; i++) {
    bp_device_group_member_t m = member(g->dev, i);
    tc_expect_status(g, m.slices_run > before[i] ? BP_OK : BP_ERR_INTERNAL, BP_OK, "%s: member %s ran a slice",
                     what, m.entry.info.name);
  }
  free(y);
  free(r);
}

static void run_cases(tc_env_t *g, bool split) {
  check_case(g, c_gemm_m, "gemm split over M", 29, split);
  check_case(g, c_gemm_n, "gemm split over N", 19, split);
  check_case(g, c_gemm_batched, "strided batched gemm", 33, split);
  check_case(g, c_attention_heads, "attention over kv heads", 16, split);
  check_case(g, c_attention_batch, "attention over the batch", 8, split);
  check_case(g, c_conv, "conv2d over the batch", 18, split);
  check_case(g, c_softmax, "softmax (whole, on cpu)", 33, false);
}

/* ---- tests ------------------------------------------------------------------*/

static void test_split_matches_single_device(void **state) {
  (void)state;
  TC_BEGIN();
  const char *const devs[] = {"cpu", "slow0"};
  gc_plant_times(ctx, tmpdir, "equal.json", devs, 2, 10.0);
  tc_env_t g;
  env_on(&g, group_open("cpu,slow", false, false, 1));
  bp_device_group_member_t a = member(g.dev, 0), b = member(g.dev, 1);
  assert_string_equal(a.entry.info.name, "cpu");
  assert_string_equal(b.entry.info.name, "slow0");
  /* Read from the planted cache at open: equal times, equal shares. */
  assert_true(a.share[BP_GROUP_SPLIT_GEMM] > 0.49 && a.share[BP_GROUP_SPLIT_GEMM] < 0.51);
  assert_true(b.share[BP_GROUP_SPLIT_CONV2D] > 0.49 && b.share[BP_GROUP_SPLIT_CONV2D] < 0.51);
  run_cases(&g, true);
  env_off(&g);
  TC_END();
}

static void test_small_ops_run_whole(void **state) {
  (void)state;
  TC_BEGIN();
  const char *const devs[] = {"cpu", "slow0"};
  gc_plant_times(ctx, tmpdir, "equal.json", devs, 2, 10.0);
  tc_env_t g;
  env_on(&g, group_open("cpu,slow", false, false, 0)); /* default threshold */
  run_cases(&g, false);
  tc_expect_status(&g, member(g.dev, 1).slices_run == 0 ? BP_OK : BP_ERR_INTERNAL, BP_OK,
                   "small ops are not split");
  tc_expect_status(&g, member(g.dev, 0).ops_run >= 7 ? BP_OK : BP_ERR_INTERNAL, BP_OK,
                   "small ops run whole on the best member");
  env_off(&g);
  TC_END();
}

static void test_slow_member_gets_smaller_share(void **state) {
  (void)state;
  TC_BEGIN();
  char path[PATH_MAX];
  gc_use_cache(tmpdir, "measured.json", path, sizeof path);
  unlink(path);
  tc_env_t g;
  env_on(&g, group_open("cpu,slow", false, false, 1));
  assert_true(member(g.dev, 1).gflops[BP_GROUP_SPLIT_GEMM] == 0); /* nothing cached yet */
  assert_int_equal(bp_device_group_calibrate(g.dev, false), BP_OK);
  bp_device_group_member_t fast = member(g.dev, 0), slow = member(g.dev, 1);
  for (int f = 0; f < BP_GROUP_SPLIT_COUNT; f++) {
    assert_true(fast.gflops[f] > 0 && slow.gflops[f] > 0);
    assert_true(slow.share[f] > 0 && slow.share[f] < fast.share[f]);
    assert_true(fast.share[f] + slow.share[f] > 0.999 && fast.share[f] + slow.share[f] < 1.001);
  }
  printf("  measured gemm: cpu %.2f GFLOP/s (share %.4f), slow0 %.2f GFLOP/s (share %.4f)\n",
         fast.gflops[0], fast.share[0], slow.gflops[0], slow.share[0]);
  /* The measurements went to the cache file, and a new group reads them. */
  char *text = gc_slurp(path);
  assert_non_null(text);
  assert_non_null(strstr(text, "\"group.gemm\""));
  assert_non_null(strstr(text, "\"slow0\""));
  free(text);
  tc_env_t g2;
  env_on(&g2, group_open("cpu,slow", false, false, 1));
  assert_true(member(g2.dev, 1).gflops[BP_GROUP_SPLIT_GEMM] > 0);
  double reread = member(g2.dev, 1).share[BP_GROUP_SPLIT_GEMM]; /* the cache keeps ms to 6 places */
  assert_true(reread > slow.share[BP_GROUP_SPLIT_GEMM] * 0.99 && reread < slow.share[BP_GROUP_SPLIT_GEMM] * 1.01);
  env_off(&g2);
  /* A tall GEMM gives the slow member a few rows; the result is right. */
  const int64_t sa[2] = {16384, 16}, sb[2] = {16, 8}, sc[2] = {16384, 8};
  tc_tensor_t a = in(&g, 2, sa, TC_CONTIG, 30), b = in(&g, 2, sb, TC_CONTIG, 31);
  tc_tensor_t c = tc_tensor(&g, BP_F32, 2, sc, TC_CONTIG, NULL);
  tc_expect_status(&g, bp_matmul(g.s, 1.0, &a.t, &b.t, 0.0, &c.t), BP_OK, "tall gemm");
  double *y = tc_download(&c), *va = tc_values(&a), *vb = tc_values(&b), *r = malloc(sizeof(double) * 16384 * 8);
  for (int64_t i = 0; i < 16384; i++)
    for (int64_t j = 0; j < 8; j++) {
      double acc = 0;
      for (int64_t k = 0; k < 16; k++) acc += va[i * 16 + k] * vb[k * 8 + j];
      r[i * 8 + j] = acc;
    }
  tc_expect_close(&g, BP_F32, y, r, 16384 * 8, 16, "tall gemm");
  tc_expect_status(&g, member(g.dev, 1).slices_run > 0 ? BP_OK : BP_ERR_INTERNAL, BP_OK, "slow member ran a slice");
  free(y), free(va), free(vb), free(r);
  tc_tensor_free(&a), tc_tensor_free(&b), tc_tensor_free(&c);
  env_off(&g);
  TC_END();
}

static void test_same_hardware_refused_unless_allowed(void **state) {
  (void)state;
  TC_BEGIN();
  const char *const devs[] = {"cpu", "cpu-ref"};
  gc_plant_times(ctx, tmpdir, "shared.json", devs, 2, 10.0);
  bp_device_t *g = (bp_device_t *)&g;
  tc_expect_reject(&ref, bp_device_group_open(ctx, "cpu,cpu-ref", NULL, &g), BP_ERR_INVALID_ARGUMENT,
                   "same hardware", "cpu and cpu-ref share the host CPU");
  assert_null(g);
  tc_expect_reject(&ref, bp_device_group_open(ctx, "cpu,cpu", NULL, &g), BP_ERR_INVALID_ARGUMENT, "same hardware",
                   "one device twice");
  bp_device_group_options_t bad = {.struct_size = sizeof bad, .split_shared_hardware = true};
  tc_expect_reject(&ref, bp_device_group_open(ctx, "cpu,cpu-ref", &bad, &g), BP_ERR_INVALID_ARGUMENT,
                   "allow_shared_hardware", "split without allow");
  /* Allowed: the hardware is counted once, its fastest member works. */
  g = group_open("cpu,cpu-ref", true, false, 1);
  bp_device_group_member_t a = member(g, 0), b = member(g, 1);
  assert_int_equal(a.hardware, b.hardware);
  assert_true(a.share[BP_GROUP_SPLIT_GEMM] == 1.0 && b.share[BP_GROUP_SPLIT_GEMM] == 0.0);
  bp_device_close(g);
  /* Allowed and split: shared like separate hardware. */
  tc_env_t e;
  env_on(&e, group_open("cpu,cpu-ref", true, true, 1));
  assert_true(member(e.dev, 1).share[BP_GROUP_SPLIT_GEMM] > 0.49);
  check_case(&e, c_gemm_m, "gemm on cpu + cpu-ref", 29, true);
  check_case(&e, c_conv, "conv2d on cpu + cpu-ref", 18, true);
  env_off(&e);
  TC_END();
}

/* bp_device_group_calibrate on a plain device (what bp tune does) stores
 * its speeds, and a group opened afterwards has them without measuring. */
static void test_calibrate_plain_devices_first(void **state) {
  (void)state;
  TC_BEGIN();
  char path[PATH_MAX];
  gc_use_cache(tmpdir, "plain.json", path, sizeof path);
  unlink(path);
  const char *const sels[] = {"cpu", "slow"};
  for (int i = 0; i < 2; i++) {
    bp_device_t *d = NULL;
    assert_int_equal(bp_device_open(ctx, sels[i], NULL, &d), BP_OK);
    tc_expect_status(&ref, bp_device_group_calibrate(d, false), BP_OK, "calibrate %s alone", sels[i]);
    bp_device_group_member_t m;
    tc_expect_reject(&ref, bp_device_group_info(d, 0, &m), BP_ERR_INVALID_ARGUMENT, "not a device group",
                     "info on plain %s", sels[i]);
    bp_device_close(d);
  }
  char *text = gc_slurp(path);
  assert_non_null(text);
  assert_non_null(strstr(text, "\"group.conv2d\""));
  free(text);
  bp_device_t *g = group_open("cpu,slow", false, false, 0);
  for (uint32_t i = 0; i < 2; i++)
    for (int f = 0; f < BP_GROUP_SPLIT_COUNT; f++)
      tc_expect_status(&ref, member(g, i).gflops[f] > 0 ? BP_OK : BP_ERR_INTERNAL, BP_OK,
                       "member %u family %d read from the cache at open", i, f);
  bp_device_close(g);
  TC_END();
}

/* The name of backend's best device, or false when it has none. */
static bool device_name(const char *backend, char *out, size_t size) {
  bp_device_t *d = NULL;
  if (bp_device_open(ctx, backend, NULL, &d) != BP_OK) return false;
  bp_device_entry_t e;
  bp_device_entry(d, &e);
  snprintf(out, size, "%s", e.info.name);
  bp_device_close(d);
  return true;
}

/* Real members whose memory is not host memory (PoCL, lavapipe): their
 * slices, and whole ops, are staged through their own buffers. */
static void test_staged_real_devices(void **state) {
  (void)state;
  TC_BEGIN();
#ifdef __SANITIZE_THREAD__
  TEST_SKIP_CASE("under ThreadSanitizer: the PoCL and lavapipe drivers are not instrumented");
#endif
  static const char *const backends[] = {"opencl", "vulkan"};
  char names[2][128];
  bool have[2];
  int present = 0;
  for (int i = 0; i < 2; i++) {
    have[i] = device_name(backends[i], names[i], sizeof names[i]);
    present += have[i];
    if (!have[i] && test_device_required(backends[i]))
      tc_expect_status(&ref, BP_ERR_UNAVAILABLE, BP_OK, "no %s device although BP_REQUIRE_DEVICES names it",
                       backends[i]);
  }
  if (!present) TEST_SKIP_CASE("no OpenCL or Vulkan device: no member whose memory must be staged");
  const char *const devs[] = {"cpu", names[0], names[1]};
  gc_plant_times(ctx, tmpdir, "real.json", devs, 3, 10.0);
  for (int i = 0; i < 2; i++) {
    if (!have[i]) continue;
    char list[64];
    snprintf(list, sizeof list, "cpu,%s", backends[i]);
    tc_env_t e;
    env_on(&e, group_open(list, true, true, 1));
    check_case(&e, c_gemm_n, "gemm split over N", 19, true);
    check_case(&e, c_attention_heads, "attention over kv heads", 16, true);
    check_case(&e, c_conv, "conv2d over the batch", 18, true);
    env_off(&e);
  }
  if (present == 2) { /* both staged; softmax runs whole, staged, on the better */
    tc_env_t e;
    env_on(&e, group_open("opencl,vulkan", true, true, 1));
    check_case(&e, c_gemm_m, "gemm split over M", 29, true);
    check_case(&e, c_softmax, "softmax (whole, staged)", 33, false);
    env_off(&e);
  }
  TC_END();
}

/* A group takes what any device takes: events, a captured graph (replayed
 * through the group, split included) and copies to another device. */
static void test_group_is_a_device(void **state) {
  (void)state;
  TC_BEGIN();
  const char *const devs[] = {"cpu", "slow0"};
  gc_plant_times(ctx, tmpdir, "equal.json", devs, 2, 10.0);
  tc_env_t g;
  env_on(&g, group_open("cpu,slow", false, false, 1));
  const int64_t sa[2] = {40, 24}, sb[2] = {24, 30}, sc[2] = {40, 30};
  tc_tensor_t a = in(&g, 2, sa, TC_CONTIG, 40), b = in(&g, 2, sb, TC_CONTIG, 41);
  tc_tensor_t c = tc_tensor(&g, BP_F32, 2, sc, TC_CONTIG, NULL);
  bp_event_t *e0 = NULL, *e1 = NULL;
  bp_graph_t *graph = NULL;
  assert_int_equal(bp_event_create(g.dev, &e0), BP_OK);
  assert_int_equal(bp_event_create(g.dev, &e1), BP_OK);
  assert_int_equal(bp_stream_begin_capture(g.s), BP_OK);
  assert_int_equal(bp_matmul(g.s, 1.0, &a.t, &b.t, 0.0, &c.t), BP_OK);
  assert_int_equal(bp_stream_end_capture(g.s, &graph), BP_OK);
  uint64_t slices = member(g.dev, 1).slices_run;
  assert_int_equal(bp_event_record(e0, g.s), BP_OK);
  tc_expect_status(&g, bp_graph_launch(graph, g.s), BP_OK, "graph launch on the group");
  assert_int_equal(bp_event_record(e1, g.s), BP_OK);
  assert_int_equal(bp_stream_wait_event(g.s, e1), BP_OK);
  assert_int_equal(bp_event_synchronize(e1), BP_OK);
  double ms = -1;
  tc_expect_status(&g, bp_event_elapsed_ms(e0, e1, &ms), BP_OK, "elapsed");
  tc_expect_status(&g, ms >= 0 ? BP_OK : BP_ERR_INTERNAL, BP_OK, "elapsed %.3f ms >= 0", ms);
  tc_expect_status(&g, member(g.dev, 1).slices_run > slices ? BP_OK : BP_ERR_INTERNAL, BP_OK,
                   "the replayed GEMM was split");
  double *y = tc_download(&c), *va = tc_values(&a), *vb = tc_values(&b), r[40 * 30];
  for (int i = 0; i < 40; i++)
    for (int j = 0; j < 30; j++) {
      r[i * 30 + j] = 0;
      for (int k = 0; k < 24; k++) r[i * 30 + j] += va[i * 24 + k] * vb[k * 30 + j];
    }
  tc_expect_close(&g, BP_F32, y, r, 40 * 30, 24, "graph GEMM on the group");
  /* A copy to another device sees the result. */
  bp_buffer_t *other = NULL;
  float got[40 * 30];
  assert_int_equal(bp_buffer_alloc(ref.dev, sizeof got, &other), BP_OK);
  tc_expect_status(&g, bp_buffer_copy(other, 0, c.buf, 0, sizeof got), BP_OK, "copy group -> cpu-ref");
  assert_int_equal(bp_buffer_read(other, 0, got, sizeof got), BP_OK);
  int wrong = 0;
  for (int i = 0; i < 40 * 30; i++) wrong += (double)got[i] != y[i];
  tc_expect_status(&g, wrong ? BP_ERR_INTERNAL : BP_OK, BP_OK, "%d values differ after the copy", wrong);
  bp_buffer_free(other);
  free(y), free(va), free(vb);
  bp_graph_destroy(graph);
  bp_event_destroy(e0), bp_event_destroy(e1);
  tc_tensor_free(&a), tc_tensor_free(&b), tc_tensor_free(&c);
  env_off(&g);
  TC_END();
}

/* Two staged members whose slices interleave in C's rows (split over N):
 * each stages C in before either writes, so a member that copied back more
 * than its own elements would undo the other's. */
static void test_staged_slices_interleave(void **state) {
  (void)state;
  TC_BEGIN();
  const char *const devs[] = {"slow0"};
  gc_plant_times(ctx, tmpdir, "slow.json", devs, 1, 10.0);
  tc_env_t e;
  env_on(&e, group_open("slow,slow", true, true, 1));
  check_case(&e, c_gemm_n, "gemm split over N on two staged members", 19, true);
  check_case(&e, c_gemm_m, "gemm split over M on two staged members", 29, true);
  env_off(&e);
  TC_END();
}

/* "all": the best device of each piece of hardware, so here cpu (for the
 * host CPU, which cpu-ref, PoCL and lavapipe share) and slow0. */
static void test_all_members(void **state) {
  (void)state;
  TC_BEGIN();
  bp_device_t *g = group_open("all", false, false, 0);
  uint32_t n = 0;
  assert_int_equal(bp_device_group_size(g, &n), BP_OK);
  bool cpu = false, slow = false;
  for (uint32_t i = 0; i < n; i++) {
    bp_device_group_member_t m = member(g, i);
    cpu |= !strcmp(m.entry.info.name, "cpu");
    slow |= !strcmp(m.entry.info.name, "slow0");
    tc_expect_status(&ref, strcmp(m.entry.info.name, "cpu-ref") ? BP_OK : BP_ERR_INTERNAL, BP_OK,
                     "cpu-ref shares the host CPU with cpu: not in \"all\"");
    for (uint32_t j = 0; j < i; j++)
      tc_expect_status(&ref, member(g, j).hardware != m.hardware ? BP_OK : BP_ERR_INTERNAL, BP_OK,
                       "\"all\" members %u and %u are distinct hardware", j, i);
  }
  tc_expect_status(&ref, cpu && slow ? BP_OK : BP_ERR_INTERNAL, BP_OK, "\"all\" has cpu and slow0 (%u members)", n);
  bp_device_close(g);
  TC_END();
}

static int still_open;
static void count_still_open(bp_log_level_t level, const char *cat, const char *msg, void *user) {
  (void)level, (void)cat, (void)user;
  if (strstr(msg, "still open")) still_open++;
}

static void test_bad_member_lists_refused(void **state) {
  (void)state;
  TC_BEGIN();
  bp_context_t *c2 = NULL;
  assert_int_equal(bp_context_create(NULL, &c2), BP_OK);
  static const struct {
    const char *list, *needle;
    bp_status_t st;
  } bad[] = {
      {"cpu,,", "empty entry", BP_ERR_INVALID_ARGUMENT}, {",cpu", "empty entry", BP_ERR_INVALID_ARGUMENT},
      {"cpu,", "empty entry", BP_ERR_INVALID_ARGUMENT},  {"cpu", "one device", BP_ERR_INVALID_ARGUMENT},
      {"", "empty", BP_ERR_INVALID_ARGUMENT},            {NULL, "NULL", BP_ERR_INVALID_ARGUMENT},
      {"cpu,nosuch", "nosuch", BP_ERR_NOT_FOUND},        {"cpu,cpu,cpu,cpu,cpu,cpu,cpu,cpu,cpu", "more than", BP_ERR_INVALID_ARGUMENT},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    bp_device_t *g = (bp_device_t *)&g;
    tc_expect_reject(&ref, bp_device_group_open(c2, bad[i].list, NULL, &g), bad[i].st, bad[i].needle, "list \"%s\"",
                     bad[i].list ? bad[i].list : "(null)");
    tc_expect_status(&ref, g == NULL ? BP_OK : BP_ERR_INTERNAL, BP_OK, "no group for \"%s\"",
                     bad[i].list ? bad[i].list : "(null)");
  }
  bp_device_group_member_t m;
  tc_expect_reject(&ref, bp_device_group_info(ref.dev, 0, &m), BP_ERR_INVALID_ARGUMENT, "not a device group",
                   "info on a plain device");
  /* Nothing was left open: destroying the context closes nothing. */
  still_open = 0;
  bp_log_set_handler(count_still_open, NULL);
  bp_context_destroy(c2);
  bp_log_set_handler(NULL, NULL);
  tc_expect_status(&ref, still_open == 0 ? BP_OK : BP_ERR_INTERNAL, BP_OK, "%d device(s) left open", still_open);
  TC_END();
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/bp-test-group-XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  char exe[PATH_MAX], dir[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 1;
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(dir, sizeof dir, "%s/fixtures/group", exe);
  bp_context_options_t o = {.struct_size = sizeof o, .plugin_dir = dir};
  if (bp_context_create(&o, &ctx) != BP_OK || !tc_env_open(&ref, ctx, "cpu-ref")) {
    fprintf(stderr, "test_group: no context or no cpu-ref: %s\n", bp_last_error());
    return 1;
  }
  bp_device_t *probe = NULL;
  if (bp_device_open(ctx, "slow", NULL, &probe) != BP_OK) {
    fprintf(stderr, "test_group: the fixture backend-slow.so in %s does not open: %s\n", dir, bp_last_error());
    return 1;
  }
  bp_device_close(probe);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_matches_single_device),
      cmocka_unit_test(test_small_ops_run_whole),
      cmocka_unit_test(test_slow_member_gets_smaller_share),
      cmocka_unit_test(test_same_hardware_refused_unless_allowed),
      cmocka_unit_test(test_staged_slices_interleave),
      cmocka_unit_test(test_staged_real_devices),
      cmocka_unit_test(test_group_is_a_device),
      cmocka_unit_test(test_all_members),
      cmocka_unit_test(test_calibrate_plain_devices_first),
      cmocka_unit_test(test_bad_member_lists_refused),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  tc_env_close(&ref);
  bp_context_destroy(ctx);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "test_group: could not remove %s\n", tmpdir);
  return failed ? 1 : 0;
}
