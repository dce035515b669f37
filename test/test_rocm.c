/*
 * test_rocm.c — the host side of backend-rocm.so through the public API,
 * against the CPU shims of the HIP runtime and hiprtc (test/shims/hip):
 * what is ROCm's own — the ROCm 5 property layout and APUs, the runtime
 * absent, no hiprtc or an unreadable architecture, argument marshalling
 * and launches compared with the "cpu-ref" device, the code-object cache,
 * another thread, launch and compile failures. What CUDA and ROCm do alike
 * (device records, init failure, memory, streams, events, out of memory,
 * leaks) is test_gpu_runtime.c (test_rocm_runtime); every op family's
 * launch path is compared with the reference by test_rocm_ops, which runs
 * the op suites on the shim's device.
 *
 * The test points BACKPLANE_HIP_RUNTIME / BACKPLANE_HIPRTC at the shims
 * next to this binary, XDG_CACHE_HOME at a fresh directory, and varies the
 * shims' environment (BP_HIP_SHIM_*) between contexts.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"
#include "gpu_test.h"

#define ROCM_TEST_CACHE_TAG "bp-test-rocm"
#include "test_rocm.h"

/* ROCm 5 has only the old hipDeviceProp_t; an APU is an integrated GPU. */
static void test_probe_rocm5_layout_and_apu(void **state) {
  (void)state;
  setenv("BP_HIP_SHIM_PROPS", "r0000", 1);
  setenv("BP_HIP_SHIM_ARCH", "gfx1103", 1);
  setenv("BP_HIP_SHIM_INTEGRATED", "1", 1);
  bp_context_t *ctx = gpu_test_context();
  bp_device_entry_t e;
  assert_true(gpu_test_entry(ctx, "rocm", 0, &e));
  gpu_test_expect_text("description", e.info.description, "gfx1103");
  assert_int_equal(e.info.kind, BP_DEVICE_INTEGRATED_GPU);
  assert_int_not_equal(e.info.op_dtypes[BP_OP_GEMM], 0);
  bp_context_destroy(ctx);
}

static void test_runtime_absent(void **state) {
  (void)state;
  setenv("BACKPLANE_HIP_RUNTIME", "/nonexistent/libamdhip64.so", 1);
  gpu_test_expect_refused(
      "rocm", "ROCm runtime not found (/nonexistent/libamdhip64.so)");
  unsetenv("BACKPLANE_HIP_RUNTIME"); /* the default names */
  /* The shims this test keeps loaded carry the soname libamdhip64.so, and
   * dlopen of a bare name finds an already loaded soname first. */
  if (!dlopen("libamdhip64.so.6", RTLD_NOW | RTLD_NOLOAD) &&
      !dlopen("libamdhip64.so", RTLD_NOW | RTLD_NOLOAD) &&
      access("/usr/lib/x86_64-linux-gnu/libamdhip64.so.6", F_OK) != 0 &&
      access("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5", F_OK) != 0 &&
      access("/opt/rocm/lib/libamdhip64.so", F_OK) != 0)
    gpu_test_expect_refused("rocm", "ROCm runtime not found (libamdhip64.so)");
}

static void test_no_hiprtc_or_arch(void **state) {
  (void)state;
  setenv("BACKPLANE_HIPRTC", "/nonexistent/libhiprtc.so", 1);
  gpu_test_expect_no_ops("rocm", "hiprtc missing");
  setenv("BACKPLANE_HIPRTC", rtc_path, 1);
  setenv("BP_HIP_SHIM_ARCH", "not-an-arch", 1);
  gpu_test_expect_no_ops("rocm", "gcnArchName unreadable");
}

/* ---- launches against the reference --------------------------------- */

enum { GM = 37, GN = 29, GK = 53, LDA = 40, EW_R = 5, EW_C = 7 };
typedef struct results {
  float gemm[GM * GN];
  float bcast[EW_R * EW_C];
  float unary_t[EW_R * EW_C];
  float bf16_gemm[GM * GN];
} results_t;

static void upload(bp_device_t *d, bp_buffer_t **b, const float *h, size_t n) {
  assert_int_equal(bp_buffer_alloc(d, n * 4, b), BP_OK);
  assert_int_equal(bp_buffer_write(*b, 0, h, n * 4), BP_OK);
}

/* The same calls on any device: a transposed, padded gemm with alpha and
 * beta; a broadcasting add; exp over a transposed view; a bf16 gemm. */
static void compute(bp_context_t *ctx, const char *sel, results_t *out) {
  static float a[GK * LDA], b[GK * GN], c[GM * GN], x[EW_R * EW_C], v[EW_C];
  for (int i = 0; i < GK * LDA; i++)
    a[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
  for (int i = 0; i < GK * GN; i++)
    b[i] = (float)((i * 13) % 17) / 8.0f - 1.0f;
  for (int i = 0; i < GM * GN; i++)
    c[i] = (float)(i % 5) - 2.0f;
  for (int i = 0; i < EW_R * EW_C; i++)
    x[i] = (float)i / 10.0f - 1.5f;
  for (int i = 0; i < EW_C; i++)
    v[i] = (float)i * 0.25f;
  bp_device_t *d = gpu_test_open_device(ctx, sel, NULL);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  bp_buffer_t *ba, *bb, *bc, *bx, *bv, *by, *bz, *ha, *hb, *hc;
  upload(d, &ba, a, GK * LDA);
  upload(d, &bb, b, GK * GN);
  upload(d, &bc, c, GM * GN);
  upload(d, &bx, x, EW_R * EW_C);
  upload(d, &bv, v, EW_C);
  upload(d, &by, x, EW_R * EW_C);
  upload(d, &bz, x, EW_R * EW_C);
  /* A is stored k x m (lda 40), used transposed. */
  assert_int_equal(bp_gemm(s, BP_F32, BP_ROW_MAJOR, BP_TRANS, BP_NO_TRANS, GM,
                           GN, GK, 1.5, ba, 0, LDA, bb, 0, GN, 0.5, bc, 0, GN),
                   BP_OK);
  int64_t shape[2] = {EW_R, EW_C}, vshape[1] = {EW_C};
  int64_t tshape[2] = {EW_C, EW_R}, tstrides[2] = {1, EW_C};
  bp_tensor_t tx, tv, ty, txt, tzt;
  assert_int_equal(bp_tensor_init(bx, 0, BP_F32, 2, shape, NULL, &tx), BP_OK);
  assert_int_equal(bp_tensor_init(bv, 0, BP_F32, 1, vshape, NULL, &tv), BP_OK);
  assert_int_equal(bp_tensor_init(by, 0, BP_F32, 2, shape, NULL, &ty), BP_OK);
  assert_int_equal(bp_binary(s, BP_BINARY_ADD, &tx, &tv, &ty), BP_OK);
  assert_int_equal(bp_tensor_init(bx, 0, BP_F32, 2, tshape, tstrides, &txt),
                   BP_OK);
  assert_int_equal(bp_tensor_init(bz, 0, BP_F32, 2, tshape, NULL, &tzt), BP_OK);
  assert_int_equal(bp_unary(s, BP_UNARY_EXP, &txt, &tzt), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  assert_int_equal(bp_buffer_read(bc, 0, out->gemm, sizeof out->gemm), BP_OK);
  assert_int_equal(bp_buffer_read(by, 0, out->bcast, sizeof out->bcast), BP_OK);
  assert_int_equal(bp_buffer_read(bz, 0, out->unary_t, sizeof out->unary_t),
                   BP_OK);
  /* bf16: cast the f32 operands, multiply, cast back. */
  int64_t ash[1] = {GK * LDA}, bsh[1] = {GK * GN}, csh[1] = {GM * GN};
  assert_int_equal(bp_buffer_alloc(d, sizeof a / 2, &ha), BP_OK);
  assert_int_equal(bp_buffer_alloc(d, sizeof b / 2, &hb), BP_OK);
  assert_int_equal(bp_buffer_alloc(d, sizeof c / 2, &hc), BP_OK);
  bp_tensor_t f, h;
  assert_int_equal(bp_tensor_init(ba, 0, BP_F32, 1, ash, NULL, &f), BP_OK);
  assert_int_equal(bp_tensor_init(ha, 0, BP_BF16, 1, ash, NULL, &h), BP_OK);
  assert_int_equal(bp_cast(s, &f, &h), BP_OK);
  assert_int_equal(bp_tensor_init(bb, 0, BP_F32, 1, bsh, NULL, &f), BP_OK);
  assert_int_equal(bp_tensor_init(hb, 0, BP_BF16, 1, bsh, NULL, &h), BP_OK);
  assert_int_equal(bp_cast(s, &f, &h), BP_OK);
  assert_int_equal(bp_gemm(s, BP_BF16, BP_ROW_MAJOR, BP_TRANS, BP_NO_TRANS, GM,
                           GN, GK, 1.0, ha, 0, LDA, hb, 0, GN, 0.0, hc, 0, GN),
                   BP_OK);
  assert_int_equal(bp_tensor_init(hc, 0, BP_BF16, 1, csh, NULL, &h), BP_OK);
  assert_int_equal(bp_tensor_init(bc, 0, BP_F32, 1, csh, NULL, &f), BP_OK);
  assert_int_equal(bp_cast(s, &h, &f), BP_OK);
  assert_int_equal(bp_buffer_read(bc, 0, out->bf16_gemm, sizeof out->bf16_gemm),
                   BP_OK);
  bp_buffer_t *all[] = {ba, bb, bc, bx, bv, by, bz, ha, hb, hc};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    bp_buffer_free(all[i]);
  bp_stream_destroy(s);
  bp_device_close(d);
}

static void expect_close(const float *got, const float *want, size_t n,
                         float tol, const char *what) {
  for (size_t i = 0; i < n; i++) {
    float diff = got[i] - want[i];
    if (diff < 0)
      diff = -diff;
    float scale = want[i] < 0 ? -want[i] : want[i];
    if (diff > tol * (1.0f + scale))
      fail_msg("%s[%zu]: rocm %.9g, cpu-ref %.9g", what, i, got[i], want[i]);
  }
}

static void test_marshalling_vs_reference(void **state) {
  (void)state;
  static results_t rocm, ref;
  bp_context_t *ctx = gpu_test_context();
  shim_stats_t before = stats();
  compute(ctx, "rocm", &rocm);
  compute(ctx, "cpu-ref", &ref);
  /* gemm, binary, unary and four casts went through hipModuleLaunchKernel
   * (the dense f32 -> f32 parts as copies). */
  assert_true(stats().launches >= before.launches + 6);
  expect_close(rocm.gemm, ref.gemm, GM * GN, 1e-5f, "gemm f32");
  expect_close(rocm.bcast, ref.bcast, EW_R * EW_C, 0, "binary broadcast");
  expect_close(rocm.unary_t, ref.unary_t, EW_R * EW_C, 1e-6f, "exp transposed");
  expect_close(rocm.bf16_gemm, ref.bf16_gemm, GM * GN, 1e-2f, "gemm bf16");
  bp_context_destroy(ctx);
}

/* ---- the code-object cache ----------------------------------------------- */

static int count_cache_files(const char *home) {
  char cmd[PATH_MAX + 64];
  snprintf(cmd, sizeof cmd, "ls '%s/backplane/rocm' 2>/dev/null | wc -l",
           home);
  FILE *p = popen(cmd, "r");
  int n = -1;
  if (p) {
    if (fscanf(p, "%d", &n) != 1)
      n = -1;
    pclose(p);
  }
  return n;
}

/* One fill in a fresh context; returns the hiprtc compiles it caused. */
static int64_t fill_in_new_context(void) {
  int64_t before = shim_compiles_fn();
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = gpu_test_open_device(ctx, "rocm", NULL);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  assert_int_equal(gpu_test_fill(d, s, 100, 2.5f), BP_OK);
  bp_stream_destroy(s);
  bp_device_close(d);
  bp_context_destroy(ctx);
  return shim_compiles_fn() - before;
}

static void test_code_object_cache(void **state) {
  (void)state;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/fresh", cache_home);
  setenv("XDG_CACHE_HOME", dir, 1); /* does not exist yet: created */
  assert_int_equal(fill_in_new_context(), 1); /* compiled, then stored */
  assert_int_equal(count_cache_files(dir), 1);
  int64_t loads = stats().loads;
  assert_int_equal(fill_in_new_context(), 0); /* from the cache */
  assert_int_equal(stats().loads, loads + 1);
  /* A damaged file is recompiled and replaced. */
  char cmd[PATH_MAX + 64];
  snprintf(cmd, sizeof cmd, "for f in '%s'/backplane/rocm/*; do echo junk > \"$f\"; done",
           dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(fill_in_new_context(), 1);
  assert_int_equal(fill_in_new_context(), 0);
  /* Another architecture is another code object. */
  setenv("BP_HIP_SHIM_ARCH", "gfx1100", 1);
  assert_int_equal(fill_in_new_context(), 1);
  assert_int_equal(count_cache_files(dir), 2);
}

/* ---- threads, leaks, errors ---------------------------------------------- */

static void *fill_thread(void *arg) {
  bp_device_t *d = arg;
  bp_stream_t *s = NULL;
  bp_status_t st = bp_stream_create(d, &s);
  if (st == BP_OK)
    st = gpu_test_fill(d, s, 64, 4.0f);
  bp_stream_destroy(s);
  return (void *)(intptr_t)st;
}

/* HIP's current device is per thread: a thread that never touched the
 * device must still work (the shim refuses calls without hipSetDevice). */
static void test_other_thread(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = gpu_test_open_device(ctx, "rocm", NULL);
  pthread_t t;
  void *ret = NULL;
  assert_int_equal(pthread_create(&t, NULL, fill_thread, d), 0);
  assert_int_equal(pthread_join(t, &ret), 0);
  assert_int_equal((intptr_t)ret, BP_OK);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

static void test_launch_and_compile_failures(void **state) {
  (void)state;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/failures", cache_home);
  setenv("XDG_CACHE_HOME", dir, 1); /* nothing cached: every module compiles */
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = gpu_test_open_device(ctx, "rocm", NULL);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  setenv("BP_HIP_SHIM_FAIL", "compile", 1);
  assert_int_equal(gpu_test_fill(d, s, 16, 1.0f), BP_ERR_INTERNAL);
  gpu_test_expect_message("hiprtc could not compile elementwise.hip for "
                               "gfx90a:sramecc+:xnack-");
  gpu_test_expect_message("injected failure"); /* the log reaches users */
  setenv("BP_HIP_SHIM_FAIL", "module", 1);
  assert_int_equal(gpu_test_fill(d, s, 16, 1.0f), BP_ERR_INCOMPATIBLE);
  gpu_test_expect_message("hipModuleLoadData(elementwise.hip");
  setenv("BP_HIP_SHIM_FAIL", "launch", 1);
  assert_int_equal(gpu_test_fill(d, s, 16, 1.0f), BP_ERR_DEVICE_LOST);
  gpu_test_expect_message(
      "hipModuleLaunchKernel(bp_fill): hipErrorLaunchFailure");
  unsetenv("BP_HIP_SHIM_FAIL");
  assert_int_equal(gpu_test_fill(d, s, 16, 1.0f), BP_OK);
  /* Attention whose shared memory exceeds the 64 KiB of LDS is refused
   * before launch, with the numbers. */
  int64_t shape[4] = {1, 1, 2, 256};
  bp_buffer_t *b = NULL;
  assert_int_equal(bp_buffer_alloc(d, 4 * 2 * 256 * 4, &b), BP_OK);
  bp_tensor_t t[4];
  for (int i = 0; i < 4; i++)
    assert_int_equal(bp_tensor_init(b, (uint64_t)i * 2 * 256 * 4, BP_F32, 4,
                                    shape, NULL, &t[i]),
                     BP_OK);
  assert_int_equal(bp_attention(s, &t[0], &t[1], &t[2], 0, false, &t[3]),
                   BP_ERR_UNSUPPORTED);
  gpu_test_expect_message("bytes of shared memory; the device allows 65536");
  bp_buffer_free(b);
  bp_stream_destroy(s);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_probe_rocm5_layout_and_apu, reset_env),
      cmocka_unit_test_setup(test_runtime_absent, reset_env),
      cmocka_unit_test_setup(test_no_hiprtc_or_arch, reset_env),
      cmocka_unit_test_setup(test_marshalling_vs_reference, reset_env),
      cmocka_unit_test_setup(test_code_object_cache, reset_env),
      cmocka_unit_test_setup(test_other_thread, reset_env),
      cmocka_unit_test_setup(test_launch_and_compile_failures, reset_env),
  };
  return cmocka_run_group_tests_name("rocm", tests, group_setup,
                                     group_teardown);
}
