/*
 * ocl_quant.h — the quantized ops of ABI 1.5 in backend-opencl.so
 * (ops_quant.c, kernels/opencl/quant.cl): quantize, dequantize, the int8
 * GEMM and the GEMM / GEMV with block-quantized weights, the casts to and
 * from i8 and fp8, and what a device claims of them.
 */
#ifndef BACKPLANE_OCL_QUANT_H
#define BACKPLANE_OCL_QUANT_H

#include "ocl.h"

#define OCL__DECL_QUANT(E, op, args_t, ...)                                                        \
  bp_status_t ocl_op_##op(bp_plugin_device_t *, bp_plugin_stream_t *, const args_t *);
BP_OP_TABLE_QUANT(OCL__DECL_QUANT)
#undef OCL__DECL_QUANT

/* Fills the quantized ops' rows of the capability table and adds i8 and
 * fp8 to copy and cast (fp8 casts where the device has fp64, which their
 * one rounding from the source value needs) and the saturating fp8 cast to
 * op_features, for a device whose other rows ocl_op_dtypes filled. */
void ocl_quant_claims(const ocl_caps_t *caps, uint32_t *op_dtypes, uint32_t *op_features);

/* Takes quant.cl's kernel `name` built for float dtype dt (DT) with the
 * extra defines defs; caller holds d->lock. */
bp_status_t ocl_quant_kernel(ocl_device_t *d, bp_dtype_t dt, const char *defs, const char *name,
                             ocl_args_t *a);

/* True when a cast from or to dt goes through ocl_quant_cast. */
bool ocl_quant_cast_dtype(bp_dtype_t dt);
/* Casts x to y where either is i8 or fp8 (quant.cl's qcast). */
bp_status_t ocl_quant_cast(ocl_device_t *d, bp_plugin_stream_t *stream, const bp_copy_args_t *args);

#endif /* BACKPLANE_OCL_QUANT_H */
