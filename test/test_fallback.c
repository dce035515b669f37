/*
 * test_fallback.c — automatic fallback (core/fallback.c, docs/runtime.md
 * "Fallback"). The devices, best first: "partial" and "partial2" (test
 * plugins from test/fixtures/partial_plugin.c), then cpu. partial lacks
 * softmax, does not claim unary for f16 or f64, and refuses binary over
 * more than 64 elements; partial2 has softmax and binary, and claims f64
 * unary but refuses it. Each case checks the result against values
 * computed here, the records bp_device_fallback_stats gives (op, dtype,
 * reason, target, bytes), the info log line (once), and that with fallback
 * off (config and BACKPLANE_FALLBACK=0) the old status comes back and the
 * output is untouched.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
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
#include "skip.h"

static bp_context_t *ctx;

/* ---- the log ------------------------------------------------------------- */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char info_lines[16][1024];
static int info_count, debug_partial2, warn_open;
static char warn_line[1024];

static void on_log(bp_log_level_t level, const char *category, const char *message, void *user) {
  (void)category, (void)user;
  pthread_mutex_lock(&log_lock);
  if (level == BP_LOG_INFO && strstr(message, "fallback:") && info_count < 16)
    snprintf(info_lines[info_count++], sizeof info_lines[0], "%s", message);
  if (level == BP_LOG_DEBUG && strstr(message, "could not run on 'partial2'")) debug_partial2++;
  if (level == BP_LOG_WARN && strstr(message, "still open") && warn_open++ == 0)
    snprintf(warn_line, sizeof warn_line, "%s", message);
  pthread_mutex_unlock(&log_lock);
}

static void log_reset(void) {
  pthread_mutex_lock(&log_lock);
  info_count = debug_partial2 = warn_open = 0;
  pthread_mutex_unlock(&log_lock);
}

/* ---- fixtures ------------------------------------------------------------ */

static int setup(void **state) {
  (void)state;
  char exe[PATH_MAX], path[2 * PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(path, sizeof path, "%s/partial-plugin:%s/../plugins", exe, exe);
  setenv("BACKPLANE_PLUGIN_PATH", path, 1);
  setenv("BACKPLANE_BACKENDS", "partial,partial2,cpu,-opencl,-vulkan,-cuda,-rocm", 1);
  unsetenv("BACKPLANE_FALLBACK");
  bp_context_options_t opt = {.struct_size = sizeof opt, .in_process_probe = true};
  if (bp_context_create(&opt, &ctx) != BP_OK) return -1;
  bp_device_entry_t e;
  if (bp_context_device_entry(ctx, 0, &e) != BP_OK || strcmp(e.info.name, "partial")) return -1;
  bp_log_set_level(BP_LOG_DEBUG);
  bp_log_set_handler(on_log, NULL);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  bp_log_set_handler(NULL, NULL);
  bp_log_set_level(BP_LOG_WARN);
  bp_context_destroy(ctx);
  return 0;
}

typedef struct dev {
  bp_device_t *d;
  bp_stream_t *s;
} dev_t_;

static dev_t_ open_partial(const bp_device_config_t *cfg) {
  dev_t_ v = {0};
  assert_int_equal(bp_device_open(ctx, "partial", cfg, &v.d), BP_OK);
  assert_int_equal(bp_stream_create(v.d, &v.s), BP_OK);
  log_reset();
  return v;
}

static void close_dev(dev_t_ v) {
  bp_stream_destroy(v.s);
  bp_device_close(v.d);
}

static bp_buffer_t *buffer_with(bp_device_t *d, const void *bytes, uint64_t size) {
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(d, size, &b), BP_OK);
  assert_int_equal(bp_buffer_write(b, 0, bytes, size), BP_OK);
  return b;
}

static bp_tensor_t vec(bp_buffer_t *b, bp_dtype_t dt, int64_t n, int64_t stride) {
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, 0, dt, 1, &n, &stride, &t), BP_OK);
  return t;
}

/* The device's records; asserts there are n. */
static void stats(bp_device_t *d, bp_fallback_stat_t *out, uint32_t n) {
  uint32_t count = 0;
  memset(out, 0, n * sizeof *out);
  if (n) out[0].struct_size = sizeof *out;
  assert_int_equal(bp_device_fallback_stats(d, out, n, &count), BP_OK);
  assert_int_equal(count, n);
}

/* ---- cases --------------------------------------------------------------- */

/* Unary f16: partial does not claim it, partial2 neither; cpu runs it. */
static void test_dtype_falls_back(void **state) {
  (void)state;
  dev_t_ v = open_partial(NULL);
  const uint16_t x[4] = {0x3C00, 0x4000, 0xC200, 0x3800}; /* 1, 2, -3, 0.5 */
  const uint16_t y0[4] = {0x7E00, 0x7E00, 0x7E00, 0x7E00};
  bp_buffer_t *bx = buffer_with(v.d, x, sizeof x), *by = buffer_with(v.d, y0, sizeof y0);
  bp_tensor_t tx = vec(bx, BP_F16, 4, 1), ty = vec(by, BP_F16, 4, 1);
  assert_int_equal(bp_unary(v.s, BP_UNARY_NEG, &tx, &ty), BP_OK);
  uint16_t y[4];
  assert_int_equal(bp_buffer_read(by, 0, y, sizeof y), BP_OK);
  for (int i = 0; i < 4; i++) assert_int_equal(y[i], x[i] ^ 0x8000); /* -x, exactly */
  bp_fallback_stat_t st[1];
  stats(v.d, st, 1);
  assert_int_equal(st[0].op, BP_OP_UNARY);
  assert_int_equal(st[0].dtype, BP_F16);
  assert_int_equal(st[0].reason, BP_FALLBACK_DTYPE);
  assert_string_equal(st[0].target, "cpu");
  assert_string_equal(st[0].target_backend, "cpu");
  assert_non_null(strstr(st[0].reason_text, "does not support unary for f16"));
  assert_int_equal(st[0].count, 1);
  assert_int_equal(st[0].bytes_in, 8); /* x; y is dense and only written */
  assert_int_equal(st[0].bytes_out, 8);
  assert_true(st[0].total_ns >= st[0].copy_ns);
  bp_buffer_free(bx);
  bp_buffer_free(by);
  close_dev(v);
}

/* Softmax: partial claims it but has no entry; partial2 runs it. */
static void test_missing_entry_falls_back(void **state) {
  (void)state;
  dev_t_ v = open_partial(NULL);
  float x[15], y[15];
  for (int i = 0; i < 15; i++) x[i] = (float)((i * 7) % 11) * 0.25f - 1.0f;
  bp_buffer_t *bx = buffer_with(v.d, x, sizeof x), *by = buffer_with(v.d, x, sizeof x);
  int64_t shape[2] = {3, 5};
  bp_tensor_t tx, ty;
  assert_int_equal(bp_tensor_init(bx, 0, BP_F32, 2, shape, NULL, &tx), BP_OK);
  assert_int_equal(bp_tensor_init(by, 0, BP_F32, 2, shape, NULL, &ty), BP_OK);
  assert_int_equal(bp_softmax(v.s, &tx, 1, false, &ty), BP_OK);
  assert_int_equal(bp_buffer_read(by, 0, y, sizeof y), BP_OK);
  for (int r = 0; r < 3; r++) {
    double m = -INFINITY, sum = 0;
    for (int k = 0; k < 5; k++) m = fmax(m, x[r * 5 + k]);
    for (int k = 0; k < 5; k++) sum += exp(x[r * 5 + k] - m);
    for (int k = 0; k < 5; k++) assert_float_equal(y[r * 5 + k], exp(x[r * 5 + k] - m) / sum, 1e-6);
  }
  bp_fallback_stat_t st[1];
  stats(v.d, st, 1);
  assert_int_equal(st[0].op, BP_OP_SOFTMAX);
  assert_int_equal(st[0].dtype, BP_F32);
  assert_int_equal(st[0].reason, BP_FALLBACK_NO_ENTRY);
  assert_string_equal(st[0].target, "partial2");
  assert_non_null(strstr(st[0].reason_text, "does not implement softmax"));
  assert_int_equal(st[0].bytes_in, sizeof x);
  assert_int_equal(st[0].bytes_out, sizeof y);
  bp_buffer_free(bx);
  bp_buffer_free(by);
  close_dev(v);
}

/* Binary over 100 elements: partial's plugin refuses it (shape limit);
 * partial2 runs it. Over 10 elements partial runs it itself. */
static void test_plugin_refusal_falls_back(void **state) {
  (void)state;
  dev_t_ v = open_partial(NULL);
  float a[100], b[100], y[100];
  for (int i = 0; i < 100; i++) a[i] = (float)i, b[i] = (float)(3 * i % 17) - 8.0f;
  bp_buffer_t *ba = buffer_with(v.d, a, sizeof a), *bb = buffer_with(v.d, b, sizeof b),
              *by = buffer_with(v.d, a, sizeof a);
  bp_tensor_t ta = vec(ba, BP_F32, 100, 1), tb = vec(bb, BP_F32, 100, 1), ty = vec(by, BP_F32, 100, 1);
  assert_int_equal(bp_binary(v.s, BP_BINARY_MUL, &ta, &tb, &ty), BP_OK);
  assert_int_equal(bp_buffer_read(by, 0, y, sizeof y), BP_OK);
  for (int i = 0; i < 100; i++) assert_true(y[i] == a[i] * b[i]);
  bp_tensor_t sa = vec(ba, BP_F32, 10, 1), sb = vec(bb, BP_F32, 10, 1), sy = vec(by, BP_F32, 10, 1);
  assert_int_equal(bp_binary(v.s, BP_BINARY_ADD, &sa, &sb, &sy), BP_OK);
  assert_int_equal(bp_buffer_read(by, 0, y, sizeof y), BP_OK);
  for (int i = 0; i < 10; i++) assert_true(y[i] == a[i] + b[i]);
  bp_fallback_stat_t st[1]; /* the small one did not fall back */
  stats(v.d, st, 1);
  assert_int_equal(st[0].op, BP_OP_BINARY);
  assert_int_equal(st[0].reason, BP_FALLBACK_REFUSED);
  assert_string_equal(st[0].target, "partial2");
  assert_non_null(strstr(st[0].reason_text, "at most 64 elements"));
  assert_int_equal(st[0].count, 1);
  assert_int_equal(st[0].bytes_in, 800);
  assert_int_equal(st[0].bytes_out, 400);
  bp_buffer_free(ba);
  bp_buffer_free(bb);
  bp_buffer_free(by);
  close_dev(v);
}

/* Unary f64: partial2 claims it but refuses, so cpu runs it; the output is
 * a strided view whose gaps must keep their values; the info line comes
 * once for two calls, and the counts add up. */
static void test_chain_strided_and_logged_once(void **state) {
  (void)state;
  dev_t_ v = open_partial(NULL);
  double x[5] = {1.5, -2.25, 0, 8, -0.5}, y[10];
  for (int i = 0; i < 10; i++) y[i] = 100 + i;
  bp_buffer_t *bx = buffer_with(v.d, x, sizeof x), *by = buffer_with(v.d, y, sizeof y);
  bp_tensor_t tx = vec(bx, BP_F64, 5, 1), ty = vec(by, BP_F64, 5, 2);
  assert_int_equal(bp_unary(v.s, BP_UNARY_NEG, &tx, &ty), BP_OK);
  assert_int_equal(bp_unary(v.s, BP_UNARY_NEG, &tx, &ty), BP_OK);
  double out[10];
  assert_int_equal(bp_buffer_read(by, 0, out, sizeof out), BP_OK);
  for (int i = 0; i < 5; i++) {
    assert_true(out[2 * i] == -x[i]);
    if (2 * i + 1 < 9) assert_true(out[2 * i + 1] == 100 + 2 * i + 1); /* gaps untouched */
  }
  bp_fallback_stat_t st[1];
  stats(v.d, st, 1);
  assert_int_equal(st[0].dtype, BP_F64);
  assert_string_equal(st[0].target, "cpu");
  assert_int_equal(st[0].count, 2);
  /* y spans 9 doubles with gaps: read as well as written */
  assert_int_equal(st[0].bytes_in, 2 * (40 + 72));
  assert_int_equal(st[0].bytes_out, 2 * 72);
  pthread_mutex_lock(&log_lock); /* copied out: a failed assert must not hold it */
  int infos = info_count, tried = debug_partial2;
  char line[1024];
  snprintf(line, sizeof line, "%s", info_lines[0]);
  pthread_mutex_unlock(&log_lock);
  assert_int_equal(infos, 1);
  assert_non_null(strstr(line, "unary f64"));
  assert_non_null(strstr(line, "'partial'"));
  assert_non_null(strstr(line, "'cpu'"));
  assert_non_null(strstr(line, "dtype not claimed"));
  assert_true(tried >= 1); /* partial2 was tried first */
  bp_buffer_free(bx);
  bp_buffer_free(by);
  close_dev(v);
}

/* With fallback off the old refusals come back and nothing is written. */
static void check_no_fallback(dev_t_ v) {
  float a[100], y0[100], y[100];
  for (int i = 0; i < 100; i++) a[i] = (float)i, y0[i] = -7.0f;
  bp_buffer_t *ba = buffer_with(v.d, a, sizeof a), *by = buffer_with(v.d, y0, sizeof y0);
  bp_tensor_t ta = vec(ba, BP_F32, 100, 1), ty = vec(by, BP_F32, 100, 1);
  assert_int_equal(bp_binary(v.s, BP_BINARY_ADD, &ta, &ta, &ty), BP_ERR_UNSUPPORTED);
  assert_non_null(strstr(bp_last_error(), "at most 64 elements"));
  int64_t shape[2] = {10, 10};
  bp_tensor_t sx, sy;
  assert_int_equal(bp_tensor_init(ba, 0, BP_F32, 2, shape, NULL, &sx), BP_OK);
  assert_int_equal(bp_tensor_init(by, 0, BP_F32, 2, shape, NULL, &sy), BP_OK);
  assert_int_equal(bp_softmax(v.s, &sx, 1, false, &sy), BP_ERR_UNSUPPORTED);
  assert_string_equal(bp_last_error(), "bp_softmax: backend 'partial' does not implement softmax");
  bp_tensor_t hx = vec(ba, BP_F64, 50, 1), hy = vec(by, BP_F64, 50, 1);
  assert_int_equal(bp_unary(v.s, BP_UNARY_NEG, &hx, &hy), BP_ERR_UNSUPPORTED);
  assert_string_equal(bp_last_error(), "bp_unary: device 'partial' (partial) does not support unary for f64");
  assert_int_equal(bp_buffer_read(by, 0, y, sizeof y), BP_OK);
  assert_memory_equal(y, y0, sizeof y);
  uint32_t count = 1;
  assert_int_equal(bp_device_fallback_stats(v.d, NULL, 0, &count), BP_OK);
  assert_int_equal(count, 0);
  pthread_mutex_lock(&log_lock);
  int infos = info_count;
  pthread_mutex_unlock(&log_lock);
  assert_int_equal(infos, 0);
  bp_buffer_free(ba);
  bp_buffer_free(by);
}

static void test_off_by_config(void **state) {
  (void)state;
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .no_fallback = true};
  dev_t_ v = open_partial(&cfg);
  check_no_fallback(v);
  close_dev(v);
}

static void test_off_by_environment(void **state) {
  (void)state;
  setenv("BACKPLANE_FALLBACK", "0", 1);
  dev_t_ v = open_partial(NULL);
  unsetenv("BACKPLANE_FALLBACK");
  check_no_fallback(v);
  close_dev(v);
}

/* A config from before the field was appended opens with fallback on. */
static void test_old_config_size_keeps_default(void **state) {
  (void)state;
  bp_device_config_t cfg = {.struct_size = offsetof(bp_device_config_t, no_fallback), .no_fallback = true};
  dev_t_ v = open_partial(&cfg);
  double x[2] = {1, 2};
  bp_buffer_t *b = buffer_with(v.d, x, sizeof x);
  bp_tensor_t t = vec(b, BP_F64, 2, 1);
  assert_int_equal(bp_unary(v.s, BP_UNARY_NEG, &t, &t), BP_OK); /* in place */
  assert_int_equal(bp_buffer_read(b, 0, x, sizeof x), BP_OK);
  assert_true(x[0] == -1 && x[1] == -2);
  bp_buffer_free(b);
  close_dev(v);
}

/* A context destroyed with the origin device open closes it, and with it
 * the devices fallback opened, warning only about the one the application
 * opened. */
static void test_context_destroy_closes_targets(void **state) {
  (void)state;
  bp_context_options_t opt = {.struct_size = sizeof opt, .in_process_probe = true};
  bp_context_t *c2;
  assert_int_equal(bp_context_create(&opt, &c2), BP_OK);
  bp_device_t *d;
  bp_stream_t *s;
  bp_buffer_t *b;
  assert_int_equal(bp_device_open(c2, "partial", NULL, &d), BP_OK);
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  assert_int_equal(bp_buffer_alloc(d, 16, &b), BP_OK);
  bp_tensor_t t = vec(b, BP_F64, 2, 1);
  assert_int_equal(bp_unary(s, BP_UNARY_NEG, &t, &t), BP_OK); /* opens partial2 and cpu */
  log_reset();
  bp_context_destroy(c2);
  pthread_mutex_lock(&log_lock); /* copied out: a failed assert must not hold it */
  int warns = warn_open;
  char line[1024];
  snprintf(line, sizeof line, "%s", warn_line);
  pthread_mutex_unlock(&log_lock);
  assert_int_equal(warns, 1);
  assert_non_null(strstr(line, "'partial'"));
}

/* Fallback to a device whose memory is not host memory (OpenCL on PoCL,
 * Vulkan on lavapipe: the mapped copy path), at odd offsets: a binary op
 * over 1000 elements that partial refuses, with nothing but the backend
 * under test behind partial. */
static int gpu_target(const char *backend) {
  char order[96];
  snprintf(order, sizeof order, "partial,%s,-partial2,-cpu", backend);
  setenv("BACKPLANE_BACKENDS", order, 1);
  bp_context_options_t opt = {.struct_size = sizeof opt, .in_process_probe = true};
  bp_context_t *c2 = NULL;
  bp_device_entry_t e;
  bool present = bp_context_create(&opt, &c2) == BP_OK && bp_context_device_entry(c2, 1, &e) == BP_OK &&
                 !strcmp(e.backend, backend);
  setenv("BACKPLANE_BACKENDS", "partial,partial2,cpu,-opencl,-vulkan,-cuda,-rocm", 1);
  if (!present) {
    bp_context_destroy(c2);
    return 0;
  }
  bp_device_t *d;
  bp_stream_t *s;
  assert_int_equal(bp_device_open(c2, "partial", NULL, &d), BP_OK);
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  enum { N = 1000 };
  static float a[N + 3], b[N + 3], y[N + 3];
  for (int i = 0; i < N + 3; i++) a[i] = i * 0.5f, b[i] = 3.0f - i, y[i] = -1;
  bp_buffer_t *ba = buffer_with(d, a, sizeof a), *bb = buffer_with(d, b, sizeof b), *by = buffer_with(d, y, sizeof y);
  int64_t n = N;
  bp_tensor_t ta, tb, ty;
  assert_int_equal(bp_tensor_init(ba, 12, BP_F32, 1, &n, NULL, &ta), BP_OK);
  assert_int_equal(bp_tensor_init(bb, 4, BP_F32, 1, &n, NULL, &tb), BP_OK);
  assert_int_equal(bp_tensor_init(by, 8, BP_F32, 1, &n, NULL, &ty), BP_OK);
  assert_int_equal(bp_binary(s, BP_BINARY_ADD, &ta, &tb, &ty), BP_OK);
  assert_int_equal(bp_buffer_read(by, 0, y, sizeof y), BP_OK);
  for (int i = 0; i < N; i++) assert_true(y[i + 2] == a[i + 3] + b[i + 1]);
  assert_true(y[0] == -1 && y[1] == -1 && y[N + 2] == -1); /* outside the view: untouched */
  bp_fallback_stat_t st[1];
  stats(d, st, 1);
  assert_string_equal(st[0].target_backend, backend);
  assert_int_equal(st[0].bytes_in, 2 * 4 * N);
  assert_int_equal(st[0].bytes_out, 4 * N);
  bp_context_destroy(c2); /* closes d with its buffers and its targets */
  return 1;
}

static void test_falls_back_to_device_memory(void **state) {
  (void)state;
  int ran = gpu_target("opencl") + gpu_target("vulkan");
  if (!ran) TEST_SKIP_CASE("neither an OpenCL nor a Vulkan device here");
}

/* Two threads, each on a stream of its own on one origin device, fall back
 * at once: they share the target device and its stream. */
typedef struct worker {
  bp_device_t *d;
  int failures;
} worker_t;

static void *worker_main(void *p) {
  worker_t *w = p;
  bp_stream_t *s = NULL;
  bp_buffer_t *b = NULL;
  double x[8];
  if (bp_stream_create(w->d, &s) != BP_OK || bp_buffer_alloc(w->d, sizeof x, &b) != BP_OK) {
    w->failures++;
    return NULL;
  }
  int64_t n = 8;
  bp_tensor_t t;
  bp_tensor_init(b, 0, BP_F64, 1, &n, NULL, &t);
  for (int i = 0; i < 200; i++) {
    for (int k = 0; k < 8; k++) x[k] = i * 8 + k;
    if (bp_buffer_write(b, 0, x, sizeof x) != BP_OK || bp_unary(s, BP_UNARY_NEG, &t, &t) != BP_OK ||
        bp_buffer_read(b, 0, x, sizeof x) != BP_OK) {
      w->failures++;
      continue;
    }
    for (int k = 0; k < 8; k++) w->failures += x[k] != -(double)(i * 8 + k);
  }
  bp_buffer_free(b);
  bp_stream_destroy(s);
  return NULL;
}

static void test_threads_share_the_target(void **state) {
  (void)state;
  dev_t_ v = open_partial(NULL);
  worker_t w[2] = {{v.d, 0}, {v.d, 0}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  assert_int_equal(w[0].failures + w[1].failures, 0);
  bp_fallback_stat_t st[1];
  stats(v.d, st, 1);
  assert_int_equal(st[0].count, 400);
  assert_int_equal(st[0].bytes_in, 400 * 64);
  assert_int_equal(st[0].bytes_out, 400 * 64);
  close_dev(v);
}

static void test_stats_arguments(void **state) {
  (void)state;
  dev_t_ v = open_partial(NULL);
  bp_fallback_stat_t st[1] = {{.struct_size = 8}};
  uint32_t count;
  assert_int_equal(bp_device_fallback_stats(v.d, st, 1, NULL), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_device_fallback_stats(v.d, NULL, 1, &count), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_device_fallback_stats(v.d, st, 1, &count), BP_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(bp_last_error(), "struct_size"));
  assert_int_equal(bp_device_fallback_stats(NULL, NULL, 0, &count), BP_ERR_INVALID_ARGUMENT);
  close_dev(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_falls_back),
      cmocka_unit_test(test_missing_entry_falls_back),
      cmocka_unit_test(test_plugin_refusal_falls_back),
      cmocka_unit_test(test_chain_strided_and_logged_once),
      cmocka_unit_test(test_off_by_config),
      cmocka_unit_test(test_off_by_environment),
      cmocka_unit_test(test_old_config_size_keeps_default),
      cmocka_unit_test(test_context_destroy_closes_targets),
      cmocka_unit_test(test_falls_back_to_device_memory),
      cmocka_unit_test(test_threads_share_the_target),
      cmocka_unit_test(test_stats_arguments),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
