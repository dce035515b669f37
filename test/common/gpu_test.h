/*
 * gpu_test.h — helpers shared by the CUDA and ROCm backends' cmocka tests
 * (test_cuda, test_rocm, test_rocm_kernels, test_gpu_graphs,
 * test_gpu_blas): finding and keeping loaded the CPU shims next to the test
 * binary, and looking up a backend's plugin report and devices. Header-only
 * (static inline); include after <cmocka.h> and "backplane.h".
 */
#ifndef BP_TEST_GPU_TEST_H
#define BP_TEST_GPU_TEST_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The directory of this test binary ($(B)/test), where shims/ lives. */
static inline bool gpu_test_dir(char *out, size_t cap) {
  ssize_t n = readlink("/proc/self/exe", out, cap - 1);
  if (n <= 0)
    return false;
  out[n] = 0;
  *strrchr(out, '/') = 0;
  return true;
}

/* Opens dir/rel (a shim) and keeps it loaded, so that its counters outlive
 * each context: the plugin opening the same file gets the same instance.
 * The path goes to out_path; NULL (reported) when it does not load. */
static inline void *gpu_test_open(const char *dir, const char *rel,
                                  char *out_path, size_t cap) {
  snprintf(out_path, cap, "%s/%s", dir, rel);
  void *h = dlopen(out_path, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    fprintf(stderr, "gpu test: %s\n", dlerror());
  return h;
}

static inline bp_context_t *gpu_test_context(void) {
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  return ctx;
}

/* The named plugin's report (failing the test when it was not seen). */
static inline bp_plugin_report_t gpu_test_report(bp_context_t *ctx,
                                                 const char *plugin) {
  uint32_t n = 0;
  bp_plugin_report_t r;
  memset(&r, 0, sizeof r);
  assert_int_equal(bp_context_plugin_count(ctx, &n), BP_OK);
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(bp_context_plugin_report(ctx, i, &r), BP_OK);
    if (strcmp(r.name, plugin) == 0)
      return r;
  }
  fail_msg("backend-%s.so was not found on the plugin path", plugin);
  return r;
}

/* Device index of backend; false when there is none. */
static inline bool gpu_test_entry(bp_context_t *ctx, const char *backend,
                                  uint32_t index, bp_device_entry_t *e) {
  uint32_t n = 0;
  bp_context_device_count(ctx, &n);
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(bp_context_device_entry(ctx, i, e), BP_OK);
    if (strcmp(e->backend, backend) == 0 && e->backend_index == index)
      return true;
  }
  return false;
}

/* Removes a temporary directory tree; 0 on success. */
static inline int gpu_test_rmtree(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

#endif /* BP_TEST_GPU_TEST_H */
