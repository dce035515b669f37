/*
 * test_opencl_plugin.c — drives backend-opencl.so directly through its
 * descriptor (no core library), checking every op it claims against plain C
 * on the host. Without an OpenCL device it skips (exit 77) or, where PoCL is
 * installed, fails: see test/skip.h.
 */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin-api.h"
#include "skip.h"
#include "test_opencl_util.h"

static char last_error[1024];
static void h_log(bp_log_level_t level, const char *plugin, const char *fmt,
                  ...) {
  if (level > BP_LOG_WARN && !getenv("BP_TEST_VERBOSE"))
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[%s] ", plugin);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
static void h_set_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
}
static const char *h_getenv(const char *n) { return getenv(n); }
/* A one-entry in-memory tuning cache (ABI 1.1 host services): the plugin
 * must store its gemm choice here, not in its own file. */
static char tune_value[BP_TUNE_VALUE_MAX];
static char tune_op[64], tune_dtype[16], tune_plugin[64];
static int tune_stores;
static bool h_tune_lookup(const bp_tune_key_t *key, char *out, size_t size) {
  if (!tune_stores || strcmp(key->op, tune_op) || strcmp(key->dtype, tune_dtype) ||
      strlen(tune_value) >= size)
    return false;
  strcpy(out, tune_value);
  return true;
}
static void h_tune_store(const bp_tune_key_t *key, const char *value) {
  snprintf(tune_value, sizeof tune_value, "%s", value);
  snprintf(tune_op, sizeof tune_op, "%s", key->op);
  snprintf(tune_dtype, sizeof tune_dtype, "%s", key->dtype);
  snprintf(tune_plugin, sizeof tune_plugin, "%s", key->plugin);
  tune_stores++;
}
static const bp_host_services_t host = {
    .struct_size = sizeof(bp_host_services_t),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .host_version = "test",
    .log = h_log,
    .getenv = h_getenv,
    .set_error = h_set_error,
    .tune_lookup = h_tune_lookup,
    .tune_store = h_tune_store};

static void *lib;
static const bp_plugin_descriptor_t *P;
static bp_plugin_device_t *dev;
static bp_plugin_stream_t *stream;
static bp_device_info_t info;

/* The plugin next to this test: $BACKPLANE_PLUGIN_PATH, else ../plugins. */
static void plugin_path(char *out, size_t cap) {
  const char *env = getenv("BACKPLANE_PLUGIN_PATH");
  if (env && *env) {
    snprintf(out, cap, "%s/backend-opencl.so", env);
    return;
  }
  char exe[PATH_MAX] = "";
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  char *slash = strrchr(exe, '/');
  if (slash)
    *slash = 0;
  snprintf(out, cap, "%s/../plugins/backend-opencl.so", exe);
}

static int group_setup(void **state) {
  (void)state;
  char path[PATH_MAX + 64];
  plugin_path(path, sizeof path);
  lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "cannot open %s: %s\n", path, dlerror());
    return -1;
  }
  P = dlsym(lib, BP_PLUGIN_DESCRIPTOR_SYMBOL);
  if (!P || P->init(&host) != BP_OK)
    return -1;
  uint32_t n = 0;
  if (P->probe(&info, 1, &n) != BP_OK || n == 0) {
    fprintf(stderr, "no OpenCL device: %s\n", last_error);
    return 0; /* main skips or fails the suite */
  }
  bp_plugin_device_config_t cfg = {sizeof cfg, 0, BP_ISA_BEST, 0, 0};
  if (P->device_open(0, &cfg, &dev) != BP_OK)
    return -1;
  return P->stream_create(dev, &stream) == BP_OK ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  if (dev) {
    P->stream_destroy(dev, stream);
    P->device_close(dev);
  }
  if (P)
    P->shutdown();
  return 0;
}

#define NEED_DEVICE()                                                          \
  do {                                                                         \
    if (!dev) /* main() skipped or failed the suite already */               \
      TEST_SKIP_CASE("no OpenCL device");                                      \
  } while (0)

static uint64_t dalloc(uint64_t size) {
  uint64_t p = 0;
  assert_int_equal(P->mem_alloc(dev, size ? size : 64, &p), BP_OK);
  return p;
}
static void dwrite(uint64_t p, const void *src, uint64_t size) {
  assert_int_equal(P->mem_write(dev, NULL, p, 0, src, size), BP_OK);
}
static void dread(void *dst, uint64_t p, uint64_t size) {
  assert_int_equal(P->stream_synchronize(dev, stream), BP_OK);
  assert_int_equal(P->mem_read(dev, NULL, dst, p, 0, size), BP_OK);
}

static void test_probe(void **state) {
  (void)state;
  NEED_DEVICE();
  print_message("device: %s | %s | %s | kind %d | %u CUs | %s\n", info.name,
                info.vendor, info.driver_version, info.kind,
                info.compute_units, info.description);
  assert_true(info.op_dtypes[BP_OP_FILL] & BP_DTYPE_BIT(BP_F32));
  assert_true(info.memory_bytes > 0);
}

static void test_fill_strided(void **state) {
  (void)state;
  NEED_DEVICE();
  float host[24];
  for (int i = 0; i < 24; i++)
    host[i] = -1;
  uint64_t p = dalloc(sizeof host);
  dwrite(p, host, sizeof host);
  /* Every other column of a 4x6 matrix, starting at column 1. */
  bp_fill_args_t a = {sizeof a, 2.5, tensor2(p, 4, BP_F32, 4, 3, 6, 2)};
  assert_int_equal(P->fill(dev, stream, &a), BP_OK);
  dread(host, p, sizeof host);
  for (int i = 0; i < 24; i++)
    assert_true(host[i] == ((i % 2 == 1) ? 2.5f : -1.0f));
  P->mem_free(dev, p);
}

static void test_fill_dtypes(void **state) {
  (void)state;
  NEED_DEVICE();
  uint64_t p = dalloc(64);
  int32_t i32[4];
  bp_fill_args_t a = {sizeof a, -7.5, tensor1(p, 0, BP_I32, 4, 1)};
  assert_int_equal(P->fill(dev, stream, &a), BP_OK);
  dread(i32, p, sizeof i32);
  assert_int_equal(i32[3], -8); /* nearest even */
  uint16_t h[4];
  a.y.dtype = BP_BF16;
  a.value = 1.0;
  assert_int_equal(P->fill(dev, stream, &a), BP_OK);
  dread(h, p, sizeof h);
  assert_int_equal(h[0], 0x3f80);
  P->mem_free(dev, p);
}

static void test_copy_transpose(void **state) {
  (void)state;
  NEED_DEVICE();
  enum { M = 37, N = 53 };
  float *x = malloc(sizeof(float) * M * N), *y = malloc(sizeof(float) * M * N);
  for (int i = 0; i < M * N; i++)
    x[i] = (float)i;
  uint64_t px = dalloc(sizeof(float) * M * N), py = dalloc(sizeof(float) * M * N);
  dwrite(px, x, sizeof(float) * M * N);
  /* y[N][M] = x[M][N]^T: read x with swapped strides. */
  bp_copy_args_t a = {.struct_size = sizeof a, .x = tensor2(px, 0, BP_F32, N, M, 1, N),
                      .y = tensor2(py, 0, BP_F32, N, M, M, 1)};
  assert_int_equal(P->copy(dev, stream, &a), BP_OK);
  dread(y, py, sizeof(float) * M * N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++)
      assert_true(y[j * M + i] == x[i * N + j]);
  P->mem_free(dev, px);
  P->mem_free(dev, py);
  free(x);
  free(y);
}

static void test_cast(void **state) {
  (void)state;
  NEED_DEVICE();
  float x[8] = {1.5f, 2.5f, -1.5f, NAN, 1e20f, -1e20f, 300.f, -0.4f};
  int32_t want_i32[8] = {2, 2, -2, 0, INT32_MAX, INT32_MIN, 300, 0};
  uint8_t want_u8[8] = {2, 2, 0, 0, 255, 0, 255, 0};
  uint64_t px = dalloc(sizeof x), py = dalloc(64);
  dwrite(px, x, sizeof x);
  bp_copy_args_t a = {.struct_size = sizeof a, .x = tensor1(px, 0, BP_F32, 8, 1),
                      .y = tensor1(py, 0, BP_I32, 8, 1)};
  assert_int_equal(P->cast(dev, stream, &a), BP_OK);
  int32_t yi[8];
  dread(yi, py, sizeof yi);
  assert_memory_equal(yi, want_i32, sizeof yi);
  a.y.dtype = BP_U8;
  assert_int_equal(P->cast(dev, stream, &a), BP_OK);
  uint8_t yu[8];
  dread(yu, py, sizeof yu);
  assert_memory_equal(yu, want_u8, sizeof yu);
  a.y.dtype = BP_BF16;
  assert_int_equal(P->cast(dev, stream, &a), BP_OK);
  uint16_t yb[8];
  dread(yb, py, sizeof yb);
  assert_int_equal(yb[0], 0x3fc0);
  P->mem_free(dev, px);
  P->mem_free(dev, py);
}

static float ref_unary(int op, float x) {
  switch (op) {
  case BP_UNARY_NEG: return -x;
  case BP_UNARY_ABS: return fabsf(x);
  case BP_UNARY_EXP: return expf(x);
  case BP_UNARY_LOG: return logf(x);
  case BP_UNARY_SQRT: return sqrtf(x);
  case BP_UNARY_RSQRT: return 1.0f / sqrtf(x);
  case BP_UNARY_RELU: return x > 0 ? x : 0;
  case BP_UNARY_GELU: return x * 0.5f * (1 + erff(x / sqrtf(2.0f)));
  case BP_UNARY_SILU: return x / (1 + expf(-x));
  case BP_UNARY_SIGMOID: return 1 / (1 + expf(-x));
  case BP_UNARY_TANH: return tanhf(x);
  case BP_UNARY_SIN: return sinf(x);
  case BP_UNARY_GELU_TANH:
    return 0.5f * x * (1 + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
  default: return cosf(x);
  }
}

static void test_unary(void **state) {
  (void)state;
  NEED_DEVICE();
  enum { N = 100 };
  float x[N], y[N];
  for (int i = 0; i < N; i++)
    x[i] = 0.05f + (float)i * 0.07f - (i % 2 ? 3.0f : 0.0f);
  uint64_t px = dalloc(sizeof x), py = dalloc(sizeof y);
  dwrite(px, x, sizeof x);
  for (int op = 0; op < BP_UNARY_COUNT; op++) {
    /* gelu_tanh (ABI 1.5) where the device says it runs it */
    if (op == BP_UNARY_GELU_TANH && !(info.op_features[BP_OP_UNARY] & BP_FEATURE_UNARY_GELU_TANH))
      continue;
    bp_unary_args_t a = {sizeof a, (bp_unary_op_t)op,
                         tensor1(px, 0, BP_F32, N, 1),
                         tensor1(py, 0, BP_F32, N, 1)};
    assert_int_equal(P->unary(dev, stream, &a), BP_OK);
    dread(y, py, sizeof y);
    for (int i = 0; i < N; i++) {
      float r = ref_unary(op, x[i]);
      if (isnan(r))
        assert_true(isnan(y[i]));
      else if (fabsf(y[i] - r) > 1e-5f * (1 + fabsf(r)))
        fail_msg("op %d x %g: got %g want %g", op, x[i], y[i], r);
    }
  }
  P->mem_free(dev, px);
  P->mem_free(dev, py);
}

static void test_binary_broadcast(void **state) {
  (void)state;
  NEED_DEVICE();
  enum { M = 5, N = 7 };
  float a[M * N], b[N], y[M * N];
  for (int i = 0; i < M * N; i++)
    a[i] = (float)i - 10;
  for (int j = 0; j < N; j++)
    b[j] = (float)j + 0.5f;
  uint64_t pa = dalloc(sizeof a), pb = dalloc(sizeof b), py = dalloc(sizeof y);
  dwrite(pa, a, sizeof a);
  dwrite(pb, b, sizeof b);
  for (int op = 0; op < BP_BINARY_COUNT; op++) {
    bp_binary_args_t args = {sizeof args, (bp_binary_op_t)op,
                             tensor2(pa, 0, BP_F32, M, N, N, 1),
                             tensor2(pb, 0, BP_F32, M, N, 0, 1),
                             tensor2(py, 0, BP_F32, M, N, N, 1)};
    assert_int_equal(P->binary(dev, stream, &args), BP_OK);
    dread(y, py, sizeof y);
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        float u = a[i * N + j], v = b[j], r;
        switch (op) {
        case 0: r = u + v; break;
        case 1: r = u - v; break;
        case 2: r = u * v; break;
        case 3: r = u / v; break;
        case 4: r = fmaxf(u, v); break;
        case 5: r = fminf(u, v); break;
        default: r = powf(u, v); break;
        }
        float g = y[i * N + j];
        if (isnan(r) ? !isnan(g) : fabsf(g - r) > 1e-5f * (1 + fabsf(r)))
          fail_msg("op %d (%d,%d): got %g want %g", op, i, j, g, r);
      }
  }
  P->mem_free(dev, pa);
  P->mem_free(dev, pb);
  P->mem_free(dev, py);
}

#include "test_opencl_plugin_gemm.inc"

/* Events: markers on the stream give a positive elapsed time around work,
 * and a second stream can wait on them. */
static void test_events(void **state) {
  (void)state;
  NEED_DEVICE();
  bp_plugin_event_t *e0, *e1;
  bp_plugin_stream_t *s2;
  assert_int_equal(P->event_create(dev, &e0), BP_OK);
  assert_int_equal(P->event_create(dev, &e1), BP_OK);
  assert_int_equal(P->stream_create(dev, &s2), BP_OK);
  enum { N = 1 << 20 };
  uint64_t p = dalloc(N * 4);
  bp_fill_args_t a = {sizeof a, 1.0, tensor1(p, 0, BP_F32, N, 1)};
  assert_int_equal(P->event_record(dev, e0, stream), BP_OK);
  for (int i = 0; i < 4; i++)
    assert_int_equal(P->fill(dev, stream, &a), BP_OK);
  assert_int_equal(P->event_record(dev, e1, stream), BP_OK);
  assert_int_equal(P->stream_wait_event(dev, s2, e1), BP_OK);
  a.value = 2.0;
  assert_int_equal(P->fill(dev, s2, &a), BP_OK); /* ordered after stream's */
  assert_int_equal(P->stream_synchronize(dev, s2), BP_OK);
  double ms = -1;
  assert_int_equal(P->event_elapsed(dev, e0, e1, &ms), BP_OK);
  assert_true(ms >= 0);
  float v;
  assert_int_equal(P->mem_read(dev, NULL, &v, p, 4 * (N - 1), 4), BP_OK);
  assert_true(v == 2.0f);
  P->mem_free(dev, p);
  P->stream_destroy(dev, s2);
  P->event_destroy(dev, e0);
  P->event_destroy(dev, e1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_probe),
      cmocka_unit_test(test_fill_strided),
      cmocka_unit_test(test_fill_dtypes),
      cmocka_unit_test(test_copy_transpose),
      cmocka_unit_test(test_cast),
      cmocka_unit_test(test_unary),
      cmocka_unit_test(test_binary_broadcast),
      OCL_GEMM_TESTS,
      cmocka_unit_test(test_events),
  };
  /* No device is a skip, or a failure where PoCL is installed (skip.h). */
  if (group_setup(NULL) != 0)
    return 1;
  if (!dev) {
    group_teardown(NULL);
    return test_no_device("opencl", last_error);
  }
  int failed = cmocka_run_group_tests_name("opencl plugin", tests, NULL, NULL);
  group_teardown(NULL);
  return failed;
}
