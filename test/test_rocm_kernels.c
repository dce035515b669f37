/*
 * test_rocm_kernels.c — custom HIP kernels (BP_KERNEL_HIP) on backend-rocm.so
 * against the CPU shims of the HIP runtime and hiprtc (test/shims/hip):
 * compilation through hiprtc with the code-object cache, the kernelParams
 * marshalling of every argument kind, dynamic shared memory, and the error
 * paths. The shims run C twins of the kernels below
 * (test/shims/cuda/custom.c), checking the parameter sizes hiprtc saw
 * against them; the HIP code itself is not run.
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

#define ROCM_TEST_CACHE_TAG "bp-test-rocm-kernels"
#include "test_rocm.h"

/* The same kernels as test/fixtures/cuda_custom.cu, in HIP. */
static const char hip_src[] =
    "#include <hip/hip_runtime.h>\n"
    "extern \"C\" __global__ void bp_test_saxpy(float *y, const float *x,\n"
    "                                          float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void bp_test_args(long long *out, int i32,\n"
    "    unsigned u32, long long i64, unsigned long long u64, float f32,\n"
    "    double f64) {\n"
    "  if (blockIdx.x == 0 && threadIdx.x == 0) {\n"
    "    out[0] = i32; out[1] = u32; out[2] = i64; out[3] = (long long)u64;\n"
    "    out[4] = __float_as_int(f32); out[5] = __double_as_longlong(f64);\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void bp_test_reverse(float *y, const float *x) {\n"
    "  extern __shared__ float tile[];\n"
    "  unsigned base = blockIdx.x * blockDim.x, t = threadIdx.x;\n"
    "  tile[t] = x[base + t];\n"
    "  __syncthreads();\n"
    "  y[base + t] = tile[blockDim.x - 1 - t];\n"
    "}\n";

static void expect_text(const char *part) {
  if (!strstr(bp_last_error(), part))
    fail_msg("message \"%s\" lacks \"%s\"", bp_last_error(), part);
}

typedef struct fx {
  bp_context_t *ctx;
  bp_device_t *d;
  bp_stream_t *s;
} fx_t;

static fx_t open_rocm(void) {
  fx_t f = {0};
  assert_int_equal(bp_context_create(NULL, &f.ctx), BP_OK);
  if (bp_device_open(f.ctx, "rocm", NULL, &f.d) != BP_OK)
    fail_msg("bp_device_open(rocm): %s", bp_last_error());
  assert_int_equal(bp_stream_create(f.d, &f.s), BP_OK);
  return f;
}

static void close_rocm(fx_t *f) {
  bp_stream_destroy(f->s);
  bp_device_close(f->d);
  bp_context_destroy(f->ctx);
}

static bp_status_t create(bp_device_t *d, const char *entry,
                          const char *options, uint32_t n,
                          const bp_kernel_arg_kind_t *sig, bp_kernel_t **k) {
  /* Without the NUL: the plugin must not rely on one. */
  return bp_kernel_create(d, BP_KERNEL_HIP, hip_src, sizeof hip_src - 1, entry,
                          options, n, sig, k);
}

static void test_saxpy_and_cache(void **state) {
  (void)state;
  fx_t f = open_rocm();
  uint32_t count = 0;
  bp_device_entry_t e;
  assert_int_equal(bp_context_device_count(f.ctx, &count), BP_OK);
  bool found = false;
  for (uint32_t i = 0; i < count && !found; i++)
    found = bp_context_device_entry(f.ctx, i, &e) == BP_OK &&
            strcmp(e.backend, "rocm") == 0;
  assert_true(found);
  assert_true(e.info.kernel_formats & BP_KERNEL_FORMAT_BIT(BP_KERNEL_HIP));
  const bp_kernel_arg_kind_t sig[4] = {BP_ARG_BUFFER, BP_ARG_BUFFER,
                                       BP_ARG_F32, BP_ARG_I32};
  int64_t compiles = shim_compiles_fn(), modules = stats().modules;
  bp_kernel_t *k = NULL;
  if (create(f.d, "bp_test_saxpy", NULL, 4, sig, &k) != BP_OK)
    fail_msg("bp_kernel_create: %s", bp_last_error());
  assert_int_equal(shim_compiles_fn(), compiles + 1);
  assert_int_equal(stats().modules, modules + 1);
  enum { N = GPU_TEST_SAXPY_N };
  bp_buffer_t *x = NULL, *y = NULL;
  bp_kernel_arg_t args[4];
  gpu_test_saxpy_setup(f.d, &x, &y, args);
  const uint32_t grid[3] = {(N + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
  assert_int_equal(bp_kernel_launch(f.s, k, grid, block, 0, 4, args), BP_OK);
  assert_int_equal(bp_stream_synchronize(f.s), BP_OK);
  gpu_test_saxpy_check(y);
  args[1].kind = BP_ARG_U64; /* the core checks kinds first */
  assert_int_equal(bp_kernel_launch(f.s, k, grid, block, 0, 4, args),
                   BP_ERR_INVALID_ARGUMENT);
  args[1].kind = BP_ARG_BUFFER;
  setenv("BP_HIP_SHIM_FAIL", "launch", 1);
  assert_int_equal(bp_kernel_launch(f.s, k, grid, block, 0, 4, args),
                   BP_ERR_DEVICE_LOST);
  expect_text("hipModuleLaunchKernel(bp_test_saxpy)");
  unsetenv("BP_HIP_SHIM_FAIL");
  bp_kernel_destroy(k);
  assert_int_equal(stats().modules, modules);
  /* The same source again comes from the code-object cache; other options
   * are another code object. */
  assert_int_equal(create(f.d, "bp_test_saxpy", NULL, 4, sig, &k), BP_OK);
  assert_int_equal(shim_compiles_fn(), compiles + 1);
  bp_kernel_destroy(k);
  assert_int_equal(create(f.d, "bp_test_saxpy", "-DBP_X=1 -O2", 4, sig, &k),
                   BP_OK);
  assert_int_equal(shim_compiles_fn(), compiles + 2);
  bp_kernel_destroy(k);
  bp_buffer_free(x);
  bp_buffer_free(y);
  close_rocm(&f);
}

static void test_args_and_shared(void **state) {
  (void)state;
  fx_t f = open_rocm();
  bp_kernel_arg_kind_t sig[7];
  gpu_test_args_sig(sig);
  bp_kernel_t *k = NULL;
  assert_int_equal(create(f.d, "bp_test_args", NULL, 7, sig, &k), BP_OK);
  gpu_test_check_args(f.d, f.s, k);
  bp_kernel_destroy(k);

  const bp_kernel_arg_kind_t rsig[2] = {BP_ARG_BUFFER, BP_ARG_BUFFER};
  assert_int_equal(create(f.d, "bp_test_reverse", NULL, 2, rsig, &k), BP_OK);
  bp_kernel_arg_t r[2];
  gpu_test_check_reverse(f.d, f.s, k, r);
  const uint32_t grid[3] = {GPU_TEST_RG, 1, 1}, block[3] = {GPU_TEST_RB, 1, 1};
  /* Without its shared memory the kernel faults; more than the 64 KiB of
   * LDS is refused before the launch. */
  assert_int_equal(bp_kernel_launch(f.s, k, grid, block, 0, 2, r),
                   BP_ERR_DEVICE_LOST);
  assert_int_equal(bp_kernel_launch(f.s, k, grid, block, 100 * 1024, 2, r),
                   BP_ERR_UNSUPPORTED);
  expect_text("bp_test_reverse needs 102400 bytes of shared memory");
  bp_kernel_destroy(k);
  bp_buffer_free(r[0].buffer);
  bp_buffer_free(r[1].buffer);
  close_rocm(&f);
}

static void test_errors(void **state) {
  (void)state;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/errors", cache_home);
  setenv("XDG_CACHE_HOME", dir, 1); /* nothing cached: every create compiles */
  fx_t f = open_rocm();
  int64_t modules = stats().modules;
  bp_kernel_t *k = (bp_kernel_t *)1;
  assert_int_equal(create(f.d, "nope", NULL, 0, NULL, &k), BP_ERR_NOT_FOUND);
  assert_null(k);
  expect_text("no such kernel in the code object");
  setenv("BP_HIP_SHIM_FAIL", "compile", 1);
  assert_int_equal(create(f.d, "bp_test_saxpy", NULL, 0, NULL, &k),
                   BP_ERR_INVALID_ARGUMENT);
  expect_text("hiprtc could not compile custom-bp_test_saxpy.hip for gfx");
  expect_text("injected failure"); /* the compile log reaches the user */
  unsetenv("BP_HIP_SHIM_FAIL");
  assert_int_equal(bp_kernel_create(f.d, BP_KERNEL_PTX, "x", 1, "f", NULL, 0,
                                    NULL, &k),
                   BP_ERR_UNSUPPORTED);
  assert_int_equal(stats().modules, modules); /* failures leak no module */
  close_rocm(&f);
  /* Without hiprtc the device takes no HIP source. */
  setenv("BACKPLANE_HIPRTC", "/nonexistent/libhiprtc.so", 1);
  f = open_rocm();
  assert_int_equal(create(f.d, "bp_test_saxpy", NULL, 0, NULL, &k),
                   BP_ERR_UNSUPPORTED);
  close_rocm(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_saxpy_and_cache, reset_env),
      cmocka_unit_test_setup(test_args_and_shared, reset_env),
      cmocka_unit_test_setup(test_errors, reset_env),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
