/*
 * vkb_model.h — the model ops of ABI 1.5 in backend-vulkan.so
 * (ops_model.c; kernels/glsl/gather.comp, arange.comp, scalar.comp,
 * glu.comp, rope.comp): entry points and what a device claims of them.
 */
#ifndef BACKPLANE_VKB_MODEL_H
#define BACKPLANE_VKB_MODEL_H

#include "vkb.h"

#define VKB__DECLARE_MODEL_OP(E, name, args_t, ...)                                                \
  VKB_HIDDEN bp_status_t vkb_op_##name(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,        \
                                       const args_t *a);
BP_OP_TABLE_MODEL(VKB__DECLARE_MODEL_OP)
#undef VKB__DECLARE_MODEL_OP

/* Fills the model ops' rows of op_dtypes (the kernels built in, the
 * storage the device has; arange and RoPE need shaderFloat64) and the
 * op_features bits the kernels run (tanh-approximate GELU in eltwise). */
VKB_HIDDEN void vkb_model_claims(const vkb_caps_t *caps, uint32_t op_dtypes[BP_OP_TABLE_SIZE],
                                 uint32_t op_features[BP_OP_TABLE_SIZE]);

#endif /* BACKPLANE_VKB_MODEL_H */
