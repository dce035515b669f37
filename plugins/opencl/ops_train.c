/*
 * ops_train.c — the fused Adam step and the Philox random fill
 * (kernels/opencl/adam.cl, random.cl).
 */
#include <math.h>

#include "ocl.h"

/* One parameter tensor: p, g, m, v share a shape. Caller holds d->lock. */
static bp_status_t adam_one(ocl_device_t *d, bp_plugin_stream_t *stream,
                            const bp_adam_args_t *args, uint32_t t,
                            double bc1, double bc2) {
  const bp_plugin_tensor_t *ts[4] = {&args->params[t], &args->grads[t],
                                     &args->exp_avg[t], &args->exp_avg_sq[t]};
  ocl_layout_t l;
  ocl_layout_make(ts, 4, ts[0]->shape, ts[0]->rank, &l);
  if (l.numel == 0)
    return BP_OK;
  bp_dtype_t dt = ts[0]->dtype;
  char opts[64];
  ocl_dtype_options(d, dt, opts, sizeof opts);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_ADAM, opts, "adam", &a.k);
  if (st != BP_OK)
    return st;
  for (int i = 0; i < 4; i++)
    ocl_arg_buf(&a, ts[i]->ptr, ts[i]->offset);
  cl_int rank = l.rank, adamw = args->adamw != 0;
  cl_long n = l.numel;
  OCL_ARG(&a, rank);
  OCL_ARG(&a, n);
  ocl_arg(&a, sizeof(cl_long8), l.shape);
  for (int i = 0; i < 4; i++)
    ocl_arg(&a, sizeof(cl_long8), l.strides[i]);
  const double s[7] = {args->lr, args->beta1, args->beta2, args->eps,
                       args->weight_decay, bc1, bc2};
  for (int i = 0; i < 7; i++)
    ocl_arg_scalar(&a, dt, s[i]);
  OCL_ARG(&a, adamw);
  return ocl_launch_flat(d, stream, &a, l.numel);
}

bp_status_t ocl_op_adam(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_adam_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  /* Bias corrections in double on the host, as the CPU reference does. */
  double bc1 = 1.0 - pow(args->beta1, (double)args->step);
  double bc2 = 1.0 - pow(args->beta2, (double)args->step);
  bp_status_t st = BP_OK;
  pthread_mutex_lock(&d->lock);
  for (uint32_t t = 0; t < args->count && st == BP_OK; t++)
    st = adam_one(d, stream, args, t, bc1, bc2);
  pthread_mutex_unlock(&d->lock);
  return st;
}

bp_status_t ocl_op_random(bp_plugin_device_t *device,
                          bp_plugin_stream_t *stream,
                          const bp_random_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *y = &args->y;
  const bp_plugin_tensor_t *ts[1] = {y};
  ocl_layout_t l;
  ocl_layout_make(ts, 1, y->shape, y->rank, &l);
  if (l.numel == 0)
    return BP_OK;
  char opts[64];
  ocl_dtype_options(d, y->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_RANDOM, opts, "random", &a.k);
  if (st == BP_OK) {
    cl_int rank = l.rank, normal = args->dist == BP_RANDOM_NORMAL;
    cl_long n = l.numel;
    cl_ulong seed = args->seed, offset = args->offset;
    ocl_arg_buf(&a, y->ptr, y->offset);
    OCL_ARG(&a, rank);
    OCL_ARG(&a, n);
    ocl_arg(&a, sizeof(cl_long8), l.shape);
    ocl_arg(&a, sizeof(cl_long8), l.strides[0]);
    OCL_ARG(&a, seed);
    OCL_ARG(&a, offset);
    OCL_ARG(&a, normal);
    ocl_arg_scalar(&a, y->dtype, args->a);
    ocl_arg_scalar(&a, y->dtype, args->b);
    st = ocl_launch_flat(d, stream, &a, l.numel);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}
