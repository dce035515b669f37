/*
 * vkb_quant.h — the quantized ops of ABI 1.5 in backend-vulkan.so
 * (ops_quant.c; kernels/glsl/quantize.comp, quantdeq.comp, quantpack.comp,
 * quantgemm.comp, quantmv.comp, quantmm.comp with quant.inc): entry points
 * and what a device claims of them.
 */
#ifndef BACKPLANE_VKB_QUANT_H
#define BACKPLANE_VKB_QUANT_H

#include "vkb.h"

#define VKB__DECLARE_QUANT_OP(E, name, args_t, ...)                                                \
  VKB_HIDDEN bp_status_t vkb_op_##name(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,        \
                                       const args_t *a);
BP_OP_TABLE_QUANT(VKB__DECLARE_QUANT_OP)
#undef VKB__DECLARE_QUANT_OP

/* Fills the quantized ops' rows of op_dtypes from the kernels built in and
 * the device's features: every op needs 16-bit storage (f16/bf16 operands,
 * block scales); quantize and qgemm also shaderFloat64 (their divisions
 * are rounded in double to the correctly rounded f32 quotient). Also adds
 * i8 and the fp8 dtypes to copy, which moves them as bytes, where u8
 * copies, and to cast where the device has 8-bit storage and cast.comp's
 * kernels for every pair, with the saturating fp8 mode
 * (BP_FEATURE_CAST_SATURATE). */
VKB_HIDDEN void vkb_quant_claims(const vkb_caps_t *caps, uint32_t op_dtypes[BP_OP_TABLE_SIZE],
                                 uint32_t op_features[BP_OP_TABLE_SIZE]);

#endif /* BACKPLANE_VKB_QUANT_H */
