/*
 * backplane_model.h — the ops a transformer model needs beyond the basic
 * families: gather (embedding lookup), arange, binary ops with a scalar
 * operand, gated linear units, rotary position embedding, and the core
 * composites concat and KV-cache append, with the narrowing view that
 * splits a tensor. Part of the public API (included by backplane.h;
 * include backplane.h). Semantics in docs/ops.md.
 */
#ifndef BACKPLANE_MODEL_H
#define BACKPLANE_MODEL_H

#include "backplane.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A view of elements [start, start + length) of tensor along axis (same
 * buffer, no copy): how a packed QKV row, a cache prefix or a concat's
 * slot is addressed. Splitting a tensor is one narrow per part. */
BP_API bp_status_t bp_tensor_narrow(const bp_tensor_t *tensor, int32_t axis, int64_t start,
                                    int64_t length, bp_tensor_t *out_tensor);

/* Gather along axis (embedding lookup): y = table with axis indexed by
 * indices, so y's shape is table's with shape[axis] replaced by indices'
 * shape (indices i32 or i64, any rank; rank 0 removes the axis). Any table
 * dtype. An index outside [0, table.shape[axis]) gives zeros. */
BP_API bp_status_t bp_gather(bp_stream_t *stream, const bp_tensor_t *table,
                             const bp_tensor_t *indices, int32_t axis, const bp_tensor_t *y);

/* y[i] = start + i * step over y's elements in row-major order, computed
 * in double and converted to y's dtype like bp_cast. Any dtype. */
BP_API bp_status_t bp_arange(bp_stream_t *stream, double start, double step, const bp_tensor_t *y);

/* y = a op scalar (bp_binary_scalar) or y = scalar op a
 * (bp_binary_scalar_first), a broadcast to y's shape. The scalar is first
 * converted to a's dtype, as a one-element tensor of that dtype would hold
 * it. On a device that runs bp_binary but not this op, the core runs
 * bp_binary with a one-element tensor (not while the stream captures). */
BP_API bp_status_t bp_binary_scalar(bp_stream_t *stream, bp_binary_op_t op, const bp_tensor_t *a,
                                    double scalar, const bp_tensor_t *y);
BP_API bp_status_t bp_binary_scalar_first(bp_stream_t *stream, bp_binary_op_t op, double scalar,
                                          const bp_tensor_t *a, const bp_tensor_t *y);

/* Gated linear unit: y = act(gate) * up elementwise, gate and up broadcast
 * to y's shape (a packed [.., 2n] projection is two bp_tensor_narrow
 * views). kind: SwiGLU (silu), GeGLU (exact or tanh gelu), ReGLU (relu). */
BP_API bp_status_t bp_glu(bp_stream_t *stream, bp_glu_kind_t kind, const bp_tensor_t *gate,
                          const bp_tensor_t *up, const bp_tensor_t *y);

/* Rotary position embedding on x, [batch, seq, heads, head_dim] (any
 * strides; y may be x). The first rotary_dim features (even, at most
 * head_dim) rotate in pairs, the rest are copied; pair i of token (b, s)
 * turns by angle pos * theta_base^(-2i / rotary_dim), pos being
 * positions[b, s] (i32 or i64, [batch, seq] or [seq]) or, when positions
 * is NULL, pos_offset + s. mode says which features pair up. */
BP_API bp_status_t bp_rope(bp_stream_t *stream, bp_rope_mode_t mode, int32_t rotary_dim,
                           double theta_base, int64_t pos_offset, const bp_tensor_t *positions,
                           const bp_tensor_t *x, const bp_tensor_t *y);

/* Concatenates count tensors (an array of count bp_tensor_t, one dtype and
 * rank, equal shapes but along axis) into y along axis: one bp_copy per
 * input into its slot of y, so it runs on every device and is captured by
 * a graph. y must not overlap an input. */
BP_API bp_status_t bp_concat(bp_stream_t *stream, uint32_t count, const bp_tensor_t *inputs,
                             int32_t axis, const bp_tensor_t *y);

/* KV-cache append: copies fresh into cache[..., position : position + n,
 * ...] along seq_axis (n = fresh's extent there; every other extent equal
 * to cache's). A bp_copy into a narrowed view, so it is captured by a
 * graph (with this position). */
BP_API bp_status_t bp_kv_append(bp_stream_t *stream, const bp_tensor_t *cache,
                                const bp_tensor_t *fresh, int32_t seq_axis, int64_t position);

#ifdef __cplusplus
}
#endif

#endif /* BACKPLANE_MODEL_H */
