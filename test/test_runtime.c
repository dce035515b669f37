/*
 * test_runtime.c — the runtime features every backend shares: the caching
 * memory pool and its statistics, graph capture / replay / rebind, and
 * custom kernels on the CPU (a C function called through libffi).
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"
#include "skip.h"

typedef struct fx {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
} fx_t;

static int setup(void **state) {
  static fx_t f;
  memset(&f, 0, sizeof f);
  if (bp_context_create(NULL, &f.ctx) || bp_device_open(f.ctx, "cpu", NULL, &f.dev) ||
      bp_stream_create(f.dev, &f.s))
    return -1;
  *state = &f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  bp_stream_destroy(f->s);
  bp_device_close(f->dev);
  bp_context_destroy(f->ctx);
  return 0;
}

static bp_tensor_t vec(bp_buffer_t *b, int64_t n) {
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, &n, NULL, &t), BP_OK);
  return t;
}

/* ---- memory pool ----------------------------------------------------------*/

static void test_pool_reuses_freed_blocks(void **state) {
  fx_t *f = *state;
  bp_memory_stats_t s0, s1;
  assert_int_equal(bp_device_memory_stats(f->dev, &s0), BP_OK);
  bp_buffer_t *a, *b;
  assert_int_equal(bp_buffer_alloc(f->dev, 1000, &a), BP_OK);
  bp_buffer_free(a);
  assert_int_equal(bp_buffer_alloc(f->dev, 900, &b), BP_OK);
  assert_int_equal(bp_device_memory_stats(f->dev, &s1), BP_OK);
  assert_true(s1.cache_hits >= s0.cache_hits + 1);
  assert_int_equal(s1.in_use_bytes, s0.in_use_bytes + 1024); /* rounded to 256 */
  assert_true(s1.peak_in_use_bytes >= s1.in_use_bytes);
  bp_buffer_free(b);
}

static void test_pool_split_buffers_do_not_overlap(void **state) {
  fx_t *f = *state;
  bp_buffer_t *b[8];
  for (int i = 0; i < 8; i++) {
    assert_int_equal(bp_buffer_alloc(f->dev, 4096, &b[i]), BP_OK);
    unsigned char v[4096];
    memset(v, i, sizeof v);
    assert_int_equal(bp_buffer_write(b[i], 0, v, sizeof v), BP_OK);
  }
  for (int i = 0; i < 8; i++) {
    unsigned char v[4096];
    assert_int_equal(bp_buffer_read(b[i], 0, v, sizeof v), BP_OK);
    for (size_t j = 0; j < sizeof v; j++) assert_int_equal(v[j], i);
    bp_buffer_free(b[i]);
  }
}

static void test_pool_empty_cache_returns_segments(void **state) {
  fx_t *f = *state;
  bp_buffer_t *a;
  assert_int_equal(bp_buffer_alloc(f->dev, 8u << 20, &a), BP_OK);
  bp_buffer_free(a);
  bp_memory_stats_t s;
  assert_int_equal(bp_device_memory_stats(f->dev, &s), BP_OK);
  assert_true(s.cached_bytes >= (8u << 20));
  assert_int_equal(bp_device_empty_cache(f->dev), BP_OK);
  assert_int_equal(bp_device_memory_stats(f->dev, &s), BP_OK);
  assert_int_equal(s.cached_bytes, 0);
  assert_int_equal(s.reserved_bytes, s.in_use_bytes == 0 ? 0 : s.reserved_bytes);
}

static void test_pool_limit_gives_sizes_in_message(void **state) {
  fx_t *f = *state;
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .pool_max_bytes = 4u << 20};
  bp_device_t *d;
  assert_int_equal(bp_device_open(f->ctx, "cpu", &cfg, &d), BP_OK);
  bp_buffer_t *a = NULL, *b = NULL;
  assert_int_equal(bp_buffer_alloc(d, 3u << 20, &a), BP_OK);
  assert_int_equal(bp_buffer_alloc(d, 3u << 20, &b), BP_ERR_OUT_OF_MEMORY);
  assert_null(b);
  assert_non_null(strstr(bp_last_error(), "requested 3145728"));
  bp_device_close(d);
}

/* ---- host memory -------------------------------------------------------------*/

static void test_host_alloc_cpu(void **state) {
  fx_t *f = *state;
  void *p = NULL, *q = NULL;
  assert_int_equal(bp_host_alloc(f->dev, 1000, &p), BP_OK);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 64, 0);
  memset(p, 1, 1000);
  assert_int_equal(bp_host_alloc(f->dev, 0, &q), BP_ERR_INVALID_ARGUMENT);
  assert_null(q);
  bp_host_free(f->dev, p);
  bp_host_free(f->dev, NULL);
}

/* ---- graphs ------------------------------------------------------------------*/

static void test_graph_replays_and_rebinds(void **state) {
  fx_t *f = *state;
  bp_buffer_t *x, *x2, *y;
  float X[4] = {1, 2, 3, 4}, X2[4] = {-1, 0.5f, 10, 0}, Y[4];
  assert_int_equal(bp_buffer_alloc(f->dev, 16, &x), BP_OK);
  assert_int_equal(bp_buffer_alloc(f->dev, 16, &x2), BP_OK);
  assert_int_equal(bp_buffer_alloc(f->dev, 16, &y), BP_OK);
  bp_buffer_write(x, 0, X, 16);
  bp_buffer_write(x2, 0, X2, 16);
  bp_fill(f->s, &(bp_tensor_t){y, 0, BP_F32, 1, {4}, {1}}, 7.0);
  bp_tensor_t tx = vec(x, 4), ty = vec(y, 4);
  assert_int_equal(bp_stream_begin_capture(f->s), BP_OK);
  assert_int_equal(bp_stream_begin_capture(f->s), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_binary(f->s, BP_BINARY_MUL, &tx, &tx, &ty), BP_OK);
  assert_int_equal(bp_unary(f->s, BP_UNARY_NEG, &ty, &ty), BP_OK);
  assert_int_equal(bp_buffer_write_async(f->s, y, 0, Y, 16), BP_ERR_INVALID_ARGUMENT);
  bp_graph_t *g;
  assert_int_equal(bp_stream_end_capture(f->s, &g), BP_OK);
  assert_int_equal(bp_graph_size(g), 2);
  bp_buffer_read(y, 0, Y, 16);
  assert_true(Y[0] == 7.0f); /* capture ran nothing */
  for (int r = 0; r < 3; r++) assert_int_equal(bp_graph_launch(g, f->s), BP_OK);
  bp_buffer_read(y, 0, Y, 16);
  for (int i = 0; i < 4; i++) assert_true(Y[i] == -X[i] * X[i]);
  assert_int_equal(bp_graph_rebind(g, x, x2), BP_OK);
  assert_int_equal(bp_graph_launch(g, f->s), BP_OK);
  bp_buffer_read(y, 0, Y, 16);
  for (int i = 0; i < 4; i++) assert_true(Y[i] == -X2[i] * X2[i]);
  bp_buffer_t *small;
  bp_buffer_alloc(f->dev, 8, &small);
  assert_int_equal(bp_graph_rebind(g, x, small), BP_ERR_INVALID_ARGUMENT);
  bp_graph_destroy(g);
  assert_int_equal(bp_graph_launch(g, f->s), BP_ERR_INVALID_ARGUMENT); /* destroyed */
  bp_buffer_free(small);
  bp_buffer_free(x);
  bp_buffer_free(x2);
  bp_buffer_free(y);
}

static void test_graph_capture_rejects_invalid_ops(void **state) {
  fx_t *f = *state;
  bp_buffer_t *x;
  bp_buffer_alloc(f->dev, 16, &x);
  bp_tensor_t tx = vec(x, 4), big = vec(x, 8);
  assert_int_equal(bp_stream_begin_capture(f->s), BP_OK);
  assert_int_equal(bp_unary(f->s, BP_UNARY_EXP, &big, &tx), BP_ERR_INVALID_ARGUMENT);
  bp_graph_t *g;
  assert_int_equal(bp_stream_end_capture(f->s, &g), BP_OK); /* the bad op was never recorded */
  assert_int_equal(bp_graph_size(g), 0);
  bp_graph_destroy(g);
  bp_buffer_free(x);
}

/* ---- custom kernels ----------------------------------------------------------*/

static void kernel_path(char *out, size_t size) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash) *slash = '\0';
  snprintf(out, size, "%s/fixtures/libsaxpy.so", exe);
}

static void run_saxpy(bp_device_t *dev, bp_stream_t *s) {
  char path[PATH_MAX];
  kernel_path(path, sizeof path);
  const bp_kernel_arg_kind_t sig[4] = {BP_ARG_BUFFER, BP_ARG_BUFFER, BP_ARG_F32, BP_ARG_I32};
  bp_kernel_t *k;
  assert_int_equal(bp_kernel_create(dev, BP_KERNEL_C_SHARED_OBJECT, path, strlen(path), "saxpy", NULL, 4, sig, &k),
                   BP_OK);
  enum { N = 1000 };
  float X[N], Y[N];
  for (int i = 0; i < N; i++) X[i] = (float)i, Y[i] = 1.0f;
  bp_buffer_t *x, *y;
  bp_buffer_alloc(dev, sizeof X, &x);
  bp_buffer_alloc(dev, sizeof Y + 16, &y);
  bp_buffer_write(x, 0, X, sizeof X);
  bp_buffer_write(y, 16, Y, sizeof Y);
  bp_kernel_arg_t args[4] = {{.kind = BP_ARG_BUFFER, .buffer = y, .offset = 16},
                             {.kind = BP_ARG_BUFFER, .buffer = x},
                             {.kind = BP_ARG_F32, .value.f32 = 2.0f},
                             {.kind = BP_ARG_I32, .value.i32 = N}};
  const uint32_t grid[3] = {(N + 63) / 64, 1, 1}, block[3] = {64, 1, 1};
  assert_int_equal(bp_kernel_launch(s, k, grid, block, 0, 4, args), BP_OK);
  bp_buffer_read(y, 16, Y, sizeof Y);
  for (int i = 0; i < N; i++) assert_true(Y[i] == 2.0f * i + 1.0f);
  args[2].kind = BP_ARG_F64; /* wrong kind for the signature */
  assert_int_equal(bp_kernel_launch(s, k, grid, block, 0, 4, args), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_kernel_launch(s, k, grid, block, 0, 3, args), BP_ERR_INVALID_ARGUMENT);
  bp_kernel_destroy(k);
  bp_buffer_free(x);
  bp_buffer_free(y);
}

static void test_kernel_cpu_saxpy(void **state) {
  fx_t *f = *state;
  run_saxpy(f->dev, f->s);
  bp_device_t *ref;
  bp_stream_t *rs;
  assert_int_equal(bp_device_open(f->ctx, "cpu-ref", NULL, &ref), BP_OK);
  assert_int_equal(bp_stream_create(ref, &rs), BP_OK);
  run_saxpy(ref, rs);
  bp_device_close(ref);
}

static void test_kernel_errors(void **state) {
  fx_t *f = *state;
  bp_kernel_t *k = (bp_kernel_t *)1;
  const char *bad = "/nonexistent/lib.so";
  assert_int_equal(bp_kernel_create(f->dev, BP_KERNEL_C_SHARED_OBJECT, bad, strlen(bad), "f", NULL, 0, NULL, &k),
                   BP_ERR_INVALID_ARGUMENT);
  assert_null(k);
  assert_non_null(strstr(bp_last_error(), "cannot load"));
  assert_int_equal(bp_kernel_create(f->dev, BP_KERNEL_PTX, "x", 1, "f", NULL, 0, NULL, &k), BP_ERR_UNSUPPORTED);
  char path[PATH_MAX];
  kernel_path(path, sizeof path);
  assert_int_equal(bp_kernel_create(f->dev, BP_KERNEL_C_SHARED_OBJECT, path, strlen(path), "nope", NULL, 0, NULL, &k),
                   BP_ERR_NOT_FOUND);
}

/* ---- DLPack ------------------------------------------------------------------*/

/* The leading fields of DLManagedTensorVersioned (DLPack 1.0), enough to
 * check what the library wrote and to call the deleter. */
typedef struct {
  uint32_t major, minor;
  void *ctx;
  void (*deleter)(void *self);
  uint64_t flags;
  void *data;
  int32_t device_type, device_id, ndim;
  uint8_t code, bits;
  uint16_t lanes;
  int64_t *shape, *strides;
  uint64_t byte_offset;
} dl_versioned_t;

static void test_dlpack_round_trip_shares_memory(void **state) {
  fx_t *f = *state;
  bp_buffer_t *b;
  float v[6] = {0, 1, 2, 3, 4, 5};
  assert_int_equal(bp_buffer_alloc(f->dev, sizeof v, &b), BP_OK);
  bp_buffer_write(b, 0, v, sizeof v);
  bp_tensor_t t, tt;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 2, (const int64_t[]){2, 3}, NULL, &t), BP_OK);
  assert_int_equal(bp_tensor_transpose(&t, 0, 1, &tt), BP_OK);
  void *m = NULL;
  assert_int_equal(bp_tensor_to_dlpack(&tt, true, &m), BP_OK);
  dl_versioned_t *dl = m;
  assert_int_equal(dl->major, 1);
  assert_int_equal(dl->device_type, 1); /* kDLCPU */
  assert_int_equal(dl->ndim, 2);
  assert_int_equal(dl->shape[0], 3);
  assert_int_equal(dl->strides[0], 1);
  assert_int_equal(dl->strides[1], 3);
  assert_int_equal(dl->code, 2);
  assert_int_equal(dl->bits, 32);
  /* Import the same memory back: writes through one are seen by the other. */
  bp_tensor_t imp;
  bp_buffer_t *ib;
  assert_int_equal(bp_tensor_from_dlpack(f->dev, m, true, &imp, &ib), BP_OK);
  assert_int_equal(imp.rank, 2);
  assert_int_equal(imp.shape[0], 3);
  assert_int_equal(bp_fill(f->s, &imp, 9.0), BP_OK);
  bp_buffer_read(b, 0, v, sizeof v);
  for (int i = 0; i < 6; i++) assert_true(v[i] == 9.0f);
  bp_buffer_free(ib); /* calls the exporter's deleter */
  bp_buffer_free(b);
  assert_int_equal(bp_tensor_to_dlpack(&t, false, &m), BP_ERR_INVALID_ARGUMENT); /* b is gone */
}

/* Large CPU buffers are marked for transparent huge pages: the mapping
 * holding a 16 MiB buffer is THP-eligible (smaps' THPeligible, which does
 * not depend on whether the kernel found free huge pages), unless the
 * system has THP off. */
static int thp_eligible(uintptr_t p) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[256];
  int in = 0, r = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
      in = p >= lo && p < hi;
    else if (in && sscanf(line, "THPeligible: %d", &r) == 1)
      break;
  }
  fclose(f);
  return r;
}

static void test_large_cpu_buffers_ask_for_huge_pages(void **state) {
  fx_t *f = *state;
  char mode[128] = "";
  FILE *mf = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!mf || !fgets(mode, sizeof mode, mf) || strstr(mode, "[never]")) {
    if (mf) fclose(mf);
    TEST_SKIP_CASE("transparent huge pages unavailable or set to [never]");
  }
  fclose(mf);
  int64_t n = 4 << 20;
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(f->dev, (uint64_t)n * 4, &b), BP_OK);
  bp_tensor_t t = vec(b, n);
  assert_int_equal(bp_fill(f->s, &t, 2.0), BP_OK);
  assert_int_equal(bp_stream_synchronize(f->s), BP_OK);
  void *m = NULL;
  assert_int_equal(bp_tensor_to_dlpack(&t, true, &m), BP_OK);
  dl_versioned_t *dl = m;
  uintptr_t p = (uintptr_t)dl->data + dl->byte_offset;
  float v[2];
  assert_int_equal(bp_buffer_read(b, (uint64_t)(n - 2) * 4, v, sizeof v), BP_OK);
  assert_true(v[0] == 2.0f && v[1] == 2.0f);
  assert_int_equal(thp_eligible(p), 1);
  assert_int_equal(thp_eligible(p + (uintptr_t)n * 4 - 4), 1);
  dl->deleter(dl);
  bp_buffer_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pool_reuses_freed_blocks),
      cmocka_unit_test(test_pool_split_buffers_do_not_overlap),
      cmocka_unit_test(test_pool_empty_cache_returns_segments),
      cmocka_unit_test(test_pool_limit_gives_sizes_in_message),
      cmocka_unit_test(test_large_cpu_buffers_ask_for_huge_pages),
      cmocka_unit_test(test_host_alloc_cpu),
      cmocka_unit_test(test_graph_replays_and_rebinds),
      cmocka_unit_test(test_graph_capture_rejects_invalid_ops),
      cmocka_unit_test(test_kernel_cpu_saxpy),
      cmocka_unit_test(test_kernel_errors),
      cmocka_unit_test(test_dlpack_round_trip_shares_memory),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
