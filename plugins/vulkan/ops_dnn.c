/*
 * ops_dnn.c — attention, conv2d, batch norm, pool2d, softmax, layer norm,
 * RMS norm and the fused Adam step. On CPU implementations attention and
 * conv2d first try the texel-buffer GEMM (ops_dnn_texel.c).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "vkb.h"

static void kernel_name(char *out, size_t n, const char *family, bp_dtype_t dt) {
  snprintf(out, n, "%s_%s", family, vkb_dtype_tag(dt));
}

static bool all_fit(const bp_plugin_tensor_t *const *t, int count) {
  for (int i = 0; i < count; i++)
    if (t[i]->rank > 0 && !vkb_fits_i32(t[i])) return false;
  return true;
}

static bp_status_t too_big(const char *op) {
  return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: %s: offsets beyond int32 are not supported", op);
}

/* ---- attention ----------------------------------------------------------*/

/* Matches attention.comp's parameter block. */
typedef struct attn_params {
  uint64_t q, k, v, o;
  int32_t B, Hq, Hkv, Sq, Skv, D, Dv, causal;
  float scale, pad;
  int32_t sq[4], sk[4], sv[4], so[4];
  uint64_t kv_lens, bias, slopes;
  int32_t skl, sslope, window, alibi_heads, alibi_head0, has_bias;
  int32_t sb[4];
} attn_params_t;

/* A call from a core older than ABI 1.5 ends before the masks. */
bool vkb_attention_has_masks(const bp_attention_args_t *a) {
  return a->struct_size >= offsetof(bp_attention_args_t, alibi_slopes) + sizeof a->alibi_slopes;
}

/* The masks of ABI 1.5 into attention.comp's parameters (absent: 0). */
static void attention_masks(const bp_attention_args_t *a, attn_params_t *p) {
  if (!vkb_attention_has_masks(a)) return;
  if (a->kv_lens.rank) {
    p->kv_lens = vkb_tensor_addr(&a->kv_lens);
    p->skl = (int32_t)a->kv_lens.strides[0];
  }
  if (a->alibi_slopes.rank) {
    p->slopes = vkb_tensor_addr(&a->alibi_slopes);
    p->sslope = (int32_t)a->alibi_slopes.strides[0];
  }
  if (a->bias.rank) {
    p->bias = vkb_tensor_addr(&a->bias);
    p->has_bias = 1;
    for (int i = 0; i < 4; i++) p->sb[i] = (int32_t)a->bias.strides[i];
  }
  p->window = a->window > 0 ? a->window : 0;
  p->alibi_heads = a->alibi_heads > 0 ? a->alibi_heads : 0;
  p->alibi_head0 = a->alibi_head_offset;
}

static bp_status_t attention_record(vkb_stream_t *s, const bp_attention_args_t *a) {
  bool masks = vkb_attention_has_masks(a);
  const bp_plugin_tensor_t *ts[7] = {&a->q,    &a->k,       &a->v,           &a->out,
                                     &a->bias, &a->kv_lens, &a->alibi_slopes};
  if (!all_fit(ts, masks ? 7 : 4)) return too_big("attention");
  /* CPU implementations: the texel-buffer kernels (ops_dnn_texel.c). */
  bp_status_t tst = vkb_attention_texel(s, a);
  if (tst != BP_ERR_UNSUPPORTED) return tst;
  if (a->q.shape[3] > 256 || a->v.shape[3] > 256)
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: attention: head dims above 256 not supported");
  attn_params_t p = {.q = vkb_tensor_addr(&a->q),
                     .k = vkb_tensor_addr(&a->k),
                     .v = vkb_tensor_addr(&a->v),
                     .o = vkb_tensor_addr(&a->out),
                     .B = (int32_t)a->q.shape[0],
                     .Hq = (int32_t)a->q.shape[1],
                     .Hkv = (int32_t)a->k.shape[1],
                     .Sq = (int32_t)a->q.shape[2],
                     .Skv = (int32_t)a->k.shape[2],
                     .D = (int32_t)a->q.shape[3],
                     .Dv = (int32_t)a->v.shape[3],
                     .causal = a->causal != 0,
                     .scale = (float)a->scale};
  attention_masks(a, &p);
  for (int i = 0; i < 4; i++) {
    p.sq[i] = (int32_t)a->q.strides[i];
    p.sk[i] = (int32_t)a->k.strides[i];
    p.sv[i] = (int32_t)a->v.strides[i];
    p.so[i] = (int32_t)a->out.strides[i];
  }
  int64_t rows = (int64_t)p.B * p.Hq * p.Sq;
  if (rows == 0 || p.Dv == 0) return BP_OK;
  if (p.Hkv == 0 || rows > INT32_MAX) return too_big("attention");
  char name[32];
  kernel_name(name, sizeof name, "attention", a->q.dtype);
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, vkb_groups_1d(s->d, rows, 1), 1, 1);
}

bp_status_t vkb_op_attention(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                             const bp_attention_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, attention_record(s, a))
}

/* ---- conv2d ----------------------------------------------------------------*/

/* Matches conv.comp's parameter block. */
typedef struct conv_params {
  uint64_t x, w, bias, y;
  int32_t N, C, H, W, K, R, S, P, Q;
  int32_t sh, sw, ph, pw, dh, dw, groups, sbias;
  int32_t sx[4], sww[4], sy[4];
  int32_t hx, hw, hy; /* convdw_f32_tex: element 0 in each view */
} conv_params_t;

/* Depthwise conv2d on convdw.comp: an invocation per output pixel; on CPU
 * implementations f32 goes through texel views (convdw_f32_tex). */
static bp_status_t conv_dw_record(vkb_stream_t *s, conv_params_t *p, const bp_conv2d_args_t *a) {
  int64_t pq_groups = ((int64_t)p->P * p->Q + 63) / 64;
  /* convdw.comp strides over the rest of the row's pixels */
  uint32_t gx = (uint32_t)(pq_groups < 64 ? pq_groups : 64), gy = (uint32_t)p->K,
           gz = (uint32_t)p->N;
  const bp_plugin_tensor_t *tl[3] = {&a->y, &a->x, &a->w};
  VkBufferView v[3];
  int32_t h[3];
  if (a->x.dtype == BP_F32 && vkb_texel_wanted(s->d) && vkb_kernel_present("convdw_f32_tex") &&
      vkb_texel_src_views(s, tl, 3, v, h)) {
    p->hy = h[0], p->hx = h[1], p->hw = h[2];
    bp_status_t st = vkb_dispatch_views(s, "convdw_f32_tex", NULL, 0, p, sizeof *p, v, 3, gx, gy, gz);
    vkb_texel_views_release(s, v, 3);
    return st;
  }
  char name[32];
  kernel_name(name, sizeof name, "convdw", a->x.dtype);
  return vkb_dispatch(s, name, NULL, 0, p, sizeof *p, gx, gy, gz);
}

static bp_status_t conv_record(vkb_stream_t *s, const bp_conv2d_args_t *a) {
  const bp_plugin_tensor_t *ts[4] = {&a->x, &a->w, &a->bias, &a->y};
  if (!all_fit(ts, 4)) return too_big("conv2d");
  /* CPU implementations: an implicit GEMM on texel buffers. */
  bp_status_t tst = vkb_conv2d_texel(s, a);
  if (tst != BP_ERR_UNSUPPORTED) return tst;
  conv_params_t p = {.x = vkb_tensor_addr(&a->x),
                     .w = vkb_tensor_addr(&a->w),
                     .bias = a->bias.rank > 0 ? vkb_tensor_addr(&a->bias) : 0,
                     .y = vkb_tensor_addr(&a->y),
                     .N = (int32_t)a->x.shape[0],
                     .C = (int32_t)a->x.shape[1],
                     .H = (int32_t)a->x.shape[2],
                     .W = (int32_t)a->x.shape[3],
                     .K = (int32_t)a->w.shape[0],
                     .R = (int32_t)a->w.shape[2],
                     .S = (int32_t)a->w.shape[3],
                     .P = (int32_t)a->y.shape[2],
                     .Q = (int32_t)a->y.shape[3],
                     .sh = a->stride_h,
                     .sw = a->stride_w,
                     .ph = a->pad_h,
                     .pw = a->pad_w,
                     .dh = a->dilation_h,
                     .dw = a->dilation_w,
                     .groups = a->groups > 0 ? a->groups : 1,
                     .sbias = a->bias.rank > 0 ? (int32_t)a->bias.strides[0] : 0};
  for (int i = 0; i < 4; i++) {
    p.sx[i] = (int32_t)a->x.strides[i];
    p.sww[i] = (int32_t)a->w.strides[i];
    p.sy[i] = (int32_t)a->y.strides[i];
  }
  int64_t npix = (int64_t)p.N * p.P * p.Q, kg = p.K / p.groups;
  if (npix == 0 || kg == 0) return BP_OK;
  if (p.groups > 1 && p.groups == p.C && (uint32_t)p.K <= s->d->caps.max_groups[1] &&
      (uint32_t)p.N <= s->d->caps.max_groups[2])
    return conv_dw_record(s, &p, a);
  char name[32];
  kernel_name(name, sizeof name, "conv", a->x.dtype);
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, (uint32_t)((npix + 63) / 64),
                      (uint32_t)((kg + 15) / 16), (uint32_t)p.groups);
}

bp_status_t vkb_op_conv2d(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                          const bp_conv2d_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, conv_record(s, a))
}

/* ---- batch norm -----------------------------------------------------------*/

/* Matches bnorm.comp's parameter block. */
typedef struct bnorm_params {
  uint64_t x, y, mean, var, scale, bias;
  int32_t n, rank, C, inner;
  int32_t smean, svar, sscale, sbias;
  float eps, pad;
  int32_t shape[BP_MAX_RANK], sy[BP_MAX_RANK], sx[BP_MAX_RANK];
} bnorm_params_t;

static bp_status_t bnorm_record(vkb_stream_t *s, const bp_batch_norm_args_t *a) {
  const bp_plugin_tensor_t *ts[2] = {&a->y, &a->x};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, &a->y, ts, 2, "batch_norm");
  if (st != BP_OK || nd.n == 0) return st;
  int64_t inner = 1;
  for (int i = 2; i < a->x.rank; i++) inner *= a->x.shape[i];
  bnorm_params_t p = {.x = vkb_tensor_addr(&a->x),
                      .y = vkb_tensor_addr(&a->y),
                      .mean = vkb_tensor_addr(&a->mean),
                      .var = vkb_tensor_addr(&a->var),
                      .scale = vkb_tensor_addr(&a->scale),
                      .bias = vkb_tensor_addr(&a->bias),
                      .n = nd.n,
                      .rank = nd.rank,
                      .C = (int32_t)a->x.shape[1],
                      .inner = (int32_t)(inner ? inner : 1),
                      .smean = (int32_t)a->mean.strides[0],
                      .svar = (int32_t)a->var.strides[0],
                      .sscale = (int32_t)a->scale.strides[0],
                      .sbias = (int32_t)a->bias.strides[0],
                      .eps = (float)a->eps};
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sy, nd.strides[0], sizeof p.sy);
  memcpy(p.sx, nd.strides[1], sizeof p.sx);
  char name[32];
  kernel_name(name, sizeof name, "bnorm", a->x.dtype);
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

bp_status_t vkb_op_batch_norm(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                              const bp_batch_norm_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, bnorm_record(s, a))
}

/* ---- pool2d ----------------------------------------------------------------*/

/* Matches pool.comp's parameter block. */
typedef struct pool_params {
  uint64_t x, y;
  int32_t N, C, H, W, P, Q, kh, kw, sh, sw, ph, pw, kind, include_pad;
  int32_t sx[4], sy[4];
} pool_params_t;

static bp_status_t pool_record(vkb_stream_t *s, const bp_pool2d_args_t *a) {
  const bp_plugin_tensor_t *ts[2] = {&a->x, &a->y};
  if (!all_fit(ts, 2)) return too_big("pool2d");
  pool_params_t p = {.x = vkb_tensor_addr(&a->x),
                     .y = vkb_tensor_addr(&a->y),
                     .N = (int32_t)a->x.shape[0],
                     .C = (int32_t)a->x.shape[1],
                     .H = (int32_t)a->x.shape[2],
                     .W = (int32_t)a->x.shape[3],
                     .P = (int32_t)a->y.shape[2],
                     .Q = (int32_t)a->y.shape[3],
                     .kh = a->kernel_h,
                     .kw = a->kernel_w,
                     .sh = a->stride_h,
                     .sw = a->stride_w,
                     .ph = a->pad_h,
                     .pw = a->pad_w,
                     .kind = (int32_t)a->kind,
                     .include_pad = a->count_include_pad != 0};
  for (int i = 0; i < 4; i++) {
    p.sx[i] = (int32_t)a->x.strides[i];
    p.sy[i] = (int32_t)a->y.strides[i];
  }
  int64_t total = (int64_t)p.N * p.C * p.P * p.Q;
  if (total == 0) return BP_OK;
  char name[32];
  kernel_name(name, sizeof name, "pool", a->x.dtype);
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, vkb_groups_1d(s->d, total, 256), 1, 1);
}

bp_status_t vkb_op_pool2d(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                          const bp_pool2d_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, pool_record(s, a))
}

/* ---- softmax, layer norm, RMS norm: rows.glsl (ops_reduce.c) -------------*/

static bp_status_t softmax_record(vkb_stream_t *s, const bp_softmax_args_t *a) {
  vkb_rows_params_t p;
  int axis = a->axis < 0 ? a->axis + a->x.rank : a->axis;
  bp_status_t st = vkb_rows_make(&p, &a->x, &a->y, axis, "softmax");
  if (st != BP_OK) return st;
  p.op = a->log != 0;
  return vkb_rows_dispatch(s, "softmax", a->x.dtype, &p);
}

bp_status_t vkb_op_softmax(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                           const bp_softmax_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, softmax_record(s, a))
}

static bp_status_t norm_record(vkb_stream_t *s, const bp_norm_args_t *a, bool rms) {
  vkb_rows_params_t p;
  bp_status_t st = vkb_rows_make(&p, &a->x, &a->y, a->x.rank - 1, "norm");
  if (st != BP_OK) return st;
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
  return vkb_rows_dispatch(s, "norm", a->x.dtype, &p);
}

bp_status_t vkb_op_layer_norm(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                              const bp_norm_args_t *a){
    VKB_ON_STREAM(dev, stream, s, norm_record(s, a, false))}

bp_status_t
    vkb_op_rms_norm(bp_plugin_device_t *dev, bp_plugin_stream_t *stream, const bp_norm_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, norm_record(s, a, true))
}

/* ---- adam ------------------------------------------------------------------*/

/* Matches adam.comp's parameter block. */
typedef struct adam_params {
  uint64_t prm, grad, m, v;
  int32_t n, rank, adamw, pad;
  float lr, beta1, beta2, eps, wd, step_size, bc2_sqrt, pad2;
  int32_t shape[BP_MAX_RANK], sp[BP_MAX_RANK], sg[BP_MAX_RANK], sm[BP_MAX_RANK], sv[BP_MAX_RANK];
} adam_params_t;

static bp_status_t adam_one(vkb_stream_t *s, const bp_adam_args_t *a, uint32_t i) {
  const bp_plugin_tensor_t *ts[4] = {&a->params[i], &a->grads[i], &a->exp_avg[i],
                                     &a->exp_avg_sq[i]};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, ts[0], ts, 4, "adam");
  if (st != BP_OK || nd.n == 0) return st;
  /* Bias corrections in double, as PyTorch computes them on the host. */
  double bc1 = 1.0 - pow(a->beta1, (double)a->step);
  double bc2 = 1.0 - pow(a->beta2, (double)a->step);
  adam_params_t p = {.prm = vkb_tensor_addr(ts[0]),
                     .grad = vkb_tensor_addr(ts[1]),
                     .m = vkb_tensor_addr(ts[2]),
                     .v = vkb_tensor_addr(ts[3]),
                     .n = nd.n,
                     .rank = nd.rank,
                     .adamw = a->adamw != 0,
                     .lr = (float)a->lr,
                     .beta1 = (float)a->beta1,
                     .beta2 = (float)a->beta2,
                     .eps = (float)a->eps,
                     .wd = (float)a->weight_decay,
                     .step_size = (float)(a->lr / bc1),
                     .bc2_sqrt = (float)sqrt(bc2)};
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sp, nd.strides[0], sizeof p.sp);
  memcpy(p.sg, nd.strides[1], sizeof p.sg);
  memcpy(p.sm, nd.strides[2], sizeof p.sm);
  memcpy(p.sv, nd.strides[3], sizeof p.sv);
  char name[32];
  kernel_name(name, sizeof name, "adam", ts[0]->dtype);
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

static bp_status_t adam_record(vkb_stream_t *s, const bp_adam_args_t *a) {
  bp_status_t st = BP_OK;
  for (uint32_t i = 0; i < a->count && st == BP_OK; i++) st = adam_one(s, a, i);
  return st;
}

bp_status_t vkb_op_adam(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                        const bp_adam_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, adam_record(s, a))
}
