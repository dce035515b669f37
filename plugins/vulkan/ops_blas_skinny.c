/*
 * ops_blas_skinny.c — GEMM with at most 16 rows of C (gemv.comp) on CPU
 * implementations of Vulkan (lavapipe): B, the big operand, is read once
 * through a texel view of its own buffer (rgba32f when its rows are
 * contiguous and 16-byte aligned, else r32f), with no packing pass over
 * it; A (m x k) is packed k-major into one rgba32f panel (gemmpack.comp).
 * The tiled texel GEMM (ops_blas_texel.c) would pad m to its tile and copy
 * all of B first.
 */
#include <stdio.h>

#include "vkb.h"

/* Rows of C the kernel keeps in registers. */
#define SKINNY_MAX_M 16

/* Matches gemv.comp's parameter block. */
typedef struct skinny_params {
  uint64_t c;
  int32_t m, n, k, kq, sbb, sbk, sbn, shift, pab, scb, scm, scn, beta_zero;
  float alpha, beta;
  int32_t pad0;
  uint64_t bias;
  int32_t has_bias, sxb, sxm, sxn;
} skinny_params_t;

/* B's buffer from its element 0 on as rgba32f texels (the caller checked
 * the 16-byte alignment through the r32f view's shift). */
static bp_status_t vec4_view(vkb_stream_t *s, const bp_plugin_tensor_t *t, VkBufferView *out) {
  vkb_alloc_t *al = vkb_ptr(t->ptr);
  uint64_t base = al->offset + t->offset, end = al->offset + al->size;
  if ((end - base) / 16 > s->d->caps.max_texels) return BP_ERR_UNSUPPORTED;
  VkBufferViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                               .buffer = al->block->buf,
                               .format = VK_FORMAT_R32G32B32A32_SFLOAT,
                               .offset = base,
                               .range = (end - base) & ~(uint64_t)15};
  return vkb_check(s->d->fn.vkCreateBufferView(s->d->dev, &vi, NULL, out), "vkCreateBufferView");
}

bp_status_t vkb_gemm_skinny(vkb_stream_t *s, const bp_gemm_args_t *g) {
  const bp_plugin_tensor_t *A = &g->a, *B = &g->b, *C = &g->c;
  int64_t batch = C->shape[0], m = C->shape[1], n = C->shape[2], k = A->shape[2];
  char name[32];
  snprintf(name, sizeof name, "gemv_%s", vkb_dtype_tag(C->dtype));
  if (m > SKINNY_MAX_M || k == 0 || B->dtype != BP_F32 || !vkb_texel_wanted(s->d) ||
      !vkb_kernel_present(name) || batch > s->d->caps.max_groups[2] ||
      (n + 255) / 256 > s->d->caps.max_groups[0])
    return BP_ERR_UNSUPPORTED;
  /* One row (the matrix-vector product) gets a one-row variant: padding it
   * to four would quadruple the kernel's arithmetic and A loads. */
  int64_t mb = m == 1 ? 1 : (m + 3) / 4 * 4, kpad = (k + 3) / 4 * 4;
  int64_t na = A->strides[0] == 0 ? 1 : batch;
  uint64_t abytes = (uint64_t)(na * kpad * mb) * 4;
  if (abytes / 16 > s->d->caps.max_texels) return BP_ERR_UNSUPPORTED;
  vkb_alloc_t *sc[3] = {NULL, NULL, NULL};
  VkBufferView views[3] = {VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE};
  skinny_params_t p = {.c = vkb_tensor_addr(C),
                       .m = (int32_t)m,
                       .n = (int32_t)n,
                       .k = (int32_t)k,
                       .kq = (int32_t)(kpad / 4),
                       .sbb = (int32_t)B->strides[0],
                       .sbk = (int32_t)B->strides[1],
                       .sbn = (int32_t)B->strides[2],
                       .pab = na == 1 ? 0 : (int32_t)(kpad * mb / 4),
                       .scb = (int32_t)C->strides[0],
                       .scm = (int32_t)C->strides[1],
                       .scn = (int32_t)C->strides[2],
                       .beta_zero = g->beta == 0.0,
                       .alpha = (float)g->alpha,
                       .beta = (float)g->beta};
  vkb_epilogue_t ep;
  vkb_gemm_epilogue(g, &ep);
  p.bias = ep.bias, p.has_bias = ep.has_bias, p.sxb = ep.sxb, p.sxm = ep.sxm, p.sxn = ep.sxn;
  bp_status_t st = vkb_texel_src_view(s, B, 0, &views[1], &p.shift);
  if (st != BP_OK) {
    vkb_texel_release(s, sc, views, 3);
    return BP_ERR_UNSUPPORTED; /* B beyond a texel view: the general path */
  }
  /* Whole texels of four columns: contiguous rows starting 16-byte aligned. */
  uint32_t vec = B->strides[2] == 1 && n % 4 == 0 && p.shift % 4 == 0 && B->strides[1] % 4 == 0 &&
                 (batch == 1 || B->strides[0] % 4 == 0) && vec4_view(s, B, &views[2]) == BP_OK;
  st = vkb_texel_scratch(s->d, abytes, &sc[0], &views[0]);
  /* A k-major: "x" runs over k, "p" over the rows, one panel kpad wide */
  if (st == BP_OK)
    st = vkb_texel_pack(s, views[0], A, 0, na, m, mb, k, kpad, A->strides[0], A->strides[1],
                        A->strides[2], (uint32_t)kpad);
  uint32_t spec[3] = {(uint32_t)mb, vec, ep.act};
  /* binding 2 must hold an rgba32f view even where the kernel skips it */
  VkBufferView bound[3] = {views[0], views[1], vec ? views[2] : views[0]};
  if (st == BP_OK)
    st = vkb_dispatch_views(s, name, spec, 3, &p, sizeof p, bound, 3, (uint32_t)((n + 255) / 256),
                            1, (uint32_t)batch);
  vkb_texel_release(s, sc, views, 3);
  return st;
}
