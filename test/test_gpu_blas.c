/*
 * test_gpu_blas.c — the vendor BLAS path of the CUDA and ROCm backends'
 * gemm (plugins/gpu/blas.*) against test-only cuBLAS / rocBLAS
 * shims (test/shims/cublas, test/shims/rocblas) over the driver shims.
 * The BLAS shims check every call as the real libraries check their
 * arguments (leading dimensions against the stored shapes) and every
 * operand's extent against the live allocations, and count the gemms they
 * run, so these tests see which path a gemm took.
 *
 * Built twice from this source (test/gpu_blas.mk): test_cuda_blas with
 * -DBP_TEST_CUDA, test_rocm_blas with -DBP_TEST_ROCM.
 *
 * Checked, each result against the same call on cpu-ref: the row-major to
 * column-major mapping over a grid of layouts (transposes, column-major C,
 * batches with a broadcast operand, leading dimensions past the width,
 * alpha and beta, f32 / f64 / f16 / bf16) with the vendor forced; the
 * vendor library off; the tuned choice stored in the tuning cache and
 * reused by the next context without timing again; the library absent,
 * failing to create a handle or failing a gemm (own kernels, same
 * results); a vendor gemm captured into a native graph and run by every
 * launch.
 */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
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
#define BLAS_FILE "shims/cublas/libcublas.so.13"
#define BLAS_ENV "BACKPLANE_CUBLAS"
#define BLAS_MODE_ENV "BACKPLANE_CUDA_BLAS"
#define BLAS_FAIL_ENV "BP_CUBLAS_SHIM_FAIL"
#define BLAS_GEMMS_SYM "bp_cublas_shim_gemms"
#define BLAS_HANDLES_SYM "bp_cublas_shim_handles"
#elif defined(BP_TEST_ROCM)
#define BACKEND "rocm"
#define SHIM_FILE "shims/hip/libamdhip64.so"
#define SHIM_ENV "BACKPLANE_HIP_RUNTIME"
#define BLAS_FILE "shims/rocblas/librocblas.so.4"
#define BLAS_ENV "BACKPLANE_ROCBLAS"
#define BLAS_MODE_ENV "BACKPLANE_ROCM_BLAS"
#define BLAS_FAIL_ENV "BP_ROCBLAS_SHIM_FAIL"
#define BLAS_GEMMS_SYM "bp_rocblas_shim_gemms"
#define BLAS_HANDLES_SYM "bp_rocblas_shim_handles"
#else
#error "build with -DBP_TEST_CUDA or -DBP_TEST_ROCM"
#endif

static int64_t (*blas_gemms)(void);
static int64_t (*blas_handles)(void);
static char blas_path[PATH_MAX + 64], tune_path[PATH_MAX];
static char cache_dir[] = "/tmp/bp-gpu-blas-XXXXXX";

static int group_setup(void **state) {
  (void)state;
  char dir[PATH_MAX], path[PATH_MAX + 64];
  if (!gpu_test_dir(dir, sizeof dir))
    return -1;
  snprintf(path, sizeof path, "%s/" SHIM_FILE, dir);
  setenv(SHIM_ENV, path, 1);
#ifdef BP_TEST_ROCM
  snprintf(path, sizeof path, "%s/shims/hip/libhiprtc.so", dir);
  setenv("BACKPLANE_HIPRTC", path, 1);
#endif
  void *h = gpu_test_open(dir, BLAS_FILE, blas_path, sizeof blas_path);
  if (!h)
    return -1;
  *(void **)&blas_gemms = dlsym(h, BLAS_GEMMS_SYM);
  *(void **)&blas_handles = dlsym(h, BLAS_HANDLES_SYM);
  if (!mkdtemp(cache_dir))
    return -1;
  setenv("XDG_CACHE_HOME", cache_dir, 1);
  snprintf(tune_path, sizeof tune_path, "%s/tuning.txt", cache_dir);
  setenv("BACKPLANE_TUNING_CACHE", tune_path, 1);
  return blas_gemms && blas_handles ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  return gpu_test_rmtree(cache_dir);
}

/* Every test starts with the BLAS shim found, forced on, not failing. */
static int reset(void **state) {
  (void)state;
  setenv(BLAS_ENV, blas_path, 1);
  setenv(BLAS_MODE_ENV, "1", 1);
  unsetenv(BLAS_FAIL_ENV);
  return 0;
}

/* ---- one gemm, run on a device --------------------------------------- */

typedef struct gemm_case {
  bp_dtype_t dtype;
  bp_layout_t layout;
  bp_transpose_t ta, tb;
  int m, n, k, batch;
  int pad;          /* added to every leading dimension */
  bool broadcast_a; /* stride_a 0: one A for the whole batch */
  double alpha, beta;
} gemm_case_t;

static size_t dtype_size(bp_dtype_t dt) {
  return dt == BP_F64 ? 8 : dt == BP_F32 ? 4 : 2;
}

/* Stored rows x cols of an operand (rows x cols as the layout stores it). */
static int64_t ld_of(const gemm_case_t *c, int rows, int cols, bp_transpose_t t) {
  int r = t == BP_TRANS ? cols : rows, cc = t == BP_TRANS ? rows : cols;
  return (c->layout == BP_ROW_MAJOR ? cc : r) + c->pad;
}

static int64_t span(const gemm_case_t *c, int rows, int cols, bp_transpose_t t) {
  int r = t == BP_TRANS ? cols : rows, cc = t == BP_TRANS ? rows : cols;
  return ld_of(c, rows, cols, t) * (c->layout == BP_ROW_MAJOR ? r : cc);
}

/* Uploads n f32 values as dtype dt (through bp_cast on the device). */
static bp_buffer_t *upload(bp_device_t *d, bp_stream_t *s, bp_dtype_t dt,
                           const float *v, int64_t n) {
  bp_buffer_t *f32, *out;
  assert_int_equal(bp_buffer_alloc(d, (size_t)n * 4, &f32), BP_OK);
  assert_int_equal(bp_buffer_write(f32, 0, v, (size_t)n * 4), BP_OK);
  if (dt == BP_F32)
    return f32;
  assert_int_equal(bp_buffer_alloc(d, (size_t)n * dtype_size(dt), &out), BP_OK);
  bp_tensor_t x, y;
  assert_int_equal(bp_tensor_init(f32, 0, BP_F32, 1, &n, NULL, &x), BP_OK);
  assert_int_equal(bp_tensor_init(out, 0, dt, 1, &n, NULL, &y), BP_OK);
  assert_int_equal(bp_cast(s, &x, &y), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  bp_buffer_free(f32);
  return out;
}

static void download(bp_device_t *d, bp_stream_t *s, bp_buffer_t *b,
                     bp_dtype_t dt, float *out, int64_t n) {
  bp_buffer_t *f32 = b;
  if (dt != BP_F32) {
    assert_int_equal(bp_buffer_alloc(d, (size_t)n * 4, &f32), BP_OK);
    bp_tensor_t x, y;
    assert_int_equal(bp_tensor_init(b, 0, dt, 1, &n, NULL, &x), BP_OK);
    assert_int_equal(bp_tensor_init(f32, 0, BP_F32, 1, &n, NULL, &y), BP_OK);
    assert_int_equal(bp_cast(s, &x, &y), BP_OK);
  }
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  assert_int_equal(bp_buffer_read(f32, 0, out, (size_t)n * 4), BP_OK);
  if (f32 != b)
    bp_buffer_free(f32);
}

typedef struct run {
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *a, *b, *c;
  int64_t na, nb, nc, lda, ldb, ldc, sa, sb, sc;
} run_t;

static void run_open(bp_context_t *ctx, const char *sel, const gemm_case_t *c,
                     run_t *r) {
  memset(r, 0, sizeof *r);
  assert_int_equal(bp_device_open(ctx, sel, NULL, &r->dev), BP_OK);
  assert_int_equal(bp_stream_create(r->dev, &r->s), BP_OK);
  r->lda = ld_of(c, c->m, c->k, c->ta);
  r->ldb = ld_of(c, c->k, c->n, c->tb);
  r->ldc = ld_of(c, c->m, c->n, BP_NO_TRANS);
  r->sa = c->broadcast_a ? 0 : span(c, c->m, c->k, c->ta);
  r->sb = span(c, c->k, c->n, c->tb);
  r->sc = span(c, c->m, c->n, BP_NO_TRANS);
  r->na = c->broadcast_a ? span(c, c->m, c->k, c->ta) : r->sa * c->batch;
  r->nb = r->sb * c->batch;
  r->nc = r->sc * c->batch;
  float *v = malloc(sizeof(float) * (size_t)(r->na + r->nb + r->nc));
  for (int64_t i = 0; i < r->na + r->nb + r->nc; i++)
    v[i] = (float)((i * 37 + 11) % 29) / 16.0f - 0.875f; /* exact in bf16 */
  r->a = upload(r->dev, r->s, c->dtype, v, r->na);
  r->b = upload(r->dev, r->s, c->dtype, v + r->na, r->nb);
  r->c = upload(r->dev, r->s, c->dtype, v + r->na + r->nb, r->nc);
  free(v);
}

static bp_status_t run_issue(const gemm_case_t *c, run_t *r) {
  return bp_gemm_strided_batched(r->s, c->dtype, c->layout, c->ta, c->tb, c->m,
                                 c->n, c->k, c->alpha, r->a, 0, r->lda, r->sa,
                                 r->b, 0, r->ldb, r->sb, c->beta, r->c, 0,
                                 r->ldc, r->sc, c->batch);
}

/* C after the gemm, as f32 (nc values, malloc'd). */
static float *run_gemm(bp_context_t *ctx, const char *sel, const gemm_case_t *c,
                       int64_t *out_n) {
  run_t r;
  run_open(ctx, sel, c, &r);
  assert_int_equal(run_issue(c, &r), BP_OK);
  float *out = malloc(sizeof(float) * (size_t)r.nc);
  download(r.dev, r.s, r.c, c->dtype, out, r.nc);
  *out_n = r.nc;
  bp_device_close(r.dev);
  return out;
}

static double tolerance(bp_dtype_t dt) {
  return dt == BP_F64 ? 1e-12 : dt == BP_F32 ? 1e-5 : dt == BP_F16 ? 4e-3 : 2e-2;
}

/* Runs c on the backend and on cpu-ref; returns the BLAS gemms it made. */
static int64_t check_case(bp_context_t *ctx, const gemm_case_t *c) {
  int64_t n, n_ref;
  int64_t before = blas_gemms();
  float *got = run_gemm(ctx, BACKEND, c, &n);
  int64_t made = blas_gemms() - before;
  float *want = run_gemm(ctx, "cpu-ref", c, &n_ref);
  assert_int_equal(n, n_ref);
  const double tol = tolerance(c->dtype);
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(got[i] - want[i]) <= tol * (1.0 + fabs(want[i]))))
      fail_msg("dtype %d layout %d trans %d%d m %d n %d k %d batch %d: "
               "element %lld is %g, cpu-ref says %g",
               c->dtype, c->layout, c->ta, c->tb, c->m, c->n, c->k, c->batch,
               (long long)i, got[i], want[i]);
  free(got);
  free(want);
  return made;
}

/* ---- tests ---------------------------------------------------------------- */

static const gemm_case_t basic = {BP_F32, BP_ROW_MAJOR, BP_NO_TRANS,
                                  BP_NO_TRANS, 13, 10, 7, 1, 0, false, 1.0,
                                  0.0};

/* Every layout the mapping distinguishes, with the vendor forced: each
 * call reaches the BLAS shim once and agrees with cpu-ref. */
static void test_mapping_grid(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  const bp_dtype_t dts[] = {BP_F32, BP_F64, BP_F16, BP_BF16};
  const bp_layout_t layouts[] = {BP_ROW_MAJOR, BP_COL_MAJOR};
  const bp_transpose_t ts[] = {BP_NO_TRANS, BP_TRANS};
  int cases = 0;
  for (size_t d = 0; d < 4; d++)
    for (size_t l = 0; l < 2; l++)
      for (size_t i = 0; i < 2; i++)
        for (size_t j = 0; j < 2; j++) {
          gemm_case_t c = {dts[d], layouts[l], ts[i], ts[j], 11, 6, 9,
                           (int)(1 + (i + j) % 3), (int)(i + 2 * j),
                           i == 1 && j == 0, 1.25, (l + j) % 2 ? 0.5 : 0.0};
          assert_int_equal(check_case(ctx, &c), 1);
          cases++;
        }
  /* Degenerate shapes: a single row, column or reduction element. */
  const int shapes[][3] = {{1, 17, 5}, {17, 1, 5}, {4, 5, 1}, {1, 1, 1}};
  for (size_t s = 0; s < 4; s++) {
    gemm_case_t c = basic;
    c.m = shapes[s][0], c.n = shapes[s][1], c.k = shapes[s][2];
    c.beta = 1.0;
    assert_int_equal(check_case(ctx, &c), 1);
  }
  assert_int_equal(cases, 32);
  bp_context_destroy(ctx);
  assert_int_equal(blas_handles(), 0); /* destroyed with their devices */
}

static void test_vendor_off(void **state) {
  (void)state;
  setenv(BLAS_MODE_ENV, "0", 1);
  bp_context_t *ctx = gpu_test_context();
  assert_int_equal(check_case(ctx, &basic), 0);
  bp_context_destroy(ctx);
  assert_int_equal(blas_handles(), 0);
}

/* Which path the tuning cache's gemm-blas entry chose: 1 vendor, 0 own,
 * -1 none. */
static int cached_choice(void) {
  FILE *f = fopen(tune_path, "r");
  if (!f)
    return -1;
  char line[2048];
  int r = -1;
  while (fgets(line, sizeof line, f))
    if (strstr(line, "gemm-blas") && strstr(line, "\"" BACKEND "\""))
      r = strstr(line, "\"vendor\"") ? 1 : strstr(line, "\"own\"") ? 0 : -1;
  fclose(f);
  return r;
}

/* Unforced: the first call of a shape bucket times both paths (several
 * BLAS runs) and stores the winner; a new context reads it back and runs
 * exactly one gemm on the stored path, without timing again. */
static void test_tuned_choice_is_cached(void **state) {
  (void)state;
  unsetenv(BLAS_MODE_ENV);
  remove(tune_path);
  bp_context_t *ctx = gpu_test_context();
  assert_true(check_case(ctx, &basic) >= 4); /* warm-up and three timed */
  bp_context_destroy(ctx);
  int choice = cached_choice();
  assert_true(choice == 0 || choice == 1);
  ctx = gpu_test_context();
  assert_int_equal(check_case(ctx, &basic), choice);
  /* Same bucket (sizes round up to powers of two): no new measurement. */
  gemm_case_t near = basic;
  near.m = 15, near.n = 9;
  assert_int_equal(check_case(ctx, &near), choice);
  bp_context_destroy(ctx);
}

static void test_library_absent(void **state) {
  (void)state;
  setenv(BLAS_ENV, "/nonexistent/libvendorblas.so", 1);
  bp_context_t *ctx = gpu_test_context();
  assert_int_equal(check_case(ctx, &basic), 0);
  bp_context_destroy(ctx);
}

static void test_library_failing(void **state) {
  (void)state;
  setenv(BLAS_FAIL_ENV, "create", 1);
  bp_context_t *ctx = gpu_test_context();
  assert_int_equal(check_case(ctx, &basic), 0);
  bp_context_destroy(ctx);
  setenv(BLAS_FAIL_ENV, "gemm", 1);
  ctx = gpu_test_context();
  assert_int_equal(check_case(ctx, &basic), 0); /* falls back, same result */
  gemm_case_t c = basic;
  c.dtype = BP_F16;
  assert_int_equal(check_case(ctx, &c), 0); /* and stays on its kernels */
  bp_context_destroy(ctx);
  assert_int_equal(blas_handles(), 0);
}

/* A vendor gemm captured into a native graph: every launch runs it. */
static void test_vendor_gemm_in_graph(void **state) {
  (void)state;
  bp_context_t *ctx = gpu_test_context();
  gemm_case_t c = basic;
  c.beta = 0.0;
  run_t r;
  run_open(ctx, BACKEND, &c, &r);
  assert_int_equal(bp_stream_begin_capture(r.s), BP_OK);
  assert_int_equal(run_issue(&c, &r), BP_OK);
  bp_graph_t *g;
  assert_int_equal(bp_stream_end_capture(r.s, &g), BP_OK);
  int64_t before = blas_gemms();
  for (int i = 0; i < 5; i++)
    assert_int_equal(bp_graph_launch(g, r.s), BP_OK);
  assert_int_equal(bp_stream_synchronize(r.s), BP_OK);
  assert_true(bp_graph_is_native(g));
  assert_int_equal(blas_gemms() - before, 5);
  float got[13 * 10];
  download(r.dev, r.s, r.c, BP_F32, got, r.nc);
  int64_t n;
  float *want = run_gemm(ctx, "cpu-ref", &c, &n);
  for (int64_t i = 0; i < n; i++)
    assert_true(fabsf(got[i] - want[i]) <= 1e-5f * (1.0f + fabsf(want[i])));
  free(want);
  bp_graph_destroy(g);
  bp_device_close(r.dev);
  bp_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_mapping_grid, reset),
      cmocka_unit_test_setup(test_vendor_off, reset),
      cmocka_unit_test_setup(test_tuned_choice_is_cached, reset),
      cmocka_unit_test_setup(test_library_absent, reset),
      cmocka_unit_test_setup(test_library_failing, reset),
      cmocka_unit_test_setup(test_vendor_gemm_in_graph, reset),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
