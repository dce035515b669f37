/*
 * backplane_quant.h — quantized compute (ABI 1.5): int8, fp8 and the
 * block-quantized weight formats BP_Q8_0 / BP_Q4_0 (ggml's Q8_0 / Q4_0
 * blocks, byte for byte). Part of the public API (included by backplane.h;
 * include backplane.h). Layouts, rounding and tolerances in docs/ops.md,
 * "Quantized types".
 *
 * A block dtype's tensor counts weights in its shape and strides: the last
 * dim is contiguous and a multiple of BP_QUANT_BLOCK (32), every other
 * stride a non-negative multiple of 32. bp_dtype_size gives one block's
 * bytes (34 for q8_0, 18 for q4_0); bp_quant_bytes a tensor's.
 */
#ifndef BACKPLANE_QUANT_H
#define BACKPLANE_QUANT_H

#include "backplane.h"

#ifdef __cplusplus
extern "C" {
#endif

/* bp_cast with BP_CAST_* flags (backplane_types.h; 0: exactly bp_cast).
 * BP_CAST_SATURATE: y is fp8 and values beyond its largest finite value
 * (448 for e4m3, 57344 for e5m2), infinities included, become that value
 * with their sign (NaN stays NaN) instead of the OCP non-saturating mode's
 * NaN (e4m3) or infinity (e5m2). A flag the device
 * does not run is refused like an unclaimed dtype (fallback may run the
 * cast elsewhere, else BP_ERR_UNSUPPORTED); an unknown flag, or
 * BP_CAST_SATURATE with a y that is not fp8, is BP_ERR_INVALID_ARGUMENT.
 * Thread-safe like every op. */
BP_API bp_status_t bp_cast_ex(bp_stream_t *stream, const bp_tensor_t *x, const bp_tensor_t *y,
                              uint32_t flags);

/* Bytes that `count` contiguous elements of dtype occupy (whole blocks for
 * a block dtype: count must then be a multiple of 32). 0 on bad input. */
BP_API uint64_t bp_quant_bytes(bp_dtype_t dtype, uint64_t count);

/* x (f32/f16/bf16) into y of x's shape. y q8_0 / q4_0: one f16 scale per
 * block from its own weights (ggml's reference rounding); scale NULL.
 * y i8 / u8: y = saturate(rne(x / scale)) to [-128, 127] / [0, 255], scale
 * f32 broadcastable to y's shape (a single value, one per row, ...); NaN
 * gives 0. u8 runs on a device that claims u8 for BP_OP_QUANTIZE. */
BP_API bp_status_t bp_quantize(bp_stream_t *stream, const bp_tensor_t *x,
                               const bp_tensor_t *scale, const bp_tensor_t *y);

/* x (q8_0 / q4_0, scale NULL; or i8 / u8 with scale as for bp_quantize) into y
 * (f32/f16/bf16) of x's shape: y = q * scale, rounded once to y's dtype.
 * x u8 likewise (q in [0, 255]), on a device that claims u8 for
 * BP_OP_DEQUANTIZE. */
BP_API bp_status_t bp_dequantize(bp_stream_t *stream, const bp_tensor_t *x,
                                 const bp_tensor_t *scale, const bp_tensor_t *y);

/* int8 / fp8 GEMM. int8: acc = a x b in int32 (exact, wrapping modulo 2^32), a [m, k]
 * and b [k, n] each i8 or u8 (all four pairs; u8 x i8 is oneDNN's
 * u8s8s32, MKL's s8u8s32 called row-major) of any strides (transposes are
 * views), c [m, n]; rank 3 a and c batch by the first dim (b rank 2 is
 * shared, or rank 3 of the same batch). A u8 operand needs a device that
 * claims u8 for BP_OP_QGEMM besides i8 (else fallback runs it elsewhere or
 * BP_ERR_UNSUPPORTED says so); any other dtype is BP_ERR_INVALID_ARGUMENT.
 *   c i32: c = acc; scale_a, scale_b NULL, out_scale ignored.
 *   c f32: c = (float)acc * sa[i] * sb[j].
 *   c i8:  c = saturate(rne((float)acc * sa[i] * sb[j] / out_scale)).
 * scale_a: f32 [m] or one value (NULL = 1); scale_b: f32 [n] or one value
 * (NULL = 1). out_scale must be finite and > 0 for an i8 c.
 * fp8 GEMM: a and b both fp8 (e4m3 or e5m2, any mix; never with i8 / u8),
 * acc = a x b accumulated in f32 (each product exact, the summation order
 * the device's; NaN / inf propagate as IEEE arithmetic gives), c f32, f16
 * or bf16: c = (float)acc * sa[i] * sb[j] in f32, rounded once to c's
 * dtype; out_scale ignored. Needs a device that claims a's and b's fp8
 * dtypes for BP_OP_QGEMM. Tolerance in docs/ops.md. */
BP_API bp_status_t bp_qgemm(bp_stream_t *stream, const bp_tensor_t *a, const bp_tensor_t *b,
                            const bp_tensor_t *scale_a, const bp_tensor_t *scale_b,
                            float out_scale, const bp_tensor_t *c);

/* y = a x w^T with block-quantized weights: a [m, k] f32/f16/bf16, w
 * [n, k] q8_0 / q4_0 (one row per output feature, as ggml stores them),
 * y [m, n] in a's dtype; rank 3 a and y batch by the first dim, w shared.
 * m = 1 is the GEMV of token generation. Weights are dequantized on the
 * fly (no dequantized copy). */
BP_API bp_status_t bp_qmatmul(bp_stream_t *stream, const bp_tensor_t *a, const bp_tensor_t *w,
                              const bp_tensor_t *y);

#ifdef __cplusplus
}
#endif

#endif /* BACKPLANE_QUANT_H */
