/*
 * bp_model_args.h — the parameter blocks of the model kernels of ABI 1.5
 * (kernels/cuda/model.cu, kernels/hip/model.hip): gather, arange, binary
 * with a scalar, GLU and RoPE. The same rules as bp_cuda_args.h: one
 * definition compiled by nvcc, by gcc into the plugins and into the test
 * shim, fixed-width fields at natural alignment with explicit padding.
 */
#ifndef BP_MODEL_ARGS_H
#define BP_MODEL_ARGS_H

#include "bp_cuda_args.h"

/* bp_gather: y[i] = table element k along the axis, k = idx[i] (i32 or
 * i64, idx.dtype), zeros for k outside [0, axis_len). tbl and idx have y's
 * shape: tbl's strides are 0 along y's index dims, idx's 0 along the
 * others; tbl.ptr is the table's element 0. Moves elem_size bytes raw. */
typedef struct bpk_gather_args {
  bpk_tensor_t y, tbl, idx;
  int64_t n, axis_len, axis_stride;
  int32_t elem_size;
  int32_t pad_;
} bpk_gather_args_t;

/* bp_arange: y's i-th element (row-major) = start + i * step in double,
 * stored as y.dtype (floats rounded once, integers as bp_cast: NaN 0,
 * halves to even, saturating). */
typedef struct bpk_arange_args {
  bpk_tensor_t y;
  int64_t n;
  double start, step;
} bpk_arange_args_t;

/* bp_binary_scalar_{f,d}: y = a op scalar, or scalar op a when first; the
 * host already rounded scalar to a's dtype. */
typedef struct bpk_binary_scalar_args {
  bpk_tensor_t a, y;
  int64_t n;
  double scalar;
  int32_t op;
  int32_t first;
} bpk_binary_scalar_args_t;

/* bp_glu_{f,d}: y = act(gate) * up, kind as bp_glu_kind_t. */
typedef struct bpk_glu_args {
  bpk_tensor_t gate, up, y;
  int64_t n;
  int32_t kind;
  int32_t pad_;
} bpk_glu_args_t;

/* bp_rope_{f,d}: x and y rank 4 [batch, seq, heads, head_dim]. n items:
 * per (b, s, h) row, rotary_dim / 2 pairs then head_dim - rotary_dim
 * copied features. Position: pos[b * pos_s0 + s * pos_s1] (pos_dtype i32
 * or i64), or pos_offset + s when pos is 0. Angles in double. */
typedef struct bpk_rope_args {
  bpk_tensor_t x, y;
  uint64_t pos;
  int64_t pos_s0, pos_s1, pos_offset;
  double theta;
  int64_t n;
  int32_t pos_dtype;
  int32_t interleaved;
  int32_t rotary_dim;
  int32_t pad_;
} bpk_rope_args_t;

#endif /* BP_MODEL_ARGS_H */
