/*
 * cublas.c — the test-only libcublas.so.13: exactly the entry points of
 * plugins/cuda/cublas_api.h (declared from its list under the symbols the
 * plugin resolves), over the CUDA driver shim (test/shims/cuda), which it
 * links against: memory is the driver shim's, and each gemm is checked as
 * cuBLAS checks its arguments, every operand's extent against the live
 * allocations, then enqueued on the handle's stream through the driver
 * shim (bp_cuda_shim_enqueue), so a graph capture records it and each
 * graph launch runs it. cublasCreate allocates a workspace with cuMemAlloc
 * as the real library does, which a capture forbids unless relaxed; and
 * as cuBLAS does, cublasSetStream drops a workspace set with
 * cublasSetWorkspace, after which the next gemm allocates a default one
 * (cuMemAlloc, so inside a capture it fails: the plugin must set its own
 * workspace after every cublasSetStream).
 * It checks the plugin's host logic (argument mapping, stream, context,
 * capture safety), not cuBLAS's performance or numerics.
 *
 * Environment: BP_CUBLAS_SHIM_FAIL=create,gemm injects failures.
 * Hooks: bp_cublas_shim_gemms() (cumulative gemm executions, graph
 * replays included), bp_cublas_shim_handles() (live handles).
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/cuda/cublas_api.h"
#include "test/shims/common/blas_ref.h"
#include "test/shims/common/env.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_DECLARE(field, sym, params)                                       \
  SHIM_EXPORT cublasStatus_t field params __asm__(sym);
CUBLAS_ENTRY_POINTS(SHIM_DECLARE)
CUBLAS_OPTIONAL_ENTRY_POINTS(SHIM_DECLARE)
#undef SHIM_DECLARE

/* From the driver shim. */
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size);
CUresult cuMemFree_v2(CUdeviceptr p);
CUresult bp_cuda_shim_enqueue(CUstream s, void (*fn)(void *), const void *data,
                              size_t size);
bool bp_cuda_shim_mem_valid(uint64_t p, uint64_t bytes);

#define CUBLAS_STATUS_NOT_INITIALIZED 1
#define CUBLAS_STATUS_ALLOC_FAILED 3
#define CUBLAS_STATUS_INVALID_VALUE 7
#define CUBLAS_STATUS_EXECUTION_FAILED 13
#define HANDLE_MAGIC 0x43424c53u

struct cublasContext {
  uint32_t magic;
  CUstream stream;
  CUdeviceptr workspace;      /* handle internals, from cublasCreate */
  bool user_workspace;        /* cublasSetWorkspace since the last SetStream */
  CUdeviceptr default_workspace;
};

static int64_t gemms, handles;

SHIM_EXPORT int64_t bp_cublas_shim_gemms(void) {
  return __atomic_load_n(&gemms, __ATOMIC_RELAXED);
}
SHIM_EXPORT int64_t bp_cublas_shim_handles(void) {
  return __atomic_load_n(&handles, __ATOMIC_RELAXED);
}

static bool fail(const char *what) {
  return shim_env_has("BP_CUBLAS_SHIM_FAIL", what);
}

cublasStatus_t cublasCreate(cublasHandle_t *out) {
  *out = NULL;
  if (fail("create"))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  struct cublasContext *h = calloc(1, sizeof *h);
  if (!h)
    return CUBLAS_STATUS_ALLOC_FAILED;
  /* The workspace, as cuBLAS allocates one: needs a current context. */
  if (cuMemAlloc_v2(&h->workspace, 4096) != CUDA_SUCCESS) {
    free(h);
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  h->magic = HANDLE_MAGIC;
  __atomic_add_fetch(&handles, 1, __ATOMIC_RELAXED);
  *out = h;
  return CUBLAS_STATUS_SUCCESS;
}

static bool handle_ok(cublasHandle_t h) {
  return h && h->magic == HANDLE_MAGIC;
}

cublasStatus_t cublasDestroy(cublasHandle_t h) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  cuMemFree_v2(h->workspace);
  if (h->default_workspace)
    cuMemFree_v2(h->default_workspace);
  h->magic = 0;
  free(h);
  __atomic_sub_fetch(&handles, 1, __ATOMIC_RELAXED);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion(cublasHandle_t h, int *v) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  *v = 130000;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, CUstream s) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = s;
  h->user_workspace = false;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *ws, size_t size) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (size && !bp_cuda_shim_mem_valid((uint64_t)(uintptr_t)ws, size))
    return CUBLAS_STATUS_INVALID_VALUE;
  h->user_workspace = size > 0;
  return CUBLAS_STATUS_SUCCESS;
}

static void counted_run(void *arg) {
  __atomic_add_fetch(&gemms, 1, __ATOMIC_RELAXED);
  shim_blas_run(arg);
}

static cublasStatus_t gemm(cublasHandle_t h, int ta, int tb, int m, int n,
                           int k, double alpha, const void *a, int lda,
                           long long sa, const void *b, int ldb, long long sb,
                           double beta, void *c, int ldc, long long sc,
                           int batch, int dtype, const char *fn) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) ||
      (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T))
    return CUBLAS_STATUS_INVALID_VALUE;
  shim_blas_gemm_t g = {dtype, ta == CUBLAS_OP_T, tb == CUBLAS_OP_T, m, n, k,
                        lda, ldb, ldc, batch, sa, sb, sc,
                        (uint64_t)(uintptr_t)a, (uint64_t)(uintptr_t)b,
                        (uint64_t)(uintptr_t)c, alpha, beta};
  if (!shim_blas_check(&g, fn, bp_cuda_shim_mem_valid))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (fail("gemm"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if (!h->user_workspace && !h->default_workspace &&
      cuMemAlloc_v2(&h->default_workspace, 1 << 20) != CUDA_SUCCESS)
    return CUBLAS_STATUS_ALLOC_FAILED;
  if (m == 0 || n == 0 || batch == 0)
    return CUBLAS_STATUS_SUCCESS;
  return bp_cuda_shim_enqueue(h->stream, counted_run, &g, sizeof g) ==
                 CUDA_SUCCESS
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_EXECUTION_FAILED;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, int ta, int tb,
                                         int m, int n, int k,
                                         const float *alpha, const float *a,
                                         int lda, long long sa, const float *b,
                                         int ldb, long long sb,
                                         const float *beta, float *c, int ldc,
                                         long long sc, int batch) {
  return gemm(h, ta, tb, m, n, k, *alpha, a, lda, sa, b, ldb, sb, *beta, c,
              ldc, sc, batch, SHIM_BLAS_F32, __func__);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, int ta, int tb,
                                         int m, int n, int k,
                                         const double *alpha, const double *a,
                                         int lda, long long sa,
                                         const double *b, int ldb,
                                         long long sb, const double *beta,
                                         double *c, int ldc, long long sc,
                                         int batch) {
  return gemm(h, ta, tb, m, n, k, *alpha, a, lda, sa, b, ldb, sb, *beta, c,
              ldc, sc, batch, SHIM_BLAS_F64, __func__);
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, int ta, int tb, int m, int n, int k, const void *alpha,
    const void *a, int atype, int lda, long long sa, const void *b, int btype,
    int ldb, long long sb, const void *beta, void *c, int ctype, int ldc,
    long long sc, int batch, int compute, int algo) {
  (void)algo;
  if (atype != btype || atype != ctype || compute != CUBLAS_COMPUTE_32F ||
      (atype != CUDA_R_16F && atype != CUDA_R_16BF))
    return CUBLAS_STATUS_INVALID_VALUE; /* the plugin's only use */
  return gemm(h, ta, tb, m, n, k, *(const float *)alpha, a, lda, sa, b, ldb,
              sb, *(const float *)beta, c, ldc, sc, batch,
              atype == CUDA_R_16F ? SHIM_BLAS_F16 : SHIM_BLAS_BF16, __func__);
}
