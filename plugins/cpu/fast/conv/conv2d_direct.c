/*
 * fast/conv/conv2d_direct.c — the direct route of the f32 conv2d fast path
 * on AVX-512 CPUs: no im2col, no patch tile. Output channels run along the
 * vector: the filter is packed per task into panels of 32 output channels,
 * w[(c * R*S + t) * 32 + k] (fast/gemm's AVX-512 panel packer), and the
 * micro-kernel (fast/conv/conv2d_direct_avx512.c) broadcasts each output
 * pixel's input values straight from the image rows, so strides and
 * dilations read in place and every output row width fills the tiles.
 *
 * The image is read where it lies when the layer has no padding and x's
 * rows are unit-strided; otherwise each task copies the zero-padded input
 * rows its span needs (cut to the columns the taps reach) into its
 * worker's scratch, so each core pads what it reads. 1x1 stride-1 layers
 * over dense planes are one long output row.
 *
 * Work is split into tasks (image, group, chunk of 32-channel panels,
 * span of output rows or pixels); a chunk's packed panels stay in the
 * worker's L2 (at most DC_CHUNK_BYTES) for every span it takes next, so a
 * worker packs a chunk again only when its next task is another chunk.
 * Within a task, segments of at most DC_SEG_PIX pixels of one row meet
 * every panel of the chunk in turn while their input rows are in L1.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conv2d.h"
#include "plugins/cpu/fast/prepared.h"
#include "plugins/cpu/tensor.h"

#define DC_CHUNK_BYTES (512 << 10) /* packed panels per task, kept in L2 */
#define DC_SEG_PIX (2 * DC_NP)     /* pixels per segment (input rows in L1) */

typedef struct dconv_job {
  const cpu_fast_gemm_kernel_t *kr; /* its panel packer */
  const float *x, *w, *bias;
  float *y;
  int64_t G, cg, kg, crs, rs, P, Q, rlast; /* rlast: (R - 1) * dilation_h */
  /* the filter's rows and columns, the padding above the image, its
   * height and the dilation along it: which filter rows of an output row
   * land on the image (dconv_taps) */
  int64_t R, S, pad_h, H, dh;
  int64_t sxn, sxc, sxh, sh, sw, syn, syk, lda;
  const int64_t *off;
  /* every group's panels, packed once and kept (constant weights), or NULL:
   * each task packs its chunk */
  const float *packed;
  /* with padding left or right: tap t's image column from output column
   * ow is ow * sw + col[t] (dconv_seg_t), the image W wide; else NULL */
  const int64_t *col;
  int64_t W;
  int64_t kpn, kc, nkc; /* panels per group, per chunk; chunks */
  int64_t span, nsp;    /* output rows (P > 1) or pixels per span; spans */
  int64_t ntasks;
  bool dyn; /* one pool chunk per worker, tasks claimed from *next */
  _Atomic int64_t *next;
  /* slab: each task reads a zero-padded copy of the input rows its span
   * needs (every channel of its group), made in its worker's scratch */
  bool slab;
  pad_job_t pad;
  int64_t slab_rows;
} dconv_job_t;

/* ---- the tasks -------------------------------------------------------------*/

/* The taps [t0, t1) of output row oh whose filter rows land on the image:
 * a row that reads padding only multiplies zeros, so it is left out (all
 * of them when the image has no padding above or below). */
static void dconv_taps(const dconv_job_t *j, int64_t oh, int64_t *t0, int64_t *t1) {
  int64_t top = oh * j->sh - j->pad_h; /* image row of filter row 0 */
  int64_t r0 = top >= 0 ? 0 : (-top + j->dh - 1) / j->dh;
  int64_t r1 = j->H - top <= 0 ? 0 : (j->H - top + j->dh - 1) / j->dh;
  if (r1 > j->R) r1 = j->R;
  if (r0 > r1) r0 = r1;
  *t0 = r0 * j->S, *t1 = r1 * j->S;
}

/* Output pixels [j0, j1) of image n, group g, against the nq panels packed
 * in buf (the first one is panel q0 of the group); xg is the group's
 * input, its first row input row row0. */
static void dconv_span(const dconv_job_t *j, const float *xg, int64_t row0, int64_t n, int64_t g,
                       int64_t q0, int64_t nq, const float *buf, int64_t j0, int64_t j1) {
  float *yg = j->y + n * j->syn + g * j->kg * j->syk;
  dconv_seg_t s;
  memset(&s, 0, sizeof s);
  s.off = j->off, s.col = j->col, s.cg = j->cg, s.rs = j->rs, s.sxc = j->sxc, s.syk = j->syk;
  s.sw = j->sw, s.W = j->W, s.S = j->S;
  for (int64_t jj = j0; jj < j1; jj += s.npix) {
    int64_t oh = jj / j->Q, ow = jj % j->Q;
    int64_t end = j->Q - ow < j1 - jj ? j->Q - ow : j1 - jj;
    s.npix = end < DC_SEG_PIX ? end : DC_SEG_PIX;
    const float *xs = xg + (oh * j->sh - row0) * j->sxh + ow * j->sw;
    int64_t nj = jj + s.npix; /* the next segment's input, for the prefetch */
    s.pf = nj < j1 ? xg + (nj / j->Q * j->sh - row0) * j->sxh + nj % j->Q * j->sw : xs;
    dconv_taps(j, oh, &s.t0, &s.t1);
    s.ow0 = ow;
    for (int64_t q = 0; q < nq; q++) {
      int64_t k0 = (q0 + q) * 32, nk = j->kg - k0 < 32 ? j->kg - k0 : 32;
      s.x = xs;
      s.w = buf + q * 32 * j->crs;
      s.y = yg + k0 * j->syk + jj;
      s.bias = j->bias ? j->bias + g * j->kg + k0 : NULL;
      s.nk = (int)nk;
      cpu_fast_conv_dseg_avx512(&s);
    }
  }
}

/* The zero-padded input rows of output pixels [j0, j1) of image n, group
 * g (every channel), in slab; *row0 is their first row. Kept when *have
 * is already key (the worker's last task was the same span of another
 * chunk). */
static const float *dconv_slab(const dconv_job_t *j, float *slab, int64_t *have, int64_t key,
                               int64_t n, int64_t g, int64_t j0, int64_t j1, int64_t *row0) {
  const pad_job_t *p = &j->pad;
  int64_t plane = j->slab_rows * p->Wp;
  int64_t h0 = j0 / j->Q * j->sh, h1 = (j1 - 1) / j->Q * j->sh + j->rlast + 1;
  *row0 = h0;
  if (*have == key) return slab;
  const float *xc = p->x + n * p->sxn + g * j->cg * p->sxc;
  for (int64_t c = 0; c < j->cg; c++)
    cpu_fast_conv_pad_rows(p, xc + c * p->sxc, h0, h1, slab + c * plane,
                           c + CONV_PAD_AHEAD < j->cg ? xc + (c + CONV_PAD_AHEAD) * p->sxc : NULL);
  *have = key;
  return slab;
}

static void dconv_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const dconv_job_t *j = ctx;
  size_t bytes = (size_t)(j->kc * 32 * j->crs) * sizeof(float);
  /* checked on the calling thread; a worker without it claims nothing and
   * the others take every task */
  float *buf = j->packed ? NULL : cpu_fast_scratch(2, bytes);
  int64_t plane = j->slab_rows * j->pad.Wp;
  float *slab = j->slab ? cpu_fast_scratch(1, (size_t)(j->cg * plane) * sizeof(float)) : NULL;
  if ((!j->packed && !buf) || (j->slab && !slab)) return;
  int64_t have = -1, rows = -1, pq = j->P * j->Q;
  if (j->dyn) begin = atomic_fetch_add_explicit(j->next, 1, memory_order_relaxed), end = j->ntasks;
  while (begin < end) {
    int64_t t = begin, sp = t % j->nsp, rest = t / j->nsp;
    int64_t kq = rest % j->nkc, ng = rest / j->nkc, n = ng / j->G, g = ng % j->G;
    int64_t q0 = kq * j->kc, nq = j->kpn - q0 < j->kc ? j->kpn - q0 : j->kc;
    int64_t chunk = g * j->nkc + kq;
    if (j->packed) {
      buf = (float *)j->packed + (g * j->kpn + q0) * 32 * j->crs;
      have = chunk;
    }
    if (have != chunk) {
      int64_t k0 = q0 * 32, cnt = j->kg - k0 < nq * 32 ? j->kg - k0 : nq * 32;
      j->kr->pack(j->w + (g * j->kg + k0) * j->lda, j->lda, 1, cnt, j->crs, 32, buf);
      have = chunk;
    }
    int64_t per = j->P > 1 ? j->span * j->Q : j->span;
    int64_t j0 = sp * per, j1 = j0 + per < pq ? j0 + per : pq;
    int64_t row0 = 0;
    const float *xg = j->x + n * j->sxn + g * j->cg * j->sxc;
    if (j->slab && j0 < j1) xg = dconv_slab(j, slab, &rows, ng * j->nsp + sp, n, g, j0, j1, &row0);
    if (j0 < j1) dconv_span(j, xg, row0, n, g, q0, nq, buf, j0, j1);
    begin = j->dyn ? atomic_fetch_add_explicit(j->next, 1, memory_order_relaxed) : begin + 1;
  }
}

/* ---- the plan --------------------------------------------------------------*/

/* Chunks of panels that fit DC_CHUNK_BYTES, then spans enough for the
 * threads to share: 8 tasks a thread (claimed as they go, so one slowed by
 * another process leaves the rest to the other), 4 where every chunk is
 * packed by each worker that takes one of its spans. */
static void dconv_plan(dconv_job_t *j, int64_t N, unsigned threads) {
  j->kpn = (j->kg + 31) / 32;
  int64_t fit = DC_CHUNK_BYTES / (32 * j->crs * (int64_t)sizeof(float));
  j->kc = fit < 1 ? 1 : fit > j->kpn ? j->kpn : fit;
  j->nkc = (j->kpn + j->kc - 1) / j->kc;
  j->kc = (j->kpn + j->nkc - 1) / j->nkc;
  int64_t base = N * j->G * j->nkc, want = (j->nkc > 1 ? 4 : 8) * (int64_t)threads;
  int64_t units = j->P > 1 ? j->P : (j->Q + DC_NP - 1) / DC_NP; /* rows, or tiles */
  int64_t nsp = threads > 1 && base < want ? (want + base - 1) / base : 1;
  nsp = nsp < units ? nsp : units;
  int64_t per = (units + nsp - 1) / nsp;
  j->span = j->P > 1 ? per : per * DC_NP;
  j->nsp = (units + per - 1) / per;
  j->ntasks = base * j->nsp;
}

/* ---- padding and weights ---------------------------------------------------*/

/* Points j at x in place when it can be read there (no padding,
 * unit-strided rows); else sets up the per-task slabs of padded rows
 * (after dconv_plan: their height follows the spans). False when a slab's
 * memory cannot be had. */
static bool dconv_pad(dconv_job_t *j, const bp_conv2d_args_t *a, int64_t S) {
  const bp_plugin_tensor_t *x = &a->x;
  if (a->pad_h == 0 && a->pad_w == 0 && x->strides[3] == 1) return true;
  int64_t Wp = (j->Q - 1) * j->sw + (S - 1) * a->dilation_w + 1;
  int64_t orows = j->P > 1 ? j->span : 1;
  pad_job_t p = {j->x,          NULL,          x->shape[1],   x->shape[2], x->shape[3],
                 0,             Wp,            a->pad_h,      a->pad_w,    x->strides[0],
                 x->strides[1], x->strides[2], x->strides[3], 1,           Wp};
  j->slab = true;
  j->pad = p;
  j->slab_rows = (orows - 1) * j->sh + j->rlast + 1;
  if (!cpu_fast_scratch(1, (size_t)(j->cg * j->slab_rows * Wp) * sizeof(float))) return false;
  j->sxc = j->slab_rows * Wp, j->sxh = Wp, j->sxn = 0;
  return true;
}

/* Weights whose (c, r, s) are not one dense run, copied into rows of crs
 * floats (scratch slot 3 of the calling thread); dense ones are packed
 * from where they are. */
static const float *dconv_weights(dconv_job_t *j, const bp_plugin_tensor_t *w) {
  const int64_t *ws = w->strides;
  int64_t R = w->shape[2], S = w->shape[3], K = w->shape[0];
  const float *pw = cpu_tensor_base(w);
  if ((S == 1 || ws[3] == 1) && (R == 1 || ws[2] == S) && (j->cg == 1 || ws[1] == R * S)) {
    j->lda = ws[0];
    return pw;
  }
  float *d = cpu_fast_scratch(3, (size_t)(K * j->crs) * sizeof(float));
  if (!d) return NULL;
  for (int64_t k = 0; k < K; k++)
    for (int64_t c = 0; c < j->cg; c++)
      for (int64_t r = 0; r < R; r++)
        for (int64_t s = 0; s < S; s++)
          d[(k * j->cg + c) * R * S + r * S + s] = pw[k * ws[0] + c * ws[1] + r * ws[2] + s * ws[3]];
  j->lda = j->crs;
  return d;
}

/* With constant weights, every group's panels packed once and kept
 * between calls (fast/prepared.h), so the tasks pack nothing. */
static cpu_prep_t *dconv_prepared(dconv_job_t *j, const bp_conv2d_args_t *a, bool *fresh) {
  size_t bytes = (size_t)(j->G * j->kpn * 32 * j->crs) * sizeof(float);
  cpu_prep_t *p = cpu_fast_conv_prepared(a, 'D', j->kr, 0, bytes, fresh);
  if (!p) return NULL;
  float *dst = cpu_prep_data(p);
  for (int64_t g = 0; *fresh && g < j->G; g++)
    j->kr->pack(j->w + g * j->kg * j->lda, j->lda, 1, j->kg, j->crs, 32,
                dst + g * j->kpn * 32 * j->crs);
  j->packed = dst;
  return p;
}

/* ---- the call --------------------------------------------------------------*/

bp_status_t cpu_fast_conv2d_direct(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                   const float *bias) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  dconv_job_t j;
  memset(&j, 0, sizeof j);
  j.kr = &cpu_fast_sgemm_avx512;
  j.G = a->groups, j.cg = w->shape[1], j.kg = y->shape[1] / j.G;
  int64_t R = w->shape[2], S = w->shape[3], N = x->shape[0];
  j.rs = R * S, j.crs = j.cg * j.rs;
  /* 16 channels a panel at least, and at most a quarter of the FMAs on
   * the zeros that pad a group's channels to whole 16-lane vectors */
  if (j.kg < 16 || j.crs == 0 || ((j.kg + 15) / 16 * 16 - j.kg) * 4 > j.kg)
    return BP_ERR_UNIMPLEMENTED;
  j.x = cpu_tensor_base(x), j.y = cpu_tensor_base(y), j.bias = bias;
  j.P = y->shape[2], j.Q = y->shape[3];
  j.sxn = x->strides[0], j.sxc = x->strides[1], j.sxh = x->strides[2];
  j.sh = a->stride_h, j.sw = a->stride_w;
  j.syn = y->strides[0], j.syk = y->strides[1];
  j.rlast = (R - 1) * a->dilation_h;
  j.R = R, j.S = S, j.pad_h = a->pad_h, j.H = x->shape[2], j.dh = a->dilation_h > 0 ? a->dilation_h : 1;
  bool inplace = a->pad_h == 0 && a->pad_w == 0 && x->strides[3] == 1;
  if (inplace && j.rs == 1 && j.sh == 1 && j.sw == 1 && j.P > 1 && j.sxh == j.Q) {
    /* 1x1 over dense rows: one long row, segments run across rows */
    j.Q *= j.P;
    j.P = 1;
  }
  unsigned threads = dev->pool ? cpu_pool_size(dev->pool) : 1;
  dconv_plan(&j, N, threads);
  if (!dconv_pad(&j, a, S)) return BP_ERR_UNIMPLEMENTED;
  if (!cpu_fast_scratch(2, (size_t)(j.kc * 32 * j.crs) * sizeof(float)))
    return BP_ERR_UNIMPLEMENTED;
  j.w = dconv_weights(&j, w);
  int64_t *off = malloc((size_t)(2 * j.rs) * sizeof *off), *col = off + j.rs;
  if (!j.w || !off) {
    free(off);
    return BP_ERR_UNIMPLEMENTED;
  }
  for (int64_t r = 0; r < R; r++)
    for (int64_t s = 0; s < S; s++) {
      off[r * S + s] = r * a->dilation_h * j.sxh + s * a->dilation_w;
      col[r * S + s] = s * a->dilation_w - a->pad_w;
    }
  j.off = off;
  j.col = a->pad_w > 0 ? col : NULL;
  j.W = x->shape[3];
  bool fresh = false;
  cpu_prep_t *prep = dconv_prepared(&j, a, &fresh);
  double flops = 2.0 * (double)(j.kg * j.G) * (double)j.crs * (double)(j.P * j.Q) * (double)N;
  if (flops < 2e6 || threads < 2 || j.ntasks < 2) {
    dconv_task(&j, 0, j.ntasks, 0);
  } else {
    _Atomic int64_t next = 0;
    j.dyn = true;
    j.next = &next;
    cpu_pool_run(dev->pool, threads, 1, dconv_task, &j);
  }
  if (prep) cpu_prep_release(prep, true);
  free(off);
  return BP_OK;
}
