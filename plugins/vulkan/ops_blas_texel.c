/*
 * ops_blas_texel.c — GEMM for CPU implementations of Vulkan (lavapipe), and
 * the texel-buffer helpers (scratch panels, views, packing, the tuned tile)
 * that ops_dnn_texel.c and ops_elementwise.c share. A and B are packed into
 * zero-padded f32 panels (gemmpack.comp) and multiplied by gemmtex.comp,
 * which reads the panels through storage texel buffers, the one kind of
 * load llvmpipe vectorises (docs/backend-vulkan.md, "GEMM on CPU
 * implementations"). The register tile is tuned once per device and kept
 * in the host's tuning cache; BACKPLANE_VK_GEMM_TILE=<name> forces one,
 * BACKPLANE_VK_GEMM_TEXEL=0 turns the path off, =1 uses it on any device
 * that has texel buffers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vkb.h"

/* Tiles built into gemmtex.comp (plugin.mk's VK_GEMMTEX_TILES). */
static const vkb_texel_tile_t k_tiles[] = {
    {"t8844", 8, 8, 4, 4},   {"t4888", 4, 8, 8, 8},   {"t8888", 8, 8, 8, 8},
    {"t8448", 8, 4, 4, 8},   {"t81644", 8, 16, 4, 4}, {"t8844u4", 8, 8, 4, 4},
    {"t4888u4", 4, 8, 8, 8}, {"t8448u4", 8, 4, 4, 8}, {"t81644u4", 8, 16, 4, 4},
    {"t8888u4", 8, 8, 8, 8},
};
#define NTILES ((int)(sizeof k_tiles / sizeof *k_tiles))
#define TUNE_N 512
#define TUNE_BUCKET "gemmtex-4" /* bump when gemmtex.comp's inner loop changes */

/* Matches gemmpack.comp's parameter block. */
typedef struct pack_params {
  uint64_t src;
  int32_t rows_k, cols_x, sb, sp, sx, kp, xp, pw, shift;
} pack_params_t;

static const char *env(const char *name) {
  return vkb_host && vkb_host->getenv ? vkb_host->getenv(name) : NULL;
}

static int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

bp_status_t vkb_texel_scratch(vkb_device_t *d, uint64_t bytes, vkb_alloc_t **out_alloc,
                              VkBufferView *out_view) {
  *out_view = VK_NULL_HANDLE;
  bp_status_t st = vkb_alloc(d, false, bytes, out_alloc);
  if (st != BP_OK) return st;
  VkBufferViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                               .buffer = (*out_alloc)->block->buf,
                               .format = VK_FORMAT_R32G32B32A32_SFLOAT,
                               .offset = (*out_alloc)->offset,
                               .range = bytes};
  st = vkb_check(d->fn.vkCreateBufferView(d->dev, &vi, NULL, out_view), "vkCreateBufferView");
  if (st != BP_OK) {
    vkb_free(d, *out_alloc);
    *out_alloc = NULL;
  }
  return st;
}

bp_status_t vkb_texel_src_view(vkb_stream_t *s, const bp_plugin_tensor_t *t, int64_t elem_off,
                               VkBufferView *out_view, int32_t *out_shift) {
  *out_view = VK_NULL_HANDLE;
  vkb_alloc_t *al = vkb_ptr(t->ptr);
  uint64_t byte = al->offset + t->offset + (uint64_t)elem_off * 4, base = byte & ~(uint64_t)15,
           end = al->offset + al->size;
  if (t->dtype != BP_F32 || byte >= end || (end - base) / 4 > s->d->caps.max_texels)
    return BP_ERR_UNSUPPORTED;
  *out_shift = (int32_t)((byte - base) / 4);
  VkBufferViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                               .buffer = al->block->buf,
                               .format = VK_FORMAT_R32_SFLOAT,
                               .offset = base,
                               .range = (end - base) & ~(uint64_t)3};
  return vkb_check(s->d->fn.vkCreateBufferView(s->d->dev, &vi, NULL, out_view),
                   "vkCreateBufferView");
}

bp_status_t vkb_texel_pack(vkb_stream_t *s, VkBufferView view, const bp_plugin_tensor_t *t,
                           int64_t elem_off, int64_t nb, int64_t rows_k, int64_t kp, int64_t cols_x,
                           int64_t xp, int64_t sb, int64_t sp, int64_t sx, uint32_t pw) {
  pack_params_t p = {.src = vkb_tensor_addr(t) + (uint64_t)elem_off * vkb_dtype_size(t->dtype),
                     .rows_k = (int32_t)rows_k,
                     .cols_x = (int32_t)cols_x,
                     .sb = (int32_t)sb,
                     .sp = (int32_t)sp,
                     .sx = (int32_t)sx,
                     .kp = (int32_t)kp,
                     .xp = (int32_t)xp,
                     .pw = (int32_t)pw};
  /* f32 sources are read through a texel view too where one fits. */
  VkBufferView v[2] = {view, VK_NULL_HANDLE};
  bool tex = vkb_kernel_present("gemmpack_f32_tex") &&
             vkb_texel_src_view(s, t, elem_off, &v[1], &p.shift) == BP_OK;
  char name[32];
  snprintf(name, sizeof name, "gemmpack_%s%s", vkb_dtype_tag(t->dtype), tex ? "_tex" : "");
  /* The kernel loops over the texels past its grid. */
  int64_t groups = (kp * xp / 4 + 63) / 64;
  uint32_t gx = groups > 4096 ? 4096u : (uint32_t)groups;
  bp_status_t st =
      vkb_dispatch_views(s, name, NULL, 0, &p, sizeof p, v, tex ? 2 : 1, gx, 1, (uint32_t)nb);
  if (v[1]) /* after recording: see vkb_texel_release */
    vkb_stream_release_view(s, v[1]);
  return st;
}

bool vkb_texel_src_views(vkb_stream_t *s, const bp_plugin_tensor_t *const *t, int n,
                         VkBufferView *v, int32_t *shift) {
  bool ok = true;
  for (int i = 0; i < n; i++) {
    v[i] = VK_NULL_HANDLE;
    if (ok) ok = vkb_texel_src_view(s, t[i], 0, &v[i], &shift[i]) == BP_OK;
  }
  if (!ok)
    for (int i = 0; i < n; i++)
      if (v[i]) s->d->fn.vkDestroyBufferView(s->d->dev, v[i], NULL), v[i] = VK_NULL_HANDLE;
  return ok;
}

void vkb_texel_views_release(vkb_stream_t *s, VkBufferView *v, int n) {
  for (int i = 0; i < n; i++)
    if (v[i]) vkb_stream_release_view(s, v[i]);
}

void vkb_texel_release(vkb_stream_t *s, vkb_alloc_t **allocs, VkBufferView *views, int count) {
  /* Only now: work recorded above may have gone out in an earlier batch
   * and must still find its scratch. */
  for (int i = 0; i < count; i++) {
    if (views[i]) vkb_stream_release_view(s, views[i]);
    if (allocs[i]) vkb_stream_release(s, allocs[i]);
  }
}

/* Records pack A, pack B and the tiled kernel with tile t. */
static bp_status_t run_tile(vkb_stream_t *s, const bp_gemm_args_t *g, const vkb_texel_tile_t *t) {
  vkb_device_t *d = s->d;
  const bp_plugin_tensor_t *A = &g->a, *B = &g->b, *C = &g->c;
  int64_t batch = C->shape[0], m = C->shape[1], n = C->shape[2], k = A->shape[2];
  int64_t bm = t->tm * t->wy, bn = t->tn * t->wx;
  int64_t mp = round_up(m, bm), np = round_up(n, bn);
  /* A matrix shared by the whole batch (stride 0) is packed once. */
  int64_t na = A->strides[0] == 0 ? 1 : batch, nb = B->strides[0] == 0 ? 1 : batch;
  uint64_t abytes = (uint64_t)(na * mp * k) * 4, bbytes = (uint64_t)(nb * np * k) * 4;
  if (abytes / 16 > d->caps.max_texels || bbytes / 16 > d->caps.max_texels ||
      np / bn > d->caps.max_groups[0] || mp / bm > d->caps.max_groups[1] ||
      batch > d->caps.max_groups[2])
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: gemm: too large for texel buffers");
  const char *dt = vkb_dtype_tag(C->dtype);
  vkb_alloc_t *sc[3] = {NULL, NULL, NULL}; /* the third stays NULL */
  VkBufferView views[3] = {VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE};
  /* An f32 C is read and written through an r32f view (vectorised). */
  int32_t vshift = 0;
  bool cview = vkb_texel_src_view(s, C, 0, &views[2], &vshift) == BP_OK;
  bp_status_t st = vkb_texel_scratch(d, abytes, &sc[0], &views[0]);
  if (st == BP_OK) st = vkb_texel_scratch(d, bbytes, &sc[1], &views[1]);
  if (st == BP_OK)
    st = vkb_texel_pack(s, views[0], A, 0, na, k, k, m, mp, A->strides[0], A->strides[2],
                        A->strides[1], (uint32_t)bm);
  if (st == BP_OK)
    st = vkb_texel_pack(s, views[1], B, 0, nb, k, k, n, np, B->strides[0], B->strides[1],
                        B->strides[2], (uint32_t)bn);
  if (st == BP_OK) {
    vkb_texel_params_t p = {.c = vkb_tensor_addr(C),
                            .m = (int32_t)m,
                            .n = (int32_t)n,
                            .kp = (int32_t)k,
                            .beta_zero = g->beta == 0.0,
                            .scb = (int32_t)C->strides[0],
                            .scm = (int32_t)C->strides[1],
                            .scn = (int32_t)C->strides[2],
                            .pab = na == 1 ? 0 : (int32_t)(mp * k / 4),
                            .pbb = nb == 1 ? 0 : (int32_t)(np * k / 4),
                            .alpha = (float)g->alpha,
                            .beta = (float)g->beta,
                            .bg = 1,
                            .amod = (int32_t)batch,
                            .use_view = cview,
                            .vshift = vshift};
    vkb_epilogue_t ep;
    vkb_gemm_epilogue(g, &ep);
    p.bias = ep.bias, p.has_bias = ep.has_bias, p.sbb = ep.sxb, p.sbias = ep.sxm, p.sbn = ep.sxn;
    char name[40];
    snprintf(name, sizeof name, "gemmtex_%s_%s", dt, t->name);
    /* Binding 2 must hold a view even where the kernel does not touch it. */
    VkBufferView bound[3] = {views[0], views[1], cview ? views[2] : views[0]};
    st = vkb_dispatch_views(s, name, &ep.act, 1, &p, sizeof p, bound, 3, (uint32_t)(np / bn),
                            (uint32_t)(mp / bm), (uint32_t)batch);
  }
  vkb_texel_release(s, sc, views, 3);
  return st;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bp_plugin_tensor_t square(uint64_t ptr, int64_t n) {
  bp_plugin_tensor_t t;
  memset(&t, 0, sizeof t);
  t.ptr = ptr;
  t.dtype = BP_F32;
  t.rank = 3;
  t.shape[0] = 1, t.shape[1] = n, t.shape[2] = n;
  t.strides[0] = n * n, t.strides[1] = n, t.strides[2] = 1;
  return t;
}

/* Times every tile on a TUNE_N^3 f32 gemm of zeros on a private stream:
 * the best of three runs after a warm-up, as other processes share the
 * cores. Returns the fastest tile's index, 0 when nothing could run. */
static int measure(vkb_device_t *d) {
  size_t bytes = (size_t)TUNE_N * TUNE_N * 4;
  void *zeros = calloc(1, bytes);
  vkb_alloc_t *buf = NULL;
  vkb_stream_t *ts = NULL;
  int best = 0;
  double best_t = 1e30;
  /* Only this stream and this allocation: the caller holds its stream's
   * lock, so nothing here may synchronise the device. */
  if (!zeros || vkb_stream_new(d, &ts) != BP_OK || vkb_alloc(d, false, bytes, &buf) != BP_OK ||
      vkb_mem_write((bp_plugin_device_t *)d, (bp_plugin_stream_t *)ts, (uint64_t)(uintptr_t)buf, 0,
                    zeros, bytes) != BP_OK)
    goto out;
  bp_gemm_args_t g = {.struct_size = sizeof g, .alpha = 1.0, .beta = 0.0};
  g.a = g.b = g.c = square((uint64_t)(uintptr_t)buf, TUNE_N);
  pthread_mutex_lock(&ts->lock);
  /* Round robin over the tiles, so a burst of load from other processes
   * slows every candidate alike; the first round is the warm-up. */
  double t_best[NTILES];
  for (int i = 0; i < NTILES; i++) t_best[i] = 1e30;
  for (int rep = 0; rep < 4; rep++)
    for (int i = 0; i < NTILES; i++) {
      double t0 = now_s();
      if (run_tile(ts, &g, &k_tiles[i]) != BP_OK || vkb_stream_wait(ts) != BP_OK) continue;
      double t = now_s() - t0;
      if (rep > 0 && t < t_best[i]) t_best[i] = t;
    }
  for (int i = 0; i < NTILES; i++) {
    vkb_log(BP_LOG_DEBUG, "gemm tune %s: %s %.1f GFLOP/s", d->tune_device, k_tiles[i].name,
            2.0 * TUNE_N * TUNE_N * TUNE_N / t_best[i] / 1e9);
    if (t_best[i] < best_t) {
      best_t = t_best[i];
      best = i;
    }
  }
  pthread_mutex_unlock(&ts->lock);
  vkb_log(BP_LOG_INFO, "gemm tuned for %s: tile %s, %.1f GFLOP/s at %d^3", d->tune_device,
          k_tiles[best].name, 2.0 * TUNE_N * TUNE_N * TUNE_N / best_t / 1e9, TUNE_N);
out:
  if (ts) vkb_stream_free(ts); /* waits for its work */
  if (buf) vkb_free(d, buf);
  free(zeros);
  return best;
}

static int find_tile(const char *name) {
  for (int i = 0; name && i < NTILES; i++)
    if (strcmp(k_tiles[i].name, name) == 0) return i;
  return -1;
}

/* The device's tile: forced by the environment, else from the host's
 * tuning cache, else measured now and stored, so the cost of measuring
 * (docs/performance.md) is paid once per device and driver. */
const vkb_texel_tile_t *vkb_texel_tile(vkb_device_t *d) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  int forced = find_tile(env("BACKPLANE_VK_GEMM_TILE"));
  if (forced >= 0) return &k_tiles[forced];
  pthread_mutex_lock(&lock);
  if (d->gemm_tile < 0) {
    bool cache =
        vkb_host &&
        vkb_host->struct_size >= offsetof(bp_host_services_t, tune_store) + sizeof(void *) &&
        vkb_host->tune_lookup && vkb_host->tune_store;
    bp_tune_key_t key = {.struct_size = sizeof key,
                         .plugin = "vulkan",
                         .plugin_version = "0.1.0",
                         .device = d->tune_device,
                         .driver_version = d->tune_driver,
                         .op = "gemm",
                         .dtype = "f32",
                         .bucket = TUNE_BUCKET};
    char value[64] = "";
    int i = cache && vkb_host->tune_lookup(&key, value, sizeof value) ? find_tile(value) : -1;
    if (i < 0) {
      i = measure(d);
      if (cache) vkb_host->tune_store(&key, k_tiles[i].name);
    }
    d->gemm_tile = i;
  }
  pthread_mutex_unlock(&lock);
  return &k_tiles[d->gemm_tile];
}

bool vkb_texel_wanted(vkb_device_t *d) {
  const char *on = env("BACKPLANE_VK_GEMM_TEXEL");
  if (!d->caps.texel || (on && strcmp(on, "0") == 0) || !vkb_kernel_present("gemmpack_f32"))
    return false;
  return d->software || (on && strcmp(on, "1") == 0);
}

bp_status_t vkb_gemm_texel(vkb_stream_t *s, const bp_gemm_args_t *g) {
  int64_t m = g->c.shape[1], n = g->c.shape[2], k = g->a.shape[2];
  /* Tiny and vector-shaped products stay on the direct kernel: the panels
   * would be mostly padding. */
  if (!vkb_texel_wanted(s->d) || k == 0 || m < 4 || n < 4 || m * n * k < 4096)
    return BP_ERR_UNSUPPORTED;
  return run_tile(s, g, vkb_texel_tile(s->d));
}
