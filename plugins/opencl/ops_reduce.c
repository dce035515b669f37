/*
 * ops_reduce.c — reductions, softmax, layer norm and RMS norm: every op
 * that walks lines of a tensor (kernels/opencl/reduce.cl, softmax.cl,
 * norm.cl). Lines get a work-group each (BP_WG = 64 items) unless they are
 * short, where a reduction gives each line one work-item instead.
 */
#include "ocl.h"

#define OCL_WG 64
/* Lines shorter than this reduce in one work-item: a work-group would sit
 * mostly idle. */
#define REDUCE_ITEM_MAX_LEN 256

static bp_status_t launch_rows(ocl_device_t *d, bp_plugin_stream_t *stream,
                               ocl_args_t *a, int64_t nrows, bool per_item) {
  size_t lws = OCL_WG;
  size_t gws = per_item ? ocl_round_up((size_t)nrows, lws) : (size_t)nrows * lws;
  return ocl_enqueue(ocl_queue(d, stream), a, 1, &gws, &lws);
}

bp_status_t ocl_op_reduce(bp_plugin_device_t *device,
                          bp_plugin_stream_t *stream,
                          const bp_reduce_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  ocl_layout_t l;
  ocl_rows_make(x, y, args->axis, &l);
  if (l.numel == 0)
    return BP_OK;
  int64_t len = x->shape[args->axis];
  bool per_item = len < REDUCE_ITEM_MAX_LEN;
  char opts[64];
  ocl_dtype_options(d, x->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_REDUCE, opts,
                                  per_item ? "reduce_item" : "reduce_wg", &a.k);
  if (st == BP_OK) {
    cl_int op = (cl_int)args->op, y_i64 = y->dtype == BP_I64;
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    ocl_arg_rows(&a, &l, len, x->strides[args->axis], 0);
    OCL_ARG(&a, op);
    OCL_ARG(&a, y_i64);
    st = launch_rows(d, stream, &a, l.numel, per_item);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

bp_status_t ocl_op_softmax(bp_plugin_device_t *device,
                           bp_plugin_stream_t *stream,
                           const bp_softmax_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  int axis = args->axis < 0 ? args->axis + x->rank : args->axis;
  ocl_layout_t l;
  ocl_rows_make(x, y, axis, &l);
  int64_t len = x->shape[axis];
  if (l.numel == 0 || len == 0)
    return BP_OK;
  char opts[64];
  ocl_dtype_options(d, x->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_SOFTMAX, opts, "softmax", &a.k);
  if (st == BP_OK) {
    cl_int log_out = args->log != 0;
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    ocl_arg_rows(&a, &l, len, x->strides[axis], y->strides[axis]);
    OCL_ARG(&a, log_out);
    st = launch_rows(d, stream, &a, l.numel, false);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* An optional [last] vector: (buffer, offset, stride, present). A rank-0
 * tensor means absent; the kernel then never reads the buffer, but OpenCL
 * still needs a valid cl_mem there, so x's stands in. */
static void arg_optional(ocl_args_t *a, const bp_plugin_tensor_t *t,
                         const bp_plugin_tensor_t *x) {
  cl_int present = t->rank > 0;
  cl_long stride = present ? t->strides[0] : 0;
  ocl_arg_buf(a, present ? t->ptr : x->ptr, present ? t->offset : x->offset);
  OCL_ARG(a, stride);
  OCL_ARG(a, present);
}

static bp_status_t norm(ocl_device_t *d, bp_plugin_stream_t *stream,
                        const bp_norm_args_t *args, bool rms) {
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  int axis = x->rank - 1;
  ocl_layout_t l;
  ocl_rows_make(x, y, axis, &l);
  int64_t len = x->shape[axis];
  if (l.numel == 0 || len == 0)
    return BP_OK;
  char opts[64];
  ocl_dtype_options(d, x->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_NORM, opts, "layer_norm", &a.k);
  if (st == BP_OK) {
    bp_plugin_tensor_t none = {0};
    cl_int is_rms = rms;
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    ocl_arg_rows(&a, &l, len, x->strides[axis], y->strides[axis]);
    arg_optional(&a, &args->gamma, x);
    arg_optional(&a, rms ? &none : &args->beta, x);
    ocl_arg_scalar(&a, x->dtype, args->eps);
    OCL_ARG(&a, is_rms);
    st = launch_rows(d, stream, &a, l.numel, false);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

bp_status_t ocl_op_layer_norm(bp_plugin_device_t *device,
                              bp_plugin_stream_t *stream,
                              const bp_norm_args_t *args) {
  return norm((ocl_device_t *)device, stream, args, false);
}

bp_status_t ocl_op_rms_norm(bp_plugin_device_t *device,
                            bp_plugin_stream_t *stream,
                            const bp_norm_args_t *args) {
  return norm((ocl_device_t *)device, stream, args, true);
}
