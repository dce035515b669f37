/*
 * ops_reduce.c — reductions (kernels/opencl/reduce.cl). Like softmax and the
 * norms (ops_dnn.c) they walk lines of a tensor: a line gets a work-group
 * (ocl_launch_rows, 64 items) unless it is short, where each line gets one
 * work-item instead.
 */
#include "ocl.h"

/* Lines shorter than this reduce in one work-item: a work-group would sit
 * mostly idle. */
#define REDUCE_ITEM_MAX_LEN 256

bp_status_t ocl_op_reduce(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_reduce_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  ocl_layout_t l;
  ocl_rows_make(x, y, args->axis, &l);
  if (l.numel == 0) return BP_OK;
  int64_t len = x->shape[args->axis];
  bool per_item = len < REDUCE_ITEM_MAX_LEN;
  char opts[64];
  ocl_dtype_options(d, x->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st =
      ocl_kernel_get(d, OCL_FAM_REDUCE, opts, per_item ? "reduce_item" : "reduce_wg", &a.k);
  if (st == BP_OK) {
    cl_int op = (cl_int)args->op, y_i64 = y->dtype == BP_I64;
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    ocl_arg_rows(&a, &l, len, x->strides[args->axis], 0);
    OCL_ARG(&a, op);
    OCL_ARG(&a, y_i64);
    st = ocl_launch_rows(d, stream, &a, l.numel, per_item);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}
