/*
 * ops_blas.c — gemm (strided batched, any strides, with the epilogue of
 * ABI 1.5 fused in every kernel's store: bias, activation) and gemv.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "vkb.h"

/* Matches gemm.comp's parameter block. */
typedef struct gemm_params {
  uint64_t a, b, c;
  int32_t m, n, k, beta_zero;
  int32_t sab, sam, sak, sbb, sbk, sbn, scb, scm, scn;
  float alpha, beta;
  int32_t pad0;
  uint64_t bias;
  int32_t has_bias, sxb, sxm, sxn;
} gemm_params_t;

/* A tile configuration: specialization constants 0..5 of gemm.comp. */
typedef struct gemm_tile {
  uint32_t bm, bn, bk, tm, tn;
} gemm_tile_t;

static const gemm_tile_t k_tiles[] = {
    {64, 64, 16, 4, 4}, /* the default: 256 invocations, 4x4 each */
    {32, 32, 16, 4, 4}, /* small outputs: more workgroups to spread */
    {64, 64, 8, 4, 4},
    {16, 64, 16, 4, 4}, /* 64 invocations: the direct (no shared) path */
};

/* Picks the tile: small problems use the small tile so that every core
 * gets a workgroup; BACKPLANE_VK_GEMM_TILE=i forces one (for tuning). */
static const gemm_tile_t *pick_tile(int64_t m, int64_t n, int64_t batch, bool direct) {
  const char *env =
      vkb_host && vkb_host->getenv ? vkb_host->getenv("BACKPLANE_VK_GEMM_TILE") : NULL;
  if (env && env[0] >= '0' && env[0] < '0' + (int)(sizeof k_tiles / sizeof *k_tiles))
    return &k_tiles[env[0] - '0'];
  int64_t big_groups = ((m + 63) / 64) * ((n + 63) / 64) * batch;
  if (direct) return &k_tiles[3];
  return big_groups < 16 ? &k_tiles[1] : &k_tiles[0];
}

/* A call from a core older than ABI 1.5 ends before the epilogue. */
static bool has_epilogue_fields(const bp_gemm_args_t *g) {
  return g->struct_size >= offsetof(bp_gemm_args_t, bias) + sizeof g->bias;
}

void vkb_gemm_epilogue(const bp_gemm_args_t *g, vkb_epilogue_t *out) {
  memset(out, 0, sizeof *out);
  out->act = UINT32_MAX;
  if (!has_epilogue_fields(g)) return;
  if (g->flags & BP_GEMM_FLAG_ACTIVATION) out->act = (uint32_t)g->activation;
  if (g->bias.rank == 0) return;
  out->bias = vkb_tensor_addr(&g->bias);
  out->has_bias = 1;
  out->sxb = (int32_t)g->bias.strides[0];
  out->sxm = (int32_t)g->bias.strides[1];
  out->sxn = (int32_t)g->bias.strides[2];
}

static bp_status_t gemm_record(vkb_stream_t *s, const bp_gemm_args_t *g) {
  const bp_plugin_tensor_t *A = &g->a, *B = &g->b, *C = &g->c;
  int64_t batch = C->shape[0], m = C->shape[1], n = C->shape[2], k = A->shape[2];
  bool bias_fits = !has_epilogue_fields(g) || g->bias.rank == 0 || vkb_fits_i32(&g->bias);
  if (!vkb_fits_i32(A) || !vkb_fits_i32(B) || !vkb_fits_i32(C) || !bias_fits ||
      batch > s->d->caps.max_groups[2])
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: gemm: sizes beyond int32 offsets or %u batches",
                    s->d->caps.max_groups[2]);
  if (m == 0 || n == 0 || batch == 0) return BP_OK;
  gemm_params_t p = {.a = vkb_tensor_addr(A),
                     .b = vkb_tensor_addr(B),
                     .c = vkb_tensor_addr(C),
                     .m = (int32_t)m,
                     .n = (int32_t)n,
                     .k = (int32_t)k,
                     .beta_zero = g->beta == 0.0,
                     .sab = (int32_t)A->strides[0],
                     .sam = (int32_t)A->strides[1],
                     .sak = (int32_t)A->strides[2],
                     .sbb = (int32_t)B->strides[0],
                     .sbk = (int32_t)B->strides[1],
                     .sbn = (int32_t)B->strides[2],
                     .scb = (int32_t)C->strides[0],
                     .scm = (int32_t)C->strides[1],
                     .scn = (int32_t)C->strides[2],
                     .alpha = (float)g->alpha,
                     .beta = (float)g->beta};
  vkb_epilogue_t ep;
  vkb_gemm_epilogue(g, &ep);
  p.bias = ep.bias, p.has_bias = ep.has_bias, p.sxb = ep.sxb, p.sxm = ep.sxm, p.sxn = ep.sxn;
  /* CPU implementations: a few rows of C read B once (ops_blas_skinny.c),
   * the rest takes the texel-buffer kernel (ops_blas_texel.c). */
  bp_status_t tst = vkb_gemm_skinny(s, g);
  if (tst != BP_ERR_UNSUPPORTED) return tst;
  tst = vkb_gemm_texel(s, g);
  if (tst != BP_ERR_UNSUPPORTED) return tst;
  /* CPU implementations take the direct variant (below); =0 forces the
   * shared-memory one GPUs run, so that it can be tested there. */
  const char *direct_env =
      vkb_host && vkb_host->getenv ? vkb_host->getenv("BACKPLANE_VK_GEMM_DIRECT") : NULL;
  bool direct = s->d->software && !(direct_env && strcmp(direct_env, "0") == 0);
  const gemm_tile_t *t = pick_tile(m, n, batch, direct);
  /* Loads walk the contiguous axis so neighbouring invocations read
   * neighbouring addresses. */
  uint32_t layout = (A->strides[2] == 1 ? 1u : 0u) | (B->strides[2] == 1 ? 2u : 0u);
  uint32_t spec[8] = {
      (t->bm / t->tm) * (t->bn / t->tn), t->bm, t->bn, t->bk, t->tm, t->tn, layout, ep.act};
  /* CPU implementations run barriers as coroutine switches; reading
   * through the caches without shared-memory staging is faster there. */
  char name[32];
  snprintf(name, sizeof name, "gemm_%s%s", vkb_dtype_tag(C->dtype), direct ? "_direct" : "");
  return vkb_dispatch(s, name, spec, 8, &p, sizeof p, (uint32_t)((n + t->bn - 1) / t->bn),
                      (uint32_t)((m + t->bm - 1) / t->bm), (uint32_t)batch);
}

bp_status_t vkb_op_gemm(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                        const bp_gemm_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, gemm_record(s, a))
}

/* gemv is gemm with n = 1: x is a [n, 1] matrix with row stride incx, y a
 * [m, 1] one. The kernel takes any strides, so no copy is needed. */
static bp_status_t gemv_record(vkb_stream_t *s, const bp_gemv_args_t *v) {
  bp_gemm_args_t g = {
      .struct_size = sizeof g, .flags = v->flags, .alpha = v->alpha, .beta = v->beta};
  g.a = v->a;
  g.a.rank = 3;
  g.a.shape[0] = 1, g.a.shape[1] = v->a.shape[0], g.a.shape[2] = v->a.shape[1];
  g.a.strides[0] = 0, g.a.strides[1] = v->a.strides[0], g.a.strides[2] = v->a.strides[1];
  g.b = v->x;
  g.b.rank = 3;
  g.b.shape[0] = 1, g.b.shape[1] = v->x.shape[0], g.b.shape[2] = 1;
  g.b.strides[0] = 0, g.b.strides[1] = v->x.strides[0], g.b.strides[2] = 1;
  g.c = v->y;
  g.c.rank = 3;
  g.c.shape[0] = 1, g.c.shape[1] = v->y.shape[0], g.c.shape[2] = 1;
  g.c.strides[0] = 0, g.c.strides[1] = v->y.strides[0], g.c.strides[2] = 1;
  return gemm_record(s, &g);
}

bp_status_t vkb_op_gemv(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                        const bp_gemv_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, gemv_record(s, a))
}
