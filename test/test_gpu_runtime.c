/*
 * test_gpu_runtime.c — what the CUDA and ROCm backends do alike through
 * the public API against their CPU shims: the probe's device records, an
 * init failure refused at probe, memory and copies (synchronous,
 * at offsets, asynchronous on a stream), streams and events (timing, a
 * cross-stream wait, an event never recorded refused), out of memory (the
 * driver's and the configured limit), and no leaks by the shim's
 * live-object counters. Built twice (test/shims.mk): test_cuda_runtime
 * with -DBP_TEST_CUDA, test_rocm_runtime with -DBP_TEST_ROCM. Each
 * backend's own behaviour (missing libraries, driver versions, devices
 * without ops, host memory, launch errors, kernels) is in
 * test_cuda.c / test_rocm.c.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"
#include "test/common/gpu_test.h"

#if defined(BP_TEST_CUDA)
#define BACKEND "cuda"
#define SHIM_FILE "shims/cuda/libcuda.so.1"
#define SHIM_ENV "BACKPLANE_CUDA_DRIVER"
#define STATS_SYM "bp_cuda_shim_stats"
#define BLAS_ENV "BACKPLANE_CUDA_BLAS"
#define SHIM_VAR(x) "BP_CUDA_SHIM_" x
/* Unset before each test, besides SHIM_VAR("FAIL" / "MEM" / "DEVICES"). */
#define SHIM_VARS_OWN {SHIM_VAR("CC"), SHIM_VAR("DRIVER")}
/* What the shim's second device reports (test/shims/cuda/driver.c). */
#define PROBE_NAME "backplane CUDA shim 1 (CPU)"
#define PROBE_VENDOR "NVIDIA"
#define PROBE_IDENTITY "pci:0000:0b:00.0"
#define PROBE_UNITS 4
#define PROBE_DRIVER "CUDA 13.0"
#define PROBE_DESCRIPTION "sm_80"
#define PROBE_UUID "GPU-10111213-"
#define PROBE_HALF BP_F16
#define INIT_FAILED "CUDA_ERROR_NO_DEVICE"
typedef gpu_test_cuda_stats_t shim_stats_t;
#elif defined(BP_TEST_ROCM)
#define BACKEND "rocm"
#define SHIM_FILE "shims/hip/libamdhip64.so"
#define SHIM_ENV "BACKPLANE_HIP_RUNTIME"
#define STATS_SYM "bp_hip_shim_stats"
#define BLAS_ENV "BACKPLANE_ROCM_BLAS"
#define SHIM_VAR(x) "BP_HIP_SHIM_" x
#define SHIM_VARS_OWN                                                          \
  {SHIM_VAR("ARCH"), SHIM_VAR("PROPS"), SHIM_VAR("INTEGRATED")}
/* What the shim's second device reports (test/shims/hip/runtime.c). */
#define PROBE_NAME "backplane HIP shim 1 (CPU)"
#define PROBE_VENDOR "AMD"
#define PROBE_IDENTITY "pci:0000:c2:00.0"
#define PROBE_UNITS 104
#define PROBE_DRIVER "HIP 6.2.41134 (driver 6.2.41133)"
#define PROBE_DESCRIPTION "gfx90a:sramecc+:xnack-, 104 CUs"
#define PROBE_UUID "GPU-5a1b2c3d4e5f6a71"
#define PROBE_HALF BP_BF16
#define INIT_FAILED "hipInit failed: hipErrorNoDevice"
typedef gpu_test_hip_stats_t shim_stats_t;
#else
#error "build with -DBP_TEST_CUDA or -DBP_TEST_ROCM"
#endif

GPU_TEST_SHIM_STATS(shim_stats_t)
static char shim_path[PATH_MAX + 64];
static char cache_dir[] = "/tmp/bp-gpu-runtime-XXXXXX";

static int group_setup(void **state) {
  (void)state;
  char dir[PATH_MAX];
  if (!gpu_test_dir(dir, sizeof dir))
    return -1;
  void *h = gpu_test_open(dir, SHIM_FILE, shim_path, sizeof shim_path);
  if (!h)
    return -1;
  *(void **)&shim_stats_fn = dlsym(h, STATS_SYM);
  setenv(SHIM_ENV, shim_path, 1);
#ifdef BP_TEST_ROCM
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/shims/hip/libhiprtc.so", dir);
  setenv("BACKPLANE_HIPRTC", path, 1);
#endif
  if (!mkdtemp(cache_dir))
    return -1;
  setenv("XDG_CACHE_HOME", cache_dir, 1);
  return shim_stats_fn ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  return gpu_test_rmtree(cache_dir);
}

/* Every test starts from the shim as found, its defaults, and the own
 * kernels (the vendor BLAS path is test_*_blas's). */
static int reset_env(void **state) {
  (void)state;
  setenv(SHIM_ENV, shim_path, 1);
  setenv(BLAS_ENV, "0", 1);
  const char *vars[] = SHIM_VARS_OWN;
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    unsetenv(vars[i]);
  unsetenv(SHIM_VAR("FAIL"));
  unsetenv(SHIM_VAR("MEM"));
  unsetenv(SHIM_VAR("DEVICES"));
  return 0;
}

static bp_device_t *open_backend(bp_context_t *ctx) {
  return gpu_test_open_device(ctx, BACKEND, NULL);
}

static void test_probe_records(void **state) {
  (void)state;
  setenv(SHIM_VAR("DEVICES"), "2", 1);
  bp_context_t *ctx = gpu_test_context();
  bp_plugin_report_t r = gpu_test_report(ctx, BACKEND);
  assert_true(r.loaded);
  assert_int_equal(r.device_count, 2);
  bp_device_entry_t e;
  assert_true(gpu_test_entry(ctx, BACKEND, 1, &e));
  assert_string_equal(e.info.name, PROBE_NAME);
  assert_string_equal(e.info.vendor, PROBE_VENDOR);
  assert_string_equal(e.info.identity, PROBE_IDENTITY);
  assert_int_equal(e.info.kind, BP_DEVICE_DISCRETE_GPU);
  assert_int_equal(e.info.memory_bytes, 1u << 30);
  assert_int_equal(e.info.compute_units, PROBE_UNITS);
  gpu_test_expect_text("driver version", e.info.driver_version, PROBE_DRIVER);
  gpu_test_expect_text("description", e.info.description, PROBE_DESCRIPTION);
  gpu_test_expect_text("description", e.info.description, PROBE_UUID);
  assert_true(e.info.peak_gflops > 0 && e.info.bandwidth_gbs > 0);
  assert_int_equal(e.info.op_dtypes[BP_OP_GEMM] & BP_DTYPE_BIT(PROBE_HALF),
                   BP_DTYPE_BIT(PROBE_HALF));
  assert_int_equal(e.info.op_dtypes[BP_OP_CAST] & BP_DTYPE_BIT(BP_U8),
                   BP_DTYPE_BIT(BP_U8));
  /* A discrete GPU outranks the CPU. */
  bp_device_entry_t best;
  assert_int_equal(bp_context_device_entry(ctx, 0, &best), BP_OK);
  assert_string_equal(best.backend, BACKEND);
  bp_context_destroy(ctx);
}

static void test_init_fails(void **state) {
  (void)state;
  setenv(SHIM_VAR("FAIL"), "init", 1);
  gpu_test_expect_refused(BACKEND, INIT_FAILED);
}

/* Everything the plugin created reaches the driver's destroy calls (on
 * CUDA, every entry point also pops the context it pushed). */
static void test_no_leaks(void **state) {
  (void)state;
  shim_stats_t before = stats();
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = open_backend(ctx);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  assert_int_equal(gpu_test_fill(d, s, 300, 1.5f), BP_OK);
  assert_true(stats().modules >= 1);
  assert_true(stats().launches > before.launches);
#ifdef BP_TEST_CUDA
  assert_int_equal(stats().ctx_depth, 0);
#endif
  bp_stream_destroy(s);
  bp_device_close(d);
  bp_context_destroy(ctx);
  shim_stats_t after = stats();
  assert_int_equal(after.allocations, before.allocations);
  assert_int_equal(after.bytes_in_use, before.bytes_in_use);
  assert_int_equal(after.streams, before.streams);
  assert_int_equal(after.events, before.events);
  assert_int_equal(after.modules, before.modules);
#ifdef BP_TEST_CUDA
  assert_int_equal(after.primary_ctx_refs, before.primary_ctx_refs);
  assert_int_equal(after.ctx_depth, 0);
#endif
}

static void test_out_of_memory(void **state) {
  (void)state;
  setenv(SHIM_VAR("MEM"), "1048576", 1); /* 1 MiB of "device" memory */
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = open_backend(ctx);
  bp_buffer_t *b = NULL;
  assert_int_equal(bp_buffer_alloc(d, 4u << 20, &b), BP_ERR_OUT_OF_MEMORY);
  gpu_test_expect_message("4194304 bytes requested");
  gpu_test_expect_message("bytes free of 1048576");
  setenv(SHIM_VAR("FAIL"), "alloc", 1);
  assert_int_equal(bp_buffer_alloc(d, 256, &b), BP_ERR_OUT_OF_MEMORY);
  unsetenv(SHIM_VAR("FAIL"));
  bp_device_close(d);
  /* The configured memory limit is the plugin's own check. */
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .memory_limit = 4096};
  d = gpu_test_open_device(ctx, BACKEND, &cfg);
  assert_int_equal(bp_buffer_alloc(d, 8192, &b), BP_ERR_OUT_OF_MEMORY);
  gpu_test_expect_message("memory_limit");
  bp_device_close(d);
  bp_context_destroy(ctx);
}

static void test_memory_and_copies(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = open_backend(ctx);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  enum { N = 1000 };
  int32_t host[N], back[N];
  for (int i = 0; i < N; i++)
    host[i] = i * 7 - 300;
  bp_buffer_t *a = NULL, *b = NULL;
  assert_int_equal(bp_buffer_alloc(d, sizeof host, &a), BP_OK);
  assert_int_equal(bp_buffer_alloc(d, sizeof host + 64, &b), BP_OK);
  assert_int_equal(bp_buffer_write(a, 0, host, sizeof host), BP_OK);
  assert_int_equal(bp_buffer_copy(b, 64, a, 0, sizeof host), BP_OK);
  memset(back, 0, sizeof back);
  assert_int_equal(bp_buffer_read(b, 64, back, sizeof back), BP_OK);
  assert_memory_equal(host, back, sizeof host);
  /* Asynchronous copies on a stream, then a partial read at an offset. */
  for (int i = 0; i < N; i++)
    host[i] = -i;
  assert_int_equal(bp_buffer_write_async(s, a, 0, host, sizeof host), BP_OK);
  memset(back, 0, sizeof back);
  assert_int_equal(bp_buffer_read_async(s, a, 40, back, 400), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  assert_memory_equal(host + 10, back, 400);
  assert_true(stats().allocations >= 1); /* the core pool may carve both from one */
  bp_buffer_free(a);
  bp_buffer_free(b);
  bp_stream_destroy(s);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

static void test_events(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = open_backend(ctx);
  bp_stream_t *s = NULL, *s2 = NULL;
  bp_event_t *e0 = NULL, *e1 = NULL, *never = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  assert_int_equal(bp_stream_create(d, &s2), BP_OK);
  assert_int_equal(bp_event_create(d, &e0), BP_OK);
  assert_int_equal(bp_event_create(d, &e1), BP_OK);
  assert_int_equal(bp_event_create(d, &never), BP_OK);
  assert_int_equal(bp_event_record(e0, s), BP_OK);
  usleep(2000);
  assert_int_equal(bp_event_record(e1, s), BP_OK);
  assert_int_equal(bp_stream_wait_event(s2, e1), BP_OK);
  assert_int_equal(bp_event_synchronize(e1), BP_OK);
  double ms = -1;
  assert_int_equal(bp_event_elapsed_ms(e0, e1, &ms), BP_OK);
  assert_true(ms >= 1.0 && ms < 1000.0);
  /* Timing an event never recorded is refused (by the core, before the
   * driver would refuse it too). */
  assert_int_equal(bp_event_elapsed_ms(e0, never, &ms),
                   BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(stats().events, 3);
  assert_int_equal(stats().streams, 2);
  bp_event_destroy(e0);
  bp_event_destroy(e1);
  bp_event_destroy(never);
  bp_stream_destroy(s);
  bp_stream_destroy(s2);
  assert_int_equal(stats().events, 0);
  assert_int_equal(stats().streams, 0);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_probe_records, reset_env),
      cmocka_unit_test_setup(test_init_fails, reset_env),
      cmocka_unit_test_setup(test_memory_and_copies, reset_env),
      cmocka_unit_test_setup(test_events, reset_env),
      cmocka_unit_test_setup(test_no_leaks, reset_env),
      cmocka_unit_test_setup(test_out_of_memory, reset_env),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
