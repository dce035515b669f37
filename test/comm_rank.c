/*
 * comm_rank.c — one rank of the communicator tests, started by
 * test/test_comm_mpi.sh under mpirun (every rank runs the same mode):
 *   grid      every collective x dtype x count (0, 1, 7, 1 Mi + 3) and
 *             every reduce op, against a reference each rank computes
 *             itself; send/recv in pairs; barrier
 *   staged    the same (small counts) for a device whose memory is not
 *             host memory (the staging path)
 * argv[2], when given, selects the device (default cpu).
 *   mismatch  ranks disagree on count, dtype, op, root or call: every rank
 *             gets BP_ERR_INVALID_ARGUMENT, and the communicator still works
 *   dead      the last rank dies (SIGKILL) before a collective: the others'
 *             call returns BP_OK (queued) and their synchronize an error
 *             within the timeout, then calls fail with BP_ERR_UNAVAILABLE
 *   linkcut   all-reduces until one fails, after rank 0 wrote
 *             $BP_COMM_READY_FILE (test_comm_netns.sh then cuts a link)
 *   ordered   (NCCL) a collective on the backend's own stream, an add
 *             queued after it before the peer joined sees its result
 *   async     calls queued on streams: rank 0's returns before rank 1
 *             joins ($BP_COMM_READY_FILE), one between a gemm and an add
 *             with no synchronize, two streams in call order (run_async)
 *   path      bp_comm_data_path says $BP_COMM_EXPECT_PATH (direct or
 *             staged, and why), then the small grid on that path
 * A queued call's failure is read at the stream's next synchronize.
 * Each rank prints "rank R: MODE: ok" when everything it checked held and
 * exits 0; failures are printed as "rank R: FAILED: ..." and exit 1. The
 * script counts the ok lines. Values are small integers, so every sum,
 * product and average is exact in every dtype and any summation order.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backplane.h"
#include "tools/bp/comm_ref.h"

static int rank_, size_, failures;

#define CHECK(cond, ...)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      printf("rank %d: FAILED: ", rank_);                                                  \
      printf(__VA_ARGS__);                                                                 \
      printf(" [%s:%d] %s\n", __FILE__, __LINE__, bp_last_error());                         \
      fflush(stdout);                                                                      \
      failures++;                                                                          \
    }                                                                                      \
  } while (0)

typedef struct env {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  bp_comm_t *comm;
} env_t;

static bp_buffer_t *alloc_with(env_t *e, bp_dtype_t dt, uint64_t n, const void *host) {
  uint64_t bytes = n * bp_dtype_size(dt);
  bp_buffer_t *b = NULL;
  if (bp_buffer_alloc(e->dev, bytes ? bytes : 64, &b) != BP_OK) return NULL;
  if (host && bytes && bp_buffer_write(b, 0, host, bytes) != BP_OK) {
    bp_buffer_free(b);
    return NULL;
  }
  return b;
}

/* Reads n elements back and compares them bytewise with want. */
static void expect(env_t *e, bp_buffer_t *b, bp_dtype_t dt, uint64_t n, const void *want, const char *what,
                   uint64_t count) {
  uint64_t bytes = n * bp_dtype_size(dt);
  void *got = malloc(bytes ? bytes : 1);
  CHECK(got && bp_buffer_read(b, 0, got, bytes) == BP_OK, "%s %s count %llu: read back", what,
        bp_dtype_name(dt), (unsigned long long)count);
  uint64_t bad = ref_first_difference(got, want, dt, n);
  CHECK(bad == n, "%s %s count %llu: element %llu differs (got %g, want %g)", what, bp_dtype_name(dt),
        (unsigned long long)count, (unsigned long long)bad, bad < n ? ref_get(got, dt, bad) : 0.0,
        bad < n ? ref_get(want, dt, bad) : 0.0);
  (void)e;
  free(got);
}

static void grid_reduce(env_t *e, bp_dtype_t dt, uint64_t n, bp_comm_reduce_op_t op) {
  void *mine = ref_fill(dt, n, rank_, op, 0), *want = ref_reduce(dt, n, size_, op, 0);
  bp_buffer_t *s = alloc_with(e, dt, n, mine), *r = alloc_with(e, dt, n, NULL);
  CHECK(bp_comm_all_reduce(e->comm, e->s, s, 0, r, 0, n, dt, op) == BP_OK, "all_reduce %s %s count %llu",
        bp_dtype_name(dt), ref_op_name(op), (unsigned long long)n);
  expect(e, r, dt, n, want, "all_reduce", n);
  /* in place */
  CHECK(bp_comm_all_reduce(e->comm, e->s, s, 0, s, 0, n, dt, op) == BP_OK, "in-place all_reduce");
  expect(e, s, dt, n, want, "in-place all_reduce", n);
  bp_buffer_free(s);
  bp_buffer_free(r);
  free(mine);
  free(want);
  /* reduce to root 1 (0 when alone) */
  int root = size_ > 1 ? 1 : 0;
  mine = ref_fill(dt, n, rank_, op, 0);
  want = ref_reduce(dt, n, size_, op, 0);
  s = alloc_with(e, dt, n, mine);
  r = alloc_with(e, dt, n, mine); /* off root it must stay as it was */
  CHECK(bp_comm_reduce(e->comm, e->s, s, 0, r, 0, n, dt, op, root) == BP_OK, "reduce %s", bp_dtype_name(dt));
  expect(e, r, dt, n, rank_ == root ? want : mine, rank_ == root ? "reduce at root" : "reduce off root", n);
  bp_buffer_free(s);
  bp_buffer_free(r);
  free(mine);
  free(want);
  /* reduce_scatter: block b of rank r's send is ref_fill(..., offset b*n) */
  uint64_t all = n * (uint64_t)size_;
  mine = ref_fill(dt, all, rank_, op, 0);
  want = ref_reduce(dt, n, size_, op, (uint64_t)rank_ * n);
  s = alloc_with(e, dt, all, mine);
  r = alloc_with(e, dt, n, NULL);
  CHECK(bp_comm_reduce_scatter(e->comm, e->s, s, 0, r, 0, n, dt, op) == BP_OK, "reduce_scatter %s",
        bp_dtype_name(dt));
  expect(e, r, dt, n, want, "reduce_scatter", n);
  bp_buffer_free(s);
  bp_buffer_free(r);
  free(mine);
  free(want);
}

static void grid_move(env_t *e, bp_dtype_t dt, uint64_t n) {
  uint64_t all = n * (uint64_t)size_, es = bp_dtype_size(dt);
  void *mine = ref_fill(dt, n, rank_, BP_COMM_SUM, 0), *want = ref_gather(dt, n, size_);
  bp_buffer_t *s = alloc_with(e, dt, n, mine), *r = alloc_with(e, dt, all, NULL);
  CHECK(bp_comm_all_gather(e->comm, e->s, s, 0, r, 0, n, dt) == BP_OK, "all_gather %s", bp_dtype_name(dt));
  expect(e, r, dt, all, want, "all_gather", n);
  bp_buffer_free(s);
  /* in place: this rank's block already sits at rank * count */
  bp_buffer_t *ip = alloc_with(e, dt, all, NULL);
  if (n) CHECK(bp_buffer_write(ip, (uint64_t)rank_ * n * es, mine, n * es) == BP_OK, "write block");
  CHECK(bp_comm_all_gather(e->comm, e->s, ip, (uint64_t)rank_ * n * es, ip, 0, n, dt) == BP_OK,
        "in-place all_gather");
  expect(e, ip, dt, all, want, "in-place all_gather", n);
  bp_buffer_free(ip);
  bp_buffer_free(r);
  free(want);
  /* broadcast from the last rank */
  int root = size_ - 1;
  want = ref_fill(dt, n, root, BP_COMM_SUM, 0);
  bp_buffer_t *b = alloc_with(e, dt, n, mine);
  CHECK(bp_comm_broadcast(e->comm, e->s, b, 0, n, dt, root) == BP_OK, "broadcast %s", bp_dtype_name(dt));
  expect(e, b, dt, n, want, "broadcast", n);
  bp_buffer_free(b);
  free(want);
  /* send/recv in pairs (0,1), (2,3): even to odd, then back */
  int peer = rank_ ^ 1;
  if (peer < size_) {
    b = alloc_with(e, dt, n, mine);
    want = ref_fill(dt, n, peer, BP_COMM_SUM, 0);
    bp_buffer_t *in = alloc_with(e, dt, n, NULL);
    for (int turn = 0; turn < 2; turn++) {
      bool sending = (rank_ % 2) == turn;
      bp_status_t st = sending ? bp_comm_send(e->comm, e->s, b, 0, n, dt, peer)
                               : bp_comm_recv(e->comm, e->s, in, 0, n, dt, peer);
      CHECK(st == BP_OK, "%s %s count %llu", sending ? "send" : "recv", bp_dtype_name(dt), (unsigned long long)n);
    }
    expect(e, in, dt, n, want, "recv", n);
    bp_buffer_free(in);
    bp_buffer_free(b);
    free(want);
  }
  free(mine);
}

static int run_grid(env_t *e, bool all_counts) {
  const uint64_t counts[] = {0, 1, 7, (1u << 20) + 3};
  int ncounts = all_counts ? 4 : 3;
  for (int dt = 0; dt < BP_DTYPE_COUNT; dt++) {
    if (!(BP_DTYPE_BIT(dt) & BP_COMM_DTYPES)) continue;
    for (int c = 0; c < ncounts; c++) {
      /* Every op at the small counts; the large count checks the data path
       * (chunking, staging, eager vs rendezvous) once per dtype, with sum. */
      int nops = counts[c] > 7 ? 1 : BP_COMM_REDUCE_COUNT;
      for (int op = 0; op < nops; op++) grid_reduce(e, (bp_dtype_t)dt, counts[c], op);
      grid_move(e, (bp_dtype_t)dt, counts[c]);
    }
  }
  CHECK(bp_comm_barrier(e->comm, e->s) == BP_OK, "barrier");
  return failures;
}

/* A call's status, or, when it was queued, its stream's at the next
 * synchronize: where a queued call's failure surfaces. */
static bp_status_t synced(env_t *e, bp_status_t call) {
  return call == BP_OK ? bp_stream_synchronize(e->s) : call;
}

static bool expect_status(bp_status_t got, bp_status_t want, const char *what, const char *needle) {
  bool ok = got == want && (!needle || strstr(bp_last_error(), needle));
  CHECK(ok, "%s: got %s, want %s with '%s'", what, bp_status_name(got), bp_status_name(want),
        needle ? needle : "");
  return ok;
}

static int run_mismatch(env_t *e) {
  float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  bp_buffer_t *b = alloc_with(e, BP_F32, 8, v), *r = alloc_with(e, BP_F32, 8 * (uint64_t)size_, NULL);
  uint64_t n = rank_ == 1 ? 8 : 7;
  expect_status(synced(e, bp_comm_all_reduce(e->comm, e->s, b, 0, r, 0, n, BP_F32, BP_COMM_SUM)), BP_ERR_INVALID_ARGUMENT,
                "count mismatch", "mismatched call");
  bp_dtype_t dt = rank_ == 0 ? BP_I32 : BP_F32;
  expect_status(synced(e, bp_comm_all_reduce(e->comm, e->s, b, 0, r, 0, 4, dt, BP_COMM_SUM)), BP_ERR_INVALID_ARGUMENT,
                "dtype mismatch", "mismatched call");
  expect_status(synced(e, bp_comm_all_reduce(e->comm, e->s, b, 0, r, 0, 4, BP_F32, rank_ ? BP_COMM_MAX : BP_COMM_SUM)),
                BP_ERR_INVALID_ARGUMENT, "op mismatch", "mismatched call");
  expect_status(synced(e, bp_comm_broadcast(e->comm, e->s, b, 0, 4, BP_F32, rank_ == size_ - 1 ? 0 : 1)), BP_ERR_INVALID_ARGUMENT,
                "root mismatch", "mismatched call");
  bp_status_t st = rank_ == size_ - 1 ? bp_comm_all_gather(e->comm, e->s, b, 0, r, 0, 4, BP_F32)
                                      : bp_comm_all_reduce(e->comm, e->s, b, 0, r, 0, 4, BP_F32, BP_COMM_SUM);
  expect_status(synced(e, st), BP_ERR_INVALID_ARGUMENT, "call mismatch", "mismatched call");
  /* a call one rank rejects on its own (its count overflows its buffer) */
  st = bp_comm_all_reduce(e->comm, e->s, b, 0, r, 0, rank_ == 0 ? 1000 : 4, BP_F32, BP_COMM_SUM);
  expect_status(synced(e, st), BP_ERR_INVALID_ARGUMENT, "a rank's rejected call", rank_ == 0 ? "do not fit" : "rejected");
  /* p2p: both of a pair send */
  int peer = rank_ ^ 1;
  if (peer < size_)
    expect_status(synced(e, bp_comm_send(e->comm, e->s, b, 0, 4, BP_F32, peer)), BP_ERR_INVALID_ARGUMENT, "send/send",
                  "mismatched call");
  /* still usable */
  float want[8];
  for (int i = 0; i < 8; i++) want[i] = v[i] * (float)size_;
  CHECK(synced(e, bp_comm_all_reduce(e->comm, e->s, b, 0, r, 0, 8, BP_F32, BP_COMM_SUM)) == BP_OK,
        "all_reduce after");
  expect(e, r, BP_F32, 8, want, "all_reduce after mismatches", 8);
  bp_buffer_free(b);
  bp_buffer_free(r);
  return failures;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int run_dead(env_t *e, uint32_t timeout_ms) {
  float v[4] = {1, 2, 3, 4};
  bp_buffer_t *b = alloc_with(e, BP_F32, 4, v);
  /* Every rank finishes this call before the last one dies: killed with
   * it still queued (calls are asynchronous) or with its last sends in
   * flight, the dying rank would break this call on the others instead of
   * the next one (seen on a loaded machine). The survivors mark it in
   * $BP_COMM_DEAD_DIR and the dying rank waits for every mark. */
  CHECK(synced(e, bp_comm_all_reduce(e->comm, e->s, b, 0, b, 0, 4, BP_F32, BP_COMM_SUM)) == BP_OK,
        "all_reduce before");
  const char *dir = getenv("BP_COMM_DEAD_DIR");
  char mark[4096];
  if (rank_ == size_ - 1) {
    for (int r = 0; dir && r < size_ - 1; r++) {
      snprintf(mark, sizeof mark, "%s/before.%d", dir, r);
      for (double t0 = now_ms(); access(mark, F_OK) != 0 && now_ms() - t0 < 60000;) usleep(10000);
    }
    fflush(stdout);
    raise(SIGKILL);
  }
  if (dir) {
    snprintf(mark, sizeof mark, "%s/before.%d", dir, rank_);
    FILE *f = fopen(mark, "w");
    CHECK(f != NULL, "cannot write %s", mark);
    if (f) fclose(f);
  }
  double t0 = now_ms();
  /* The call is queued: it returns at once, and the dead rank surfaces at
   * the stream's synchronize. */
  bp_status_t st = bp_comm_all_reduce(e->comm, e->s, b, 0, b, 0, 4, BP_F32, BP_COMM_SUM);
  CHECK(st == BP_OK, "queueing an all_reduce with a dead rank: %s", bp_status_name(st));
  st = bp_stream_synchronize(e->s);
  double ms = now_ms() - t0;
  CHECK(st == BP_ERR_TIMEOUT || st == BP_ERR_UNAVAILABLE, "synchronize after an all_reduce with a dead rank: %s",
        bp_status_name(st));
  CHECK(ms < timeout_ms + 5000.0, "the error took %.0f ms, timeout %u ms", ms, timeout_ms);
  printf("rank %d: dead: error %s after %.0f ms: %s\n", rank_, bp_status_name(st), ms, bp_last_error());
  st = bp_comm_barrier(e->comm, e->s);
  CHECK(st == BP_ERR_UNAVAILABLE, "a call after the failure: %s", bp_status_name(st));
  bp_buffer_free(b);
  return failures;
}

/* All-reduces until one fails: the test script cuts a rank's link once
 * rank 0 has written the ready file ($BP_COMM_READY_FILE). */
static int run_linkcut(env_t *e, uint32_t timeout_ms) {
  float v[4] = {1, 2, 3, 4};
  bp_buffer_t *b = alloc_with(e, BP_F32, 4, v);
  const char *ready = getenv("BP_COMM_READY_FILE");
  bp_status_t st = BP_OK;
  double t0 = now_ms(), cut = 0;
  for (int i = 0; st == BP_OK && now_ms() - t0 < 60000; i++) {
    st = synced(e, bp_comm_all_reduce(e->comm, e->s, b, 0, b, 0, 4, BP_F32, BP_COMM_MAX));
    if (i == 3 && rank_ == 0 && ready) {
      FILE *f = fopen(ready, "w");
      if (f) fclose(f);
    }
    if (i == 3) cut = now_ms();
    if (st == BP_OK) usleep(20000);
  }
  CHECK(st == BP_ERR_TIMEOUT || st == BP_ERR_UNAVAILABLE, "all_reduce across a cut link: %s", bp_status_name(st));
  printf("rank %d: linkcut: error %s %.0f ms after the link could be cut (timeout %u ms): %s\n", rank_,
         bp_status_name(st), now_ms() - cut, timeout_ms, bp_last_error());
  bp_buffer_free(b);
  return failures;
}

/* Calls queued on the stream (docs/scale-out.md, "Calls are asynchronous"):
 * (1) rank 0's call returns before rank 1 has made its own: rank 1 makes
 * it only once rank 0 has written $BP_COMM_READY_FILE after its call
 * returned (a call that waited for rank 1 would never let it); (2) an
 * all-reduce queued behind a gemm and before an add that consumes it, with
 * no synchronize between them; (3) calls on two streams run in the order
 * they were made (the call check would see any other order). */
static void async_returns_first(env_t *e) {
  const char *ready = getenv("BP_COMM_READY_FILE");
  float v[4] = {1, 2, 3, 4}, want[4], back[4];
  for (int i = 0; i < 4; i++) want[i] = v[i] * (float)size_;
  bp_buffer_t *b = alloc_with(e, BP_F32, 4, v);
  CHECK(ready && b, "BP_COMM_READY_FILE is set and a buffer allocated");
  if (!ready || !b) return;
  if (rank_ == 1) {
    double t0 = now_ms();
    while (access(ready, F_OK) != 0 && now_ms() - t0 < 30000) usleep(10000);
    CHECK(access(ready, F_OK) == 0, "rank 0 did not return from its all_reduce before rank 1 made its own");
  }
  CHECK(bp_comm_all_reduce(e->comm, e->s, b, 0, b, 0, 4, BP_F32, BP_COMM_SUM) == BP_OK, "queue all_reduce");
  if (rank_ == 0) {
    FILE *f = fopen(ready, "w");
    CHECK(f != NULL, "write %s", ready);
    if (f) fclose(f);
  }
  CHECK(bp_stream_synchronize(e->s) == BP_OK, "synchronize after the all_reduce");
  CHECK(bp_buffer_read(b, 0, back, sizeof back) == BP_OK && !memcmp(back, want, sizeof want),
        "all_reduce result after the late rank joined");
  bp_buffer_free(b);
}

static void async_between_ops(env_t *e) {
  enum { N = 160 };
  bp_buffer_t *a = alloc_with(e, BP_F32, N * N, NULL), *c = alloc_with(e, BP_F32, N * N, NULL);
  bp_buffer_t *y = alloc_with(e, BP_F32, N * N, NULL);
  bp_tensor_t ta, tc, ty;
  int64_t n = N * N;
  CHECK(a && c && y && bp_tensor_init(a, 0, BP_F32, 1, &n, NULL, &ta) == BP_OK &&
            bp_tensor_init(c, 0, BP_F32, 1, &n, NULL, &tc) == BP_OK &&
            bp_tensor_init(y, 0, BP_F32, 1, &n, NULL, &ty) == BP_OK, "buffers");
  float *out = malloc(sizeof(float) * N * N);
  CHECK(bp_fill(e->s, &ta, rank_ + 1) == BP_OK, "fill");
  /* c[i] = N (rank + 1)^2, summed over the ranks, then doubled */
  CHECK(bp_gemm(e->s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, N, N, N, 1.0, a, 0, N, a, 0, N, 0.0, c, 0, N) ==
            BP_OK, "gemm");
  CHECK(bp_comm_all_reduce(e->comm, e->s, c, 0, c, 0, N * N, BP_F32, BP_COMM_SUM) == BP_OK, "all_reduce");
  CHECK(bp_binary(e->s, BP_BINARY_ADD, &tc, &tc, &ty) == BP_OK, "add");
  CHECK(bp_buffer_read_async(e->s, y, 0, out, sizeof(float) * N * N) == BP_OK, "read_async");
  CHECK(bp_stream_synchronize(e->s) == BP_OK, "synchronize");
  double want = 0;
  for (int r = 0; r < size_; r++) want += 2.0 * N * (r + 1) * (r + 1);
  int bad = -1;
  for (int i = 0; i < N * N && bad < 0; i++)
    if (out[i] != (float)want) bad = i;
  CHECK(bad < 0, "gemm -> all_reduce -> add: y[%d] = %g, want %g", bad, bad < 0 ? 0.0 : out[bad], want);
  free(out);
  bp_buffer_free(a);
  bp_buffer_free(c);
  bp_buffer_free(y);
}

static void async_two_streams(env_t *e) {
  bp_stream_t *s2 = NULL;
  CHECK(bp_stream_create(e->dev, &s2) == BP_OK, "second stream");
  float v[7] = {1, 2, 3, 4, 5, 6, 7};
  bp_buffer_t *a = alloc_with(e, BP_F32, 7, v), *g = alloc_with(e, BP_F32, 5 * (uint64_t)size_, NULL);
  CHECK(bp_comm_all_reduce(e->comm, e->s, a, 0, a, 0, 7, BP_F32, BP_COMM_MAX) == BP_OK, "all_reduce on s");
  CHECK(bp_comm_all_gather(e->comm, s2, a, 0, g, 0, 5, BP_F32) == BP_OK, "all_gather on s2");
  CHECK(bp_stream_synchronize(s2) == BP_OK, "synchronize s2");
  CHECK(bp_stream_synchronize(e->s) == BP_OK, "synchronize s");
  float got[5 * 8];
  CHECK(size_ <= 8 && bp_buffer_read(g, 0, got, sizeof(float) * 5 * (size_t)size_) == BP_OK, "read back");
  for (int i = 0; i < 5 * size_ && i < 40; i++) CHECK(got[i] == v[i % 5], "all_gather element %d", i);
  bp_buffer_free(a);
  bp_buffer_free(g);
  bp_stream_destroy(s2);
}

/* The communicator's data path (bp_comm_data_path) must contain
 * $BP_COMM_EXPECT_PATH; then the small grid runs over it. */
static int run_path(env_t *e) {
  const char *path = bp_comm_data_path(e->comm), *want = getenv("BP_COMM_EXPECT_PATH");
  printf("rank %d: path: %s\n", rank_, path);
  CHECK(want && strstr(path, want), "data path '%s' does not say '%s'", path, want ? want : "(unset)");
  return run_grid(e, false);
}

/* A collective on the backend's own stream (NCCL, docs/scale-out.md): the
 * data path says so ($BP_COMM_EXPECT_PATH), and an add queued after it on
 * the stream while the peer has not made its call yet (rank 1 waits for
 * the file rank 0 writes once its call returned, then a while longer) is
 * ordered after it: it sees the sum. */
static int run_ordered(env_t *e) {
  enum { N = 64 };
  const char *path = bp_comm_data_path(e->comm), *want = getenv("BP_COMM_EXPECT_PATH");
  const char *ready = getenv("BP_COMM_READY_FILE");
  CHECK(want && strstr(path, want), "data path '%s' does not say '%s'", path, want ? want : "(unset)");
  CHECK(ready != NULL, "BP_COMM_READY_FILE is set");
  bp_buffer_t *c = alloc_with(e, BP_F32, N, NULL), *y = alloc_with(e, BP_F32, N, NULL);
  bp_tensor_t tc, ty;
  int64_t n = N;
  CHECK(ready && c && y && bp_tensor_init(c, 0, BP_F32, 1, &n, NULL, &tc) == BP_OK &&
            bp_tensor_init(y, 0, BP_F32, 1, &n, NULL, &ty) == BP_OK && bp_fill(e->s, &tc, rank_ + 1) == BP_OK,
        "buffers");
  if (failures) return failures;
  if (rank_ == 1) {
    double t0 = now_ms();
    while (access(ready, F_OK) != 0 && now_ms() - t0 < 30000) usleep(10000);
    usleep(300000); /* rank 0 queues its add meanwhile */
  }
  CHECK(bp_comm_all_reduce(e->comm, e->s, c, 0, c, 0, N, BP_F32, BP_COMM_SUM) == BP_OK, "all_reduce");
  if (rank_ == 0) {
    FILE *f = fopen(ready, "w");
    if (f) fclose(f);
  }
  CHECK(bp_binary(e->s, BP_BINARY_ADD, &tc, &tc, &ty) == BP_OK, "add after the all_reduce");
  float out[N];
  CHECK(bp_buffer_read_async(e->s, y, 0, out, sizeof out) == BP_OK, "read_async");
  CHECK(bp_stream_synchronize(e->s) == BP_OK, "synchronize");
  float sum = 0;
  for (int r = 0; r < size_; r++) sum += (float)(r + 1);
  for (int i = 0; i < N; i++) CHECK(out[i] == 2 * sum, "y[%d] = %g, want %g: the add ran before the all_reduce", i,
                                    out[i], 2 * sum);
  bp_buffer_free(c);
  bp_buffer_free(y);
  return failures;
}

static int run_async(env_t *e) {
  async_returns_first(e);
  async_between_ops(e);
  async_two_streams(e);
  return failures;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "grid";
  bool staged = !strcmp(mode, "staged");
  env_t e = {0};
  uint32_t timeout_ms = !strcmp(mode, "dead") || !strcmp(mode, "linkcut") ? 3000 : 20000;
  bp_comm_options_t o = {.struct_size = sizeof o, .timeout_ms = timeout_ms};
  /* BP_COMM_NO_CALL_CHECK=1: no header exchange, so that a dead rank is met
   * by the collective itself (the MPI plugin's ring, say) */
  const char *nocheck = getenv("BP_COMM_NO_CALL_CHECK");
  o.no_call_check = nocheck && !strcmp(nocheck, "1");
  /* BP_COMM_PLUGIN=name: that plugin or an error saying why not (the
   * default picks the best loaded one, silently passing over a refusal) */
  o.plugin = getenv("BP_COMM_PLUGIN");
  if (bp_context_create(NULL, &e.ctx) != BP_OK ||
      bp_device_open(e.ctx, argc > 2 ? argv[2] : "cpu", NULL, &e.dev) != BP_OK ||
      bp_stream_create(e.dev, &e.s) != BP_OK || bp_comm_create(e.dev, &o, &e.comm) != BP_OK) {
    printf("rank ?: FAILED: setup: %s\n", bp_last_error());
    return 1;
  }
  bp_comm_rank(e.comm, &rank_);
  bp_comm_size(e.comm, &size_);
  if (!strcmp(mode, "grid") || staged) run_grid(&e, !staged);
  else if (!strcmp(mode, "mismatch")) run_mismatch(&e);
  else if (!strcmp(mode, "dead")) run_dead(&e, timeout_ms);
  else if (!strcmp(mode, "linkcut")) run_linkcut(&e, timeout_ms);
  else if (!strcmp(mode, "async")) run_async(&e);
  else if (!strcmp(mode, "path")) run_path(&e);
  else if (!strcmp(mode, "ordered")) run_ordered(&e);
  else CHECK(false, "unknown mode %s", mode);
  if (!failures) printf("rank %d: %s: ok (%d ranks, plugin %s)\n", rank_, mode, size_, bp_comm_plugin_name(e.comm));
  fflush(stdout);
  bp_comm_destroy(e.comm);
  bp_stream_destroy(e.s);
  bp_device_close(e.dev);
  bp_context_destroy(e.ctx);
  return failures ? 1 : 0;
}
