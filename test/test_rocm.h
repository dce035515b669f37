/*
 * test_rocm.h — the fixture test_rocm.c and test_rocm_kernels.c share:
 * the HIP runtime and hiprtc shims found next to the test binary and kept
 * loaded (their counters outlive each context: the plugin opens the same
 * files, so it gets the same instances), a private code-object cache, and
 * the environment every test starts from. Include after "gpu_test.h";
 * define ROCM_TEST_CACHE_TAG (the cache directory's name under /tmp,
 * suffixed with the process id) first.
 */
#ifndef BP_TEST_ROCM_H
#define BP_TEST_ROCM_H

#include <limits.h>

#ifndef ROCM_TEST_CACHE_TAG
#error "define ROCM_TEST_CACHE_TAG before including test_rocm.h"
#endif

typedef gpu_test_hip_stats_t shim_stats_t;

static char hip_path[PATH_MAX], rtc_path[PATH_MAX], cache_home[PATH_MAX];
GPU_TEST_SHIM_STATS(shim_stats_t)
static int64_t (*shim_compiles_fn)(void);

static int group_setup(void **state) {
  (void)state;
  char dir[PATH_MAX];
  if (!gpu_test_dir(dir, sizeof dir))
    return -1;
  void *h = gpu_test_open(dir, "shims/hip/libamdhip64.so", hip_path,
                          sizeof hip_path);
  void *r = gpu_test_open(dir, "shims/hip/libhiprtc.so", rtc_path,
                          sizeof rtc_path);
  if (!h || !r)
    return -1;
  *(void **)&shim_stats_fn = dlsym(h, "bp_hip_shim_stats");
  *(void **)&shim_compiles_fn = dlsym(r, "bp_hiprtc_shim_compiles");
  snprintf(cache_home, sizeof cache_home, "/tmp/" ROCM_TEST_CACHE_TAG "-%ld",
           (long)getpid());
  return shim_stats_fn && shim_compiles_fn ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  return gpu_test_rmtree(cache_home);
}

static int reset_env(void **state) {
  (void)state;
  setenv("BACKPLANE_HIP_RUNTIME", hip_path, 1);
  /* The own kernels' paths; the rocBLAS path is test_rocm_blas's. */
  setenv("BACKPLANE_ROCM_BLAS", "0", 1);
  setenv("BACKPLANE_HIPRTC", rtc_path, 1);
  setenv("XDG_CACHE_HOME", cache_home, 1);
  unsetenv("BP_HIP_SHIM_FAIL");
  unsetenv("BP_HIP_SHIM_ARCH");
  unsetenv("BP_HIP_SHIM_PROPS");
  unsetenv("BP_HIP_SHIM_DEVICES");
  unsetenv("BP_HIP_SHIM_INTEGRATED");
  unsetenv("BP_HIP_SHIM_MEM");
  return 0;
}

#endif /* BP_TEST_ROCM_H */
