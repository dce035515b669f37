/*
 * fast/conv/conv2d.c — the conv2d fast path of the "cpu" device (f32, NCHW):
 * which route runs, its plan (blocks, k blocks, threads), the padded image
 * and the weights; the loops themselves are in fast/conv/conv2d_igemm.c.
 *
 * Routes, picked per call:
 *  - depthwise (one input and one output channel per group): a direct
 *    stencil over each plane, vectorised along output rows (stride-1 rows:
 *    fast/conv/conv2d_dw_avx2.c, conv2d_dw_avx512.c, whose 3 x 3 stride-1
 *    kernel keeps three rows in flight; else the row table's);
 *  - pointwise (fast/conv/conv2d_pointwise.c): 1x1 stride-1 layers over
 *    large planes on whole cache lines, as a GEMM per image with the
 *    pixels along the vector, x and y read and written in place;
 *  - direct, on AVX-512 CPUs (fast/conv/conv2d_direct.c): output channels
 *    along the vector, input values broadcast from the image rows, for
 *    every layer with at least 16 output channels per group; the routes
 *    below serve AVX2 CPUs and the layers it declines;
 *  - in place: Y = W · im2col(X) with both read where they are. The weights
 *    are rows of C/G*R*S floats already; strips of NR output pixels whose
 *    halves each lie on one output row read the image through a table of
 *    tap offsets, so nothing is packed (stride-1 rows, stride-2 rows split
 *    into phases, 1x1 over dense planes as one long row). Each task pads
 *    only the input rows its block of output rows needs. Taken when the
 *    strips fill at least 7/8 of the lanes;
 *  - channels along the vector: for small images with whole NR-channel
 *    blocks, where rows are too short for the lanes (14 x 14): weights
 *    packed NR channels to a k row, pixels broadcast, tiles transposed;
 *  - otherwise packed: each task packs the KC x NC tile of im2col(X) it
 *    needs into L2-sized scratch and the same micro-kernel reads it;
 *  - 1x1 as a batched GEMM only where no in-place kernel exists.
 * Ragged edges are masked in the micro-kernels (fast/gemm/gemm_ukr_rows.h), so
 * every tile is written in place. Bias is added to each output block while
 * it is in cache. bf16 (x, w and y) runs on AMX tiles where the CPU has
 * them (fast/conv/conv2d_bf16.c, fast/conv/conv2d_amx.c). A y without
 * dense planes (channels-last) runs through dense copies
 * (fast/conv/conv2d_relayout.c); bf16 without AMX through f32 copies
 * (fast/conv/conv2d_widen.c). Any other dtype, or a CPU without AVX2,
 * returns BP_ERR_UNIMPLEMENTED and the reference runs.
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

#include "conv2d.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/prepared.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/tensor.h"

/* ---- weights ---------------------------------------------------------------*/

/* Output channels [begin, end) of w copied into rows of one flat (c, r, s)
 * index each, ap[k * crs + p], for weights whose (c, r, s) are not dense;
 * dense weights are read in place (lda = the K stride). */
static void flatten_weights(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const conv_job_t *j = ctx;
  const bp_plugin_tensor_t *w = j->wt;
  const int64_t *ws = w->strides;
  const float *pw = cpu_tensor_base(w);
  for (int64_t k = begin; k < end; k++) {
    float *d = (float *)j->ap + k * j->crs;
    for (int64_t c = 0; c < j->cg; c++)
      for (int64_t r = 0; r < j->R; r++)
        for (int64_t s = 0; s < j->S; s++) *d++ = pw[k * ws[0] + c * ws[1] + r * ws[2] + s * ws[3]];
  }
}

static void pad_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const pad_job_t *j = ctx;
  for (int64_t t = begin; t < end; t++)
    cpu_fast_conv_pad_rows(j, j->x + (t / j->C) * j->sxn + (t % j->C) * j->sxc, 0, j->Hp,
                       j->xp + t * j->Hp * j->Wp, NULL);
}

/* Whether pix_task suits: whole NR-channel blocks, output rows that leave
 * the in-place route's lanes idle, and a padded image that stays in L2
 * while each block of channels streams over it. */
static bool pix_pays(const conv_job_t *j) {
  const cpu_fast_gemm_kernel_t *kr = j->kr;
  if (!kr->ukr_pix || !kr->pack || kr->mr > 16 || j->kg % kr->nr) return false;
  int64_t pq = j->P * j->Q, hw = kr->nr / 2, strips = 0;
  for (int64_t jj = 0; jj < pq; jj += cpu_fast_conv_strip(j->Q, hw, jj, pq)) strips++;
  if (pq * 16 >= strips * 2 * hw * 15) return false; /* lanes full anyway */
  int64_t hp = (j->P - 1) * j->sh + (j->R - 1) * j->dh + 1;
  int64_t wp = (j->Q - 1) * j->sw + (j->S - 1) * j->dw + 1;
  return j->cg * hp * wp * (int64_t)sizeof(float) <= (512 << 10) && pq >= 4 * kr->mr;
}

/* ---- constant weights (fast/prepared.h) -----------------------------------*/

uint64_t cpu_fast_conv_const_id(const bp_conv2d_args_t *a) {
  return a->struct_size >= offsetof(bp_conv2d_args_t, w_const_id) + sizeof a->w_const_id
             ? a->w_const_id
             : 0;
}

cpu_prep_t *cpu_fast_conv_prepared(const bp_conv2d_args_t *a, char tag,
                                   const cpu_fast_gemm_kernel_t *kr, uint64_t extra, size_t bytes,
                                   bool *fresh) {
  const bp_plugin_tensor_t *w = &a->w;
  *fresh = false;
  if (!cpu_fast_conv_const_id(a)) return NULL;
  cpu_prep_key_t key;
  memset(&key, 0, sizeof key);
  key.const_id = cpu_fast_conv_const_id(a);
  key.alloc = w->ptr;
  uint64_t what[] = {(uint64_t)tag, (uint64_t)(uintptr_t)kr, extra, w->offset, (uint64_t)w->dtype,
                     (uint64_t)w->shape[0], (uint64_t)w->shape[1], (uint64_t)w->shape[2],
                     (uint64_t)w->shape[3], (uint64_t)w->strides[0], (uint64_t)w->strides[1],
                     (uint64_t)w->strides[2], (uint64_t)w->strides[3], (uint64_t)a->groups};
  _Static_assert(sizeof what <= sizeof key.what, "the key's description holds it");
  memcpy(key.what, what, sizeof what);
  return cpu_prep_get(&key, bytes, fresh);
}

/* ---- routes ---------------------------------------------------------------*/

const cpu_fast_gemm_kernel_t *cpu_fast_conv_sgemm_kernel(const cpu_device_t *dev) {
  const cpu_features_t *f = cpu_features_get();
  bp_isa_level_t isa = dev->isa == BP_ISA_BEST ? BP_ISA_AVX512 : dev->isa;
  if (isa >= BP_ISA_AVX512 && f->avx512f && f->avx512vl) return &cpu_fast_sgemm_avx512;
  if (isa >= BP_ISA_AVX2 && f->avx2 && f->fma) return &cpu_fast_sgemm_avx2;
  return NULL;
}

static unsigned pool_threads(const cpu_device_t *dev) {
  return dev->pool ? cpu_pool_size(dev->pool) : 1;
}

/* Splits the work: column blocks of at most NC output pixels, and when
 * there are too few of them for the pool, parts of the output channels. */
static void plan(conv_job_t *j, int64_t N, unsigned threads) {
  int64_t pq = j->P * j->Q, nr = j->kr->nr, mr = j->kr->mr;
  int64_t T = threads, ng = N * j->G;
  /* k blocks of equal size. Packed: at most CONV_KC_MAX (and the kernel's
   * KC), for the tile. In place: a strip's image rows and the MR x KC
   * weights stay in L1 over 384 k rows; long k runs (256 x 3x3 and up)
   * did best in blocks up to 1152 (AVX2, measured), which rereads C less. */
  int64_t kmax = j->kr->kc < CONV_KC_MAX ? j->kr->kc : CONV_KC_MAX;
  if (j->direct) kmax = j->crs > 3 * CONV_KC_DIRECT ? 3 * CONV_KC_DIRECT : CONV_KC_DIRECT;
  int64_t kblocks = (j->crs + kmax - 1) / kmax;
  j->kc = kblocks ? (j->crs + kblocks - 1) / kblocks : 1;
  /* n blocks whose packed tile fits CONV_TILE_BYTES */
  int64_t ncmax = CONV_TILE_BYTES / (int64_t)sizeof(float) / (j->kc + 1);
  ncmax = ncmax / nr * nr > nr ? ncmax / nr * nr : nr;
  int64_t ncb = (pq + ncmax - 1) / ncmax;
  j->pm = 1;
  if (T > 1 && (ng * ncb) % T != 0 && ng * ncb < 8 * T) {
    /* more, narrower column blocks when that balances the threads; else
     * split the output channels too (each part packs its own tiles) */
    int64_t more = ncb + 1;
    while ((ng * more) % T != 0 && pq / more >= 4 * nr) more++;
    if ((ng * more) % T == 0 && pq / more >= 4 * nr)
      ncb = more;
    else {
      int64_t mpanels = (j->kg + mr - 1) / mr;
      j->pm = mpanels < T ? mpanels : T;
    }
  }
  if (j->direct) {
    /* no tile to fit: blocks of about CONV_DIRECT_NC pixels (their output
     * and input rows stay in L2), at least one per thread */
    j->pm = 1;
    ncb = pq / CONV_DIRECT_NC > 1 ? pq / CONV_DIRECT_NC : 1;
    /* several threads: at least CONV_DIRECT_TASKS blocks per thread, down
     * to blocks of 8 strips. Workers claim blocks as they go, so one that
     * is slowed or starts late (another process on its core) leaves the
     * other at most a small block; where each block pads its own input
     * rows (3x3 at 56^2: 14 blocks of 4 rows instead of 8 of 7) the extra
     * halo rows cost less than that (measured at 2 threads on one core) */
    if (T > 1) {
      int64_t want = (CONV_DIRECT_TASKS * T + ng - 1) / ng, fine = pq / (8 * nr);
      want = want < fine ? want : fine;
      ncb = want > ncb ? want : ncb;
    }
    while ((ng * ncb) % T != 0 && ncb < pq) ncb++;
  }
  if (j->direct && j->P >= ncb) {
    /* blocks of whole rows; of the row counts up to half smaller, the one
     * that leaves the busiest thread the fewest rows */
    int64_t r0 = (j->P + ncb - 1) / ncb, rows = r0, most = INT64_MAX;
    for (int64_t r = r0; r >= 1 && 2 * r >= r0; r--) {
      int64_t tasks = (j->P + r - 1) / r * ng;
      int64_t busiest = (tasks + T - 1) / T * r;
      if (busiest < most) most = busiest, rows = r;
    }
    j->nc = rows * j->Q;
  } else
    j->nc = ((pq + ncb - 1) / ncb + nr - 1) / nr * nr; /* whole panels */
  j->ncb = (pq + j->nc - 1) / j->nc;
}

/* Points j's image at a zero-padded copy when x has padding or strided
 * rows; false when the copy's memory cannot be had. */
static bool pad_images(cpu_device_t *dev, conv_job_t *j, int64_t N) {
  if (j->ph == 0 && j->pw == 0 && j->sxw == 1 && j->sw == 1) return true;
  int64_t sw = j->sw, wneed = (j->Q - 1) * sw + (j->S - 1) * j->dw + 1;
  int64_t wq = (wneed + sw - 1) / sw;
  if (sw > 1 && sw * wq > CONV_ROW_MAX) return false;
  pad_job_t p = {j->x,    NULL,  j->C,  j->H,   j->W,   (j->P - 1) * j->sh + (j->R - 1) * j->dh + 1,
                 sw * wq, j->ph, j->pw, j->sxn, j->sxc, j->sxh,
                 j->sxw,  sw,    wq};
  if (j->direct || j->pix) {
    /* per task: the rows of at most slab_rows output rows, in scratch 1
     * (pix: all of them, padded once per thread and image) */
    int64_t orows = j->pix ? j->P : (j->nc + j->Q - 1) / j->Q + 1;
    orows = orows < j->P ? orows : j->P;
    j->slab = true;
    j->pad = p;
    j->slab_rows = (orows - 1) * j->sh + (j->R - 1) * j->dh + 1;
    int64_t plane = j->slab_rows * p.Wp;
    if (!cpu_fast_scratch(1, (size_t)(j->cg * plane + 16) * sizeof(float))) return false;
    j->sxc = plane, j->sxh = p.Wp, j->sxw = 1;
    j->ph = j->pw = 0;
    j->wq = sw > 1 ? wq : 0;
    j->Hin = j->slab_rows, j->Win = p.Wp, j->lim_ok = true;
    return true;
  }
  p.xp = cpu_fast_scratch(1, (size_t)(N * j->C * p.Hp * p.Wp) * sizeof(float));
  if (!p.xp) return false;
  int64_t plane = p.Hp * p.Wp;
  cpu_pool_run(dev->pool, N * j->C, plane >= 16384 ? 1 : 16384 / plane + 1, pad_task, &p);
  j->x = p.xp;
  j->sxn = j->C * plane, j->sxc = plane, j->sxh = p.Wp, j->sxw = 1;
  j->ph = j->pw = 0;
  j->wq = sw > 1 ? wq : 0;
  j->Hin = p.Hp, j->Win = p.Wp, j->lim_ok = true;
  return true;
}

/* Whether conv_direct's strips fill at least 7/8 of the kernel's lanes
 * (they cannot when output rows are short or not a multiple of NR/2):
 * below that, packing the image costs less than the idle lanes. At 7/8
 * (rows of 14 on AVX2) one thread runs about as fast either way, and the
 * direct route splits evenly by rows and packs nothing per thread. */
static bool direct_pays(const conv_job_t *j) {
  int64_t pq = j->P * j->Q, hw = j->kr->nr / 2, strips = 0;
  for (int64_t jj = 0; jj < pq; jj += cpu_fast_conv_strip(j->Q, hw, jj, pq)) strips++;
  return pq * 8 >= strips * 2 * hw * 7;
}

/* With constant weights, pix_task's NR-channel blocks of every group packed
 * once and kept between calls (fast/prepared.h), so its tasks pack
 * nothing. */
static cpu_prep_t *pix_prepared(conv_job_t *j, const bp_conv2d_args_t *a, bool *fresh) {
  int64_t nr = j->kr->nr, kq = j->kg / nr;
  cpu_prep_t *p = cpu_fast_conv_prepared(a, 'P', j->kr, 0,
                                         (size_t)(j->K * j->crs) * sizeof(float), fresh);
  if (!p) return NULL;
  float *dst = cpu_prep_data(p);
  for (int64_t b = 0; *fresh && b < j->G * kq; b++)
    j->kr->pack(j->ap + (b / kq * j->kg + b % kq * nr) * j->lda, j->lda, 1, nr, j->crs, (int)nr,
                dst + b * nr * j->crs);
  j->wpacked = dst;
  return p;
}

static bp_status_t conv_implicit(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                 const cpu_fast_gemm_kernel_t *kr, const float *bias) {
  conv_job_t j;
  memset(&j, 0, sizeof j);
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  j.kr = kr;
  j.wt = w;
  j.x = cpu_tensor_base(x);
  j.y = cpu_tensor_base(y);
  j.bias = bias;
  j.C = x->shape[1], j.H = x->shape[2], j.W = x->shape[3];
  j.K = y->shape[1], j.P = y->shape[2], j.Q = y->shape[3];
  j.R = w->shape[2], j.S = w->shape[3], j.G = a->groups;
  j.cg = w->shape[1], j.kg = j.K / j.G, j.crs = j.cg * j.R * j.S;
  j.sxn = x->strides[0], j.sxc = x->strides[1], j.sxh = x->strides[2];
  j.sxw = x->strides[3], j.syn = y->strides[0], j.syk = y->strides[1];
  j.sh = a->stride_h, j.sw = a->stride_w, j.ph = a->pad_h, j.pw = a->pad_w;
  j.dh = a->dilation_h, j.dw = a->dilation_w;
  if (j.R == 1 && j.S == 1 && j.sh == 1 && j.sw == 1 && j.ph == 0 && j.pw == 0 && j.sxw == 1 &&
      (j.H == 1 || j.sxh == j.W)) {
    /* 1x1 over dense planes: one long row, so strips may run across rows */
    j.Q = j.W = j.P * j.Q;
    j.P = j.H = 1;
  }
  j.Hin = j.H, j.Win = j.W;
  j.lim_ok = j.sxc >= 0 && j.sxh >= 0;
  if (j.crs == 0) return BP_ERR_UNIMPLEMENTED;
  /* (c, r, s) dense in memory: the weights are read where they are */
  const int64_t *ws = w->strides;
  bool flat =
      (j.S == 1 || ws[3] == 1) && (j.R == 1 || ws[2] == j.S) && (j.cg == 1 || ws[1] == j.R * j.S);
  float *ap = NULL;
  if (flat) {
    j.ap = cpu_tensor_base(w);
    j.lda = ws[0];
  } else {
    ap = cpu_fast_scratch(2, (size_t)(j.K * j.crs) * sizeof(float));
    if (!ap) return BP_ERR_UNIMPLEMENTED;
    j.ap = ap;
    j.lda = j.crs;
  }
  j.pix = pix_pays(&j);
  j.direct = !j.pix && kr->ukr_offs && direct_pays(&j);
  unsigned threads = pool_threads(dev);
  plan(&j, x->shape[0], threads);
  if (!pad_images(dev, &j, x->shape[0])) return BP_ERR_UNIMPLEMENTED;
  /* every worker needs its tile buffer: fail before writing anything */
  if (!j.direct && !j.pix && !cpu_fast_scratch(3, cpu_fast_conv_tile_bytes(&j)))
    return BP_ERR_UNIMPLEMENTED;
  if (j.pix && !cpu_fast_scratch(3, (size_t)(j.crs * kr->nr) * sizeof(float)))
    return BP_ERR_UNIMPLEMENTED;
  int64_t *off = NULL;
  if (j.direct || j.pix) {
    /* the tap offsets, with slack for the kernel's prefetch */
    off = malloc((size_t)(j.crs + 8) * sizeof *off);
    if (!off) return BP_ERR_UNIMPLEMENTED;
    int64_t p = 0;
    for (int64_t c = 0; c < j.cg; c++)
      for (int64_t r = 0; r < j.R; r++)
        for (int64_t s = 0; s < j.S; s++) {
          int64_t col = s * j.dw;
          off[p] = c * j.sxc + r * j.dh * j.sxh + (j.wq ? col % j.sw * j.wq + col / j.sw : col);
          if (off[p] > j.off_max) j.off_max = off[p];
          p++;
        }
    for (int i = 0; i < 8; i++) off[p + i] = 0;
    j.off = off;
  }
  if (ap) cpu_pool_run(dev->pool, j.K, 16, flatten_weights, &j);
  bool fresh = false;
  cpu_prep_t *prep = j.pix ? pix_prepared(&j, a, &fresh) : NULL;
  int64_t tasks = x->shape[0] * j.G * j.ncb * j.pm;
  double flops = 2.0 * (double)j.K * (double)j.crs * (double)(j.P * j.Q) * (double)x->shape[0];
  if (j.pix) tasks = x->shape[0] * j.G * (j.kg / kr->nr);
  cpu_pool_fn fn = j.pix ? cpu_fast_conv_pix_task : cpu_fast_conv_task;
  if (flops < 2e6 || threads < 2 || tasks < 2) {
    fn(&j, 0, tasks, 0);
  } else {
    /* tasks claimed as workers get to them: a late or preempted worker
     * (the pool wakes them per call; the machine may be shared) takes
     * fewer, and which worker computes a block never changes its result */
    _Atomic int64_t next = 0;
    j.dyn = true;
    j.ntasks = tasks;
    j.next = &next;
    cpu_pool_run(dev->pool, threads, 1, fn, &j);
  }
  if (prep) cpu_prep_release(prep, true);
  free(off);
  return BP_OK;
}

/* ---- per-plane work: bias after the GEMM, depthwise --------------------*/

typedef struct plane_job {
  const bp_conv2d_args_t *a;
  const cpu_fast_vec_kernels_t *vk;
  const float *bias;
  cpu_fast_dw_geom_t g;
  bool avx2;   /* cpu_fast_conv_dw_plane_avx2 (stride-1 rows) instead of vk's */
  bool avx512; /* cpu_fast_conv_dw_plane_avx512 (stride-1 rows) instead of vk's */
  bool dw3;    /* cpu_fast_conv_dw3_plane_* (3 x 3, stride 1) before both */
  int nt;    /* its output stores bypass the cache */
  /* depthwise on several threads: the pool runs one chunk per worker, and
   * each claims batches of planes from *next until all are taken */
  _Atomic int64_t *next;
  int64_t planes, batch;
} plane_job_t;

static void bias_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const plane_job_t *j = ctx;
  const bp_plugin_tensor_t *y = &j->a->y;
  int64_t K = y->shape[1], hw = y->shape[2] * y->shape[3];
  float *py = cpu_tensor_base(y);
  for (int64_t t = begin; t < end; t++) {
    float *row = py + (t / K) * y->strides[0] + (t % K) * y->strides[1];
    float b = j->bias[t % K];
    for (int64_t i = 0; i < hw; i++) row[i] += b;
  }
}

/* Plane t (image t / C, channel t % C) of the depthwise conv, buf its
 * padded-plane scratch. */
static void dw_plane(const plane_job_t *j, int64_t t, float *buf) {
  const bp_conv2d_args_t *a = j->a;
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  int64_t C = x->shape[1], R = w->shape[2], S = w->shape[3];
  float wt[64];
  const float *px = cpu_tensor_base(x), *pw = cpu_tensor_base(w);
  float *py = cpu_tensor_base(y);
  int64_t n = t / C, c = t % C;
  for (int64_t r = 0; r < R; r++)
    for (int64_t s = 0; s < S; s++)
      wt[r * S + s] = pw[c * w->strides[0] + r * w->strides[2] + s * w->strides[3]];
  const float *xc = px + n * x->strides[0] + c * x->strides[1];
  float *yc = py + n * y->strides[0] + c * y->strides[1], b = j->bias ? j->bias[c] : 0.0f;
  if (j->dw3 && j->avx512)
    cpu_fast_conv_dw3_plane_avx512(&j->g, xc, wt, b, yc, j->nt);
  else if (j->dw3)
    cpu_fast_conv_dw3_plane_avx2(&j->g, xc, wt, b, yc, j->nt);
  else if (j->avx512)
    cpu_fast_conv_dw_plane_avx512(&j->g, xc, wt, b, yc, buf, j->nt);
  else if (j->avx2)
    cpu_fast_conv_dw_plane_avx2(&j->g, xc, wt, b, yc, buf, j->nt);
  else
    j->vk->dw_plane(&j->g, xc, wt, b, yc, buf);
}

static void dw_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const plane_job_t *j = ctx;
  float *buf = cpu_fast_scratch(3, (size_t)((j->g.Hp + 2) * j->g.Wp) * sizeof(float));
  if (!buf) return; /* checked by the caller before the split */
  if (!j->next)
    for (int64_t t = begin; t < end; t++) dw_plane(j, t, buf);
  else /* batches as they are claimed; begin and end are unused */
    for (int64_t b;
         (b = atomic_fetch_add_explicit(j->next, j->batch, memory_order_relaxed)) < j->planes;)
      for (int64_t t = b; t < b + j->batch && t < j->planes; t++) dw_plane(j, t, buf);
  if (j->nt) _mm_sfence(); /* the streamed rows, before the pool's barrier */
}

/* Planes per claim on several threads: as many as make about
 * DW_BATCH_FLOATS of input (at least grain), while every worker still gets
 * 4 batches. A worker then streams long runs of x and y; claimed one at a
 * time, consecutive planes alternate between the workers, and the
 * hardware prefetch that runs on past a plane's end fetches the other
 * worker's plane. */
#define DW_BATCH_FLOATS 25600 /* 100 KiB: 8 planes of 56 x 56 */
static int64_t dw_batch(int64_t planes, int64_t plane, int64_t grain, unsigned threads) {
  int64_t b = DW_BATCH_FLOATS / (plane > 0 ? plane : 1), most = planes / (4 * (int64_t)threads);
  b = b < most ? b : most;
  return b > grain ? b : grain;
}

/* One input and one output channel per group: a direct stencil per plane. */
static bp_status_t conv_depthwise(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                  const cpu_fast_gemm_kernel_t *kr, const cpu_fast_vec_kernels_t *vk,
                                  const float *bias) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  if (w->shape[2] * w->shape[3] > 64) return BP_ERR_UNIMPLEMENTED;
  plane_job_t j = {a, vk, bias, {0}, false, false, false, 0, NULL, 0, 0};
  /* AVX2 or AVX-512 and stride-1 rows: the stencil that keeps a row's vectors in
   * flight. Its output is streamed past the caches only from the size the
   * memory-bound ops stream at (cpu_fast_nt_min_bytes(), 16 MiB): below that,
   * x and y together stay in L3 between layers (and between calls), and
   * streaming them to memory would make the layer DRAM-bound. */
  j.avx2 = kr == &cpu_fast_sgemm_avx2 && a->stride_w == 1;
  j.avx512 = kr == &cpu_fast_sgemm_avx512 && a->stride_w == 1;
  /* 3 x 3 stride 1: three rows in rotation, x read in place */
  j.dw3 = (j.avx512 || j.avx2) && a->stride_h == 1 && a->dilation_h == 1 && w->shape[2] == 3 &&
          w->shape[3] == 3 && x->strides[3] == 1;
  j.nt = (j.avx2 || j.avx512) && cpu_numel(y) * (int64_t)sizeof(float) >= cpu_fast_nt_min_bytes(dev);
  cpu_fast_dw_geom_t *g = &j.g;
  g->H = x->shape[2], g->W = x->shape[3], g->P = y->shape[2];
  g->Q = y->shape[3], g->R = w->shape[2], g->S = w->shape[3];
  g->sh = a->stride_h, g->sw = a->stride_w, g->ph = a->pad_h;
  g->pw = a->pad_w, g->dh = a->dilation_h, g->dw = a->dilation_w;
  g->sxh = x->strides[2], g->sxw = x->strides[3];
  g->Hp = (g->P - 1) * g->sh + (g->R - 1) * g->dh + 1;
  /* per phase: Q outputs, the widest tap's shift, one vector of slack */
  g->Wp = (g->Q + ((g->S - 1) * g->dw) / g->sw + 1 + 16) * g->sw;
  if (j.avx2) g->Wp = (g->Wp + 7) / 8 * 8; /* aligned rows */
  if (j.avx512) g->Wp = (g->Wp + 15) / 16 * 16;
  if (!cpu_fast_scratch(3, (size_t)((g->Hp + 2) * g->Wp) * sizeof(float))) return BP_ERR_UNIMPLEMENTED;
  int64_t planes = x->shape[0] * x->shape[1];
  int64_t work = g->P * g->Q * g->R * g->S, grain = work >= 16384 ? 1 : 16384 / work + 1;
  unsigned threads = pool_threads(dev);
  _Atomic int64_t next = 0;
  if (threads > 1 && planes >= 4 * (int64_t)threads * grain) {
    /* planes claimed as workers get to them (at least 4 batches a worker):
     * one slowed by another process leaves the rest to the others, and
     * which worker computes a plane never changes its result */
    j.next = &next;
    j.planes = planes;
    j.batch = dw_batch(planes, g->H * g->W, grain, threads);
    cpu_pool_run(dev->pool, threads, 1, dw_task, &j);
  } else
    cpu_pool_run(dev->pool, planes, grain, dw_task, &j);
  return BP_OK;
}

/* Y[n] = W · X[n] as one batched GEMM; then the bias over each plane. */
static bp_status_t conv_1x1(cpu_device_t *dev, const bp_conv2d_args_t *a, const float *bias) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  int64_t N = x->shape[0], C = x->shape[1], HW = x->shape[2] * x->shape[3];
  int64_t K = y->shape[1];
  bp_gemm_args_t g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.alpha = 1.0;
  g.beta = 0.0;
  g.a = (bp_plugin_tensor_t){
      w->ptr, w->offset, BP_F32, 3, {1 < N ? N : 1, K, C}, {0, w->strides[0], w->strides[1]}};
  g.b = (bp_plugin_tensor_t){x->ptr, x->offset,  BP_F32,
                             3,      {N, C, HW}, {x->strides[0], x->strides[1], 1}};
  g.c = (bp_plugin_tensor_t){y->ptr, y->offset,  BP_F32,
                             3,      {N, K, HW}, {y->strides[0], y->strides[1], 1}};
  g.a.shape[0] = N;
  bp_status_t st = cpu_fast_gemm(dev, &g);
  if (st != BP_OK || !bias) return st;
  plane_job_t j = {a, NULL, bias, {0}, false, false, false, 0, NULL, 0, 0};
  cpu_pool_run(dev->pool, N * K, HW >= 4096 ? 1 : 4096 / (HW + 1) + 1, bias_task, &j);
  return BP_OK;
}

static bool geometry_ok(const bp_conv2d_args_t *a) {
  return a->stride_h > 0 && a->stride_w > 0 && a->dilation_h > 0 && a->dilation_w > 0 &&
         a->pad_h >= 0 && a->pad_w >= 0;
}

static bp_status_t conv_route(cpu_device_t *dev, const bp_conv2d_args_t *a,
                              const cpu_fast_gemm_kernel_t *kr, const cpu_fast_vec_kernels_t *vk,
                              const float *bias) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  int64_t G = a->groups;
  if (G == x->shape[1] && G == y->shape[1] && w->shape[1] == 1)
    return conv_depthwise(dev, a, kr, vk, bias);
  bool unit = w->shape[2] == 1 && w->shape[3] == 1 && a->stride_h == 1 && a->stride_w == 1 &&
              a->pad_h == 0 && a->pad_w == 0;
  /* 3x3 stride 1 by Winograd (fast/conv/conv2d_winograd.c), 1x1 over
   * large planes by the pointwise route, else on AVX-512 the direct route
   * (fast/conv/conv2d_direct.c), where they take the layer */
  bp_status_t st = cpu_fast_conv2d_winograd(dev, a, bias);
  if (st != BP_ERR_UNIMPLEMENTED) return st;
  st = cpu_fast_conv2d_pointwise(dev, a, kr, bias);
  if (st != BP_ERR_UNIMPLEMENTED) return st;
  if (kr == &cpu_fast_sgemm_avx512) {
    st = cpu_fast_conv2d_direct(dev, a, bias);
    if (st != BP_ERR_UNIMPLEMENTED) return st;
  }
  /* 1x1 over dense planes is read in place by conv_implicit's direct path
   * where the kernel has one; a batched GEMM otherwise */
  if (unit && G == 1 && x->strides[3] == 1 && !kr->ukr_offs &&
      (x->shape[2] <= 1 || x->strides[2] == x->shape[3]))
    return conv_1x1(dev, a, bias);
  return conv_implicit(dev, a, kr, bias);
}

bp_status_t cpu_fast_conv2d(cpu_device_t *dev, const bp_conv2d_args_t *a) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  bool f32 = x->dtype == BP_F32 && w->dtype == BP_F32 && y->dtype == BP_F32;
  bool bf16 = x->dtype == BP_BF16 && w->dtype == BP_BF16 && y->dtype == BP_BF16;
  if (!(f32 || bf16) || !geometry_ok(a)) return BP_ERR_UNIMPLEMENTED;
  if (bf16 && !cpu_fast_conv_amx_ok(dev)) return cpu_fast_conv2d_widened(dev, a);
  const cpu_fast_gemm_kernel_t *kr = cpu_fast_conv_sgemm_kernel(dev);
  const cpu_fast_vec_kernels_t *vk = cpu_fast_vec_pick(dev);
  if (f32 && (!kr || !vk)) return BP_ERR_UNIMPLEMENTED;
  int64_t K = y->shape[1];
  if (cpu_numel(y) == 0) return BP_OK;
  /* bias of any float dtype, widened once */
  float *bias = NULL;
  if (!cpu_tensor_absent(&a->bias)) {
    bias = malloc((size_t)K * sizeof(float));
    if (!bias) return BP_ERR_UNIMPLEMENTED;
    const void *pb = cpu_tensor_base(&a->bias);
    for (int64_t k = 0; k < K; k++)
      bias[k] = (float)cpu_load(pb, a->bias.dtype, k * a->bias.strides[0]);
  }
  /* the routes write dense planes of y */
  bp_status_t st = cpu_fast_conv2d_needs_relayout(a) ? cpu_fast_conv2d_relayout(dev, a, bias)
                   : bf16                            ? cpu_fast_conv2d_bf16(dev, a, bias)
                                                     : conv_route(dev, a, kr, vk, bias);
  free(bias);
  return st;
}
