/*
 * ops_dnn.c — attention, conv2d, pool2d, batch norm, softmax, layer norm, RMS
 * norm and the fused Adam step (kernels/opencl/attention.cl, conv.cl,
 * pool.cl, batch_norm.cl, softmax.cl, norm.cl, adam.cl).
 */
#include <math.h>

#include "ocl.h"

/* ---- attention (attention.cl) ----------------------------------------------*/

/* attention.cl's limits: q staged in local memory, Dv split over 64 items. */
#define ATT_MAX_D 512
#define ATT_MAX_DV (64 * 8)

bp_status_t ocl_op_attention(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                             const bp_attention_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *q = &args->q, *k = &args->k, *v = &args->v, *o = &args->out;
  cl_long rows = q->shape[0] * q->shape[1] * q->shape[2];
  if (rows == 0 || v->shape[3] == 0) return BP_OK;
  if (q->shape[3] > ATT_MAX_D || v->shape[3] > ATT_MAX_DV) {
    ocl_host->set_error("opencl: attention supports head_dim <= %d and "
                        "value dim <= %d (got %lld, %lld)",
                        ATT_MAX_D, ATT_MAX_DV, (long long)q->shape[3], (long long)v->shape[3]);
    return BP_ERR_UNSUPPORTED;
  }
  char opts[64];
  ocl_dtype_options(d, q->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  /* CPU drivers: the flash kernel; GPUs: the GEMM path; decode: fused */
  bp_status_t st = ocl_attention_flash(d, ocl_queue(d, stream), args);
  if (st == BP_ERR_UNSUPPORTED) st = ocl_attention_gemm(d, ocl_queue(d, stream), args);
  if (st == BP_ERR_UNSUPPORTED) st = ocl_kernel_get(d, OCL_FAM_ATTENTION, opts, "attention", &a.k);
  if (st == BP_OK && a.k) {
    const bp_plugin_tensor_t *ts[4] = {q, k, v, o};
    for (int i = 0; i < 4; i++) {
      ocl_arg_buf(&a, ts[i]->ptr, ts[i]->offset);
      ocl_arg_strides4(&a, ts[i]);
    }
    cl_int hq = (cl_int)q->shape[1], hkv = (cl_int)k->shape[1];
    cl_long sq = q->shape[2], skv = k->shape[2];
    cl_int dd = (cl_int)q->shape[3], dv = (cl_int)v->shape[3];
    cl_int causal = args->causal != 0;
    OCL_ARG(&a, hq);
    OCL_ARG(&a, hkv);
    OCL_ARG(&a, sq);
    OCL_ARG(&a, skv);
    OCL_ARG(&a, dd);
    OCL_ARG(&a, dv);
    /* The public API's "0 means 1/sqrt(D)", in case it reaches us as is. */
    double scale = args->scale != 0 ? args->scale : 1.0 / sqrt((double)dd);
    ocl_arg_scalar(&a, q->dtype, scale);
    OCL_ARG(&a, causal);
    ocl_arg_att_mask(&a, args);
    size_t lws = 64, gws = (size_t)rows * 64;
    st = ocl_enqueue(ocl_queue(d, stream), &a, 1, &gws, &lws);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* ---- conv2d (conv.cl) -------------------------------------------------------*/

bp_status_t ocl_op_conv2d(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_conv2d_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *x = &args->x, *w = &args->w, *y = &args->y;
  int64_t npix = y->shape[2] * y->shape[3];
  if (y->shape[0] == 0 || y->shape[1] == 0 || npix == 0) return BP_OK;
  char opts[64];
  ocl_dtype_options(d, x->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_conv2d_depthwise(d, ocl_queue(d, stream), args);
  if (st == BP_ERR_UNSUPPORTED) st = ocl_conv2d_gemm(d, ocl_queue(d, stream), args);
  if (st == BP_ERR_UNSUPPORTED) st = ocl_kernel_get(d, OCL_FAM_CONV, opts, "conv2d", &a.k);
  if (st == BP_OK && a.k) {
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
    cl_int v[16] = {(cl_int)x->shape[1],
                    (cl_int)x->shape[2],
                    (cl_int)x->shape[3],
                    (cl_int)w->shape[0],
                    (cl_int)w->shape[2],
                    (cl_int)w->shape[3],
                    (cl_int)y->shape[2],
                    (cl_int)y->shape[3],
                    args->stride_h,
                    args->stride_w,
                    args->pad_h,
                    args->pad_w,
                    args->dilation_h,
                    args->dilation_w,
                    args->groups > 0 ? args->groups : 1,
                    0};
    for (int i = 0; i < 15; i++) OCL_ARG(&a, v[i]);
    int64_t kpg = w->shape[0] / v[14];
    size_t lws[3] = {16, 16, 1};
    size_t gws[3] = {ocl_round_up((size_t)npix, 16), ocl_round_up((size_t)kpg, 16),
                     (size_t)(y->shape[0] * v[14])};
    st = ocl_enqueue(ocl_queue(d, stream), &a, 3, gws, lws);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* ---- pool2d (pool.cl) -------------------------------------------------------*/

bp_status_t ocl_op_pool2d(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_pool2d_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  cl_long total = y->shape[0] * y->shape[1] * y->shape[2] * y->shape[3];
  if (total == 0) return BP_OK;
  char opts[64];
  ocl_dtype_options(d, x->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_POOL, opts, "pool2d", &a.k);
  if (st == BP_OK) {
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_strides4(&a, x);
    ocl_arg_buf(&a, y->ptr, y->offset);
    ocl_arg_strides4(&a, y);
    OCL_ARG(&a, total);
    cl_int v[14] = {(cl_int)x->shape[1],
                    (cl_int)x->shape[2],
                    (cl_int)x->shape[3],
                    (cl_int)y->shape[2],
                    (cl_int)y->shape[3],
                    args->kernel_h,
                    args->kernel_w,
                    args->stride_h,
                    args->stride_w,
                    args->pad_h,
                    args->pad_w,
                    args->kind == BP_POOL_MAX,
                    args->count_include_pad != 0,
                    0};
    for (int i = 0; i < 13; i++) OCL_ARG(&a, v[i]);
    size_t lws = 64, gws = ocl_round_up((size_t)total, 64);
    st = ocl_enqueue(ocl_queue(d, stream), &a, 1, &gws, &lws);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* ---- batch norm (batch_norm.cl) --------------------------------------------*/

bp_status_t ocl_op_batch_norm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                              const bp_batch_norm_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  cl_long n = 1, shape[8] = {1, 1, 1, 1, 1, 1, 1, 1}, xs[8] = {0}, ys[8] = {0};
  for (int i = 0; i < x->rank; i++) {
    n *= x->shape[i];
    shape[i] = x->shape[i];
    xs[i] = x->strides[i];
    ys[i] = y->strides[i];
  }
  if (n == 0) return BP_OK;
  char opts[64];
  ocl_dtype_options(d, x->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_BATCH_NORM, opts, "batch_norm", &a.k);
  if (st == BP_OK) {
    cl_int rank = x->rank;
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    OCL_ARG(&a, rank);
    OCL_ARG(&a, n);
    ocl_arg(&a, sizeof(cl_long8), shape);
    ocl_arg(&a, sizeof(cl_long8), xs);
    ocl_arg(&a, sizeof(cl_long8), ys);
    const bp_plugin_tensor_t *vecs[4] = {&args->mean, &args->var, &args->scale, &args->bias};
    for (int i = 0; i < 4; i++) {
      ocl_arg_buf(&a, vecs[i]->ptr, vecs[i]->offset);
      OCL_ARG(&a, vecs[i]->strides[0]);
    }
    ocl_arg_scalar(&a, x->dtype, args->eps);
    st = ocl_launch_flat(d, stream, &a, n);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* ---- softmax, layer norm, RMS norm: lines of a tensor (softmax.cl, norm.cl) */

bp_status_t ocl_op_softmax(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                           const bp_softmax_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  int axis = args->axis < 0 ? args->axis + x->rank : args->axis;
  ocl_layout_t l;
  ocl_rows_make(x, y, axis, &l);
  int64_t len = x->shape[axis];
  if (l.numel == 0 || len == 0) return BP_OK;
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
    st = ocl_launch_rows(d, stream, &a, l.numel, false);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* An optional [last] vector: (buffer, offset, stride, present). A rank-0
 * tensor means absent; the kernel then never reads the buffer, but OpenCL
 * still needs a valid cl_mem there, so x's stands in. */
static void arg_optional(ocl_args_t *a, const bp_plugin_tensor_t *t, const bp_plugin_tensor_t *x) {
  cl_int present = t->rank > 0;
  cl_long stride = present ? t->strides[0] : 0;
  ocl_arg_buf(a, present ? t->ptr : x->ptr, present ? t->offset : x->offset);
  OCL_ARG(a, stride);
  OCL_ARG(a, present);
}

static bp_status_t norm(ocl_device_t *d, bp_plugin_stream_t *stream, const bp_norm_args_t *args,
                        bool rms) {
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  int axis = x->rank - 1;
  ocl_layout_t l;
  ocl_rows_make(x, y, axis, &l);
  int64_t len = x->shape[axis];
  if (l.numel == 0 || len == 0) return BP_OK;
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
    st = ocl_launch_rows(d, stream, &a, l.numel, false);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

bp_status_t ocl_op_layer_norm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                              const bp_norm_args_t *args) {
  return norm((ocl_device_t *)device, stream, args, false);
}

bp_status_t ocl_op_rms_norm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                            const bp_norm_args_t *args) {
  return norm((ocl_device_t *)device, stream, args, true);
}

/* ---- adam (adam.cl) -------------------------------------------------------*/

/* One parameter tensor: p, g, m, v share a shape. Caller holds d->lock. */
static bp_status_t adam_one(ocl_device_t *d, bp_plugin_stream_t *stream, const bp_adam_args_t *args,
                            uint32_t t, double bc1, double bc2) {
  const bp_plugin_tensor_t *ts[4] = {&args->params[t], &args->grads[t], &args->exp_avg[t],
                                     &args->exp_avg_sq[t]};
  ocl_layout_t l;
  ocl_layout_make(ts, 4, ts[0]->shape, ts[0]->rank, &l);
  if (l.numel == 0) return BP_OK;
  bp_dtype_t dt = ts[0]->dtype;
  char opts[64];
  ocl_dtype_options(d, dt, opts, sizeof opts);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_ADAM, opts, "adam", &a.k);
  if (st != BP_OK) return st;
  for (int i = 0; i < 4; i++) ocl_arg_buf(&a, ts[i]->ptr, ts[i]->offset);
  cl_int rank = l.rank, adamw = args->adamw != 0;
  cl_long n = l.numel;
  OCL_ARG(&a, rank);
  OCL_ARG(&a, n);
  ocl_arg(&a, sizeof(cl_long8), l.shape);
  for (int i = 0; i < 4; i++) ocl_arg(&a, sizeof(cl_long8), l.strides[i]);
  const double s[7] = {args->lr, args->beta1, args->beta2, args->eps, args->weight_decay, bc1, bc2};
  for (int i = 0; i < 7; i++) ocl_arg_scalar(&a, dt, s[i]);
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
