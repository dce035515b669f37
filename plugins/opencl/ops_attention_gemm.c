/*
 * ops_attention_gemm.c — scaled dot-product attention as S = scale Q Kt,
 * P = softmax(S) (causal mask applied there; S is stored transposed), O = P V, with both products
 * on the device's tuned tiled GEMM (gemm.cl's gemm_tiled) and the glue in
 * kernels/opencl/attention.cl (att_pack, att_softmax). Heads go in chunks
 * whose S fits a bounded scratch. With a causal mask the first product
 * skips the tiles above the diagonal and the second stops each row tile's
 * k loop at its last visible key (a sliding window is causal too). The
 * masks of ABI 1.5 apply in att_softmax; keys past a sequence's length pack
 * as zeros. Short query blocks (decode) keep the fused kernel of ops_dnn.c,
 * which stores nothing of size Sq x Skv. CPU drivers take the flash kernel
 * of ops_attention_flash.c first; this is the GPU path.
 */
#include <math.h>

#include "ocl.h"

/* Below these sizes the fused kernel wins (too little to tile). */
#define ATT_GEMM_MIN_SQ 16
#define ATT_GEMM_MIN_SKV 64
/* Scratch (S, P and the packed Q, K, V) of one chunk of heads. */
#define ATT_SCRATCH_BYTES (96ll << 20)

/* The masks of ABI 1.5, as they travel in a bp_attention_args_t from a
 * caller of that ABI or newer. */
static bool has_masks(const bp_attention_args_t *a) {
  return a->struct_size >= sizeof *a;
}

/* attention.cl's ALiBi code: 1 the slopes tensor, 2 the standard slopes. */
static cl_int alibi_kind(const bp_attention_args_t *a) {
  if (a->alibi_slopes.rank) return 1;
  return a->alibi_heads > 0 ? 2 : 0;
}

void ocl_arg_att_mask(ocl_args_t *a, const bp_attention_args_t *args) {
  bool m = has_masks(args);
  const bp_plugin_tensor_t *lens = m && args->kv_lens.rank ? &args->kv_lens : &args->q;
  const bp_plugin_tensor_t *bias = m && args->bias.rank ? &args->bias : &args->q;
  const bp_plugin_tensor_t *sl = m && args->alibi_slopes.rank ? &args->alibi_slopes : &args->q;
  cl_int mf[8] = {m && args->kv_lens.rank > 0,
                  m && args->window > 0 ? args->window : 0,
                  m && args->bias.rank > 0,
                  m ? alibi_kind(args) : 0,
                  m ? args->alibi_heads : 0,
                  m ? args->alibi_head_offset : 0,
                  0,
                  0};
  cl_long lst = lens == &args->kv_lens ? lens->strides[0] : 0;
  cl_long bst[4] = {0, 0, 0, 0}, sst = sl == &args->alibi_slopes ? sl->strides[0] : 0;
  if (bias == &args->bias)
    for (int i = 0; i < 4; i++) bst[i] = bias->strides[i];
  ocl_arg_buf(a, lens->ptr, lens->offset);
  OCL_ARG(a, lst);
  ocl_arg_buf(a, bias->ptr, bias->offset);
  ocl_arg(a, sizeof(cl_long4), bst);
  ocl_arg_buf(a, sl->ptr, sl->offset);
  OCL_ARG(a, sst);
  ocl_arg(a, sizeof(cl_int8), mf);
}

/* Causal, or a sliding window (causal by definition): the products may
 * skip the tiles past each row's last key. */
static int causal_like(const bp_attention_args_t *a) {
  return a->causal != 0 || (has_masks(a) && a->window > 0);
}

typedef struct att_geom {
  int64_t bh, hq, grp, sq, sqp, skv, d, dv;
  int64_t mp, kpd, npq, mpk, kps, npv; /* P: kps x mp; Q: kpd x npq; K: kpd x mpk; V: kps x npv */
  int64_t per_head;                    /* scratch elements per head */
  size_t cs;                           /* compute type size */
} att_geom_t;

static int64_t round_up64(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

/* Scratch layout of a chunk of nb heads, in elements: Q, K, V panels, S, P. */
enum { SQ_Q, SQ_K, SQ_V, SQ_S, SQ_P, SQ_N };
static void scratch_offsets(const att_geom_t *g, int64_t nb, int64_t off[SQ_N + 1]) {
  int64_t size[SQ_N] = {g->kpd * g->npq, g->kpd * g->mpk, g->kps * g->npv, g->sqp * g->skv,
                        g->kps * g->mp};
  /* Sub-buffers start on the device's base address alignment (4 KiB covers
   * every driver's CL_DEVICE_MEM_BASE_ADDR_ALIGN we know of). */
  int64_t align = 4096 / (int64_t)g->cs;
  off[0] = 0;
  for (int i = 0; i < SQ_N; i++) off[i + 1] = off[i] + round_up64(nb * size[i], align);
}

static cl_mem sub(cl_command_queue q, cl_mem m, const att_geom_t *g, const int64_t *off, int part,
                  bp_status_t *st) {
  if (*st != BP_OK) return NULL;
  cl_buffer_region r = {(size_t)off[part] * g->cs, (size_t)(off[part + 1] - off[part]) * g->cs};
  cl_int err = CL_SUCCESS;
  cl_mem s =
      ocl_api.clCreateSubBuffer(m, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
  if (!s) *st = ocl_fail(err, "clCreateSubBuffer (attention scratch)");
  if (s) ocl_graph_keep(q, s); /* a recorded graph reuses it later */
  return s;
}

/* t's (b, h, x, p) element at b * s0 + h * s1 + x * sx + p * sp. */
/* lens: the key lengths (NULL: none) along x (lens_axis 1) or p (2). */
bp_status_t ocl_att_pack(ocl_device_t *d, cl_command_queue q, const char *opts,
                         const bp_plugin_tensor_t *t, int sx_axis, int sp_axis, int64_t grp,
                         int64_t hq, int64_t bh0, int64_t nb, int64_t rows_p, int64_t cols_x,
                         cl_mem dst, int64_t kp, int64_t xp, int64_t pwid,
                         const bp_plugin_tensor_t *lens, int lens_axis) {
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_ATTENTION, opts, "att_pack", &a.k);
  if (st != BP_OK) return st;
  cl_long v[4] = {t->strides[0], t->strides[1], t->strides[sx_axis], t->strides[sp_axis]};
  cl_int hqi = (cl_int)hq, gr = (cl_int)grp;
  cl_long lv[6] = {bh0, rows_p, cols_x, kp, xp, pwid};
  ocl_arg_buf(&a, t->ptr, t->offset);
  for (int i = 0; i < 4; i++) OCL_ARG(&a, v[i]);
  OCL_ARG(&a, hqi);
  OCL_ARG(&a, gr);
  for (int i = 0; i < 3; i++) OCL_ARG(&a, lv[i]);
  OCL_ARG(&a, dst);
  for (int i = 3; i < 6; i++) OCL_ARG(&a, lv[i]);
  cl_long lst = lens ? lens->strides[0] : 0;
  cl_int axis = lens ? lens_axis : 0;
  ocl_arg_buf(&a, lens ? lens->ptr : t->ptr, lens ? lens->offset : t->offset);
  OCL_ARG(&a, lst);
  OCL_ARG(&a, axis);
  size_t lws[2] = {64, 1};
  size_t gws[2] = {ocl_round_up((size_t)xp, 64), (size_t)nb};
  return ocl_enqueue(q, &a, 2, gws, lws);
}

static bp_status_t softmax_rows(ocl_device_t *d, cl_command_queue q, const char *opts,
                                const bp_attention_args_t *args, const att_geom_t *g, int64_t bh0,
                                int64_t nb, cl_mem s, cl_mem p, int64_t pwid) {
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_ATTENTION, opts, "att_softmax", &a.k);
  if (st != BP_OK) return st;
  cl_long v[7] = {g->sq, g->sqp, g->skv, g->kps, g->mp, pwid, bh0};
  cl_int c = args->causal != 0, hq = (cl_int)g->hq;
  OCL_ARG(&a, s);
  for (int i = 0; i < 3; i++) OCL_ARG(&a, v[i]);
  OCL_ARG(&a, c);
  OCL_ARG(&a, p);
  for (int i = 3; i < 7; i++) OCL_ARG(&a, v[i]);
  OCL_ARG(&a, hq);
  ocl_arg_att_mask(&a, args);
  size_t lws[2] = {1, 1};
  size_t gws[2] = {(size_t)(g->sqp / 16), (size_t)nb};
  return ocl_enqueue(q, &a, 2, gws, lws);
}

static bool att_geom(const bp_attention_args_t *args, const ocl_gemm_cfg_t *cfg, att_geom_t *g) {
  const bp_plugin_tensor_t *q = &args->q, *k = &args->k, *v = &args->v;
  g->hq = q->shape[1];
  g->bh = q->shape[0] * g->hq;
  g->grp = g->hq / k->shape[1];
  g->sq = q->shape[2], g->sqp = round_up64(g->sq, 16), g->skv = k->shape[2], g->d = q->shape[3],
  g->dv = v->shape[3];
  int64_t ks = ocl_gemm_kstep(cfg);
  g->mp = round_up64(g->sq, cfg->tile_m);
  g->kpd = round_up64(g->d, ks);
  g->npq = round_up64(g->sq, cfg->tile_n);
  g->mpk = round_up64(g->skv, cfg->tile_m);
  g->kps = round_up64(g->skv, ks);
  g->npv = round_up64(g->dv, cfg->tile_n);
  g->cs = q->dtype == BP_F64 ? 8 : 4;
  int64_t off[SQ_N + 1];
  scratch_offsets(g, 1, off);
  g->per_head = off[SQ_N];
  /* att_softmax stores 16 rows as one vector inside a panel */
  return g->sq >= ATT_GEMM_MIN_SQ && g->skv >= ATT_GEMM_MIN_SKV && cfg->tile_m % 16 == 0;
}

/* One chunk: heads bh0 .. bh0 + nb - 1. */
static bp_status_t chunk(ocl_device_t *d, cl_command_queue q, const ocl_gemm_cfg_t *cfg,
                         const char *opts, const bp_attention_args_t *args, const att_geom_t *g,
                         int64_t bh0, int64_t nb, cl_mem *part) {
  const bp_plugin_tensor_t *Q = &args->q, *K = &args->k, *V = &args->v, *O = &args->out;
  int causal = causal_like(args);
  int64_t tm = cfg->tile_m, tn = cfg->tile_n;
  const bp_plugin_tensor_t *lens = has_masks(args) && args->kv_lens.rank ? &args->kv_lens : NULL;
  bp_status_t st = ocl_att_pack(d, q, opts, Q, 2, 3, 1, g->hq, bh0, nb, g->d, g->sq, part[SQ_Q],
                                g->kpd, g->npq, tn, NULL, 0);
  if (st == BP_OK)
    st = ocl_att_pack(d, q, opts, K, 2, 3, g->grp, g->hq, bh0, nb, g->d, g->skv, part[SQ_K], g->kpd,
                      g->mpk, tm, lens, 1);
  if (st == BP_OK)
    st = ocl_att_pack(d, q, opts, V, 3, 2, g->grp, g->hq, bh0, nb, g->skv, g->dv, part[SQ_V],
                      g->kps, g->npv, tn, lens, 2);
  bp_dtype_t sdt = g->cs == 8 ? BP_F64 : BP_F32;
  bp_plugin_tensor_t s = {.ptr = (uint64_t)(uintptr_t)part[SQ_S], .dtype = sdt};
  double scale = args->scale != 0 ? args->scale : 1.0 / sqrt((double)g->d);
  /* St = scale K Qt: rows j (keys), columns i (queries) */
  ocl_tiled_run_t r1 = {.pa = part[SQ_K],
                        .pb = part[SQ_Q],
                        .mp = g->mpk,
                        .np = g->npq,
                        .kp = g->kpd,
                        .sab = g->kpd * g->mpk,
                        .sbb = g->kpd * g->npq,
                        .m = g->skv,
                        .n = g->sq,
                        .batch = nb,
                        .c = &s,
                        .csb = g->sqp * g->skv,
                        .csm = g->sqp,
                        .csn = 1,
                        .nb1 = 1,
                        .tri = causal ? 3 : 0,
                        .tri_off = g->skv - g->sq,
                        .alpha = scale,
                        .beta = 0};
  if (st == BP_OK) st = ocl_gemm_run(d, q, cfg, &r1);
  if (st == BP_OK) st = softmax_rows(d, q, opts, args, g, bh0, nb, part[SQ_S], part[SQ_P], tm);
  ocl_tiled_run_t r2 = {.pa = part[SQ_P],
                        .pb = part[SQ_V],
                        .mp = g->mp,
                        .np = g->npv,
                        .kp = g->kps,
                        .sab = g->kps * g->mp,
                        .sbb = g->kps * g->npv,
                        .m = g->sq,
                        .n = g->dv,
                        .batch = nb,
                        .c = O,
                        .csb = O->strides[0],
                        .csm = O->strides[2],
                        .csn = O->strides[3],
                        .nb1 = g->hq,
                        .csb1 = O->strides[1],
                        .boff = bh0,
                        .tri = causal ? 2 : 0,
                        .tri_off = g->skv - g->sq,
                        .alpha = 1,
                        .beta = 0};
  if (st == BP_OK) st = ocl_gemm_run(d, q, cfg, &r2);
  return st;
}

bp_status_t ocl_attention_gemm(ocl_device_t *d, cl_command_queue q,
                               const bp_attention_args_t *args) {
  const ocl_gemm_cfg_t *cfg = NULL;
  att_geom_t g;
  if (args->q.shape[2] < ATT_GEMM_MIN_SQ || args->k.shape[2] < ATT_GEMM_MIN_SKV)
    return BP_ERR_UNSUPPORTED;
  bp_status_t st = ocl_gemm_config(d, args->q.dtype, &cfg);
  if (st != BP_OK) return st;
  if (!att_geom(args, cfg, &g)) return BP_ERR_UNSUPPORTED;
  int64_t per = g.per_head * (int64_t)g.cs;
  int64_t nb = ATT_SCRATCH_BYTES / per;
  nb = nb < 1 ? 1 : nb > g.bh ? g.bh : nb;
  char opts[64];
  ocl_dtype_options(d, args->q.dtype, opts, sizeof opts);
  int64_t off[SQ_N + 1];
  scratch_offsets(&g, nb, off);
  cl_mem m = ocl_scratch(d, q, (size_t)off[SQ_N] * g.cs, &st), part[SQ_N] = {0};
  for (int i = 0; i < SQ_N; i++) part[i] = sub(q, m, &g, off, i, &st);
  for (int64_t bh0 = 0; bh0 < g.bh && st == BP_OK; bh0 += nb)
    st = chunk(d, q, cfg, opts, args, &g, bh0, g.bh - bh0 < nb ? g.bh - bh0 : nb, part);
  /* OpenCL keeps the buffers alive until the queued kernels finish. */
  for (int i = 0; i < SQ_N; i++)
    if (part[i]) ocl_api.clReleaseMemObject(part[i]);
  if (m) ocl_api.clReleaseMemObject(m);
  return st;
}
