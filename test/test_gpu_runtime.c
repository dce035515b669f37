/*
 * test_gpu_runtime.c — what the CUDA and ROCm backends do alike through
 * the public API against their CPU shims: memory and copies (synchronous,
 * at offsets, asynchronous on a stream), streams and events (timing, a
 * cross-stream wait, an event never recorded refused), with the shim's
 * live-object counters. Built twice (test/shims.mk): test_cuda_runtime
 * with -DBP_TEST_CUDA, test_rocm_runtime with -DBP_TEST_ROCM. Each
 * backend's own behaviour (probe, driver versions, errors, kernels) is in
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
#elif defined(BP_TEST_ROCM)
#define BACKEND "rocm"
#define SHIM_FILE "shims/hip/libamdhip64.so"
#define SHIM_ENV "BACKPLANE_HIP_RUNTIME"
#define STATS_SYM "bp_hip_shim_stats"
#else
#error "build with -DBP_TEST_CUDA or -DBP_TEST_ROCM"
#endif

/* The counters both shims' statistics start with (bp_cuda_shim_stats_t,
 * bp_hip_shim_stats_t), room left for the rest of either. */
typedef struct shim_counts {
  int64_t allocations, bytes_in_use, streams, events, modules;
  int64_t rest[64];
} shim_counts_t;

static void (*shim_stats_fn)(shim_counts_t *);
static char cache_dir[] = "/tmp/bp-gpu-runtime-XXXXXX";

static shim_counts_t stats(void) {
  shim_counts_t s;
  memset(&s, 0, sizeof s);
  shim_stats_fn(&s);
  return s;
}

static int group_setup(void **state) {
  (void)state;
  char dir[PATH_MAX], path[PATH_MAX + 64];
  if (!gpu_test_dir(dir, sizeof dir))
    return -1;
  void *h = gpu_test_open(dir, SHIM_FILE, path, sizeof path);
  if (!h)
    return -1;
  *(void **)&shim_stats_fn = dlsym(h, STATS_SYM);
  setenv(SHIM_ENV, path, 1);
#ifdef BP_TEST_ROCM
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

static bp_device_t *open_backend(bp_context_t *ctx) {
  bp_device_t *d = NULL;
  if (bp_device_open(ctx, BACKEND, NULL, &d) != BP_OK)
    fail_msg("bp_device_open(" BACKEND "): %s", bp_last_error());
  return d;
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
      cmocka_unit_test(test_memory_and_copies),
      cmocka_unit_test(test_events),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
