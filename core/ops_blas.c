/*
 * ops_blas.c — gemm, strided batched gemm, matmul and gemv: CBLAS-style
 * arguments are validated and folded into strided rank-3 views, so every
 * plugin sees one form: C[b] = alpha A[b]·B[b] + beta C[b].
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

/* Validates and dispatches C = alpha A·B + beta C over rank-3 views. */
static bp_status_t gemm_dispatch(bp__stream_t *s, const char *op, double alpha,
                                 const bp_tensor_t *a, const bp_tensor_t *b, double beta,
                                 const bp_tensor_t *c) {
  if (bp__tensors_overlap(c, a) || bp__tensors_overlap(c, b))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: C overlaps A or B", op);
  bp_status_t st = bp__check_output(op, c, "c", 0, NULL, NULL, false);
  if (st == BP_OK) st = bp__require_op(s->device, BP_OP_GEMM, a->dtype, op);
  if (st != BP_OK) return st;
  if (bp_tensor_numel(c) == 0) return BP_OK;
  bp_gemm_args_t args;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.alpha = alpha;
  args.beta = beta;
  if (s->device->allow_reduced_precision) args.flags |= BP_GEMM_FLAG_ALLOW_TF32;
  bp__tensor_to_plugin(a, &args.a);
  bp__tensor_to_plugin(b, &args.b);
  bp__tensor_to_plugin(c, &args.c);
  return bp__call_op(s, BP_OP_GEMM, &args);
}

static bp_status_t check_dims(const char *op, int64_t m, int64_t n, int64_t k, int64_t batch) {
  if (m < 0 || n < 0 || k < 0 || batch < 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: negative dimension (m=%lld n=%lld k=%lld batch=%lld)",
                    op, (long long)m, (long long)n, (long long)k, (long long)batch);
  return BP_OK;
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
  return gemm_dispatch(s, op, alpha, &t[0], &t[1], beta, &t[2]);
}

bp_status_t bp_gemm(bp_stream_t *sh, bp_dtype_t dt, bp_layout_t layout, bp_transpose_t ta,
                    bp_transpose_t tb, int64_t m, int64_t n, int64_t k, double alpha,
                    bp_buffer_t *a, uint64_t a_offset, int64_t lda, bp_buffer_t *b,
                    uint64_t b_offset, int64_t ldb, double beta, bp_buffer_t *c,
                    uint64_t c_offset, int64_t ldc) {
  return bp_gemm_strided_batched(sh, dt, layout, ta, tb, m, n, k, alpha, a, a_offset, lda, 0, b,
                                 b_offset, ldb, 0, beta, c, c_offset, ldc, 0, 1);
}

/* Lifts a rank-2 tensor to rank 3 with a broadcast batch axis. */
static void as_batched(const bp_tensor_t *t, int64_t batch, bp_tensor_t *out) {
  *out = *t;
  if (t->rank == 3) {
    if (t->shape[0] == 1 && batch != 1) {
      out->shape[0] = batch;
      out->strides[0] = 0;
    }
    return;
  }
  out->rank = 3;
  out->shape[0] = batch;
  out->strides[0] = 0;
  for (int i = 0; i < 2; i++) {
    out->shape[i + 1] = t->shape[i];
    out->strides[i + 1] = t->strides[i];
  }
}

bp_status_t bp_matmul(bp_stream_t *sh, double alpha, const bp_tensor_t *a, const bp_tensor_t *b,
                      double beta, const bp_tensor_t *c) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_matmul", "stream");
  const char *op = "bp_matmul";
  bp_status_t st = BP_OK;
  if (st == BP_OK) st = bp__tensor_check(a, s->device, op, "a");
  if (st == BP_OK) st = bp__tensor_check(b, s->device, op, "b");
  if (st == BP_OK) st = bp__tensor_check(c, s->device, op, "c");
  if (st != BP_OK) return st;
  const bp_tensor_t *ts[3] = {a, b, c};
  for (int i = 0; i < 3; i++)
    if (ts[i]->rank != 2 && ts[i]->rank != 3)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s has rank %d; expected 2 or 3", op,
                      i == 0 ? "a" : i == 1 ? "b" : "c", ts[i]->rank);
  if (a->dtype != b->dtype || a->dtype != c->dtype || !bp__dtype_is_float(a->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: a, b, c must share one float dtype (%s, %s, %s)",
                    op, bp_dtype_name(a->dtype), bp_dtype_name(b->dtype), bp_dtype_name(c->dtype));
  int64_t batch = c->rank == 3 ? c->shape[0] : 1;
  bp_tensor_t a3, b3, c3;
  as_batched(a, batch, &a3);
  as_batched(b, batch, &b3);
  as_batched(c, batch, &c3);
  if (c3.shape[0] > 1 && c3.strides[0] == 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: c has a broadcast batch axis", op);
  if (a3.shape[0] != batch || b3.shape[0] != batch || a3.shape[2] != b3.shape[1] ||
      a3.shape[1] != c3.shape[1] || b3.shape[2] != c3.shape[2])
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: shapes do not chain: a [%lld,%lld,%lld] b [%lld,%lld,%lld] c [%lld,%lld,%lld]",
                    op, (long long)a3.shape[0], (long long)a3.shape[1], (long long)a3.shape[2],
                    (long long)b3.shape[0], (long long)b3.shape[1], (long long)b3.shape[2],
                    (long long)c3.shape[0], (long long)c3.shape[1], (long long)c3.shape[2]);
  return gemm_dispatch(s, op, alpha, &a3, &b3, beta, &c3);
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
