/*
 * ops_dnn_flash.c — attention in one pass on CPU implementations of Vulkan
 * (lavapipe): pack Q, K and V into f32 panels (gemmpack), then
 * attnflash.comp computes every head's output with the scores, the online
 * softmax and the output rows in registers. Against the three-kernel path
 * of ops_dnn_texel.c (score product, softmax, P·V), the scores are never
 * stored, reread or rescaled in memory.
 *
 * Every option of the three-kernel path is applied (GQA, Dv != D, scale,
 * causal and the masks of ABI 1.5); what it leaves to that path is Dv past
 * the largest variant's DV and panels past the texel buffers' limits.
 * BACKPLANE_VK_ATTN_FLASH=0 turns it off (the three-kernel path runs).
 */
#include <stdio.h>
#include <string.h>

#include "vkb.h"

/* Matches attnflash.comp's parameter block. */
typedef struct flash_params {
  uint64_t o;
  int32_t sq, skv, d, dv;
  int32_t qh, kh, vh;
  int32_t bg, causal;
  float scale;
  int32_t soh, som, son;
  int32_t use_view, vshift;
  uint64_t kv_len, slopes, bias;
  int32_t slope_stride, alibi_heads, alibi_head0, window;
  int32_t has_bias, bias_dt, bias_shift, sbb, sbias, sbn;
} flash_params_t;

/* attnflash.comp's tiles: rows per invocation, invocations per workgroup,
 * keys per step, the output columns each variant holds. */
#define FLASH_TM 4
#define FLASH_WY 16
#define FLASH_TN 8
static const struct {
  const char *name;
  int64_t dv;
} k_flash[] = {{"d32", 32}, {"d64", 64}, {"d128", 128}};

static int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

/* The masks of ABI 1.5 for batch bi into p (absent: 0). */
static void flash_masks(const bp_attention_args_t *a, int64_t bi, flash_params_t *p) {
  if (!vkb_attention_has_masks(a)) return;
  if (a->kv_lens.rank)
    p->kv_len = vkb_tensor_addr(&a->kv_lens) + (uint64_t)(bi * a->kv_lens.strides[0]) * 4;
  if (a->alibi_slopes.rank) {
    p->slopes = vkb_tensor_addr(&a->alibi_slopes);
    p->slope_stride = (int32_t)a->alibi_slopes.strides[0];
  }
  p->alibi_heads = a->alibi_heads > 0 ? a->alibi_heads : 0;
  p->alibi_head0 = a->alibi_head_offset;
  p->window = a->window > 0 ? a->window : 0;
  const bp_plugin_tensor_t *b = &a->bias;
  if (!b->rank) return;
  uint64_t es = vkb_dtype_size(b->dtype);
  uint64_t at = vkb_tensor_addr(b) + (uint64_t)(bi * b->strides[0]) * es;
  /* the kernel reads 4-byte words: a 16-bit bias may start mid-word */
  p->bias = at & ~(uint64_t)3;
  p->bias_shift = (int32_t)((at & 3) / es);
  p->bias_dt = b->dtype == BP_F32 ? 0 : b->dtype == BP_F16 ? 1 : 2;
  p->has_bias = 1;
  p->sbb = (int32_t)b->strides[1];
  p->sbias = (int32_t)b->strides[2];
  p->sbn = (int32_t)b->strides[3];
}

static bool flash_enabled(void) {
  const char *e = vkb_host && vkb_host->getenv ? vkb_host->getenv("BACKPLANE_VK_ATTN_FLASH") : NULL;
  return !(e && strcmp(e, "0") == 0);
}

/* Records the three packs and the kernel for batch bi. */
static bp_status_t flash_batch(vkb_stream_t *s, const bp_attention_args_t *a, int64_t bi,
                               const char *name, int64_t dvp, int64_t mp, int64_t np,
                               VkBufferView *vw) {
  const bp_plugin_tensor_t *Q = &a->q, *K = &a->k, *V = &a->v, *O = &a->out;
  int64_t Hq = Q->shape[1], Hkv = K->shape[1], Sq = Q->shape[2], Skv = K->shape[2], D = Q->shape[3],
          Dv = V->shape[3], bm = FLASH_TM * FLASH_WY;
  bp_status_t st = vkb_texel_pack(s, vw[0], Q, bi * Q->strides[0], Hq, D, D, Sq, mp, Q->strides[1],
                                  Q->strides[3], Q->strides[2], (uint32_t)bm);
  if (st == BP_OK)
    st = vkb_texel_pack(s, vw[1], K, bi * K->strides[0], Hkv, D, D, Skv, np, K->strides[1],
                        K->strides[3], K->strides[2], FLASH_TN);
  if (st == BP_OK)
    st = vkb_texel_pack(s, vw[2], V, bi * V->strides[0], Hkv, Skv, np, Dv, dvp, V->strides[1],
                        V->strides[2], V->strides[3], (uint32_t)dvp);
  if (st != BP_OK) return st;
  int64_t o_off = bi * O->strides[0];
  flash_params_t p = {.o = vkb_tensor_addr(O) + (uint64_t)o_off * vkb_dtype_size(O->dtype),
                      .sq = (int32_t)Sq,
                      .skv = (int32_t)Skv,
                      .d = (int32_t)D,
                      .dv = (int32_t)Dv,
                      .qh = (int32_t)(mp * D / 4),
                      .kh = (int32_t)(np * D / 4),
                      .vh = (int32_t)(np * dvp / 4),
                      .bg = (int32_t)(Hq / Hkv),
                      .causal = a->causal != 0,
                      .scale = (float)a->scale,
                      .soh = (int32_t)O->strides[1],
                      .som = (int32_t)O->strides[2],
                      .son = (int32_t)O->strides[3]};
  flash_masks(a, bi, &p);
  VkBufferView ov = VK_NULL_HANDLE;
  p.use_view = vkb_texel_src_view(s, O, o_off, &ov, &p.vshift) == BP_OK;
  /* binding 3 must hold a view even where the kernel does not touch it */
  VkBufferView bound[4] = {vw[0], vw[1], vw[2], p.use_view ? ov : vw[0]};
  st = vkb_dispatch_views(s, name, NULL, 0, &p, sizeof p, bound, 4, (uint32_t)(mp / bm),
                          (uint32_t)Hq, 1);
  if (ov) /* after recording: see vkb_texel_release */
    vkb_stream_release_view(s, ov);
  return st;
}

bp_status_t vkb_attention_flash(vkb_stream_t *s, const bp_attention_args_t *a) {
  vkb_device_t *d = s->d;
  const bp_plugin_tensor_t *Q = &a->q, *K = &a->k, *V = &a->v, *O = &a->out;
  int64_t B = Q->shape[0], Hq = Q->shape[1], Hkv = K->shape[1], Sq = Q->shape[2], Skv = K->shape[2],
          D = Q->shape[3], Dv = V->shape[3], bm = FLASH_TM * FLASH_WY;
  if (!flash_enabled() || Skv == 0 || D == 0 || Hkv == 0 || Hq % Hkv != 0)
    return BP_ERR_UNSUPPORTED;
  int t = 0, nt = (int)(sizeof k_flash / sizeof *k_flash);
  while (t < nt && k_flash[t].dv < Dv) t++;
  char name[40];
  if (t == nt) return BP_ERR_UNSUPPORTED;
  snprintf(name, sizeof name, "attnflash_%s_%s", vkb_dtype_tag(O->dtype), k_flash[t].name);
  if (!vkb_kernel_present(name)) return BP_ERR_UNSUPPORTED;
  if (B == 0 || Hq == 0 || Sq == 0 || Dv == 0) return BP_OK;
  int64_t dvp = k_flash[t].dv, mp = round_up(Sq, bm), np = round_up(Skv, FLASH_TN);
  uint64_t bytes[3] = {(uint64_t)(Hq * mp * D * 4), (uint64_t)(Hkv * np * D * 4),
                       (uint64_t)(Hkv * np * dvp * 4)};
  for (int i = 0; i < 3; i++)
    if (bytes[i] / 16 > d->caps.max_texels || bytes[i] / 4 > INT32_MAX) return BP_ERR_UNSUPPORTED;
  /* the kernel's element offsets into one batch of out are 32-bit */
  int64_t last = 0;
  for (int i = 1; i < 4; i++)
    last += (O->shape[i] - 1) * (O->strides[i] < 0 ? -O->strides[i] : O->strides[i]);
  if (mp / bm > d->caps.max_groups[0] || Hq > d->caps.max_groups[1] || last > INT32_MAX)
    return BP_ERR_UNSUPPORTED;
  vkb_alloc_t *sc[3] = {NULL, NULL, NULL};
  VkBufferView vw[3] = {VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE};
  bp_status_t st = BP_OK;
  for (int i = 0; i < 3 && st == BP_OK; i++) st = vkb_texel_scratch(d, bytes[i], &sc[i], &vw[i]);
  for (int64_t bi = 0; bi < B && st == BP_OK; bi++)
    st = flash_batch(s, a, bi, name, dvp, mp, np, vw);
  vkb_texel_release(s, sc, vw, 3);
  return st;
}
