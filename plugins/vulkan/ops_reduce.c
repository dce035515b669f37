/*
 * ops_reduce.c — reduce, and the row machinery of kernels/glsl/rows.glsl
 * that the row-wise DNN ops (softmax, layer norm, RMS norm in ops_dnn.c)
 * share: one workgroup per row along an axis.
 */
#include <stdio.h>
#include <string.h>

#include "vkb.h"

bp_status_t vkb_rows_make(vkb_rows_params_t *p, const bp_plugin_tensor_t *x,
                          const bp_plugin_tensor_t *y, int axis, const char *op) {
  if (!vkb_fits_i32(x) || !vkb_fits_i32(y))
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: %s: offsets beyond int32 are not supported", op);
  bp_plugin_tensor_t xs = *x, ys = *y;
  /* The row space is x with the axis made a size-1 dim. */
  xs.shape[axis] = ys.shape[axis] = 1;
  const bp_plugin_tensor_t *ts[2] = {&xs, &ys};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, &xs, ts, 2, op);
  if (st != BP_OK) return st;
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

bp_status_t vkb_rows_dispatch(vkb_stream_t *s, const char *family, bp_dtype_t dt,
                              const vkb_rows_params_t *p) {
  if (p->rows == 0) return BP_OK;
  char name[32];
  snprintf(name, sizeof name, "%s_%s", family, vkb_dtype_tag(dt));
  return vkb_dispatch(s, name, NULL, 0, p, sizeof *p, vkb_groups_1d(s->d, p->rows, 1), 1, 1);
}

static bp_status_t reduce_record(vkb_stream_t *s, const bp_reduce_args_t *a) {
  vkb_rows_params_t p;
  bp_status_t st = vkb_rows_make(&p, &a->x, &a->y, a->axis, "reduce");
  if (st != BP_OK) return st;
  p.op = (int32_t)a->op;
  p.flags = a->y.dtype == BP_I64;
  return vkb_rows_dispatch(s, "reduce", a->x.dtype, &p);
}

bp_status_t vkb_op_reduce(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                          const bp_reduce_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, reduce_record(s, a))
}
