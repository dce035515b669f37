/*
 * test_api_safety.c — memory safety of the handle layer:
 *   - a graph that recorded a buffer refuses to launch once that buffer is
 *     freed (never writes the memory's next owner), and runs again once the
 *     freed buffer is rebound;
 *   - stale handles are refused even when the allocator hands the same
 *     address to the next object;
 *   - bp_device_close while other threads run ops on the device: the calls
 *     inside finish, later ones are refused, nothing crashes;
 *   - pool2d window parameters that would overflow int32 are refused;
 *   - calls on one stream never overlap inside the plugin, synchronize
 *     included (a test plugin, test/fixtures/serial_plugin.c, reports any
 *     overlap as BP_ERR_INTERNAL).
 */
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"

static bp_context_t *open_context(void) {
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  return ctx;
}

static bp_tensor_t vec(bp_buffer_t *b, int64_t n) {
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, &n, NULL, &t), BP_OK);
  return t;
}

static float read_first(bp_buffer_t *b) {
  float v = 0;
  assert_int_equal(bp_buffer_read(b, 0, &v, sizeof v), BP_OK);
  return v;
}

/* Capture fill(x, 7), free x, allocate y where x was: the launch must be
 * refused and y untouched, also after the pool gave its memory back; a
 * rebind from the freed x to a new buffer makes the graph run again. */
static void test_graph_after_buffer_free(void **state) {
  (void)state;
  bp_context_t *ctx = open_context();
  bp_device_t *dev;
  bp_stream_t *s;
  assert_int_equal(bp_device_open(ctx, "cpu", NULL, &dev), BP_OK);
  assert_int_equal(bp_stream_create(dev, &s), BP_OK);
  bp_buffer_t *x, *y, *z;
  assert_int_equal(bp_buffer_alloc(dev, 4096, &x), BP_OK);
  bp_tensor_t tx = vec(x, 1024);
  assert_int_equal(bp_stream_begin_capture(s), BP_OK);
  assert_int_equal(bp_fill(s, &tx, 7.0), BP_OK);
  bp_graph_t *g;
  assert_int_equal(bp_stream_end_capture(s, &g), BP_OK);
  assert_int_equal(bp_graph_launch(g, s), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  assert_true(read_first(x) == 7.0f);

  bp_buffer_free(x);
  assert_int_equal(bp_buffer_alloc(dev, 4096, &y), BP_OK); /* the pool reuses x's block */
  float zero[1024] = {0};
  assert_int_equal(bp_buffer_write(y, 0, zero, sizeof zero), BP_OK);
  assert_int_equal(bp_graph_launch(g, s), BP_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(bp_last_error(), "freed"));
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  assert_true(read_first(y) == 0.0f);
  assert_int_equal(bp_device_empty_cache(dev), BP_OK);
  assert_int_equal(bp_graph_launch(g, s), BP_ERR_INVALID_ARGUMENT);

  /* y (alive, possibly at x's old address) is not what the graph used */
  assert_int_equal(bp_buffer_alloc(dev, 4096, &z), BP_OK);
  assert_int_equal(bp_graph_rebind(g, y, z), BP_OK);
  assert_int_equal(bp_graph_launch(g, s), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_graph_rebind(g, x, z), BP_OK); /* from the freed token */
  assert_int_equal(bp_graph_launch(g, s), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  assert_true(read_first(z) == 7.0f);
  assert_true(read_first(y) == 0.0f);
  /* a stale token the graph never used is refused */
  bp_buffer_t *w;
  assert_int_equal(bp_buffer_alloc(dev, 16, &w), BP_OK);
  bp_buffer_free(w);
  assert_int_equal(bp_graph_rebind(g, w, z), BP_ERR_INVALID_ARGUMENT);

  /* freeing a buffer while a capture is open marks the graph too */
  assert_int_equal(bp_stream_begin_capture(s), BP_OK);
  bp_tensor_t tz = vec(z, 1024);
  assert_int_equal(bp_fill(s, &tz, 3.0), BP_OK);
  bp_buffer_free(z);
  bp_graph_t *g2;
  assert_int_equal(bp_stream_end_capture(s, &g2), BP_OK);
  assert_int_equal(bp_graph_launch(g2, s), BP_ERR_INVALID_ARGUMENT);

  bp_graph_destroy(g2);
  bp_graph_destroy(g);
  bp_buffer_free(y);
  bp_device_close(dev);
  bp_context_destroy(ctx);
}

/* Every kind of handle, destroyed, then its address reused: the old token
 * must stay dead. */
static void test_stale_handles_refused(void **state) {
  (void)state;
  bp_context_t *ctx = open_context();
  bp_device_t *dev;
  assert_int_equal(bp_device_open(ctx, "cpu", NULL, &dev), BP_OK);
  uint64_t size;
  for (int i = 0; i < 200; i++) {
    bp_buffer_t *a, *b;
    assert_int_equal(bp_buffer_alloc(dev, 64, &a), BP_OK);
    bp_buffer_free(a);
    assert_int_equal(bp_buffer_alloc(dev, 64, &b), BP_OK);
    assert_ptr_not_equal(a, b);
    assert_int_equal(bp_buffer_size(a, &size), BP_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(bp_last_error(), "not a live buffer"));
    float v = 1;
    assert_int_equal(bp_buffer_write(a, 0, &v, sizeof v), BP_ERR_INVALID_ARGUMENT);
    bp_buffer_free(a); /* a no-op: b must survive it */
    assert_int_equal(bp_buffer_size(b, &size), BP_OK);
    assert_int_equal(size, 64);
    bp_buffer_free(b);
  }
  bp_stream_t *s1, *s2;
  assert_int_equal(bp_stream_create(dev, &s1), BP_OK);
  bp_stream_destroy(s1);
  assert_int_equal(bp_stream_create(dev, &s2), BP_OK);
  assert_int_equal(bp_stream_synchronize(s1), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_stream_synchronize(s2), BP_OK);
  bp_event_t *e1, *e2;
  assert_int_equal(bp_event_create(dev, &e1), BP_OK);
  bp_event_destroy(e1);
  assert_int_equal(bp_event_create(dev, &e2), BP_OK);
  assert_int_equal(bp_event_record(e1, s2), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_event_record(e2, s2), BP_OK);
  bp_event_destroy(e2);
  bp_stream_destroy(s2);
  /* a closed device's handle and its children's */
  bp_buffer_t *orphan;
  assert_int_equal(bp_buffer_alloc(dev, 64, &orphan), BP_OK);
  bp_device_close(dev);
  bp_device_t *dev2;
  assert_int_equal(bp_device_open(ctx, "cpu", NULL, &dev2), BP_OK);
  assert_int_equal(bp_device_synchronize(dev), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_buffer_size(orphan, &size), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_device_synchronize(dev2), BP_OK);
  /* something that was never a handle */
  int not_a_handle = 0;
  assert_int_equal(bp_buffer_size((bp_buffer_t *)&not_a_handle, &size), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_stream_create((bp_device_t *)&not_a_handle, &s1), BP_ERR_INVALID_ARGUMENT);
  bp_device_close(dev2);
  bp_context_destroy(ctx);
  uint32_t n;
  assert_int_equal(bp_context_device_count(ctx, &n), BP_ERR_INVALID_ARGUMENT);
}

/* ---- closing a device under running work ------------------------------------ */

typedef struct worker {
  bp_device_t *dev;
  pthread_barrier_t *start;
  int ok, refused, other;
  bp_status_t other_status;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  bp_stream_t *s = NULL;
  bp_buffer_t *b = NULL;
  bool ready = bp_stream_create(w->dev, &s) == BP_OK && bp_buffer_alloc(w->dev, 1 << 16, &b) == BP_OK;
  pthread_barrier_wait(w->start);
  if (!ready) return NULL;
  bp_tensor_t t;
  int64_t n = 1 << 14;
  if (bp_tensor_init(b, 0, BP_F32, 1, &n, NULL, &t) != BP_OK) return NULL;
  for (int i = 0; i < 100000; i++) {
    bp_status_t st = bp_fill(s, &t, (double)i);
    if (st == BP_OK) st = bp_unary(s, BP_UNARY_EXP, &t, &t);
    if (st == BP_OK) st = bp_stream_synchronize(s);
    if (st == BP_OK) {
      w->ok++;
      continue;
    }
    /* after the close: refused, as closing (UNAVAILABLE) or as dead handles */
    if (st == BP_ERR_UNAVAILABLE || st == BP_ERR_INVALID_ARGUMENT) w->refused++;
    else {
      w->other++;
      w->other_status = st;
    }
    break;
  }
  return NULL;
}

static void test_close_under_running_ops(void **state) {
  (void)state;
  bp_context_t *ctx = open_context();
  for (int round = 0; round < 10; round++) {
    bp_device_t *dev;
    assert_int_equal(bp_device_open(ctx, "cpu", NULL, &dev), BP_OK);
    enum { N = 3 };
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, N + 1);
    worker_t w[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
      w[i] = (worker_t){.dev = dev, .start = &start};
      assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    pthread_barrier_wait(&start);
    usleep(2000 + 1000 * round);
    bp_device_close(dev);
    int refused = 0;
    for (int i = 0; i < N; i++) {
      pthread_join(th[i], NULL);
      assert_int_equal(w[i].other, 0);
      refused += w[i].refused;
    }
    assert_int_equal(refused, N); /* every worker was stopped by the close */
    pthread_barrier_destroy(&start);
    assert_int_equal(bp_device_synchronize(dev), BP_ERR_INVALID_ARGUMENT);
  }
  bp_context_destroy(ctx);
}

static void test_pool2d_overflowing_window(void **state) {
  (void)state;
  bp_context_t *ctx = open_context();
  bp_device_t *dev;
  bp_stream_t *s;
  assert_int_equal(bp_device_open(ctx, "cpu", NULL, &dev), BP_OK);
  assert_int_equal(bp_stream_create(dev, &s), BP_OK);
  bp_buffer_t *bx, *by;
  assert_int_equal(bp_buffer_alloc(dev, 4 * 64, &bx), BP_OK);
  assert_int_equal(bp_buffer_alloc(dev, 4 * 64, &by), BP_OK);
  int64_t xs[4] = {1, 1, 8, 8}, ys[4] = {1, 1, 1, 1};
  bp_tensor_t x, y;
  assert_int_equal(bp_tensor_init(bx, 0, BP_F32, 4, xs, NULL, &x), BP_OK);
  assert_int_equal(bp_tensor_init(by, 0, BP_F32, 4, ys, NULL, &y), BP_OK);
  float sentinel = 12345.0f;
  assert_int_equal(bp_buffer_write(by, 0, &sentinel, sizeof sentinel), BP_OK);
  bp_pool2d_params_t p = {.struct_size = sizeof p, .kind = BP_POOL_MAX, .kernel_h = 2, .kernel_w = 2};
  p.pad_h = p.pad_w = p.stride_h = p.stride_w = INT32_MAX;
  assert_int_equal(bp_pool2d(s, &p, &x, &y), BP_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(bp_last_error(), "padding"));
  p.pad_h = p.pad_w = 0;
  p.kernel_h = p.kernel_w = INT32_MAX;
  assert_int_equal(bp_pool2d(s, &p, &x, &y), BP_ERR_INVALID_ARGUMENT);
  p.kernel_h = p.kernel_w = 8;
  p.stride_h = p.stride_w = INT32_MAX; /* legal extent: one window */
  assert_int_equal(bp_pool2d(s, &p, &x, &y), BP_ERR_INVALID_ARGUMENT);
  assert_true(read_first(by) == sentinel);
  p.stride_h = p.stride_w = 8;
  assert_int_equal(bp_pool2d(s, &p, &x, &y), BP_OK); /* the same op, sane: runs */
  bp_device_close(dev);
  bp_context_destroy(ctx);
}

/* ---- one stream, two threads: the plugin must never see an overlap --------- */

typedef struct sync_arg {
  bp_stream_t *s;
  atomic_int stop;
  int failures;
  char message[256];
} sync_arg_t;

static void *sync_main(void *p) {
  sync_arg_t *a = p;
  while (!atomic_load(&a->stop))
    if (bp_stream_synchronize(a->s) != BP_OK && a->failures++ == 0)
      snprintf(a->message, sizeof a->message, "%s", bp_last_error());
  return NULL;
}

static void test_stream_calls_never_overlap(void **state) {
  (void)state;
  char exe[PATH_MAX], dir[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  assert_true(n > 0);
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(dir, sizeof dir, "%s/serial-plugin", exe);
  bp_context_options_t opt = {.struct_size = sizeof opt, .plugin_dir = dir, .only_plugin_dir = true};
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(&opt, &ctx), BP_OK);
  bp_device_t *dev;
  bp_stream_t *s;
  assert_int_equal(bp_device_open(ctx, "serial", NULL, &dev), BP_OK);
  assert_int_equal(bp_stream_create(dev, &s), BP_OK);
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(dev, 256, &b), BP_OK);
  bp_tensor_t t = vec(b, 64);
  sync_arg_t arg = {.s = s};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, sync_main, &arg), 0);
  int fills = 0;
  for (int i = 0; i < 2000; i++) {
    bp_status_t st = bp_fill(s, &t, i);
    if (st != BP_OK) fail_msg("fill %d: %s", i, bp_last_error());
    fills++;
  }
  atomic_store(&arg.stop, 1);
  pthread_join(th, NULL);
  if (arg.failures) fail_msg("%d synchronize calls overlapped a fill: %s", arg.failures, arg.message);
  assert_int_equal(fills, 2000);
  assert_true(read_first(b) == 1999.0f); /* the fills really ran */
  /* the one door turns a status outside the ABI into BP_ERR_INTERNAL and
   * keeps the plugin's words */
  assert_int_equal(bp_fill(s, &t, -12345.0), BP_ERR_INTERNAL);
  assert_non_null(strstr(bp_last_error(), "on purpose"));
  assert_non_null(strstr(bp_last_error(), "serial"));
  bp_device_close(dev);
  bp_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_graph_after_buffer_free),
      cmocka_unit_test(test_stale_handles_refused),
      cmocka_unit_test(test_close_under_running_ops),
      cmocka_unit_test(test_pool2d_overflowing_window),
      cmocka_unit_test(test_stream_calls_never_overlap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
