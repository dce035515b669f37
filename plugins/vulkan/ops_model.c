/*
 * ops_model.c — the model ops of ABI 1.5: gather (gather.comp, by element
 * size), arange (arange.comp, in double), binary with a scalar operand
 * (scalar.comp), GLU (glu.comp) and RoPE (rope.comp). Each records one
 * dispatch, so a native graph (a reused command buffer) captures it like
 * any other op.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/common/bp_half.h"
#include "vkb_model.h"

/* Whether the device stores dt in buffers (the kernels' 8- and 16-bit
 * types need the storage features). */
static bool storable(const vkb_caps_t *c, bp_dtype_t dt) {
  if (dt == BP_F16 || dt == BP_BF16) return c->storage16;
  if (dt == BP_U8) return c->storage8;
  return true;
}

/* dtypes of `list` whose kernel `<family>_<tag>` is built in and storable. */
static uint32_t claims_of(const vkb_caps_t *c, const char *family, const bp_dtype_t *list, int n) {
  uint32_t m = 0;
  for (int i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s_%s", family, vkb_dtype_tag(list[i]));
    if (storable(c, list[i]) && vkb_kernel_present(name)) m |= BP_DTYPE_BIT(list[i]);
  }
  return m;
}

void vkb_model_claims(const vkb_caps_t *c, uint32_t t[BP_OP_TABLE_SIZE],
                      uint32_t features[BP_OP_TABLE_SIZE]) {
  if (!c->usable) return;
  static const bp_dtype_t all[] = {BP_F32, BP_F16, BP_BF16, BP_F64, BP_I32, BP_I64, BP_U8};
  static const bp_dtype_t fl[] = {BP_F32, BP_F16, BP_BF16};
  for (int i = 0; i < 7; i++) {
    char name[16];
    snprintf(name, sizeof name, "gather_b%zu", 8 * vkb_dtype_size(all[i]));
    if (storable(c, all[i]) && vkb_kernel_present(name)) t[BP_OP_GATHER] |= BP_DTYPE_BIT(all[i]);
  }
  t[BP_OP_BINARY_SCALAR] = claims_of(c, "scalar", fl, 3);
  t[BP_OP_GLU] = claims_of(c, "glu", fl, 3);
  if (c->float64) { /* both form their values in double */
    t[BP_OP_ARANGE] = claims_of(c, "arange", all, 7);
    t[BP_OP_ROPE] = claims_of(c, "rope", fl, 3);
  }
  if (t[BP_OP_UNARY]) features[BP_OP_UNARY] |= BP_FEATURE_UNARY_GELU_TANH;
}

/* ---- gather ----------------------------------------------------------------*/

/* Matches gather.comp's parameter block. */
typedef struct gather_params {
  uint64_t y, t, ix;
  int32_t n, rank, idx64, axis_len, axis_stride, pad_;
  int32_t shape[BP_MAX_RANK], sy[BP_MAX_RANK], st[BP_MAX_RANK], si[BP_MAX_RANK];
} gather_params_t;

static bp_status_t gather_record(vkb_stream_t *s, const bp_gather_args_t *a) {
  const bp_plugin_tensor_t *y = &a->y;
  /* The table's and the indices' strides laid over y's dims: y's dim k is
   * the table's k before the axis, an index dim for the next rank(indices)
   * dims, then the table's dims after the axis. */
  bp_plugin_tensor_t ts = *y, is = *y;
  const int ax = a->axis, ri = a->indices.rank;
  for (int k = 0; k < y->rank; k++) {
    bool in_index = k >= ax && k < ax + ri;
    ts.strides[k] = in_index ? 0 : a->table.strides[k < ax ? k : k - ri + 1];
    is.strides[k] = in_index ? a->indices.strides[k - ax] : 0;
  }
  if (!vkb_fits_i32(&a->table) || a->table.shape[ax] > INT32_MAX)
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: gather: a table beyond int32 offsets is not "
                                        "supported by this backend");
  const bp_plugin_tensor_t *tl[3] = {y, &ts, &is};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, y, tl, 3, "gather");
  if (st != BP_OK || nd.n == 0) return st;
  gather_params_t p = {.y = vkb_tensor_addr(y),
                       .t = vkb_tensor_addr(&a->table),
                       .ix = vkb_tensor_addr(&a->indices),
                       .n = nd.n,
                       .rank = nd.rank,
                       .idx64 = a->indices.dtype == BP_I64,
                       .axis_len = (int32_t)a->table.shape[ax],
                       .axis_stride = (int32_t)a->table.strides[ax]};
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sy, nd.strides[0], sizeof p.sy);
  memcpy(p.st, nd.strides[1], sizeof p.st);
  memcpy(p.si, nd.strides[2], sizeof p.si);
  char name[16];
  snprintf(name, sizeof name, "gather_b%zu", 8 * vkb_dtype_size(y->dtype));
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

bp_status_t vkb_op_gather(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                          const bp_gather_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, gather_record(s, a))
}

/* ---- arange ----------------------------------------------------------------*/

/* Matches arange.comp's parameter block. */
typedef struct arange_params {
  uint64_t y;
  double start, step;
  int32_t n, rank;
  int32_t shape[BP_MAX_RANK], sy[BP_MAX_RANK];
} arange_params_t;

static bp_status_t arange_record(vkb_stream_t *s, const bp_arange_args_t *a) {
  const bp_plugin_tensor_t *tl[1] = {&a->y};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, &a->y, tl, 1, "arange");
  if (st != BP_OK || nd.n == 0) return st;
  arange_params_t p = {
      .y = vkb_tensor_addr(&a->y), .start = a->start, .step = a->step, .n = nd.n, .rank = nd.rank};
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sy, nd.strides[0], sizeof p.sy);
  char name[16];
  snprintf(name, sizeof name, "arange_%s", vkb_dtype_tag(a->y.dtype));
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

bp_status_t vkb_op_arange(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                          const bp_arange_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, arange_record(s, a))
}

/* ---- texel views for lavapipe ---------------------------------------------*/

/* Whether kernel_tex (scalar_f32_tex, glu_f32_tex) takes this call: f32 of
 * rank 1 or 2 on CPU implementations (lavapipe), where loads through an
 * address are per-lane loops, from 1024 elements (below that, creating the
 * views costs more than it saves). */
static bool model_texel_wanted(vkb_stream_t *s, const char *kernel_tex, const vkb_nd_t *nd,
                               bp_dtype_t dt) {
  return dt == BP_F32 && nd->rank <= 2 && nd->n >= 1024 && vkb_texel_wanted(s->d) &&
         vkb_kernel_present(kernel_tex);
}

/* ---- binary with a scalar --------------------------------------------------*/

/* Matches scalar.comp's parameter block. */
typedef struct scalar_params {
  uint64_t y, a;
  int32_t n, rank, op, first;
  float s;
  int32_t pad_;
  int32_t shape[BP_MAX_RANK], sy[BP_MAX_RANK], sa[BP_MAX_RANK];
  int32_t hy, ha; /* scalar_f32_tex: element 0 in each view */
} scalar_params_t;

/* The scalar as a one-element tensor of dt would hold it (f32, f16 and
 * bf16 values are all floats). */
static float scalar_in(bp_dtype_t dt, double v) {
  if (dt == BP_F16) return bp_f16_to_f32(bp_f64_to_f16(v));
  if (dt == BP_BF16) return bp_bf16_to_f32(bp_f64_to_bf16(v));
  return (float)v;
}

static bp_status_t scalar_record(vkb_stream_t *s, const bp_binary_scalar_args_t *a) {
  const bp_plugin_tensor_t *tl[2] = {&a->y, &a->a};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, &a->y, tl, 2, "binary_scalar");
  if (st != BP_OK || nd.n == 0) return st;
  scalar_params_t p = {.y = vkb_tensor_addr(&a->y),
                       .a = vkb_tensor_addr(&a->a),
                       .n = nd.n,
                       .rank = nd.rank,
                       .op = (int32_t)a->op,
                       .first = a->scalar_first != 0,
                       .s = scalar_in(a->a.dtype, a->scalar)};
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sy, nd.strides[0], sizeof p.sy);
  memcpy(p.sa, nd.strides[1], sizeof p.sa);
  char name[16];
  snprintf(name, sizeof name, "scalar_%s", vkb_dtype_tag(a->y.dtype));
  uint32_t spec[1] = {(uint32_t)a->op};
  VkBufferView v[2];
  int32_t h[2];
  if (model_texel_wanted(s, "scalar_f32_tex", &nd, a->y.dtype) && vkb_texel_src_views(s, tl, 2, v, h)) {
    p.hy = h[0], p.ha = h[1];
    st = vkb_dispatch_views(s, "scalar_f32_tex", spec, 1, &p, sizeof p, v, 2,
                            vkb_groups_1d(s->d, nd.n, 256), 1, 1);
    vkb_texel_views_release(s, v, 2);
    return st;
  }
  return vkb_dispatch(s, name, spec, 1, &p, sizeof p, vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

bp_status_t vkb_op_binary_scalar(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                                 const bp_binary_scalar_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, scalar_record(s, a))
}

/* ---- GLU -------------------------------------------------------------------*/

/* Matches glu.comp's parameter block. */
typedef struct glu_params {
  uint64_t y, g, u;
  int32_t n, rank, kind, pad_;
  int32_t shape[BP_MAX_RANK], sy[BP_MAX_RANK], sg[BP_MAX_RANK], su[BP_MAX_RANK];
  int32_t hy, hg, hu; /* glu_f32_tex: element 0 in each view */
} glu_params_t;

static bp_status_t glu_record(vkb_stream_t *s, const bp_glu_args_t *a) {
  const bp_plugin_tensor_t *tl[3] = {&a->y, &a->gate, &a->up};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, &a->y, tl, 3, "glu");
  if (st != BP_OK || nd.n == 0) return st;
  glu_params_t p = {.y = vkb_tensor_addr(&a->y),
                    .g = vkb_tensor_addr(&a->gate),
                    .u = vkb_tensor_addr(&a->up),
                    .n = nd.n,
                    .rank = nd.rank,
                    .kind = (int32_t)a->kind};
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sy, nd.strides[0], sizeof p.sy);
  memcpy(p.sg, nd.strides[1], sizeof p.sg);
  memcpy(p.su, nd.strides[2], sizeof p.su);
  char name[16];
  snprintf(name, sizeof name, "glu_%s", vkb_dtype_tag(a->y.dtype));
  uint32_t spec[1] = {(uint32_t)a->kind};
  VkBufferView v[3];
  int32_t h[3];
  if (model_texel_wanted(s, "glu_f32_tex", &nd, a->y.dtype) && vkb_texel_src_views(s, tl, 3, v, h)) {
    p.hy = h[0], p.hg = h[1], p.hu = h[2];
    st = vkb_dispatch_views(s, "glu_f32_tex", spec, 1, &p, sizeof p, v, 3,
                            vkb_groups_1d(s->d, nd.n, 256), 1, 1);
    vkb_texel_views_release(s, v, 3);
    return st;
  }
  return vkb_dispatch(s, name, spec, 1, &p, sizeof p, vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

bp_status_t vkb_op_glu(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                       const bp_glu_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, glu_record(s, a))
}

/* ---- RoPE ------------------------------------------------------------------*/

/* Matches rope.comp's parameter block. */
typedef struct rope_params {
  uint64_t y, x, pos;
  int64_t pos_offset;
  double base;
  int32_t n, has_pos, pos64, rotary_dim, interleaved, ps0, ps1, pad_;
  int32_t dims[4], sx[4], sy[4];
} rope_params_t;

static bp_status_t rope_record(vkb_stream_t *s, const bp_rope_args_t *a) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y, *pos = &a->positions;
  int64_t rows = x->shape[0] * x->shape[1] * x->shape[2];
  int64_t n = rows * (a->rotary_dim / 2 + x->shape[3] - a->rotary_dim);
  if (n == 0) return BP_OK;
  if (n > INT32_MAX || !vkb_fits_i32(x) || !vkb_fits_i32(y) || (pos->rank && !vkb_fits_i32(pos)))
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: rope: sizes beyond int32 are not supported by "
                                        "this backend");
  rope_params_t p = {.y = vkb_tensor_addr(y),
                     .x = vkb_tensor_addr(x),
                     .pos = pos->rank ? vkb_tensor_addr(pos) : 0,
                     .pos_offset = a->pos_offset,
                     .base = pow(a->theta_base, -2.0 / a->rotary_dim),
                     .n = (int32_t)n,
                     .has_pos = pos->rank > 0,
                     .pos64 = pos->dtype == BP_I64,
                     .rotary_dim = a->rotary_dim,
                     .interleaved = a->mode == BP_ROPE_INTERLEAVED};
  if (pos->rank == 2) p.ps0 = (int32_t)pos->strides[0];
  if (pos->rank) p.ps1 = (int32_t)pos->strides[pos->rank - 1];
  for (int i = 0; i < 4; i++) {
    p.dims[i] = (int32_t)x->shape[i];
    p.sx[i] = (int32_t)x->strides[i];
    p.sy[i] = (int32_t)y->strides[i];
  }
  char name[16];
  snprintf(name, sizeof name, "rope_%s", vkb_dtype_tag(y->dtype));
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, vkb_groups_1d(s->d, n, 256), 1, 1);
}

bp_status_t vkb_op_rope(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                        const bp_rope_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, rope_record(s, a))
}
