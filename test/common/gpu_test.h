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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Mirrors bp_cuda_shim_stats_t of test/shims/cuda/shim.h. */
typedef struct gpu_test_cuda_stats {
  int64_t allocations, bytes_in_use;
  int64_t streams, events, modules;
  int64_t primary_ctx_refs;
  int64_t launches;
  int ctx_depth;
  int64_t host_blocks;
  int64_t graphs, graph_launches;
} gpu_test_cuda_stats_t;

/* Mirrors bp_hip_shim_stats_t of test/shims/hip/shim.h. */
typedef struct gpu_test_hip_stats {
  int64_t allocations, bytes_in_use;
  int64_t streams, events, modules;
  int64_t launches, loads;
  int64_t graphs, graph_launches;
} gpu_test_hip_stats_t;

/* Defines shim_stats_fn (set it to the shim's bp_*_shim_stats with dlsym)
 * and stats(), the shim's counters now, both of statistics type T. */
#define GPU_TEST_SHIM_STATS(T)                                                 \
  static void (*shim_stats_fn)(T *);                                           \
  static inline T stats(void) {                                                \
    T s;                                                                       \
    memset(&s, 0, sizeof s);                                                   \
    shim_stats_fn(&s);                                                         \
    return s;                                                                  \
  }

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

/* Fails the test when text lacks part; what names the text. */
static inline void gpu_test_expect_text(const char *what, const char *text,
                                        const char *part) {
  if (!strstr(text, part))
    fail_msg("%s \"%s\" lacks \"%s\"", what, text, part);
}

/* The last error message holds part. */
static inline void gpu_test_expect_message(const char *part) {
  gpu_test_expect_text("message", bp_last_error(), part);
}

/* Opens the first device of backend (a selector), failing the test with
 * the message when it does not open. c NULL: the default configuration
 * with automatic fallback off, since these suites test the backend's own
 * answers (a refusal must not be run elsewhere). */
static inline bp_device_t *gpu_test_open_device(bp_context_t *ctx,
                                                const char *backend,
                                                const bp_device_config_t *c) {
  bp_device_t *d = NULL;
  bp_device_config_t native = {.struct_size = sizeof native, .no_fallback = true};
  if (bp_device_open(ctx, backend, c ? c : &native, &d) != BP_OK)
    fail_msg("bp_device_open(%s): %s", backend, bp_last_error());
  return d;
}

/* A fresh context refuses backend at probe, with a reason holding
 * reason_part, and lists none of its devices. */
static inline void gpu_test_expect_refused(const char *backend,
                                           const char *reason_part) {
  bp_context_t *ctx = gpu_test_context();
  bp_plugin_report_t r = gpu_test_report(ctx, backend);
  assert_false(r.loaded);
  assert_int_equal(r.stage, BP_STAGE_PROBE);
  gpu_test_expect_text("reason", r.reason, reason_part);
  bp_device_entry_t e;
  assert_false(gpu_test_entry(ctx, backend, 0, &e));
  bp_context_destroy(ctx);
}

/* A device the kernels cannot run on is listed, claims no op, and its
 * description says why. */
static inline void gpu_test_expect_no_ops(const char *backend,
                                          const char *why) {
  bp_context_t *ctx = gpu_test_context();
  bp_device_entry_t e;
  assert_true(gpu_test_entry(ctx, backend, 0, &e));
  for (int op = 0; op < BP_OP_COUNT; op++)
    assert_int_equal(e.info.op_dtypes[op], 0);
  gpu_test_expect_text("description", e.info.description, why);
  bp_context_destroy(ctx);
}

/* Runs a fill on a fresh f32 buffer of n elements and checks the last
 * element when it ran; returns its status. */
static inline bp_status_t gpu_test_fill(bp_device_t *d, bp_stream_t *s,
                                        int64_t n, float v) {
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

/* ---- custom kernels: the twins of test/fixtures/cuda_custom.cu ---------- */

static inline bp_kernel_arg_t gpu_test_buf_arg(bp_buffer_t *b,
                                               uint64_t offset) {
  bp_kernel_arg_t a;
  memset(&a, 0, sizeof a);
  a.kind = BP_ARG_BUFFER;
  a.buffer = b;
  a.offset = offset;
  return a;
}

/* bp_test_saxpy (y = a x + y over n floats) runs over GPU_TEST_SAXPY_N
 * elements: x from 0, y at offset 16, both in fresh buffers the caller
 * frees; a = 2, x[i] = i, y[i] = 1 before. */
enum { GPU_TEST_SAXPY_N = 1000 };

/* Allocates and fills x and y and sets the four arguments (y, x, a, n). */
static inline void gpu_test_saxpy_setup(bp_device_t *d, bp_buffer_t **x,
                                        bp_buffer_t **y,
                                        bp_kernel_arg_t args[4]) {
  enum { N = GPU_TEST_SAXPY_N };
  float X[N], Y[N];
  for (int i = 0; i < N; i++)
    X[i] = (float)i, Y[i] = 1.0f;
  assert_int_equal(bp_buffer_alloc(d, sizeof X, x), BP_OK);
  assert_int_equal(bp_buffer_alloc(d, sizeof Y + 16, y), BP_OK);
  assert_int_equal(bp_buffer_write(*x, 0, X, sizeof X), BP_OK);
  assert_int_equal(bp_buffer_write(*y, 16, Y, sizeof Y), BP_OK);
  memset(args, 0, 4 * sizeof *args);
  args[0] = gpu_test_buf_arg(*y, 16);
  args[1] = gpu_test_buf_arg(*x, 0);
  args[2].kind = BP_ARG_F32, args[2].value.f32 = 2.0f;
  args[3].kind = BP_ARG_I32, args[3].value.i32 = N;
}

/* y holds 2 i + 1 after one launch. */
static inline void gpu_test_saxpy_check(bp_buffer_t *y) {
  enum { N = GPU_TEST_SAXPY_N };
  float Y[N];
  assert_int_equal(bp_buffer_read(y, 16, Y, sizeof Y), BP_OK);
  for (int i = 0; i < N; i++)
    assert_true(Y[i] == 2.0f * (float)i + 1.0f);
}

/* The signature of bp_test_args: a buffer, then every scalar kind. */
static inline void gpu_test_args_sig(bp_kernel_arg_kind_t sig[7]) {
  const bp_kernel_arg_kind_t s[7] = {BP_ARG_BUFFER, BP_ARG_I32, BP_ARG_U32,
                                     BP_ARG_I64,    BP_ARG_U64, BP_ARG_F32,
                                     BP_ARG_F64};
  memcpy(sig, s, sizeof s);
}

/* Launches bp_test_args (k) on s and checks that every scalar reached the
 * kernel at its position and width (it writes them back as 64-bit words). */
static inline void gpu_test_check_args(bp_device_t *d, bp_stream_t *s,
                                       bp_kernel_t *k) {
  bp_kernel_arg_kind_t sig[7];
  gpu_test_args_sig(sig);
  bp_buffer_t *out = NULL;
  assert_int_equal(bp_buffer_alloc(d, 6 * 8, &out), BP_OK);
  bp_kernel_arg_t a[7] = {gpu_test_buf_arg(out, 0)};
  for (int i = 1; i < 7; i++)
    a[i].kind = sig[i];
  a[1].value.i32 = -7;
  a[2].value.u32 = 0xfffffff0u;
  a[3].value.i64 = -((int64_t)1 << 40);
  a[4].value.u64 = 0x8000000000000001ull;
  a[5].value.f32 = 1.5f;
  a[6].value.f64 = -0.1;
  const uint32_t one[3] = {1, 1, 1};
  assert_int_equal(bp_kernel_launch(s, k, one, one, 0, 7, a), BP_OK);
  int64_t w[6];
  assert_int_equal(bp_buffer_read(out, 0, w, sizeof w), BP_OK);
  int32_t f32_bits;
  int64_t f64_bits;
  memcpy(&f32_bits, &a[5].value.f32, 4);
  memcpy(&f64_bits, &a[6].value.f64, 8);
  assert_true(w[0] == -7 && w[1] == 0xfffffff0ll);
  assert_true(w[2] == -((int64_t)1 << 40));
  assert_true((uint64_t)w[3] == 0x8000000000000001ull);
  assert_true(w[4] == f32_bits && w[5] == f64_bits);
  bp_buffer_free(out);
}

/* bp_test_reverse reverses each block of GPU_TEST_RB floats through
 * dynamic shared memory; GPU_TEST_RG blocks. */
enum { GPU_TEST_RB = 64, GPU_TEST_RG = 3 };

/* Launches bp_test_reverse (k) with the shared memory it needs and checks
 * the result; r gets the arguments (y, x; buffers the caller frees) for
 * the backend's own shared-memory limits. */
static inline void gpu_test_check_reverse(bp_device_t *d, bp_stream_t *s,
                                          bp_kernel_t *k,
                                          bp_kernel_arg_t r[2]) {
  enum { B = GPU_TEST_RB, G = GPU_TEST_RG };
  float X[B * G], Y[B * G];
  for (int i = 0; i < B * G; i++)
    X[i] = (float)i;
  bp_buffer_t *x = NULL, *y = NULL;
  assert_int_equal(bp_buffer_alloc(d, sizeof X, &x), BP_OK);
  assert_int_equal(bp_buffer_alloc(d, sizeof Y, &y), BP_OK);
  assert_int_equal(bp_buffer_write(x, 0, X, sizeof X), BP_OK);
  r[0] = gpu_test_buf_arg(y, 0);
  r[1] = gpu_test_buf_arg(x, 0);
  const uint32_t grid[3] = {G, 1, 1}, block[3] = {B, 1, 1};
  assert_int_equal(bp_kernel_launch(s, k, grid, block, B * 4, 2, r), BP_OK);
  assert_int_equal(bp_buffer_read(y, 0, Y, sizeof Y), BP_OK);
  for (int i = 0; i < B * G; i++)
    assert_true(Y[i] == X[i / B * B + B - 1 - i % B]);
}

/* Removes a temporary directory tree; 0 on success. */
static inline int gpu_test_rmtree(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

#endif /* BP_TEST_GPU_TEST_H */
