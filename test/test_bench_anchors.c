/*
 * test_bench_anchors.c — bp bench's library anchors say what they are:
 *  - an anchor that is not installed, or that pip could not fetch (the
 *    missing-PACKAGE.txt `make bench` leaves in the venv), is reported as
 *    absent with the reason, in the text and in --json, and never gets a
 *    ratio or the "best" slot;
 *  - an OpenBLAS on a lesser kernel than the CPU has (OPENBLAS_CORETYPE=
 *    Prescott set by the caller) has its ratios marked "not comparable" and
 *    is not the best anchor;
 *  - left to itself on an AVX2 / AVX-512 CPU, Debian's OpenBLAS ends up on
 *    a kernel of the CPU's level (forced where it does not know the CPU);
 *  - --isa avx2 on an AVX-512 CPU holds every side to AVX2: the machine's
 *    peak, OpenBLAS's core, the other anchors' own ceilings (a value the
 *    caller set kept), the JSON record; a level it cannot take is a usage
 *    error.
 * Results only, never timings: bp bench --quick --op gemm on the cpu
 * device, with a venv folder made here (no network, no real venv needed).
 */
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/skip.h"

static char bp_path[PATH_MAX];
static char venv[PATH_MAX]; /* an empty venv but for pip's reason for mkl */

#define PIP_REASON "No matching distribution found for mkl (network unreachable)"

/* Runs "ENV bp bench ARGS" and returns its exit status and stdout. */
static int run_bench(const char *env, const char *args, char **out) {
  char cmd[3 * PATH_MAX + 512];
  snprintf(cmd, sizeof cmd,
           "%s BP_BENCH_ANCHORS='%s' '%s' bench --quick --op gemm "
           "--device cpu %s 2>/dev/null",
           env, venv, bp_path, args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t cap = 1 << 16, len = 0, n;
  char *buf = malloc(cap);
  assert_non_null(buf);
  while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0)
    if ((len += n) + 1 == cap) assert_non_null(buf = realloc(buf, cap *= 2));
  buf[len] = '\0';
  int st = pclose(p);
  *out = buf;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char buf[1 << 18];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* The line of out that starts (after spaces and '|') with name + space,
 * inside the results (after the device header); NULL when none. */
static const char *case_line(const char *out, const char *name) {
  const char *p = strstr(out, "\ndevice: ");
  char key[64];
  snprintf(key, sizeof key, "| %s ", name);
  return p ? strstr(p, key) : NULL;
}

static bool line_has(const char *line, const char *needle) {
  const char *end = line ? strchr(line, '\n') : NULL;
  const char *hit = line ? strstr(line, needle) : NULL;
  return hit && (!end || hit < end);
}

static bool have_debian_openblas(void) {
  void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != NULL;
}

static void test_missing_anchor_reported(void **state) {
  (void)state;
  char *out, json[PATH_MAX + 16], args[PATH_MAX + 32];
  snprintf(json, sizeof json, "%s/out.json", venv);
  snprintf(args, sizeof args, "--json '%s'", json);
  assert_int_equal(run_bench("", args, &out), 0);
  /* the header: pip's reason for mkl, not-found for the others */
  assert_non_null(strstr(out, "  mkl           absent: pip could not install mkl: " PIP_REASON));
  assert_non_null(strstr(out, "  onednn        absent: "));
  assert_non_null(strstr(out, "libdnnl.so.3 not found; make bench installs onednn-cpu-gomp"));
  /* each GEMM case lists mkl as absent, with no time or ratio */
  const char *mkl = case_line(out, "mkl");
  assert_non_null(mkl);
  assert_true(line_has(mkl, "absent: pip could not install mkl"));
  const char *json_text = slurp(json);
  assert_non_null(strstr(json_text, "\"name\": \"mkl\", \"package\": \"mkl\", \"present\": false, "
                                    "\"why\": \"pip could not install mkl: " PIP_REASON "\""));
  assert_null(strstr(json_text, "\"best\": \"mkl\""));
  assert_null(strstr(json_text, "\"best\": \"onednn\""));
  free(out);
}

static void test_lesser_kernel_marked(void **state) {
  (void)state;
  if (!have_debian_openblas()) TEST_SKIP_CASE("libopenblas.so.0 not installed");
  char *out, json[PATH_MAX + 16], args[PATH_MAX + 32];
  snprintf(json, sizeof json, "%s/prescott.json", venv);
  snprintf(args, sizeof args, "--json '%s'", json);
  assert_int_equal(run_bench("OPENBLAS_CORETYPE=Prescott", args, &out), 0);
  assert_non_null(strstr(out, "OPENBLAS_CORETYPE=Prescott set by the caller"));
  assert_non_null(strstr(out, "NOT COMPARABLE"));
  const char *ob = case_line(out, "openblas");
  assert_non_null(ob);
  assert_true(line_has(ob, "not comparable: core Prescott"));
  /* the only library present is on a lesser kernel: no best anchor */
  assert_non_null(strstr(out, "% | (none)"));
  const char *json_text = slurp(json);
  assert_non_null(strstr(json_text, "\"name\": \"openblas\", \"ms\": "));
  assert_non_null(strstr(json_text, "\"comparable\": false, \"kernel\": \"core Prescott"));
  assert_null(strstr(json_text, "\"best\": \"openblas\""));
  free(out);
}

static void test_lesser_kernel_forced(void **state) {
  (void)state;
  if (!have_debian_openblas()) TEST_SKIP_CASE("libopenblas.so.0 not installed");
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) TEST_SKIP_CASE("no AVX2: nothing to force");
#else
  TEST_SKIP_CASE("not x86-64");
#endif
  char *out;
  assert_int_equal(run_bench("env -u OPENBLAS_CORETYPE", "", &out), 0);
  assert_null(strstr(out, "NOT COMPARABLE"));
  const char *ob = case_line(out, "openblas");
  assert_non_null(ob);
  assert_false(line_has(ob, "not comparable"));
  assert_non_null(strstr(out, "\ngemm       256x256x256                    f32"));
  free(out);
}

static void test_isa_cap(void **state) {
  (void)state;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) TEST_SKIP_CASE("no AVX-512: --isa avx2 lowers nothing");
#else
  TEST_SKIP_CASE("not x86-64");
#endif
  char *out, json[PATH_MAX + 16], args[PATH_MAX + 48];
  snprintf(json, sizeof json, "%s/isa.json", venv);
  snprintf(args, sizeof args, "--isa avx2 --json '%s'", json);
  assert_int_equal(run_bench("env -u OPENBLAS_CORETYPE -u ONEDNN_MAX_CPU_ISA "
                             "-u ATEN_CPU_CAPABILITY MKL_ENABLE_INSTRUCTIONS=SSE4_2",
                             args, &out),
                   0);
  assert_non_null(strstr(out, "machine: "));
  assert_non_null(strstr(out, " x avx2+fma (8 f32 lanes, "));
  assert_non_null(strstr(out, "isa:     at most avx2 (--isa): CPU devices opened with isa_max avx2"));
  assert_non_null(strstr(out, "MKL_ENABLE_INSTRUCTIONS=SSE4_2, ONEDNN_MAX_CPU_ISA=AVX2, "
                              "ATEN_CPU_CAPABILITY=avx2"));
  if (have_debian_openblas()) {
    assert_non_null(strstr(out, "kernel: core Haswell (avx2 kernels); forced OPENBLAS_CORETYPE=Haswell"));
    assert_null(strstr(out, "NOT COMPARABLE"));
  }
  assert_non_null(strstr(slurp(json), "\"isa\": \"avx2+fma\", \"isa_cap\": \"avx2\""));
  free(out);
  if (have_debian_openblas()) { /* a kernel above the ceiling is no fair anchor either */
    assert_int_equal(run_bench("OPENBLAS_CORETYPE=SkylakeX", "--isa avx2", &out), 0);
    assert_non_null(strstr(out, "NOT COMPARABLE: its kernel is not at this CPU's avx2 (the --isa ceiling)"));
    assert_true(line_has(case_line(out, "openblas"), "not comparable: core SkylakeX"));
    free(out);
  }
  assert_int_equal(run_bench("", "--isa avx512", &out), 2);
  free(out);
  assert_int_equal(run_bench("", "--isa neon", &out), 2);
  free(out);
}

static int setup(void **state) {
  (void)state;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(bp_path, sizeof bp_path, "%s/../bin/bp", exe);
  snprintf(venv, sizeof venv, "/tmp/bp-bench-anchors-XXXXXX");
  if (!mkdtemp(venv)) return -1;
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/missing-mkl.txt", venv);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "%s\n", PIP_REASON);
  fclose(f);
  return access(bp_path, X_OK);
}

static int teardown(void **state) {
  (void)state;
  const char *files[] = {"missing-mkl.txt", "out.json", "prescott.json", "isa.json"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", venv, files[i]);
    unlink(path);
  }
  rmdir(venv);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_missing_anchor_reported),
      cmocka_unit_test(test_lesser_kernel_marked),
      cmocka_unit_test(test_lesser_kernel_forced),
      cmocka_unit_test(test_isa_cap),
  };
  return cmocka_run_group_tests_name("bench_anchors", tests, setup, teardown);
}
