/*
 * ops_quant.c — the quantized ops of ABI 1.5 (docs/ops.md, "Quantized
 * types"): quantize (quantize.comp) and dequantize (quantdeq.comp) of
 * q8_0 / q4_0 blocks and of i8 / u8 with scales; the 8-bit GEMM, a and b
 * each i8 or u8 (quantpack.comp packs a and b k-contiguous into words,
 * quantgemm.comp multiplies them with the integer dot product where the
 * device has it, one variant per signedness pair); GEMM / GEMV with
 * block weights (quantmv.comp for one activation row, quantmm.comp tiled
 * for more), dequantized in registers.
 *
 * Bytes: on a device with shaderInt8 and 8-bit storage the kernels' _s8
 * variants read and write uint8_t; elsewhere the _w variants widen bytes
 * from their aligned words and write them with atomics on the word.
 * BACKPLANE_VK_QUANT_BYTES=words and BACKPLANE_VK_QUANT_DOT=0 force the
 * word path and the widening multiply (tests run both on one device).
 */
#include <stdio.h>
#include <string.h>

#include "vkb_quant.h"

static bool env_is(const char *name, const char *value) {
  const char *v = vkb_host && vkb_host->getenv ? vkb_host->getenv(name) : NULL;
  return v && strcmp(v, value) == 0;
}

/* "s8" or "w": how the kernels reach bytes on d. */
static const char *byte_tag(const vkb_device_t *d) {
  return d->caps.storage8 && !env_is("BACKPLANE_VK_QUANT_BYTES", "words") ? "s8" : "w";
}

static bool kernel_of(const char *family, const char *t1, const char *t2) {
  char name[48];
  snprintf(name, sizeof name, "%s_%s%s%s", family, t1, t2 ? "_" : "", t2 ? t2 : "");
  return vkb_kernel_present(name);
}

/* Whether `family`_<dt>[_<t2>] is built in for f32, f16 and bf16. */
static bool floats_present(const char *family, const char *t2) {
  return kernel_of(family, "f32", t2) && kernel_of(family, "f16", t2) &&
         kernel_of(family, "bf16", t2);
}

/* Adds i8 and the fp8 dtypes to cast where the device stores bytes and
 * cast.comp has a kernel each way between them and every dtype claimed. */
static void byte_casts(const vkb_caps_t *c, uint32_t t[BP_OP_TABLE_SIZE],
                       uint32_t features[BP_OP_TABLE_SIZE]) {
  static const bp_dtype_t bytes[] = {BP_I8, BP_FP8_E4M3, BP_FP8_E5M2};
  if (!c->storage8) return;
  uint32_t all = t[BP_OP_CAST];
  for (int i = 0; i < 3; i++) all |= BP_DTYPE_BIT(bytes[i]);
  for (int i = 0; i < 3; i++) {
    bool ok = true;
    for (int d = 0; d < BP_DTYPE_COUNT && ok; d++)
      if (all & BP_DTYPE_BIT(d))
        ok = kernel_of("cast", vkb_dtype_tag(bytes[i]), vkb_dtype_tag((bp_dtype_t)d)) &&
             kernel_of("cast", vkb_dtype_tag((bp_dtype_t)d), vkb_dtype_tag(bytes[i]));
    if (ok) t[BP_OP_CAST] |= BP_DTYPE_BIT(bytes[i]);
  }
  /* the saturating fp8 mode is cast.comp's op */
  if (t[BP_OP_CAST] & (BP_DTYPE_BIT(BP_FP8_E4M3) | BP_DTYPE_BIT(BP_FP8_E5M2)))
    features[BP_OP_CAST] |= BP_FEATURE_CAST_SATURATE;
}

/* Whether quantgemm's variants for byte access bt and signedness pair sg
 * (NULL: i8 x i8) are built in: the widening one, and the dot one where
 * the device has the integer dot product (the texel twins are optional:
 * qgemm_texel). */
static bool qgemm_present(const vkb_caps_t *c, const char *bt, const char *sg) {
  char t2[16];
  snprintf(t2, sizeof t2, "%s%s%s", bt, sg ? "_" : "", sg ? sg : "");
  return kernel_of("quantgemm", "wide", t2) && (!c->int_dot || kernel_of("quantgemm", "dot", t2));
}

void vkb_quant_claims(const vkb_caps_t *c, uint32_t t[BP_OP_TABLE_SIZE],
                      uint32_t features[BP_OP_TABLE_SIZE]) {
  if (!c->usable) return;
  byte_casts(c, t, features);
  if (!c->storage16) return;
  const char *bt = c->storage8 ? "s8" : "w";
  const uint32_t q =
      BP_DTYPE_BIT(BP_I8) | BP_DTYPE_BIT(BP_U8) | BP_DTYPE_BIT(BP_Q8_0) | BP_DTYPE_BIT(BP_Q4_0);
  if (floats_present("quantdeq", bt)) t[BP_OP_DEQUANTIZE] = q;
  if (c->float64 && floats_present("quantize", bt)) t[BP_OP_QUANTIZE] = q;
  if (c->float64 && kernel_of("quantpack", bt, NULL) && qgemm_present(c, bt, NULL)) {
    t[BP_OP_QGEMM] = BP_DTYPE_BIT(BP_I8);
    if (qgemm_present(c, bt, "u8i8") && qgemm_present(c, bt, "i8u8") &&
        qgemm_present(c, bt, "u8u8"))
      t[BP_OP_QGEMM] |= BP_DTYPE_BIT(BP_U8);
  }
  /* fp8 a and b: f32 sums and epilogue, no doubles (qgemmfp8.comp) */
  if (kernel_of("quantpack", bt, NULL) && kernel_of("qgemmfp8", "buf", NULL))
    t[BP_OP_QGEMM] |= BP_DTYPE_BIT(BP_FP8_E4M3) | BP_DTYPE_BIT(BP_FP8_E5M2);
  if (floats_present("quantmv", NULL) && floats_present("quantmm", NULL))
    t[BP_OP_QMATMUL] = BP_DTYPE_BIT(BP_Q8_0) | BP_DTYPE_BIT(BP_Q4_0);
  /* i8 and fp8 copy as single bytes (copy.comp's b8), where u8 does. */
  if (t[BP_OP_COPY] & BP_DTYPE_BIT(BP_U8))
    t[BP_OP_COPY] |= BP_DTYPE_BIT(BP_I8) | BP_DTYPE_BIT(BP_FP8_E4M3) | BP_DTYPE_BIT(BP_FP8_E5M2);
}

/* ---- quantize / dequantize -------------------------------------------------*/

/* Matches QParams in quant.inc. */
typedef struct conv_params {
  uint64_t f, q, s;
  int32_t n, rank, mode, fs;
  int32_t shape[BP_MAX_RANK], sf[BP_MAX_RANK], sq[BP_MAX_RANK], ss[BP_MAX_RANK];
} conv_params_t;

/* Records quantize (to_q) or dequantize over f (float side), q (quantized
 * side) and scale: one kernel invocation per block, or per element for i8. */
static bp_status_t conv_record(vkb_stream_t *s, const bp_plugin_tensor_t *f,
                               const bp_plugin_tensor_t *q, const bp_plugin_tensor_t *scale,
                               bool to_q) {
  const char *op = to_q ? "quantize" : "dequantize";
  bool block = BP_DTYPE_IS_BLOCK(q->dtype);
  /* Blocks: the index space is q's shape with its last dim counted in
   * blocks; a block's first weight is 32 elements on in q, 32 * fs in f. */
  bp_plugin_tensor_t fb = *f, qb = *q, sb = *scale;
  int last = q->rank - 1;
  if (block) {
    qb.shape[last] /= BP_QUANT_BLOCK, fb.shape[last] = qb.shape[last];
    qb.strides[last] *= BP_QUANT_BLOCK, fb.strides[last] *= BP_QUANT_BLOCK;
    sb = qb;
    memset(sb.strides, 0, sizeof sb.strides);
  }
  const bp_plugin_tensor_t *tl[3] = {&fb, &qb, &sb};
  if (!vkb_fits_i32(f) || !vkb_fits_i32(q))
    return vkb_fail(BP_ERR_UNSUPPORTED,
                    "vulkan: %s: sizes beyond int32 offsets are not "
                    "supported by this backend",
                    op);
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, &qb, tl, 3, op);
  if (st != BP_OK || nd.n == 0) return st;
  conv_params_t p = {.f = vkb_tensor_addr(f),
                     .q = vkb_tensor_addr(q),
                     .s = block ? 0 : vkb_tensor_addr(scale),
                     .n = nd.n,
                     .rank = nd.rank,
                     .mode = q->dtype == BP_Q8_0   ? 0
                             : q->dtype == BP_Q4_0 ? 1
                             : q->dtype == BP_I8   ? 2
                                                   : 3,
                     .fs = block ? (int32_t)f->strides[last] : 0};
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sf, nd.strides[0], sizeof p.sf);
  memcpy(p.sq, nd.strides[1], sizeof p.sq);
  memcpy(p.ss, nd.strides[2], sizeof p.ss);
  char name[32];
  snprintf(name, sizeof name, "%s_%s_%s", to_q ? "quantize" : "quantdeq", vkb_dtype_tag(f->dtype),
           byte_tag(s->d));
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, vkb_groups_1d(s->d, nd.n, 64), 1, 1);
}

bp_status_t vkb_op_quantize(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                            const bp_quantize_args_t *a){
    VKB_ON_STREAM(dev, stream, s, conv_record(s, &a->x, &a->y, &a->scale, true))}

bp_status_t vkb_op_dequantize(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                              const bp_quantize_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, conv_record(s, &a->y, &a->x, &a->scale, false))
}

/* ---- int8 GEMM ---------------------------------------------------------------*/

/* Matches quantpack.comp's parameter block. */
typedef struct pack_params {
  uint64_t src, dst;
  int32_t n, rows, k, kw;
  int32_t sb, sr, sl, kmajor;
} pack_params_t;

/* Matches quantgemm.comp's parameter block. */
typedef struct qgemm_params {
  uint64_t a, b, c, sa, sb;
  int32_t m, n, kw, cdt;
  int32_t sab, sbb, scb, scm, scn;
  int32_t ssa, ssb, has_sa, has_sb;
  float out_scale;
  int32_t fp8; /* qgemmfp8.comp: a's mantissa bits + 8 * b's (quantgemm: padding) */
} qgemm_params_t;

enum { QGEMM_TILE = 32 }; /* quantgemm.comp's BM and BN */

/* Records quantpack.comp: batches x rows of k int8 from t (element
 * strides sb, sr, sl) into kw words per row at dst, or k-major 16-byte
 * texels (kmajor). */
static bp_status_t pack_record(vkb_stream_t *s, const bp_plugin_tensor_t *t, uint64_t dst,
                               bool kmajor, int64_t batches, int64_t rows, int64_t k, int64_t kw,
                               int64_t sb, int64_t sr, int64_t sl) {
  pack_params_t p = {.src = vkb_tensor_addr(t),
                     .dst = dst,
                     .n = (int32_t)(batches * rows * kw),
                     .rows = (int32_t)rows,
                     .k = (int32_t)k,
                     .kw = (int32_t)kw,
                     .sb = (int32_t)sb,
                     .sr = (int32_t)sr,
                     .sl = (int32_t)sl,
                     .kmajor = kmajor};
  if (p.n == 0) return BP_OK;
  char name[24];
  snprintf(name, sizeof name, "quantpack_%s", byte_tag(s->d));
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, vkb_groups_1d(s->d, p.n, 256), 1, 1);
}

static bool qgemm_fits(const vkb_device_t *d, const bp_qgemm_args_t *g, int64_t batch, int64_t m,
                       int64_t n, int64_t kw) {
  const uint32_t *mg = d->caps.max_groups;
  return vkb_fits_i32(&g->a) && vkb_fits_i32(&g->b) && vkb_fits_i32(&g->c) &&
         batch * m * kw <= INT32_MAX && batch * n * kw <= INT32_MAX &&
         (n + QGEMM_TILE - 1) / QGEMM_TILE <= mg[0] && (m + QGEMM_TILE - 1) / QGEMM_TILE <= mg[1] &&
         batch <= mg[2];
}

static void qgemm_fill(qgemm_params_t *p, const bp_qgemm_args_t *g) {
  const bp_plugin_tensor_t *C = &g->c, *sa = &g->scale_a, *sb = &g->scale_b;
  int r = C->rank;
  p->cdt = C->dtype == BP_I32 ? 0 : C->dtype == BP_F32 ? 1 : 2;
  p->scb = r == 3 ? (int32_t)C->strides[0] : 0;
  p->scm = (int32_t)C->strides[r - 2];
  p->scn = (int32_t)C->strides[r - 1];
  p->has_sa = sa->rank > 0, p->has_sb = sb->rank > 0;
  p->sa = p->has_sa ? vkb_tensor_addr(sa) : 0;
  p->sb = p->has_sb ? vkb_tensor_addr(sb) : 0;
  p->ssa = p->has_sa ? (int32_t)sa->strides[0] : 0;
  p->ssb = p->has_sb ? (int32_t)sb->strides[0] : 0;
  p->out_scale = g->out_scale;
}

/* An rgba32ui view of bytes of panels from byte offset off, for the texel
 * variants; VK_NULL_HANDLE when the device cannot make it. */
static VkBufferView panel_view(vkb_device_t *d, vkb_alloc_t *panels, uint64_t off, uint64_t bytes) {
  VkBufferView v = VK_NULL_HANDLE;
  VkBufferViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                               .buffer = panels->block->buf,
                               .format = VK_FORMAT_R32G32B32A32_UINT,
                               .offset = panels->offset + off,
                               .range = bytes};
  if (bytes / 16 > d->caps.max_texels ||
      d->fn.vkCreateBufferView(d->dev, &vi, NULL, &v) != VK_SUCCESS)
    return VK_NULL_HANDLE;
  return v;
}

/* qgemmfp8.comp's formats: an fp8 operand's mantissa bits; 0 for i8 / u8. */
static int fp8_mbits(bp_dtype_t dt) {
  return dt == BP_FP8_E4M3 ? 3 : dt == BP_FP8_E5M2 ? 2 : 0;
}

/* quantgemm's variant suffix for the dtypes of a and b: none for i8 x i8,
 * else _<a><b>. */
static const char *signs_tag(bp_dtype_t a, bp_dtype_t b) {
  static const char *const tags[2][2] = {{"", "_i8u8"}, {"_u8i8", "_u8u8"}};
  return tags[a == BP_U8][b == BP_U8];
}

/* The texel variants run where the texel GEMM does (CPU implementations
 * with push descriptors), BACKPLANE_VK_GEMM_TEXEL deciding as for it. */
static bool qgemm_texel(vkb_device_t *d, const char *dot, const char *signs) {
  char name[40];
  snprintf(name, sizeof name, "quantgemm_%stex_%s%s", dot, byte_tag(d), signs);
  return vkb_texel_wanted(d) && vkb_kernel_present(name);
}

static bp_status_t qgemm_record(vkb_stream_t *s, const bp_qgemm_args_t *g) {
  const bp_plugin_tensor_t *A = &g->a, *B = &g->b;
  vkb_device_t *d = s->d;
  int ra = A->rank, rb = B->rank;
  int64_t batch = ra == 3 ? A->shape[0] : 1, m = A->shape[ra - 2], k = A->shape[ra - 1];
  const char *dot = d->caps.int_dot && !env_is("BACKPLANE_VK_QUANT_DOT", "0") ? "dot" : "wide";
  const int fa = fp8_mbits(A->dtype), fb = fp8_mbits(B->dtype);
  bool tex = fa ? vkb_texel_wanted(d) && vkb_kernel_present("qgemmfp8_tex")
                : qgemm_texel(d, dot, signs_tag(A->dtype, B->dtype));
  int64_t n = B->shape[rb - 1], kw = (k + 3) / 4, bb = rb == 3 ? batch : 1;
  if (tex) kw = (kw + 3) / 4 * 4; /* whole 16-byte texels */
  if (!qgemm_fits(d, g, batch, m, n, kw))
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: qgemm: sizes beyond int32 offsets or the "
                                        "device's workgroup counts are not supported");
  uint64_t abytes = (uint64_t)(batch * m * kw) * 4, bbytes = (uint64_t)(bb * n * kw) * 4;
  uint64_t boff = (abytes + 255) / 256 * 256;
  vkb_alloc_t *panels;
  bp_status_t st = vkb_alloc(d, false, boff + bbytes + 256, &panels);
  if (st != BP_OK) return st;
  VkBufferView views[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
  if (tex && kw > 0) {
    views[0] = panel_view(d, panels, 0, abytes);
    views[1] = panel_view(d, panels, boff, bbytes);
    tex = views[0] && views[1];
  }
  uint64_t pa = panels->addr, pb = panels->addr + boff;
  st = pack_record(s, A, pa, tex, batch, m, k, kw, ra == 3 ? A->strides[0] : 0, A->strides[ra - 2],
                   A->strides[ra - 1]);
  /* b is packed transposed: one row of words per column of b. */
  if (st == BP_OK)
    st = pack_record(s, B, pb, tex, bb, n, k, kw, rb == 3 ? B->strides[0] : 0, B->strides[rb - 1],
                     B->strides[rb - 2]);
  /* Batch strides of the panels: words, or texels for the texel variants. */
  int64_t per = tex ? kw / 4 : kw;
  qgemm_params_t p = {.a = pa,
                      .b = pb,
                      .c = vkb_tensor_addr(&g->c),
                      .m = (int32_t)m,
                      .n = (int32_t)n,
                      .kw = (int32_t)kw,
                      .sab = (int32_t)(m * per),
                      .sbb = rb == 3 ? (int32_t)(n * per) : 0};
  qgemm_fill(&p, g);
  char name[40];
  snprintf(name, sizeof name, "quantgemm_%s%s_%s%s", dot, tex ? "tex" : "", byte_tag(d),
           signs_tag(A->dtype, B->dtype));
  if (fa) { /* c f32 / f16 / bf16 */
    p.cdt = g->c.dtype == BP_F32 ? 1 : g->c.dtype == BP_F16 ? 3 : 4;
    p.fp8 = fa + 8 * fb;
    snprintf(name, sizeof name, "qgemmfp8_%s", tex ? "tex" : "buf");
  }
  uint32_t gx = (uint32_t)((n + QGEMM_TILE - 1) / QGEMM_TILE);
  uint32_t gy = (uint32_t)((m + QGEMM_TILE - 1) / QGEMM_TILE);
  if (st == BP_OK && tex)
    st = vkb_dispatch_views(s, name, NULL, 0, &p, sizeof p, views, 2, gx, gy, (uint32_t)batch);
  else if (st == BP_OK)
    st = vkb_dispatch(s, name, NULL, 0, &p, sizeof p, gx, gy, (uint32_t)batch);
  /* Freed once what is recorded completes (or with a captured graph). */
  for (int i = 0; i < 2; i++)
    if (views[i]) vkb_stream_release_view(s, views[i]);
  bp_status_t rst = vkb_stream_release(s, panels);
  return st != BP_OK ? st : rst;
}

bp_status_t vkb_op_qgemm(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                         const bp_qgemm_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, qgemm_record(s, a))
}

/* ---- GEMM / GEMV with block weights ------------------------------------------*/

/* Matches the parameter blocks of quantmv.comp and quantmm.comp. */
typedef struct qmm_params {
  uint64_t a, w, y;
  int32_t n, nb, qt, m;
  int32_t sab, sam, sak, swn;
  int32_t syb, sym, syn, rows;
} qmm_params_t;

enum { QMV_ROWS = 4, QMM_TILE = 32 }; /* quantmv.comp's ROWS, quantmm.comp's BM, BN */

static uint32_t capped(int64_t groups, uint32_t max) {
  if (max > 65535) max = 65535;
  return groups < (int64_t)max ? (uint32_t)groups : max;
}

/* An r32ui view of w's allocation from the 16-byte boundary at or below
 * its first block; *out_off is that block's byte offset in it. */
static VkBufferView weight_view(vkb_device_t *d, const bp_plugin_tensor_t *w, uint64_t *out_off) {
  vkb_alloc_t *al = vkb_ptr(w->ptr);
  uint64_t byte = al->offset + w->offset, base = byte & ~(uint64_t)15, end = al->offset + al->size;
  VkBufferView v = VK_NULL_HANDLE;
  VkBufferViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                               .buffer = al->block->buf,
                               .format = VK_FORMAT_R32_UINT,
                               .offset = base,
                               .range = (end - base) & ~(uint64_t)3};
  *out_off = byte - base;
  if ((end - base) / 4 > d->caps.max_texels ||
      d->fn.vkCreateBufferView(d->dev, &vi, NULL, &v) != VK_SUCCESS)
    return VK_NULL_HANDLE;
  return v;
}

/* quantmv's texel variant on CPU implementations: views[0] of the weights,
 * views[1] of f32 activations; p's w and a become offsets in them. False,
 * with nothing left to release, where it does not apply. */
static bool qmv_texel(vkb_stream_t *s, const bp_qmatmul_args_t *g, qmm_params_t *p,
                      VkBufferView views[2]) {
  char name[24];
  snprintf(name, sizeof name, "quantmv_%s_tex", vkb_dtype_tag(g->a.dtype));
  if (!vkb_texel_wanted(s->d) || !vkb_kernel_present(name)) return false;
  uint64_t woff;
  int32_t shift = 0;
  views[0] = weight_view(s->d, &g->w, &woff);
  if (views[0] && g->a.dtype == BP_F32 &&
      vkb_texel_src_view(s, &g->a, 0, &views[1], &shift) != BP_OK) {
    s->d->fn.vkDestroyBufferView(s->d->dev, views[0], NULL);
    views[0] = VK_NULL_HANDLE;
  }
  if (!views[0]) return false;
  p->w = woff;
  if (g->a.dtype == BP_F32) p->a = (uint64_t)shift;
  return true;
}

static bp_status_t qmatmul_record(vkb_stream_t *s, const bp_qmatmul_args_t *g) {
  const bp_plugin_tensor_t *A = &g->a, *W = &g->w, *Y = &g->y;
  int r = A->rank;
  int64_t batch = r == 3 ? A->shape[0] : 1, m = A->shape[r - 2], k = A->shape[r - 1];
  int64_t n = W->shape[0], swn = W->strides[0] / BP_QUANT_BLOCK;
  const uint32_t *mg = s->d->caps.max_groups;
  bool mv = m == 1;
  if (!vkb_fits_i32(A) || !vkb_fits_i32(Y) || swn > INT32_MAX || batch * m > INT32_MAX ||
      (!mv && ((n + QMM_TILE - 1) / QMM_TILE > mg[0] || (m + QMM_TILE - 1) / QMM_TILE > mg[1] ||
               batch > mg[2])))
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: qmatmul: sizes beyond int32 offsets or the "
                                        "device's workgroup counts are not supported");
  qmm_params_t p = {.a = vkb_tensor_addr(A),
                    .w = vkb_tensor_addr(W),
                    .y = vkb_tensor_addr(Y),
                    .n = (int32_t)n,
                    .nb = (int32_t)(k / BP_QUANT_BLOCK),
                    .qt = W->dtype == BP_Q4_0,
                    .m = (int32_t)m,
                    .sab = r == 3 ? (int32_t)A->strides[0] : 0,
                    .sam = (int32_t)A->strides[r - 2],
                    .sak = (int32_t)A->strides[r - 1],
                    .swn = (int32_t)swn,
                    .syb = r == 3 ? (int32_t)Y->strides[0] : 0,
                    .sym = (int32_t)Y->strides[r - 2],
                    .syn = (int32_t)Y->strides[r - 1],
                    .rows = (int32_t)(batch * m)};
  char name[24];
  snprintf(name, sizeof name, "%s_%s", mv ? "quantmv" : "quantmm", vkb_dtype_tag(A->dtype));
  if (mv) {
    uint32_t gx = capped((n + QMV_ROWS - 1) / QMV_ROWS, mg[0]), gy = capped(batch * m, mg[1]);
    VkBufferView views[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
    if (!qmv_texel(s, g, &p, views)) return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, gx, gy, 1);
    strcat(name, "_tex");
    bp_status_t st =
        vkb_dispatch_views(s, name, NULL, 0, &p, sizeof p, views, views[1] ? 2 : 1, gx, gy, 1);
    for (int i = 0; i < 2; i++)
      if (views[i]) vkb_stream_release_view(s, views[i]);
    return st;
  }
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, (uint32_t)((n + QMM_TILE - 1) / QMM_TILE),
                      (uint32_t)((m + QMM_TILE - 1) / QMM_TILE), (uint32_t)batch);
}

bp_status_t vkb_op_qmatmul(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                           const bp_qmatmul_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, qmatmul_record(s, a))
}
