/*
 * ocl_model.h — the model ops of ABI 1.5 in backend-opencl.so
 * (ops_model.c, kernels/opencl/model.cl): gather, arange, binary with a
 * scalar, GLU and RoPE, and what a device claims of them.
 */
#ifndef BACKPLANE_OCL_MODEL_H
#define BACKPLANE_OCL_MODEL_H

#include "ocl.h"

#define OCL__DECL_MODEL(E, op, args_t, ...)                                                        \
  bp_status_t ocl_op_##op(bp_plugin_device_t *, bp_plugin_stream_t *, const args_t *);
BP_OP_TABLE_MODEL(OCL__DECL_MODEL)
#undef OCL__DECL_MODEL

/* Fills the model ops' rows of the capability table and op_features
 * (BP_FEATURE_UNARY_GELU_TANH, elementwise.cl runs it) for a device whose
 * other rows ocl_op_dtypes filled. */
void ocl_model_claims(const ocl_caps_t *caps, uint32_t *op_dtypes, uint32_t *op_features);

#endif /* BACKPLANE_OCL_MODEL_H */
