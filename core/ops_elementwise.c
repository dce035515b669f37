/*
 * ops_elementwise.c — unary and binary elementwise ops with NumPy
 * broadcasting, and reductions along one axis.
 */
#include <string.h>

#include "internal.h"

#define NT(...) ((const bp_tensor_t *const[]){__VA_ARGS__})
#define NN(...) ((const char *const[]){__VA_ARGS__})

bp_status_t bp_unary(bp_stream_t *sh, bp_unary_op_t opk, const bp_tensor_t *x, const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_unary", "stream");
  const char *op = "bp_unary";
  bp_status_t st = bp__check_tensors(s, op, 2, NT(x, y), NN("x", "y"));
  if (st == BP_OK) st = bp__check_float_dtypes(op, 2, NT(x, y), NN("x", "y"));
  if (st != BP_OK) return st;
  if ((unsigned)opk >= BP_UNARY_COUNT)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: op %d is not a bp_unary_op_t", op, (int)opk);
  bp_unary_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.op = opk;
  bp__tensor_to_plugin(x, &a.x);
  bp__tensor_to_plugin(y, &a.y);
  if ((st = bp__broadcast_to(&a.x, y->rank, y->shape, op, "x")) ||
      (st = bp__check_output(op, y, "y", 1, NT(x), NN("x"), true)) ||
      (st = bp__require_op(s->device, BP_OP_UNARY, y->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  return bp__call_op(s, BP_OP_UNARY, &a);
}

bp_status_t bp_binary(bp_stream_t *sh, bp_binary_op_t opk, const bp_tensor_t *x1,
                      const bp_tensor_t *x2, const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_binary", "stream");
  const char *op = "bp_binary";
  bp_status_t st = bp__check_tensors(s, op, 3, NT(x1, x2, y), NN("a", "b", "y"));
  if (st == BP_OK) st = bp__check_float_dtypes(op, 3, NT(x1, x2, y), NN("a", "b", "y"));
  if (st != BP_OK) return st;
  if ((unsigned)opk >= BP_BINARY_COUNT)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: op %d is not a bp_binary_op_t", op, (int)opk);
  bp_binary_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.op = opk;
  bp__tensor_to_plugin(x1, &a.a);
  bp__tensor_to_plugin(x2, &a.b);
  bp__tensor_to_plugin(y, &a.y);
  if ((st = bp__broadcast_to(&a.a, y->rank, y->shape, op, "a")) ||
      (st = bp__broadcast_to(&a.b, y->rank, y->shape, op, "b")) ||
      (st = bp__check_output(op, y, "y", 2, NT(x1, x2), NN("a", "b"), true)) ||
      (st = bp__require_op(s->device, BP_OP_BINARY, y->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  return bp__call_op(s, BP_OP_BINARY, &a);
}

/* Accepts y with the reduced axis removed or kept as 1, and returns y's view
 * with x's rank and a size-1 axis. */
static bp_status_t reduce_output_view(const char *op, const bp_tensor_t *x, int32_t axis,
                                      const bp_tensor_t *y, bp_plugin_tensor_t *out) {
  bp__tensor_to_plugin(y, out);
  bool kept = y->rank == x->rank, removed = y->rank == x->rank - 1;
  for (int i = 0, j = 0; i < x->rank && (kept || removed); i++) {
    if (i == axis) {
      if (kept && y->shape[i] != 1) kept = false;
      if (kept) j++;
      continue;
    }
    if (y->shape[j] != x->shape[i]) kept = removed = false;
    j++;
  }
  if (!kept && !removed)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: y must have x's shape with axis %d removed or set to 1", op, axis);
  if (removed) {
    out->rank = x->rank;
    for (int i = x->rank - 1, j = y->rank - 1; i >= 0; i--) {
      out->shape[i] = i == axis ? 1 : y->shape[j];
      out->strides[i] = i == axis ? 0 : y->strides[j];
      if (i != axis) j--;
    }
  }
  return BP_OK;
}

bp_status_t bp_reduce(bp_stream_t *sh, bp_reduce_op_t opk, const bp_tensor_t *x, int32_t axis,
                      const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_reduce", "stream");
  const char *op = "bp_reduce";
  bp_status_t st = bp__check_tensors(s, op, 2, NT(x, y), NN("x", "y"));
  if (st != BP_OK) return st;
  if ((unsigned)opk >= BP_REDUCE_COUNT)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: op %d is not a bp_reduce_op_t", op, (int)opk);
  if (!bp__dtype_is_float(x->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: x has dtype %s; expected a float type", op,
                    bp_dtype_name(x->dtype));
  if (opk == BP_REDUCE_ARGMAX ? (y->dtype != BP_I32 && y->dtype != BP_I64) : y->dtype != x->dtype)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: y has dtype %s; expected %s", op,
                    bp_dtype_name(y->dtype), opk == BP_REDUCE_ARGMAX ? "i32 or i64" : bp_dtype_name(x->dtype));
  bp_reduce_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.op = opk;
  if ((st = bp__normalize_axis(op, axis, x->rank, &a.axis))) return st;
  if (x->shape[a.axis] == 0 && opk != BP_REDUCE_SUM && opk != BP_REDUCE_PROD)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: reducing an empty axis has no %s", op,
                    opk == BP_REDUCE_MEAN || opk == BP_REDUCE_VAR ? "defined value" : "identity");
  bp__tensor_to_plugin(x, &a.x);
  if ((st = reduce_output_view(op, x, a.axis, y, &a.y)) ||
      (st = bp__check_output(op, y, "y", 1, NT(x), NN("x"), false)) ||
      (st = bp__require_op(s->device, BP_OP_REDUCE, x->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  return bp__call_op(s, BP_OP_REDUCE, &a);
}
