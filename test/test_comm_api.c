/*
 * test_comm_api.c — communicators in one process: comm plugin discovery and
 * refusals (the fixtures of test/fixtures/comm_fixture.c beside the real
 * comm-mpi.so), selection by name and BACKPLANE_COMM, the API's validation
 * (a rejected call changes nothing), results on a one-rank communicator in
 * every dtype, a timed-out call breaking the communicator (reported at
 * the stream's synchronize), and calls queued on streams: ordered between
 * the ops around them, returning before the peer arrives, a stream
 * synchronised while another one's call still waits. Collectives
 * between processes are test_comm_mpi.sh's.
 */
#include "test_loader_util.h"

#include "skip.h"

static char dir[PATH_MAX];

static void add_fixture(const char *name, mode_t mode) {
  char from[PATH_MAX], to[PATH_MAX];
  snprintf(from, sizeof from, "%s/test/comm-fixtures/comm-%s.so", tl_build, name);
  snprintf(to, sizeof to, "%s/comm-%s.so", dir, name);
  tl_copy_file(from, to, mode);
}

static int setup(void **state) {
  tl_setup(state);
  unsetenv("BACKPLANE_COMM");
  unsetenv("BP_COMM_FIXTURE_TIMEOUT");
  tl_mkdtemp(dir, sizeof dir);
  tl_add_cpu(dir);
  const char *names[] = {"good", "badmagic", "abinew", "nullfn", "unavailable"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) add_fixture(names[i], 0755);
  char from[PATH_MAX], to[PATH_MAX];
  snprintf(from, sizeof from, "%s/test/comm-fixtures/comm-good.so", tl_build);
  snprintf(to, sizeof to, "%s/comm-writable.so", dir);
  tl_copy_file(from, to, 0666); /* writable by anyone: refused (TRUST rules) */
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tl_rmtree(dir);
  return 0;
}

static bool find_comm(bp_context_t *ctx, const char *file, bp_comm_plugin_report_t *out) {
  uint32_t n = 0;
  assert_int_equal(bp_context_comm_plugin_count(ctx, &n), BP_OK);
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(bp_context_comm_plugin_report(ctx, i, out), BP_OK);
    const char *slash = strrchr(out->path, '/');
    if (slash && !strcmp(slash + 1, file)) return true;
  }
  return false;
}

static void expect_refused(bp_context_t *ctx, const char *file, const char *needle) {
  bp_comm_plugin_report_t r;
  assert_true(find_comm(ctx, file, &r));
  if (r.loaded || !strstr(r.reason, needle))
    fail_msg("%s: loaded %d, reason '%s', expected '%s'", file, r.loaded, r.reason, needle);
}

static void test_discovery_and_refusals(void **state) {
  (void)state;
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  uint32_t n = 0;
  assert_int_equal(bp_context_comm_plugin_count(ctx, &n), BP_OK);
  assert_int_equal(n, 6);
  bp_comm_plugin_report_t r;
  assert_true(find_comm(ctx, "comm-good.so", &r));
  assert_true(r.loaded);
  assert_string_equal(r.name, "good");
  assert_string_equal(r.library, "fixture 1.0");
  assert_int_equal(r.launched_size, -1);
  expect_refused(ctx, "comm-badmagic.so", "bad magic");
  expect_refused(ctx, "comm-abinew.so", "incompatible major version");
  expect_refused(ctx, "comm-nullfn.so", "'barrier' of the comm descriptor is NULL");
  expect_refused(ctx, "comm-unavailable.so", "libfixture.so.1 not found");
  expect_refused(ctx, "comm-writable.so", "TRUST");
  assert_true(find_comm(ctx, "comm-unavailable.so", &r));
  assert_int_equal(r.status, BP_ERR_UNAVAILABLE);
  assert_int_equal(bp_context_comm_plugin_report(ctx, n, &r), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_context_comm_plugin_count(NULL, &n), BP_ERR_INVALID_ARGUMENT);
  bp_context_destroy(ctx);
}

/* A comm plugin whose probe crashes (its own directory, beside a working
 * one): with default options the isolated probe refuses it with the
 * reason, this process lives on, and the working one still makes a
 * communicator. */
static void test_crashing_probe_is_isolated(void **state) {
  (void)state;
  char crash_dir[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
  tl_mkdtemp(crash_dir, sizeof crash_dir);
  tl_add_cpu(crash_dir);
  const char *names[] = {"crash", "good"};
  for (int i = 0; i < 2; i++) {
    snprintf(from, sizeof from, "%s/test/comm-fixtures/comm-%s.so", tl_build, names[i]);
    snprintf(to, sizeof to, "%s/comm-%s.so", crash_dir, names[i]);
    tl_copy_file(from, to, 0755);
  }
  bp_context_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.plugin_dir = crash_dir;
  o.only_plugin_dir = true;
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(&o, &ctx), BP_OK);
  bp_comm_plugin_report_t r;
  assert_true(find_comm(ctx, "comm-crash.so", &r));
  if (r.loaded || !strstr(r.reason, "crashed in probe: SIGSEGV"))
    fail_msg("comm-crash.so: loaded %d, reason '%s'", r.loaded, r.reason);
  assert_int_equal(r.status, BP_ERR_INCOMPATIBLE);
  assert_int_equal(r.stage, BP_STAGE_PROBE);
  bp_device_t *dev;
  bp_comm_t *c;
  assert_int_equal(bp_device_open(ctx, "cpu", NULL, &dev), BP_OK);
  assert_int_equal(bp_comm_create(dev, NULL, &c), BP_OK);
  assert_string_equal(bp_comm_plugin_name(c), "good");
  bp_comm_destroy(c);
  bp_device_close(dev);
  bp_context_destroy(ctx);
  tl_rmtree(crash_dir);
}

typedef struct fx {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  bp_comm_t *comm;
} fx_t;

static void open_fx(fx_t *f, const char *plugin) {
  f->ctx = tl_open_dir(dir, false, 0);
  assert_int_equal(bp_device_open(f->ctx, "cpu", NULL, &f->dev), BP_OK);
  assert_int_equal(bp_stream_create(f->dev, &f->s), BP_OK);
  bp_comm_options_t o = {.struct_size = sizeof o, .plugin = plugin, .timeout_ms = 2000};
  bp_status_t st = bp_comm_create(f->dev, &o, &f->comm);
  if (st != BP_OK) fail_msg("bp_comm_create: %s", bp_last_error());
}

static void close_fx(fx_t *f) {
  bp_comm_destroy(f->comm);
  bp_stream_destroy(f->s);
  bp_device_close(f->dev);
  bp_context_destroy(f->ctx);
}

static void test_selection(void **state) {
  (void)state;
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  bp_device_t *dev;
  assert_int_equal(bp_device_open(ctx, "cpu", NULL, &dev), BP_OK);
  bp_comm_t *c = (bp_comm_t *)1;
  bp_comm_options_t o = {.struct_size = sizeof o, .plugin = "nonexistent"};
  assert_int_equal(bp_comm_create(dev, &o, &c), BP_ERR_NOT_FOUND);
  assert_null(c);
  assert_non_null(strstr(bp_last_error(), "comm-nonexistent.so"));
  o.plugin = "unavailable";
  assert_int_equal(bp_comm_create(dev, &o, &c), BP_ERR_UNAVAILABLE);
  assert_non_null(strstr(bp_last_error(), "libfixture.so.1 not found"));
  /* the only loaded one, and excluded by BACKPLANE_COMM: none left */
  setenv("BACKPLANE_COMM", "-good", 1);
  assert_int_equal(bp_comm_create(dev, NULL, &c), BP_ERR_UNAVAILABLE);
  unsetenv("BACKPLANE_COMM");
  assert_int_equal(bp_comm_create(dev, NULL, &c), BP_OK);
  assert_string_equal(bp_comm_plugin_name(c), "good");
  int32_t rank = -1, size = -1;
  assert_int_equal(bp_comm_rank(c, &rank), BP_OK);
  assert_int_equal(bp_comm_size(c, &size), BP_OK);
  assert_int_equal(rank, 0);
  assert_int_equal(size, 1);
  bp_comm_destroy(c);
  assert_int_equal(bp_comm_rank(c, &rank), BP_ERR_INVALID_ARGUMENT); /* stale */
  bp_comm_destroy(c);    /* stale: ignored */
  bp_comm_destroy(NULL); /* no-op */
  /* bad options */
  bp_comm_options_t bad = {.struct_size = sizeof bad, .size = 2, .rank = 5};
  assert_int_equal(bp_comm_create(dev, &bad, &c), BP_ERR_INVALID_ARGUMENT);
  bad.struct_size = 4;
  assert_int_equal(bp_comm_create(dev, &bad, &c), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_comm_create(NULL, NULL, &c), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_comm_create(dev, NULL, NULL), BP_ERR_INVALID_ARGUMENT);
  /* a communicator left open is destroyed with its context */
  assert_int_equal(bp_comm_create(dev, NULL, &c), BP_OK);
  bp_device_close(dev);
  bp_context_destroy(ctx);
}

/* A rejected call leaves recv as it was. */
static void expect_rejected(fx_t *f, bp_buffer_t *recv, bp_status_t st, const char *needle) {
  if (st != BP_ERR_INVALID_ARGUMENT || !strstr(bp_last_error(), needle))
    fail_msg("got %s '%s', expected BP_ERR_INVALID_ARGUMENT with '%s'", bp_status_name(st), bp_last_error(),
             needle);
  float back[4];
  assert_int_equal(bp_buffer_read(recv, 0, back, sizeof back), BP_OK);
  for (int i = 0; i < 4; i++) assert_true(back[i] == -1.0f);
  (void)f;
}

static void test_validation(void **state) {
  (void)state;
  fx_t f;
  open_fx(&f, "good");
  bp_buffer_t *send, *recv, *other_buf;
  float v[4] = {1, 2, 3, 4}, minus[4] = {-1, -1, -1, -1};
  assert_int_equal(bp_buffer_alloc(f.dev, sizeof v, &send), BP_OK);
  assert_int_equal(bp_buffer_alloc(f.dev, sizeof v, &recv), BP_OK);
  assert_int_equal(bp_buffer_write(send, 0, v, sizeof v), BP_OK);
  assert_int_equal(bp_buffer_write(recv, 0, minus, sizeof minus), BP_OK);
  bp_device_t *dev2;
  bp_stream_t *s2;
  assert_int_equal(bp_device_open(f.ctx, "cpu", NULL, &dev2), BP_OK);
  assert_int_equal(bp_stream_create(dev2, &s2), BP_OK);
  assert_int_equal(bp_buffer_alloc(dev2, sizeof v, &other_buf), BP_OK);

  expect_rejected(&f, recv, bp_comm_all_reduce(f.comm, f.s, send, 0, recv, 0, 5, BP_F32, BP_COMM_SUM),
                  "do not fit");
  expect_rejected(&f, recv, bp_comm_all_reduce(f.comm, f.s, send, 0, recv, 4, 4, BP_F32, BP_COMM_SUM),
                  "do not fit");
  expect_rejected(&f, recv, bp_comm_all_reduce(f.comm, f.s, send, 0, recv, 0, 4, (bp_dtype_t)99, BP_COMM_SUM),
                  "dtype");
  expect_rejected(&f, recv, bp_comm_all_reduce(f.comm, f.s, send, 0, recv, 0, 4, BP_F32, (bp_comm_reduce_op_t)9),
                  "op 9");
  expect_rejected(&f, recv, bp_comm_all_reduce(f.comm, f.s, send, 0, recv, 0, UINT64_MAX / 2, BP_F32,
                                               BP_COMM_SUM), "overflows");
  expect_rejected(&f, recv, bp_comm_all_reduce(f.comm, s2, send, 0, recv, 0, 4, BP_F32, BP_COMM_SUM),
                  "not on the communicator's device");
  expect_rejected(&f, recv, bp_comm_all_reduce(f.comm, f.s, other_buf, 0, recv, 0, 4, BP_F32, BP_COMM_SUM),
                  "different devices");
  expect_rejected(&f, recv, bp_comm_all_reduce(f.comm, NULL, send, 0, recv, 0, 4, BP_F32, BP_COMM_SUM),
                  "stream is NULL");
  expect_rejected(&f, recv, bp_comm_all_reduce(NULL, f.s, send, 0, recv, 0, 4, BP_F32, BP_COMM_SUM),
                  "comm is NULL");
  expect_rejected(&f, recv, bp_comm_reduce(f.comm, f.s, send, 0, recv, 0, 4, BP_F32, BP_COMM_SUM, 1),
                  "root 1 is not a rank");
  expect_rejected(&f, recv, bp_comm_broadcast(f.comm, f.s, recv, 0, 4, BP_F32, -1), "root -1");
  expect_rejected(&f, recv, bp_comm_send(f.comm, f.s, send, 0, 4, BP_F32, 0), "this rank itself");
  expect_rejected(&f, recv, bp_comm_recv(f.comm, f.s, recv, 0, 4, BP_F32, 3), "peer 3");
  /* overlapping, not the in-place form */
  expect_rejected(&f, recv, bp_comm_all_reduce(f.comm, f.s, recv, 0, recv, 4, 2, BP_F32, BP_COMM_SUM), "overlap");
  assert_int_equal(bp_comm_reduce(f.comm, f.s, send, 0, NULL, 0, 4, BP_F32, BP_COMM_SUM, 0),
                   BP_ERR_INVALID_ARGUMENT); /* recv NULL on root */
  /* graphs cannot capture a collective */
  assert_int_equal(bp_stream_begin_capture(f.s), BP_OK);
  assert_int_equal(bp_comm_all_reduce(f.comm, f.s, send, 0, recv, 0, 4, BP_F32, BP_COMM_SUM), BP_ERR_UNSUPPORTED);
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_end_capture(f.s, &g), BP_OK);
  bp_graph_destroy(g);
  /* and a good call still works */
  assert_int_equal(bp_comm_all_reduce(f.comm, f.s, send, 0, recv, 0, 4, BP_F32, BP_COMM_SUM), BP_OK);
  float back[4];
  assert_int_equal(bp_buffer_read(recv, 0, back, sizeof back), BP_OK);
  assert_memory_equal(back, v, sizeof v);
  bp_buffer_free(other_buf);
  bp_stream_destroy(s2);
  bp_device_close(dev2);
  bp_buffer_free(send);
  bp_buffer_free(recv);
  close_fx(&f);
}

/* On one rank every collective returns its input, in every dtype; f16 and
 * bf16 go through the core's f32 widening on the way. */
static void test_one_rank_every_dtype(void **state) {
  (void)state;
  fx_t f;
  open_fx(&f, "good");
  for (int dt = 0; dt < BP_DTYPE_COUNT; dt++) {
    size_t es = bp_dtype_size((bp_dtype_t)dt);
    if (!(BP_DTYPE_BIT(dt) & BP_COMM_DTYPES)) {
      /* int8, fp8 and block dtypes are refused, and say which */
      bp_buffer_t *a;
      assert_int_equal(bp_buffer_alloc(f.dev, 7 * es, &a), BP_OK);
      assert_int_equal(bp_comm_all_gather(f.comm, f.s, a, 0, a, 0, 1, (bp_dtype_t)dt), BP_ERR_UNSUPPORTED);
      assert_non_null(strstr(bp_last_error(), bp_dtype_name((bp_dtype_t)dt)));
      bp_buffer_free(a);
      continue;
    }
    unsigned char in[7 * 8], out[7 * 8];
    for (size_t i = 0; i < sizeof in; i++) in[i] = (unsigned char)(i % 7 + 1); /* no NaN patterns */
    bp_buffer_t *a, *b;
    assert_int_equal(bp_buffer_alloc(f.dev, 7 * es, &a), BP_OK);
    assert_int_equal(bp_buffer_alloc(f.dev, 7 * es, &b), BP_OK);
    assert_int_equal(bp_buffer_write(a, 0, in, 7 * es), BP_OK);
    for (int op = 0; op < BP_COMM_REDUCE_COUNT; op++) {
      assert_int_equal(bp_comm_all_reduce(f.comm, f.s, a, 0, b, 0, 7, (bp_dtype_t)dt, op), BP_OK);
      assert_int_equal(bp_buffer_read(b, 0, out, 7 * es), BP_OK);
      assert_memory_equal(out, in, 7 * es);
    }
    assert_int_equal(bp_comm_all_gather(f.comm, f.s, a, 0, b, 0, 7, (bp_dtype_t)dt), BP_OK);
    assert_int_equal(bp_buffer_read(b, 0, out, 7 * es), BP_OK);
    assert_memory_equal(out, in, 7 * es);
    assert_int_equal(bp_comm_broadcast(f.comm, f.s, a, 0, 7, (bp_dtype_t)dt, 0), BP_OK);
    assert_int_equal(bp_comm_barrier(f.comm, f.s), BP_OK);
    bp_buffer_free(a);
    bp_buffer_free(b);
  }
  close_fx(&f);
}

/* A timed-out call is queued like any other: the call returns BP_OK, the
 * failure surfaces at the next synchronize of its stream (once) and at an
 * event recorded after it, and every later call fails at once. */
static void test_timeout_breaks_the_communicator(void **state) {
  (void)state;
  fx_t f;
  open_fx(&f, "good");
  bp_buffer_t *b;
  bp_event_t *ev;
  assert_int_equal(bp_buffer_alloc(f.dev, 16, &b), BP_OK);
  assert_int_equal(bp_event_create(f.dev, &ev), BP_OK);
  setenv("BP_COMM_FIXTURE_TIMEOUT", "1", 1);
  assert_int_equal(bp_comm_all_reduce(f.comm, f.s, b, 0, b, 0, 4, BP_F32, BP_COMM_SUM), BP_OK);
  assert_int_equal(bp_event_record(ev, f.s), BP_OK);
  assert_int_equal(bp_event_synchronize(ev), BP_ERR_TIMEOUT);
  assert_non_null(strstr(bp_last_error(), "within the timeout"));
  assert_int_equal(bp_stream_synchronize(f.s), BP_ERR_TIMEOUT);
  assert_non_null(strstr(bp_last_error(), "bp_comm_all_reduce: comm plugin 'good'"));
  assert_int_equal(bp_stream_synchronize(f.s), BP_OK); /* reported once */
  unsetenv("BP_COMM_FIXTURE_TIMEOUT");
  assert_int_equal(bp_comm_barrier(f.comm, f.s), BP_ERR_UNAVAILABLE);
  assert_non_null(strstr(bp_last_error(), "broken"));
  bp_event_destroy(ev);
  bp_buffer_free(b);
  close_fx(&f);
}

static void tensor_1d(bp_buffer_t *b, int64_t n, bp_tensor_t *t) {
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, &n, NULL, t), BP_OK);
}

/* A collective queued behind a long op, and an op queued behind it that
 * consumes its result, with no synchronize in between: the result is right
 * only when the collective waits for the gemm and the add waits for the
 * collective (which the fixture makes slow). */
static void test_async_stream_order(void **state) {
  (void)state;
  fx_t f;
  open_fx(&f, "good");
  enum { N = 192 };
  bp_buffer_t *a, *c, *r, *y;
  bp_tensor_t ta, tc, tr, ty;
  assert_int_equal(bp_buffer_alloc(f.dev, N * N * 4, &a), BP_OK);
  assert_int_equal(bp_buffer_alloc(f.dev, N * N * 4, &c), BP_OK);
  assert_int_equal(bp_buffer_alloc(f.dev, N * N * 4, &r), BP_OK);
  assert_int_equal(bp_buffer_alloc(f.dev, N * N * 4, &y), BP_OK);
  tensor_1d(a, N * N, &ta);
  tensor_1d(c, N * N, &tc);
  tensor_1d(r, N * N, &tr);
  tensor_1d(y, N * N, &ty);
  assert_int_equal(bp_fill(f.s, &ta, 1.0), BP_OK);
  assert_int_equal(bp_fill(f.s, &tr, -1.0), BP_OK);
  setenv("BP_COMM_FIXTURE_DELAY_MS", "150", 1);
  for (int round = 0; round < 2; round++) {
    /* c = a a (every element N), r = all_reduce(c), y = r + r */
    assert_int_equal(bp_gemm(f.s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, N, N, N, 1.0 + round, a, 0, N,
                             a, 0, N, 0.0, c, 0, N),
                     BP_OK);
    assert_int_equal(bp_comm_all_reduce(f.comm, f.s, c, 0, r, 0, N * N, BP_F32, BP_COMM_SUM), BP_OK);
    assert_int_equal(bp_binary(f.s, BP_BINARY_ADD, &tr, &tr, &ty), BP_OK);
    float *out = malloc(N * N * 4);
    assert_int_equal(bp_buffer_read_async(f.s, y, 0, out, N * N * 4), BP_OK);
    assert_int_equal(bp_stream_synchronize(f.s), BP_OK);
    for (int i = 0; i < N * N; i++)
      if (out[i] != 2.0f * N * (1 + round)) fail_msg("round %d: y[%d] = %g, want %g", round, i, out[i],
                                                     2.0 * N * (1 + round));
    free(out);
  }
  unsetenv("BP_COMM_FIXTURE_DELAY_MS");
  bp_buffer_free(a);
  bp_buffer_free(c);
  bp_buffer_free(r);
  bp_buffer_free(y);
  close_fx(&f);
}

/* The call returns before its peer has arrived: the fixture's peer is a
 * file that this test makes only after the call returned (a call that
 * waited for it would time out instead), and an event recorded after the
 * call completes only once the collective has. */
static void test_async_returns_before_the_peer(void **state) {
  (void)state;
  fx_t f;
  open_fx(&f, "good");
  char peer[PATH_MAX];
  snprintf(peer, sizeof peer, "%s/peer-arrived", dir);
  unlink(peer);
  setenv("BP_COMM_FIXTURE_WAIT_FILE", peer, 1);
  float v[4] = {1, 2, 3, 4}, minus[4] = {-1, -1, -1, -1}, back[4];
  bp_buffer_t *send, *recv;
  bp_event_t *ev;
  assert_int_equal(bp_buffer_alloc(f.dev, sizeof v, &send), BP_OK);
  assert_int_equal(bp_buffer_alloc(f.dev, sizeof v, &recv), BP_OK);
  assert_int_equal(bp_event_create(f.dev, &ev), BP_OK);
  assert_int_equal(bp_buffer_write(send, 0, v, sizeof v), BP_OK);
  assert_int_equal(bp_buffer_write(recv, 0, minus, sizeof minus), BP_OK);
  assert_int_equal(bp_comm_all_reduce(f.comm, f.s, send, 0, recv, 0, 4, BP_F32, BP_COMM_SUM), BP_OK);
  FILE *arrived = fopen(peer, "w"); /* only now does the peer arrive */
  assert_non_null(arrived);
  fclose(arrived);
  assert_int_equal(bp_event_record(ev, f.s), BP_OK);
  assert_int_equal(bp_event_synchronize(ev), BP_OK);
  assert_int_equal(bp_buffer_read_async(f.s, recv, 0, back, sizeof back), BP_OK);
  assert_int_equal(bp_stream_synchronize(f.s), BP_OK);
  assert_memory_equal(back, v, sizeof v);
  /* a second stream: its collective is ordered after the first stream's */
  bp_stream_t *s2;
  assert_int_equal(bp_stream_create(f.dev, &s2), BP_OK);
  unlink(peer);
  assert_int_equal(bp_comm_all_reduce(f.comm, f.s, send, 0, recv, 0, 4, BP_F32, BP_COMM_MAX), BP_OK);
  assert_int_equal(bp_comm_broadcast(f.comm, s2, recv, 0, 4, BP_F32, 0), BP_OK);
  arrived = fopen(peer, "w");
  fclose(arrived);
  assert_int_equal(bp_stream_synchronize(s2), BP_OK);
  assert_int_equal(bp_stream_synchronize(f.s), BP_OK);
  unsetenv("BP_COMM_FIXTURE_WAIT_FILE");
  unlink(peer);
  bp_stream_destroy(s2);
  bp_event_destroy(ev);
  bp_buffer_free(send);
  bp_buffer_free(recv);
  close_fx(&f);
}

/* A stream whose collectives are done is synchronised while another
 * communicator's call on another stream of the same device still waits for
 * its peer: the first synchronize returns (the peer arrives only after it),
 * and the waiting call then completes within its timeout. */
static void test_async_sync_while_another_stream_waits(void **state) {
  (void)state;
  fx_t f;
  open_fx(&f, "good");
  bp_comm_options_t o = {.struct_size = sizeof o, .plugin = "good", .timeout_ms = 4000, .no_call_check = true};
  bp_comm_t *quick, *waiting;
  bp_stream_t *s2;
  assert_int_equal(bp_comm_create(f.dev, &o, &quick), BP_OK);
  assert_int_equal(bp_comm_create(f.dev, &o, &waiting), BP_OK);
  assert_int_equal(bp_stream_create(f.dev, &s2), BP_OK);
  char peer[PATH_MAX];
  snprintf(peer, sizeof peer, "%s/peer-late", dir);
  unlink(peer);
  setenv("BP_COMM_FIXTURE_WAIT_FILE", peer, 1); /* the fixture's all-reduce waits for it; its barrier not */
  float v[4] = {1, 2, 3, 4}, back[4];
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(f.dev, sizeof v, &b), BP_OK);
  assert_int_equal(bp_buffer_write(b, 0, v, sizeof v), BP_OK);
  assert_int_equal(bp_comm_all_reduce(waiting, s2, b, 0, b, 0, 4, BP_F32, BP_COMM_SUM), BP_OK);
  assert_int_equal(bp_comm_barrier(quick, f.s), BP_OK);
  assert_int_equal(bp_stream_synchronize(f.s), BP_OK);
  FILE *arrived = fopen(peer, "w"); /* only now does the peer arrive */
  assert_non_null(arrived);
  fclose(arrived);
  bp_status_t st = bp_stream_synchronize(s2);
  if (st != BP_OK) fail_msg("the waiting all-reduce: %s", bp_last_error());
  assert_int_equal(bp_buffer_read(b, 0, back, sizeof back), BP_OK);
  assert_memory_equal(back, v, sizeof v);
  unsetenv("BP_COMM_FIXTURE_WAIT_FILE");
  unlink(peer);
  bp_buffer_free(b);
  bp_stream_destroy(s2);
  bp_comm_destroy(waiting);
  bp_comm_destroy(quick);
  close_fx(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_discovery_and_refusals),
      cmocka_unit_test(test_crashing_probe_is_isolated),
      cmocka_unit_test(test_selection),
      cmocka_unit_test(test_validation),
      cmocka_unit_test(test_one_rank_every_dtype),
      cmocka_unit_test(test_timeout_breaks_the_communicator),
      cmocka_unit_test(test_async_stream_order),
      cmocka_unit_test(test_async_returns_before_the_peer),
      cmocka_unit_test(test_async_sync_while_another_stream_waits),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
