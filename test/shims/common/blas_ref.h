/*
 * blas_ref.h — the column-major strided-batched gemm behind the test-only
 * cuBLAS and rocBLAS shims (test/shims/cublas, test/shims/rocblas): the
 * BLAS argument rules the real libraries enforce, and a plain C loop nest
 * over the driver shim's "device" memory (host RAM), f16/bf16 in f32.
 */
#ifndef BP_SHIM_BLAS_REF_H
#define BP_SHIM_BLAS_REF_H

#include <stdbool.h>
#include <stdint.h>

enum { SHIM_BLAS_F32, SHIM_BLAS_F64, SHIM_BLAS_F16, SHIM_BLAS_BF16 };

typedef struct shim_blas_gemm {
  int dtype;
  bool trans_a, trans_b;
  int m, n, k, lda, ldb, ldc, batch;
  int64_t stride_a, stride_b, stride_c;
  uint64_t a, b, c;
  double alpha, beta;
} shim_blas_gemm_t;

/* The libraries' argument checks (dimensions, leading dimensions against
 * the stored shapes) and every byte the call touches inside one live
 * allocation (mem_valid, the driver shim's check); false, after a report
 * on stderr naming fn, when one fails. */
bool shim_blas_check(const shim_blas_gemm_t *g, const char *fn,
                     bool (*mem_valid)(uint64_t p, uint64_t bytes));
/* Runs the gemm (arg: a shim_blas_gemm_t); the stream-ordered work the
 * shims enqueue on the driver shim's stream. */
void shim_blas_run(void *arg);

#endif /* BP_SHIM_BLAS_REF_H */
