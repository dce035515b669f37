/*
 * ops_data.c — fill, copy and cast (kernels/opencl/data.cl) and the Philox
 * random fill (kernels/opencl/random.cl).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/common/bp_half.h"
#include "ocl.h"
#include "ocl_quant.h"

/* Same rules as the cast kernel: NaN -> 0, round to nearest even, saturate.*/
static int64_t to_int(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  if (v <= lo) return (int64_t)lo;
  if (v >= hi) /* i64's hi is 2^63, one past INT64_MAX */
    return hi >= 9.2233720368547758e18 ? INT64_MAX : (int64_t)hi;
  return (int64_t)nearbyint(v);
}

/* double -> float rounded to odd, so the f16 / bf16 rounding that follows
 * is a single correct rounding (matches the kernels' bp_d2f_odd). */
static float odd_float(double v) {
  float f = (float)v;
  if (isnan(v) || (double)f == v) return f;
  if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f); /* truncate toward zero */
  uint32_t u;
  memcpy(&u, &f, 4);
  u |= 1u;
  memcpy(&f, &u, 4);
  return f;
}

/* The element bits of value in dtype dt. */
static uint64_t value_bits(double v, bp_dtype_t dt) {
  uint64_t bits = 0;
  float f = (float)v;
  uint32_t u32;
  switch (dt) {
  case BP_F32:
    memcpy(&u32, &f, 4);
    bits = u32;
    break;
  case BP_F16:
    bits = bp_f32_to_f16(odd_float(v));
    break;
  case BP_BF16:
    bits = bp_f32_to_bf16(odd_float(v));
    break;
  case BP_F64:
    memcpy(&bits, &v, 8);
    break;
  case BP_I32:
    bits = (uint32_t)(int32_t)to_int(v, -2147483648.0, 2147483647.0);
    break;
  case BP_I64:
    bits = (uint64_t)to_int(v, -9.2233720368547758e18, 9.2233720368547758e18);
    break;
  case BP_U8:
    bits = (uint8_t)to_int(v, 0, 255);
    break;
  default:
    break;
  }
  return bits;
}

bp_status_t ocl_op_fill(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_fill_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *y = &args->y;
  const bp_plugin_tensor_t *ts[1] = {y};
  ocl_layout_t l;
  ocl_layout_make(ts, 1, y->shape, y->rank, &l);
  if (l.numel == 0) return BP_OK;
  char opts[64];
  snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DES=%zu", ocl_dtype_size(y->dtype));
  cl_ulong bits = value_bits(args->value, y->dtype);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_DATA, opts, "fill", &a.k);
  if (st == BP_OK) {
    ocl_arg_buf(&a, y->ptr, y->offset);
    cl_int rank = l.rank;
    cl_long n = l.numel;
    OCL_ARG(&a, rank);
    OCL_ARG(&a, n);
    ocl_arg(&a, sizeof(cl_long8), l.shape);
    ocl_arg(&a, sizeof(cl_long8), l.strides[0]);
    OCL_ARG(&a, bits);
    st = ocl_launch_flat(d, stream, &a, l.numel);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* copy and cast share their arguments; only the program differs. */
static bp_status_t copy_like(ocl_device_t *d, bp_plugin_stream_t *stream,
                             const bp_copy_args_t *args, const char *opts, const char *kernel) {
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  const bp_plugin_tensor_t *ts[2] = {x, y};
  ocl_layout_t l;
  ocl_layout_make(ts, 2, y->shape, y->rank, &l);
  if (l.numel == 0) return BP_OK;
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_DATA, opts, kernel, &a.k);
  if (st == BP_OK) {
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    cl_int rank = l.rank;
    cl_long n = l.numel;
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

bp_status_t ocl_op_copy(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_copy_args_t *args) {
  char opts[64];
  snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DES=%zu", ocl_dtype_size(args->y.dtype));
  return copy_like((ocl_device_t *)device, stream, args, opts, "copy");
}

bp_status_t ocl_op_cast(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_copy_args_t *args) {
  char opts[64];
  if (args->x.dtype == args->y.dtype) return ocl_op_copy(device, stream, args);
  if (ocl_quant_cast_dtype(args->x.dtype) || ocl_quant_cast_dtype(args->y.dtype))
    return ocl_quant_cast((ocl_device_t *)device, stream, args);
  snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DSRC=%d -DDST=%d", (int)args->x.dtype,
           (int)args->y.dtype);
  return copy_like((ocl_device_t *)device, stream, args, opts, "cast");
}

/* The Philox random fill (kernels/opencl/random.cl). */
bp_status_t ocl_op_random(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_random_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *y = &args->y;
  const bp_plugin_tensor_t *ts[1] = {y};
  ocl_layout_t l;
  ocl_layout_make(ts, 1, y->shape, y->rank, &l);
  if (l.numel == 0) return BP_OK;
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
