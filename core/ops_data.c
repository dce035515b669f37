/*
 * ops_data.c — fill, copy, cast and random fills.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

#define NT(...) ((const bp_tensor_t *const[]){__VA_ARGS__})
#define NN(...) ((const char *const[]){__VA_ARGS__})

bp_status_t bp_fill(bp_stream_t *sh, const bp_tensor_t *y, double value) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_fill", "stream");
  const char *op = "bp_fill";
  bp_status_t st = bp__check_tensors(s, op, 1, NT(y), NN("y"));
  if (st == BP_OK) st = bp__check_output(op, y, "y", 0, NULL, NULL, false);
  if (st == BP_OK) st = bp__require_op(s->device, BP_OP_FILL, y->dtype, op);
  if (st != BP_OK || bp_tensor_numel(y) == 0) return st;
  bp_fill_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.value = value;
  bp__tensor_to_plugin(y, &a.y);
  return bp__call_op(s, BP_OP_FILL, &a);
}

static bp_status_t copy_common(bp__stream_t *s, bp_op_t opk, const char *op, const bp_tensor_t *x,
                               const bp_tensor_t *y, uint32_t cast_flags) {
  bp_status_t st = bp__check_tensors(s, op, 2, NT(x, y), NN("x", "y"));
  if (st != BP_OK) return st;
  if (cast_flags & ~BP_CAST_SATURATE)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: flags 0x%x has unknown bits (BP_CAST_SATURATE is 0x%x)", op,
                    cast_flags, BP_CAST_SATURATE);
  if ((cast_flags & BP_CAST_SATURATE) && y->dtype != BP_FP8_E4M3 && y->dtype != BP_FP8_E5M2)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: BP_CAST_SATURATE needs an fp8 y (y is %s)", op,
                    bp_dtype_name(y->dtype));
  if (opk == BP_OP_COPY && x->dtype != y->dtype)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: x is %s and y is %s; use bp_cast to convert", op,
                    bp_dtype_name(x->dtype), bp_dtype_name(y->dtype));
  bp_copy_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  bp__tensor_to_plugin(x, &a.x);
  bp__tensor_to_plugin(y, &a.y);
  a.cast_flags = cast_flags;
  if ((st = bp__broadcast_to(&a.x, y->rank, y->shape, op, "x")) ||
      (st = bp__check_output(op, y, "y", 1, NT(x), NN("x"), false)))
    return st;
  /* A cast needs both ends: the device must handle the source and target. */
  if ((st = bp__require_op(s->device, opk, y->dtype, op)) ||
      (st = bp__require_op(s->device, opk, x->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  return bp__call_op(s, opk, &a);
}

bp_status_t bp_copy(bp_stream_t *sh, const bp_tensor_t *x, const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_copy", "stream");
  return copy_common(s, BP_OP_COPY, "bp_copy", x, y, 0);
}

bp_status_t bp_cast(bp_stream_t *sh, const bp_tensor_t *x, const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_cast", "stream");
  return copy_common(s, BP_OP_CAST, "bp_cast", x, y, 0);
}

bp_status_t bp_cast_ex(bp_stream_t *sh, const bp_tensor_t *x, const bp_tensor_t *y, uint32_t flags) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_cast_ex", "stream");
  return copy_common(s, BP_OP_CAST, "bp_cast_ex", x, y, flags);
}

bp_status_t bp_random(bp_stream_t *sh, bp_random_dist_t dist, uint64_t seed, uint64_t offset,
                      double lo_or_mean, double hi_or_std, const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_random", "stream");
  const char *op = "bp_random";
  bp_status_t st = bp__check_tensors(s, op, 1, NT(y), NN("y"));
  if (st == BP_OK) st = bp__check_float_dtypes(op, 1, NT(y), NN("y"));
  if (st != BP_OK) return st;
  if (dist != BP_RANDOM_UNIFORM && dist != BP_RANDOM_NORMAL)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: dist %d invalid", op, (int)dist);
  if (!isfinite(lo_or_mean) || !isfinite(hi_or_std))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: parameters must be finite", op);
  if (dist == BP_RANDOM_UNIFORM ? lo_or_mean > hi_or_std : hi_or_std < 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s", op,
                    dist == BP_RANDOM_UNIFORM ? "uniform needs a <= b" : "normal needs std >= 0");
  if ((st = bp__check_output(op, y, "y", 0, NULL, NULL, false)) ||
      (st = bp__require_op(s->device, BP_OP_RANDOM, y->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  bp_random_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.dist = dist;
  a.seed = seed;
  a.offset = offset;
  a.a = lo_or_mean;
  a.b = hi_or_std;
  bp__tensor_to_plugin(y, &a.y);
  return bp__call_op(s, BP_OP_RANDOM, &a);
}
