/*
 * test_bp_cli.c — the bp command end to end: runs ../bin/bp (next to this
 * test's own directory) through popen and checks exit codes and output,
 * `bp conformance` included (on the broken-plugin corpus of test/loader.mk).
 */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char bp_path[PATH_MAX];
static char test_dir[PATH_MAX]; /* this test's directory: $(B)/test */

/* Runs "ENV bp ARGS" (stderr kept apart; env is shell assignments or ""),
 * returns its exit status and a malloc'd copy of stdout in *out. */
static int run_bp_env(const char *env, const char *args, char **out) {
  char cmd[4 * PATH_MAX + 1024];
  snprintf(cmd, sizeof cmd, "%s '%s' %s 2>/dev/null", env, bp_path, args);
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

static int run_bp(const char *args, char **out) { return run_bp_env("", args, out); }

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
  /* the %gemm column's yardsticks, measured on the device (bench_share.c) */
  const char *share = strstr(out, "% of GEMM: against this device's f32 GEMM 512^3, ");
  double gemm_gflops = 0, copy_gbs = 0;
  assert_non_null(share);
  assert_int_equal(sscanf(share, "%% of GEMM: against this device's f32 GEMM 512^3, %lf GFLOP/s; "
                                 "matrix-vector products (%%bw) against its copy bandwidth, %lf",
                          &gemm_gflops, &copy_gbs),
                   2);
  assert_true(gemm_gflops > 0 && copy_gbs > 0);
  assert_non_null(strstr(out, "%gemm"));
  free(out);
}

/* Reads a whole file into a malloc'd string; NULL when absent. */
static char *slurp_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0, n;
  char *buf = malloc(cap);
  assert_non_null(buf);
  while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0)
    if ((len += n) + 1 == cap) assert_non_null(buf = realloc(buf, cap *= 2));
  buf[len] = '\0';
  fclose(f);
  return buf;
}

/* bp tune --cache F writes F (a valid cache, also when the CPU plugins tune
 * nothing), and --json reports every case. */
static void test_tune_cache_and_json(void **state) {
  (void)state;
  char cache[PATH_MAX], json[PATH_MAX], args[3 * PATH_MAX], *out;
  snprintf(cache, sizeof cache, "%s/tune-cache-test.json", test_dir);
  snprintf(json, sizeof json, "%s/tune-report-test.json", test_dir);
  unlink(cache);
  unlink(json);
  snprintf(args, sizeof args, "tune --quick --device cpu --cache '%s' --json '%s'", cache, json);
  int rc = run_bp(args, &out);
  if (rc != 0) print_message("%s\n", out);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, "tuning cache: "));
  free(out);
  char *c = slurp_file(cache);
  assert_non_null(c);
  assert_non_null(strstr(c, "\"version\": 1"));
  assert_non_null(strstr(c, "\"entries\""));
  free(c);
  char *j = slurp_file(json);
  assert_non_null(j);
  assert_int_equal(j[0], '{');
  assert_non_null(strstr(j, "\"cache_written\": true"));
  assert_non_null(strstr(j, "\"op\": \"gemm\""));
  assert_int_equal(count(j, "{"), count(j, "}"));
  free(j);
  unlink(json);
  /* --json -: the report alone on stdout. */
  snprintf(args, sizeof args, "tune --quick --device cpu --cache '%s' --json -", cache);
  assert_int_equal(run_bp(args, &out), 0);
  assert_int_equal(out[0], '{');
  assert_null(strstr(out, "device: "));
  assert_non_null(strstr(out, "\"status\": "));
  free(out);
  unlink(cache);
  char lock[PATH_MAX + 8];
  snprintf(lock, sizeof lock, "%s.lock", cache);
  unlink(lock);
  /* A cache that cannot be written fails the run. */
  assert_int_equal(run_bp("tune --quick --device cpu --cache /dev/null/tuning.json", &out), 1);
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

/* Every subcommand parses with getopt_long: a bad number, a missing value,
 * an unknown option or a stray argument is a usage error (exit 2), never a
 * silent default; "--opt=value" and "--opt value" both work. */
static void test_bad_values(void **state) {
  (void)state;
  static const char *const usage_errors[] = {
      "conformance --timeout abc",  "conformance --timeout -5",  "conformance --timeout 0",
      "conformance --timeout 5x",   "conformance --timeout=",    "conformance --timeout",
      "conformance --child-fd x",   "conformance --no-such",     "devices --pool-initial -1",
      "devices --pool-initial 1k",  "devices --pool-initial",    "devices stray",
      "devices --json=yes",         "run --device",              "run stray",
      "bench --device",             "bench --op",                "bench --op nosuchop",
      "bench --quick stray",        "tune --cache",              "tune --cache=",
      "tune --no-such",             "tune stray",                "run -x",
  };
  char *out;
  for (size_t i = 0; i < sizeof usage_errors / sizeof usage_errors[0]; i++) {
    int rc = run_bp(usage_errors[i], &out);
    if (rc != 2) print_message("bp %s: exit %d, want 2\n", usage_errors[i], rc);
    assert_int_equal(rc, 2);
    free(out);
  }
  /* the message names the option and the value */
  char cmd[PATH_MAX + 64];
  snprintf(cmd, sizeof cmd, "'%s' conformance --timeout abc 2>&1", bp_path);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char buf[1024];
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  buf[n] = '\0';
  pclose(p);
  assert_non_null(strstr(buf, "--timeout"));
  assert_non_null(strstr(buf, "'abc'"));
  assert_int_equal(run_bp("devices --json --pool-initial=0", &out), 0);
  assert_int_equal(out[0], '{');
  free(out);
  assert_int_equal(run_bp("run --device=cpu-ref --json", &out), 0);
  assert_non_null(strstr(out, "\"pass\": true"));
  free(out);
  assert_int_equal(run_bp("devices -h", &out), 0);
  assert_non_null(strstr(out, "usage: bp devices"));
  free(out);
}

/* Runs "ENV bp ARGS" and returns its exit status and a malloc'd copy of its
 * standard error (stdout dropped) in *err. */
static int run_bp_stderr(const char *env, const char *args, char **err) {
  char cmd[4 * PATH_MAX + 1024];
  snprintf(cmd, sizeof cmd, "%s '%s' %s 2>&1 >/dev/null", env, bp_path, args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char *buf = calloc(1, 1 << 16);
  assert_non_null(buf);
  size_t n = fread(buf, 1, (1 << 16) - 1, p);
  buf[n] = '\0';
  int st = pclose(p);
  *err = buf;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* bp devices names the plugin directories it searched (absent ones marked),
 * in the table, --explain and --json; opening a backend whose plugin was
 * refused says why, as bp devices does. */
static void test_search_dirs_and_why(void **state) {
  (void)state;
  char *out;
  const char *env = "BACKPLANE_PLUGIN_PATH=/nonexistent/bp-plugins";
  static const char *const modes[] = {"devices", "devices --explain"};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(run_bp_env(env, modes[i], &out), 0);
    assert_non_null(strstr(out, "plugin directories searched ("));
    assert_non_null(strstr(out, "  /nonexistent/bp-plugins (absent)\n"));
    assert_non_null(strstr(out, "/plugins\n")); /* bp's own, present */
    free(out);
  }
  assert_int_equal(run_bp_env(env, "devices --json", &out), 0);
  assert_non_null(strstr(out, "\"search_dirs\": ["));
  assert_non_null(strstr(out, "{\"path\": \"/nonexistent/bp-plugins\", \"present\": false}"));
  assert_int_equal(count(out, "{"), count(out, "}"));
  free(out);
  /* CUDA's driver pointed at nothing: refused at probe, and the open says so */
  assert_int_equal(run_bp_stderr("BACKPLANE_CUDA_DRIVER=/nonexistent/libcuda.so.1", "run --device cuda", &out), 1);
  if (!strstr(out, "libcuda.so.1 not found")) print_message("%s\n", out);
  assert_non_null(strstr(out, "no device matches selector 'cuda': plugin "));
  assert_non_null(strstr(out, "refused at stage probe"));
  assert_non_null(strstr(out, "libcuda.so.1 not found"));
  free(out);
  /* a backend nobody provides: the directories searched */
  assert_int_equal(run_bp_stderr(env, "run --device nosuch", &out), 1);
  assert_non_null(strstr(out, "no plugin 'nosuch' was found; searched /nonexistent/bp-plugins (absent), "));
  free(out);
}

/* ---- bp conformance ----------------------------------------------------------
 * On the broken-plugin corpus ($(B)/test/broken) and the CPU plugin; each
 * plugin runs in a fresh `bp` process. */

static void broken(const char *name, char *out, size_t size) {
  snprintf(out, size, "%s/broken/backend-%s.so", test_dir, name);
}

/* Whether the table line of case `name` shows `result`. */
static bool case_result(const char *out, const char *name, const char *result) {
  const char *l = strstr(out, name);
  if (!l) return false;
  const char *eol = strchr(l, '\n');
  const char *r = strstr(l, result);
  return r && (!eol || r < eol);
}

/* Absent runtimes and devices read as skipped, "unavailable: <reason>", in
 * the table, TAP and JUnit, and the run exits 0. */
static void test_conformance_unavailable(void **state) {
  (void)state;
  char a[PATH_MAX], b[PATH_MAX], args[3 * PATH_MAX + 128], xml[PATH_MAX], *out;
  broken("probeerr", a, sizeof a);
  broken("probenone", b, sizeof b);
  snprintf(xml, sizeof xml, "%s/conformance-unavailable.xml", test_dir);
  snprintf(args, sizeof args, "conformance --quick '%s' '%s'", a, b);
  int rc = run_bp(args, &out);
  if (rc != 0) print_message("%s\n", out);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, "skip        unavailable: probe: libbroken-driver.so.1 not found"));
  assert_non_null(strstr(out, "skip        unavailable: probe found no devices"));
  assert_non_null(strstr(out, "RESULT: PASS"));
  free(out);
  snprintf(args, sizeof args, "conformance --quick --tap --junit '%s' '%s'", xml, a);
  assert_int_equal(run_bp(args, &out), 0);
  assert_non_null(strstr(out, "ok 3 - "));
  assert_non_null(strstr(out, "loaded by the loader # SKIP unavailable: probe: libbroken-driver.so.1 not found"));
  assert_null(strstr(out, "not ok"));
  free(out);
  FILE *f = fopen(xml, "r");
  assert_non_null(f);
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  unlink(xml);
  assert_non_null(strstr(buf, "<skipped message=\"unavailable: probe: libbroken-driver.so.1 not found\"/>"));
  assert_non_null(strstr(buf, "failures=\"0\""));
  /* A real backend whose runtime is absent: CUDA and ROCm pointed at
   * nothing, as on every machine without those GPUs. */
  snprintf(args, sizeof args, "conformance --quick '%s/../plugins/backend-cuda.so' '%s/../plugins/backend-rocm.so'",
           test_dir, test_dir);
  rc = run_bp_env("BACKPLANE_CUDA_DRIVER=/nonexistent/libcuda.so.1 BACKPLANE_HIP_RUNTIME=/nonexistent/libamdhip64.so",
                  args, &out);
  if (rc != 0) print_message("%s\n", out);
  assert_int_equal(rc, 0);
  assert_int_equal(count(out, "skip        unavailable: "), 2);
  free(out);
}

/* A plugin that claims fill but has no fill function fails, exit 1. */
static void test_conformance_claim_without_op(void **state) {
  (void)state;
  char p[PATH_MAX], args[PATH_MAX + 64], *out;
  broken("claimsfill", p, sizeof p);
  snprintf(args, sizeof args, "conformance --quick '%s'", p);
  assert_int_equal(run_bp(args, &out), 1);
  assert_true(case_result(out, "every claimed op is implemented", "FAIL"));
  assert_non_null(strstr(out, "first: fill f32"));
  free(out);
}

/* The unclaimed-op check calls the ops: with bp_fill made to answer BP_OK
 * (test/fixtures/cf_sabotage.c), it fails. */
static void test_conformance_unclaimed_ops_called(void **state) {
  (void)state;
  char p[PATH_MAX], args[PATH_MAX + 64], env[2 * PATH_MAX + 256], *out;
  broken("good", p, sizeof p);
  snprintf(args, sizeof args, "conformance --quick '%s'", p);
  run_bp(args, &out);
  assert_true(case_result(out, "unclaimed op/dtype refused as unsupported", "pass"));
  assert_non_null(strstr(out, "unsupported op/dtype pairs called, 0 not refused"));
  free(out);
  const char *asan = getenv("ASAN_OPTIONS");
  snprintf(env, sizeof env, "CF_SABOTAGE=fill LD_PRELOAD='%s/fixtures/libcf_sabotage.so' ASAN_OPTIONS='%s%sverify_asan_link_order=0'",
           test_dir, asan ? asan : "", asan && *asan ? ":" : "");
  assert_int_equal(run_bp_env(env, args, &out), 1);
  assert_true(case_result(out, "unclaimed op/dtype refused as unsupported", "FAIL"));
  assert_non_null(strstr(out, "first: fill f32 gave BP_OK"));
  free(out);
}

/* With cpu-ref out of reach nothing is verified: the run fails, it does not
 * print PASS with every op skipped. */
static void test_conformance_no_reference(void **state) {
  (void)state;
  char p[PATH_MAX], args[PATH_MAX + 64], *out;
  broken("good", p, sizeof p);
  snprintf(args, sizeof args, "conformance --quick '%s'", p);
  assert_int_equal(run_bp_env("BACKPLANE_BACKENDS=-cpu", args, &out), 1);
  assert_true(case_result(out, "all ops", "FAIL"));
  assert_non_null(strstr(out, "not verified: no cpu-ref device"));
  assert_null(strstr(out, "RESULT: PASS"));
  assert_non_null(strstr(out, "RESULT: FAIL"));
  free(out);
}

/* JSON: an object with totals and per-plugin results; JUnit: every
 * <testsuite> and the <testsuites> root carry their counts. */
static void test_conformance_json_junit_counts(void **state) {
  (void)state;
  char a[PATH_MAX], b[PATH_MAX], xml[PATH_MAX], json[PATH_MAX], args[5 * PATH_MAX], *out;
  broken("good", a, sizeof a);
  broken("claimsfill", b, sizeof b);
  snprintf(xml, sizeof xml, "%s/conformance-counts.xml", test_dir);
  snprintf(json, sizeof json, "%s/conformance-counts.json", test_dir);
  snprintf(args, sizeof args, "conformance --quick --junit '%s' --json '%s' '%s' '%s'", xml, json, a, b);
  assert_int_equal(run_bp(args, &out), 1);
  free(out);
  char *j = slurp_file(json), *x = slurp_file(xml);
  unlink(json);
  unlink(xml);
  assert_non_null(j);
  assert_non_null(x);
  assert_int_equal(j[0], '{');
  assert_non_null(strstr(j, "\"result\": \"FAIL\""));
  assert_non_null(strstr(j, "\"totals\": {\"total\": "));
  assert_int_equal(count(j, "\"totals\": "), 3); /* the run's and one per plugin */
  assert_int_equal(count(j, "\"checks\": ["), 2);
  int total = -1, failures = -1;
  assert_int_equal(sscanf(strstr(j, "\"totals\": "), "\"totals\": {\"total\": %d, \"failures\": %d", &total, &failures), 2);
  assert_int_equal(total, count(j, "\"case\": "));
  assert_true(failures >= 1);
  assert_int_equal(count(j, "{"), count(j, "}"));
  /* JUnit: each suite's tests= is its number of testcases; the root sums. */
  int suites = 0, sum = 0, fsum = 0;
  for (const char *s = strstr(x, "<testsuite "); s; s = strstr(s + 1, "<testsuite ")) {
    int t = -1, fl = -1, er = -1, sk = -1;
    const char *q = strstr(s, "tests=");
    assert_non_null(q);
    assert_int_equal(sscanf(q, "tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\"", &t, &fl, &er, &sk), 4);
    const char *end = strstr(s, "</testsuite>");
    assert_non_null(end);
    int cases = 0, fails = 0, skips = 0;
    for (const char *c = strstr(s, "<testcase "); c && c < end; c = strstr(c + 1, "<testcase ")) cases++;
    for (const char *c = strstr(s, "<failure "); c && c < end; c = strstr(c + 1, "<failure ")) fails++;
    for (const char *c = strstr(s, "<skipped "); c && c < end; c = strstr(c + 1, "<skipped ")) skips++;
    assert_int_equal(t, cases);
    assert_int_equal(fl, fails);
    assert_int_equal(sk, skips);
    suites++, sum += t, fsum += fl;
  }
  assert_true(suites >= 2);
  int rt = -1, rf = -1;
  assert_int_equal(sscanf(strstr(x, "<testsuites "), "<testsuites name=\"bp conformance\" tests=\"%d\" failures=\"%d\"", &rt, &rf), 2);
  assert_int_equal(rt, sum);
  assert_int_equal(rt, total);
  assert_int_equal(rf, fsum);
  assert_true(rf >= 1);
  free(j);
  free(x);
}

/* On a terminal, progress names each check as it starts (a minute in one
 * plugin must not look hung); in a pipe there is none. */
static void test_conformance_progress(void **state) {
  (void)state;
  if (access("/usr/bin/script", X_OK) != 0) skip(); /* util-linux script: runs bp on a pty */
  char p[PATH_MAX], cmd[4 * PATH_MAX + 256], *out;
  broken("good", p, sizeof p);
  for (int tty = 1; tty >= 0; tty--) {
    if (tty) /* stdout and stderr on the pty; script copies both to us */
      snprintf(cmd, sizeof cmd, "/usr/bin/script -qec \"'%s' conformance --quick '%s'\" /dev/null", bp_path, p);
    else
      snprintf(cmd, sizeof cmd, "'%s' conformance --quick '%s' 2>&1", bp_path, p);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t cap = 1 << 20, len = 0, n;
    out = malloc(cap);
    assert_non_null(out);
    while ((n = fread(out + len, 1, cap - len - 1, f)) > 0) len += n;
    out[len] = '\0';
    pclose(f);
    assert_non_null(strstr(out, "RESULT: "));
    if (tty) {
      assert_non_null(strstr(out, "\033[K[1/1] backend-good.so: abi: strings (1 done)"));
      assert_non_null(strstr(out, "good/good: probe: capability table ("));
    } else { /* a pipe: no progress at all */
      assert_null(strstr(out, "\033[K"));
      assert_null(strstr(out, "(1 done)"));
    }
    free(out);
  }
}

/* A failing bp_graph_rebind fails the graphs case. */
static void test_conformance_rebind_checked(void **state) {
  (void)state;
  char args[PATH_MAX + 64], env[2 * PATH_MAX + 256], *out;
  snprintf(args, sizeof args, "conformance --quick '%s/../plugins/backend-cpu.so'", test_dir);
  const char *asan = getenv("ASAN_OPTIONS");
  snprintf(env, sizeof env, "CF_SABOTAGE=rebind LD_PRELOAD='%s/fixtures/libcf_sabotage.so' ASAN_OPTIONS='%s%sverify_asan_link_order=0'",
           test_dir, asan ? asan : "", asan && *asan ? ":" : "");
  assert_int_equal(run_bp_env(env, args, &out), 1);
  assert_true(case_result(out, "capture gemm+add+softmax, launch, rebind", "FAIL"));
  assert_non_null(strstr(out, "bp_graph_rebind: BP_ERR_INTERNAL"));
  free(out);
}

/* A child that hangs or crashes is reported, and its staging directory is
 * removed by the parent all the same. The loader probes in-process here
 * (BACKPLANE_ISOLATE=0) so the fault reaches the conformance child. */
static void test_conformance_cleans_up(void **state) {
  (void)state;
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s/conformance-tmp-XXXXXX", test_dir);
  assert_non_null(mkdtemp(tmp));
  const char *const variants[] = {"hang", "crash"};
  for (int i = 0; i < 2; i++) {
    char p[PATH_MAX], args[PATH_MAX + 64], env[PATH_MAX + 64], *out;
    broken(variants[i], p, sizeof p);
    snprintf(args, sizeof args, "conformance --timeout 2 '%s'", p);
    snprintf(env, sizeof env, "BACKPLANE_ISOLATE=0 TMPDIR='%s'", tmp);
    assert_int_equal(run_bp_env(env, args, &out), 1);
    assert_non_null(strstr(out, "CRASH"));
    /* Under ASan a SIGSEGV ends as exit status 1, not a signal. */
    assert_non_null(strstr(out, i ? "in start-up" : "timed out after 2 s in start-up"));
    free(out);
    DIR *d = opendir(tmp);
    assert_non_null(d);
    int left = 0;
    for (struct dirent *e; (e = readdir(d));)
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        print_message("left behind: %s/%s\n", tmp, e->d_name);
        left++;
      }
    closedir(d);
    assert_int_equal(left, 0);
  }
  rmdir(tmp);
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
  snprintf(test_dir, sizeof test_dir, "%s", exe);
  snprintf(bp_path, sizeof bp_path, "%s/../bin/bp", exe);
  return access(bp_path, X_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_usage),       cmocka_unit_test(test_bad_values), cmocka_unit_test(test_search_dirs_and_why),       cmocka_unit_test(test_devices), cmocka_unit_test(test_devices_memory),
      cmocka_unit_test(test_devices_json), cmocka_unit_test(test_run_cpu),
      cmocka_unit_test(test_run_json),    cmocka_unit_test(test_bench_quick),
      cmocka_unit_test(test_tune_cache_and_json),
      cmocka_unit_test(test_conformance_unavailable), cmocka_unit_test(test_conformance_claim_without_op),
      cmocka_unit_test(test_conformance_unclaimed_ops_called), cmocka_unit_test(test_conformance_rebind_checked),
      cmocka_unit_test(test_conformance_no_reference), cmocka_unit_test(test_conformance_json_junit_counts),
      cmocka_unit_test(test_conformance_progress),
      cmocka_unit_test(test_conformance_cleans_up),
  };
  return cmocka_run_group_tests_name("bp_cli", tests, find_bp, NULL);
}
