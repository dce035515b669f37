/*
 * fast/conv/conv2d_amx_grid.h — what the two bf16 AMX conv2d routes
 * (conv2d_amx.c, conv2d_amx_pairs.c) share around their tiles: the task
 * grid (runs of 32-pixel blocks x channel parts, per image and group), its
 * tasks claimed from per-worker ranges, a 32-lane mask, the runs of a
 * pixel block that land on y, and a row of f32 results plus bias rounded
 * to bf16. For files compiled with AVX-512 BF16
 * (fast.mk); static inline so that each route keeps its loops whole.
 */
#ifndef BACKPLANE_CPU_FAST_CONV2D_AMX_GRID_H
#define BACKPLANE_CPU_FAST_CONV2D_AMX_GRID_H

#include <immintrin.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conv2d.h"

#define CONV_AMX_RANGES_MAX 64 /* task ranges, one per worker */

/* Tasks [0, ntasks): channel part t / (nruns * images) of the run of
 * pixel blocks t % nruns of image-and-group (t / nruns) % images, so that
 * a worker's range of tasks is one part of the filter over consecutive
 * pixels. The tasks are cut into nranges equal ranges, one per worker:
 * claim[r] counts the tasks of range r taken so far. */
typedef struct conv_amx_grid {
  int64_t images;            /* images x groups */
  int64_t nblk, mparts, per; /* pixel blocks per image, channel parts, panels per part */
  int64_t bpt, nruns;        /* blocks per task, runs of them per image */
  int64_t ntasks, nranges;
  _Atomic int64_t *claim;
} conv_amx_grid_t;

/* One task's image n, group g, panels [p0, p1) and pixel blocks [b0, b1). */
typedef struct conv_amx_task {
  int64_t n, g, p0, p1, b0, b1;
} conv_amx_task_t;

/* Lanes [lo, hi) of a 32-lane mask, clipped to [0, 32). */
static inline __mmask32 conv_amx_lanes(int64_t lo, int64_t hi) {
  lo = lo < 0 ? 0 : lo, hi = hi > 32 ? 32 : hi;
  if (hi <= lo) return 0;
  uint32_t up = hi == 32 ? 0xffffffffu : (1u << hi) - 1;
  return (__mmask32)(up & ~((1u << lo) - 1));
}

/* The grid's cut for T threads, nblk pixel blocks of images images and
 * groups and mpanels 32-channel panels: channel parts while there are too
 * few blocks for the threads to share evenly, and runs of run_min to
 * run_max blocks (at most nblk). The caller may shorten bpt before
 * conv_amx_grid_run. */
static inline void conv_amx_grid_plan(conv_amx_grid_t *gr, int64_t images, int64_t nblk,
                                      int64_t mpanels, int64_t T, int64_t run_min,
                                      int64_t run_max) {
  gr->images = images, gr->nblk = nblk, gr->mparts = 1;
  while (T > 1 && images * nblk * gr->mparts < 4 * T && 2 * gr->mparts <= mpanels) gr->mparts *= 2;
  gr->per = (mpanels + gr->mparts - 1) / gr->mparts;
  int64_t bpt = images * nblk * gr->mparts / (8 * T);
  bpt = bpt < run_min ? run_min : bpt > run_max ? run_max : bpt;
  gr->bpt = bpt < nblk ? bpt : nblk;
}

/* Task t of the grid (G groups, mpanels panels per group); p0 >= p1 when
 * its channel part is past the panels. */
static inline conv_amx_task_t conv_amx_grid_task(const conv_amx_grid_t *gr, int64_t t, int64_t G,
                                                 int64_t mpanels) {
  int64_t per_part = gr->ntasks / gr->mparts;
  int64_t mp = t / per_part, rest = t % per_part;
  int64_t run = rest % gr->nruns, ng = rest / gr->nruns;
  conv_amx_task_t k = {.n = ng / G, .g = ng % G};
  k.p0 = mp * gr->per, k.p1 = k.p0 + gr->per < mpanels ? k.p0 + gr->per : mpanels;
  k.b0 = run * gr->bpt, k.b1 = k.b0 + gr->bpt < gr->nblk ? k.b0 + gr->bpt : gr->nblk;
  return k;
}

/* The next task for the worker whose range is home: its own range's in
 * order, then (when that is done: the worker came late or was slowed)
 * those of the others; -1 when none is left. A worker keeps the same
 * range of the planes and of the filter from call to call, in its own
 * L2. */
static inline int64_t conv_amx_grid_claim(const conv_amx_grid_t *gr, int64_t home) {
  for (int64_t i = 0; i < gr->nranges; i++) {
    int64_t r = (home + i) % gr->nranges;
    int64_t r0 = r * gr->ntasks / gr->nranges, r1 = (r + 1) * gr->ntasks / gr->nranges;
    if (atomic_load_explicit(&gr->claim[r], memory_order_relaxed) >= r1 - r0) continue;
    int64_t t = r0 + atomic_fetch_add_explicit(&gr->claim[r], 1, memory_order_relaxed);
    if (t < r1) return t;
  }
  return -1;
}

/* Runs the grid's tasks: worker fn(ctx, r, r + 1, worker) for each range
 * r on dev's pool (on this thread alone when there is one thread, one
 * task or under flops worth of work), each claiming tasks with
 * conv_amx_grid_claim until none is left. gr is read by the workers
 * through ctx. True when every task was taken: a worker that got its
 * scratch ran until no task was left, so a task left over means none did,
 * and y is untouched. */
static inline bool conv_amx_grid_run(cpu_device_t *dev, conv_amx_grid_t *gr, double flops,
                                     cpu_pool_fn fn, void *ctx) {
  unsigned threads = dev->pool ? cpu_pool_size(dev->pool) : 1;
  int64_t T = threads;
  gr->nruns = (gr->nblk + gr->bpt - 1) / gr->bpt;
  gr->ntasks = gr->images * gr->nruns * gr->mparts;
  bool par = threads > 1 && gr->ntasks > 1 && flops >= 4e6;
  _Atomic int64_t claim[CONV_AMX_RANGES_MAX];
  gr->nranges = par ? (T < CONV_AMX_RANGES_MAX ? T : CONV_AMX_RANGES_MAX) : 1;
  gr->nranges = gr->nranges < gr->ntasks ? gr->nranges : gr->ntasks;
  for (int64_t r = 0; r < gr->nranges; r++) atomic_init(&claim[r], 0);
  gr->claim = claim;
  if (par)
    cpu_pool_run(dev->pool, gr->nranges, 1, fn, ctx);
  else
    fn(ctx, 0, 1, 0);
  bool done = true;
  for (int64_t r = 0; r < gr->nranges; r++)
    done = done && atomic_load(&claim[r]) >= (r + 1) * gr->ntasks / gr->nranges -
                                                 r * gr->ntasks / gr->nranges;
  gr->claim = NULL;
  return done;
}

/* A run of a block's lanes on one output row: lanes [lane, lane + len)
 * hold y's pixels dst, dst + 1, ... (columns ow < Q of the wide grid). */
typedef struct conv_amx_run {
  int lane, len;
  int64_t dst;
} conv_amx_run_t;

/* The runs of the 32-pixel block at wide-grid pixel v0 (a grid nv pixels
 * long, rows wp apart, the first Q columns kept) into out (room for 32);
 * returns how many. */
static inline int conv_amx_block_runs(int64_t v0, int64_t nv, int64_t wp, int64_t Q,
                                      conv_amx_run_t *out) {
  int n = 0;
  int64_t end = v0 + 32 < nv ? v0 + 32 : nv;
  for (int64_t v = v0; v < end;) {
    int64_t oh = v / wp, ow = v % wp;
    if (ow >= Q) {
      v += wp - ow;
      continue;
    }
    int64_t e = v + (Q - ow) < end ? v + (Q - ow) : end;
    out[n++] = (conv_amx_run_t){(int)(v - v0), (int)(e - v), oh * Q + ow};
    v = e;
  }
  return n;
}

/* Row t[0, 32) of f32 results plus bias (when there is one) rounded to
 * bf16, nearest even (VCVTNE2PS2BF16), as 32 16-bit lanes. */
static inline __m512i conv_amx_round_row(const float *t, const float *bias) {
  __m512 v0 = _mm512_load_ps(t), v1 = _mm512_load_ps(t + 16);
  if (bias) {
    __m512 b = _mm512_set1_ps(*bias);
    v0 = _mm512_add_ps(v0, b);
    v1 = _mm512_add_ps(v1, b);
  }
  return (__m512i)_mm512_cvtne2ps_pbh(v1, v0);
}

#endif
