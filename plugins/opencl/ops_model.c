/*
 * ops_model.c — the model ops of ABI 1.5 (kernels/opencl/model.cl):
 * gather, arange, binary with a scalar operand, GLU and RoPE. The
 * elementwise ones collapse their shapes first (ocl_layout_make), as
 * ops_elementwise.c does; gather walks y's shape with the table's and the
 * indices' strides laid over it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/common/bp_half.h"
#include "ocl_model.h"

void ocl_model_claims(const ocl_caps_t *caps, uint32_t *t, uint32_t *features) {
  /* gather moves raw elements: any dtype, with or without cl_khr_fp16/64. */
  t[BP_OP_GATHER] = BP_DTYPES_FLOAT | BP_DTYPES_INT;
  /* arange stores through vstore_half and the cast rules: every dtype, f64
   * where the device computes in double. */
  t[BP_OP_ARANGE] = BP_DTYPE_BIT(BP_F32) | BP_DTYPE_BIT(BP_F16) | BP_DTYPE_BIT(BP_BF16) |
                    BP_DTYPES_INT | (caps->fp64 ? BP_DTYPE_BIT(BP_F64) : 0);
  /* The float ops: the dtypes elementwise.cl's ops run in. */
  t[BP_OP_BINARY_SCALAR] = t[BP_OP_UNARY];
  t[BP_OP_GLU] = t[BP_OP_UNARY];
  t[BP_OP_ROPE] = t[BP_OP_UNARY];
  features[BP_OP_UNARY] |= BP_FEATURE_UNARY_GELU_TANH;
}

/* Takes the model program's kernel `name` for dtype dt; caller holds
 * d->lock. MDT names every dtype; DT (common.cl's typed helpers, which
 * are float-only) only the float ones. */
static bp_status_t model_kernel(ocl_device_t *d, bp_dtype_t dt, const char *name, ocl_args_t *a) {
  char opts[96];
  bool is_float = dt == BP_F32 || dt == BP_F16 || dt == BP_BF16 || dt == BP_F64;
  if (is_float)
    ocl_dtype_options(d, dt, opts, sizeof opts);
  else
    snprintf(opts, sizeof opts, "-cl-std=CL1.2");
  size_t len = strlen(opts);
  snprintf(opts + len, sizeof opts - len, " -DMDT=%d", (int)dt);
  memset(a, 0, sizeof *a);
  return ocl_kernel_get(d, OCL_FAM_MODEL, opts, name, &a->k);
}

/* Locks d, takes kernel `name` for dt and adds the n tensors' buffers, in
 * order, as its first arguments. On BP_OK d stays locked until
 * model_launch; on failure it is unlocked here. */
static bp_status_t model_begin(ocl_device_t *d, bp_dtype_t dt, const char *name,
                               const bp_plugin_tensor_t *const *bufs, int n, ocl_args_t *a) {
  pthread_mutex_lock(&d->lock);
  bp_status_t st = model_kernel(d, dt, name, a);
  if (st != BP_OK) {
    pthread_mutex_unlock(&d->lock);
    return st;
  }
  for (int i = 0; i < n; i++) ocl_arg_buf(a, bufs[i]->ptr, bufs[i]->offset);
  return BP_OK;
}

/* Launches the kernel model_begin took over n items and unlocks d. */
static bp_status_t model_launch(ocl_device_t *d, bp_plugin_stream_t *stream, ocl_args_t *a,
                                int64_t n) {
  bp_status_t st = ocl_launch_flat(d, stream, a, n);
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* Adds a double, or a float where the device has no fp64 (model.cl's
 * WIDE). */
static void arg_wide(ocl_args_t *a, const ocl_device_t *d, double v) {
  ocl_arg_scalar(a, d->caps.fp64 ? BP_F64 : BP_F32, v);
}

static void arg_layout(ocl_args_t *a, const ocl_layout_t *l, int ntensors) {
  cl_int rank = l->rank;
  cl_long n = l->numel;
  OCL_ARG(a, rank);
  OCL_ARG(a, n);
  ocl_arg(a, sizeof(cl_long8), l->shape);
  for (int i = 0; i < ntensors; i++) ocl_arg(a, sizeof(cl_long8), l->strides[i]);
}

bp_status_t ocl_op_gather(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_gather_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *tb = &args->table, *ix = &args->indices, *y = &args->y;
  /* The table's and the indices' strides as seen from y's dims: y's dim k
   * is the table's k before the axis, an index dim for the next
   * rank(indices), then the table's dims after the axis. */
  bp_plugin_tensor_t ts = *y, is = *y;
  const int ax = args->axis, ri = ix->rank;
  for (int k = 0; k < y->rank; k++) {
    bool in_index = k >= ax && k < ax + ri;
    ts.strides[k] = in_index ? 0 : tb->strides[k < ax ? k : k - ri + 1];
    is.strides[k] = in_index ? ix->strides[k - ax] : 0;
  }
  const bp_plugin_tensor_t *tl[3] = {y, &ts, &is};
  ocl_layout_t l;
  ocl_layout_make(tl, 3, y->shape, y->rank, &l);
  if (l.numel == 0) return BP_OK;
  ocl_args_t a;
  const bp_plugin_tensor_t *bufs[3] = {tb, ix, y};
  bp_status_t st = model_begin(d, y->dtype, "gather", bufs, 3, &a);
  if (st != BP_OK) return st;
  cl_int idx64 = ix->dtype == BP_I64;
  cl_long len = tb->shape[ax], step = tb->strides[ax];
  OCL_ARG(&a, idx64);
  OCL_ARG(&a, len);
  OCL_ARG(&a, step);
  arg_layout(&a, &l, 3);
  return model_launch(d, stream, &a, l.numel);
}

bp_status_t ocl_op_arange(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_arange_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *y = &args->y;
  /* No collapsing: element i is the i-th in y's row-major order, which a
   * merged layout keeps too, but the unit dims it drops do not matter
   * either; one layout call keeps the index math in one place. */
  const bp_plugin_tensor_t *tl[1] = {y};
  ocl_layout_t l;
  ocl_layout_make(tl, 1, y->shape, y->rank, &l);
  if (l.numel == 0) return BP_OK;
  ocl_args_t a;
  bp_status_t st = model_begin(d, y->dtype, "arange", tl, 1, &a);
  if (st != BP_OK) return st;
  arg_wide(&a, d, args->start);
  arg_wide(&a, d, args->step);
  arg_layout(&a, &l, 1);
  return model_launch(d, stream, &a, l.numel);
}

/* The scalar as a one-element tensor of dt would hold it. */
static double scalar_in(bp_dtype_t dt, double v) {
  switch (dt) {
  case BP_F16:
    return bp_f16_to_f64(bp_f64_to_f16(v));
  case BP_BF16:
    return bp_bf16_to_f64(bp_f64_to_bf16(v));
  case BP_F32:
    return (double)(float)v;
  default:
    return v;
  }
}

bp_status_t ocl_op_binary_scalar(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                 const bp_binary_scalar_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *x = &args->a, *y = &args->y;
  const bp_plugin_tensor_t *tl[2] = {x, y};
  ocl_layout_t l;
  ocl_layout_make(tl, 2, y->shape, y->rank, &l);
  if (l.numel == 0) return BP_OK;
  ocl_args_t a;
  bp_status_t st = model_begin(d, y->dtype, "binary_scalar", tl, 2, &a);
  if (st != BP_OK) return st;
  cl_int op = (cl_int)args->op, first = args->scalar_first != 0;
  OCL_ARG(&a, op);
  OCL_ARG(&a, first);
  ocl_arg_scalar(&a, y->dtype, scalar_in(x->dtype, args->scalar));
  arg_layout(&a, &l, 2);
  return model_launch(d, stream, &a, l.numel);
}

bp_status_t ocl_op_glu(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                       const bp_glu_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *g = &args->gate, *u = &args->up, *y = &args->y;
  const bp_plugin_tensor_t *tl[3] = {g, u, y};
  ocl_layout_t l;
  ocl_layout_make(tl, 3, y->shape, y->rank, &l);
  if (l.numel == 0) return BP_OK;
  ocl_args_t a;
  bp_status_t st = model_begin(d, y->dtype, "glu", tl, 3, &a);
  if (st != BP_OK) return st;
  cl_int kind = (cl_int)args->kind;
  OCL_ARG(&a, kind);
  arg_layout(&a, &l, 3);
  return model_launch(d, stream, &a, l.numel);
}

/* Adds positions (buffer, offset, present, 64-bit, its [batch, seq]
 * strides) and pos_offset; absent (rank 0) binds y's buffer, never read. */
static void arg_positions(ocl_args_t *a, const bp_rope_args_t *args) {
  const bp_plugin_tensor_t *p = &args->positions;
  cl_int has = p->rank > 0, idx64 = p->dtype == BP_I64;
  cl_long ps[2] = {0, 0};
  if (p->rank == 2) ps[0] = p->strides[0], ps[1] = p->strides[1];
  if (p->rank == 1) ps[1] = p->strides[0];
  cl_long off = args->pos_offset;
  if (has)
    ocl_arg_buf(a, p->ptr, p->offset);
  else
    ocl_arg_buf(a, args->y.ptr, args->y.offset);
  OCL_ARG(a, has);
  OCL_ARG(a, idx64);
  ocl_arg(a, sizeof(cl_long2), ps);
  OCL_ARG(a, off);
}

bp_status_t ocl_op_rope(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_rope_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *x = &args->x, *y = &args->y;
  int64_t rows = x->shape[0] * x->shape[1] * x->shape[2];
  int64_t n = rows * (args->rotary_dim / 2 + x->shape[3] - args->rotary_dim);
  if (n == 0) return BP_OK;
  ocl_args_t a;
  const bp_plugin_tensor_t *bufs[2] = {x, y};
  bp_status_t st = model_begin(d, y->dtype, "rope", bufs, 2, &a);
  if (st != BP_OK) return st;
  cl_int inter = args->mode == BP_ROPE_INTERLEAVED, rd = args->rotary_dim;
  cl_long dims[4] = {x->shape[0], x->shape[1], x->shape[2], x->shape[3]};
  arg_positions(&a, args);
  OCL_ARG(&a, inter);
  OCL_ARG(&a, rd);
  arg_wide(&a, d, log2(args->theta_base));
  ocl_arg(&a, sizeof(cl_long4), dims);
  ocl_arg_strides4(&a, x);
  ocl_arg_strides4(&a, y);
  return model_launch(d, stream, &a, n);
}
