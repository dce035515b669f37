/*
 * test_rocm.c — the host side of backend-rocm.so through the public API,
 * against the CPU shims of the HIP runtime and hiprtc (test/shims/hip):
 * probe and device records, memory and copies, streams and events, argument
 * marshalling and launches compared with the "cpu-ref" device, the
 * code-object cache, resource cleanup, and the error paths (runtime absent,
 * no hiprtc, unreadable architecture, out of memory, launch and compile
 * failures). Every op family's launch path is compared with the reference
 * by test_rocm_ops, which runs the op suites on the shim's device.
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

/* Mirrors bp_hip_shim_stats_t of test/shims/hip/shim.h. */
typedef struct shim_stats {
  int64_t allocations, bytes_in_use;
  int64_t streams, events, modules;
  int64_t launches, loads;
  int64_t graphs, graph_launches;
} shim_stats_t;

static char hip_path[PATH_MAX], rtc_path[PATH_MAX], cache_home[PATH_MAX];
static void (*shim_stats_fn)(shim_stats_t *);
static int64_t (*shim_compiles_fn)(void);

static shim_stats_t stats(void) {
  shim_stats_t s;
  memset(&s, 0, sizeof s);
  shim_stats_fn(&s);
  return s;
}

/* Finds the shims next to this binary and keeps them loaded, so their
 * counters outlive each context (the plugin opens the same files: the same
 * instances). */
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
  snprintf(cache_home, sizeof cache_home, "/tmp/bp-test-rocm-%ld",
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

static void expect_text(const char *text, const char *part) {
  if (!strstr(text, part))
    fail_msg("\"%s\" lacks \"%s\"", text, part);
}

static void test_probe_records(void **state) {
  (void)state;
  setenv("BP_HIP_SHIM_DEVICES", "2", 1);
  bp_context_t *ctx = gpu_test_context();
  bp_plugin_report_t r = gpu_test_report(ctx, "rocm");
  assert_true(r.loaded);
  assert_int_equal(r.device_count, 2);
  bp_device_entry_t e;
  assert_true(gpu_test_entry(ctx, "rocm", 1, &e));
  assert_string_equal(e.info.name, "backplane HIP shim 1 (CPU)");
  assert_string_equal(e.info.vendor, "AMD");
  assert_string_equal(e.info.identity, "pci:0000:c2:00.0");
  assert_int_equal(e.info.kind, BP_DEVICE_DISCRETE_GPU);
  assert_int_equal(e.info.memory_bytes, 1u << 30);
  assert_int_equal(e.info.compute_units, 104);
  expect_text(e.info.driver_version, "HIP 6.2.41134 (driver 6.2.41133)");
  expect_text(e.info.description, "gfx90a:sramecc+:xnack-, 104 CUs");
  expect_text(e.info.description, "GPU-5a1b2c3d4e5f6a71");
  assert_true(e.info.peak_gflops > 0 && e.info.bandwidth_gbs > 0);
  assert_int_equal(e.info.op_dtypes[BP_OP_GEMM] & BP_DTYPE_BIT(BP_BF16),
                   BP_DTYPE_BIT(BP_BF16));
  assert_int_equal(e.info.op_dtypes[BP_OP_CAST] & BP_DTYPE_BIT(BP_U8),
                   BP_DTYPE_BIT(BP_U8));
  /* A discrete GPU outranks the CPU. */
  bp_device_entry_t best;
  assert_int_equal(bp_context_device_entry(ctx, 0, &best), BP_OK);
  assert_string_equal(best.backend, "rocm");
  bp_context_destroy(ctx);
}

/* ROCm 5 has only the old hipDeviceProp_t; an APU is an integrated GPU. */
static void test_probe_rocm5_layout_and_apu(void **state) {
  (void)state;
  setenv("BP_HIP_SHIM_PROPS", "r0000", 1);
  setenv("BP_HIP_SHIM_ARCH", "gfx1103", 1);
  setenv("BP_HIP_SHIM_INTEGRATED", "1", 1);
  bp_context_t *ctx = gpu_test_context();
  bp_device_entry_t e;
  assert_true(gpu_test_entry(ctx, "rocm", 0, &e));
  expect_text(e.info.description, "gfx1103");
  assert_int_equal(e.info.kind, BP_DEVICE_INTEGRATED_GPU);
  assert_int_not_equal(e.info.op_dtypes[BP_OP_GEMM], 0);
  bp_context_destroy(ctx);
}

static void expect_refused(const char *reason_part) {
  bp_context_t *ctx = gpu_test_context();
  bp_plugin_report_t r = gpu_test_report(ctx, "rocm");
  assert_false(r.loaded);
  assert_int_equal(r.stage, BP_STAGE_PROBE);
  expect_text(r.reason, reason_part);
  bp_device_entry_t e;
  assert_false(gpu_test_entry(ctx, "rocm", 0, &e));
  bp_context_destroy(ctx);
}

static void test_runtime_absent(void **state) {
  (void)state;
  setenv("BACKPLANE_HIP_RUNTIME", "/nonexistent/libamdhip64.so", 1);
  expect_refused("ROCm runtime not found (/nonexistent/libamdhip64.so)");
  unsetenv("BACKPLANE_HIP_RUNTIME"); /* the default names */
  /* The shims this test keeps loaded carry the soname libamdhip64.so, and
   * dlopen of a bare name finds an already loaded soname first. */
  if (!dlopen("libamdhip64.so.6", RTLD_NOW | RTLD_NOLOAD) &&
      !dlopen("libamdhip64.so", RTLD_NOW | RTLD_NOLOAD) &&
      access("/usr/lib/x86_64-linux-gnu/libamdhip64.so.6", F_OK) != 0 &&
      access("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5", F_OK) != 0 &&
      access("/opt/rocm/lib/libamdhip64.so", F_OK) != 0)
    expect_refused("ROCm runtime not found (libamdhip64.so)");
}

static void test_init_fails(void **state) {
  (void)state;
  setenv("BP_HIP_SHIM_FAIL", "init", 1);
  expect_refused("hipInit failed: hipErrorNoDevice");
}

/* Devices the kernels cannot be built for are listed, claim no op, and
 * say why. */
static void expect_no_ops(const char *why) {
  bp_context_t *ctx = gpu_test_context();
  bp_device_entry_t e;
  assert_true(gpu_test_entry(ctx, "rocm", 0, &e));
  for (int op = 0; op < BP_OP_COUNT; op++)
    assert_int_equal(e.info.op_dtypes[op], 0);
  expect_text(e.info.description, why);
  bp_context_destroy(ctx);
}

static void test_no_hiprtc_or_arch(void **state) {
  (void)state;
  setenv("BACKPLANE_HIPRTC", "/nonexistent/libhiprtc.so", 1);
  expect_no_ops("hiprtc missing");
  setenv("BACKPLANE_HIPRTC", rtc_path, 1);
  setenv("BP_HIP_SHIM_ARCH", "not-an-arch", 1);
  expect_no_ops("gcnArchName unreadable");
}

static bp_device_t *open_dev(bp_context_t *ctx, const char *sel,
                             const bp_device_config_t *c) {
  bp_device_t *d = NULL;
  bp_status_t st = bp_device_open(ctx, sel, c, &d);
  if (st != BP_OK)
    fail_msg("bp_device_open(%s): %s", sel, bp_last_error());
  return d;
}

/* Runs a fill on a fresh f32 buffer of n elements; returns its status. */
static bp_status_t fill(bp_device_t *d, bp_stream_t *s, int64_t n, float v) {
  bp_buffer_t *b = NULL;
  bp_status_t st = bp_buffer_alloc(d, (uint64_t)n * 4, &b);
  if (st != BP_OK)
    return st;
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, &n, NULL, &t), BP_OK);
  st = bp_fill(s, &t, v);
  if (st == BP_OK) {
    float got = 0;
    assert_int_equal(bp_buffer_read(b, (uint64_t)(n - 1) * 4, &got, 4), BP_OK);
    assert_true(got == v);
  }
  bp_buffer_free(b);
  return st;
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
  bp_device_t *d = open_dev(ctx, sel, NULL);
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
  bp_device_t *d = open_dev(ctx, "rocm", NULL);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  assert_int_equal(fill(d, s, 100, 2.5f), BP_OK);
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
    st = fill(d, s, 64, 4.0f);
  bp_stream_destroy(s);
  return (void *)(intptr_t)st;
}

/* HIP's current device is per thread: a thread that never touched the
 * device must still work (the shim refuses calls without hipSetDevice). */
static void test_other_thread(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = open_dev(ctx, "rocm", NULL);
  pthread_t t;
  void *ret = NULL;
  assert_int_equal(pthread_create(&t, NULL, fill_thread, d), 0);
  assert_int_equal(pthread_join(t, &ret), 0);
  assert_int_equal((intptr_t)ret, BP_OK);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

/* Everything the plugin created reaches the runtime's destroy calls. */
static void test_no_leaks(void **state) {
  (void)state;
  shim_stats_t before = stats();
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = open_dev(ctx, "rocm", NULL);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  assert_int_equal(fill(d, s, 300, 1.5f), BP_OK);
  assert_true(stats().modules >= 1);
  assert_true(stats().launches > before.launches);
  bp_stream_destroy(s);
  bp_device_close(d);
  bp_context_destroy(ctx);
  shim_stats_t after = stats();
  assert_int_equal(after.allocations, before.allocations);
  assert_int_equal(after.bytes_in_use, before.bytes_in_use);
  assert_int_equal(after.streams, before.streams);
  assert_int_equal(after.events, before.events);
  assert_int_equal(after.modules, before.modules);
}

static void test_out_of_memory(void **state) {
  (void)state;
  setenv("BP_HIP_SHIM_MEM", "1048576", 1); /* 1 MiB of "device" memory */
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = open_dev(ctx, "rocm", NULL);
  bp_buffer_t *b = NULL;
  assert_int_equal(bp_buffer_alloc(d, 4u << 20, &b), BP_ERR_OUT_OF_MEMORY);
  expect_text(bp_last_error(), "4194304 bytes requested");
  expect_text(bp_last_error(), "bytes free of 1048576");
  setenv("BP_HIP_SHIM_FAIL", "alloc", 1);
  assert_int_equal(bp_buffer_alloc(d, 256, &b), BP_ERR_OUT_OF_MEMORY);
  unsetenv("BP_HIP_SHIM_FAIL");
  bp_device_close(d);
  /* The configured memory limit is the plugin's own check. */
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .memory_limit = 4096};
  d = open_dev(ctx, "rocm", &cfg);
  assert_int_equal(bp_buffer_alloc(d, 8192, &b), BP_ERR_OUT_OF_MEMORY);
  expect_text(bp_last_error(), "memory_limit");
  bp_device_close(d);
  bp_context_destroy(ctx);
}

static void test_launch_and_compile_failures(void **state) {
  (void)state;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/failures", cache_home);
  setenv("XDG_CACHE_HOME", dir, 1); /* nothing cached: every module compiles */
  bp_context_t *ctx = gpu_test_context();
  bp_device_t *d = open_dev(ctx, "rocm", NULL);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  setenv("BP_HIP_SHIM_FAIL", "compile", 1);
  assert_int_equal(fill(d, s, 16, 1.0f), BP_ERR_INTERNAL);
  expect_text(bp_last_error(), "hiprtc could not compile elementwise.hip for "
                               "gfx90a:sramecc+:xnack-");
  expect_text(bp_last_error(), "injected failure"); /* the log reaches users */
  setenv("BP_HIP_SHIM_FAIL", "module", 1);
  assert_int_equal(fill(d, s, 16, 1.0f), BP_ERR_INCOMPATIBLE);
  expect_text(bp_last_error(), "hipModuleLoadData(elementwise.hip");
  setenv("BP_HIP_SHIM_FAIL", "launch", 1);
  assert_int_equal(fill(d, s, 16, 1.0f), BP_ERR_DEVICE_LOST);
  expect_text(bp_last_error(),
              "hipModuleLaunchKernel(bp_fill): hipErrorLaunchFailure");
  unsetenv("BP_HIP_SHIM_FAIL");
  assert_int_equal(fill(d, s, 16, 1.0f), BP_OK);
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
  expect_text(bp_last_error(), "bytes of shared memory; the device allows 65536");
  bp_buffer_free(b);
  bp_stream_destroy(s);
  bp_device_close(d);
  bp_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_probe_records, reset_env),
      cmocka_unit_test_setup(test_probe_rocm5_layout_and_apu, reset_env),
      cmocka_unit_test_setup(test_runtime_absent, reset_env),
      cmocka_unit_test_setup(test_init_fails, reset_env),
      cmocka_unit_test_setup(test_no_hiprtc_or_arch, reset_env),
      cmocka_unit_test_setup(test_marshalling_vs_reference, reset_env),
      cmocka_unit_test_setup(test_code_object_cache, reset_env),
      cmocka_unit_test_setup(test_other_thread, reset_env),
      cmocka_unit_test_setup(test_no_leaks, reset_env),
      cmocka_unit_test_setup(test_out_of_memory, reset_env),
      cmocka_unit_test_setup(test_launch_and_compile_failures, reset_env),
  };
  return cmocka_run_group_tests_name("rocm", tests, group_setup,
                                     group_teardown);
}
