/*
 * fast/conv/conv2d_igemm.c — the implicit-GEMM loops of the conv2d fast path,
 * run as pool tasks planned by fast/conv/conv2d.c (see there for the routes).
 * Y = W · im2col(X) per image and group, im2col(X) never materialised:
 *  - packed: each task packs the KC x NC tile of it its block needs into
 *    scratch (in L2), then the unpacked micro-kernel (cpu_fast_ukr_rows_fn)
 *    reads W in place against it;
 *  - in place: strips of output pixels whose input runs are consecutive
 *    floats are read straight from the (per-task padded) image through a
 *    tap offset table (cpu_fast_ukr_offs_fn);
 *  - channels along the vector: W packed NR channels to a k row per task,
 *    pixels broadcast from the image, tiles stored transposed
 *    (cpu_fast_ukr_pix_fn).
 */
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "conv2d.h"

/* The next task of this call: those of the static chunk in turn (*cur
 * counts them), or, with j->dyn (one pool chunk per worker), the next one
 * of all j->ntasks no worker has claimed yet, so that a worker that starts
 * late or is preempted takes fewer. Tasks stop at task_end(). */
static int64_t next_task(const conv_job_t *j, int64_t *cur) {
  if (!j->dyn) return (*cur)++;
  return atomic_fetch_add_explicit(j->next, 1, memory_order_relaxed);
}

static int64_t task_end(const conv_job_t *j, int64_t end) {
  return j->dyn ? j->ntasks : end;
}

/* ---- packing the image: the KC x NC tile of im2col(X) --------------------*/

/* Copies N floats, N a constant: a few vector moves, no call. */
#define COPY_N(N, d, s) memcpy((d), (s), (N) * sizeof(float))

/* Floats between the starts of two packed image panels: kb rows plus one
 * row of slack that a copy may spill into (see pack_tile). */
static int64_t panel_stride(int64_t kb, int nr) {
  return (kb + 1) * nr;
}

/* k rows [pc, pc + kb) of im2col(X[n], group g) for output pixels [j0,
 * j0 + nb), dealt out into micro-panels: dst[q * panel_stride + p*nr + l]
 * holds row p of pixel j0 + q*nr + l. k rows run outermost, so each tap
 * row of the image is read front to back (the prefetchers follow it). The
 * image is padded and phase-split (or needs neither), so each output row's
 * pixels read consecutive floats. Every piece is copied as a whole nr-float
 * vector starting at its first lane; what spills past the piece lands in
 * lanes or the slack row written later, so only reads near lim (the end of
 * x) need an exact copy. Lanes past nb in the last panel are zero. */
static inline __attribute__((always_inline)) void pack_tile_nr(const conv_job_t *j, const float *xg,
                                                               const float *lim, int64_t pc,
                                                               int64_t kb, int64_t j0, int64_t nb,
                                                               int nr, float *dst) {
  int64_t ps = panel_stride(kb, nr), rs = j->R * j->S;
  int64_t c = pc / rs, r = (pc / j->S) % j->R, s = pc % j->S;
  int64_t oh0 = j0 / j->Q, ow0 = j0 % j->Q, pad = (nb + nr - 1) / nr * nr;
  for (int64_t p = 0; p < kb; p++) {
    int64_t col = s * j->dw;
    const float *tap =
        xg + c * j->sxc + r * j->dh * j->sxh + (j->wq ? col % j->sw * j->wq + col / j->sw : col);
    int64_t jj = 0, oh = oh0, ow = ow0;
    while (jj < nb) {
      int64_t run = j->Q - ow < nb - jj ? j->Q - ow : nb - jj;
      const float *src = tap + oh * j->sh * j->sxh + ow;
      for (int64_t e = jj + run; jj < e;) {
        int64_t lane = jj % nr, n = nr - lane < e - jj ? nr - lane : e - jj;
        float *d = dst + jj / nr * ps + p * nr + lane;
        if (src + nr > lim)
          memcpy(d, src, (size_t)n * sizeof *d);
        else
          COPY_N(nr, d, src);
        src += n;
        jj += n;
      }
      ow = 0;
      oh++;
    }
    for (; jj < pad; jj++) dst[jj / nr * ps + p * nr + jj % nr] = 0;
    if (++s == j->S) {
      s = 0;
      if (++r == j->R) r = 0, c++;
    }
  }
}

/* pack_tile_nr with nr a constant, so the lane arithmetic folds. */
static void pack_tile(const conv_job_t *j, const float *xg, const float *lim, int64_t pc,
                      int64_t kb, int64_t j0, int64_t nb, float *dst) {
  if (j->kr->nr == 16)
    pack_tile_nr(j, xg, lim, pc, kb, j0, nb, 16, dst);
  else if (j->kr->nr == 32)
    pack_tile_nr(j, xg, lim, pc, kb, j0, nb, 32, dst);
  else
    pack_tile_nr(j, xg, lim, pc, kb, j0, nb, j->kr->nr, dst);
}

/* ---- the blocked loop ------------------------------------------------------*/

int64_t cpu_fast_conv_strip(int64_t Q, int64_t W, int64_t jj, int64_t end) {
  int64_t n1 = Q - jj % Q < end - jj ? Q - jj % Q : end - jj;
  if (n1 < W) return n1;
  int64_t h = jj + W;
  if (h >= end) return W;
  int64_t n2 = Q - h % Q < end - h ? Q - h % Q : end - h;
  return W + (n2 < W ? n2 : W);
}

/* k rows [pc, pc + kb) of conv_block with B read in place: each half of a
 * strip (conv_strip) is W consecutive input floats for every k row (c, r,
 * s), at the tap's offset off[p] from the pixel's input. The image stays
 * in L1 across the output-channel panels that meet it; nothing is packed. */
static void conv_direct(const conv_job_t *j, const float *ag, const float *xg, const float *lim,
                        int64_t row0, float *yg, int64_t pc, int64_t kb, int64_t m0, int64_t mcnt,
                        int64_t j0, int64_t nb) {
  const cpu_fast_gemm_kernel_t *kr = j->kr;
  int mr = kr->mr, hw = kr->nr / 2;
  for (int64_t lo = j0, cols; lo < j0 + nb; lo += cols) {
    cols = cpu_fast_conv_strip(j->Q, hw, lo, j0 + nb);
    int64_t hi = lo + hw;
    const float *blo = xg + (lo / j->Q * j->sh - row0) * j->sxh + lo % j->Q;
    const float *bhi = xg + (hi / j->Q * j->sh - row0) * j->sxh + hi % j->Q;
    /* a ragged strip loads whole vectors while every tap's stay inside x:
     * masked loads cost more */
    int lcols = (int)cols;
    const float *top = blo > bhi ? blo : bhi;
    if (cols < 2 * hw && j->lim_ok && top + j->off_max + hw <= lim) lcols = 2 * hw;
    for (int64_t ir = m0; ir < m0 + mcnt; ir += mr) {
      int rows = (int)(m0 + mcnt - ir < mr ? m0 + mcnt - ir : mr);
      /* a short last panel on AVX2: the 4-row tile, not 6 with 2 repeated */
      cpu_fast_ukr_offs_fn ukr =
          rows <= 4 && kr == &cpu_fast_sgemm_avx2 ? cpu_fast_conv_ukr_offs4_avx2 : kr->ukr_offs;
      ukr(kb, ag + ir * j->lda + pc, j->lda, blo, bhi, j->off + pc, yg + ir * j->syk + lo, j->syk,
          rows, (int)cols, lcols, 1.0f, pc == 0 ? 0.0f : 1.0f);
    }
  }
}

/* Rows [m0, m0 + mcnt) of one group's output, columns [j0, j0 + nb). Per k
 * block the image tile is packed once (it stays in L2); each micro-panel of
 * it then meets the weights of every output-channel panel in turn, so it
 * stays in L1 while they stream from L2. */
static void conv_block(const conv_job_t *j, int64_t n, int64_t g, int64_t m0, int64_t mcnt,
                       int64_t j0, int64_t nb, float *bbuf, const float *xg, const float *lim,
                       int64_t row0) {
  const cpu_fast_gemm_kernel_t *kr = j->kr;
  int mr = kr->mr, nr = kr->nr;
  float *yg = j->y + n * j->syn + g * j->kg * j->syk;
  const float *ag = j->ap + g * j->kg * j->lda;
  for (int64_t pc = 0; pc < j->crs; pc += j->kc) {
    int64_t kb = j->crs - pc < j->kc ? j->crs - pc : j->kc;
    if (j->direct) {
      conv_direct(j, ag, xg, lim, row0, yg, pc, kb, m0, mcnt, j0, nb);
      continue;
    }
    pack_tile(j, xg, lim, pc, kb, j0, nb, bbuf);
    for (int64_t jr = 0; jr < nb; jr += nr) {
      int64_t cols = nb - jr < nr ? nb - jr : nr;
      const float *bpan = bbuf + jr / nr * panel_stride(kb, nr);
      for (int64_t ir = m0; ir < m0 + mcnt; ir += mr) {
        int rows = (int)(m0 + mcnt - ir < mr ? m0 + mcnt - ir : mr);
        kr->ukr_rows(kb, ag + ir * j->lda + pc, j->lda, bpan, nr, yg + ir * j->syk + j0 + jr,
                     j->syk, rows, (int)cols, 1.0f, pc == 0 ? 0.0f : 1.0f);
      }
    }
  }
  if (j->bias)
    for (int64_t i = m0; i < m0 + mcnt; i++) {
      float b = j->bias[g * j->kg + i], *row = yg + i * j->syk + j0;
      for (int64_t c = 0; c < nb; c++) row[c] += b;
    }
}

/* The packed image tile of the largest k and n block, with its slack. */
size_t cpu_fast_conv_tile_bytes(const conv_job_t *j) {
  int64_t nr = j->kr->nr, panels = (j->nc + nr - 1) / nr;
  return (size_t)(panels * panel_stride(j->kc, (int)nr)) * sizeof(float);
}

void cpu_fast_conv_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const conv_job_t *j = ctx;
  int mr = j->kr->mr;
  /* checked by the caller before the split */
  float *bbuf = j->direct ? NULL : cpu_fast_scratch(3, cpu_fast_conv_tile_bytes(j));
  int64_t plane = j->slab_rows * j->pad.Wp;
  float *slab = j->slab ? cpu_fast_scratch(1, (size_t)(j->cg * plane + 16) * sizeof(float)) : NULL;
  if ((!j->direct && !bbuf) || (j->slab && !slab)) return;
  int64_t have = -1; /* the block whose rows the slab holds */
  for (int64_t t = next_task(j, &begin); t < task_end(j, end); t = next_task(j, &begin)) {
    int64_t mp = t % j->pm, rest = t / j->pm;
    int64_t jb = rest % j->ncb, ng = rest / j->ncb;
    int64_t n = ng / j->G, g = ng % j->G;
    int64_t chunk = ((j->kg + j->pm - 1) / j->pm + mr - 1) / mr * mr;
    int64_t m0 = mp * chunk, m1 = m0 + chunk < j->kg ? m0 + chunk : j->kg;
    int64_t j0 = jb * j->nc, pq = j->P * j->Q;
    int64_t nb = pq - j0 < j->nc ? pq - j0 : j->nc;
    if (m1 <= m0) continue;
    if (!j->slab) {
      const float *xn = j->x + n * j->sxn;
      const float *lim = j->lim_ok ? xn + (j->C - 1) * j->sxc + (j->Hin - 1) * j->sxh + j->Win : xn;
      conv_block(j, n, g, m0, m1 - m0, j0, nb, bbuf, xn + g * j->cg * j->sxc, lim, 0);
      continue;
    }
    /* the padded input rows of this block's output rows, every channel */
    int64_t oh0 = j0 / j->Q, oh1 = (j0 + nb - 1) / j->Q + 1;
    int64_t h0 = oh0 * j->sh;
    int64_t h1 = (oh1 - 1) * j->sh + (j->R - 1) * j->dh + 1;
    if (have != rest) {
      const pad_job_t *pj = &j->pad;
      const float *xc = pj->x + n * pj->sxn + g * j->cg * pj->sxc;
      for (int64_t c = 0; c < j->cg; c++)
        cpu_fast_conv_pad_rows(pj, xc + c * pj->sxc, h0, h1, slab + c * plane,
                           c + CONV_PAD_AHEAD < j->cg ? xc + (c + CONV_PAD_AHEAD) * pj->sxc : NULL);
      have = rest;
    }
    conv_block(j, n, g, m0, m1 - m0, j0, nb, NULL, slab, slab + j->cg * plane, h0);
  }
}

/* ---- output channels along the vector ---------------------------------------*/

/* One task per NR output channels of one image and group: their weights
 * packed NR to a k row (in L2 while every pixel tile streams past), then
 * MR pixels at a time over all of k, written transposed into y. For small
 * images with many channels, where output rows are too short to fill the
 * vector (14 x 14 on AVX2): every lane works, at the cost of the pack. */
void cpu_fast_conv_pix_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const conv_job_t *j = ctx;
  const cpu_fast_gemm_kernel_t *kr = j->kr;
  int mr = kr->mr, nr = kr->nr;
  int64_t kq = j->kg / nr, pq = j->P * j->Q;
  /* checked by the caller before the split */
  float *wp = cpu_fast_scratch(3, (size_t)(j->crs * nr) * sizeof(float));
  int64_t plane = j->slab_rows * j->pad.Wp;
  float *slab = j->slab ? cpu_fast_scratch(1, (size_t)(j->cg * plane + 16) * sizeof(float)) : NULL;
  if (!wp || (j->slab && !slab)) return;
  int64_t have = -1; /* the image and group the slab holds */
  for (int64_t t = next_task(j, &begin); t < task_end(j, end); t = next_task(j, &begin)) {
    int64_t q = t % kq, ng = t / kq, n = ng / j->G, g = ng % j->G;
    int64_t k0 = g * j->kg + q * nr;
    const float *w = j->wpacked ? j->wpacked + (g * kq + q) * nr * j->crs : wp;
    if (!j->wpacked) kr->pack(j->ap + k0 * j->lda, j->lda, 1, nr, j->crs, nr, wp);
    const float *xg = j->x + n * j->sxn + g * j->cg * j->sxc;
    if (j->slab) {
      if (have != ng) {
        const pad_job_t *pj = &j->pad;
        const float *xc = pj->x + n * pj->sxn + g * j->cg * pj->sxc;
        for (int64_t c = 0; c < j->cg; c++)
          cpu_fast_conv_pad_rows(pj, xc + c * pj->sxc, 0, j->slab_rows, slab + c * plane,
                             c + CONV_PAD_AHEAD < j->cg ? xc + (c + CONV_PAD_AHEAD) * pj->sxc
                                                        : NULL);
        have = ng;
      }
      xg = slab;
    }
    float *y = j->y + n * j->syn + k0 * j->syk;
    const float *xp[16];
    for (int64_t pi = 0; pi < pq; pi += mr) {
      int rows = (int)(pq - pi < mr ? pq - pi : mr);
      for (int i = 0; i < rows; i++)
        xp[i] = xg + (pi + i) / j->Q * j->sh * j->sxh + (pi + i) % j->Q;
      cpu_fast_ukr_pix_fn ukr =
          rows <= 4 && kr == &cpu_fast_sgemm_avx2 ? cpu_fast_conv_ukr_pix4_avx2 : kr->ukr_pix;
      if (rows > 4 && kr == &cpu_fast_sgemm_avx2) ukr = cpu_fast_conv_ukr_pix6_avx2;
      ukr(j->crs, xp, j->off, w, y + pi, j->syk, rows, 0.0f);
    }
    if (j->bias)
      for (int64_t ch = 0; ch < nr; ch++)
        for (int64_t i = 0; i < pq; i++) y[ch * j->syk + i] += j->bias[k0 + ch];
  }
}
