/*
 * rocblas.c — the test-only librocblas.so.4: exactly the entry points of
 * plugins/rocm/rocblas_api.h (declared from its list), over the HIP runtime
 * shim (test/shims/hip), which it links against: memory is the HIP shim's,
 * each gemm is checked as rocBLAS checks its arguments and every operand's
 * extent against the live allocations, then enqueued on the handle's stream
 * through the HIP shim (bp_hip_shim_enqueue), so a graph capture records
 * it. rocblas_create_handle allocates device memory with hipMalloc, which
 * a capture forbids unless relaxed; without rocblas_set_workspace the
 * first gemm allocates a workspace (hipMalloc: fails inside a capture). It checks the plugin's host logic, not
 * rocBLAS's performance or numerics.
 *
 * Environment: BP_ROCBLAS_SHIM_FAIL=create,gemm injects failures.
 * Hooks: bp_rocblas_shim_gemms(), bp_rocblas_shim_handles().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/rocm/rocblas_api.h"
#include "test/shims/common/blas_ref.h"
#include "test/shims/common/env.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_DECLARE(field, sym, params)                                       \
  SHIM_EXPORT rocblas_status field params __asm__(sym);
ROCBLAS_ENTRY_POINTS(SHIM_DECLARE)
ROCBLAS_OPTIONAL_ENTRY_POINTS(SHIM_DECLARE)
#undef SHIM_DECLARE

/* From the HIP shim. */
hipError_t hipMalloc(void **p, size_t size);
hipError_t hipFree(void *p);
hipError_t bp_hip_shim_enqueue(hipStream_t s, void (*fn)(void *),
                               const void *data, size_t size);
bool bp_hip_shim_mem_valid(uint64_t p, uint64_t bytes);

#define rocblas_status_invalid_handle 1
#define rocblas_status_invalid_size 3
#define rocblas_status_memory_error 5
#define rocblas_status_internal_error 6
#define rocblas_status_invalid_value 11
#define HANDLE_MAGIC 0x52424c53u

struct _rocblas_handle {
  uint32_t magic;
  hipStream_t stream;
  void *workspace;         /* handle internals, from rocblas_create_handle */
  bool user_workspace;     /* rocblas_set_workspace */
  void *default_workspace;
};

static int64_t gemms, handles;

SHIM_EXPORT int64_t bp_rocblas_shim_gemms(void) {
  return __atomic_load_n(&gemms, __ATOMIC_RELAXED);
}
SHIM_EXPORT int64_t bp_rocblas_shim_handles(void) {
  return __atomic_load_n(&handles, __ATOMIC_RELAXED);
}

static bool fail(const char *what) {
  return shim_env_has("BP_ROCBLAS_SHIM_FAIL", what);
}

rocblas_status rocblas_create_handle(rocblas_handle *out) {
  *out = NULL;
  if (fail("create"))
    return rocblas_status_internal_error;
  struct _rocblas_handle *h = calloc(1, sizeof *h);
  if (!h)
    return rocblas_status_memory_error;
  if (hipMalloc(&h->workspace, 4096) != hipSuccess) {
    free(h);
    return rocblas_status_memory_error;
  }
  h->magic = HANDLE_MAGIC;
  __atomic_add_fetch(&handles, 1, __ATOMIC_RELAXED);
  *out = h;
  return rocblas_status_success;
}

static bool handle_ok(rocblas_handle h) {
  return h && h->magic == HANDLE_MAGIC;
}

rocblas_status rocblas_destroy_handle(rocblas_handle h) {
  if (!handle_ok(h))
    return rocblas_status_invalid_handle;
  hipFree(h->workspace);
  if (h->default_workspace)
    hipFree(h->default_workspace);
  h->magic = 0;
  free(h);
  __atomic_sub_fetch(&handles, 1, __ATOMIC_RELAXED);
  return rocblas_status_success;
}

rocblas_status rocblas_set_stream(rocblas_handle h, hipStream_t s) {
  if (!handle_ok(h))
    return rocblas_status_invalid_handle;
  h->stream = s;
  return rocblas_status_success;
}

rocblas_status rocblas_set_workspace(rocblas_handle h, void *ws, size_t size) {
  if (!handle_ok(h))
    return rocblas_status_invalid_handle;
  if (size && !bp_hip_shim_mem_valid((uint64_t)(uintptr_t)ws, size))
    return rocblas_status_invalid_value;
  h->user_workspace = size > 0;
  return rocblas_status_success;
}

rocblas_status rocblas_get_version_string(char *buf, size_t size) {
  if (!buf || size < 16)
    return rocblas_status_invalid_size;
  snprintf(buf, size, "4.0.0-shim");
  return rocblas_status_success;
}

static void counted_run(void *arg) {
  __atomic_add_fetch(&gemms, 1, __ATOMIC_RELAXED);
  shim_blas_run(arg);
}

static int op(int t) {
  return t == rocblas_operation_none ? 0 : t == rocblas_operation_transpose ? 1 : -1;
}

static rocblas_status gemm(rocblas_handle h, int ta, int tb, int m, int n,
                           int k, double alpha, const void *a, int lda,
                           int64_t sa, const void *b, int ldb, int64_t sb,
                           double beta, void *c, int ldc, int64_t sc,
                           int batch, int dtype, const char *fn) {
  if (!handle_ok(h))
    return rocblas_status_invalid_handle;
  if (op(ta) < 0 || op(tb) < 0)
    return rocblas_status_invalid_value;
  shim_blas_gemm_t g = {dtype, op(ta) == 1, op(tb) == 1, m, n, k, lda, ldb,
                        ldc, batch, sa, sb, sc, (uint64_t)(uintptr_t)a,
                        (uint64_t)(uintptr_t)b, (uint64_t)(uintptr_t)c, alpha,
                        beta};
  if (!shim_blas_check(&g, fn, bp_hip_shim_mem_valid))
    return rocblas_status_invalid_size;
  if (fail("gemm"))
    return rocblas_status_internal_error;
  if (!h->user_workspace && !h->default_workspace &&
      hipMalloc(&h->default_workspace, 1 << 20) != hipSuccess)
    return rocblas_status_memory_error;
  if (m == 0 || n == 0 || batch == 0)
    return rocblas_status_success;
  return bp_hip_shim_enqueue(h->stream, counted_run, &g, sizeof g) == hipSuccess
             ? rocblas_status_success
             : rocblas_status_internal_error;
}

rocblas_status rocblas_sgemm_strided_batched(
    rocblas_handle h, int ta, int tb, int m, int n, int k, const float *alpha,
    const float *a, int lda, int64_t sa, const float *b, int ldb, int64_t sb,
    const float *beta, float *c, int ldc, int64_t sc, int batch) {
  return gemm(h, ta, tb, m, n, k, *alpha, a, lda, sa, b, ldb, sb, *beta, c,
              ldc, sc, batch, SHIM_BLAS_F32, __func__);
}

rocblas_status rocblas_dgemm_strided_batched(
    rocblas_handle h, int ta, int tb, int m, int n, int k, const double *alpha,
    const double *a, int lda, int64_t sa, const double *b, int ldb, int64_t sb,
    const double *beta, double *c, int ldc, int64_t sc, int batch) {
  return gemm(h, ta, tb, m, n, k, *alpha, a, lda, sa, b, ldb, sb, *beta, c,
              ldc, sc, batch, SHIM_BLAS_F64, __func__);
}

rocblas_status rocblas_gemm_strided_batched_ex(
    rocblas_handle h, int ta, int tb, int m, int n, int k, const void *alpha,
    const void *a, int atype, int lda, int64_t sa, const void *b, int btype,
    int ldb, int64_t sb, const void *beta, const void *c, int ctype, int ldc,
    int64_t sc, void *d, int dtype, int ldd, int64_t sd, int batch,
    int compute, int algo, int32_t solution, uint32_t flags) {
  (void)algo, (void)solution, (void)flags;
  if (atype != btype || atype != ctype || atype != dtype ||
      compute != rocblas_datatype_f32_r ||
      (atype != rocblas_datatype_f16_r && atype != rocblas_datatype_bf16_r))
    return rocblas_status_invalid_value; /* the plugin's only use */
  if (c != d || ldc != ldd || sc != sd) {
    fprintf(stderr, "blas-shim: %s: C and D differ (not modelled)\n", __func__);
    return rocblas_status_invalid_value;
  }
  return gemm(h, ta, tb, m, n, k, *(const float *)alpha, a, lda, sa, b, ldb,
              sb, *(const float *)beta, d, ldd, sd, batch,
              atype == rocblas_datatype_f16_r ? SHIM_BLAS_F16 : SHIM_BLAS_BF16,
              __func__);
}
