/*
 * ops_blas.c — gemm, strided batched gemm and gemv: CBLAS-style arguments
 * are validated and folded into strided rank-3 views, so every plugin sees
 * one form: C[b] = alpha A[b]·B[b] + beta C[b] (gemm_epilogue.c issues it;
 * ops_matmul.c has the tensor form).
 */
#include <string.h>

#include "internal.h"

typedef struct mat_desc {
  bp_buffer_t *buf;
  uint64_t offset;
  bool trans;
  int64_t rows, cols; /* of op(X) */
  int64_t ld, batch_stride;
  const char *what;
} mat_desc_t;

static bp_status_t check_enums(const char *op, bp_layout_t layout, bp_transpose_t ta,
                               bp_transpose_t tb) {
  if (layout != BP_ROW_MAJOR && layout != BP_COL_MAJOR)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: layout %d is not BP_ROW_MAJOR or BP_COL_MAJOR", op,
                    (int)layout);
  if ((ta != BP_NO_TRANS && ta != BP_TRANS) || (tb != BP_NO_TRANS && tb != BP_TRANS))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: transpose flag is not BP_NO_TRANS or BP_TRANS", op);
  return BP_OK;
}

/* Builds the rank-3 view [batch, rows, cols] of op(X), checking the leading
 * dimension against the stored matrix as CBLAS does. */
static bp_status_t mat_view(const mat_desc_t *m, bp_dtype_t dt, bp_layout_t layout, int64_t batch,
                            const bp__device_t *dev, const char *op, bp_tensor_t *out) {
  int64_t stored_rows = m->trans ? m->cols : m->rows;
  int64_t stored_cols = m->trans ? m->rows : m->cols;
  int64_t need = layout == BP_ROW_MAJOR ? stored_cols : stored_rows;
  if (need < 1) need = 1;
  if (m->ld < need)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: ld%s = %lld is less than %lld", op, m->what,
                    (long long)m->ld, (long long)need);
  int64_t si = layout == BP_ROW_MAJOR ? m->ld : 1;
  int64_t sj = layout == BP_ROW_MAJOR ? 1 : m->ld;
  int64_t shape[3] = {batch, m->rows, m->cols};
  int64_t strides[3] = {m->batch_stride, m->trans ? sj : si, m->trans ? si : sj};
  if (m->rows > (INT64_C(1) << 48) || m->cols > (INT64_C(1) << 48) || batch > (INT64_C(1) << 48))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s dimensions are absurd", op, m->what);
  bp_status_t st = bp_tensor_init(m->buf, m->offset, dt, 3, shape, strides, out);
  if (st != BP_OK) return st;
  return bp__tensor_check(out, dev, op, m->what);
}

static bp_status_t check_dims(const char *op, int64_t m, int64_t n, int64_t k, int64_t batch) {
  if (m < 0 || n < 0 || k < 0 || batch < 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: negative dimension (m=%lld n=%lld k=%lld batch=%lld)",
                    op, (long long)m, (long long)n, (long long)k, (long long)batch);
  return BP_OK;
}

/* The strided batched GEMM with an epilogue (NULL: none), whose bias
 * broadcasts to one C matrix [m, n]. */
static bp_status_t gemm_strided(bp__stream_t *s, bp_dtype_t dt, bp_layout_t layout, bp_transpose_t ta,
                                bp_transpose_t tb, int64_t m, int64_t n, int64_t k, double alpha,
                                bp_buffer_t *a, uint64_t a_offset, int64_t lda, int64_t stride_a,
                                bp_buffer_t *b, uint64_t b_offset, int64_t ldb, int64_t stride_b,
                                double beta, bp_buffer_t *c, uint64_t c_offset, int64_t ldc,
                                int64_t stride_c, int64_t batch, const bp_gemm_epilogue_t *epilogue) {
  const char *op = "bp_gemm";
  bp_status_t st = BP_OK;
  if (st == BP_OK) st = check_enums(op, layout, ta, tb);
  if (st == BP_OK) st = check_dims(op, m, n, k, batch);
  if (st != BP_OK) return st;
  if (!bp__dtype_valid(dt) || !bp__dtype_is_float(dt))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: dtype %s is not a float type", op, bp_dtype_name(dt));
  if (stride_c == 0 && batch > 1)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: stride_c is 0 with batch %lld: outputs would alias",
                    op, (long long)batch);
  mat_desc_t md[3] = {
      {a, a_offset, ta == BP_TRANS, m, k, lda, stride_a, "a"},
      {b, b_offset, tb == BP_TRANS, k, n, ldb, stride_b, "b"},
      {c, c_offset, false, m, n, ldc, stride_c, "c"},
  };
  bp_tensor_t t[3];
  for (int i = 0; i < 3; i++)
    if ((st = mat_view(&md[i], dt, layout, batch, s->device, op, &t[i])) != BP_OK) return st;
  bp_tensor_t one = t[2];
  one.shape[0] = 1; /* a single C matrix: when it is fine, the batch stride is at fault */
  if (batch > 1 && bp__self_overlap_axis(&t[2]) >= 0 && bp__self_overlap_axis(&one) < 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: stride_c = %lld makes the batch's C matrices overlap", op,
                    (long long)stride_c);
  bp__epilogue_t e;
  if ((st = bp__epilogue_init(s, op, epilogue, &one, &e)) != BP_OK) return st;
  if (e.has_bias) e.bias.shape[0] = batch; /* one bias for every C matrix */
  return bp__gemm_dispatch(s, op, alpha, &t[0], &t[1], beta, &t[2], &e);
}

bp_status_t bp_gemm_strided_batched(bp_stream_t *sh, bp_dtype_t dt, bp_layout_t layout,
                                    bp_transpose_t ta, bp_transpose_t tb, int64_t m, int64_t n,
                                    int64_t k, double alpha, bp_buffer_t *a, uint64_t a_offset,
                                    int64_t lda, int64_t stride_a, bp_buffer_t *b,
                                    uint64_t b_offset, int64_t ldb, int64_t stride_b, double beta,
                                    bp_buffer_t *c, uint64_t c_offset, int64_t ldc,
                                    int64_t stride_c, int64_t batch) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_gemm_strided_batched", "stream");
  return gemm_strided(s, dt, layout, ta, tb, m, n, k, alpha, a, a_offset, lda, stride_a, b, b_offset, ldb,
                      stride_b, beta, c, c_offset, ldc, stride_c, batch, NULL);
}

bp_status_t bp_gemm_ex(bp_stream_t *sh, bp_dtype_t dt, bp_layout_t layout, bp_transpose_t ta,
                       bp_transpose_t tb, int64_t m, int64_t n, int64_t k, double alpha, bp_buffer_t *a,
                       uint64_t a_offset, int64_t lda, bp_buffer_t *b, uint64_t b_offset, int64_t ldb,
                       double beta, bp_buffer_t *c, uint64_t c_offset, int64_t ldc,
                       const bp_gemm_epilogue_t *epilogue) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_gemm_ex", "stream");
  return gemm_strided(s, dt, layout, ta, tb, m, n, k, alpha, a, a_offset, lda, 0, b, b_offset, ldb, 0, beta, c,
                      c_offset, ldc, 0, 1, epilogue);
}

bp_status_t bp_gemm(bp_stream_t *sh, bp_dtype_t dt, bp_layout_t layout, bp_transpose_t ta,
                    bp_transpose_t tb, int64_t m, int64_t n, int64_t k, double alpha,
                    bp_buffer_t *a, uint64_t a_offset, int64_t lda, bp_buffer_t *b,
                    uint64_t b_offset, int64_t ldb, double beta, bp_buffer_t *c,
                    uint64_t c_offset, int64_t ldc) {
  return bp_gemm_strided_batched(sh, dt, layout, ta, tb, m, n, k, alpha, a, a_offset, lda, 0, b,
                                 b_offset, ldb, 0, beta, c, c_offset, ldc, 0, 1);
}

bp_status_t bp_gemv(bp_stream_t *sh, bp_dtype_t dt, bp_layout_t layout, bp_transpose_t trans,
                    int64_t m, int64_t n, double alpha, bp_buffer_t *a, uint64_t a_offset,
                    int64_t lda, bp_buffer_t *x, uint64_t x_offset, int64_t incx, double beta,
                    bp_buffer_t *y, uint64_t y_offset, int64_t incy) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_gemv", "stream");
  const char *op = "bp_gemv";
  bp_status_t st = BP_OK;
  if (st == BP_OK) st = check_enums(op, layout, trans, BP_NO_TRANS);
  if (st == BP_OK) st = check_dims(op, m, n, 0, 1);
  if (st != BP_OK) return st;
  if (!bp__dtype_valid(dt) || !bp__dtype_is_float(dt))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: dtype %s is not a float type", op, bp_dtype_name(dt));
  if (incx <= 0 || incy <= 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: incx (%lld) and incy (%lld) must be positive", op,
                    (long long)incx, (long long)incy);
  bool t = trans == BP_TRANS;
  int64_t rows = t ? n : m, cols = t ? m : n;
  mat_desc_t md = {a, a_offset, t, rows, cols, lda, 0, "a"};
  bp_tensor_t ta, tx, ty;
  if ((st = mat_view(&md, dt, layout, 1, s->device, op, &ta)) != BP_OK) return st;
  int64_t xs = cols, ys = rows;
  if ((st = bp_tensor_init(x, x_offset, dt, 1, &xs, &incx, &tx)) != BP_OK ||
      (st = bp_tensor_init(y, y_offset, dt, 1, &ys, &incy, &ty)) != BP_OK)
    return st;
  if ((st = bp__tensor_check(&tx, s->device, op, "x")) != BP_OK ||
      (st = bp__tensor_check(&ty, s->device, op, "y")) != BP_OK)
    return st;
  if (bp__tensors_overlap(&ty, &ta) || bp__tensors_overlap(&ty, &tx))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: y overlaps a or x", op);
  if ((st = bp__check_output(op, &ty, "y", 0, NULL, NULL, false)) != BP_OK) return st;
  if ((st = bp__require_op(s->device, BP_OP_GEMV, dt, op)) != BP_OK) return st;
  if (rows == 0) return BP_OK;
  bp_gemv_args_t args;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.alpha = alpha;
  args.beta = beta;
  bp__tensor_to_plugin(&ta, &args.a);
  args.a.rank = 2; /* drop the batch axis */
  for (int i = 0; i < 2; i++) {
    args.a.shape[i] = ta.shape[i + 1];
    args.a.strides[i] = ta.strides[i + 1];
  }
  args.a.shape[2] = args.a.strides[2] = 0;
  bp__tensor_to_plugin(&tx, &args.x);
  bp__tensor_to_plugin(&ty, &args.y);
  return bp__call_op(s, BP_OP_GEMV, &args);
}
