/*
 * test_cuda.c — the host side of backend-cuda.so through the public API,
 * against the CPU shim of libcuda.so.1 (test/shims/cuda): what is CUDA's
 * own — the driver absent or too old, old GPUs and old PTX drivers, pinned
 * host memory, launch and JIT failures, launch geometry, custom PTX
 * kernels. What CUDA and ROCm do alike (device records, init failure,
 * memory, streams, events, out of memory, leaks) is test_gpu_runtime.c
 * (test_cuda_runtime); the ops are compared with the reference by
 * test_cuda_ops, which runs the op suites on the shim's device.
 *
 * The test points BACKPLANE_CUDA_DRIVER at the shim next to this binary
 * ($(B)/test/shims/cuda/libcuda.so.1) and varies the shim's environment
 * (BP_CUDA_SHIM_*) between contexts.
 */
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"
#include "gpu_test.h"

typedef gpu_test_cuda_stats_t shim_stats_t;

static char shim_path[PATH_MAX];
GPU_TEST_SHIM_STATS(shim_stats_t)

/* Finds the shim next to this binary and keeps it loaded, so its counters
 * outlive each context (the plugin opens the same file: same instance). */
static int group_setup(void **state) {
  (void)state;
  char dir[PATH_MAX];
  void *h = gpu_test_dir(dir, sizeof dir)
                ? gpu_test_open(dir, "shims/cuda/libcuda.so.1", shim_path,
                                sizeof shim_path)
                : NULL;
  if (!h)
    return -1;
  *(void **)&shim_stats_fn = dlsym(h, "bp_cuda_shim_stats");
  setenv("BACKPLANE_CUDA_DRIVER", shim_path, 1);
  return shim_stats_fn ? 0 : -1;
}

static int reset_env(void **state) {
  (void)state;
  setenv("BACKPLANE_CUDA_DRIVER", shim_path, 1);
  /* The own kernels' paths (launch counts, leaks); the cuBLAS path is
   * test_cuda_blas's. */
  setenv("BACKPLANE_CUDA_BLAS", "0", 1);
  unsetenv("BP_CUDA_SHIM_FAIL");
  unsetenv("BP_CUDA_SHIM_CC");
  unsetenv("BP_CUDA_SHIM_DRIVER");
  unsetenv("BP_CUDA_SHIM_DEVICES");
  unsetenv("BP_CUDA_SHIM_MEM");
  return 0;
}


static void test_driver_absent(void **state) {
  (void)state;
  setenv("BACKPLANE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  gpu_test_expect_refused("cuda", "not found");
  unsetenv("BACKPLANE_CUDA_DRIVER"); /* the default name */
  if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) &&
      access("/usr/lib/x86_64-linux-gnu/libcuda.so.1", F_OK) != 0)
    gpu_test_expect_refused("cuda", "libcuda.so.1 not found");
}

static void test_driver_too_old(void **state) {
  (void)state;
  setenv("BP_CUDA_SHIM_DRIVER", "10020", 1); /* CUDA 10.2 */
  gpu_test_expect_refused("cuda", "11.0");
}

static void test_old_gpu_and_old_ptx_driver(void **state) {
  (void)state;
  setenv("BP_CUDA_SHIM_CC", "75", 1);
  gpu_test_expect_no_ops("cuda", "below 8.0");
  unsetenv("BP_CUDA_SHIM_CC");
  setenv("BP_CUDA_SHIM_DRIVER", "12040", 1); /* older than the PTX ISA */
  gpu_test_expect_no_ops("cuda", "needs a CUDA");
}

/* Memory, copies, streams and events: test_gpu_runtime.c (both backends).
 *
 * bp_host_alloc on CUDA is page-locked memory from cuMemHostAlloc, usable
 * for async copies, and closing the device frees what is left. */
static void test_host_memory(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = gpu_test_open_device(ctx, "cuda", NULL);
  bp_stream_t *s = NULL;
  bp_buffer_t *b = NULL;
  float *h = NULL, *leftover = NULL;
  assert_int_equal(bp_host_alloc(d, 64 * sizeof(float), (void **)&h), BP_OK);
  assert_int_equal(bp_host_alloc(d, 16, (void **)&leftover), BP_OK);
  assert_int_equal(stats().host_blocks, 2);
  for (int i = 0; i < 64; i++) h[i] = (float)i;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  assert_int_equal(bp_buffer_alloc(d, 64 * sizeof(float), &b), BP_OK);
  assert_int_equal(bp_buffer_write_async(s, b, 0, h, 64 * sizeof(float)), BP_OK);
  memset(h, 0, 64 * sizeof(float));
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  assert_int_equal(bp_buffer_read_async(s, b, 0, h, 64 * sizeof(float)), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  assert_true(h[63] == 63.0f);
  bp_host_free(d, h);
  assert_int_equal(stats().host_blocks, 1);
  bp_device_close(d); /* frees the leftover block */
  assert_int_equal(stats().host_blocks, 0);
  bp_context_destroy(ctx);
}

/* The leading fields of DLManagedTensorVersioned (DLPack 1.0). */
typedef struct {
  uint32_t major, minor;
  void *ctx;
  void (*deleter)(void *self);
  uint64_t flags;
  void *data;
  int32_t device_type, device_id;
} dl_head_t;

/* A CUDA buffer exports as a kDLCUDA tensor: the plugin says so in its
 * device info (ABI 1.3), the core does not guess from the backend's name. */
static void test_dlpack_device(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = gpu_test_open_device(ctx, "cuda", NULL);
  bp_device_entry_t e;
  assert_int_equal(bp_device_entry(d, &e), BP_OK);
  assert_int_equal(e.info.dlpack_device_type, 2);
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(d, 64, &b), BP_OK);
  bp_tensor_t t;
  int64_t n = 16;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, &n, NULL, &t), BP_OK);
  void *m = NULL;
  assert_int_equal(bp_tensor_to_dlpack(&t, true, &m), BP_OK);
  dl_head_t *dl = m;
  assert_int_equal(dl->device_type, 2); /* kDLCUDA */
  assert_int_equal(dl->device_id, (int32_t)e.backend_index);
  dl->deleter(m);
  bp_buffer_free(b);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

static void test_launch_and_jit_failures(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = gpu_test_open_device(ctx, "cuda", NULL);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  setenv("BP_CUDA_SHIM_FAIL", "module", 1); /* the JIT refuses the PTX */
  assert_int_equal(gpu_test_fill(d, s, 16, 1.0f), BP_ERR_INTERNAL);
  gpu_test_expect_message("CUDA_ERROR_INVALID_PTX");
  /* the JIT log reaches the user */
  gpu_test_expect_message("injected failure");
  setenv("BP_CUDA_SHIM_FAIL", "launch", 1);
  assert_int_equal(gpu_test_fill(d, s, 16, 1.0f), BP_ERR_DEVICE_LOST);
  gpu_test_expect_message("cuLaunchKernel(bp_fill): CUDA_ERROR_LAUNCH_FAILED");
  unsetenv("BP_CUDA_SHIM_FAIL");
  assert_int_equal(gpu_test_fill(d, s, 16, 1.0f), BP_OK);
  assert_int_equal(stats().ctx_depth, 0);
  bp_stream_destroy(s);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

/* Launch geometry at the edges: a grid-stride fill larger than one grid,
 * and attention whose shared memory needs the opt-in (head dim 128). */
static void test_launch_geometry(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = gpu_test_open_device(ctx, "cuda", NULL);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  assert_int_equal(gpu_test_fill(d, s, 20000000, 3.0f), BP_OK);
  int64_t shape[4] = {1, 2, 3, 128};
  bp_buffer_t *b = NULL;
  assert_int_equal(bp_buffer_alloc(d, 4 * 2 * 3 * 128 * 4, &b), BP_OK);
  bp_tensor_t q, k, v, o;
  for (int i = 0; i < 4; i++) {
    bp_tensor_t *t[4] = {&q, &k, &v, &o};
    assert_int_equal(bp_tensor_init(b, (uint64_t)i * 2 * 3 * 128 * 4, BP_F32,
                                    4, shape, NULL, t[i]),
                     BP_OK);
    if (i < 3)
      assert_int_equal(bp_fill(s, t[i], 0.25), BP_OK);
  }
  assert_int_equal(bp_attention(s, &q, &k, &v, 0, true, &o), BP_OK);
  float out = 0;
  assert_int_equal(bp_buffer_read(b, 3 * 2 * 3 * 128 * 4, &out, 4), BP_OK);
  assert_true(out == 0.25f); /* a mean of equal values */
  bp_buffer_free(b);
  bp_stream_destroy(s);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

/* ---- custom PTX kernels ------------------------------------------------- */

/* test/fixtures/cuda_custom.ptx (nvcc output of cuda_custom.cu). */
static const char custom_ptx[] =
#include "cuda_custom_ptx.inc"
    ;

static bp_kernel_t *custom_kernel(bp_device_t *d, const char *entry,
                                  uint32_t n, const bp_kernel_arg_kind_t *sig) {
  bp_kernel_t *k = NULL;
  /* Without the NUL: the plugin must not rely on one. */
  bp_status_t st = bp_kernel_create(d, BP_KERNEL_PTX, custom_ptx,
                                    sizeof custom_ptx - 1, entry, NULL, n,
                                    sig, &k);
  if (st != BP_OK)
    fail_msg("bp_kernel_create(%s): %s", entry, bp_last_error());
  return k;
}

static void test_custom_saxpy(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  bp_device_entry_t e;
  assert_true(gpu_test_entry(ctx, "cuda", 0, &e));
  assert_true(e.info.kernel_formats & BP_KERNEL_FORMAT_BIT(BP_KERNEL_PTX));
  bp_device_t *d = gpu_test_open_device(ctx, "cuda", NULL);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  int64_t modules = stats().modules;
  const bp_kernel_arg_kind_t sig[4] = {BP_ARG_BUFFER, BP_ARG_BUFFER,
                                       BP_ARG_F32, BP_ARG_I32};
  bp_kernel_t *k = custom_kernel(d, "bp_test_saxpy", 4, sig);
  assert_int_equal(stats().modules, modules + 1);
  enum { N = GPU_TEST_SAXPY_N };
  bp_buffer_t *x = NULL, *y = NULL;
  bp_kernel_arg_t args[4];
  gpu_test_saxpy_setup(d, &x, &y, args);
  const uint32_t grid[3] = {(N + 127) / 128, 1, 1}, block[3] = {128, 1, 1};
  int64_t launches = stats().launches;
  assert_int_equal(bp_kernel_launch(s, k, grid, block, 0, 4, args), BP_OK);
  assert_int_equal(stats().launches, launches + 1);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  gpu_test_saxpy_check(y);
  /* The core's checks, before the plugin sees the launch. */
  args[2].kind = BP_ARG_F64;
  assert_int_equal(bp_kernel_launch(s, k, grid, block, 0, 4, args),
                   BP_ERR_INVALID_ARGUMENT);
  args[2].kind = BP_ARG_F32;
  assert_int_equal(bp_kernel_launch(s, k, grid, block, 0, 3, args),
                   BP_ERR_INVALID_ARGUMENT);
  args[0].offset = N * sizeof(float) + 16;
  assert_int_equal(bp_kernel_launch(s, k, grid, block, 0, 4, args),
                   BP_ERR_INVALID_ARGUMENT);
  /* An n past the buffers is what a GPU reports as an illegal address. */
  args[0].offset = 16;
  /* (1 GiB of floats: past any pool block the core may have carved y from) */
  args[3].value.i32 = 1 << 28;
  const uint32_t wide[3] = {(1u << 28) / 128, 1, 1};
  assert_int_equal(bp_kernel_launch(s, k, wide, block, 0, 4, args),
                   BP_ERR_DEVICE_LOST);
  gpu_test_expect_message(
      "cuLaunchKernel(bp_test_saxpy): CUDA_ERROR_ILLEGAL_ADDRESS");
  args[3].value.i32 = N;
  setenv("BP_CUDA_SHIM_FAIL", "launch", 1);
  assert_int_equal(bp_kernel_launch(s, k, grid, block, 0, 4, args),
                   BP_ERR_DEVICE_LOST);
  gpu_test_expect_message("CUDA_ERROR_LAUNCH_FAILED");
  unsetenv("BP_CUDA_SHIM_FAIL");
  bp_kernel_destroy(k);
  assert_int_equal(stats().modules, modules);
  assert_int_equal(stats().ctx_depth, 0);
  bp_buffer_free(x);
  bp_buffer_free(y);
  bp_stream_destroy(s);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

/* Every scalar kind arrives at its position and width; dynamic shared
 * memory reaches the launch. */
static void test_custom_args_and_shared(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = gpu_test_open_device(ctx, "cuda", NULL);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  bp_kernel_arg_kind_t sig[7];
  gpu_test_args_sig(sig);
  bp_kernel_t *k = custom_kernel(d, "bp_test_args", 7, sig);
  gpu_test_check_args(d, s, k);
  bp_kernel_destroy(k);

  const bp_kernel_arg_kind_t rsig[2] = {BP_ARG_BUFFER, BP_ARG_BUFFER};
  k = custom_kernel(d, "bp_test_reverse", 2, rsig);
  bp_kernel_arg_t r[2];
  gpu_test_check_reverse(d, s, k, r);
  const uint32_t grid[3] = {GPU_TEST_RG, 1, 1}, block[3] = {GPU_TEST_RB, 1, 1};
  /* Without the shared memory it needs the kernel faults... */
  assert_int_equal(bp_kernel_launch(s, k, grid, block, 0, 2, r),
                   BP_ERR_DEVICE_LOST);
  /* ...over the 48 KiB default it is opted in, past the device's limit
   * refused before the launch. */
  assert_int_equal(bp_kernel_launch(s, k, grid, block, 100 * 1024, 2, r),
                   BP_OK);
  assert_int_equal(bp_kernel_launch(s, k, grid, block, 300 * 1024, 2, r),
                   BP_ERR_UNSUPPORTED);
  gpu_test_expect_message(
      "bp_test_reverse needs 307200 bytes of shared memory");
  bp_kernel_destroy(k);
  bp_buffer_free(r[0].buffer);
  bp_buffer_free(r[1].buffer);
  bp_stream_destroy(s);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

static void test_custom_errors(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = gpu_test_open_device(ctx, "cuda", NULL);
  int64_t modules = stats().modules;
  bp_kernel_t *k = (bp_kernel_t *)1;
  const size_t n = sizeof custom_ptx - 1;
  assert_int_equal(bp_kernel_create(d, BP_KERNEL_PTX, custom_ptx, n, "nope",
                                    NULL, 0, NULL, &k),
                   BP_ERR_NOT_FOUND);
  assert_null(k);
  gpu_test_expect_message("no such .entry");
  const char junk[] = "this is not PTX";
  assert_int_equal(bp_kernel_create(d, BP_KERNEL_PTX, junk, sizeof junk - 1,
                                    "f", NULL, 0, NULL, &k),
                   BP_ERR_INVALID_ARGUMENT);
  gpu_test_expect_message("CUDA_ERROR_INVALID_IMAGE");
  setenv("BP_CUDA_SHIM_FAIL", "module", 1);
  assert_int_equal(bp_kernel_create(d, BP_KERNEL_PTX, custom_ptx, n,
                                    "bp_test_saxpy", NULL, 0, NULL, &k),
                   BP_ERR_INVALID_ARGUMENT);
  /* the JIT log reaches the user */
  gpu_test_expect_message("injected failure");
  unsetenv("BP_CUDA_SHIM_FAIL");
  assert_int_equal(bp_kernel_create(d, BP_KERNEL_PTX, custom_ptx, n,
                                    "bp_test_saxpy", "-O3", 0, NULL, &k),
                   BP_ERR_UNSUPPORTED);
  assert_int_equal(bp_kernel_create(d, BP_KERNEL_HIP, custom_ptx, n,
                                    "bp_test_saxpy", NULL, 0, NULL, &k),
                   BP_ERR_UNSUPPORTED);
  assert_int_equal(stats().modules, modules); /* failures leak no module */
  assert_int_equal(stats().ctx_depth, 0);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_driver_absent, reset_env),
      cmocka_unit_test_setup(test_dlpack_device, reset_env),
      cmocka_unit_test_setup(test_driver_too_old, reset_env),
      cmocka_unit_test_setup(test_old_gpu_and_old_ptx_driver, reset_env),
      cmocka_unit_test_setup(test_host_memory, reset_env),
      cmocka_unit_test_setup(test_launch_and_jit_failures, reset_env),
      cmocka_unit_test_setup(test_launch_geometry, reset_env),
      cmocka_unit_test_setup(test_custom_saxpy, reset_env),
      cmocka_unit_test_setup(test_custom_args_and_shared, reset_env),
      cmocka_unit_test_setup(test_custom_errors, reset_env),
  };
  return cmocka_run_group_tests_name("cuda", tests, group_setup, NULL);
}
