/*
 * ops_dnn_conv.c — conv2d on CPU implementations of Vulkan (lavapipe) as an
 * implicit GEMM on the texel kernels of ops_blas_texel.c: the weights of
 * every group are packed once as A panels ([group][K/g rows][C/g·R·S]);
 * the GEMM's k axis is (c, r, s), its n axis (p, q), the groups its batch,
 * and the bias is added in its epilogue.
 *
 * B, the image side, is read in place by gemmtex's _conv variant: from the
 * image itself through an r32f view when it is f32 and unpadded (bf16 and
 * unpadded: through an r16ui view by the _convx variant, which widens each
 * value as it loads it), else from a zero-padded f32 copy of it
 * (convpad.comp: the image plus its border, converted from f16 / bf16), so
 * the kernel has no bounds checks. BACKPLANE_VK_CONV_BX=0 sends bf16
 * through the copy.
 * im2col panels (convpack.comp: every input pixel written R·S times, then
 * read by gemmtex as packed B panels) are the other path, kept for
 * BACKPLANE_VK_CONV_IMPLICIT=0 and for builds without the _conv kernels.
 */
#include <stdio.h>
#include <string.h>

#include "vkb.h"

static int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

/* Matches convpack.comp's parameter block. */
typedef struct convpack_params {
  uint64_t x;
  int32_t cg, H, W, R, S, P, Q;
  int32_t sh, sw, ph, pw, dh, dw;
  int32_t sc, sy, sx;
  int32_t kp, xp, bw, shift;
} convpack_params_t;

/* Matches convpad.comp's parameter block. */
typedef struct convpad_params {
  uint64_t x;
  int32_t C, H, W, ph, pw, sc, sy, sx;
  int32_t texels, shift;
} convpad_params_t;

/* The shape of one call, shared by both ways of building B. */
typedef struct conv_shape {
  int64_t N, C, H, W, K, R, S, P, Q, groups, cg, kg, crs, pq;
  bool bx; /* bf16 x read in place by the _convx variant */
} conv_shape_t;

static conv_shape_t shape_of(const bp_conv2d_args_t *a) {
  conv_shape_t c = {.N = a->x.shape[0],
                    .C = a->x.shape[1],
                    .H = a->x.shape[2],
                    .W = a->x.shape[3],
                    .K = a->w.shape[0],
                    .R = a->w.shape[2],
                    .S = a->w.shape[3],
                    .P = a->y.shape[2],
                    .Q = a->y.shape[3],
                    .groups = a->groups > 0 ? a->groups : 1};
  c.cg = c.C / c.groups, c.kg = c.K / c.groups, c.crs = c.cg * c.R * c.S, c.pq = c.P * c.Q;
  return c;
}

/* Records a dispatch whose source x is read through an r32f view where
 * one fits (the kernel's _tex variant, tex_name) else through its address
 * (name); views[0] is the destination. */
static bp_status_t dispatch_src(vkb_stream_t *s, const char *family, const bp_plugin_tensor_t *X,
                                int64_t n, void *params, uint32_t psize, int32_t *shift,
                                VkBufferView dst, uint32_t gx, uint32_t gz) {
  VkBufferView v[2] = {dst, VK_NULL_HANDLE};
  char name[32];
  snprintf(name, sizeof name, "%s_f32_tex", family);
  bool tex = vkb_kernel_present(name) &&
             vkb_texel_src_view(s, X, n * X->strides[0], &v[1], shift) == BP_OK;
  snprintf(name, sizeof name, "%s_%s%s", family, vkb_dtype_tag(X->dtype), tex ? "_tex" : "");
  bp_status_t st = vkb_dispatch_views(s, name, NULL, 0, params, psize, v, tex ? 2 : 1, gx, 1, gz);
  if (v[1]) /* after recording: see vkb_texel_release */
    vkb_stream_release_view(s, v[1]);
  return st;
}

static uint32_t grid_x(int64_t texels) {
  int64_t g = (texels + 63) / 64; /* the kernels loop over the texels past their grid */
  return g > 4096 ? 4096u : (uint32_t)g;
}

/* Records convpack.comp for image n into view (im2col panels). */
static bp_status_t convpack(vkb_stream_t *s, VkBufferView view, const bp_conv2d_args_t *a,
                            const conv_shape_t *c, int64_t n, int64_t np, int64_t bn) {
  const bp_plugin_tensor_t *X = &a->x;
  convpack_params_t cp = {.x = vkb_tensor_addr(X) +
                               (uint64_t)(n * X->strides[0]) * vkb_dtype_size(X->dtype),
                          .cg = (int32_t)c->cg,
                          .H = (int32_t)c->H,
                          .W = (int32_t)c->W,
                          .R = (int32_t)c->R,
                          .S = (int32_t)c->S,
                          .P = (int32_t)c->P,
                          .Q = (int32_t)c->Q,
                          .sh = a->stride_h,
                          .sw = a->stride_w,
                          .ph = a->pad_h,
                          .pw = a->pad_w,
                          .dh = a->dilation_h,
                          .dw = a->dilation_w,
                          .sc = (int32_t)X->strides[1],
                          .sy = (int32_t)X->strides[2],
                          .sx = (int32_t)X->strides[3],
                          .kp = (int32_t)c->crs,
                          .xp = (int32_t)np,
                          .bw = (int32_t)bn};
  return dispatch_src(s, "convpack", X, n, &cp, sizeof cp, &cp.shift, view, grid_x(c->crs * np / 4),
                      (uint32_t)c->groups);
}

/* The gemmtex parameters every image shares: C = y of image n. */
static vkb_texel_params_t gemm_params(const bp_conv2d_args_t *a, const conv_shape_t *c, int64_t n,
                                      int64_t mp) {
  const bp_plugin_tensor_t *Y = &a->y;
  bool bias = a->bias.rank > 0;
  return (vkb_texel_params_t){.c = vkb_tensor_addr(Y) +
                                   (uint64_t)(n * Y->strides[0]) * vkb_dtype_size(Y->dtype),
                              .m = (int32_t)c->kg,
                              .n = (int32_t)c->pq,
                              .kp = (int32_t)c->crs,
                              .beta_zero = 1,
                              .scb = (int32_t)(c->kg * Y->strides[1]),
                              .scm = (int32_t)Y->strides[1],
                              .scn = (int32_t)Y->strides[3],
                              .pab = (int32_t)(mp * c->crs / 4),
                              .alpha = 1.0f,
                              .bg = 1,
                              .amod = (int32_t)c->groups,
                              .has_bias = bias,
                              .sbias = bias ? (int32_t)a->bias.strides[0] : 0,
                              .sbb = bias ? (int32_t)(c->kg * a->bias.strides[0]) : 0,
                              .bias = bias ? vkb_tensor_addr(&a->bias) : 0};
}

/* ---- B in place ------------------------------------------------------------*/

/* Where gemmtex's _conv variant reads image n: an r32f view of x itself
 * (no padding) or of the padded copy in pad_alloc (convpad.comp recorded
 * here), with the element strides of channel, row and column in it. */
typedef struct conv_src {
  VkBufferView view; /* released by the caller after recording */
  int32_t shift, sc, sy, sx;
} conv_src_t;

/* Whether B is read from a padded f32 copy of the image: padding, or an
 * x that is not f32 (the copy converts it) and not read as bf16 in place. */
static bool needs_copy(const bp_conv2d_args_t *a, const conv_shape_t *c) {
  return a->pad_h != 0 || a->pad_w != 0 || (a->x.dtype != BP_F32 && !c->bx);
}

/* x's bytes from element elem_off of a bf16 tensor to the end of its
 * allocation, from a 16-byte aligned base (the view's offset): the base
 * and elem_off's index in an r16ui view of them. */
static bool bf16_span(vkb_stream_t *s, const bp_plugin_tensor_t *t, int64_t elem_off,
                      uint64_t *base, uint64_t *range, int32_t *shift) {
  vkb_alloc_t *al = vkb_ptr(t->ptr);
  uint64_t byte = al->offset + t->offset + (uint64_t)elem_off * 2, end = al->offset + al->size;
  *base = byte & ~(uint64_t)15;
  *range = (end - *base) & ~(uint64_t)1;
  *shift = (int32_t)((byte - *base) / 2);
  return byte < end && *range / 2 <= s->d->caps.max_texels;
}

/* An r16ui view of bf16 x from element elem_off on (the _convx variant's
 * binding 1), and that element's index in it. */
static bp_status_t bf16_view(vkb_stream_t *s, const bp_plugin_tensor_t *t, int64_t elem_off,
                             VkBufferView *out_view, int32_t *out_shift) {
  uint64_t base, range;
  *out_view = VK_NULL_HANDLE;
  if (!bf16_span(s, t, elem_off, &base, &range, out_shift)) return BP_ERR_UNSUPPORTED;
  VkBufferViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                               .buffer = vkb_ptr(t->ptr)->block->buf,
                               .format = VK_FORMAT_R16_UINT,
                               .offset = base,
                               .range = range};
  return vkb_check(s->d->fn.vkCreateBufferView(s->d->dev, &vi, NULL, out_view),
                   "vkCreateBufferView");
}

/* Whether the _convx variant reads bf16 x in place: no padding (the copy
 * adds the border), r16ui texel buffers, its kernel (gemm, the _conv name
 * plus "x") built, not turned off, and the whole tensor fits one view. */
static bool bf16_in_place(vkb_stream_t *s, const bp_conv2d_args_t *a, const char *gemm) {
  const char *on = vkb_host && vkb_host->getenv ? vkb_host->getenv("BACKPLANE_VK_CONV_BX") : NULL;
  uint64_t base, range;
  int32_t shift;
  return a->x.dtype == BP_BF16 && a->pad_h == 0 && a->pad_w == 0 && s->d->caps.texel_r16 &&
         !(on && strcmp(on, "0") == 0) && vkb_kernel_present(gemm) &&
         bf16_span(s, &a->x, 0, &base, &range, &shift);
}

/* The padded copy's elements, rounded up to whole texels. */
static int64_t pad_elems(const bp_conv2d_args_t *a, const conv_shape_t *c) {
  return round_up(c->C * (c->H + 2 * a->pad_h) * (c->W + 2 * a->pad_w), 4);
}

static bp_status_t conv_source(vkb_stream_t *s, const bp_conv2d_args_t *a, const conv_shape_t *c,
                               int64_t n, vkb_alloc_t *pad_alloc, VkBufferView pad_view,
                               conv_src_t *out) {
  const bp_plugin_tensor_t *X = &a->x;
  memset(out, 0, sizeof *out);
  if (!pad_alloc) { /* no padding: x itself */
    out->sc = (int32_t)X->strides[1], out->sy = (int32_t)X->strides[2];
    out->sx = (int32_t)X->strides[3];
    return c->bx ? bf16_view(s, X, n * X->strides[0], &out->view, &out->shift)
                 : vkb_texel_src_view(s, X, n * X->strides[0], &out->view, &out->shift);
  }
  int64_t Wp = c->W + 2 * a->pad_w;
  convpad_params_t p = {.x = vkb_tensor_addr(X) +
                             (uint64_t)(n * X->strides[0]) * vkb_dtype_size(X->dtype),
                        .C = (int32_t)c->C,
                        .H = (int32_t)c->H,
                        .W = (int32_t)c->W,
                        .ph = a->pad_h,
                        .pw = a->pad_w,
                        .sc = (int32_t)X->strides[1],
                        .sy = (int32_t)X->strides[2],
                        .sx = (int32_t)X->strides[3],
                        .texels = (int32_t)(pad_elems(a, c) / 4)};
  bp_status_t st =
      dispatch_src(s, "convpad", X, n, &p, sizeof p, &p.shift, pad_view, grid_x(p.texels), 1);
  bp_plugin_tensor_t t = {.ptr = (uint64_t)(uintptr_t)pad_alloc, .dtype = BP_F32};
  if (st == BP_OK) st = vkb_texel_src_view(s, &t, 0, &out->view, &out->shift);
  out->sc = (int32_t)((c->H + 2 * a->pad_h) * Wp), out->sy = (int32_t)Wp, out->sx = 1;
  return st;
}

/* Whether the _conv path applies: its kernel is built, it is not turned
 * off, x's strides are not negative (the view starts at element 0) and
 * every index fits the view. */
static bool implicit_wanted(vkb_stream_t *s, const bp_conv2d_args_t *a, const conv_shape_t *c,
                            const char *gemm) {
  const bp_plugin_tensor_t *X = &a->x;
  const char *on =
      vkb_host && vkb_host->getenv ? vkb_host->getenv("BACKPLANE_VK_CONV_IMPLICIT") : NULL;
  if ((on && strcmp(on, "0") == 0) || !vkb_kernel_present(gemm)) return false;
  for (int i = 0; i < 4; i++)
    if (X->strides[i] < 0) return false;
  if (!needs_copy(a, c)) return true;
  char pad[32];
  snprintf(pad, sizeof pad, "convpad_%s", vkb_dtype_tag(X->dtype));
  return vkb_kernel_present(pad) && (uint64_t)pad_elems(a, c) / 4 <= s->d->caps.max_texels &&
         pad_elems(a, c) <= INT32_MAX;
}

static bp_status_t conv_implicit(vkb_stream_t *s, const bp_conv2d_args_t *a, const conv_shape_t *c,
                                 const char *gemm, VkBufferView wview, int64_t mp, int64_t bn,
                                 int64_t bm) {
  vkb_alloc_t *pad_alloc = NULL;
  VkBufferView pad_view = VK_NULL_HANDLE;
  bp_status_t st = BP_OK;
  if (needs_copy(a, c)) /* one copy, reused by every image (the stream orders it) */
    st = vkb_texel_scratch(s->d, (uint64_t)pad_elems(a, c) * 4, &pad_alloc, &pad_view);
  int64_t np = round_up(c->pq, bn);
  for (int64_t n = 0; n < c->N && st == BP_OK; n++) {
    conv_src_t src;
    st = conv_source(s, a, c, n, pad_alloc, pad_view, &src);
    if (st == BP_OK) {
      vkb_texel_params_t p = gemm_params(a, c, n, mp);
      p.pbb = (int32_t)(c->cg * src.sc);
      p.xshift = src.shift;
      p.cq = (int32_t)c->Q, p.cs = (int32_t)c->S, p.cr = (int32_t)c->R;
      p.cdx = a->dilation_w * src.sx, p.cdy = a->dilation_h * src.sy, p.csc = src.sc;
      p.shy = a->stride_h * src.sy, p.swx = a->stride_w * src.sx;
      VkBufferView v[3] = {wview, src.view, VK_NULL_HANDLE};
      st = vkb_texel_gemm_into(s, gemm, &p, v, &a->y, n * a->y.strides[0], (uint32_t)(np / bn),
                               (uint32_t)(mp / bm), (uint32_t)c->groups);
    }
    if (src.view) /* after recording: see vkb_texel_release */
      vkb_stream_release_view(s, src.view);
  }
  vkb_texel_release(s, &pad_alloc, &pad_view, 1);
  return st;
}

/* ---- B as im2col panels ----------------------------------------------------*/

static bp_status_t conv_im2col(vkb_stream_t *s, const bp_conv2d_args_t *a, const conv_shape_t *c,
                               const char *gemm, VkBufferView wview, int64_t mp, int64_t bn,
                               int64_t bm) {
  int64_t np = round_up(c->pq, bn);
  uint64_t bytes = (uint64_t)(c->groups * np * c->crs * 4);
  if (bytes / 16 > s->d->caps.max_texels || bytes / 4 > INT32_MAX)
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: conv2d: too large for texel buffers");
  vkb_alloc_t *sc = NULL;
  VkBufferView vw[3] = {wview, VK_NULL_HANDLE, VK_NULL_HANDLE};
  bp_status_t st = vkb_texel_scratch(s->d, bytes, &sc, &vw[1]);
  for (int64_t n = 0; n < c->N && st == BP_OK; n++) {
    st = convpack(s, vw[1], a, c, n, np, bn);
    if (st != BP_OK) break;
    vkb_texel_params_t p = gemm_params(a, c, n, mp);
    p.pbb = (int32_t)(np * c->crs / 4);
    st = vkb_texel_gemm_into(s, gemm, &p, vw, &a->y, n * a->y.strides[0], (uint32_t)(np / bn),
                             (uint32_t)(mp / bm), (uint32_t)c->groups);
  }
  vkb_texel_release(s, &sc, &vw[1], 1);
  return st;
}

bp_status_t vkb_conv2d_texel(vkb_stream_t *s, const bp_conv2d_args_t *a) {
  vkb_device_t *d = s->d;
  const bp_plugin_tensor_t *Wt = &a->w, *Y = &a->y;
  conv_shape_t c = shape_of(a);
  /* The GEMM's k axis is (c, r, s) flattened and its n axis (p, q): the
   * weights and y must be contiguous across those dims. */
  bool flat = Wt->strides[2] == c.S * Wt->strides[3] &&
              Wt->strides[1] == c.R * c.S * Wt->strides[3] && Y->strides[2] == c.Q * Y->strides[3];
  if (!vkb_texel_wanted(d) || !vkb_kernel_present("convpack_f32") || !flat || c.crs == 0 ||
      c.kg < 4 || c.pq < 4 || c.kg * c.pq * c.crs < 4096)
    return BP_ERR_UNSUPPORTED;
  if (c.N == 0) return BP_OK;
  const vkb_texel_tile_t *t = vkb_texel_tile(d);
  int64_t bm = t->tm * t->wy, bn = t->tn * t->wx;
  int64_t mp = round_up(c.kg, bm), np = round_up(c.pq, bn);
  uint64_t wbytes = (uint64_t)(c.groups * mp * c.crs * 4);
  if (wbytes / 16 > d->caps.max_texels || wbytes / 4 > INT32_MAX)
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: conv2d: too large for texel buffers");
  if (np / bn > d->caps.max_groups[0] || mp / bm > d->caps.max_groups[1] ||
      c.groups > d->caps.max_groups[2])
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: conv2d: grid beyond the device's limits");
  const char *dt = vkb_dtype_tag(a->x.dtype);
  char gemm[48];
  snprintf(gemm, sizeof gemm, "gemmtex_%s_%s_convx", dt, t->name);
  c.bx = bf16_in_place(s, a, gemm);
  if (!c.bx) gemm[strlen(gemm) - 1] = '\0'; /* the _conv variant */
  bool implicit = implicit_wanted(s, a, &c, gemm);
  if (!implicit) snprintf(gemm, sizeof gemm, "gemmtex_%s_%s", dt, t->name);
  vkb_log(BP_LOG_DEBUG, "conv2d %lldx%lld K%lld %lldx%lld g%lld: %s", (long long)c.C,
          (long long)c.H, (long long)c.K, (long long)c.R, (long long)c.S, (long long)c.groups,
          !implicit           ? "im2col panels"
          : needs_copy(a, &c) ? "implicit GEMM on a padded copy"
          : c.bx              ? "implicit GEMM on bf16 x in place"
                              : "implicit GEMM on x in place");
  vkb_alloc_t *wsc = NULL;
  VkBufferView wview = VK_NULL_HANDLE;
  bp_status_t st = vkb_texel_scratch(d, wbytes, &wsc, &wview);
  if (st == BP_OK) /* weights: rows k of group g, columns crs */
    st = vkb_texel_pack(s, wview, Wt, 0, c.groups, c.crs, c.crs, c.kg, mp, c.kg * Wt->strides[0],
                        Wt->strides[3], Wt->strides[0], (uint32_t)bm);
  if (st == BP_OK)
    st = implicit ? conv_implicit(s, a, &c, gemm, wview, mp, bn, bm)
                  : conv_im2col(s, a, &c, gemm, wview, mp, bn, bm);
  vkb_texel_release(s, &wsc, &wview, 1);
  return st;
}
