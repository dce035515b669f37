/*
 * test_loader_util.h — helpers shared by the test_loader_* tests.
 *
 * The tests find their fixtures relative to their own binary
 * ($(B)/test/test_loader_x): the broken variants in $(B)/test/broken and the
 * real CPU plugin in $(B)/plugins. Each test builds a private temporary
 * plugin directory, opens a context on it alone (only_plugin_dir), checks
 * the reports, and checks that the CPU device still computes.
 */
#ifndef TEST_LOADER_UTIL_H
#define TEST_LOADER_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

#include "backplane.h"

static char tl_build[PATH_MAX]; /* $(B) */

/* Finds $(B) from /proc/self/exe ($(B)/test/<binary>). */
static void tl_init_paths(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  assert_true(n > 0);
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  assert_non_null(slash);
  *slash = '\0';
  slash = strrchr(exe, '/');
  assert_non_null(slash);
  *slash = '\0';
  snprintf(tl_build, sizeof tl_build, "%s", exe);
  /* The user's preferences must not change what these tests see. */
  unsetenv("BACKPLANE_BACKENDS");
}

static void tl_broken_path(const char *name, char *out, size_t size) {
  snprintf(out, size, "%s/test/broken/backend-%s.so", tl_build, name);
}

static void tl_cpu_path(char *out, size_t size) {
  snprintf(out, size, "%s/plugins/backend-cpu.so", tl_build);
}

/* Creates a fresh private directory under /tmp. */
static void tl_mkdtemp(char *out, size_t size) {
  snprintf(out, size, "/tmp/bp-loader-test-XXXXXX");
  assert_non_null(mkdtemp(out));
}

static void tl_copy_file(const char *from, const char *to, mode_t mode) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0) fail_msg("cannot open fixture %s: %s", from, strerror(errno));
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  assert_true(out >= 0);
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0) assert_int_equal(write(out, buf, (size_t)n), n);
  assert_int_equal(n, 0);
  close(in);
  close(out);
  assert_int_equal(chmod(to, mode), 0); /* exact, whatever the umask */
}

/* Copies variant `variant` into dir as backend-<as>.so with mode 0755. */
static void tl_add(const char *dir, const char *variant, const char *as) {
  char from[PATH_MAX], to[PATH_MAX];
  tl_broken_path(variant, from, sizeof from);
  snprintf(to, sizeof to, "%s/backend-%s.so", dir, as);
  tl_copy_file(from, to, 0755);
}

/* Puts the real CPU plugin into dir (a symlink: the loader follows it). */
static void tl_add_cpu(const char *dir) {
  char from[PATH_MAX], to[PATH_MAX];
  tl_cpu_path(from, sizeof from);
  snprintf(to, sizeof to, "%s/backend-cpu.so", dir);
  assert_int_equal(symlink(from, to), 0);
}

static int tl_rm_one(const char *path, const struct stat *st, int flag,
                     struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

static void tl_rmtree(const char *dir) {
  assert_int_equal(nftw(dir, tl_rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* Opens a context on dir alone. */
static bp_context_t *tl_open_dir(const char *dir, bool isolate, uint32_t timeout_s) {
  bp_context_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.plugin_dir = dir;
  o.only_plugin_dir = true;
  o.isolate_probe = isolate;
  o.probe_timeout_s = timeout_s;
  bp_context_t *ctx = NULL;
  bp_status_t st = bp_context_create(&o, &ctx);
  if (st != BP_OK) fail_msg("bp_context_create: %s: %s", bp_status_name(st), bp_last_error());
  assert_non_null(ctx);
  return ctx;
}

/* Finds the report whose path ends in "/<file>"; false when none does. */
static bool tl_find(const bp_context_t *ctx, const char *file, bp_plugin_report_t *out) {
  uint32_t n = 0;
  assert_int_equal(bp_context_plugin_count(ctx, &n), BP_OK);
  size_t flen = strlen(file);
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(bp_context_plugin_report(ctx, i, out), BP_OK);
    size_t plen = strlen(out->path);
    if (plen > flen && out->path[plen - flen - 1] == '/' &&
        !strcmp(out->path + plen - flen, file))
      return true;
  }
  memset(out, 0, sizeof *out);
  return false;
}

/* Asserts that file was refused at stage with status and a reason
 * containing want (and want2 when not NULL). */
static void tl_expect_refused(const bp_context_t *ctx, const char *file,
                              bp_plugin_stage_t stage, bp_status_t status,
                              const char *want, const char *want2) {
  bp_plugin_report_t r;
  if (!tl_find(ctx, file, &r)) fail_msg("no report for %s", file);
  if (r.loaded || r.stage != stage || r.status != status || !strstr(r.reason, want) ||
      (want2 && !strstr(r.reason, want2)))
    fail_msg("%s: loaded %d stage %d (want %d) status %s (want %s) reason \"%s\" "
             "(want \"%s\"%s%s)",
             file, r.loaded, r.stage, stage, bp_status_name(r.status),
             bp_status_name(status), r.reason, want, want2 ? " and " : "",
             want2 ? want2 : "");
  assert_int_equal(r.device_count, 0);
}

static void tl_expect_loaded(const bp_context_t *ctx, const char *file) {
  bp_plugin_report_t r;
  if (!tl_find(ctx, file, &r)) fail_msg("no report for %s", file);
  if (!r.loaded || r.status != BP_OK || r.stage != BP_STAGE_READY)
    fail_msg("%s: not loaded: stage %d status %s reason \"%s\"", file, r.stage,
             bp_status_name(r.status), r.reason);
  assert_true(r.device_count > 0);
}

/* Opens the CPU device of ctx and checks that it computes: y = x + x over a
 * filled buffer, read back exactly. */
static void tl_cpu_works(bp_context_t *ctx) {
  tl_expect_loaded(ctx, "backend-cpu.so");
  bp_device_t *dev = NULL;
  bp_status_t st = bp_device_open(ctx, "cpu", NULL, &dev);
  if (st != BP_OK) fail_msg("open cpu: %s: %s", bp_status_name(st), bp_last_error());
  bp_buffer_t *buf = NULL;
  assert_int_equal(bp_buffer_alloc(dev, 2 * 64 * sizeof(float), &buf), BP_OK);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(dev, &s), BP_OK);
  int64_t shape[2] = {8, 8};
  bp_tensor_t x, y;
  assert_int_equal(bp_tensor_init(buf, 0, BP_F32, 2, shape, NULL, &x), BP_OK);
  assert_int_equal(bp_tensor_init(buf, 64 * sizeof(float), BP_F32, 2, shape, NULL, &y), BP_OK);
  assert_int_equal(bp_fill(s, &x, 1.25), BP_OK);
  assert_int_equal(bp_binary(s, BP_BINARY_ADD, &x, &x, &y), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  float out[64];
  memset(out, 0, sizeof out);
  assert_int_equal(bp_buffer_read(buf, 64 * sizeof(float), out, sizeof out), BP_OK);
  for (int i = 0; i < 64; i++) assert_true(out[i] == 2.5f);
  bp_stream_destroy(s);
  bp_buffer_free(buf);
  bp_device_close(dev);
}

/* One refusal test: dir holds the variant (as backend-<as>.so) and the CPU
 * plugin; the variant is refused for the given reason, the CPU works. */
__attribute__((unused)) static void tl_refusal_case(const char *variant, const char *as, bp_plugin_stage_t stage,
                            bp_status_t status, const char *want, const char *want2) {
  char dir[PATH_MAX], file[128];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, variant, as);
  tl_add_cpu(dir);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  snprintf(file, sizeof file, "backend-%s.so", as);
  tl_expect_refused(ctx, file, stage, status, want, want2);
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

static int tl_setup(void **state) {
  (void)state;
  tl_init_paths();
  return 0;
}

#endif /* TEST_LOADER_UTIL_H */
