/*
 * test_manifest.c — plugin manifests (core/manifest.c, docs/plugin-abi.md
 * section 15): the strict reader on good and bad files, a mismatched
 * plugin refused before dlopen (the fixture aborts in its constructor, so
 * surviving proves it was never mapped), a plugin without a manifest loaded
 * with a note, the build tree's manifests matching their plugins, and the
 * listing `bp devices --no-load` is built on.
 */
#include "test_loader_util.h"

static char tm_dir[PATH_MAX];

static int setup(void **state) {
  tl_setup(state);
  unsetenv("BACKPLANE_PLUGIN_PATH");
  unsetenv("BACKPLANE_LAYERS");
  tl_mkdtemp(tm_dir, sizeof tm_dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tl_rmtree(tm_dir);
  return 0;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
}

/* Runs the build's manifest writer on lib; extra: more options. */
static void gen_manifest(const char *lib, const char *extra) {
  char cmd[3 * PATH_MAX], out[PATH_MAX];
  snprintf(out, sizeof out, "%.*s.json", (int)(strlen(lib) - 3), lib);
  snprintf(cmd, sizeof cmd, "'%s/bin/bp-manifest' %s '%s' '%s'", tl_build, extra, lib, out);
  assert_int_equal(system(cmd), 0);
}

static void append_byte(const char *path) {
  FILE *f = fopen(path, "a");
  assert_non_null(f);
  fputc(0, f);
  assert_int_equal(fclose(f), 0);
}

static const char good_sha[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* Reads text as a manifest; returns the status and copies the reason. */
static bp_status_t read_text(const char *text, bp_manifest_info_t *m) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/backend-x.json", tm_dir);
  write_text(path, text);
  return bp_manifest_read(path, m);
}

static void expect_bad(const char *text, const char *rule) {
  bp_manifest_info_t m;
  bp_status_t st = read_text(text, &m);
  if (st == BP_OK || !strstr(m.reason, rule))
    fail_msg("manifest accepted or wrong rule (want %s): %s\n%s", rule, m.reason, text);
}

static void test_reader(void **state) {
  (void)state;
  char text[1024];
  snprintf(
      text, sizeof text,
      "{\"manifest_version\": 1, \"name\": \"x\", \"version\": \"2.\\u00e9\", \"abi_major\": 1,"
      " \"abi_minor\": 7, \"library\": \"backend-x.so\", \"future\": {\"a\": [1, -2.5e3, true,"
      " null, \"s\\n\"]}, \"kinds\": [\"cpu\", \"software\"], \"dlopens\": [], \"sha256\": \"%s\"}",
      good_sha);
  bp_manifest_info_t m;
  assert_int_equal(read_text(text, &m), BP_OK);
  assert_string_equal(m.name, "x");
  assert_string_equal(m.version, "2.\xc3\xa9");
  assert_int_equal(m.abi_major, 1);
  assert_int_equal(m.abi_minor, 7);
  assert_string_equal(m.kinds, "cpu,software");
  assert_string_equal(m.dlopens, "");
  assert_string_equal(m.sha256, good_sha);
  /* Each required key missing, a duplicate, a wrong type, bad syntax. */
  expect_bad("{\"manifest_version\": 1}", "MANIFEST-3");
  snprintf(text, sizeof text, "{\"manifest_version\": 1, \"name\": \"x\", \"name\": \"y\"}");
  expect_bad(text, "MANIFEST-3");
  snprintf(text, sizeof text,
           "{\"manifest_version\": 1, \"name\": \"x\", \"version\": \"1\", \"abi_major\": \"1\","
           " \"abi_minor\": 0, \"library\": \"backend-x.so\", \"sha256\": \"%s\"}",
           good_sha);
  expect_bad(text, "MANIFEST-3");
  snprintf(text, sizeof text,
           "{\"manifest_version\": 1, \"name\": \"x\", \"version\": \"1\", \"abi_major\": 1,"
           " \"abi_minor\": 0, \"library\": \"backend-x.so\", \"sha256\": \"%.63s\"}",
           good_sha);
  expect_bad(text, "MANIFEST-3");
  expect_bad("{\"manifest_version\": 1, \"unknown\": [1, 2,]}", "MANIFEST-3");
  expect_bad("{\"manifest_version\": 1, \"unknown\": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}",
             "MANIFEST-3");
  expect_bad("{} trailing", "MANIFEST-3");
  expect_bad("{\"manifest_version\": 2, \"name\": 3}", "MANIFEST-4");
  /* Over the size limit: refused unread. */
  char *big = malloc(70000);
  assert_non_null(big);
  memset(big, ' ', 69999);
  big[0] = '{';
  big[69998] = '}';
  big[69999] = '\0';
  expect_bad(big, "MANIFEST-2");
  free(big);
}

/* The fixture's constructor aborts: each mismatch must be refused before
 * dlopen, in this very process (no isolation to catch the abort). */
static void expect_refused_in_process(const char *rule) {
  bp_context_options_t o = {.struct_size = sizeof o,
                            .plugin_dir = tm_dir,
                            .only_plugin_dir = true,
                            .in_process_probe = true};
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(&o, &ctx), BP_OK);
  tl_expect_refused(ctx, "backend-ctorabort.so", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE, rule, NULL);
  bp_context_destroy(ctx);
}

static void copy_abort_fixture(char *lib, size_t size) {
  char from[PATH_MAX];
  snprintf(from, sizeof from, "%s/test/fixtures/backend-ctorabort.so", tl_build);
  snprintf(lib, size, "%s/backend-ctorabort.so", tm_dir);
  tl_copy_file(from, lib, 0755);
}

static void test_mismatch_refused_before_dlopen(void **state) {
  (void)state;
  char lib[PATH_MAX];
  copy_abort_fixture(lib, sizeof lib);
  /* The content changed after the manifest was written. */
  gen_manifest(lib, "--name ctorabort --version 1.0 --abi 1.3");
  append_byte(lib);
  expect_refused_in_process("MANIFEST-7");
  /* Another ABI major, with a matching hash. */
  gen_manifest(lib, "--name ctorabort --version 1.0 --abi 2.0");
  expect_refused_in_process("MANIFEST-6");
  /* The manifest names another plugin. */
  gen_manifest(lib, "--name other --version 1.0 --abi 1.3");
  expect_refused_in_process("MANIFEST-5");
  /* The manifest is writable by anyone. */
  gen_manifest(lib, "--name ctorabort --version 1.0 --abi 1.3");
  char man[PATH_MAX];
  snprintf(man, sizeof man, "%s/backend-ctorabort.json", tm_dir);
  assert_int_equal(chmod(man, 0666), 0);
  expect_refused_in_process("MANIFEST-1");
  assert_int_equal(chmod(man, 0644), 0);
  /* The control: with the manifest matching, the fixture does run (and
   * abort) once loaded; done in a child so only the child dies. */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    bp_context_options_t o = {.struct_size = sizeof o,
                              .plugin_dir = tm_dir,
                              .only_plugin_dir = true,
                              .in_process_probe = true};
    bp_context_t *ctx = NULL;
    bp_context_create(&o, &ctx);
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
  remove(lib);
  remove(man);
}

typedef struct log_capture {
  bool note;
} log_capture_t;

static void capture(bp_log_level_t level, const char *category, const char *message, void *user) {
  (void)level;
  (void)category;
  if (strstr(message, "no manifest") && strstr(message, "MANIFEST-8"))
    ((log_capture_t *)user)->note = true;
}

static void test_without_manifest_loads_with_note(void **state) {
  (void)state;
  char dir[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "good", "good");
  log_capture_t cap = {false};
  bp_log_level_t was = bp_log_get_level();
  bp_log_set_level(BP_LOG_INFO);
  bp_log_set_handler(capture, &cap);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  bp_log_set_handler(NULL, NULL);
  bp_log_set_level(was);
  tl_expect_loaded(ctx, "backend-good.so");
  assert_true(cap.note);
  bp_context_destroy(ctx);
  /* With its manifest it loads as well, and verifies. */
  char lib[PATH_MAX];
  snprintf(lib, sizeof lib, "%s/backend-good.so", dir);
  gen_manifest(lib, "");
  ctx = tl_open_dir(dir, false, 0);
  tl_expect_loaded(ctx, "backend-good.so");
  bp_context_destroy(ctx);
  bp_manifest_info_t m;
  assert_int_equal(bp_manifest_verify(lib, &m), BP_OK);
  assert_string_equal(m.name, "good");
  append_byte(lib);
  assert_int_equal(bp_manifest_verify(lib, &m), BP_ERR_INCOMPATIBLE);
  assert_non_null(strstr(m.reason, "MANIFEST-7"));
  tl_rmtree(dir);
}

/* The build writes a manifest beside each plugin, matching it. */
static void test_build_tree_manifests(void **state) {
  (void)state;
  char lib[PATH_MAX];
  tl_cpu_path(lib, sizeof lib);
  bp_manifest_info_t m;
  bp_status_t st = bp_manifest_verify(lib, &m);
  if (st != BP_OK) fail_msg("%s: %s", lib, m.reason);
  assert_string_equal(m.name, "cpu");
  assert_string_equal(m.library, "backend-cpu.so");
  assert_int_equal(m.abi_major, 1);
  assert_string_equal(m.kinds, "cpu");
  assert_int_equal(bp_manifest_verify(NULL, &m), BP_ERR_INVALID_ARGUMENT);
  char none[PATH_MAX];
  snprintf(none, sizeof none, "%s/backend-none.so", tm_dir);
  assert_int_equal(bp_manifest_verify(none, &m), BP_ERR_NOT_FOUND);
}

static void test_list(void **state) {
  (void)state;
  char dir[PATH_MAX], path[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  char text[512];
  snprintf(text, sizeof text,
           "{\"manifest_version\": 1, \"name\": \"a\", \"version\": \"1\", \"abi_major\": 1,"
           " \"abi_minor\": 0, \"library\": \"backend-a.so\", \"sha256\": \"%s\"}",
           good_sha);
  snprintf(path, sizeof path, "%s/backend-a.json", dir);
  write_text(path, text);
  snprintf(path, sizeof path, "%s/backend-b.json", dir);
  write_text(path, "{broken");
  snprintf(path, sizeof path, "%s/other.json", dir);
  write_text(path, text);
  uint32_t n = 0;
  assert_int_equal(bp_manifest_list(dir, NULL, 0, &n), BP_OK);
  bp_manifest_info_t *all = calloc(n, sizeof *all);
  assert_non_null(all);
  uint32_t n2 = 0;
  assert_int_equal(bp_manifest_list(dir, all, n, &n2), BP_OK);
  assert_int_equal(n, n2);
  int seen = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (strncmp(all[i].path, dir, strlen(dir))) continue;
    seen++;
    if (strstr(all[i].path, "backend-a.json")) {
      assert_int_equal(all[i].status, BP_OK);
      assert_string_equal(all[i].name, "a");
      assert_non_null(strstr(all[i].plugin_path, "/backend-a.so"));
    } else {
      assert_non_null(strstr(all[i].path, "backend-b.json"));
      assert_int_equal(all[i].status, BP_ERR_INCOMPATIBLE);
      assert_non_null(strstr(all[i].reason, "MANIFEST-3"));
    }
  }
  assert_int_equal(seen, 2);
  free(all);
  assert_int_equal(bp_manifest_list(dir, NULL, 1, &n), BP_ERR_INVALID_ARGUMENT);
  tl_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reader),
      cmocka_unit_test(test_mismatch_refused_before_dlopen),
      cmocka_unit_test(test_without_manifest_loads_with_note),
      cmocka_unit_test(test_build_tree_manifests),
      cmocka_unit_test(test_list),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
