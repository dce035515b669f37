/*
 * test_tuning.c — the autotuning cache (core/tuning.c), reached the way a
 * plugin reaches it: through the tune_lookup / tune_store host services the
 * loader hands to init, here those of the fixture backend-tune.so
 * ($(B)/test/fixtures, built from test/fixtures/tune_plugin.c).
 *
 * The cache is one per process, so every test points it at its own file in
 * a fresh temporary directory first.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"
#include "plugin-api.h" /* the plugin ABI: descriptors, versions */

static bp_context_t *ctx;
static const bp_host_services_t *host;
static char dir[PATH_MAX]; /* this test's temporary directory */

/* ---- helpers ----------------------------------------------------------------*/

static bp_tune_key_t key_of(const char *plugin_version, const char *driver, const char *bucket) {
  return (bp_tune_key_t){.struct_size = sizeof(bp_tune_key_t), .plugin = "tune",
                         .plugin_version = plugin_version, .device = "dev0",
                         .driver_version = driver, .op = "gemm", .dtype = "f32",
                         .bucket = bucket};
}

static void path_in_dir(char *out, size_t size, const char *name) {
  snprintf(out, size, "%s/%s", dir, name);
}

static void use_cache(const char *name) {
  char p[PATH_MAX];
  path_in_dir(p, sizeof p, name);
  assert_int_equal(bp_context_set_tuning_cache(ctx, p), BP_OK);
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static bool lookup(const bp_tune_key_t *k, char *out, size_t size) {
  return host->tune_lookup(k, out, size);
}

/* Makes the cache read its file again, as a new process would. */
static void reload(const char *name) {
  use_cache("elsewhere.json");
  char v[16];
  bp_tune_key_t k = key_of("x", "x", "x");
  lookup(&k, v, sizeof v); /* the switch happens at the next call */
  use_cache(name);
}

/* Runs fn with stderr sent to a file; returns what it wrote. */
static char *capture_stderr(void (*fn)(void)) {
  char p[PATH_MAX];
  path_in_dir(p, sizeof p, "stderr.txt");
  fflush(stderr);
  int saved = dup(2), fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(saved >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
  fn();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  return read_text(p);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/bp-tuning-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  unsetenv("BACKPLANE_TUNING_CACHE");
  bp_context_set_tuning_cache(ctx, NULL);
  return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- tests -------------------------------------------------------------------*/

static void test_host_services_present(void **state) {
  (void)state;
  assert_true(host->struct_size >= offsetof(bp_host_services_t, tune_store) + sizeof(void *));
  assert_non_null(host->tune_lookup);
  assert_non_null(host->tune_store);
}

static void test_store_then_lookup(void **state) {
  (void)state;
  use_cache("a/b/tuning.json"); /* directories are created */
  bp_tune_key_t k = key_of("1.0", "drv1", "m1024n1024k1024");
  char v[64];
  assert_false(lookup(&k, v, sizeof v));
  assert_string_equal(v, "");
  host->tune_store(&k, "tile=64x64 unroll=4");
  assert_true(lookup(&k, v, sizeof v));
  assert_string_equal(v, "tile=64x64 unroll=4");
  assert_false(lookup(&k, v, 8)); /* does not fit: a miss, not a truncation */
  host->tune_store(&k, "tile=128x32"); /* replaces */
  reload("a/b/tuning.json");
  assert_true(lookup(&k, v, sizeof v));
  assert_string_equal(v, "tile=128x32");
  char p[PATH_MAX];
  path_in_dir(p, sizeof p, "a/b/tuning.json");
  assert_int_equal(count_of(read_text(p), "\"bucket\""), 1);
}

static void test_other_versions_ignored_and_kept(void **state) {
  (void)state;
  use_cache("v.json");
  bp_tune_key_t old = key_of("1.0", "drv1", "b"), newer = key_of("1.1", "drv1", "b"),
                other_driver = key_of("1.0", "drv2", "b");
  char v[64];
  host->tune_store(&old, "old");
  assert_false(lookup(&newer, v, sizeof v));
  assert_false(lookup(&other_driver, v, sizeof v));
  host->tune_store(&newer, "new");
  reload("v.json");
  assert_true(lookup(&old, v, sizeof v));
  assert_string_equal(v, "old");
  assert_true(lookup(&newer, v, sizeof v));
  assert_string_equal(v, "new");
  char p[PATH_MAX];
  path_in_dir(p, sizeof p, "v.json");
  assert_int_equal(count_of(read_text(p), "\"plugin_version\""), 2);
}

static void touch_corrupt_cache(void) {
  bp_tune_key_t k = key_of("1.0", "drv1", "b");
  char v[64];
  assert_false(lookup(&k, v, sizeof v)); /* the valid-looking entry is not trusted */
  assert_false(lookup(&k, v, sizeof v));
  host->tune_store(&k, "fresh");
  assert_true(lookup(&k, v, sizeof v));
  assert_string_equal(v, "fresh");
}

static void test_corrupt_file_reported_once_and_replaced(void **state) {
  (void)state;
  /* A well-formed first entry, then garbage: nothing of it may be used. */
  static const char *const bad[] = {
      "{\"version\": 1, \"entries\": [{\"plugin\": \"tune\", \"plugin_version\": \"1.0\", "
      "\"device\": \"dev0\", \"driver_version\": \"drv1\", \"op\": \"gemm\", \"dtype\": "
      "\"f32\", \"bucket\": \"b\", \"value\": \"poison\"}, {\"plugin\": ",
      "{\"version\": 1, \"entries\": [{\"plugin\": \"tune\", \"plugin_version\": \"1.0\", "
      "\"device\": \"dev0\", \"driver_version\": \"drv1\", \"op\": \"gemm\", \"dtype\": "
      "\"f32\", \"bucket\": \"b\", \"value\": \"poison\", \"extra\": \"x\"}]}",
      "", "[]", "{\"version\": 1}", "\x01\x02garbage"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char name[32], p[PATH_MAX];
    snprintf(name, sizeof name, "bad%zu.json", i);
    path_in_dir(p, sizeof p, name);
    write_text(p, bad[i]);
    use_cache(name);
    char *err = capture_stderr(touch_corrupt_cache);
    if (count_of(err, "not a valid cache file") != 1)
      fail_msg("case %zu: expected one warning, got: %s", i, err);
    const char *text = read_text(p);
    assert_int_equal(count_of(text, "poison"), 0);
    assert_int_equal(count_of(text, "\"fresh\""), 1);
  }
}

static void test_newer_format_left_untouched(void **state) {
  (void)state;
  static const char newer[] = "{\"version\": 2, \"entries\": {\"something\": \"else\"}}";
  char p[PATH_MAX];
  path_in_dir(p, sizeof p, "newer.json");
  write_text(p, newer);
  use_cache("newer.json");
  bp_tune_key_t k = key_of("1.0", "drv1", "b");
  char v[64];
  host->tune_store(&k, "mine");
  assert_true(lookup(&k, v, sizeof v)); /* kept in memory */
  assert_string_equal(read_text(p), newer);
}

static void test_escapes_round_trip(void **state) {
  (void)state;
  use_cache("esc.json");
  static const char value[] = "quote\" backslash\\ tab\t nl\n utf8 \xc3\xa9 \xf0\x9f\x98\x80";
  bp_tune_key_t k = key_of("1.0", "drv \"1\"", "b\\1");
  char v[128];
  host->tune_store(&k, value);
  reload("esc.json");
  assert_true(lookup(&k, v, sizeof v));
  assert_string_equal(v, value);
  /* \u escapes another writer may use, a surrogate pair included. */
  char p[PATH_MAX];
  path_in_dir(p, sizeof p, "u.json");
  write_text(p, "{\"version\":1,\"entries\":[{\"plugin\":\"tune\",\"plugin_version\":\"1.0\","
                "\"device\":\"dev0\",\"driver_version\":\"drv1\",\"op\":\"gemm\",\"dtype\":"
                "\"f32\",\"bucket\":\"b\",\"value\":\"\\u00e9\\ud83d\\ude00\\/\"}]}\n");
  use_cache("u.json");
  bp_tune_key_t k2 = key_of("1.0", "drv1", "b");
  assert_true(lookup(&k2, v, sizeof v));
  assert_string_equal(v, "\xc3\xa9\xf0\x9f\x98\x80/");
}

#define THREADS 8
#define PER_THREAD 16

static void *store_many(void *arg) {
  int t = (int)(intptr_t)arg;
  for (int i = 0; i < PER_THREAD; i++) {
    char bucket[32], value[32];
    snprintf(bucket, sizeof bucket, "t%d-%d", t, i);
    snprintf(value, sizeof value, "v%d", t * 1000 + i);
    bp_tune_key_t k = key_of("1.0", "drv1", bucket);
    host->tune_store(&k, value);
    char v[32];
    if (!lookup(&k, v, sizeof v) || strcmp(v, value)) return (void *)1;
  }
  return NULL;
}

static void test_concurrent_stores(void **state) {
  (void)state;
  use_cache("threads.json");
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, store_many, (void *)(intptr_t)t), 0);
  for (int t = 0; t < THREADS; t++) {
    void *r;
    pthread_join(th[t], &r);
    assert_null(r);
  }
  reload("threads.json");
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < PER_THREAD; i++) {
      char bucket[32], value[32], v[32];
      snprintf(bucket, sizeof bucket, "t%d-%d", t, i);
      snprintf(value, sizeof value, "v%d", t * 1000 + i);
      bp_tune_key_t k = key_of("1.0", "drv1", bucket);
      assert_true(lookup(&k, v, sizeof v));
      assert_string_equal(v, value);
    }
}

/* Another process stores after this one loaded the file: neither loses. */
static void test_merge_with_other_process(void **state) {
  (void)state;
  use_cache("merge.json");
  bp_tune_key_t a = key_of("1.0", "drv1", "a"), b = key_of("1.0", "drv1", "b"),
                c = key_of("1.0", "drv1", "c");
  char v[16];
  host->tune_store(&a, "A");
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* its own copy of the cache, as a second process has */
    host->tune_store(&b, "B");
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_false(lookup(&b, v, sizeof v)); /* not re-read on lookups */
  host->tune_store(&c, "C");
  assert_true(lookup(&b, v, sizeof v)); /* merged on store */
  reload("merge.json");
  assert_true(lookup(&a, v, sizeof v) && lookup(&b, v, sizeof v) && lookup(&c, v, sizeof v));
}

static void test_path_order(void **state) {
  (void)state;
  char env_path[PATH_MAX], xdg[PATH_MAX], p[PATH_MAX];
  bp_tune_key_t k = key_of("1.0", "drv1", "env");
  assert_int_equal(bp_context_set_tuning_cache(ctx, NULL), BP_OK);
  path_in_dir(xdg, sizeof xdg, "xdg");
  setenv("XDG_CACHE_HOME", xdg, 1);
  path_in_dir(env_path, sizeof env_path, "env.json");
  setenv("BACKPLANE_TUNING_CACHE", env_path, 1);
  host->tune_store(&k, "1");
  assert_non_null(read_text(env_path)); /* the variable beats the default */
  unsetenv("BACKPLANE_TUNING_CACHE");
  host->tune_store(&k, "2");
  path_in_dir(p, sizeof p, "xdg/backplane/tuning.json");
  assert_non_null(read_text(p)); /* the XDG default */
  setenv("BACKPLANE_TUNING_CACHE", env_path, 1);
  use_cache("app.json"); /* the application beats the variable */
  host->tune_store(&k, "3");
  path_in_dir(p, sizeof p, "app.json");
  assert_int_equal(count_of(read_text(p), "\"3\""), 1);
  assert_int_equal(count_of(read_text(env_path), "\"3\""), 0);
  bp_context_set_tuning_cache(ctx, NULL);
  setenv("BACKPLANE_TUNING_CACHE", "", 1); /* empty: memory only */
  host->tune_store(&k, "4");
  char v[8];
  assert_true(lookup(&k, v, sizeof v));
  assert_string_equal(v, "4");
  assert_int_equal(count_of(read_text(env_path), "\"4\""), 0);
  unsetenv("XDG_CACHE_HOME");
}

static void test_bad_arguments(void **state) {
  (void)state;
  use_cache("args.json");
  bp_tune_key_t k = key_of("1.0", NULL, "b");
  char v[16] = "junk";
  assert_false(lookup(&k, v, sizeof v));
  assert_string_equal(v, "");
  host->tune_store(&k, "x"); /* logged and ignored */
  k = key_of("1.0", "drv1", "b");
  k.struct_size = 8;
  assert_false(lookup(&k, v, sizeof v));
  assert_false(host->tune_lookup(NULL, v, sizeof v));
  assert_int_equal(bp_context_set_tuning_cache(NULL, "/tmp/x.json"), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_context_set_tuning_cache(ctx, ""), BP_ERR_INVALID_ARGUMENT);
  char p[PATH_MAX];
  path_in_dir(p, sizeof p, "args.json");
  assert_null(read_text(p)); /* nothing valid was stored */
}

/* The fixture plugin, loaded by a context from $(B)/test/fixtures. */
static bool open_fixture(void) {
  char exe[PATH_MAX], fixtures[PATH_MAX + 16], so[PATH_MAX + 48];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(fixtures, sizeof fixtures, "%s/fixtures", exe);
  bp_context_options_t o = {.struct_size = sizeof o, .plugin_dir = fixtures,
                            .only_plugin_dir = true};
  if (bp_context_create(&o, &ctx) != BP_OK) return false;
  snprintf(so, sizeof so, "%s/backend-tune.so", fixtures);
  void *dl = dlopen(so, RTLD_NOW | RTLD_NOLOAD); /* the loader's instance */
  const bp_host_services_t *(*get)(void) = NULL;
  if (dl) *(void **)&get = dlsym(dl, "tune_fixture_host");
  host = get ? get() : NULL;
  if (dl) dlclose(dl); /* drops only our reference */
  return host != NULL;
}

int main(void) {
  setenv("BACKPLANE_DEBUG", "warn", 1); /* the tests count warnings */
  unsetenv("BACKPLANE_TUNING_CACHE");
  if (!open_fixture()) {
    fprintf(stderr, "test_tuning: cannot load the fixture backend-tune.so: %s\n",
            bp_last_error());
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host_services_present),
      cmocka_unit_test_setup_teardown(test_store_then_lookup, setup, teardown),
      cmocka_unit_test_setup_teardown(test_other_versions_ignored_and_kept, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_file_reported_once_and_replaced, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_newer_format_left_untouched, setup, teardown),
      cmocka_unit_test_setup_teardown(test_escapes_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_concurrent_stores, setup, teardown),
      cmocka_unit_test_setup_teardown(test_merge_with_other_process, setup, teardown),
      cmocka_unit_test_setup_teardown(test_path_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  bp_context_destroy(ctx);
  return failed;
}
