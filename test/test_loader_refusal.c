/*
 * test_loader_refusal.c — files the loader must refuse before (or at) dlopen:
 * not a library, empty, wrong architecture, a directory, a symlink loop,
 * modes that let others write, a missing dependency, no descriptor symbol.
 * Each refusal names its reason, and the CPU plugin next to it still works.
 */
#include "skip.h"
#include "test_loader_util.h"

static void test_text_file(void **state) {
  (void)state;
  tl_refusal_case("text", "text", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                  "not an ELF file", NULL);
}

static void test_empty_file(void **state) {
  (void)state;
  tl_refusal_case("empty", "empty", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                  "empty file", NULL);
}

static void test_wrong_class(void **state) {
  (void)state;
  tl_refusal_case("elf32", "elf32", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                  "wrong architecture", "32-bit");
}

static void test_wrong_machine(void **state) {
  (void)state;
  tl_refusal_case("aarch64", "aarch64", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                  "wrong architecture", "aarch64");
}

static void test_missing_dependency(void **state) {
  (void)state;
  tl_refusal_case("needsdep", "needsdep", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                  "dlopen failed", "libbpbrokendep.so");
}

static void test_missing_symbol(void **state) {
  (void)state;
  tl_refusal_case("nosym", "nosym", BP_STAGE_SYMBOL, BP_ERR_INCOMPATIBLE,
                  "no 'bp_plugin_descriptor' symbol", NULL);
}

static void test_directory(void **state) {
  (void)state;
  char dir[PATH_MAX], sub[PATH_MAX + 32];
  tl_mkdtemp(dir, sizeof dir);
  snprintf(sub, sizeof sub, "%s/backend-x.so", dir);
  assert_int_equal(mkdir(sub, 0755), 0);
  tl_add_cpu(dir);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  tl_expect_refused(ctx, "backend-x.so", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                    "not a regular file", NULL);
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

static void test_symlink_loop(void **state) {
  (void)state;
  char dir[PATH_MAX], a[PATH_MAX + 32], b[PATH_MAX + 32];
  tl_mkdtemp(dir, sizeof dir);
  snprintf(a, sizeof a, "%s/backend-loop-a.so", dir);
  snprintf(b, sizeof b, "%s/backend-loop-b.so", dir);
  assert_int_equal(symlink("backend-loop-b.so", a), 0);
  assert_int_equal(symlink("backend-loop-a.so", b), 0);
  tl_add_cpu(dir);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  tl_expect_refused(ctx, "backend-loop-a.so", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                    "cannot stat", strerror(ELOOP));
  tl_expect_refused(ctx, "backend-loop-b.so", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                    "cannot stat", strerror(ELOOP));
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

static void test_dangling_symlink(void **state) {
  (void)state;
  char dir[PATH_MAX], a[PATH_MAX + 32];
  tl_mkdtemp(dir, sizeof dir);
  snprintf(a, sizeof a, "%s/backend-gone.so", dir);
  assert_int_equal(symlink("/nonexistent/backend-gone.so", a), 0);
  tl_add_cpu(dir);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  tl_expect_refused(ctx, "backend-gone.so", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                    "cannot stat", strerror(ENOENT));
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

/* A working plugin, made world-writable: refused; the same file with a
 * safe mode loads, so the mode alone is the reason. */
static void test_world_writable_file(void **state) {
  (void)state;
  char dir[PATH_MAX], f[PATH_MAX + 32];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "good", "ww");
  tl_add_cpu(dir);
  snprintf(f, sizeof f, "%s/backend-ww.so", dir);
  assert_int_equal(chmod(f, 0666), 0);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  tl_expect_refused(ctx, "backend-ww.so", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                    "file is writable by others", "666");
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);

  assert_int_equal(chmod(f, 0755), 0);
  ctx = tl_open_dir(dir, false, 0);
  tl_expect_loaded(ctx, "backend-ww.so");
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

/* Group-writable is refused unless the group is root's. */
static void test_group_writable_file(void **state) {
  (void)state;
  if (geteuid() != 0) TEST_SKIP_CASE("needs root (chown to another group)");
  char dir[PATH_MAX], f[PATH_MAX + 32];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "good", "gw");
  tl_add_cpu(dir);
  snprintf(f, sizeof f, "%s/backend-gw.so", dir);
  assert_int_equal(chown(f, 0, 0), 0);
  assert_int_equal(chmod(f, 0775), 0);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  tl_expect_loaded(ctx, "backend-gw.so");
  bp_context_destroy(ctx);

  assert_int_equal(chown(f, 0, 12345), 0);
  assert_int_equal(chmod(f, 0775), 0); /* chown clears nothing we need, but be exact */
  ctx = tl_open_dir(dir, false, 0);
  tl_expect_refused(ctx, "backend-gw.so", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                    "file is writable by others", "775");
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

/* Every plugin of a world-writable directory is refused, the directory is
 * named; plugins elsewhere on the path still load. */
static void test_world_writable_dir(void **state) {
  (void)state;
  char ww[PATH_MAX], safe[PATH_MAX];
  tl_mkdtemp(ww, sizeof ww);
  tl_mkdtemp(safe, sizeof safe);
  tl_add(ww, "good", "inww");
  tl_add_cpu(safe);
  assert_int_equal(chmod(ww, 0777), 0);
  setenv("BACKPLANE_PLUGIN_PATH", ww, 1);
  bp_context_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.plugin_dir = safe;
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(&o, &ctx), BP_OK);
  tl_expect_refused(ctx, "backend-inww.so", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE,
                    "directory", "is writable by others");
  bp_plugin_report_t r;
  assert_true(tl_find(ctx, "backend-inww.so", &r));
  assert_non_null(strstr(r.reason, ww));
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  unsetenv("BACKPLANE_PLUGIN_PATH");
  tl_rmtree(ww);
  tl_rmtree(safe);
}

/* All of the above in one directory: each refused, none stops the others. */
static void test_all_together(void **state) {
  (void)state;
  static const char *const names[] = {"text", "empty", "elf32", "aarch64",
                                      "needsdep", "nosym"};
  char dir[PATH_MAX], sub[PATH_MAX + 32];
  tl_mkdtemp(dir, sizeof dir);
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) tl_add(dir, names[i], names[i]);
  snprintf(sub, sizeof sub, "%s/backend-dir.so", dir);
  assert_int_equal(mkdir(sub, 0755), 0);
  tl_add(dir, "good", "zz-good"); /* sorts after them all */
  tl_add_cpu(dir);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  uint32_t n = 0;
  assert_int_equal(bp_context_plugin_count(ctx, &n), BP_OK);
  assert_int_equal(n, sizeof names / sizeof *names + 3);
  for (uint32_t i = 0; i < n; i++) {
    bp_plugin_report_t r;
    assert_int_equal(bp_context_plugin_report(ctx, i, &r), BP_OK);
    bool want_loaded = strstr(r.path, "/backend-zz-good.so") || strstr(r.path, "/backend-cpu.so");
    assert_int_equal(r.loaded, want_loaded);
    if (!want_loaded) assert_true(r.reason[0] != '\0');
  }
  tl_expect_loaded(ctx, "backend-zz-good.so");
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text_file),
      cmocka_unit_test(test_empty_file),
      cmocka_unit_test(test_wrong_class),
      cmocka_unit_test(test_wrong_machine),
      cmocka_unit_test(test_missing_dependency),
      cmocka_unit_test(test_missing_symbol),
      cmocka_unit_test(test_directory),
      cmocka_unit_test(test_symlink_loop),
      cmocka_unit_test(test_dangling_symlink),
      cmocka_unit_test(test_world_writable_file),
      cmocka_unit_test(test_group_writable_file),
      cmocka_unit_test(test_world_writable_dir),
      cmocka_unit_test(test_all_together),
  };
  return cmocka_run_group_tests(tests, tl_setup, NULL);
}
