/*
 * ops_model.c — the model ops of ABI 1.5 (backplane_model.h): gather,
 * arange, binary with a scalar, GLU and RoPE. Each validates every
 * argument before anything runs, so a rejected call writes nothing.
 */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "ops_model.h"

#define NT(...) ((const bp_tensor_t *const[]){__VA_ARGS__})
#define NN(...) ((const char *const[]){__VA_ARGS__})

static bool index_dtype(bp_dtype_t dt) {
  return dt == BP_I32 || dt == BP_I64;
}

/* ---- gather ----------------------------------------------------------------- */

/* y must have table's shape with axis replaced by indices' shape. */
static bp_status_t gather_shape(const char *op, const bp_tensor_t *table, const bp_tensor_t *idx,
                                int32_t axis, const bp_tensor_t *y) {
  int32_t want = table->rank - 1 + idx->rank;
  if (want > BP_MAX_RANK)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: table rank %d with indices rank %d gives rank %d, above %d", op,
                    table->rank, idx->rank, want, BP_MAX_RANK);
  if (y->rank != want)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: y has rank %d; expected %d (table's with axis %d replaced by "
                    "indices' %d dims)",
                    op, y->rank, want, axis, idx->rank);
  for (int32_t d = 0; d < want; d++) {
    int64_t e = d < axis               ? table->shape[d]
                : d < axis + idx->rank ? idx->shape[d - axis]
                                       : table->shape[d - idx->rank + 1];
    if (y->shape[d] != e)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: y.shape[%d] is %lld; expected %lld", op, d,
                      (long long)y->shape[d], (long long)e);
  }
  return BP_OK;
}

bp_status_t bp_gather(bp_stream_t *sh, const bp_tensor_t *table, const bp_tensor_t *indices,
                      int32_t axis, const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_gather", "stream");
  const char *op = "bp_gather";
  bp_status_t st = bp__check_tensors(s, op, 3, NT(table, indices, y), NN("table", "indices", "y"));
  if (st != BP_OK) return st;
  if (!index_dtype(indices->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: indices has dtype %s; expected i32 or i64", op,
                    bp_dtype_name(indices->dtype));
  if (y->dtype != table->dtype)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: y has dtype %s; expected table's %s", op,
                    bp_dtype_name(y->dtype), bp_dtype_name(table->dtype));
  bp_gather_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  if ((st = bp__normalize_axis(op, axis, table->rank, &a.axis)) ||
      (st = gather_shape(op, table, indices, a.axis, y)) ||
      (st = bp__check_output(op, y, "y", 2, NT(table, indices), NN("table", "indices"), false)) ||
      (st = bp__require_op(s->device, BP_OP_GATHER, table->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  bp__tensor_to_plugin(table, &a.table);
  bp__tensor_to_plugin(indices, &a.indices);
  bp__tensor_to_plugin(y, &a.y);
  if (indices->rank == 0) bp__model_gather_scalar_index(&a);
  return bp__call_op(s, BP_OP_GATHER, &a);
}

/* ---- arange ----------------------------------------------------------------- */

bp_status_t bp_arange(bp_stream_t *sh, double start, double step, const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_arange", "stream");
  const char *op = "bp_arange";
  bp_status_t st = bp__check_tensors(s, op, 1, NT(y), NN("y"));
  if (st != BP_OK) return st;
  if (!isfinite(start) || !isfinite(step))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: start (%g) and step (%g) must be finite", op,
                    start, step);
  if ((st = bp__check_output(op, y, "y", 0, NULL, NULL, false)) ||
      (st = bp__require_op(s->device, BP_OP_ARANGE, y->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  bp_arange_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.start = start;
  a.step = step;
  bp__tensor_to_plugin(y, &a.y);
  return bp__call_op(s, BP_OP_ARANGE, &a);
}

/* ---- binary with a scalar --------------------------------------------------- */

static bp_status_t binary_scalar(bp_stream_t *sh, const char *op, bp_binary_op_t opk, double scalar,
                                 bool scalar_first, const bp_tensor_t *x, const bp_tensor_t *y) {
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, op, "stream");
  bp_status_t st = bp__check_tensors(s, op, 2, NT(x, y), NN("a", "y"));
  if (st == BP_OK) st = bp__check_float_dtypes(op, 2, NT(x, y), NN("a", "y"));
  if (st != BP_OK) return st;
  if ((unsigned)opk >= BP_BINARY_COUNT)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: op %d is not a bp_binary_op_t", op, (int)opk);
  bp_binary_scalar_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.op = opk;
  a.scalar_first = scalar_first;
  a.scalar = scalar;
  bp__tensor_to_plugin(x, &a.a);
  bp__tensor_to_plugin(y, &a.y);
  if ((st = bp__broadcast_to(&a.a, y->rank, y->shape, op, "a")) ||
      (st = bp__check_output(op, y, "y", 1, NT(x), NN("a"), true)))
    return st;
  /* A device that runs bp_binary but not this op still runs it, through a
   * one-element tensor (ops_compose.c). */
  if (!bp__device_claims(s->device, BP_OP_BINARY_SCALAR, y->dtype) &&
      bp__device_claims(s->device, BP_OP_BINARY, y->dtype))
    return bp__model_binary_scalar_composed(s, op, &a, x, y);
  if ((st = bp__require_op(s->device, BP_OP_BINARY_SCALAR, y->dtype, op))) return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  return bp__call_op(s, BP_OP_BINARY_SCALAR, &a);
}

bp_status_t bp_binary_scalar(bp_stream_t *sh, bp_binary_op_t op, const bp_tensor_t *a,
                             double scalar, const bp_tensor_t *y) {
  bp__clear_error();
  return binary_scalar(sh, "bp_binary_scalar", op, scalar, false, a, y);
}

bp_status_t bp_binary_scalar_first(bp_stream_t *sh, bp_binary_op_t op, double scalar,
                                   const bp_tensor_t *a, const bp_tensor_t *y) {
  bp__clear_error();
  return binary_scalar(sh, "bp_binary_scalar_first", op, scalar, true, a, y);
}

/* ---- GLU -------------------------------------------------------------------- */

bp_status_t bp_glu(bp_stream_t *sh, bp_glu_kind_t kind, const bp_tensor_t *gate,
                   const bp_tensor_t *up, const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_glu", "stream");
  const char *op = "bp_glu";
  bp_status_t st = bp__check_tensors(s, op, 3, NT(gate, up, y), NN("gate", "up", "y"));
  if (st == BP_OK) st = bp__check_float_dtypes(op, 3, NT(gate, up, y), NN("gate", "up", "y"));
  if (st != BP_OK) return st;
  if ((unsigned)kind >= BP_GLU_COUNT)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: kind %d is not a bp_glu_kind_t", op, (int)kind);
  bp_glu_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.kind = kind;
  bp__tensor_to_plugin(gate, &a.gate);
  bp__tensor_to_plugin(up, &a.up);
  bp__tensor_to_plugin(y, &a.y);
  if ((st = bp__broadcast_to(&a.gate, y->rank, y->shape, op, "gate")) ||
      (st = bp__broadcast_to(&a.up, y->rank, y->shape, op, "up")) ||
      (st = bp__check_output(op, y, "y", 2, NT(gate, up), NN("gate", "up"), true)) ||
      (st = bp__require_op(s->device, BP_OP_GLU, y->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  return bp__call_op(s, BP_OP_GLU, &a);
}

/* ---- RoPE ------------------------------------------------------------------- */

static bp_status_t rope_scalars(const char *op, bp_rope_mode_t mode, int32_t rotary_dim,
                                double theta_base, const bp_tensor_t *x) {
  if ((unsigned)mode >= BP_ROPE_MODE_COUNT)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: mode %d is not a bp_rope_mode_t", op, (int)mode);
  if (x->rank != 4)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: x has rank %d; expected 4 [batch, seq, heads, head_dim]", op, x->rank);
  if (rotary_dim <= 0 || rotary_dim % 2 || rotary_dim > x->shape[3])
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: rotary_dim %d must be even, positive and at most "
                    "head_dim %lld",
                    op, rotary_dim, (long long)x->shape[3]);
  if (!isfinite(theta_base) || theta_base <= 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: theta_base %g must be finite and positive", op,
                    theta_base);
  return BP_OK;
}

/* positions: i32 / i64, [batch, seq] or [seq] (broadcast over the batch). */
static bp_status_t rope_positions(const char *op, const bp_tensor_t *pos, const bp_tensor_t *x,
                                  bp_plugin_tensor_t *out) {
  if (!pos) return BP_OK; /* rank 0: pos_offset + s */
  if (!index_dtype(pos->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: positions has dtype %s; expected i32 or i64", op,
                    bp_dtype_name(pos->dtype));
  if (pos->rank != 1 && pos->rank != 2)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: positions has rank %d; expected [batch, seq] or [seq]", op, pos->rank);
  bp__tensor_to_plugin(pos, out);
  return bp__broadcast_to(out, 2, x->shape, op, "positions");
}

bp_status_t bp_rope(bp_stream_t *sh, bp_rope_mode_t mode, int32_t rotary_dim, double theta_base,
                    int64_t pos_offset, const bp_tensor_t *positions, const bp_tensor_t *x,
                    const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_rope", "stream");
  const char *op = "bp_rope";
  bp_status_t st = bp__check_tensors(s, op, 2, NT(x, y), NN("x", "y"));
  if (st == BP_OK && positions) st = bp__check_tensors(s, op, 1, NT(positions), NN("positions"));
  if (st == BP_OK) st = bp__check_float_dtypes(op, 2, NT(x, y), NN("x", "y"));
  if (st == BP_OK) st = rope_scalars(op, mode, rotary_dim, theta_base, x);
  if (st == BP_OK) st = bp__same_shape(x, y, op, "x", "y");
  if (st != BP_OK) return st;
  bp_rope_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.mode = mode;
  a.rotary_dim = rotary_dim;
  a.pos_offset = pos_offset;
  a.theta_base = theta_base;
  bp__tensor_to_plugin(x, &a.x);
  bp__tensor_to_plugin(y, &a.y);
  if ((st = rope_positions(op, positions, x, &a.positions)) ||
      (st = bp__check_output(op, y, "y", 2, NT(x, positions), NN("x", "positions"), true)) ||
      (st = bp__require_op(s->device, BP_OP_ROPE, y->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  return bp__call_op(s, BP_OP_ROPE, &a);
}
