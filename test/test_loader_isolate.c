/*
 * test_loader_isolate.c — isolated probing, the default: plugins whose
 * constructor or probe crashes, calls exit, or hangs are refused with that
 * reason while this process survives and the CPU device still works; probe
 * runs once, in the helper, never again in this process; verdicts are
 * cached per file identity and environment; plugins stay mapped after
 * unload, so a thread a plugin leaves running cannot crash the host.
 * Only this file loads those variants.
 */
#include "test_loader_util.h"
#include "plugin-api.h" /* the plugin ABI: descriptors, versions */

#include <sys/stat.h>
#include <time.h>

/* Under a sanitizer the child's fault is reported by the sanitizer, which
 * may turn a SIGSEGV into an abort or an exit; the refusal must still come. */
static bool under_sanitizer(void) { return getenv("BP_UNDER_SANITIZER") != NULL; }

static bp_context_t *open_isolated(const char *dir, uint32_t timeout_s) {
  return tl_open_dir(dir, true, timeout_s);
}

static void isolated_case(const char *variant, bp_plugin_stage_t stage,
                          bp_status_t status, const char *want, const char *want2,
                          uint32_t timeout_s) {
  char dir[PATH_MAX], file[64];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, variant, variant);
  tl_add_cpu(dir);
  bp_context_t *ctx = open_isolated(dir, timeout_s);
  snprintf(file, sizeof file, "backend-%s.so", variant);
  tl_expect_refused(ctx, file, stage, status, want, want2);
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

static void test_probe_crash(void **state) {
  (void)state;
  if (under_sanitizer())
    isolated_case("crash", BP_STAGE_PROBE, BP_ERR_INCOMPATIBLE, "in probe", "isolated probe", 0);
  else
    isolated_case("crash", BP_STAGE_PROBE, BP_ERR_INCOMPATIBLE, "crashed in probe",
                  "SIGSEGV", 0);
}

static void test_constructor_crash(void **state) {
  (void)state;
  if (under_sanitizer())
    isolated_case("ctorcrash", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE, "in loading",
                  "isolated probe", 0);
  else
    isolated_case("ctorcrash", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE, "crashed in loading",
                  "SIGSEGV", 0);
}

static void test_constructor_exit(void **state) {
  (void)state;
  if (under_sanitizer())
    isolated_case("ctorexit", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE, "in loading",
                  "isolated probe", 0);
  else
    isolated_case("ctorexit", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE, "called exit(3) in loading",
                  NULL, 0);
}

static void test_probe_hang(void **state) {
  (void)state;
  isolated_case("hang", BP_STAGE_PROBE, BP_ERR_TIMEOUT, "timed out after 1 s in probe",
                NULL, 1);
}

/* Refusals that do not need isolation read the same through it: the child's
 * reason and stage come back. */
static void test_reasons_pass_through(void **state) {
  (void)state;
  isolated_case("magic", BP_STAGE_VERSION, BP_ERR_INCOMPATIBLE, "wrong magic", NULL, 0);
  isolated_case("probeerr", BP_STAGE_PROBE, BP_ERR_UNAVAILABLE,
                "libbroken-driver.so.1 not found", NULL, 0);
  isolated_case("initfail", BP_STAGE_INIT, BP_ERR_UNAVAILABLE, "init failed", NULL, 0);
  isolated_case("text", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE, "not an ELF file", NULL, 0);
}

/* Every bad kind at once, with good plugins around them: each bad one is
 * refused, the good ones load, a duplicate is still caught in the parent. */
static void test_all_bad_at_once(void **state) {
  (void)state;
  static const char *const bad[] = {"crash", "ctorcrash", "ctorexit", "hang", "magic",
                                    "nosym", "empty"};
  char dir[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) tl_add(dir, bad[i], bad[i]);
  tl_add(dir, "good", "good");
  tl_add(dir, "dup-a", "dup-a");
  tl_add(dir, "dup-b", "dup-b");
  tl_add_cpu(dir);
  bp_context_t *ctx = open_isolated(dir, 1);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char file[64];
    snprintf(file, sizeof file, "backend-%s.so", bad[i]);
    bp_plugin_report_t r;
    assert_true(tl_find(ctx, file, &r));
    assert_false(r.loaded);
    assert_true(r.status < 0);
    assert_true(r.reason[0] != '\0');
  }
  tl_expect_loaded(ctx, "backend-good.so");
  tl_expect_loaded(ctx, "backend-dup-a.so");
  tl_expect_refused(ctx, "backend-dup-b.so", BP_STAGE_VALIDATE, BP_ERR_INCOMPATIBLE,
                    "duplicate of plugin 'dup'", NULL);
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

/* Isolation leaves no child behind and no descriptor open. */
static int count_fds(void) {
  char path[64];
  int n = 0;
  for (int fd = 0; fd < 1024; fd++) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    n += access(path, F_OK) == 0;
  }
  return n;
}

static void test_no_children_or_fds_left(void **state) {
  (void)state;
  char dir[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "crash", "crash");
  tl_add(dir, "hang", "hang");
  tl_add_cpu(dir);
  int before = count_fds();
  for (int i = 0; i < 3; i++) {
    bp_context_t *ctx = open_isolated(dir, 1);
    bp_context_destroy(ctx);
  }
  assert_int_equal(count_fds(), before);
  /* Every child was reaped: there is none left to wait for. */
  errno = 0;
  assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
  assert_int_equal(errno, ECHILD);
  tl_rmtree(dir);
}

/* ---- default options ------------------------------------------------------ */

/* The default-options cases' probe timeout: 1 s, but 10 s under the
 * sanitizers, where a crashing child's report (symbolised by ASan) can take
 * longer than a second on a loaded machine and would read as a timeout. */
static const char *default_timeout(void) {
  return under_sanitizer() ? "10" : "1";
}

/* Points the default search path at dir alone, with a probe cache of its
 * own and default_timeout(), as an application passing NULL options would
 * see it. */
static void use_defaults(const char *dir, const char *cache) {
  assert_int_equal(setenv("BACKPLANE_PLUGIN_PATH", dir, 1), 0);
  assert_int_equal(setenv("BACKPLANE_PROBE_CACHE", cache, 1), 0);
  assert_int_equal(setenv("BACKPLANE_PROBE_TIMEOUT", default_timeout(), 1), 0);
  unsetenv("BACKPLANE_ISOLATE");
  unsetenv("BACKPLANE_PROBE_HELPER");
}

static void restore_defaults(void) {
  unsetenv("BACKPLANE_PLUGIN_PATH");
  unsetenv("BACKPLANE_PROBE_CACHE");
  unsetenv("BACKPLANE_PROBE_TIMEOUT");
  unsetenv("BACKPLANE_ISOLATE");
  unsetenv("BACKPLANE_PROBE_HELPER");
  unsetenv("BROKEN_COUNTER");
}

static bp_context_t *open_default(void) {
  bp_context_t *ctx = NULL;
  bp_status_t st = bp_context_create(NULL, &ctx);
  if (st != BP_OK) fail_msg("bp_context_create(NULL): %s: %s", bp_status_name(st), bp_last_error());
  return ctx;
}

/* With NULL options (isolation by default) each fatal variant is refused
 * and this process lives on; the helper names the fault. */
static void test_default_options_isolate(void **state) {
  (void)state;
  static const struct {
    const char *variant;
    bp_plugin_stage_t stage;
    bp_status_t status;
    const char *want;
  } cases[] = {
      {"ctorexit", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE, "in loading"},
      {"ctorcrash", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE, "crashed in loading"},
      {"crash", BP_STAGE_PROBE, BP_ERR_INCOMPATIBLE, "crashed in probe"},
      {"hang", BP_STAGE_PROBE, BP_ERR_TIMEOUT, "timed out after %s s in probe"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char dir[PATH_MAX], cache[PATH_MAX + 16], file[64];
    tl_mkdtemp(dir, sizeof dir);
    tl_add(dir, cases[i].variant, cases[i].variant);
    tl_add_cpu(dir);
    snprintf(cache, sizeof cache, "%s/cache.bin", dir);
    use_defaults(dir, cache);
    /* Twice: from the helper, then from the cache, with the same report. */
    for (int round = 0; round < 2; round++) {
      bp_context_t *ctx = open_default();
      snprintf(file, sizeof file, "backend-%s.so", cases[i].variant);
      char want[64];
      snprintf(want, sizeof want, cases[i].want, default_timeout());
      if (under_sanitizer() && strstr(want, "crashed")) snprintf(want, sizeof want, "isolated probe");
      tl_expect_refused(ctx, file, cases[i].stage, cases[i].status, want, "isolated probe");
      tl_cpu_works(ctx);
      bp_context_destroy(ctx);
    }
    restore_defaults();
    tl_rmtree(dir);
  }
}

/* The isolated report names the plugin as the in-process one does: name,
 * version and both ABI versions, for a refusal after the descriptor was read
 * and for a plugin that loads — from the helper and from the cache. */
static void test_report_carries_identity(void **state) {
  (void)state;
  char dir[PATH_MAX], cache[PATH_MAX + 16];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "crash", "crash");
  tl_add(dir, "probeerr", "probeerr");
  tl_add(dir, "good", "good");
  tl_add_cpu(dir);
  snprintf(cache, sizeof cache, "%s/cache.bin", dir);
  use_defaults(dir, cache);
  for (int round = 0; round < 2; round++) {
    bp_context_t *ctx = open_default();
    static const char *const files[] = {"backend-crash.so", "backend-probeerr.so",
                                        "backend-good.so"};
    static const char *const names[] = {"crash", "probeerr", "good"};
    for (int i = 0; i < 3; i++) {
      bp_plugin_report_t r;
      assert_true(tl_find(ctx, files[i], &r));
      assert_string_equal(r.name, names[i]);
      assert_string_equal(r.version, "0.0.1");
      assert_int_equal(r.plugin_abi_major, BP_PLUGIN_ABI_MAJOR);
      assert_int_equal(r.plugin_abi_minor, BP_PLUGIN_ABI_MINOR);
      assert_int_equal(r.loader_abi_major, BP_PLUGIN_ABI_MAJOR);
      assert_int_equal(r.loaded, i == 2);
    }
    tl_expect_loaded(ctx, "backend-good.so");
    bp_context_destroy(ctx);
  }
  restore_defaults();
  tl_rmtree(dir);
}

/* A plugin whose every second probe crashes, with no cache: each context
 * probes it once, in the helper. Before, the loader probed again in-process
 * after the helper said yes, and the second probe took the host down. */
static void test_flaky_plugin_never_crashes_host(void **state) {
  (void)state;
  char dir[PATH_MAX], counter[PATH_MAX + 16];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "flaky", "flaky");
  tl_add_cpu(dir);
  snprintf(counter, sizeof counter, "%s/probes", dir);
  use_defaults(dir, "off");
  assert_int_equal(setenv("BROKEN_COUNTER", counter, 1), 0);
  int loaded = 0;
  for (int i = 0; i < 20; i++) {
    bp_context_t *ctx = open_default();
    bp_plugin_report_t r;
    assert_true(tl_find(ctx, "backend-flaky.so", &r));
    if (r.loaded) loaded++;
    else if (!strstr(r.reason, under_sanitizer() ? "isolated probe" : "crashed in probe"))
      fail_msg("flaky refused for another reason: %s", r.reason);
    tl_cpu_works(ctx);
    bp_context_destroy(ctx);
  }
  struct stat st;
  assert_int_equal(stat(counter, &st), 0);
  assert_int_equal(st.st_size, 20); /* one probe per load, none in-process */
  assert_int_equal(loaded, 10);
  restore_defaults();
  tl_rmtree(dir);
}

/* ---- the verdict cache ----------------------------------------------------- */

static long probes_counted(const char *counter) {
  struct stat st;
  return stat(counter, &st) == 0 ? (long)st.st_size : 0;
}

/* Opens a default context on the counting plugin and returns how many
 * probes have run so far. */
static long open_counting(void) {
  bp_context_t *ctx = open_default();
  tl_expect_loaded(ctx, "backend-counting.so");
  bp_context_destroy(ctx);
  return probes_counted(getenv("BROKEN_COUNTER"));
}

/* Rewrites one byte of the .comment section (never mapped for execution),
 * then puts the old mtime back: only the content hash can tell. */
static void flip_comment_byte_keep_mtime(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  static char buf[1 << 22];
  size_t n = fread(buf, 1, sizeof buf, f);
  char *gcc = memmem(buf, n, "GCC: (", 6);
  assert_non_null(gcc);
  assert_int_equal(fseek(f, (long)(gcc - buf), SEEK_SET), 0);
  assert_int_equal(fputc('g', f), 'g');
  assert_int_equal(fclose(f), 0);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

static void test_cache_hits_and_invalidates(void **state) {
  (void)state;
  char dir[PATH_MAX], cache[PATH_MAX + 16], counter[PATH_MAX + 16], plugin[PATH_MAX + 32];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "counting", "counting");
  tl_add_cpu(dir);
  snprintf(cache, sizeof cache, "%s/cache.bin", dir);
  snprintf(counter, sizeof counter, "%s/probes", dir);
  snprintf(plugin, sizeof plugin, "%s/backend-counting.so", dir);
  use_defaults(dir, cache);
  assert_int_equal(setenv("BROKEN_COUNTER", counter, 1), 0);
  /* Cold: the helper probes once; warm: nothing probes, here or there. */
  assert_int_equal(open_counting(), 1);
  assert_int_equal(open_counting(), 1);
  assert_int_equal(open_counting(), 1);
  /* The file written is private and whole. */
  struct stat st;
  assert_int_equal(stat(cache, &st), 0);
  assert_int_equal(st.st_mode & 077, 0);
  /* A new mtime is a new file. */
  struct timespec later[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = time(NULL) + 5}};
  assert_int_equal(utimensat(AT_FDCWD, plugin, later, 0), 0);
  assert_int_equal(open_counting(), 2);
  assert_int_equal(open_counting(), 2);
  /* So are new bytes under the old size and mtime. */
  flip_comment_byte_keep_mtime(plugin);
  assert_int_equal(open_counting(), 3);
  assert_int_equal(open_counting(), 3);
  /* Another environment may find other devices. */
  assert_int_equal(setenv("BP_TEST_ISOLATE_KNOB", "1", 1), 0);
  assert_int_equal(open_counting(), 4);
  assert_int_equal(open_counting(), 4);
  unsetenv("BP_TEST_ISOLATE_KNOB");
  assert_int_equal(open_counting(), 4); /* the first environment's entry stays */
  /* A cache file others may write is not read. */
  assert_int_equal(chmod(cache, 0666), 0);
  assert_int_equal(open_counting(), 5);
  assert_int_equal(stat(cache, &st), 0); /* replaced by a private one */
  assert_int_equal(st.st_mode & 077, 0);
  assert_int_equal(open_counting(), 5);
  /* A damaged file is a miss, not a crash and not half-trusted. */
  FILE *f = fopen(cache, "r+b");
  assert_non_null(f);
  assert_int_equal(fseek(f, -7, SEEK_END), 0);
  assert_int_equal(fputc('#', f), '#');
  assert_int_equal(fclose(f), 0);
  assert_int_equal(open_counting(), 6);
  assert_int_equal(truncate(cache, 100), 0);
  assert_int_equal(open_counting(), 7);
  assert_int_equal(open_counting(), 7);
  /* "off" disables it. */
  assert_int_equal(setenv("BACKPLANE_PROBE_CACHE", "off", 1), 0);
  assert_int_equal(open_counting(), 8);
  assert_int_equal(open_counting(), 9);
  restore_defaults();
  tl_rmtree(dir);
}

/* Opting out probes in this process: the probe counts although the cache
 * holds a verdict. isolate_probe = true wins over BACKPLANE_ISOLATE=0. */
static void test_opt_out(void **state) {
  (void)state;
  char dir[PATH_MAX], cache[PATH_MAX + 16], counter[PATH_MAX + 16];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "counting", "counting");
  tl_add_cpu(dir);
  snprintf(cache, sizeof cache, "%s/cache.bin", dir);
  snprintf(counter, sizeof counter, "%s/probes", dir);
  use_defaults(dir, cache);
  assert_int_equal(setenv("BROKEN_COUNTER", counter, 1), 0);
  assert_int_equal(open_counting(), 1);
  assert_int_equal(open_counting(), 1);
  bp_context_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.in_process_probe = true;
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(&o, &ctx), BP_OK);
  tl_expect_loaded(ctx, "backend-counting.so");
  bp_context_destroy(ctx);
  assert_int_equal(probes_counted(counter), 2);
  assert_int_equal(setenv("BACKPLANE_ISOLATE", "0", 1), 0);
  assert_int_equal(open_counting(), 3);
  o.in_process_probe = false;
  o.isolate_probe = true;
  assert_int_equal(bp_context_create(&o, &ctx), BP_OK);
  tl_expect_loaded(ctx, "backend-counting.so");
  bp_context_destroy(ctx);
  assert_int_equal(probes_counted(counter), 3); /* isolated: from the cache */
  /* A caller built before in_process_probe existed gets isolation. */
  unsetenv("BACKPLANE_ISOLATE");
  o.isolate_probe = false;
  o.struct_size = offsetof(bp_context_options_t, in_process_probe);
  o.in_process_probe = true; /* beyond struct_size: must not be read */
  assert_int_equal(bp_context_create(&o, &ctx), BP_OK);
  bp_context_destroy(ctx);
  assert_int_equal(probes_counted(counter), 3);
  restore_defaults();
  tl_rmtree(dir);
}

/* Without bp-probe the loader forks instead, and says so. */
static void test_missing_helper_falls_back(void **state) {
  (void)state;
  char dir[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "crash", "crash");
  tl_add(dir, "good", "good");
  tl_add_cpu(dir);
  use_defaults(dir, "off");
  assert_int_equal(setenv("BACKPLANE_PROBE_HELPER", "/nonexistent/bp-probe", 1), 0);
  bp_context_t *ctx = open_default();
  tl_expect_refused(ctx, "backend-crash.so", BP_STAGE_PROBE, BP_ERR_INCOMPATIBLE,
                    under_sanitizer() ? "in probe" : "crashed in probe",
                    "forked child: bp-probe helper not found");
  tl_expect_loaded(ctx, "backend-good.so");
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  restore_defaults();
  tl_rmtree(dir);
}

/* ---- unloading ---------------------------------------------------------------- */

/* A plugin whose init starts a thread that shutdown does not stop: the
 * library stays mapped after the last context lets it go, so the thread
 * keeps running on mapped code. (Unmapping it crashed here.) */
static void test_thread_outlives_unload(void **state) {
  (void)state;
  char dir[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "thread", "thread");
  tl_add_cpu(dir);
  use_defaults(dir, "off");
  for (int i = 0; i < 3; i++) {
    bp_context_options_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.in_process_probe = i == 1; /* both ways of loading */
    bp_context_t *ctx = NULL;
    assert_int_equal(bp_context_create(&o, &ctx), BP_OK);
    tl_expect_loaded(ctx, "backend-thread.so");
    bp_context_destroy(ctx);
    usleep(20 * 1000); /* the thread's loop runs many times meanwhile */
  }
  restore_defaults();
  tl_rmtree(dir); /* unlinked, still mapped, still running */
  usleep(20 * 1000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_probe_crash),
      cmocka_unit_test(test_constructor_crash),
      cmocka_unit_test(test_constructor_exit),
      cmocka_unit_test(test_probe_hang),
      cmocka_unit_test(test_reasons_pass_through),
      cmocka_unit_test(test_all_bad_at_once),
      cmocka_unit_test(test_no_children_or_fds_left),
      cmocka_unit_test(test_default_options_isolate),
      cmocka_unit_test(test_report_carries_identity),
      cmocka_unit_test(test_flaky_plugin_never_crashes_host),
      cmocka_unit_test(test_cache_hits_and_invalidates),
      cmocka_unit_test(test_opt_out),
      cmocka_unit_test(test_missing_helper_falls_back),
      cmocka_unit_test(test_thread_outlives_unload),
  };
  return cmocka_run_group_tests(tests, tl_setup, NULL);
}
