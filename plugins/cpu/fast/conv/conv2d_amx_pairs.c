/*
 * fast/conv/conv2d_amx_pairs.c — bf16 conv2d (NCHW, stride 1) on the
 * AMX-BF16 tiles with the input transposed once per row block, for layers
 * whose channels fill the tiles' k (cpu_fast_conv_amx_pairs_ok):
 * Y[k][pixel] = sum over taps t and channels c of W[k][c][t] X[c][pixel +
 * off(t)], on the wide grid of fast/conv/conv2d_amx.c (as wide as the
 * padded rows, the columns past Q computed and dropped).
 *
 *  - B is read by the tiles straight from a row block: for a run of output
 *    pixel blocks, every pair of channels (c, c+1) of the run's pixels and
 *    the taps' reach is written once as the VNNI pairs the tiles want, in
 *    pixel order, zero where the taps reach the padding. Row i of a B tile
 *    is channel pair i of a 32-channel block, so a tile is 16 rows of that
 *    block at one pixel offset: each tap is the same block read a tap's
 *    offset further, and all taps and all output-channel panels read it
 *    where it lies, from L1 / L2. x is read once per run, a few lines of
 *    each plane in a row, not a line of every plane per block.
 *  - A (the filter) is therefore in tap-major k order: k chunk q = (tap,
 *    32-channel block). Filters are packed once per call into 32-row panels
 *    of whole 1 KiB tiles; a large dense 1x1 filter whose channels fill
 *    whole tiles is read in place.
 *  - Tiles: a 32 x 32 block of Y in four f32 tiles for all of k, rounded
 *    once to bf16 (bias added in f32 first) and stored with one masked
 *    store per output row it spans.
 * Compiled with AVX-512 (and its BF16 rounding) and -mamx-tile -mamx-bf16
 * (fast.mk); called by fast/conv/conv2d_bf16.c after cpu_fast_conv_amx_ok().
 */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "conv2d.h"
#include "conv2d_amx_grid.h"
#include "plugins/cpu/fast/amx_tiles.h"
#include "plugins/cpu/tensor.h"

#define PC_NB 32                      /* output pixels per block: two B tiles */
#define PC_RUN_MIN 8                  /* pixel blocks per task, at least (when there are) */
#define PC_RUN_MAX 16                 /* and at most */
#define PC_INPLACE_MIN (256 << 10)    /* dense 1x1 filters above this are read in place */
#define PC_ROWS_MAX ((size_t)1 << 20) /* a worker's row block, at most (L2) */

typedef struct pconv {
  const uint16_t *x;
  int64_t sxn, sxc, sxh; /* x's image, channel and row strides (rows of unit stride) */
  int64_t H, W, ph, pw;
  bool flat;            /* no padding and dense planes: a plane is one long row */
  int64_t wp, nv;       /* wide grid: its pitch, the pixels that hold outputs */
  int64_t halo;         /* the farthest tap's offset */
  int64_t ntaps;
  const int64_t *toff;  /* per tap (r, s): r dh wp + s dw */
  int64_t ncb, cpairs;  /* 32-channel blocks; channel pairs of a row block (16 ncb) */
  /* the filter: panel p at a + p * apanel, its k chunk q at q * astep, rows ast apart */
  const uint16_t *a;
  int64_t apanel, astep, ast;
  uint16_t *y;
  int64_t syn, syk, P, Q;
  const float *bias;
  int64_t G, cg, kg, mpanels;
  int64_t pitch;        /* 32-bit pairs between two channel pairs' rows */
  conv_amx_grid_t grid; /* the tasks */
} pconv_t;

/* ---- the row block: channel pairs in VNNI order --------------------------- */

/* vpermt2w indices interleaving a (0-31) and b (32-63): pixels 0-15, 16-31. */
static const uint16_t pair_idx[64] = {
    0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
    11, 43, 12, 44, 13, 45, 14, 46, 15, 47, 16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53,
    22, 54, 23, 55, 24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};

/* n pixels of the pair (s0, s1) into d (s1 NULL: the pair's second channel
 * is zero); lanes i in [lo, hi) are read, the others are zero. Masked-off
 * lanes are not read, so s0 + i may lie outside the row. */
static inline void pair_run(const uint16_t *s0, const uint16_t *s1, int64_t n, int64_t lo,
                            int64_t hi, uint32_t *d) {
  const __m512i ilo = _mm512_loadu_si512(pair_idx), ihi = _mm512_loadu_si512(pair_idx + 32);
  for (int64_t i = 0; i < n; i += 32) {
    __mmask32 m = conv_amx_lanes(lo - i, hi - i);
    __m512i a = _mm512_maskz_loadu_epi16(m, s0 + i);
    __m512i b = s1 ? _mm512_maskz_loadu_epi16(m, s1 + i) : _mm512_setzero_si512();
    int64_t left = n - i;
    _mm512_mask_storeu_epi32(d + i, (__mmask16)conv_amx_lanes(0, left), _mm512_permutex2var_epi16(a, ilo, b));
    if (left > 16)
      _mm512_mask_storeu_epi32(d + i + 16, (__mmask16)conv_amx_lanes(0, left - 16),
                               _mm512_permutex2var_epi16(a, ihi, b));
  }
}

/* The row block of wide-grid pixels [v0, v0 + len) of the plane set xs
 * (the group's channel 0): channel pair cp's pixel v at d + cp * pitch +
 * (v - v0); zero where a pixel falls in the padding or past the planes,
 * and for pairs past the group's channels. */
static void build_rows(const pconv_t *j, const uint16_t *xs, int64_t v0, int64_t len,
                       uint32_t *d) {
  for (int64_t cp = 0; cp < j->cpairs; cp++) {
    uint32_t *row = d + cp * j->pitch;
    const uint16_t *c0 = xs + (2 * cp < j->cg ? 2 * cp : 0) * j->sxc;
    const uint16_t *c1 = 2 * cp + 1 < j->cg ? c0 + j->sxc : NULL;
    if (2 * cp >= j->cg) {
      memset(row, 0, (size_t)len * 4);
      continue;
    }
    if (j->flat) {
      pair_run(c0 + v0, c1 ? c1 + v0 : NULL, len, 0, j->H * j->W - v0, row);
      continue;
    }
    for (int64_t v = v0; v < v0 + len;) {
      int64_t h = v / j->wp, w = v % j->wp, ih = h - j->ph;
      int64_t e = (h + 1) * j->wp < v0 + len ? (h + 1) * j->wp : v0 + len;
      bool in = ih >= 0 && ih < j->H;
      const int64_t off = in ? ih * j->sxh + w - j->pw : 0;
      /* lanes whose column lies in x's row: [pw - w, pw + W - w) */
      pair_run(c0 + off, c1 ? c1 + off : NULL, e - v, in ? j->pw - w : 0,
               in ? j->pw + j->W - w : 0, row + (v - v0));
      v = e;
    }
  }
}

/* ---- tiles and the store -------------------------------------------------- */

/* t[32][32] = the A panel a (32 filter rows) x the B block at xb (pixel 0
 * of the block in the row block), all taps and channel blocks. */
static void tile_block(const pconv_t *j, const uint16_t *a, const uint32_t *xb, float *t) {
  size_t st = (size_t)j->ast * 2, bst = (size_t)j->pitch * 4;
  cpu_amx_acc_start(NULL, 0, true);
  for (int64_t tap = 0; tap < j->ntaps; tap++) {
    const uint32_t *bt = xb + j->toff[tap];
    for (int64_t cb = 0; cb < j->ncb; cb++, a += j->astep) {
      const uint32_t *b = bt + cb * 16 * j->pitch;
      cpu_amx_bf16_2x2(a, a + 16 * j->ast, st, b, b + 16, bst);
    }
  }
  cpu_amx_acc_store(t, 32);
}

/* A run of lanes of a block on one output row: m masks them, dst is where
 * lane 0 would land in y's plane (so the run lands at its pixels). */
typedef struct seg {
  __mmask32 m;
  int64_t dst;
} seg_t;

/* The runs of the block at wide-grid pixel v0; returns how many. */
static int block_segs(const pconv_t *j, int64_t v0, seg_t *sg) {
  conv_amx_run_t r[PC_NB];
  int n = conv_amx_block_runs(v0, j->nv, j->wp, j->Q, r);
  for (int i = 0; i < n; i++) {
    sg[i].m = conv_amx_lanes(r[i].lane, r[i].lane + r[i].len);
    sg[i].dst = r[i].dst - r[i].lane;
  }
  return n;
}

/* Rows [0, rows) of t (+ bias from channel k0) rounded to bf16 (nearest
 * even, VCVTNE2PS2BF16) into y's planes yk (channel k0's), along sg. */
static void store_block(const pconv_t *j, const float *t, int rows, int64_t k0, uint16_t *yk,
                        const seg_t *sg, int nseg) {
  for (int i = 0; i < rows; i++, t += 32, yk += j->syk) {
    __m512i h = conv_amx_round_row(t, j->bias ? j->bias + k0 + i : NULL);
    for (int s = 0; s < nseg; s++) _mm512_mask_storeu_epi16(yk + sg[s].dst, sg[s].m, h);
  }
}

/* ---- tasks ------------------------------------------------------------------ */

/* Task t of the grid (conv2d_amx_grid.h). The run's row block is built
 * once, then each block x each panel of the part. */
static void run_task(const pconv_t *j, int64_t t, uint32_t *rows, float *tb) {
  conv_amx_task_t k = conv_amx_grid_task(&j->grid, t, j->G, j->mpanels);
  int64_t n = k.n, g = k.g, p0 = k.p0, p1 = k.p1, b0 = k.b0, b1 = k.b1;
  if (p0 >= p1) return;
  const uint16_t *xs = j->x + n * j->sxn + g * j->cg * j->sxc;
  uint16_t *yg = j->y + n * j->syn + g * j->kg * j->syk;
  build_rows(j, xs, b0 * PC_NB, (b1 - b0) * PC_NB + j->halo, rows);
  for (int64_t blk = b0; blk < b1; blk++) {
    seg_t sg[PC_NB];
    int nseg = block_segs(j, blk * PC_NB, sg);
    for (int64_t p = p0; p < p1; p++) {
      int64_t k0 = p * 32, nrow = j->kg - k0 < 32 ? j->kg - k0 : 32;
      tile_block(j, j->a + (g * j->mpanels + p) * j->apanel, rows + (blk - b0) * PC_NB, tb);
      store_block(j, tb, (int)nrow, g * j->kg + k0, yg + k0 * j->syk, sg, nseg);
    }
  }
}

static void conv_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)end, (void)worker;
  pconv_t *j = ctx;
  size_t rbytes = (size_t)(j->cpairs * j->pitch) * 4;
  char *s = cpu_fast_scratch(3, rbytes + 32 * 32 * sizeof(float));
  if (!s) return; /* the other workers take its tasks */
  cpu_amx_configure_full(); /* C0..C3 f32, A0/A1 bf16, B0/B1 VNNI */
  for (int64_t t; (t = conv_amx_grid_claim(&j->grid, begin)) >= 0;) run_task(j, t, (uint32_t *)s, (float *)(s + rbytes));
  _tile_release();
}

/* ---- setup: the filter panels ------------------------------------------- */

/* The filter's A panels in tap-major k order (chunk q = tap * ncb +
 * channel block): W itself for a dense 1x1 filter whose channels and
 * groups fill whole panels and that is larger than PC_INPLACE_MIN, else
 * packed (scratch slot 2) into 32-row panels of whole 1 KiB tiles,
 * zero-padded. False when the memory cannot be had. */
static bool filter_panels(const bp_conv2d_args_t *a, pconv_t *j) {
  const bp_plugin_tensor_t *w = &a->w;
  const int64_t *ws = w->strides;
  int64_t R = w->shape[2], S = w->shape[3], kq = j->ntaps * j->ncb * 32;
  const uint16_t *pw = cpu_tensor_base(w);
  int64_t bytes = j->G * j->mpanels * 32 * kq * 2;
  bool whole = j->cg % 32 == 0 && j->kg % 32 == 0;
  if (j->ntaps == 1 && whole && (j->cg == 1 || ws[1] == 1) && bytes > PC_INPLACE_MIN) {
    j->a = pw, j->apanel = 32 * ws[0], j->astep = 32, j->ast = ws[0];
    return true;
  }
  uint16_t *d = cpu_fast_scratch(2, (size_t)bytes);
  if (!d) return false;
  j->a = d, j->apanel = 32 * kq, j->astep = 32 * 32, j->ast = 32;
  if (!whole) memset(d, 0, (size_t)bytes);
  if (j->ntaps == 1 && whole && (j->cg == 1 || ws[1] == 1)) {
    /* whole tile rows: one 64-byte copy each */
    for (int64_t k = 0; k < j->G * j->kg; k++) {
      uint16_t *panel = d + (k / 32) * 32 * kq + (k % 32) * 32;
      for (int64_t q = 0; q < j->ncb; q++) memcpy(panel + q * 1024, pw + k * ws[0] + q * 32, 64);
    }
    return true;
  }
  for (int64_t g = 0; g < j->G; g++)
    for (int64_t k = 0; k < j->kg; k++) {
      uint16_t *row = d + (g * j->mpanels + k / 32) * 32 * kq + (k % 32) * 32;
      const uint16_t *src = pw + (g * j->kg + k) * ws[0];
      for (int64_t r = 0, tap = 0; r < R; r++)
        for (int64_t s = 0; s < S; s++, tap++) {
          const uint16_t *sc = src + r * ws[2] + s * ws[3];
          for (int64_t c = 0; c < j->cg; c++)
            row[(tap * j->ncb + c / 32) * 1024 + c % 32] = sc[c * ws[1]];
        }
    }
  return true;
}

/* Whether the row-block route takes the layer: stride 1 (the caller's
 * cpu_fast_conv_amx_direct_ok), unit-stride rows, and one tap. With
 * several taps the filter must be reordered tap-major on every call (a
 * strided gather of all of W), which costs a single image about what the
 * row block saves, so those stay with conv2d_amx.c's (c, r, s) chunks;
 * the code below is written for any number of taps. */
bool cpu_fast_conv_amx_pairs_ok(const bp_conv2d_args_t *a) {
  return a->x.strides[3] == 1 && a->w.shape[2] == 1 && a->w.shape[3] == 1;
}

bp_status_t cpu_fast_conv2d_amx_pairs(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                      const float *bias) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  pconv_t j;
  memset(&j, 0, sizeof j);
  int64_t N = x->shape[0], R = w->shape[2], S = w->shape[3];
  j.x = cpu_tensor_base(x), j.sxn = x->strides[0], j.sxc = x->strides[1], j.sxh = x->strides[2];
  j.H = x->shape[2], j.W = x->shape[3], j.ph = a->pad_h, j.pw = a->pad_w;
  j.G = a->groups, j.cg = w->shape[1], j.kg = y->shape[1] / j.G;
  j.ncb = (j.cg + 31) / 32, j.cpairs = 16 * j.ncb, j.ntaps = R * S;
  j.mpanels = (j.kg + 31) / 32;
  j.P = y->shape[2], j.Q = y->shape[3];
  j.y = cpu_tensor_base(y), j.syn = y->strides[0], j.syk = y->strides[1];
  j.bias = bias;
  /* stride 1: the padded row is exactly what the taps reach */
  j.wp = j.Q + (S - 1) * a->dilation_w;
  j.flat = j.ph == 0 && j.pw == 0 && j.wp == j.W && (j.H == 1 || j.sxh == j.W);
  j.nv = (j.P - 1) * j.wp + j.Q;
  j.halo = (R - 1) * a->dilation_h * j.wp + (S - 1) * a->dilation_w;
  if (!filter_panels(a, &j)) return BP_ERR_UNIMPLEMENTED;
  int64_t toff[64], *tp = j.ntaps <= 64 ? toff : malloc((size_t)j.ntaps * sizeof *tp);
  if (!tp) return BP_ERR_UNIMPLEMENTED;
  for (int64_t r = 0, t = 0; r < R; r++)
    for (int64_t s = 0; s < S; s++) tp[t++] = r * a->dilation_h * j.wp + s * a->dilation_w;
  j.toff = tp;
  /* tasks as in conv2d_amx.c: runs of pixel blocks, and channel parts
   * while there are too few blocks for the threads to share evenly; runs
   * of at least PC_RUN_MIN blocks (x read at least 8 lines of a plane at
   * a time), short enough that the row block stays in L2 */
  int64_t T = dev->pool ? cpu_pool_size(dev->pool) : 1;
  conv_amx_grid_t *gr = &j.grid;
  conv_amx_grid_plan(gr, N * j.G, (j.nv + PC_NB - 1) / PC_NB, j.mpanels, T, PC_RUN_MIN,
                     PC_RUN_MAX);
  while (gr->bpt > 1 && (size_t)(j.cpairs * (gr->bpt * PC_NB + j.halo)) * 4 > PC_ROWS_MAX)
    gr->bpt /= 2;
  /* an odd number of 64-byte lines between two pairs' rows, so a tile's 16
   * rows do not fall into a few cache sets */
  j.pitch = (gr->bpt * PC_NB + j.halo + 15) / 16 * 16;
  if ((j.pitch / 16) % 2 == 0) j.pitch += 16;
  double flops = 2.0 * (double)(j.kg * j.G) * (double)(j.cg * R * S) * (double)(j.P * j.Q * N);
  bool done = conv_amx_grid_run(dev, gr, flops, conv_task, &j);
  if (tp != toff) free(tp);
  return done ? BP_OK : BP_ERR_UNIMPLEMENTED;
}
