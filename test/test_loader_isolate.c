/*
 * test_loader_isolate.c — isolated probing (options.isolate_probe): plugins
 * whose constructor or probe crashes, calls exit, or hangs are refused with
 * that reason while this process survives and the CPU device still works.
 * Only this file loads those variants, and only with isolation on.
 */
#include "test_loader_util.h"

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_probe_crash),
      cmocka_unit_test(test_constructor_crash),
      cmocka_unit_test(test_constructor_exit),
      cmocka_unit_test(test_probe_hang),
      cmocka_unit_test(test_reasons_pass_through),
      cmocka_unit_test(test_all_bad_at_once),
      cmocka_unit_test(test_no_children_or_fds_left),
  };
  return cmocka_run_group_tests(tests, tl_setup, NULL);
}
