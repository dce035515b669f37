/*
 * test_gpu_graphs.c — native graphs (ABI 1.2, stream capture) of the CUDA
 * and ROCm backends against their CPU shims, which record captured work and
 * refuse what the real drivers refuse during a capture (synchronous
 * allocation and copies, legacy / null-stream work, synchronising the
 * capturing stream, unsafe calls such as module loading): a graph that
 * comes out native proves the plugin's op paths capture-safe.
 *
 * Built twice from this source (test/gpu_graphs.mk): test_cuda_graphs with
 * -DBP_TEST_CUDA, test_rocm_graphs with -DBP_TEST_ROCM.
 *
 * Checked: a dependent pipeline (gemm, broadcast add, softmax, conv2d over
 * the softmax, grouped-query causal attention over the conv output) captured
 * on a fresh device (so the kernel modules load during the capture) and
 * launched many times, against the same ops run directly on cpu-ref; the
 * shim's counters show graph launches, not op-by-op replay; a rebind to new
 * input rebuilds the graph; BACKPLANE_NATIVE_GRAPHS=0 replays op by op with
 * identical bits; a thread allocating, writing and reading buffers while
 * another rebuilds and launches graphs (legacy-stream work must wait for
 * the capture); and no graph objects leak.
 */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"
#include "test/common/gpu_test.h"

#if defined(BP_TEST_CUDA)
#define BACKEND "cuda"
#define SHIM_FILE "shims/cuda/libcuda.so.1"
#define SHIM_ENV "BACKPLANE_CUDA_DRIVER"
#define STATS_SYM "bp_cuda_shim_stats"
#define BLAS_FILE "shims/cublas/libcublas.so.13"
#define BLAS_ENV "BACKPLANE_CUBLAS"
#define BLAS_GEMMS_SYM "bp_cublas_shim_gemms"
typedef gpu_test_cuda_stats_t shim_stats_t;
#elif defined(BP_TEST_ROCM)
#define BACKEND "rocm"
#define SHIM_FILE "shims/hip/libamdhip64.so"
#define SHIM_ENV "BACKPLANE_HIP_RUNTIME"
#define STATS_SYM "bp_hip_shim_stats"
#define BLAS_FILE "shims/rocblas/librocblas.so.4"
#define BLAS_ENV "BACKPLANE_ROCBLAS"
#define BLAS_GEMMS_SYM "bp_rocblas_shim_gemms"
typedef gpu_test_hip_stats_t shim_stats_t;
#else
#error "build with -DBP_TEST_CUDA or -DBP_TEST_ROCM"
#endif

GPU_TEST_SHIM_STATS(shim_stats_t)
static int64_t (*blas_gemms_fn)(void);
static char cache_dir[] = "/tmp/bp-gpu-graphs-XXXXXX";

/* Kernel launches plus vendor-BLAS gemms (the gemm may take either), now. */
static int64_t work(void) { return stats().launches + blas_gemms_fn(); }

static int group_setup(void **state) {
  (void)state;
  char dir[PATH_MAX], path[PATH_MAX + 64];
  if (!gpu_test_dir(dir, sizeof dir))
    return -1;
  void *h = gpu_test_open(dir, SHIM_FILE, path, sizeof path);
  if (!h)
    return -1;
  *(void **)&shim_stats_fn = dlsym(h, STATS_SYM);
  setenv(SHIM_ENV, path, 1);
  /* The vendor BLAS shim: gemm is tuned between it and the own kernels. */
  void *blas = gpu_test_open(dir, BLAS_FILE, path, sizeof path);
  if (!blas)
    return -1;
  *(void **)&blas_gemms_fn = dlsym(blas, BLAS_GEMMS_SYM);
  setenv(BLAS_ENV, path, 1);
#ifdef BP_TEST_ROCM
  snprintf(path, sizeof path, "%s/shims/hip/libhiprtc.so", dir);
  setenv("BACKPLANE_HIPRTC", path, 1);
#endif
  if (!mkdtemp(cache_dir))
    return -1;
  /* The code-object and tuning caches, away from the user's. */
  setenv("XDG_CACHE_HOME", cache_dir, 1);
  snprintf(path, sizeof path, "%s/tuning.txt", cache_dir);
  setenv("BACKPLANE_TUNING_CACHE", path, 1);
  return shim_stats_fn && blas_gemms_fn ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  return gpu_test_rmtree(cache_dir);
}

/* ---- the pipeline ------------------------------------------------------- */

/* y = x·w + bias; p = softmax(y); c = conv2d(p as [1,1,M,N], wc) (2 output
 * channels, 3x3, no padding); o = attention(q = c as [1,2,M-2,N-2],
 * k = v = kv [1,1,S,N-2], causal). */
enum { M = 9, K = 13, N = 18, S = 5, P = M - 2, Q = N - 2 };

typedef struct pipeline {
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *x, *w, *bias, *y, *p, *wc, *c, *kv, *o;
} pipeline_t;

static void inputs(unsigned seed, float *x, float *w, float *bias, float *wc,
                   float *kv) {
  for (int i = 0; i < M * K; i++)
    x[i] = (float)((i * 7 + seed * 3) % 23) / 11.0f - 1.0f;
  for (int i = 0; i < K * N; i++)
    w[i] = (float)((i * 5 + seed) % 17) / 13.0f - 0.6f;
  for (int i = 0; i < N; i++)
    bias[i] = (float)(i % 5) * 0.25f;
  for (int i = 0; i < 2 * 9; i++)
    wc[i] = (float)((i * 3) % 7) / 5.0f - 0.5f;
  for (int i = 0; i < S * Q; i++)
    kv[i] = (float)((i * 11 + seed) % 19) / 9.0f - 1.0f;
}

static bp_buffer_t *buffer(bp_device_t *d, const float *v, size_t n) {
  bp_buffer_t *b = NULL;
  assert_int_equal(bp_buffer_alloc(d, n * sizeof(float), &b), BP_OK);
  if (v)
    assert_int_equal(bp_buffer_write(b, 0, v, n * sizeof(float)), BP_OK);
  return b;
}

static bp_tensor_t tensor(bp_buffer_t *b, int rank, const int64_t *shape) {
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, (uint32_t)rank, shape, NULL, &t),
                   BP_OK);
  return t;
}

static void pipeline_open(bp_context_t *ctx, const char *sel, unsigned seed,
                          pipeline_t *pl) {
  float x[M * K], w[K * N], bias[N], wc[18], kv[S * Q];
  inputs(seed, x, w, bias, wc, kv);
  memset(pl, 0, sizeof *pl);
  assert_int_equal(bp_device_open(ctx, sel, NULL, &pl->dev), BP_OK);
  assert_int_equal(bp_stream_create(pl->dev, &pl->s), BP_OK);
  pl->x = buffer(pl->dev, x, M * K);
  pl->w = buffer(pl->dev, w, K * N);
  pl->bias = buffer(pl->dev, bias, N);
  pl->y = buffer(pl->dev, NULL, M * N);
  pl->p = buffer(pl->dev, NULL, M * N);
  pl->wc = buffer(pl->dev, wc, 18);
  pl->c = buffer(pl->dev, NULL, 2 * P * Q);
  pl->kv = buffer(pl->dev, kv, S * Q);
  pl->o = buffer(pl->dev, NULL, 2 * P * Q);
}

static void pipeline_issue(pipeline_t *pl) {
  bp_tensor_t x = tensor(pl->x, 2, (int64_t[]){M, K});
  bp_tensor_t w = tensor(pl->w, 2, (int64_t[]){K, N});
  bp_tensor_t bias = tensor(pl->bias, 2, (int64_t[]){1, N});
  bp_tensor_t y = tensor(pl->y, 2, (int64_t[]){M, N});
  bp_tensor_t p = tensor(pl->p, 2, (int64_t[]){M, N});
  bp_tensor_t img = tensor(pl->p, 4, (int64_t[]){1, 1, M, N});
  bp_tensor_t wc = tensor(pl->wc, 4, (int64_t[]){2, 1, 3, 3});
  bp_tensor_t c = tensor(pl->c, 4, (int64_t[]){1, 2, P, Q});
  bp_tensor_t kv = tensor(pl->kv, 4, (int64_t[]){1, 1, S, Q});
  bp_tensor_t o = tensor(pl->o, 4, (int64_t[]){1, 2, P, Q});
  bp_conv2d_params_t cp = {.struct_size = sizeof cp};
  assert_int_equal(bp_matmul(pl->s, 1.0, &x, &w, 0.0, &y), BP_OK);
  assert_int_equal(bp_binary(pl->s, BP_BINARY_ADD, &y, &bias, &y), BP_OK);
  assert_int_equal(bp_softmax(pl->s, &y, -1, false, &p), BP_OK);
  assert_int_equal(bp_conv2d(pl->s, &cp, &img, &wc, NULL, &c), BP_OK);
  assert_int_equal(bp_attention(pl->s, &c, &kv, &kv, 0.0, true, &o), BP_OK);
}

typedef struct result {
  float p[M * N], c[2 * P * Q], o[2 * P * Q];
} result_t;

static void pipeline_read(pipeline_t *pl, result_t *r) {
  assert_int_equal(bp_stream_synchronize(pl->s), BP_OK);
  assert_int_equal(bp_buffer_read(pl->p, 0, r->p, sizeof r->p), BP_OK);
  assert_int_equal(bp_buffer_read(pl->c, 0, r->c, sizeof r->c), BP_OK);
  assert_int_equal(bp_buffer_read(pl->o, 0, r->o, sizeof r->o), BP_OK);
}

static void reference(bp_context_t *ctx, unsigned seed, result_t *r) {
  pipeline_t pl;
  pipeline_open(ctx, "cpu-ref", seed, &pl);
  pipeline_issue(&pl);
  pipeline_read(&pl, r);
  bp_device_close(pl.dev);
}

static void expect_close(const float *got, const float *want, int n,
                         const char *what) {
  for (int i = 0; i < n; i++)
    if (!(fabsf(got[i] - want[i]) <= 1e-5f + 1e-4f * fabsf(want[i])))
      fail_msg("%s: element %d is %g, cpu-ref says %g", what, i, got[i],
               want[i]);
}

static void expect_result(const result_t *got, const result_t *want,
                          const char *what) {
  char w[128];
  snprintf(w, sizeof w, "%s (softmax)", what);
  expect_close(got->p, want->p, M * N, w);
  snprintf(w, sizeof w, "%s (conv2d)", what);
  expect_close(got->c, want->c, 2 * P * Q, w);
  snprintf(w, sizeof w, "%s (attention)", what);
  expect_close(got->o, want->o, 2 * P * Q, w);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_native_pipeline(void **state) {
  (void)state;
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  result_t want0, want1, got, replayed;
  reference(ctx, 0, &want0);
  reference(ctx, 1, &want1);

  pipeline_t pl;
  pipeline_open(ctx, BACKEND, 0, &pl);
  /* Nothing has run on the device yet: its kernel modules load during the
   * capture, which the shims allow only in relaxed mode. */
  assert_int_equal(bp_stream_begin_capture(pl.s), BP_OK);
  pipeline_issue(&pl);
  bp_graph_t *g;
  assert_int_equal(bp_stream_end_capture(pl.s, &g), BP_OK);
  assert_int_equal(bp_graph_size(g), 5);

  shim_stats_t before = stats();
  int64_t work_before = work();
  enum { LAUNCHES = 25 };
  for (int i = 0; i < LAUNCHES; i++)
    assert_int_equal(bp_graph_launch(g, pl.s), BP_OK);
  pipeline_read(&pl, &got);
  shim_stats_t after = stats();
  assert_true(bp_graph_is_native(g));
  assert_int_equal(after.graph_launches - before.graph_launches, LAUNCHES);
  /* Every op ran from the graph: at least one kernel launch or BLAS call
   * per op each time. */
  assert_true(work() - work_before >= 5 * LAUNCHES);
  expect_result(&got, &want0, "native graph");

  /* New input: the rebind drops the native graph, the next launch
   * captures again. */
  float x1[M * K], w1[K * N], b1[N], wc1[18], kv1[S * Q];
  inputs(1, x1, w1, b1, wc1, kv1);
  bp_buffer_t *x1b = buffer(pl.dev, x1, M * K), *w1b = buffer(pl.dev, w1, K * N);
  bp_buffer_t *kv1b = buffer(pl.dev, kv1, S * Q);
  assert_int_equal(bp_graph_rebind(g, pl.x, x1b), BP_OK);
  assert_int_equal(bp_graph_rebind(g, pl.w, w1b), BP_OK);
  assert_int_equal(bp_graph_rebind(g, pl.kv, kv1b), BP_OK);
  before = stats();
  for (int i = 0; i < 3; i++)
    assert_int_equal(bp_graph_launch(g, pl.s), BP_OK);
  pipeline_read(&pl, &got);
  assert_true(bp_graph_is_native(g));
  assert_int_equal(stats().graph_launches - before.graph_launches, 3);
  expect_result(&got, &want1, "native graph after rebind");

  /* The same pipeline replayed op by op: the same kernels, the same bits. */
  setenv("BACKPLANE_NATIVE_GRAPHS", "0", 1);
  bp_graph_t *g2;
  assert_int_equal(bp_stream_begin_capture(pl.s), BP_OK);
  pipeline_issue(&pl);
  assert_int_equal(bp_stream_end_capture(pl.s, &g2), BP_OK);
  assert_int_equal(bp_graph_rebind(g2, pl.x, x1b), BP_OK);
  assert_int_equal(bp_graph_rebind(g2, pl.w, w1b), BP_OK);
  assert_int_equal(bp_graph_rebind(g2, pl.kv, kv1b), BP_OK);
  before = stats();
  assert_int_equal(bp_graph_launch(g2, pl.s), BP_OK);
  pipeline_read(&pl, &replayed);
  unsetenv("BACKPLANE_NATIVE_GRAPHS");
  assert_false(bp_graph_is_native(g2));
  assert_int_equal(stats().graph_launches, before.graph_launches);
  assert_memory_equal(&got, &replayed, sizeof got);

  bp_graph_destroy(g2);
  bp_graph_destroy(g);
  assert_int_equal(stats().graphs, 0); /* graphs and executables freed */
  bp_device_close(pl.dev);
  bp_context_destroy(ctx);
}

/* A second thread keeps the device's legacy / null stream busy (allocation,
 * synchronous writes and reads, frees) while graphs are captured again and
 * again: the shims fail and invalidate a capture that overlaps such work,
 * so every graph coming out native shows that the plugin kept them apart. */
typedef struct churn {
  bp_device_t *dev;
  int stop; /* __atomic */
  int errors, rounds;
} churn_t;

static void *churn_main(void *arg) {
  churn_t *c = arg;
  float v[256], back[256];
  for (int i = 0; i < 256; i++)
    v[i] = (float)i;
  while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE) || c->rounds < 20) {
    bp_buffer_t *b = NULL;
    /* Odd sizes: past the pool's cached blocks, to reach the plugin. */
    bp_status_t st = bp_buffer_alloc(c->dev, sizeof v + 64 * (size_t)(c->rounds % 97), &b);
    if (st == BP_OK)
      st = bp_buffer_write(b, 0, v, sizeof v);
    if (st == BP_OK)
      st = bp_buffer_read(b, 0, back, sizeof back);
    if (st != BP_OK || memcmp(v, back, sizeof v) != 0) {
      fprintf(stderr, "churn round %d: %s\n", c->rounds,
              st != BP_OK ? bp_last_error() : "read back differs");
      c->errors++;
    }
    bp_buffer_free(b);
    c->rounds++;
  }
  return NULL;
}

static void test_capture_with_concurrent_legacy_work(void **state) {
  (void)state;
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  result_t want0, want1, got;
  reference(ctx, 0, &want0);
  reference(ctx, 1, &want1);
  pipeline_t pl;
  pipeline_open(ctx, BACKEND, 0, &pl);
  assert_int_equal(bp_stream_begin_capture(pl.s), BP_OK);
  pipeline_issue(&pl);
  bp_graph_t *g;
  assert_int_equal(bp_stream_end_capture(pl.s, &g), BP_OK);
  /* The second input set, bound in and out alternately. */
  float x1[M * K], w1[K * N], b1[N], wc1[18], kv1[S * Q];
  inputs(1, x1, w1, b1, wc1, kv1);
  bp_buffer_t *xs[2] = {pl.x, buffer(pl.dev, x1, M * K)};
  bp_buffer_t *ws[2] = {pl.w, buffer(pl.dev, w1, K * N)};
  bp_buffer_t *kvs[2] = {pl.kv, buffer(pl.dev, kv1, S * Q)};

  churn_t c = {.dev = pl.dev};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, churn_main, &c), 0);
  shim_stats_t before = stats();
  enum { ROUNDS = 12 };
  for (int r = 0; r < ROUNDS; r++) {
    int to = r % 2, from = 1 - to;
    if (r > 0) { /* each rebind forces a new capture at the next launch */
      assert_int_equal(bp_graph_rebind(g, xs[from], xs[to]), BP_OK);
      assert_int_equal(bp_graph_rebind(g, ws[from], ws[to]), BP_OK);
      assert_int_equal(bp_graph_rebind(g, kvs[from], kvs[to]), BP_OK);
    }
    assert_int_equal(bp_graph_launch(g, pl.s), BP_OK);
    pipeline_read(&pl, &got);
    assert_true(bp_graph_is_native(g));
    expect_result(&got, r % 2 ? &want1 : &want0, "graph rebuilt under load");
  }
  __atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
  pthread_join(t, NULL);
  assert_int_equal(c.errors, 0);
  assert_int_equal(stats().graph_launches - before.graph_launches, ROUNDS);
  bp_graph_destroy(g);
  bp_device_close(pl.dev);
  assert_int_equal(stats().graphs, 0);
  bp_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_native_pipeline),
      cmocka_unit_test(test_capture_with_concurrent_legacy_work),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
