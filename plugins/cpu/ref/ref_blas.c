/*
 * ref/ref_blas.c — scalar reference GEMM (batched, strided) and GEMV.
 *
 * Every dtype accumulates in double, which is at least as precise as what
 * any backend does (f32 / f16 / bf16 accumulate in f32 there), and the
 * result is rounded once to C's dtype, after the epilogue (bias and
 * activation, ABI 1.5). beta == 0 means C is not read, so NaN or garbage in
 * C never reaches the output (BLAS semantics).
 */
#include <stdlib.h>

#include "ref.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

/* ---- gemm: one task per output row (b, i) of the [batch * m] rows ------*/

int64_t cpu_ref_gemm_tasks(const bp_gemm_args_t *a) {
  if (a->a.rank != 3 || a->b.rank != 3 || a->c.rank != 3 ||
      (a->bias.rank != 0 && a->bias.rank != 3))
    return BP_ERR_INVALID_ARGUMENT;
  if ((a->flags & BP_GEMM_FLAG_ACTIVATION) &&
      (unsigned)a->activation >= BP_UNARY_COUNT)
    return BP_ERR_INVALID_ARGUMENT;
  return a->c.shape[0] * a->c.shape[1];
}

int64_t cpu_ref_gemm_grain(const bp_gemm_args_t *a) {
  return cpu_ref_grain_for(a->a.shape[2] * a->c.shape[2]);
}

/* Computes row i of batch b into acc[0..n) (k-outer so B is read along its
 * rows, which is the common contiguous case). */
static void gemm_row(const bp_gemm_args_t *g, int64_t b, int64_t i,
                     double *acc) {
  const bp_plugin_tensor_t *A = &g->a, *B = &g->b;
  const void *pa = cpu_tensor_base(A), *pb = cpu_tensor_base(B);
  int64_t k = A->shape[2], n = B->shape[2];
  for (int64_t j = 0; j < n; j++)
    acc[j] = 0.0;
  int64_t arow = b * A->strides[0] + i * A->strides[1];
  for (int64_t p = 0; p < k; p++) {
    double av = cpu_load(pa, A->dtype, arow + p * A->strides[2]);
    int64_t brow = b * B->strides[0] + p * B->strides[1];
    for (int64_t j = 0; j < n; j++)
      acc[j] += av * cpu_load(pb, B->dtype, brow + j * B->strides[2]);
  }
}

/* The epilogue over one row of the accumulator (ABI 1.5): + bias, then the
 * activation, through the reference unary op on the f64 row itself, so C
 * is rounded once, after both. */
static void gemm_row_epilogue(const bp_gemm_args_t *g, int64_t b, int64_t i,
                              double *acc, int64_t n) {
  const bp_plugin_tensor_t *bias = &g->bias;
  if (bias->rank == 3) {
    const void *pb = cpu_tensor_base(bias);
    int64_t brow = b * bias->strides[0] + i * bias->strides[1];
    for (int64_t j = 0; j < n; j++)
      acc[j] += cpu_load(pb, bias->dtype, brow + j * bias->strides[2]);
  }
  if (!(g->flags & BP_GEMM_FLAG_ACTIVATION))
    return;
  bp_unary_args_t u = {.struct_size = sizeof u,
                       .op = (bp_unary_op_t)g->activation};
  u.x.ptr = (uint64_t)(uintptr_t)acc;
  u.x.dtype = BP_F64;
  u.x.rank = 1;
  u.x.shape[0] = n;
  u.x.strides[0] = 1;
  u.y = u.x;
  cpu_ref_unary_range(&u, 0, n);
}

bp_status_t cpu_ref_gemm_range(const bp_gemm_args_t *g, int64_t begin,
                               int64_t end) {
  const bp_plugin_tensor_t *C = &g->c;
  int64_t m = C->shape[1], n = C->shape[2];
  void *pc = cpu_tensor_base(C);
  double *acc = malloc((size_t)(n > 0 ? n : 1) * sizeof *acc);
  if (!acc)
    return BP_ERR_OUT_OF_MEMORY;
  for (int64_t row = begin; row < end; row++) {
    int64_t b = row / m, i = row % m;
    gemm_row(g, b, i, acc);
    int64_t crow = b * C->strides[0] + i * C->strides[1];
    for (int64_t j = 0; j < n; j++) {
      acc[j] *= g->alpha;
      if (g->beta != 0.0)
        acc[j] += g->beta * cpu_load(pc, C->dtype, crow + j * C->strides[2]);
    }
    gemm_row_epilogue(g, b, i, acc, n);
    for (int64_t j = 0; j < n; j++)
      cpu_store(pc, C->dtype, crow + j * C->strides[2], acc[j]);
  }
  free(acc);
  return BP_OK;
}

/* ---- gemv: one task per element of y -----------------------------------*/

int64_t cpu_ref_gemv_tasks(const bp_gemv_args_t *a) {
  if (a->a.rank != 2 || a->x.rank != 1 || a->y.rank != 1)
    return BP_ERR_INVALID_ARGUMENT;
  return a->y.shape[0];
}

int64_t cpu_ref_gemv_grain(const bp_gemv_args_t *a) {
  return cpu_ref_grain_for(a->a.shape[1]);
}

bp_status_t cpu_ref_gemv_range(const bp_gemv_args_t *g, int64_t begin,
                               int64_t end) {
  const bp_plugin_tensor_t *A = &g->a, *X = &g->x, *Y = &g->y;
  const void *pa = cpu_tensor_base(A), *px = cpu_tensor_base(X);
  void *py = cpu_tensor_base(Y);
  int64_t n = A->shape[1];
  for (int64_t i = begin; i < end; i++) {
    double acc = 0.0;
    for (int64_t j = 0; j < n; j++)
      acc += cpu_load(pa, A->dtype, i * A->strides[0] + j * A->strides[1]) *
             cpu_load(px, X->dtype, j * X->strides[0]);
    int64_t off = i * Y->strides[0];
    double v = g->alpha * acc;
    if (g->beta != 0.0)
      v += g->beta * cpu_load(py, Y->dtype, off);
    cpu_store(py, Y->dtype, off, v);
  }
  return BP_OK;
}
