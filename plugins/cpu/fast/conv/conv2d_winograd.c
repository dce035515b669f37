/*
 * fast/conv/conv2d_winograd.c — f32 3x3 stride-1 conv2d by Winograd
 * F(2x2, 3x3) on AVX-512 and AVX2 CPUs. Each 2 x 2 block of output pixels is a
 * tile; its 4 x 4 input patch and each 3 x 3 filter are transformed so
 * that the block's 36 multiply-adds per input channel become 16 (one per
 * element of the 4 x 4), and those elementwise products summed over the
 * input channels are 16 GEMMs: 2.25 times fewer FLOPs than the direct
 * route's, for three transforms that only add and subtract
 * (fast/conv/conv2d_winograd_kern.h, per ISA):
 *
 *   1. filter: U[xi][K][C], then packed into the GEMM kernel's A panels
 *      (12 x 32 on AVX-512, 6 x 16 on AVX2) once per call (pool over
 *      output channels); x scanned for its largest magnitude;
 *   2. per chunk of WINO_NT tiles, each worker taking its own range of
 *      chunks first (fast/task_ranges.h): the input's V[xi][C][WINO_NT]
 *      (one B panel of the AVX-512 kernel as it lies, two of AVX2's read
 *      at V's row stride; x's rows read in place, the padding as
 *      masked-off lanes), M[xi] = U[xi] . V[xi] on the GEMM
 *      micro-kernels, and y = A^T M A + bias straight into y's rows, so V
 *      and M stay in the worker's L2.
 *
 * The transforms mix neighbouring values, so an inf or NaN would reach
 * outputs whose own window holds none, and their sums run a few times
 * larger than the direct route's: a layer whose x or w is not all finite,
 * or whose largest |x| * |w| passes WINO_MAX_PRODUCT, goes to the direct
 * route, decided before y is written. docs/backend-cpu.md has the
 * accuracy and the speed.
 */
#include <string.h>

#include "conv2d.h"
#include "plugins/cpu/fast/prepared.h"
#include "plugins/cpu/fast/task_ranges.h"
#include "plugins/cpu/tensor.h"

#define WINO_MIN_CHANNELS 32 /* C and K: below, the GEMMs are too thin */
#define WINO_MIN_TILES 16    /* T: below, too few for a B panel */
/* Output pixels over all images: the filter's transform and packing cost
 * the same per (k, c) whatever the image, what the GEMMs save grows with
 * its pixels; below, the direct route is faster (docs/backend-cpu.md). A
 * device's tune.conv_winograd_min_pixels replaces it. */
#define WINO_MIN_PIXELS 576
/* The same with the filter's transform kept between calls (constant
 * weights, fast/prepared.h): only the per-image work is left to repay */
#define WINO_MIN_PIXELS_PREPARED 100
#define WINO_MAX_PRODUCT 0x1p100f /* largest |x| * |w| taken */

typedef struct wino_run {
  wino_job_t *j;
  const cpu_fast_gemm_kernel_t *kr;
  const wino_kernels_t *wk; /* the transforms of kr's ISA */
  const float *Up;          /* U[xi] packed per k block into the kernel's A panels */
  bool have_u;              /* Up and j->wmax came prepared (constant weights) */
  int64_t kc, nkb;          /* C in k blocks of kc (the kernel's KC) */
  /* chunks of WINO_NT tiles, one range per worker (fast/task_ranges.h):
   * neighbouring chunks write neighbouring pixels of y, which share cache
   * lines where a chunk ends inside a row */
  cpu_fast_ranges_t chunks;
} wino_run_t;

/* Floats of one xi's packed panels for one k block: K rows padded to MR. */
static int64_t panel_floats(const wino_run_t *r, int64_t kb) {
  return (r->j->K + r->kr->mr - 1) / r->kr->mr * r->kr->mr * kb;
}

/* Where xi's panels of k block b begin. */
static const float *panels(const wino_run_t *r, int64_t xi, int64_t b) {
  return r->Up + (xi * r->nkb + b) * panel_floats(r, r->kc);
}

/* Tasks [0, K) transform output channels' filters, [K, K + N * C) scan
 * x's planes: one pool run for both. */
static void filter_scan_task(void *ctx, int64_t b, int64_t e, unsigned worker) {
  (void)worker;
  const wino_run_t *r = ctx;
  wino_job_t *j = r->j;
  if (b < j->K && !r->have_u) r->wk->filter(j, b, e < j->K ? e : j->K);
  if (e > j->K) r->wk->scan(j, (b > j->K ? b : j->K) - j->K, e - j->K);
}

/* Packs U[xi] of xi in [b, e) into the kernel's A panels, per k block. */
static void pack_task(void *ctx, int64_t b, int64_t e, unsigned worker) {
  (void)worker;
  const wino_run_t *r = ctx;
  const wino_job_t *j = r->j;
  for (int64_t xi = b; xi < e; xi++)
    for (int64_t kb = 0; kb < r->nkb; kb++) {
      int64_t p0 = kb * r->kc, len = j->C - p0 < r->kc ? j->C - p0 : r->kc;
      r->kr->pack(j->U + xi * j->K * j->C + p0, j->C, 1, j->K, len, r->kr->mr,
                  (void *)panels(r, xi, kb));
    }
}

/* M[xi] (K x WINO_NT) = U[xi] . V[xi] over C, k block by k block: whole
 * tiles as wide as a chunk (AVX-512's 12 x 32) on the packed kernel; the
 * last rows, and AVX2's 16-column halves (B rows WINO_NT apart), on its
 * twin that reads A as packed and B at a row stride. */
static void chunk_gemm(const wino_run_t *r, const float *V, float *M) {
  const wino_job_t *j = r->j;
  const cpu_fast_gemm_kernel_t *kr = r->kr;
  int mr = kr->mr;
  const float one = 1.0f, zero = 0.0f;
  for (int64_t xi = 0; xi < 16; xi++)
    for (int64_t kb = 0; kb < r->nkb; kb++) {
      int64_t p0 = kb * r->kc, len = j->C - p0 < r->kc ? j->C - p0 : r->kc;
      const float *ap = panels(r, xi, kb), *bp = V + xi * WINO_XI_STRIDE(j->C) + p0 * WINO_NT;
      float *c = M + xi * WINO_XI_STRIDE(j->K);
      const float *beta = kb ? &one : &zero;
      for (int64_t i0 = 0; i0 < j->K; i0 += mr) {
        int rows = j->K - i0 < mr ? (int)(j->K - i0) : mr;
        const float *apan = ap + i0 * len;
        /* all WINO_NT columns (V's past nt are zeros, M's never read) */
        if (rows == mr && kr->nr == WINO_NT)
          kr->ukr(len, apan, bp, c + i0 * WINO_NT, WINO_NT, &one, beta);
        else
          for (int64_t j0 = 0; j0 < WINO_NT; j0 += kr->nr)
            kr->ukr_cols(len, apan, mr, bp + j0, WINO_NT, c + i0 * WINO_NT + j0, WINO_NT, rows,
                         kr->nr, one, *beta);
      }
    }
}

/* Takes chunks until none are left, its own range first (chunk b of the
 * pool runs on worker b): input transform, GEMMs, output transform, each
 * chunk's V and M in this worker's scratch. */
static void chunk_task(void *ctx, int64_t b, int64_t e, unsigned worker) {
  (void)e, (void)worker;
  wino_run_t *r = ctx;
  wino_job_t *j = r->j;
  float *V = cpu_fast_scratch(0, (size_t)(16 * WINO_XI_STRIDE(j->C)) * sizeof(float));
  float *M = cpu_fast_scratch(1, (size_t)(16 * WINO_XI_STRIDE(j->K)) * sizeof(float));
  /* checked on the calling thread; a worker without them claims nothing
   * and the others take every chunk */
  if (!V || !M) return;
  for (int64_t ch; (ch = cpu_fast_ranges_next(&r->chunks, (unsigned)b)) >= 0;) {
    int64_t t0 = ch * WINO_NT, nt = j->T - t0 < WINO_NT ? j->T - t0 : WINO_NT;
    r->wk->input(j, t0, nt, V);
    chunk_gemm(r, V, M);
    r->wk->output(j, t0, nt, M);
  }
}

static void run(cpu_device_t *dev, int64_t n, int64_t grain, cpu_pool_fn fn, void *ctx) {
  if (dev->pool)
    cpu_pool_run(dev->pool, n, grain, fn, ctx);
  else
    fn(ctx, 0, n, 0);
}

/* Whether the layer is one this route takes and pays for: one group, a
 * 3x3 filter, stride and dilation 1, unit-strided rows, channels, tiles
 * and pixels enough, and channel strides the filter's gathers can index. */
static bool wino_takes(const cpu_device_t *dev, const bp_conv2d_args_t *a, const wino_job_t *j) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  if (a->groups != 1 || w->shape[2] != 3 || w->shape[3] != 3 || a->stride_h != 1 ||
      a->stride_w != 1 || a->dilation_h != 1 || a->dilation_w != 1)
    return false;
  if (x->strides[3] != 1 || y->strides[3] != 1) return false;
  int64_t min_pixels = dev->tune.conv_winograd_min_pixels > 0 ? dev->tune.conv_winograd_min_pixels
                       : cpu_fast_conv_const_id(a)            ? WINO_MIN_PIXELS_PREPARED
                                                              : WINO_MIN_PIXELS;
  if (j->C < WINO_MIN_CHANNELS || j->K < WINO_MIN_CHANNELS || j->T < WINO_MIN_TILES ||
      j->N * j->P * j->Q < min_pixels)
    return false;
  return j->swc > 0 && j->swc * 15 < ((int64_t)1 << 31);
}

/* Whether x and w keep every sum finite wherever the direct route's is. */
static bool wino_values_ok(const wino_job_t *j) {
  uint32_t xb = atomic_load(&j->xmax), wb = atomic_load(&j->wmax);
  if (xb == UINT32_MAX || wb == UINT32_MAX) return false;
  float xm, wm;
  memcpy(&xm, &xb, sizeof xm);
  memcpy(&wm, &wb, sizeof wm);
  return xm <= WINO_MAX_PRODUCT && wm <= WINO_MAX_PRODUCT && xm * wm <= WINO_MAX_PRODUCT;
}

bp_status_t cpu_fast_conv2d_winograd(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                     const float *bias) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  wino_job_t j;
  memset(&j, 0, sizeof j);
  j.x = cpu_tensor_base(x), j.w = cpu_tensor_base(w), j.y = cpu_tensor_base(y), j.bias = bias;
  j.N = x->shape[0], j.C = x->shape[1], j.H = x->shape[2], j.W = x->shape[3];
  j.K = y->shape[1], j.P = y->shape[2], j.Q = y->shape[3];
  j.ph = a->pad_h, j.pw = a->pad_w;
  j.TH = (j.P + 1) / 2, j.TW = (j.Q + 1) / 2, j.T = j.N * j.TH * j.TW;
  j.sxn = x->strides[0], j.sxc = x->strides[1], j.sxh = x->strides[2];
  j.swk = w->strides[0], j.swc = w->strides[1], j.swr = w->strides[2], j.sws = w->strides[3];
  j.syn = y->strides[0], j.syk = y->strides[1], j.syh = y->strides[2];
  if (!wino_takes(dev, a, &j)) return BP_ERR_UNIMPLEMENTED;

  wino_run_t r;
  memset(&r, 0, sizeof r);
  r.j = &j;
  r.kr = cpu_fast_conv_sgemm_kernel(dev);
  if (r.kr == &cpu_fast_sgemm_avx512)
    r.wk = &cpu_fast_wino_avx512;
  else if (r.kr == &cpu_fast_sgemm_avx2)
    r.wk = &cpu_fast_wino_avx2;
  else
    return BP_ERR_UNIMPLEMENTED;
  r.kc = r.kr->kc;
  r.nkb = (j.C + r.kc - 1) / r.kc;
  unsigned workers = dev->pool ? cpu_pool_size(dev->pool) : 1;
  cpu_fast_ranges_init(&r.chunks, (j.T + WINO_NT - 1) / WINO_NT, workers);
  size_t up_bytes = (size_t)(16 * r.nkb * panel_floats(&r, r.kc)) * sizeof(float);
  bool fresh = false;
  /* with constant weights the packed transformed filter (Up) and its
   * largest magnitude are kept between calls */
  cpu_prep_t *prep = cpu_fast_conv_prepared(a, 'W', r.kr, (uint64_t)r.kc, up_bytes, &fresh);
  r.have_u = prep && !fresh;
  /* slots the chunks leave alone (they take 0 and 1 on every worker) */
  j.U = r.have_u ? NULL : cpu_fast_scratch(2, (size_t)(16 * j.K * j.C) * sizeof(float));
  float *Up = prep ? cpu_prep_data(prep) : cpu_fast_scratch(3, up_bytes);
  if ((!r.have_u && !j.U) || !Up ||
      !cpu_fast_scratch(0, (size_t)(16 * WINO_XI_STRIDE(j.C)) * sizeof(float)) ||
      !cpu_fast_scratch(1, (size_t)(16 * WINO_XI_STRIDE(j.K)) * sizeof(float))) {
    if (prep) cpu_prep_release(prep, false);
    return BP_ERR_UNIMPLEMENTED;
  }
  r.Up = Up;
  if (r.have_u) atomic_store(&j.wmax, (uint32_t)*cpu_prep_aux(prep));

  run(dev, j.K + j.N * j.C, 1, filter_scan_task, &r);
  if (!wino_values_ok(&j)) {
    /* a fresh form is not packed yet: dropped; a ready one stays */
    if (prep) cpu_prep_release(prep, false);
    return BP_ERR_UNIMPLEMENTED;
  }
  if (!r.have_u) run(dev, 16, 1, pack_task, &r);
  if (fresh) *cpu_prep_aux(prep) = atomic_load(&j.wmax);
  run(dev, workers, 1, chunk_task, &r);
  if (prep) cpu_prep_release(prep, true);
  /* a worker without scratch took none; every chunk is done otherwise */
  return cpu_fast_ranges_done(&r.chunks) ? BP_OK : BP_ERR_OUT_OF_MEMORY;
}
