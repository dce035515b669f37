/*
 * ops_conv_dw.c — depthwise conv2d (one input channel per group, any
 * channel multiplier) on kernels/opencl/conv.cl's conv2d_dw: each item a
 * vector of output pixels along a row. The implicit-GEMM kernel would give
 * each one-filter group a tile of mostly padding items, and im2col + GEMM a
 * one-row GEMM per channel.
 */
#include "ocl.h"

/* Output pixels per item along a row (conv.cl's DW_TILE). */
#define DW_TILE 16

static bool is_depthwise(const bp_conv2d_args_t *args) {
  int64_t c_in = args->x.shape[1], k_out = args->w.shape[0];
  return args->groups > 1 && args->groups == c_in && k_out % c_in == 0 && args->w.shape[1] == 1;
}

bp_status_t ocl_conv2d_depthwise(ocl_device_t *d, cl_command_queue q, const bp_conv2d_args_t *args) {
  if (!is_depthwise(args)) return BP_ERR_UNSUPPORTED;
  const bp_plugin_tensor_t *x = &args->x, *w = &args->w, *y = &args->y;
  char opts[64];
  ocl_dtype_options(d, x->dtype, opts, sizeof opts);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_CONV, opts, "conv2d_dw", &a.k);
  if (st != BP_OK) return st;
  cl_int has_bias = args->bias.rank > 0;
  cl_long bst = has_bias ? args->bias.strides[0] : 0;
  ocl_arg_buf(&a, x->ptr, x->offset);
  ocl_arg_strides4(&a, x);
  ocl_arg_buf(&a, w->ptr, w->offset);
  ocl_arg_strides4(&a, w);
  ocl_arg_buf(&a, has_bias ? args->bias.ptr : x->ptr, has_bias ? args->bias.offset : x->offset);
  OCL_ARG(&a, bst);
  OCL_ARG(&a, has_bias);
  ocl_arg_buf(&a, y->ptr, y->offset);
  ocl_arg_strides4(&a, y);
  cl_int v[13] = {(cl_int)x->shape[1], (cl_int)x->shape[2], (cl_int)x->shape[3],
                  (cl_int)w->shape[0], (cl_int)w->shape[2], (cl_int)w->shape[3],
                  (cl_int)y->shape[3], args->stride_h,      args->stride_w,
                  args->pad_h,         args->pad_w,         args->dilation_h,
                  args->dilation_w};
  for (int i = 0; i < 13; i++) OCL_ARG(&a, v[i]);
  size_t gws[3] = {((size_t)y->shape[3] + DW_TILE - 1) / DW_TILE, (size_t)y->shape[2],
                   (size_t)(y->shape[0] * y->shape[1])};
  return ocl_enqueue(q, &a, 3, gws, NULL);
}
