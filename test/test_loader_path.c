/*
 * test_loader_path.c — where the loader looks: BACKPLANE_PLUGIN_PATH in its
 * order, then the build-time directory, then options.plugin_dir; the
 * backend-*.so pattern; name order inside a directory; first of a name wins.
 */
#include "test_loader_util.h"

/* Index of the report whose path is dir/file, -1 if none. */
static int report_index(const bp_context_t *ctx, const char *dir, const char *file) {
  char want[PATH_MAX + 64];
  snprintf(want, sizeof want, "%s/%s", dir, file);
  uint32_t n = 0;
  assert_int_equal(bp_context_plugin_count(ctx, &n), BP_OK);
  for (uint32_t i = 0; i < n; i++) {
    bp_plugin_report_t r;
    assert_int_equal(bp_context_plugin_report(ctx, i, &r), BP_OK);
    if (!strcmp(r.path, want)) return (int)i;
  }
  return -1;
}

static bp_plugin_report_t report_at(const bp_context_t *ctx, int i) {
  bp_plugin_report_t r;
  assert_true(i >= 0);
  assert_int_equal(bp_context_plugin_report(ctx, (uint32_t)i, &r), BP_OK);
  return r;
}

static bp_context_t *open_with_env(const char *env, const char *plugin_dir, bool only) {
  if (env)
    setenv("BACKPLANE_PLUGIN_PATH", env, 1);
  else
    unsetenv("BACKPLANE_PLUGIN_PATH");
  bp_context_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.plugin_dir = plugin_dir;
  o.only_plugin_dir = only;
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(&o, &ctx), BP_OK);
  return ctx;
}

/* Three directories holding the same plugin: the environment's in its order
 * come first, the application's directory last; the first copy wins and
 * every later one names it. */
static void check_order(bool reversed) {
  char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], env[3 * PATH_MAX];
  tl_mkdtemp(a, sizeof a);
  tl_mkdtemp(b, sizeof b);
  tl_mkdtemp(c, sizeof c);
  tl_add(a, "good", "good");
  tl_add(b, "good", "good");
  tl_add(c, "good", "good");
  tl_add_cpu(c);
  const char *first = reversed ? b : a, *second = reversed ? a : b;
  snprintf(env, sizeof env, "%s:%s", first, second);
  bp_context_t *ctx = open_with_env(env, c, false);
  int i1 = report_index(ctx, first, "backend-good.so");
  int i2 = report_index(ctx, second, "backend-good.so");
  int i3 = report_index(ctx, c, "backend-good.so");
  assert_true(i1 >= 0 && i1 < i2 && i2 < i3);
  bp_plugin_report_t r1 = report_at(ctx, i1), r2 = report_at(ctx, i2), r3 = report_at(ctx, i3);
  assert_true(r1.loaded);
  assert_false(r2.loaded);
  assert_false(r3.loaded);
  char path1[PATH_MAX + 32];
  snprintf(path1, sizeof path1, "%s/backend-good.so", first);
  assert_non_null(strstr(r2.reason, "duplicate"));
  assert_non_null(strstr(r2.reason, path1));
  assert_non_null(strstr(r3.reason, path1));
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  unsetenv("BACKPLANE_PLUGIN_PATH");
  tl_rmtree(a);
  tl_rmtree(b);
  tl_rmtree(c);
}

static void test_env_then_plugin_dir(void **state) {
  (void)state;
  check_order(false);
}

static void test_env_order_reversed(void **state) {
  (void)state;
  check_order(true);
}

/* only_plugin_dir: the environment's directories are not even listed. */
static void test_only_plugin_dir(void **state) {
  (void)state;
  char a[PATH_MAX], c[PATH_MAX];
  tl_mkdtemp(a, sizeof a);
  tl_mkdtemp(c, sizeof c);
  tl_add(a, "good", "good");
  tl_add_cpu(c);
  bp_context_t *ctx = open_with_env(a, c, true);
  assert_int_equal(report_index(ctx, a, "backend-good.so"), -1);
  uint32_t n = 0;
  assert_int_equal(bp_context_plugin_count(ctx, &n), BP_OK);
  assert_int_equal(n, 1);
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);

  /* Without the flag the environment's plugin is there. */
  ctx = open_with_env(a, c, false);
  assert_true(report_index(ctx, a, "backend-good.so") >= 0);
  bp_context_destroy(ctx);
  unsetenv("BACKPLANE_PLUGIN_PATH");
  tl_rmtree(a);
  tl_rmtree(c);
}

/* Empty entries, missing directories and a file in the path are skipped. */
static void test_odd_path_entries(void **state) {
  (void)state;
  char a[PATH_MAX], c[PATH_MAX], env[4 * PATH_MAX], file[PATH_MAX + 32];
  tl_mkdtemp(a, sizeof a);
  tl_mkdtemp(c, sizeof c);
  tl_add(a, "good", "good");
  tl_add_cpu(c);
  snprintf(file, sizeof file, "%s/backend-good.so", a);
  snprintf(env, sizeof env, ":/nonexistent/bp-dir::%s:%s::", file, a);
  bp_context_t *ctx = open_with_env(env, c, false);
  assert_true(report_index(ctx, a, "backend-good.so") >= 0);
  tl_expect_loaded(ctx, "backend-good.so");
  uint32_t n = 0;
  assert_int_equal(bp_context_plugin_count(ctx, &n), BP_OK);
  for (uint32_t i = 0; i < n; i++) {
    bp_plugin_report_t r = report_at(ctx, (int)i);
    assert_null(strstr(r.path, "/nonexistent/"));
  }
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  unsetenv("BACKPLANE_PLUGIN_PATH");
  tl_rmtree(a);
  tl_rmtree(c);
}

/* Only backend-*.so names are candidates, taken in name order: of two
 * plugins with one name, the file that sorts first wins. */
static void test_pattern_and_name_order(void **state) {
  (void)state;
  char d[PATH_MAX];
  tl_mkdtemp(d, sizeof d);
  tl_add(d, "dup-b", "a"); /* backend-a.so, named "dup" */
  tl_add(d, "dup-a", "b"); /* backend-b.so, named "dup" */
  tl_add_cpu(d);
  static const char *const ignored[] = {"libbackend-x.so", "backend-x.so.1", "backend-x.txt",
                                        "xbackend-y.so", "backend-x.SO"};
  char from[PATH_MAX], to[PATH_MAX + 64];
  tl_broken_path("good", from, sizeof from);
  for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++) {
    snprintf(to, sizeof to, "%s/%s", d, ignored[i]);
    tl_copy_file(from, to, 0755);
  }
  bp_context_t *ctx = tl_open_dir(d, false, 0);
  uint32_t n = 0;
  assert_int_equal(bp_context_plugin_count(ctx, &n), BP_OK);
  assert_int_equal(n, 3);
  assert_int_equal(report_index(ctx, d, "backend-a.so"), 0);
  assert_int_equal(report_index(ctx, d, "backend-b.so"), 1);
  assert_int_equal(report_index(ctx, d, "backend-cpu.so"), 2);
  tl_expect_loaded(ctx, "backend-a.so");
  tl_expect_refused(ctx, "backend-b.so", BP_STAGE_VALIDATE, BP_ERR_INCOMPATIBLE,
                    "duplicate of plugin 'dup'", "/backend-a.so");
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(d);
}

/* No plugin at all: the context opens, lists nothing, and asking for a
 * device fails cleanly. */
static void test_no_plugins(void **state) {
  (void)state;
  char d[PATH_MAX];
  tl_mkdtemp(d, sizeof d);
  bp_context_t *ctx = tl_open_dir(d, false, 0);
  uint32_t n = 1;
  assert_int_equal(bp_context_plugin_count(ctx, &n), BP_OK);
  assert_int_equal(n, 0);
  assert_int_equal(bp_context_device_count(ctx, &n), BP_OK);
  assert_int_equal(n, 0);
  bp_device_t *dev = (bp_device_t *)&n;
  assert_true(bp_device_open(ctx, NULL, NULL, &dev) < 0);
  assert_null(dev);
  assert_true(bp_last_error()[0] != '\0');
  bp_context_destroy(ctx);

  /* A plugin_dir that does not exist is the same. */
  ctx = tl_open_dir("/nonexistent/bp-plugins", false, 0);
  assert_int_equal(bp_context_plugin_count(ctx, &n), BP_OK);
  assert_int_equal(n, 0);
  bp_context_destroy(ctx);
  tl_rmtree(d);
}

/* The directories searched, in order, absent ones included, are listed by
 * bp_context_search_dir, and a failed open with no device names them. */
static void test_search_dirs(void **state) {
  (void)state;
  char d[PATH_MAX];
  tl_mkdtemp(d, sizeof d);
  bp_context_t *ctx = open_with_env("/nonexistent/bp-env-a::/nonexistent/bp-env-a", d, false);
  uint32_t n = 0;
  assert_int_equal(bp_context_search_dir_count(ctx, &n), BP_OK);
  assert_true(n >= 2);
  char dir[PATH_MAX];
  bool present = true;
  assert_int_equal(bp_context_search_dir(ctx, 0, dir, sizeof dir, &present), BP_OK);
  assert_string_equal(dir, "/nonexistent/bp-env-a"); /* once, though listed twice */
  assert_false(present);
  assert_int_equal(bp_context_search_dir(ctx, n - 1, dir, sizeof dir, &present), BP_OK);
  assert_string_equal(dir, d); /* the application's directory comes last */
  assert_true(present);
  assert_int_equal(bp_context_search_dir(ctx, n, dir, sizeof dir, NULL), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_context_search_dir(ctx, 0, NULL, 0, NULL), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_context_search_dir_count(ctx, NULL), BP_ERR_INVALID_ARGUMENT);
  bp_device_t *dev = NULL;
  assert_true(bp_device_open(ctx, NULL, NULL, &dev) < 0);
  assert_non_null(strstr(bp_last_error(), "searched /nonexistent/bp-env-a (absent), "));
  assert_non_null(strstr(bp_last_error(), d));
  bp_context_destroy(ctx);
  unsetenv("BACKPLANE_PLUGIN_PATH");
  tl_rmtree(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_env_then_plugin_dir),
      cmocka_unit_test(test_env_order_reversed),
      cmocka_unit_test(test_only_plugin_dir),
      cmocka_unit_test(test_odd_path_entries),
      cmocka_unit_test(test_pattern_and_name_order),
      cmocka_unit_test(test_no_plugins),
      cmocka_unit_test(test_search_dirs),
  };
  return cmocka_run_group_tests(tests, tl_setup, NULL);
}
