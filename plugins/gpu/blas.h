/*
 * plugins/gpu/blas.h — a gemm of the plugin ABI as one call of a
 * column-major vendor BLAS (cuBLAS, rocBLAS), shared by the CUDA and ROCm
 * backends. Header-only: the mapping and the per-device state of the
 * vendor-or-own choice (plugins/gpu/ops_blas.c decides).
 *
 * The ABI's gemm is C[b] = alpha A[b]·B[b] + beta C[b] over strided views
 * (a [batch,m,k], b [batch,k,n], c [batch,m,n], strides in elements).
 * A column-major BLAS wants each operand as "a matrix stored by columns
 * with leading dimension ld, optionally transposed". A view X (r x c,
 * strides rs, cs) is
 *   - column-major when rs == 1: op N, ld = cs (>= r);
 *   - row-major when cs == 1: its transpose is column-major: op T, ld = rs.
 * C has no transpose flag, so when C is row-major the call computes
 * C^T = B^T · A^T instead (the usual row-major trick), swapping the roles
 * of A and B and of m and n. Views that are neither (general strides),
 * dimensions or leading dimensions past INT_MAX, a C whose batches overlap
 * (batch stride 0): not mappable, the plugin's own kernels run them.
 */
#ifndef BACKPLANE_GPU_BLAS_H
#define BACKPLANE_GPU_BLAS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "plugin-api.h"

/* One column-major strided-batched gemm: C = alpha op(A) op(B) + beta C
 * with op(A) m x k, op(B) k x n, C m x n. Addresses have the offsets
 * applied. */
typedef struct bp_gpu_blas_call {
  bool trans_a, trans_b;
  int m, n, k, lda, ldb, ldc, batch;
  int64_t stride_a, stride_b, stride_c; /* elements; 0 broadcasts */
  uint64_t a, b, c;
  bp_dtype_t dtype;
  double alpha, beta;
} bp_gpu_blas_call_t;

/* The vendor-or-own choices one device has made (ops_blas.c), and its
 * vendor handle (opaque here). Lives in the plugin's device struct; the
 * plugin's device lock guards it. */
#define BP_GPU_BLAS_CHOICES 64
typedef struct bp_gpu_blas_state {
  void *handle;                       /* cublasHandle_t / rocblas_handle; NULL until first use */
  uint64_t workspace, workspace_size; /* the plugin's BLAS workspace, or 0 */
  bool broken;                        /* a vendor call failed: the own kernels from then on */
  int count;                          /* choices used (a ring past BP_GPU_BLAS_CHOICES) */
  struct {
    char bucket[48];
    bool vendor;
  } choices[BP_GPU_BLAS_CHOICES];
} bp_gpu_blas_state_t;

/* X (rows x cols, strides rs, cs) as a column-major operand: *trans false
 * when X itself is column-major, true when its transpose is. */
static inline bool bp_gpu_blas_operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                                       bool *trans, int64_t *ld) {
  const int64_t min_r = rows > 1 ? rows : 1, min_c = cols > 1 ? cols : 1;
  if ((rs == 1 || rows == 1) && cs >= min_r) {
    *trans = false, *ld = cs;
    return true;
  }
  if ((cs == 1 || cols == 1) && rs >= min_c) {
    *trans = true, *ld = rs;
    return true;
  }
  if (rows == 1 && cols == 1) { /* a scalar: any ld will do */
    *trans = false, *ld = 1;
    return true;
  }
  return false;
}

static inline bool bp_gpu_blas_fits(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

static inline int64_t bp_gpu_blas_batch_stride(const bp_plugin_tensor_t *t, int64_t batch) {
  return t->shape[0] == batch && batch > 1 ? t->strides[0] : 0;
}

/* Maps g onto one call; false when the views do not fit a BLAS call. */
static inline bool bp_gpu_blas_map(const bp_gemm_args_t *g, bp_gpu_blas_call_t *out) {
  memset(out, 0, sizeof *out);
  const bp_plugin_tensor_t *A = &g->a, *B = &g->b, *C = &g->c;
  if (A->rank != 3 || B->rank != 3 || C->rank != 3) return false;
  const int64_t batch = C->shape[0], m = C->shape[1], n = C->shape[2];
  const int64_t k = A->shape[2];
  if (!bp_gpu_blas_fits(batch) || !bp_gpu_blas_fits(m) || !bp_gpu_blas_fits(n) ||
      !bp_gpu_blas_fits(k) || batch < 1)
    return false;
  if (batch > 1 && C->strides[0] == 0) return false; /* every batch would write the same C */
  /* X (rows x kk) · Y (kk x cols) = Z, Z column-major. */
  bool z_trans;
  int64_t ldz;
  if (!bp_gpu_blas_operand(m, n, C->strides[1], C->strides[2], &z_trans, &ldz)) return false;
  const bp_plugin_tensor_t *X = A, *Y = B;
  int64_t rows = m, cols = n;
  int64_t xrs = A->strides[1], xcs = A->strides[2];
  int64_t yrs = B->strides[1], ycs = B->strides[2];
  if (z_trans) { /* C^T = B^T · A^T */
    X = B, Y = A, rows = n, cols = m;
    xrs = B->strides[2], xcs = B->strides[1];
    yrs = A->strides[2], ycs = A->strides[1];
  }
  bool xt, yt;
  int64_t ldx, ldy;
  if (!bp_gpu_blas_operand(rows, k, xrs, xcs, &xt, &ldx) ||
      !bp_gpu_blas_operand(k, cols, yrs, ycs, &yt, &ldy))
    return false;
  if (!bp_gpu_blas_fits(ldx) || !bp_gpu_blas_fits(ldy) || !bp_gpu_blas_fits(ldz) || ldx < 1 ||
      ldy < 1 || ldz < 1)
    return false;
  out->trans_a = xt, out->trans_b = yt;
  out->m = (int)rows, out->n = (int)cols, out->k = (int)k;
  out->lda = (int)ldx, out->ldb = (int)ldy, out->ldc = (int)ldz;
  out->batch = (int)batch;
  out->stride_a = bp_gpu_blas_batch_stride(X, batch);
  out->stride_b = bp_gpu_blas_batch_stride(Y, batch);
  out->stride_c = bp_gpu_blas_batch_stride(C, batch);
  out->a = X->ptr + X->offset;
  out->b = Y->ptr + Y->offset;
  out->c = C->ptr + C->offset;
  out->dtype = C->dtype;
  out->alpha = g->alpha, out->beta = g->beta;
  return true;
}

#endif /* BACKPLANE_GPU_BLAS_H */
