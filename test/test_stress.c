/*
 * test_stress.c — 16 threads of mixed ops on several streams of the "cpu"
 * and "cpu-ref" devices at once, with buffers and streams created and
 * destroyed while others compute. Every result is checked exactly (small
 * integers, so f32 arithmetic is exact). Runs under ThreadSanitizer in
 * `make check-tsan`.
 */
#include <limits.h>
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

#define THREADS 16
#define STREAMS 4 /* per device */
#define N 8       /* matrices are N x N */

/* A private plugin directory holding only the CPU plugin of this build
 * ($(B)/plugins, found from /proc/self/exe = $(B)/test/test_stress), so that
 * other backends present on the machine play no part. */
static char g_dir[PATH_MAX];

static int setup(void **state) {
  (void)state;
  char exe[PATH_MAX], target[PATH_MAX + 32], link[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  for (int i = 0; i < 2; i++) {
    char *slash = strrchr(exe, '/');
    if (!slash) return -1;
    *slash = '\0';
  }
  snprintf(target, sizeof target, "%s/plugins/backend-cpu.so", exe);
  snprintf(g_dir, sizeof g_dir, "/tmp/bp-stress-XXXXXX");
  if (!mkdtemp(g_dir)) return -1;
  snprintf(link, sizeof link, "%s/backend-cpu.so", g_dir);
  return symlink(target, link);
}

static int teardown(void **state) {
  (void)state;
  char link[PATH_MAX + 32];
  snprintf(link, sizeof link, "%s/backend-cpu.so", g_dir);
  unlink(link);
  rmdir(g_dir);
  return 0;
}

static bp_status_t open_context(bp_context_t **out) {
  bp_context_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.plugin_dir = g_dir;
  o.only_plugin_dir = true;
  return bp_context_create(&o, out);
}

typedef struct shared {
  bp_device_t *dev[2];
  bp_stream_t *streams[2][STREAMS];
  int iterations;
} shared_t;

typedef struct worker {
  shared_t *sh;
  int id;
  int failures;
  char first_failure[256];
  pthread_t thread;
} worker_t;

#define CHECK(w, cond)                                                            \
  do {                                                                            \
    if (!(cond)) {                                                                \
      if ((w)->failures++ == 0)                                                   \
        snprintf((w)->first_failure, sizeof (w)->first_failure,                   \
                 "thread %d line %d: %s (%s)", (w)->id, __LINE__, #cond,          \
                 bp_last_error());                                                \
      goto out;                                                                   \
    }                                                                             \
  } while (0)

static bool all_equal(const float *v, int n, float want) {
  for (int i = 0; i < n; i++)
    if (v[i] != want) return false;
  return true;
}

/* One iteration on one stream: fill, add, gemm, negate, row sums, a
 * transposed copy; then read everything back and check it. */
static void iteration(worker_t *w, bp_stream_t *s, bp_device_t *dev, int it) {
  bp_buffer_t *buf = NULL;
  const uint64_t mat = N * N * sizeof(float);
  float host[N * N];
  CHECK(w, bp_buffer_alloc(dev, 7 * mat, &buf) == BP_OK);
  int64_t shape[2] = {N, N}, row_shape[2] = {N, 1};
  bp_tensor_t x, y, z, a, c, neg, sums, xt;
  CHECK(w, bp_tensor_init(buf, 0 * mat, BP_F32, 2, shape, NULL, &x) == BP_OK);
  CHECK(w, bp_tensor_init(buf, 1 * mat, BP_F32, 2, shape, NULL, &y) == BP_OK);
  CHECK(w, bp_tensor_init(buf, 2 * mat, BP_F32, 2, shape, NULL, &z) == BP_OK);
  CHECK(w, bp_tensor_init(buf, 3 * mat, BP_F32, 2, shape, NULL, &a) == BP_OK);
  CHECK(w, bp_tensor_init(buf, 4 * mat, BP_F32, 2, shape, NULL, &c) == BP_OK);
  CHECK(w, bp_tensor_init(buf, 5 * mat, BP_F32, 2, shape, NULL, &neg) == BP_OK);
  CHECK(w, bp_tensor_init(buf, 6 * mat, BP_F32, 2, row_shape, NULL, &sums) == BP_OK);

  const float xv = (float)(w->id + 1), yv = (float)(it % 7);
  CHECK(w, bp_fill(s, &x, xv) == BP_OK);
  CHECK(w, bp_fill(s, &y, yv) == BP_OK);
  CHECK(w, bp_binary(s, BP_BINARY_ADD, &x, &y, &z) == BP_OK);
  CHECK(w, bp_fill(s, &a, 2.0) == BP_OK);
  /* c = x · a: every element N * xv * 2. */
  CHECK(w, bp_matmul(s, 1.0, &x, &a, 0.0, &c) == BP_OK);
  CHECK(w, bp_unary(s, BP_UNARY_NEG, &z, &neg) == BP_OK);
  CHECK(w, bp_reduce(s, BP_REDUCE_SUM, &z, 1, &sums) == BP_OK);
  /* a = transpose(c) through a strided copy (c is constant, so equal). */
  CHECK(w, bp_tensor_transpose(&c, 0, 1, &xt) == BP_OK);
  CHECK(w, bp_copy(s, &xt, &a) == BP_OK);
  CHECK(w, bp_stream_synchronize(s) == BP_OK);

  CHECK(w, bp_buffer_read(buf, 2 * mat, host, mat) == BP_OK);
  CHECK(w, all_equal(host, N * N, xv + yv));
  CHECK(w, bp_buffer_read(buf, 4 * mat, host, mat) == BP_OK);
  CHECK(w, all_equal(host, N * N, (float)N * xv * 2.0f));
  CHECK(w, bp_buffer_read(buf, 3 * mat, host, mat) == BP_OK);
  CHECK(w, all_equal(host, N * N, (float)N * xv * 2.0f));
  CHECK(w, bp_buffer_read(buf, 5 * mat, host, mat) == BP_OK);
  CHECK(w, all_equal(host, N * N, -(xv + yv)));
  CHECK(w, bp_buffer_read(buf, 6 * mat, host, N * sizeof(float)) == BP_OK);
  CHECK(w, all_equal(host, N, (float)N * (xv + yv)));
out:
  bp_buffer_free(buf);
}

/* Every fourth thread also churns a private stream and buffers, so that
 * creation and destruction race with the work of the others. */
static void *worker_main(void *arg) {
  worker_t *w = arg;
  shared_t *sh = w->sh;
  for (int it = 0; it < sh->iterations && w->failures == 0; it++) {
    int d = (w->id + it) % 2;
    bp_stream_t *s = sh->streams[d][(w->id + it) % STREAMS];
    bp_stream_t *own = NULL;
    if (w->id % 4 == 3) {
      CHECK(w, bp_stream_create(sh->dev[d], &own) == BP_OK);
      s = own;
    }
    iteration(w, s, sh->dev[d], it);
    bp_stream_destroy(own);
  }
out:
  return NULL;
}

static void test_sixteen_threads(void **state) {
  (void)state;
  bp_context_t *ctx = NULL;
  assert_int_equal(open_context(&ctx), BP_OK);
  shared_t sh;
  memset(&sh, 0, sizeof sh);
  sh.iterations = getenv("BP_UNDER_SANITIZER") ? 40 : 200;
  static const char *const names[2] = {"cpu", "cpu-ref"};
  for (int d = 0; d < 2; d++) {
    bp_status_t st = bp_device_open(ctx, names[d], NULL, &sh.dev[d]);
    if (st != BP_OK) fail_msg("open %s: %s", names[d], bp_last_error());
    for (int i = 0; i < STREAMS; i++)
      assert_int_equal(bp_stream_create(sh.dev[d], &sh.streams[d][i]), BP_OK);
  }
  worker_t w[THREADS];
  memset(w, 0, sizeof w);
  for (int i = 0; i < THREADS; i++) {
    w[i].sh = &sh;
    w[i].id = i;
    assert_int_equal(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
  }
  int failures = 0;
  for (int i = 0; i < THREADS; i++) {
    assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    if (w[i].failures) {
      print_error("%s\n", w[i].first_failure);
      failures += w[i].failures;
    }
  }
  assert_int_equal(failures, 0);
  for (int d = 0; d < 2; d++) {
    assert_int_equal(bp_device_synchronize(sh.dev[d]), BP_OK);
    for (int i = 0; i < STREAMS; i++) bp_stream_destroy(sh.streams[d][i]);
    bp_device_close(sh.dev[d]);
  }
  bp_context_destroy(ctx);
}

/* Threads opening and closing their own contexts and devices while others
 * do the same. */
static void *open_close_main(void *arg) {
  worker_t *w = arg;
  for (int it = 0; it < w->sh->iterations / 10 + 1 && w->failures == 0; it++) {
    bp_context_t *ctx = NULL;
    bp_device_t *dev = NULL;
    CHECK(w, open_context(&ctx) == BP_OK);
    CHECK(w, bp_device_open(ctx, "cpu", NULL, &dev) == BP_OK);
    bp_stream_t *s = NULL;
    CHECK(w, bp_stream_create(dev, &s) == BP_OK);
    iteration(w, s, dev, it);
    bp_context_destroy(ctx); /* releases the stream and device too */
  }
out:
  return NULL;
}

static void test_concurrent_contexts(void **state) {
  (void)state;
  shared_t sh;
  memset(&sh, 0, sizeof sh);
  sh.iterations = getenv("BP_UNDER_SANITIZER") ? 20 : 100;
  worker_t w[THREADS / 2];
  memset(w, 0, sizeof w);
  for (int i = 0; i < THREADS / 2; i++) {
    w[i].sh = &sh;
    w[i].id = i;
    assert_int_equal(pthread_create(&w[i].thread, NULL, open_close_main, &w[i]), 0);
  }
  int failures = 0;
  for (int i = 0; i < THREADS / 2; i++) {
    assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    if (w[i].failures) {
      print_error("%s\n", w[i].first_failure);
      failures += w[i].failures;
    }
  }
  assert_int_equal(failures, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sixteen_threads),
      cmocka_unit_test(test_concurrent_contexts),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
