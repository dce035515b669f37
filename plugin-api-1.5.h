/*
 * plugin-api-1.5.h — the argument structs of the op families that ABI 1.5
 * added (BP_OP_TABLE_1_5 in backplane_types.h: the model ops, then the
 * quantized ops). Part of the plugin ABI: plugin-api.h includes it where
 * the older ops' structs end, and the same rules apply (docs/plugin-abi.md).
 */
#ifndef BACKPLANE_PLUGIN_API_1_5_H
#define BACKPLANE_PLUGIN_API_1_5_H

#ifndef BACKPLANE_PLUGIN_API_H
#error "include plugin-api.h, not plugin-api-1.5.h"
#endif

/* ---- argument structs of the op families of ABI 1.5 (BP_OP_TABLE_1_5) ---- */

/* Gather along axis (embedding lookup): y's shape is table's with
 * shape[axis] replaced by indices' shape (indices: i32 or i64, rank >= 1,
 * rank(table) - 1 + rank(indices) <= BP_MAX_RANK). An index outside
 * [0, table.shape[axis]) reads nothing and gives zeros (docs/ops.md). */
typedef struct bp_gather_args {
  uint32_t struct_size;
  int32_t axis;
  bp_plugin_tensor_t table, indices, y;
} bp_gather_args_t;

/* y[i] = start + i * step over y's elements in row-major order, computed
 * in double and converted to y's dtype like a cast. */
typedef struct bp_arange_args {
  uint32_t struct_size;
  uint32_t reserved;
  double start, step;
  bp_plugin_tensor_t y;
} bp_arange_args_t;

/* y = a op scalar, or scalar op a when scalar_first; a and y have y's
 * shape (a may broadcast by stride 0). The scalar is converted to a's
 * dtype first, as a one-element tensor of that dtype would hold it. */
typedef struct bp_binary_scalar_args {
  uint32_t struct_size;
  bp_binary_op_t op;
  int32_t scalar_first;
  uint32_t reserved;
  double scalar;
  bp_plugin_tensor_t a, y;
} bp_binary_scalar_args_t;

/* Gated linear unit: y = act(gate) * up, elementwise over y's shape
 * (bp_glu_kind_t names act). A packed [.., 2n] input is two views. */
typedef struct bp_glu_args {
  uint32_t struct_size;
  bp_glu_kind_t kind;
  bp_plugin_tensor_t gate, up, y;
} bp_glu_args_t;

/* Rotary position embedding. x and y: rank 4 [batch, seq, heads,
 * head_dim] (other layouts by strides; y may be x). The first rotary_dim
 * (even, <= head_dim) features rotate, the rest are copied. Token (b, s)
 * has position positions[b, s] (i32 or i64, [batch, seq] or [seq] by
 * stride 0), or pos_offset + s when positions is rank 0. Pair i rotates by
 * position * theta_base^(-2i / rotary_dim); bp_rope_mode_t says which two
 * features form pair i. */
typedef struct bp_rope_args {
  uint32_t struct_size;
  bp_rope_mode_t mode;
  int32_t rotary_dim;
  uint32_t reserved;
  int64_t pos_offset;
  double theta_base;
  bp_plugin_tensor_t x, positions, y;
} bp_rope_args_t;

/* ---- quantized ops (BP_OP_TABLE_QUANT; layouts and rounding: docs/ops.md,
 * "Quantized types"). A block dtype's tensor (BP_Q8_0, BP_Q4_0) has its
 * shape and strides in weights: the last dim is contiguous (stride 1) and a
 * multiple of BP_QUANT_BLOCK, every other stride a non-negative multiple of
 * it; weight i lives in block i / 32, at byte offset + (i / 32) * block
 * bytes (bp_dtype_size). ---- */

/* quantize: x (f32/f16/bf16) -> y of the same shape. y BP_Q8_0 / BP_Q4_0:
 * each block's scale from its own weights (ggml's reference rounding);
 * scale is rank 0. y BP_I8 / BP_U8: y = saturate(rne(x / scale)) to
 * [-128, 127] / [0, 255], scale f32 broadcast to y's shape (one per
 * tensor, row, ...).
 * dequantize: x quantized (BP_Q8_0 / BP_Q4_0 / BP_I8 / BP_U8 with scale as
 * above) -> y (f32/f16/bf16) = q * scale. The op's dtype (op_dtypes) is the
 * quantized side's: a device gets u8 only if it claims BP_U8. */
typedef struct bp_quantize_args {
  uint32_t struct_size;
  uint32_t reserved;
  bp_plugin_tensor_t x, scale, y;
} bp_quantize_args_t;

/* int8 GEMM: acc[i, j] = sum_l a[i, l] * b[l, j] in int32 (exact; wraps
 * modulo 2^32 past k = 2^17), a [m, k] and b [k, n] each BP_I8 or BP_U8
 * (ABI 1.5: read a.dtype and b.dtype; the op's claim is BP_I8, and a call
 * with a u8 operand reaches only a device that also claims BP_U8 for
 * BP_OP_QGEMM, which then takes any of the four pairs) with any strides,
 * c [m, n]; rank 3 batches by the first dim (b may be rank 2: shared).
 * c BP_I32: c = acc, scales rank 0. c BP_F32: c = (float)acc * sa_i * sb_j.
 * c BP_I8: c = saturate(rne((float)acc * sa_i * sb_j / out_scale)). sa is
 * f32 broadcast to [m] (per tensor or per row), sb f32 broadcast to [n] (per
 * tensor or per column); a rank-0 scale is 1. float arithmetic in that
 * order, without fused multiply-adds.
 * fp8 (ABI 1.5): a and b both BP_FP8_E4M3 / BP_FP8_E5M2 (any mix, never
 * with i8 / u8), acc in f32 (each fp8 product is exact in f32; any
 * summation order), c BP_F32 / BP_F16 / BP_BF16 = (float)acc * sa_i * sb_j
 * in f32, rounded once to c's dtype; out_scale is 1 (ignored). Such a call
 * reaches only a device that claims a's and b's fp8 dtypes for
 * BP_OP_QGEMM (not i8); the tolerance is docs/ops.md's. */
typedef struct bp_qgemm_args {
  uint32_t struct_size;
  float out_scale;
  bp_plugin_tensor_t a, b, scale_a, scale_b, c;
} bp_qgemm_args_t;

/* GEMM / GEMV with block-quantized weights: y[i, j] = sum_l a[i, l] *
 * w[j, l], a [m, k] f32/f16/bf16, w [n, k] BP_Q8_0 / BP_Q4_0 (ggml's row
 * layout), y [m, n] in a's dtype; rank 3 a and y batch by the first dim (w
 * shared). m = 1 is the GEMV. Weights are dequantized on the fly; the sum
 * is within the tolerance of docs/ops.md of the exact one. The op's dtype
 * is w's. */
typedef struct bp_qmatmul_args {
  uint32_t struct_size;
  uint32_t reserved;
  bp_plugin_tensor_t a, w, y;
} bp_qmatmul_args_t;

#endif /* BACKPLANE_PLUGIN_API_1_5_H */
