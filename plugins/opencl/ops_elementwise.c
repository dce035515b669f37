/*
 * ops_elementwise.c — unary and binary ops (kernels/opencl/elementwise.cl).
 * Shapes are collapsed first (ocl_layout_make), so contiguous tensors run as
 * one flat loop without per-element index arithmetic.
 */
#include "ocl.h"

bp_status_t ocl_op_unary(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                         const bp_unary_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  const bp_plugin_tensor_t *ts[2] = {x, y};
  ocl_layout_t l;
  ocl_layout_make(ts, 2, y->shape, y->rank, &l);
  if (l.numel == 0) return BP_OK;
  char opts[64];
  ocl_dtype_options(d, y->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_ELEMENTWISE, opts, "unary", &a.k);
  if (st == BP_OK) {
    cl_int op = (cl_int)args->op, rank = l.rank;
    cl_long n = l.numel;
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    OCL_ARG(&a, op);
    OCL_ARG(&a, rank);
    OCL_ARG(&a, n);
    ocl_arg(&a, sizeof(cl_long8), l.shape);
    ocl_arg(&a, sizeof(cl_long8), l.strides[0]);
    ocl_arg(&a, sizeof(cl_long8), l.strides[1]);
    st = ocl_launch_flat(d, stream, &a, l.numel);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

bp_status_t ocl_op_binary(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_binary_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *ta = &args->a, *tb = &args->b, *y = &args->y;
  const bp_plugin_tensor_t *ts[3] = {ta, tb, y};
  ocl_layout_t l;
  ocl_layout_make(ts, 3, y->shape, y->rank, &l);
  if (l.numel == 0) return BP_OK;
  char opts[64];
  ocl_dtype_options(d, y->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_ELEMENTWISE, opts, "binary", &a.k);
  if (st == BP_OK) {
    cl_int op = (cl_int)args->op, rank = l.rank;
    cl_long n = l.numel;
    ocl_arg_buf(&a, ta->ptr, ta->offset);
    ocl_arg_buf(&a, tb->ptr, tb->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    OCL_ARG(&a, op);
    OCL_ARG(&a, rank);
    OCL_ARG(&a, n);
    ocl_arg(&a, sizeof(cl_long8), l.shape);
    for (int i = 0; i < 3; i++) ocl_arg(&a, sizeof(cl_long8), l.strides[i]);
    st = ocl_launch_flat(d, stream, &a, l.numel);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}
