/*
 * conv_texel.c — conv2d on CPU implementations of Vulkan (lavapipe) as an
 * implicit GEMM through the texel kernels: the weights of every group are
 * packed once as A panels ([group][K/g rows][C/g·R·S]), then per image
 * convpack.comp writes the im2col B panels ([group][P·Q][C/g·R·S]) and
 * gemmtex multiplies them with the groups as its batch, adding the bias in
 * its epilogue. The direct kernel (conv.comp) reads x and w through
 * per-lane loads, which llvmpipe runs as scalar loops.
 */
#include <stdio.h>

#include "ops.h"

/* Matches convpack.comp's parameter block. */
typedef struct convpack_params {
  uint64_t x;
  int32_t cg, H, W, R, S, P, Q;
  int32_t sh, sw, ph, pw, dh, dw;
  int32_t sc, sy, sx;
  int32_t kp, xp, bw;
} convpack_params_t;

static int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

bp_status_t vkb_conv2d_texel(vkb_stream_t *s, const bp_conv2d_args_t *a) {
  vkb_device_t *d = s->d;
  const bp_plugin_tensor_t *X = &a->x, *Wt = &a->w, *Y = &a->y;
  int64_t N = X->shape[0], C = X->shape[1], K = Wt->shape[0], R = Wt->shape[2], S = Wt->shape[3],
          P = Y->shape[2], Q = Y->shape[3], groups = a->groups > 0 ? a->groups : 1;
  int64_t cg = C / groups, kg = K / groups, crs = cg * R * S, pq = P * Q;
  /* The GEMM's k axis is (c, r, s) flattened and its n axis (p, q): the
   * weights and y must be contiguous across those dims. */
  bool flat = Wt->strides[2] == S * Wt->strides[3] && Wt->strides[1] == R * S * Wt->strides[3] &&
              Y->strides[2] == Q * Y->strides[3];
  if (!vkb_texel_wanted(d) || !vkb_kernel_present("convpack_f32") || !flat || crs == 0 || kg < 4 ||
      pq < 4 || kg * pq * crs < 4096)
    return BP_ERR_UNSUPPORTED;
  if (N == 0) return BP_OK;
  const vkb_texel_tile_t *t = vkb_texel_tile(d);
  int64_t bm = t->tm * t->wy, bn = t->tn * t->wx;
  int64_t mp = round_up(kg, bm), np = round_up(pq, bn);
  uint64_t bytes[2] = {(uint64_t)(groups * mp * crs * 4), (uint64_t)(groups * np * crs * 4)};
  for (int i = 0; i < 2; i++)
    if (bytes[i] / 16 > d->caps.max_texels || bytes[i] / 4 > INT32_MAX)
      return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: conv2d: too large for texel buffers");
  if (np / bn > d->caps.max_groups[0] || mp / bm > d->caps.max_groups[1] ||
      groups > d->caps.max_groups[2])
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: conv2d: grid beyond the device's limits");
  const char *dt = vkb_dtype_tag(X->dtype);
  uint64_t es = vkb_dtype_size(X->dtype);
  char gemm[40], packx[32];
  snprintf(gemm, sizeof gemm, "gemmtex_%s_%s", dt, t->name);
  snprintf(packx, sizeof packx, "convpack_%s", dt);
  vkb_alloc_t *sc[2] = {NULL, NULL};
  VkBufferView vw[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
  bp_status_t st = vkb_texel_scratch(d, bytes[0], &sc[0], &vw[0]);
  if (st == BP_OK) st = vkb_texel_scratch(d, bytes[1], &sc[1], &vw[1]);
  if (st == BP_OK) /* weights: rows k of group g, columns crs */
    st = vkb_texel_pack(s, vw[0], Wt, 0, groups, crs, crs, kg, mp, kg * Wt->strides[0],
                        Wt->strides[3], Wt->strides[0], (uint32_t)bm);
  for (int64_t n = 0; n < N && st == BP_OK; n++) {
    convpack_params_t cp = {.x = vkb_tensor_addr(X) + (uint64_t)(n * X->strides[0]) * es,
                            .cg = (int32_t)cg,
                            .H = (int32_t)X->shape[2],
                            .W = (int32_t)X->shape[3],
                            .R = (int32_t)R,
                            .S = (int32_t)S,
                            .P = (int32_t)P,
                            .Q = (int32_t)Q,
                            .sh = a->stride_h,
                            .sw = a->stride_w,
                            .ph = a->pad_h,
                            .pw = a->pad_w,
                            .dh = a->dilation_h,
                            .dw = a->dilation_w,
                            .sc = (int32_t)X->strides[1],
                            .sy = (int32_t)X->strides[2],
                            .sx = (int32_t)X->strides[3],
                            .kp = (int32_t)crs,
                            .xp = (int32_t)np,
                            .bw = (int32_t)bn};
    int64_t groups_x = (crs * np / 4 + 63) / 64;
    st = vkb_dispatch_views(s, packx, NULL, 0, &cp, sizeof cp, &vw[1], 1,
                            groups_x > 4096 ? 4096u : (uint32_t)groups_x, 1, (uint32_t)groups);
    if (st != BP_OK) break;
    vkb_texel_params_t p = {.c = vkb_tensor_addr(Y) + (uint64_t)(n * Y->strides[0]) * es,
                            .m = (int32_t)kg,
                            .n = (int32_t)pq,
                            .kp = (int32_t)crs,
                            .beta_zero = 1,
                            .scb = (int32_t)(kg * Y->strides[1]),
                            .scm = (int32_t)Y->strides[1],
                            .scn = (int32_t)Y->strides[3],
                            .pab = (int32_t)(mp * crs / 4),
                            .pbb = (int32_t)(np * crs / 4),
                            .alpha = 1.0f,
                            .bg = 1,
                            .amod = (int32_t)groups,
                            .has_bias = a->bias.rank > 0,
                            .sbias = a->bias.rank > 0 ? (int32_t)a->bias.strides[0] : 0,
                            .bias = a->bias.rank > 0 ? vkb_tensor_addr(&a->bias) : 0};
    /* binding 2 (C's view, unused: use_view is 0) needs a view */
    VkBufferView v3[3] = {vw[0], vw[1], vw[0]};
    st = vkb_dispatch_views(s, gemm, NULL, 0, &p, sizeof p, v3, 3, (uint32_t)(np / bn),
                            (uint32_t)(mp / bm), (uint32_t)groups);
  }
  vkb_texel_release(s, sc, vw, 2);
  return st;
}
