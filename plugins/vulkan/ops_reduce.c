/*
 * ops_rows.c — ops along one axis: reduce, softmax, layer norm, RMS norm
 * (kernels/glsl/rows.glsl and its users).
 */
#include <stdio.h>
#include <string.h>

#include "ops.h"

/* Matches rows.glsl's parameter block. */
typedef struct rows_params {
  uint64_t x, y, g, b;
  int32_t rows, len, rank, op;
  int32_t sx_axis, sy_axis, flags, pad;
  float eps, pad2;
  int32_t shape[BP_MAX_RANK], sx[BP_MAX_RANK], sy[BP_MAX_RANK];
} rows_params_t;

/* Fills the row space: every dim of x but axis, with x's and y's strides
 * (collapsed where contiguous). */
static bp_status_t rows_make(rows_params_t *p, const bp_plugin_tensor_t *x,
                             const bp_plugin_tensor_t *y, int axis,
                             const char *op) {
  if (!vkb_fits_i32(x) || !vkb_fits_i32(y))
    return vkb_fail(BP_ERR_UNSUPPORTED,
                    "vulkan: %s: offsets beyond int32 are not supported", op);
  bp_plugin_tensor_t xs = *x, ys = *y;
  /* The row space is x with the axis made a size-1 dim. */
  xs.shape[axis] = ys.shape[axis] = 1;
  const bp_plugin_tensor_t *ts[2] = {&xs, &ys};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, &xs, ts, 2, op);
  if (st != BP_OK)
    return st;
  memset(p, 0, sizeof *p);
  p->x = vkb_tensor_addr(x);
  p->y = vkb_tensor_addr(y);
  p->rows = nd.n;
  p->len = (int32_t)x->shape[axis];
  p->rank = nd.rank;
  p->sx_axis = (int32_t)x->strides[axis];
  p->sy_axis = (int32_t)y->strides[axis];
  memcpy(p->shape, nd.shape, sizeof p->shape);
  memcpy(p->sx, nd.strides[0], sizeof p->sx);
  memcpy(p->sy, nd.strides[1], sizeof p->sy);
  return BP_OK;
}

static bp_status_t rows_dispatch(vkb_stream_t *s, const char *family,
                                 bp_dtype_t dt, const rows_params_t *p) {
  if (p->rows == 0)
    return BP_OK;
  char name[32];
  snprintf(name, sizeof name, "%s_%s", family, vkb_dtype_tag(dt));
  return vkb_dispatch(s, name, NULL, 0, p, sizeof *p,
                      vkb_groups_1d(s->d, p->rows, 1), 1, 1);
}

static bp_status_t reduce_record(vkb_stream_t *s, const bp_reduce_args_t *a) {
  rows_params_t p;
  bp_status_t st = rows_make(&p, &a->x, &a->y, a->axis, "reduce");
  if (st != BP_OK)
    return st;
  p.op = (int32_t)a->op;
  p.flags = a->y.dtype == BP_I64;
  return rows_dispatch(s, "reduce", a->x.dtype, &p);
}

bp_status_t vkb_op_reduce(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                          const bp_reduce_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, reduce_record(s, a))
}

static bp_status_t softmax_record(vkb_stream_t *s,
                                  const bp_softmax_args_t *a) {
  rows_params_t p;
  int axis = a->axis < 0 ? a->axis + a->x.rank : a->axis;
  bp_status_t st = rows_make(&p, &a->x, &a->y, axis, "softmax");
  if (st != BP_OK)
    return st;
  p.op = a->log != 0;
  return rows_dispatch(s, "softmax", a->x.dtype, &p);
}

bp_status_t vkb_op_softmax(bp_plugin_device_t *dev,
                           bp_plugin_stream_t *stream,
                           const bp_softmax_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, softmax_record(s, a))
}

static bp_status_t norm_record(vkb_stream_t *s, const bp_norm_args_t *a,
                               bool rms) {
  rows_params_t p;
  bp_status_t st = rows_make(&p, &a->x, &a->y, a->x.rank - 1, "norm");
  if (st != BP_OK)
    return st;
  p.op = rms;
  p.eps = (float)a->eps;
  /* gamma / beta are rank 0 when absent; their strides ride in the
   * flags / pad slots. */
  if (a->gamma.rank > 0) {
    p.g = vkb_tensor_addr(&a->gamma);
    p.flags = (int32_t)a->gamma.strides[0];
  }
  if (!rms && a->beta.rank > 0) {
    p.b = vkb_tensor_addr(&a->beta);
    p.pad = (int32_t)a->beta.strides[0];
  }
  return rows_dispatch(s, "norm", a->x.dtype, &p);
}

bp_status_t vkb_op_layer_norm(bp_plugin_device_t *dev,
                              bp_plugin_stream_t *stream,
                              const bp_norm_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, norm_record(s, a, false))
}

bp_status_t vkb_op_rms_norm(bp_plugin_device_t *dev,
                            bp_plugin_stream_t *stream,
                            const bp_norm_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, norm_record(s, a, true))
}
