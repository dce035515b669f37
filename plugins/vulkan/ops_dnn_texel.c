/*
 * ops_dnn_texel.c — attention and conv2d on CPU implementations of Vulkan
 * (lavapipe), through the texel-buffer GEMM of ops_blas_texel.c. The
 * one-kernel paths (attention.comp, conv.comp) read their operands with
 * per-lane loads, which llvmpipe runs as scalar loops.
 *
 * Attention first tries the one-pass kernel of ops_dnn_flash.c; where that
 * does not apply (Dv past its tiles, BACKPLANE_VK_ATTN_FLASH=0) it runs as
 * the texel GEMM's pieces, with the scores never leaving the panel layout:
 *   pack Q, K (gemmpack) → S = scale·Q·Kᵀ + bias - ALiBi, masked (causal,
 *   window, key lengths), written as the A panels
 *   of the second product (gemmtex_score) → row softmax in place
 *   (attnsoftmax) → pack V → O = P·V (gemmtex).
 * Heads are processed in chunks whose scores fit ATTN_SCRATCH; the scratch
 * is allocated once per call and reused by every chunk (the stream's
 * barriers order the reuse). Grouped-query heads share K and V panels.
 * conv2d, which shares vkb_texel_gemm_into, is in
 * ops_dnn_conv.c.
 */
#include <stdio.h>

#include "vkb.h"

static int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

bp_status_t vkb_texel_gemm_into(vkb_stream_t *s, const char *name, vkb_texel_params_t *p,
                                VkBufferView *views, const bp_plugin_tensor_t *t, int64_t c_off,
                                uint32_t gx, uint32_t gy, uint32_t gz) {
  VkBufferView cv = VK_NULL_HANDLE;
  p->use_view = vkb_texel_src_view(s, t, c_off, &cv, &p->vshift) == BP_OK;
  /* binding 2 must hold a view even where the kernel does not touch it */
  VkBufferView bound[3] = {views[0], views[1], p->use_view ? cv : views[0]};
  bp_status_t st = vkb_dispatch_views(s, name, NULL, 0, p, sizeof *p, bound, 3, gx, gy, gz);
  if (cv) /* after recording: see vkb_texel_release */
    vkb_stream_release_view(s, cv);
  return st;
}

/* ---- attention -------------------------------------------------------------*/

#define ATTN_SCRATCH (64ull << 20) /* bytes of scores per chunk */

/* Matches attnsoftmax.comp's parameter block. */
typedef struct smx_params {
  int32_t quads, bm4, kp, causal, shift, pph;
  uint64_t inv_sums;
} smx_params_t;

/* The masks of ABI 1.5 for batch bi, heads h0.. of the score product
 * (gemmtex_score): element offsets and addresses of this chunk. */
static void score_masks(const bp_attention_args_t *a, int64_t bi, int64_t h0,
                        vkb_texel_params_t *p) {
  if (!vkb_attention_has_masks(a)) return;
  if (a->kv_lens.rank)
    p->kv_len = vkb_tensor_addr(&a->kv_lens) + (uint64_t)(bi * a->kv_lens.strides[0]) * 4;
  if (a->alibi_slopes.rank) {
    p->slopes = vkb_tensor_addr(&a->alibi_slopes) + (uint64_t)(h0 * a->alibi_slopes.strides[0]) * 4;
    p->slope_stride = (int32_t)a->alibi_slopes.strides[0];
  }
  p->alibi_heads = a->alibi_heads > 0 ? a->alibi_heads : 0;
  p->alibi_head0 = a->alibi_head_offset + (int32_t)h0;
  p->window = a->window > 0 ? a->window : 0;
  /* a sliding window is causal too: the tiles past the diagonal skip */
  p->causal |= p->window > 0;
  const bp_plugin_tensor_t *b = &a->bias;
  if (!b->rank) return;
  uint64_t es = vkb_dtype_size(b->dtype);
  uint64_t at = vkb_tensor_addr(b) + (uint64_t)(bi * b->strides[0] + h0 * b->strides[1]) * es;
  /* the kernel reads 4-byte words: a 16-bit bias may start mid-word */
  p->bias = at & ~(uint64_t)3;
  p->bias_shift = (int32_t)((at & 3) / es);
  p->bias_dt = b->dtype == BP_F32 ? 0 : b->dtype == BP_F16 ? 1 : 2;
  p->has_bias = 1;
  p->sbb = (int32_t)b->strides[1];
  p->sbias = (int32_t)b->strides[2];
  p->sbn = (int32_t)b->strides[3];
}

bp_status_t vkb_attention_texel(vkb_stream_t *s, const bp_attention_args_t *a) {
  vkb_device_t *d = s->d;
  const bp_plugin_tensor_t *Q = &a->q, *K = &a->k, *V = &a->v, *O = &a->out;
  int64_t B = Q->shape[0], Hq = Q->shape[1], Hkv = K->shape[1], Sq = Q->shape[2], Skv = K->shape[2],
          D = Q->shape[3], Dv = V->shape[3];
  if (!vkb_texel_wanted(d) || !vkb_kernel_present("attnsoftmax_f32") || Skv == 0 || D == 0 ||
      Hkv == 0 || Hq % Hkv != 0)
    return BP_ERR_UNSUPPORTED;
  bp_status_t fst = vkb_attention_flash(s, a);
  if (fst != BP_ERR_UNSUPPORTED) return fst;
  if (B == 0 || Hq == 0 || Sq == 0 || Dv == 0) return BP_OK;
  const vkb_texel_tile_t *t = vkb_texel_tile(d);
  int64_t G = Hq / Hkv, bm = t->tm * t->wy, bn = t->tn * t->wx;
  int64_t mp = round_up(Sq, bm), np1 = round_up(Skv, bn), np2 = round_up(Dv, bn);
  int64_t per_head = mp * np1 * 4, hc = (int64_t)ATTN_SCRATCH / per_head;
  hc = hc / G * G;
  if (hc < G) hc = G;
  if (hc > Hq) hc = Hq;
  int64_t hkc = hc / G;
  uint64_t bytes5[5] = {(uint64_t)(hc * mp * D * 4), (uint64_t)(hkc * np1 * D * 4),
                        (uint64_t)(hc * per_head), (uint64_t)(hkc * np2 * np1 * 4)},
           *bytes = bytes5;
  for (int i = 0; i < 4; i++)
    if (bytes[i] / 16 > d->caps.max_texels || bytes[i] / 4 > INT32_MAX)
      return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: attention: too large for texel buffers");
  if (np1 / bn > d->caps.max_groups[0] || np2 / bn > d->caps.max_groups[0] ||
      mp / bm > d->caps.max_groups[1] || hc > d->caps.max_groups[2])
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: attention: grid beyond the device's limits");
  const char *dt = vkb_dtype_tag(Q->dtype);
  uint64_t es = vkb_dtype_size(Q->dtype);
  int32_t window = vkb_attention_has_masks(a) && a->window > 0 ? a->window : 0;
  char gemm[40], score[40];
  snprintf(gemm, sizeof gemm, "gemmtex_%s_%s", dt, t->name);
  snprintf(score, sizeof score, "gemmtex_score_%s", t->name);
  /* qa: Q panels, kb: K panels, ps: scores / probabilities, vb: V panels,
   * rs: each row's 1 / sum, which the P·V product applies (the softmax
   * then leaves the scores unnormalised: one pass over them less) */
  vkb_alloc_t *sc[5] = {NULL, NULL, NULL, NULL, NULL};
  VkBufferView vw[5] = {VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE,
                        VK_NULL_HANDLE};
  bytes5[4] = (uint64_t)(hc * mp * 4);
  bp_status_t st = BP_OK;
  for (int i = 0; i < 5 && st == BP_OK; i++) st = vkb_texel_scratch(d, bytes5[i], &sc[i], &vw[i]);
  for (int64_t bi = 0; bi < B && st == BP_OK; bi++)
    for (int64_t h0 = 0; h0 < Hq && st == BP_OK; h0 += hc) {
      int64_t nh = Hq - h0 < hc ? Hq - h0 : hc, nkv = nh / G;
      /* element offsets of this chunk's first head */
      int64_t q = bi * Q->strides[0] + h0 * Q->strides[1],
              k = bi * K->strides[0] + h0 / G * K->strides[1],
              v = bi * V->strides[0] + h0 / G * V->strides[1];
      uint64_t o = vkb_tensor_addr(O) + (uint64_t)(bi * O->strides[0] + h0 * O->strides[1]) * es;
      st = vkb_texel_pack(s, vw[0], Q, q, nh, D, D, Sq, mp, Q->strides[1], Q->strides[3],
                          Q->strides[2], (uint32_t)bm);
      if (st == BP_OK)
        st = vkb_texel_pack(s, vw[1], K, k, nkv, D, D, Skv, np1, K->strides[1], K->strides[3],
                            K->strides[2], (uint32_t)bn);
      if (st == BP_OK) {
        vkb_texel_params_t p = {.m = (int32_t)Sq,
                                .n = (int32_t)Skv,
                                .kp = (int32_t)D,
                                .beta_zero = 1,
                                .pab = (int32_t)(mp * D / 4),
                                .pbb = (int32_t)(np1 * D / 4),
                                .alpha = (float)a->scale,
                                .bg = (int32_t)G,
                                .amod = (int32_t)nh,
                                .causal = a->causal != 0,
                                .skp = (int32_t)np1};
        score_masks(a, bi, h0, &p);
        VkBufferView v3[3] = {vw[0], vw[1], vw[2]};
        st = vkb_dispatch_views(s, score, NULL, 0, &p, sizeof p, v3, 3, (uint32_t)(np1 / bn),
                                (uint32_t)(mp / bm), (uint32_t)nh);
      }
      if (st == BP_OK) {
        smx_params_t p = {.quads = (int32_t)(nh * mp / 4),
                          .bm4 = (int32_t)(bm / 4),
                          .kp = (int32_t)np1,
                          .causal = a->causal != 0 || window > 0,
                          .shift = (int32_t)(Skv - Sq),
                          .pph = (int32_t)(mp / bm),
                          .inv_sums = sc[4]->addr};
        int64_t groups = (p.quads + 63) / 64;
        st = vkb_dispatch_views(s, "attnsoftmax_f32", NULL, 0, &p, sizeof p, &vw[2], 1,
                                groups > 4096 ? 4096u : (uint32_t)groups, 1, 1);
      }
      if (st == BP_OK)
        st = vkb_texel_pack(s, vw[3], V, v, nkv, Skv, np1, Dv, np2, V->strides[1], V->strides[2],
                            V->strides[3], (uint32_t)bn);
      if (st == BP_OK) {
        vkb_texel_params_t p = {.c = o,
                                .m = (int32_t)Sq,
                                .n = (int32_t)Dv,
                                .kp = (int32_t)np1,
                                .beta_zero = 1,
                                .scb = (int32_t)O->strides[1],
                                .scm = (int32_t)O->strides[2],
                                .scn = (int32_t)O->strides[3],
                                .pab = (int32_t)(mp * np1 / 4),
                                .pbb = (int32_t)(np2 * np1 / 4),
                                .alpha = 1.0f,
                                .bg = (int32_t)G,
                                /* past the window's end too, the weights are 0 */
                                .causal = a->causal != 0 || window > 0,
                                .amod = (int32_t)nh,
                                .kshift = (int32_t)(Skv - Sq),
                                .rscale = sc[4]->addr,
                                .rs_b = (int32_t)mp};
        VkBufferView v2[2] = {vw[2], vw[3]};
        st = vkb_texel_gemm_into(s, gemm, &p, v2, O, bi * O->strides[0] + h0 * O->strides[1],
                                 (uint32_t)(np2 / bn), (uint32_t)(mp / bm), (uint32_t)nh);
      }
    }
  vkb_texel_release(s, sc, vw, 5);
  return st;
}
