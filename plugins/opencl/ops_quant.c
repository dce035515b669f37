/*
 * ops_quant.c — the quantized ops of ABI 1.5 that move and convert
 * (kernels/opencl/quant.cl): quantize and dequantize (q8_0 / q4_0 a block
 * per work-item, i8 / u8 with f32 scales elementwise), the casts to and from i8
 * and fp8, and the device's claims. The two GEMMs are in
 * ops_quant_gemm.c.
 */
#include <stdio.h>
#include <string.h>

#include "ocl_quant.h"

void ocl_quant_claims(const ocl_caps_t *caps, uint32_t *t, uint32_t *features) {
  const uint32_t eight = BP_DTYPE_BIT(BP_I8) | BP_DTYPE_BIT(BP_U8);
  t[BP_OP_QUANTIZE] = eight | BP_DTYPES_BLOCK;
  t[BP_OP_DEQUANTIZE] = eight | BP_DTYPES_BLOCK;
  /* a and b each i8 or u8 (quant.cl's AU, BU), or both fp8 (FA, FB) */
  t[BP_OP_QGEMM] = eight | BP_DTYPES_FP8;
  t[BP_OP_QMATMUL] = BP_DTYPES_BLOCK;
  /* copy moves bytes; casts to fp8 round once from the source's double
   * value, so they need the device's doubles */
  t[BP_OP_COPY] |= BP_DTYPE_BIT(BP_I8) | BP_DTYPES_FP8;
  t[BP_OP_CAST] |= BP_DTYPE_BIT(BP_I8) | (caps->fp64 ? BP_DTYPES_FP8 : 0);
  features[BP_OP_CAST] |= BP_FEATURE_CAST_SATURATE; /* qcast's sat */
}

bp_status_t ocl_quant_kernel(ocl_device_t *d, bp_dtype_t dt, const char *defs, const char *name,
                             ocl_args_t *a) {
  char opts[192];
  ocl_dtype_options(d, dt, opts, sizeof opts);
  size_t len = strlen(opts);
  /* quant.cl's divisions must round as the CPU's do (OpenCL allows 2.5
   * ulp without this option) */
  snprintf(opts + len, sizeof opts - len, " %s -cl-fp32-correctly-rounded-divide-sqrt", defs);
  memset(a, 0, sizeof *a);
  return ocl_kernel_get(d, OCL_FAM_QUANT, opts, name, &a->k);
}

/* ---- q8_0 / q4_0 --------------------------------------------------------- */

/* f: the float side; q: the block side. A work-item per (block, row). */
static bp_status_t block_rows(ocl_device_t *d, bp_plugin_stream_t *stream,
                              const bp_quantize_args_t *args, bool to_block) {
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  const bp_plugin_tensor_t *f = to_block ? x : y, *q = to_block ? y : x;
  int last = q->rank - 1;
  ocl_layout_t l;
  ocl_rows_make(x, y, last, &l);
  int64_t len = q->shape[last];
  size_t gws[2] = {(size_t)(len / BP_QUANT_BLOCK), (size_t)l.numel};
  char defs[32];
  snprintf(defs, sizeof defs, "-DQDT=%d", (int)q->dtype);
  ocl_args_t a;
  pthread_mutex_lock(&d->lock);
  bp_status_t st =
      ocl_quant_kernel(d, f->dtype, defs, to_block ? "quantize_block" : "dequantize_block", &a);
  if (st == BP_OK) {
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    ocl_arg_rows(&a, &l, len, x->strides[last], y->strides[last]);
    st = ocl_enqueue(ocl_queue(d, stream), &a, 2, gws, NULL);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* ---- i8 / u8 with scales ------------------------------------------------- */

static bp_status_t i8_elements(ocl_device_t *d, bp_plugin_stream_t *stream,
                               const bp_quantize_args_t *args, bool to_i8) {
  const bp_plugin_tensor_t *x = &args->x, *s = &args->scale, *y = &args->y;
  const bp_plugin_tensor_t *ts[3] = {x, s, y};
  ocl_layout_t l;
  ocl_layout_make(ts, 3, y->shape, y->rank, &l);
  if (l.numel == 0) return BP_OK;
  ocl_args_t a;
  pthread_mutex_lock(&d->lock);
  const bool u8 = (to_i8 ? y : x)->dtype == BP_U8;
  bp_status_t st = ocl_quant_kernel(d, to_i8 ? x->dtype : y->dtype, u8 ? "-DI8Q -DQU8" : "-DI8Q",
                                    to_i8 ? "quantize_i8" : "dequantize_i8", &a);
  if (st == BP_OK) {
    cl_int rank = l.rank;
    cl_long n = l.numel;
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_buf(&a, s->ptr, s->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    OCL_ARG(&a, rank);
    OCL_ARG(&a, n);
    ocl_arg(&a, sizeof(cl_long8), l.shape);
    for (int i = 0; i < 3; i++) ocl_arg(&a, sizeof(cl_long8), l.strides[i]);
    st = ocl_launch_flat(d, stream, &a, l.numel);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

bp_status_t ocl_op_quantize(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                            const bp_quantize_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  if (args->y.dtype == BP_I8 || args->y.dtype == BP_U8) return i8_elements(d, stream, args, true);
  return block_rows(d, stream, args, true);
}

bp_status_t ocl_op_dequantize(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                              const bp_quantize_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  if (args->x.dtype == BP_I8 || args->x.dtype == BP_U8) return i8_elements(d, stream, args, false);
  return block_rows(d, stream, args, false);
}

/* ---- casts to and from i8 and fp8 ---------------------------------------- */

bool ocl_quant_cast_dtype(bp_dtype_t dt) {
  return dt == BP_I8 || dt == BP_FP8_E4M3 || dt == BP_FP8_E5M2;
}

bp_status_t ocl_quant_cast(ocl_device_t *d, bp_plugin_stream_t *stream,
                           const bp_copy_args_t *args) {
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  const bp_plugin_tensor_t *ts[2] = {x, y};
  ocl_layout_t l;
  ocl_layout_make(ts, 2, y->shape, y->rank, &l);
  if (l.numel == 0) return BP_OK;
  char opts[96];
  snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DQCAST -DSRC=%d -DDST=%d", (int)x->dtype,
           (int)y->dtype);
  ocl_args_t a = {0};
  pthread_mutex_lock(&d->lock);
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_QUANT, opts, "qcast", &a.k);
  if (st == BP_OK) {
    cl_int rank = l.rank;
    cl_long n = l.numel;
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    OCL_ARG(&a, rank);
    OCL_ARG(&a, n);
    ocl_arg(&a, sizeof(cl_long8), l.shape);
    ocl_arg(&a, sizeof(cl_long8), l.strides[0]);
    ocl_arg(&a, sizeof(cl_long8), l.strides[1]);
    cl_int sat = (args->cast_flags & BP_CAST_SATURATE) != 0;
    OCL_ARG(&a, sat);
    st = ocl_launch_flat(d, stream, &a, l.numel);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}
