/*
 * test_layers.c — layers (layer-api.h; core/layers.c, core/layer_chain.c;
 * plugins/layers): the chain's order, layers refused with their rule while
 * the device keeps working, the trace layer's JSON, the stats layer's
 * counts, and the check layer catching a plugin that computes wrong.
 */
#include "test_loader_util.h"

#include <signal.h>

#include "skip.h"

static char lt_dir[PATH_MAX]; /* a private plugin directory per test */

static void lt_link(const char *from, const char *name) {
  char to[PATH_MAX];
  snprintf(to, sizeof to, "%s/%s", lt_dir, name);
  assert_int_equal(symlink(from, to), 0);
}

/* lt_dir with the CPU plugin, the shipped layers and the test layers. */
static int setup(void **state) {
  tl_setup(state);
  unsetenv("BACKPLANE_PLUGIN_PATH");
  unsetenv("BACKPLANE_LAYERS");
  /* Read once per process, when the check layer is first loaded. */
  setenv("BACKPLANE_CHECK_SAMPLE", "1", 1);
  setenv("BACKPLANE_STATS_AT_EXIT", "0", 1);
  setenv("BACKPLANE_CHECK_AT_EXIT", "0", 1);
  tl_mkdtemp(lt_dir, sizeof lt_dir);
  tl_add_cpu(lt_dir);
  char from[PATH_MAX], name[64];
  static const char *const shipped[] = {"trace", "stats", "check", "passthrough"};
  for (int i = 0; i < 4; i++) {
    snprintf(from, sizeof from, "%s/plugins/layer-%s.so", tl_build, shipped[i]);
    snprintf(name, sizeof name, "layer-%s.so", shipped[i]);
    lt_link(from, name);
  }
  static const char *const fixtures[] = {"orda", "ordb", "initfail", "adds", "abinew"};
  for (int i = 0; i < 5; i++) {
    snprintf(from, sizeof from, "%s/test/layers/layer-%s.so", tl_build, fixtures[i]);
    snprintf(name, sizeof name, "layer-%s.so", fixtures[i]);
    tl_copy_file(
        from,
        (snprintf(from + PATH_MAX / 2, PATH_MAX / 2, "%s/%s", lt_dir, name), from + PATH_MAX / 2),
        0755);
  }
  snprintf(from, sizeof from, "%s/test/layers/backend-wrong.so", tl_build);
  lt_link(from, "backend-wrong.so");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tl_rmtree(lt_dir);
  return 0;
}

static bp_context_t *open_with_layers(const char *layers) {
  bp_context_options_t o = {
      .struct_size = sizeof o, .plugin_dir = lt_dir, .only_plugin_dir = true, .layers = layers};
  bp_context_t *ctx = NULL;
  bp_status_t st = bp_context_create(&o, &ctx);
  if (st != BP_OK) fail_msg("bp_context_create: %s", bp_last_error());
  return ctx;
}

/* Fills an 8x8 f32 buffer with value on device sel and returns y[0]. */
static float fill_and_read(bp_context_t *ctx, const char *sel, double value) {
  bp_device_t *dev = NULL;
  if (bp_device_open(ctx, sel, NULL, &dev) != BP_OK) fail_msg("open %s: %s", sel, bp_last_error());
  bp_buffer_t *buf = NULL;
  bp_stream_t *s = NULL;
  assert_int_equal(bp_buffer_alloc(dev, 64 * sizeof(float), &buf), BP_OK);
  assert_int_equal(bp_stream_create(dev, &s), BP_OK);
  int64_t shape[2] = {8, 8};
  bp_tensor_t y;
  assert_int_equal(bp_tensor_init(buf, 0, BP_F32, 2, shape, NULL, &y), BP_OK);
  assert_int_equal(bp_fill(s, &y, value), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  float out[64];
  assert_int_equal(bp_buffer_read(buf, 0, out, sizeof out), BP_OK);
  bp_stream_destroy(s);
  bp_buffer_free(buf);
  bp_device_close(dev);
  return out[0];
}

static void expect_layer(const bp_context_t *ctx, const char *name, bool loaded, const char *rule) {
  uint32_t n = 0;
  assert_int_equal(bp_context_layer_count(ctx, &n), BP_OK);
  for (uint32_t i = 0; i < n; i++) {
    bp_layer_report_t r;
    assert_int_equal(bp_context_layer_report(ctx, i, &r), BP_OK);
    if (strcmp(r.name, name)) continue;
    if (r.loaded != loaded || (rule && !strstr(r.reason, rule)))
      fail_msg("layer %s: loaded %d (want %d), reason \"%s\" (want %s)", name, r.loaded, loaded,
               r.reason, rule ? rule : "none");
    return;
  }
  fail_msg("no report for layer %s", name);
}

/* The first named is on top: it sees the call first. */
static void test_order(void **state) {
  (void)state;
  bp_context_t *ctx = open_with_layers("orda,ordb");
  expect_layer(ctx, "orda", true, NULL);
  expect_layer(ctx, "ordb", true, NULL);
  assert_true(fill_and_read(ctx, "cpu", 0) == 12.0f); /* (0*10+1)*10+2 */
  bp_context_destroy(ctx);
  ctx = open_with_layers("ordb,orda");
  assert_true(fill_and_read(ctx, "cpu", 0) == 21.0f);
  bp_context_destroy(ctx);
  /* BACKPLANE_LAYERS when the option is NULL; "" means none. */
  setenv("BACKPLANE_LAYERS", " orda ", 1);
  ctx = open_with_layers(NULL);
  assert_true(fill_and_read(ctx, "cpu", 3) == 31.0f);
  bp_context_destroy(ctx);
  ctx = open_with_layers("");
  assert_true(fill_and_read(ctx, "cpu", 3) == 3.0f);
  bp_context_destroy(ctx);
  unsetenv("BACKPLANE_LAYERS");
}

static void capture_layer6(bp_log_level_t level, const char *category, const char *message,
                           void *user) {
  (void)level;
  (void)category;
  if (strstr(message, "layer 'adds' refused on device 'cpu'") && strstr(message, "LAYER-6"))
    *(bool *)user = true;
}

/* Each refused layer leaves the device working, without it. */
static void test_refused_layers(void **state) {
  (void)state;
  bool layer6 = false;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/layer-notalayer.so", lt_dir);
  char good[PATH_MAX];
  tl_broken_path("good", good, sizeof good);
  tl_copy_file(good, path, 0755);
  bp_context_t *ctx = open_with_layers("nosuch,Bad!,initfail,notalayer,abinew,adds,orda,orda");
  expect_layer(ctx, "nosuch", false, "LAYER-1");
  expect_layer(ctx, "initfail", false, "LAYER-5");
  expect_layer(ctx, "notalayer", false, "LAYER-3");
  expect_layer(ctx, "abinew", false, "LAYER-4");
  expect_layer(ctx, "adds", true, NULL); /* loads; refused on each device */
  uint32_t n = 0;
  assert_int_equal(bp_context_layer_count(ctx, &n), BP_OK);
  assert_int_equal(n, 8);
  bp_layer_report_t r;
  assert_int_equal(bp_context_layer_report(ctx, 1, &r), BP_OK);
  assert_non_null(strstr(r.reason, "LAYER-1")); /* not a layer name */
  assert_int_equal(bp_context_layer_report(ctx, 7, &r), BP_OK);
  assert_non_null(strstr(r.reason, "LAYER-7")); /* listed twice */
  /* adds is left out (LAYER-6), orda stays: 0 -> 1. */
  bp_log_set_handler(capture_layer6, &layer6);
  assert_true(fill_and_read(ctx, "cpu", 0) == 1.0f);
  bp_log_set_handler(NULL, NULL);
  assert_true(layer6);
  bp_context_destroy(ctx);
  /* The trust and manifest rules apply to layers too (LAYER-2). */
  assert_int_equal(chmod(path, 0666), 0);
  ctx = open_with_layers("notalayer");
  expect_layer(ctx, "notalayer", false, "TRUST-3");
  expect_layer(ctx, "notalayer", false, "LAYER-2");
  bp_context_destroy(ctx);
  remove(path);
  snprintf(path, sizeof path, "%s/layer-orda.so", lt_dir);
  char cmd[3 * PATH_MAX];
  snprintf(cmd, sizeof cmd,
           "'%s/bin/bp-manifest' --name orda --version 0 --abi 1.0 '%s' '%s/layer-orda.json'",
           tl_build, path, lt_dir);
  assert_int_equal(system(cmd), 0);
  FILE *f = fopen(path, "a");
  assert_non_null(f);
  fputc(0, f);
  fclose(f);
  ctx = open_with_layers("orda");
  expect_layer(ctx, "orda", false, "MANIFEST-7");
  assert_true(fill_and_read(ctx, "cpu", 5) == 5.0f);
  bp_context_destroy(ctx);
  snprintf(path, sizeof path, "%s/layer-orda.json", lt_dir);
  remove(path);
}

static void run_some_ops(bp_context_t *ctx, const char *sel, int fills, int adds) {
  bp_device_t *dev = NULL;
  if (bp_device_open(ctx, sel, NULL, &dev) != BP_OK) fail_msg("open %s: %s", sel, bp_last_error());
  bp_buffer_t *buf = NULL;
  bp_stream_t *s = NULL;
  assert_int_equal(bp_buffer_alloc(dev, 3 * 64 * sizeof(float), &buf), BP_OK);
  assert_int_equal(bp_stream_create(dev, &s), BP_OK);
  int64_t shape[2] = {8, 8};
  bp_tensor_t t[3];
  for (int i = 0; i < 3; i++)
    assert_int_equal(
        bp_tensor_init(buf, (uint64_t)i * 64 * sizeof(float), BP_F32, 2, shape, NULL, &t[i]),
        BP_OK);
  for (int i = 0; i < fills; i++) assert_int_equal(bp_fill(s, &t[i % 2], 1.5 + i), BP_OK);
  for (int i = 0; i < adds; i++)
    assert_int_equal(bp_binary(s, BP_BINARY_ADD, &t[0], &t[1], &t[2]), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  bp_stream_destroy(s);
  bp_buffer_free(buf);
  bp_device_close(dev);
}

/* The counter after "op": "<op>" for device "cpu" in a stats summary. */
static unsigned long long stats_value(const char *json, const char *op, const char *key) {
  char want[128];
  snprintf(want, sizeof want, "\"device\": \"cpu\", \"op\": \"%s\"", op);
  const char *p = strstr(json, want);
  if (!p) return 0;
  snprintf(want, sizeof want, "\"%s\": ", key);
  p = strstr(p, want);
  assert_non_null(p);
  return strtoull(p + strlen(want), NULL, 10);
}

static void test_stats_counts(void **state) {
  (void)state;
  bp_context_t *ctx = open_with_layers("stats");
  static char before[8192], after[8192];
  size_t len = 0;
  assert_int_equal(bp_context_layer_summary(ctx, "stats", before, sizeof before, &len), BP_OK);
  assert_true(len < sizeof before);
  run_some_ops(ctx, "cpu", 3, 2);
  assert_int_equal(bp_context_layer_summary(ctx, "stats", after, sizeof after, &len), BP_OK);
  assert_int_equal(stats_value(after, "fill", "calls") - stats_value(before, "fill", "calls"), 3);
  assert_int_equal(stats_value(after, "binary", "calls") - stats_value(before, "binary", "calls"),
                   2);
  assert_int_equal(stats_value(after, "fill", "bytes") - stats_value(before, "fill", "bytes"),
                   3 * 256);
  assert_int_equal(stats_value(after, "binary", "bytes") - stats_value(before, "binary", "bytes"),
                   2 * 3 * 256);
  assert_int_equal(stats_value(after, "binary", "failed"), 0);
  /* A truncated summary says how long the whole is. */
  char small[16];
  assert_int_equal(bp_context_layer_summary(ctx, "stats", small, sizeof small, &len), BP_OK);
  assert_true(len > sizeof small && strlen(small) == sizeof small - 1);
  assert_int_equal(bp_context_layer_summary(ctx, "trace", small, sizeof small, &len),
                   BP_ERR_NOT_FOUND);
  bp_context_destroy(ctx);
}

/* A child runs ops under the trace layer and exits (the file is written at
 * exit); python3 checks the JSON against the trace event format. */
static void test_trace_json(void **state) {
  (void)state;
  if (system("python3 -c 'import json' >/dev/null 2>&1") != 0) {
    TEST_SKIP_CASE("no python3 to parse the trace");
    return;
  }
  char file[PATH_MAX + 32];
  snprintf(file, sizeof file, "%s/trace.json", lt_dir);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv("BACKPLANE_TRACE_FILE", file, 1);
    bp_context_t *ctx = open_with_layers("trace");
    run_some_ops(ctx, "cpu", 2, 1);
    bp_device_t *dev = NULL; /* and two copies, which are traced too */
    bp_buffer_t *b = NULL;
    float host[64] = {0};
    if (bp_device_open(ctx, "cpu", NULL, &dev) != BP_OK || bp_buffer_alloc(dev, sizeof host, &b) != BP_OK ||
        bp_buffer_write(b, 0, host, sizeof host) != BP_OK || bp_buffer_read(b, 0, host, sizeof host) != BP_OK)
      exit(1);
    bp_buffer_free(b);
    bp_device_close(dev);
    bp_context_destroy(ctx);
    exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char cmd[2 * PATH_MAX];
  snprintf(cmd, sizeof cmd,
           "python3 - '%s' <<'EOF'\n"
           "import json, sys\n"
           "d = json.load(open(sys.argv[1]))\n"
           "ev = d['traceEvents']\n"
           "ops = [e for e in ev if e['ph'] == 'X' and e['cat'] == 'op']\n"
           "copies = [e for e in ev if e['ph'] == 'X' and e['cat'] == 'copy']\n"
           "assert [(e['name'], e['args']['bytes']) for e in copies] == "
           "[('mem_write', 256), ('mem_read', 256)], copies\n"
           "assert all(e['ph'] in ('X', 'M') for e in ev)\n"
           "for e in ops:\n"
           "    for k in ('name', 'cat', 'ts', 'dur', 'pid', 'tid', 'args'):\n"
           "        assert k in e, k\n"
           "    assert isinstance(e['ts'], (int, float)) and isinstance(e['dur'], (int, float)) "
           "and e['dur'] >= 0\n"
           "    a = e['args']\n"
           "    assert a['backend'] == 'cpu' and a['device'] == 'cpu' and a['stream'] and "
           "a['status'] == 0\n"
           "names = [e['name'] for e in ops]\n"
           "assert names == ['fill', 'fill', 'binary'], names\n"
           "assert ops[2]['args']['shapes'] == ['[8,8]'] * 3 and ops[2]['args']['dtypes'] == "
           "['f32'] * 3\n"
           "assert ops[0]['ts'] <= ops[1]['ts'] <= ops[2]['ts']\n"
           "assert any(e['ph'] == 'M' and e['tid'] == ops[0]['tid'] for e in ev)\n"
           "EOF",
           file);
  assert_int_equal(system(cmd), 0);
}

/* A native graph's launch is one graph_launch event; Vulkan has native
 * graphs (lavapipe here). */
static void test_trace_native_graph(void **state) {
  (void)state;
  if (system("python3 -c 'import json' >/dev/null 2>&1") != 0) {
    TEST_SKIP_CASE("no python3 to parse the trace");
    return;
  }
  char file[PATH_MAX + 32], vk[PATH_MAX];
  snprintf(file, sizeof file, "%s/graph.json", lt_dir);
  snprintf(vk, sizeof vk, "%s/plugins/backend-vulkan.so", tl_build);
  if (access(vk, R_OK) != 0) {
    TEST_SKIP_CASE("backend-vulkan.so not built");
    return;
  }
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* exit status: 0 traced, 77 no native graph here, 1 failed */
    setenv("BACKPLANE_TRACE_FILE", file, 1);
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/plugins", tl_build);
    bp_context_options_t o = {
        .struct_size = sizeof o, .plugin_dir = dir, .only_plugin_dir = true, .layers = "trace"};
    bp_context_t *ctx = NULL;
    bp_device_t *dev = NULL;
    bp_stream_t *s = NULL;
    bp_buffer_t *b = NULL;
    bp_graph_t *g = NULL;
    if (bp_context_create(&o, &ctx) != BP_OK || bp_device_open(ctx, "vulkan", NULL, &dev) != BP_OK)
      _exit(77);
    int64_t n = 64;
    bp_tensor_t t;
    if (bp_stream_create(dev, &s) != BP_OK || bp_buffer_alloc(dev, 256, &b) != BP_OK ||
        bp_tensor_init(b, 0, BP_F32, 1, &n, NULL, &t) != BP_OK ||
        bp_stream_begin_capture(s) != BP_OK || bp_fill(s, &t, 1.0) != BP_OK ||
        bp_stream_end_capture(s, &g) != BP_OK || bp_graph_launch(g, s) != BP_OK ||
        bp_graph_launch(g, s) != BP_OK || bp_stream_synchronize(s) != BP_OK)
      _exit(1);
    bool native = bp_graph_is_native(g);
    bp_graph_destroy(g);
    bp_buffer_free(b);
    bp_stream_destroy(s);
    bp_device_close(dev);
    bp_context_destroy(ctx);
    exit(native ? 0 : 77);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    TEST_SKIP_CASE("no Vulkan device with native graphs here");
    return;
  }
  assert_int_equal(WEXITSTATUS(status), 0);
  char cmd[2 * PATH_MAX];
  snprintf(
      cmd, sizeof cmd,
      "python3 -c \"import json,sys; ev=json.load(open(sys.argv[1]))['traceEvents']; "
      "g=[e for e in ev if e['name']=='graph_launch']; assert len(g)==2 and all(e['ph']=='X' and "
      "e['args']['backend']=='vulkan' for e in g), g\" '%s'",
      file);
  assert_int_equal(system(cmd), 0);
}

/* The check layer on the wrong plugin: each fault is found once. */
static void test_check_catches_wrong_plugin(void **state) {
  (void)state;
  bp_context_t *ctx = open_with_layers("check");
  static char before[16384], after[16384];
  size_t len;
  assert_int_equal(bp_context_layer_summary(ctx, "check", before, sizeof before, &len), BP_OK);
  bp_device_t *dev = NULL;
  assert_int_equal(bp_device_open(ctx, "wrong", NULL, &dev), BP_OK);
  bp_buffer_t *buf = NULL;
  bp_stream_t *s = NULL;
  /* Room after y for the sub's stray write to land inside the allocation. */
  assert_int_equal(bp_buffer_alloc(dev, 4 * 64 * sizeof(float), &buf), BP_OK);
  assert_int_equal(bp_stream_create(dev, &s), BP_OK);
  int64_t shape[1] = {64};
  bp_tensor_t a, b, y;
  assert_int_equal(bp_tensor_init(buf, 0, BP_F32, 1, shape, NULL, &a), BP_OK);
  assert_int_equal(bp_tensor_init(buf, 256, BP_F32, 1, shape, NULL, &b), BP_OK);
  assert_int_equal(bp_tensor_init(buf, 512, BP_F32, 1, shape, NULL, &y), BP_OK);
  assert_int_equal(bp_fill(s, &a, 2.0), BP_OK);
  assert_int_equal(bp_fill(s, &b, 3.0), BP_OK);
  static const struct {
    bp_binary_op_t op;
    const char *kind;
  } cases[] = {{BP_BINARY_MAX, NULL},
               {BP_BINARY_ADD, "mismatch"},
               {BP_BINARY_MUL, "nan_inf"},
               {BP_BINARY_SUB, "out_of_extent"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assert_int_equal(bp_binary(s, cases[i].op, &a, &b, &y), BP_OK);
    assert_int_equal(bp_stream_synchronize(s), BP_OK);
    assert_int_equal(bp_context_layer_summary(ctx, "check", after, sizeof after, &len), BP_OK);
    static const char *const kinds[] = {"nan_inf", "out_of_extent", "mismatch"};
    for (int k = 0; k < 3; k++) {
      char key[64];
      snprintf(key, sizeof key, "\"%s\": ", kinds[k]);
      unsigned long long was = strtoull(strstr(before, key) + strlen(key), NULL, 10);
      unsigned long long now = strtoull(strstr(after, key) + strlen(key), NULL, 10);
      bool want = cases[i].kind && !strcmp(cases[i].kind, kinds[k]);
      if (now - was != (want ? 1u : 0u))
        fail_msg("case %zu (%s): %s went %llu -> %llu\n%s", i,
                 cases[i].kind ? cases[i].kind : "control", kinds[k], was, now, after);
    }
    memcpy(before, after, sizeof before);
  }
  assert_non_null(strstr(after, "\"reference\": \"cpu-ref\""));
  bp_stream_destroy(s);
  bp_buffer_free(buf);
  bp_device_close(dev);
  /* The CPU plugin itself passes the same checks. */
  run_some_ops(ctx, "cpu", 2, 2);
  assert_int_equal(bp_context_layer_summary(ctx, "check", after, sizeof after, &len), BP_OK);
  assert_string_equal(strstr(before, "\"nan_inf\""), strstr(after, "\"nan_inf\""));
  bp_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order),
      cmocka_unit_test(test_refused_layers),
      cmocka_unit_test(test_stats_counts),
      cmocka_unit_test(test_trace_json),
      cmocka_unit_test(test_trace_native_graph),
      cmocka_unit_test(test_check_catches_wrong_plugin),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
