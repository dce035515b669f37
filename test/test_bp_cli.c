/*
 * test_bp_cli.c — the bp command end to end: runs ../bin/bp (next to this
 * test's own directory) through popen and checks exit codes and output.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char bp_path[PATH_MAX];

/* Runs "bp ARGS" (stderr kept apart), returns its exit status and a malloc'd
 * copy of stdout in *out. */
static int run_bp(const char *args, char **out) {
  char cmd[PATH_MAX + 256];
  snprintf(cmd, sizeof cmd, "'%s' %s 2>/dev/null", bp_path, args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t cap = 1 << 16, len = 0, n;
  char *buf = malloc(cap);
  assert_non_null(buf);
  while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (len + 1 == cap) {
      buf = realloc(buf, cap *= 2);
      assert_non_null(buf);
    }
  }
  buf[len] = '\0';
  int st = pclose(p);
  *out = buf;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static void test_devices(void **state) {
  (void)state;
  char *out;
  assert_int_equal(run_bp("devices", &out), 0);
  assert_non_null(strstr(out, "rank"));
  assert_non_null(strstr(out, "cpu-ref"));
  assert_non_null(strstr(out, "refused plugins"));
  free(out);
}

static void test_devices_memory(void **state) {
  (void)state;
  char *out;
  /* 3 MiB reserved up front: one pool segment on every device listed. */
  assert_int_equal(run_bp("devices --memory --pool-initial 3145728", &out), 0);
  assert_non_null(strstr(out, "memory pool: in use -, reserved 3.0 MiB in 1 segment(s)"));
  assert_true(count(out, "memory pool:") >= 2); /* cpu and cpu-ref at least */
  assert_int_equal(count(out, "memory pool:"), count(out, "reserved 3.0 MiB in 1 segment(s)"));
  free(out);
  assert_int_equal(run_bp("devices --memory --pool-initial lots", &out), 2);
  free(out);
  assert_int_equal(run_bp("run --device cpu-ref --memory", &out), 0);
  assert_non_null(strstr(out, "served from the cache"));
  free(out);
}

static void test_devices_json(void **state) {
  (void)state;
  char *out;
  assert_int_equal(run_bp("devices --json", &out), 0);
  assert_int_equal(out[0], '{');
  assert_non_null(strstr(out, "\"devices\": ["));
  assert_non_null(strstr(out, "\"plugins\": ["));
  assert_non_null(strstr(out, "\"name\": \"cpu-ref\""));
  assert_int_equal(count(out, "{"), count(out, "}"));
  free(out);
}

static void test_run_cpu(void **state) {
  (void)state;
  char *out;
  int rc = run_bp("run --device cpu", &out);
  if (rc != 0) print_message("%s\n", out);
  assert_int_equal(rc, 0);
  assert_int_equal(count(out, "  PASS\n"), 3);
  assert_null(strstr(out, "FAIL"));
  assert_non_null(strstr(out, "result: PASS"));
  free(out);
}

static void test_run_json(void **state) {
  (void)state;
  char *out;
  assert_int_equal(run_bp("run --device cpu --json", &out), 0);
  assert_non_null(strstr(out, "\"pass\": true"));
  assert_int_equal(count(out, "\"result\": \"PASS\""), 3);
  free(out);
}

static void test_bench_quick(void **state) {
  (void)state;
  char *out;
  int rc = run_bp("bench --quick --device cpu", &out);
  if (rc != 0) print_message("%s\n", out);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, "gemm"));
  assert_non_null(strstr(out, "softmax"));
  free(out);
}

static void test_usage(void **state) {
  (void)state;
  char *out;
  assert_int_equal(run_bp("--help", &out), 0);
  assert_non_null(strstr(out, "devices"));
  free(out);
  assert_int_equal(run_bp("--version", &out), 0);
  assert_non_null(strstr(out, "bp (backplane)"));
  free(out);
  assert_int_equal(run_bp("run --help", &out), 0);
  assert_non_null(strstr(out, "usage: bp run"));
  free(out);
  assert_int_equal(run_bp("no-such-command", &out), 2);
  free(out);
  assert_int_equal(run_bp("run --no-such-option", &out), 2);
  free(out);
  assert_int_equal(run_bp("run --device no-such-device", &out), 1);
  free(out);
}

/* Finds bp at <dir of this test>/../bin/bp. */
static int find_bp(void **state) {
  (void)state;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = '\0';
  snprintf(bp_path, sizeof bp_path, "%s/../bin/bp", exe);
  return access(bp_path, X_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_usage),       cmocka_unit_test(test_devices), cmocka_unit_test(test_devices_memory),
      cmocka_unit_test(test_devices_json), cmocka_unit_test(test_run_cpu),
      cmocka_unit_test(test_run_json),    cmocka_unit_test(test_bench_quick),
  };
  return cmocka_run_group_tests_name("bp_cli", tests, find_bp, NULL);
}
