/*
 * fast/conv/conv2d_amx.c — bf16 conv2d (NCHW, stride 1) as an implicit GEMM
 * on the AMX-BF16 tiles: Y[k][pixel] = W[k][(c, r, s)] · im2col(X), with
 * im2col never built and the filter read where it lies.
 *
 *  - A is the filter: a tile of 16 output channels x 32 k values is loaded
 *    straight from W's rows (k = (c, r, s) dense, a multiple of 32, whole
 *    32-channel blocks); other filters are copied once per call into
 *    zero-padded rows of that shape.
 *  - B is built per block of 32 output pixels, all of k, into the VNNI
 *    pairs the tiles want: with stride 1 every k row (c, r, s) of a block
 *    is 32 consecutive values of the (padded) input plane, at a fixed tap
 *    offset, once the output is computed on a "wide" grid as wide as the
 *    padded rows: the pixels (oh, ow) with ow past Q are computed and
 *    dropped. So a pair of k rows is two vector loads and two permutes.
 *    1x1 and unpadded layers over dense planes read x in place; padded ones
 *    read a zero-padded copy of x made once per call (every image and
 *    channel, in parallel).
 *  - Each task takes one pixel block of one image and group and a range of
 *    32-channel panels; a 32 x 32 block of Y stays in four f32 tiles for
 *    all of k and is rounded once to bf16 (bias added in f32 first) as it
 *    is stored, the wide grid's extra columns skipped.
 * Compiled with AVX-512 (and its BF16 rounding) and -mamx-tile -mamx-bf16 (fast.mk); called by
 * fast/conv/conv2d_bf16.c only after cpu_fast_conv_amx_ok().
 */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "conv2d.h"
#include "conv2d_amx_grid.h"
#include "plugins/cpu/fast/amx_tiles.h"
#include "plugins/cpu/fast/gemm/gemm_epi512.h"
#include "plugins/cpu/tensor.h"

#define AC_NB 32                /* output pixels per block: two B tiles */
#define AC_KC 32                /* k values per tile row */
#define AC_CHUNK 1024           /* bf16 per k chunk of a B block (two 1 KiB tiles) */
#define AC_RUN_MAX 16           /* pixel blocks per task, at most */
#define AC_COPY_MAX (256 << 10) /* filters up to this size go into tile panels */

typedef struct aconv {
  const uint16_t *src; /* B's planes: x, or its zero-padded copy */
  int64_t ssn, ssc;    /* their image and channel strides */
  int64_t wp;          /* row pitch of the planes = width of the wide grid */
  int64_t nv;          /* wide-grid pixels that hold outputs: (P-1)*wp + Q */
  const int64_t *koff; /* per k row (c, r, s): its tap's offset in the planes */
  /* the filter: panel p (32 output channels, all groups' in turn) at
   * a + p * apanel; its k chunk c at c * astep, rows ast apart */
  const uint16_t *a;
  int64_t apanel, astep, ast;
  uint16_t *y;
  int64_t syn, syk, P, Q;
  const float *bias;
  int64_t G, cg, kg, crs, kp, mpanels;
  conv_amx_grid_t grid; /* the tasks */
} aconv_t;

/* ---- B: the VNNI block of im2col(X) ------------------------------------- */

/* The B block of the wide-grid pixels [v0, v0 + 32) of plane set xs, k
 * rows [0, kp), built a few pairs of rows at a time (pack_some) so that
 * the next block's gathers run between the tile instructions of this
 * one's. In k chunks of two tiles: row r of a chunk holds the pairs (k =
 * 32c + 2r, 32c + 2r + 1) of 32 pixels, in vpunpck{l,h}wd's order: tile 0
 * the pixels 0-3, 8-11, 16-19, 24-27, tile 1 the others (store_block puts
 * them back in order). Lanes past the grid's end and rows past crs are
 * zero. */
typedef struct bpack {
  const uint16_t *s; /* the planes at pixel v0 */
  uint16_t *dst;
  __mmask32 m;      /* lanes inside the grid */
  int64_t i, pairs; /* next pair of rows, how many */
} bpack_t;

static void pack_start(const aconv_t *j, bpack_t *b, const uint16_t *xs, int64_t v0,
                       uint16_t *dst) {
  int64_t left = j->nv - v0;
  b->s = xs + v0;
  b->dst = dst;
  b->m = left >= 32 ? 0xffffffffu : (__mmask32)((1u << left) - 1);
  b->i = 0;
  b->pairs = j->kp / 2;
}

/* Pairs of rows [b->i, b->i + n) (at most to the end). */
static inline void pack_some(const aconv_t *j, bpack_t *b, int64_t n) {
  const int64_t *ko = j->koff;
  int64_t e = b->i + n < b->pairs ? b->i + n : b->pairs, full = j->crs / 2;
  for (int64_t i = b->i; i < e; i++) {
    __m512i x0 = _mm512_setzero_si512(), x1 = x0;
    if (i < full) {
      /* the next block's line of each row: the rows are a plane apart,
       * too many streams for the hardware prefetchers */
      _mm_prefetch((const char *)(b->s + ko[2 * i] + AC_NB), _MM_HINT_T0);
      _mm_prefetch((const char *)(b->s + ko[2 * i + 1] + AC_NB), _MM_HINT_T0);
      x0 = _mm512_maskz_loadu_epi16(b->m, b->s + ko[2 * i]);
      x1 = _mm512_maskz_loadu_epi16(b->m, b->s + ko[2 * i + 1]);
    } else if (2 * i < j->crs) {
      x0 = _mm512_maskz_loadu_epi16(b->m, b->s + ko[2 * i]);
    }
    uint16_t *d = b->dst + (i >> 4) * AC_CHUNK + (i & 15) * 32;
    _mm512_store_si512(d, _mm512_unpacklo_epi16(x0, x1));
    _mm512_store_si512(d + 512, _mm512_unpackhi_epi16(x0, x1));
  }
  b->i = e;
}

/* ---- the tiles ------------------------------------------------------------ */

/* t[32][32] = the A panel a (32 filter rows) x the B block b, all kp of
 * k; meanwhile nb->pairs of the next block, per pairs a k chunk. */
static void tile_block(const aconv_t *j, const uint16_t *a, const uint16_t *b, float *t,
                       bpack_t *nb, int64_t per) {
  size_t st = (size_t)j->ast * 2;
  int64_t chunks = j->kp / AC_KC;
  cpu_amx_acc_start(NULL, 0, true);
  for (int64_t c = 0; c < chunks; c++, a += j->astep, b += AC_CHUNK) {
    cpu_amx_bf16_2x2(a, a + 16 * j->ast, st, b, b + 512, 64);
    if (nb) pack_some(j, nb, per);
  }
  cpu_amx_acc_store(t, 32);
}

/* ---- the store: wide grid to y's planes ----------------------------------- */

/* A run of lanes [lane, lane + len) of a block that lands on y's plane at
 * pixel dst (one output row, ow < Q): idx gathers its values from a row
 * of rounded results (in pack_block's order) to the front, m masks them. */
typedef struct seg {
  __m512i idx;
  __mmask32 m;
  int64_t dst;
} seg_t;

/* Where pixel p of a block lies in a row of rounded results: C tile 0's
 * 16 columns (pixels 0-3, 8-11, ...) then tile 1's; past 32: unused. */
static const uint16_t unpack_pos[64] = {
    0,  1,  2,  3,  16, 17, 18, 19, 4,  5,  6, 7, 20, 21, 22, 23, 8, 9, 10, 11, 24, 25,
    26, 27, 12, 13, 14, 15, 28, 29, 30, 31, 0, 0, 0,  0,  0,  0,  0, 0, 0,  0,  0,  0,
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, 0, 0,  0,  0,  0,  0, 0, 0,  0};

/* The runs of the block at wide-grid pixel v0; returns how many. */
static int block_segs(const aconv_t *j, int64_t v0, seg_t *sg) {
  conv_amx_run_t r[AC_NB];
  int n = conv_amx_block_runs(v0, j->nv, j->wp, j->Q, r);
  for (int i = 0; i < n; i++) {
    sg[i].idx = _mm512_loadu_si512(unpack_pos + r[i].lane);
    sg[i].m = conv_amx_lanes(0, r[i].len);
    sg[i].dst = r[i].dst;
  }
  return n;
}

/* Rows [0, rows) of t (+ bias from channel k0) rounded to bf16 (nearest
 * even, VCVTNE2PS2BF16) into y's planes yk (channel k0's), along the runs
 * sg. */
static void store_block(const aconv_t *j, const float *t, int rows, int64_t k0, uint16_t *yk,
                        const seg_t *sg, int nseg) {
  for (int i = 0; i < rows; i++, t += 32, yk += j->syk) {
    __m512i h = conv_amx_round_row(t, j->bias ? j->bias + k0 + i : NULL);
    for (int s = 0; s < nseg; s++)
      _mm512_mask_storeu_epi16(yk + sg[s].dst, sg[s].m, _mm512_permutexvar_epi16(sg[s].idx, h));
  }
}

/* ---- tasks ------------------------------------------------------------------ */

/* Task t of the grid (conv2d_amx_grid.h). Each block's B is built while
 * the previous one's tiles run (two buffers, bb[0] and bb[1]). */
static void run_task(const aconv_t *j, int64_t t, uint16_t *bb[2], float *tb) {
  conv_amx_task_t k = conv_amx_grid_task(&j->grid, t, j->G, j->mpanels);
  int64_t n = k.n, g = k.g, p0 = k.p0, p1 = k.p1, b0 = k.b0, b1 = k.b1;
  if (p0 >= p1) return;
  const uint16_t *xs = j->src + n * j->ssn + g * j->cg * j->ssc;
  uint16_t *yg = j->y + n * j->syn + g * j->kg * j->syk;
  /* the next block's pairs of k rows per k chunk of this one */
  int64_t per = (j->kp / 2 + (p1 - p0) * (j->kp / AC_KC) - 1) / ((p1 - p0) * (j->kp / AC_KC));
  bpack_t nb;
  pack_start(j, &nb, xs, b0 * AC_NB, bb[0]);
  pack_some(j, &nb, nb.pairs);
  for (int64_t blk = b0; blk < b1; blk++) {
    const uint16_t *cur = bb[(blk - b0) & 1];
    bool more = blk + 1 < b1;
    if (more) pack_start(j, &nb, xs, (blk + 1) * AC_NB, bb[(blk + 1 - b0) & 1]);
    seg_t sg[AC_NB];
    int nseg = block_segs(j, blk * AC_NB, sg);
    for (int64_t p = p0; p < p1; p++) {
      int64_t k0 = p * 32, rows = j->kg - k0 < 32 ? j->kg - k0 : 32;
      tile_block(j, j->a + (g * j->mpanels + p) * j->apanel, cur, tb, more ? &nb : NULL, per);
      store_block(j, tb, (int)rows, g * j->kg + k0, yg + k0 * j->syk, sg, nseg);
    }
    if (more) pack_some(j, &nb, nb.pairs); /* what the chunks left */
  }
}

static void conv_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)end, (void)worker;
  aconv_t *j = ctx;
  size_t bbytes = (size_t)(j->kp / AC_KC * AC_CHUNK) * 2;
  char *s = cpu_fast_scratch(3, 2 * bbytes + 32 * 32 * sizeof(float));
  if (!s) return; /* the other workers take its tasks */
  uint16_t *bb[2] = {(uint16_t *)s, (uint16_t *)(s + bbytes)};
  cpu_amx_configure_full(); /* C0..C3 f32, A0/A1 bf16, B0/B1 VNNI */
  for (int64_t t; (t = conv_amx_grid_claim(&j->grid, begin)) >= 0;) run_task(j, t, bb, (float *)(s + 2 * bbytes));
  _tile_release();
}

/* ---- setup: the planes B reads, the filter rows ------------------------- */

typedef struct padcopy {
  const bp_conv2d_args_t *a;
  uint16_t *dst;
  int64_t C, Hp, Wp;
} padcopy_t;

/* Padded row d (Wp values) from the unit-stride row r of W values, pw
 * zeros before: 32 lanes at a time, the row read with a mask (lanes off
 * it are not read, so reading "before" r cannot fault), the zeros coming
 * from the masked-off lanes. A short row is one masked load and store,
 * not three library calls. */
static inline void pad_row_unit(uint16_t *d, const uint16_t *r, int64_t W, int64_t pw,
                                int64_t Wp) {
  for (int64_t q = 0; q < Wp; q += 32) {
    __m512i v = _mm512_maskz_loadu_epi16(conv_amx_lanes(pw - q, pw + W - q), r + q - pw);
    _mm512_mask_storeu_epi16(d + q, conv_amx_lanes(0, Wp - q), v);
  }
}

/* Planes t = (image, channel) of x copied into Hp x Wp zero-padded planes. */
static void pad_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const padcopy_t *p = ctx;
  const bp_plugin_tensor_t *x = &p->a->x;
  const int64_t *xs = x->strides;
  const uint16_t *px = cpu_tensor_base(x);
  int64_t H = x->shape[2], W = x->shape[3], ph = p->a->pad_h, pw = p->a->pad_w;
  /* rows [h0, h1) of a padded plane hold x's rows; W + pw > Wp only when
   * the taps never reach x's last columns */
  int64_t h0 = ph < p->Hp ? ph : p->Hp, h1 = H + ph < p->Hp ? H + ph : p->Hp;
  int64_t w1 = W + pw < p->Wp ? W + pw : p->Wp;
  for (int64_t t = begin; t < end; t++) {
    const uint16_t *xc = px + (t / p->C) * xs[0] + (t % p->C) * xs[1];
    uint16_t *d = p->dst + t * p->Hp * p->Wp;
    memset(d, 0, (size_t)(h0 * p->Wp) * 2);
    memset(d + h1 * p->Wp, 0, (size_t)((p->Hp - h1) * p->Wp) * 2);
    for (int64_t h = h0; h < h1; h++) {
      const uint16_t *r = xc + (h - ph) * xs[2];
      uint16_t *row = d + h * p->Wp;
      if (xs[3] == 1) {
        pad_row_unit(row, r, w1 - pw, pw, p->Wp);
        continue;
      }
      memset(row, 0, (size_t)p->Wp * 2);
      for (int64_t w = pw; w < w1; w++) row[w] = r[(w - pw) * xs[3]];
    }
  }
}

/* B's planes: x in place when it needs no padding and its planes are
 * dense rows, else a zero-padded copy (scratch slot 1 of this thread).
 * False when the copy's memory cannot be had. */
static bool source_planes(cpu_device_t *dev, const bp_conv2d_args_t *a, aconv_t *j) {
  const bp_plugin_tensor_t *x = &a->x;
  const int64_t *xs = x->strides;
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  if (a->pad_h == 0 && a->pad_w == 0 && xs[3] == 1 && (H == 1 || xs[2] == W)) {
    j->src = cpu_tensor_base(x), j->ssn = xs[0], j->ssc = xs[1], j->wp = W;
    return true;
  }
  /* stride 1: the padded plane is exactly what the taps reach */
  int64_t Hp = j->P + (a->w.shape[2] - 1) * a->dilation_h;
  int64_t Wp = j->Q + (a->w.shape[3] - 1) * a->dilation_w;
  padcopy_t p = {a, cpu_fast_scratch(1, (size_t)(N * C * Hp * Wp) * 2), C, Hp, Wp};
  if (!p.dst) return false;
  int64_t plane = Hp * Wp;
  cpu_pool_run(dev->pool, N * C, plane >= 8192 ? 1 : 8192 / plane + 1, pad_task, &p);
  j->src = p.dst, j->ssn = C * plane, j->ssc = plane, j->wp = Wp;
  return true;
}

/* The filter's A panels: W itself when (c, r, s) are dense, crs a
 * multiple of 32, the groups whole 32-channel panels and W larger than
 * AC_COPY_MAX; else copied (scratch slot 2) into panels of 32 rows whose k
 * chunks are whole tiles one after the other, zero-padded. A small W
 * copies in a fraction of the call, and then each A tile is 1 KiB in one
 * piece instead of 16 rows from all over W; a large one (3x3 x 256
 * channels: 1.2 MiB) costs about what it saves. */
static bool filter_panels(const bp_conv2d_args_t *a, aconv_t *j) {
  const bp_plugin_tensor_t *w = &a->w;
  const int64_t *ws = w->strides;
  int64_t R = w->shape[2], S = w->shape[3];
  const uint16_t *pw = cpu_tensor_base(w);
  bool dense = (S == 1 || ws[3] == 1) && (R == 1 || ws[2] == S) && (j->cg == 1 || ws[1] == R * S);
  int64_t bytes = j->G * j->mpanels * 32 * j->kp * 2;
  if (dense && j->crs % 32 == 0 && j->kg % 32 == 0 && ws[0] >= j->crs && bytes > AC_COPY_MAX) {
    j->a = pw, j->apanel = 32 * ws[0], j->astep = AC_KC, j->ast = ws[0];
    return true;
  }
  uint16_t *d = cpu_fast_scratch(2, (size_t)bytes);
  if (!d) return false;
  j->a = d, j->apanel = 32 * j->kp, j->astep = 32 * AC_KC, j->ast = AC_KC;
  if (dense && j->crs % 32 == 0 && j->kg % 32 == 0) {
    /* whole tile rows: one 64-byte copy each */
    for (int64_t k = 0; k < j->G * j->kg; k++) {
      uint16_t *panel = d + (k / 32) * 32 * j->kp + (k % 32) * AC_KC;
      for (int64_t c = 0; c < j->kp / AC_KC; c++)
        memcpy(panel + c * 32 * AC_KC, pw + k * ws[0] + c * AC_KC, 64);
    }
    return true;
  }
  memset(d, 0, (size_t)bytes);
  for (int64_t g = 0; g < j->G; g++)
    for (int64_t k = 0; k < j->kg; k++) {
      uint16_t *panel = d + (g * j->mpanels + k / 32) * 32 * j->kp + (k % 32) * AC_KC;
      const uint16_t *src = pw + (g * j->kg + k) * ws[0];
      int64_t e = 0;
      for (int64_t c = 0; c < j->cg; c++)
        for (int64_t r = 0; r < R; r++)
          for (int64_t s = 0; s < S; s++, e++)
            panel[e / AC_KC * 32 * AC_KC + e % AC_KC] = src[c * ws[1] + r * ws[2] + s * ws[3]];
    }
  return true;
}

bool cpu_fast_conv_amx_direct_ok(const bp_conv2d_args_t *a) {
  if (!cpu_features_get()->avx512_bf16) return false; /* the rounding */
  int64_t kg = a->y.shape[1] / a->groups, cg = a->w.shape[1];
  /* stride 1 only (the wide grid); channel panels at least half full */
  return a->stride_h == 1 && a->stride_w == 1 && kg >= 16 &&
         cg * a->w.shape[2] * a->w.shape[3] >= 16;
}

bp_status_t cpu_fast_conv2d_amx(cpu_device_t *dev, const bp_conv2d_args_t *a, const float *bias) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  aconv_t j;
  memset(&j, 0, sizeof j);
  int64_t N = x->shape[0], R = w->shape[2], S = w->shape[3];
  j.G = a->groups, j.cg = w->shape[1], j.kg = y->shape[1] / j.G;
  j.crs = j.cg * R * S, j.kp = (j.crs + AC_KC - 1) / AC_KC * AC_KC;
  j.mpanels = (j.kg + 31) / 32;
  j.P = y->shape[2], j.Q = y->shape[3];
  j.y = cpu_tensor_base(y), j.syn = y->strides[0], j.syk = y->strides[1];
  j.bias = bias;
  if (!filter_panels(a, &j) || !source_planes(dev, a, &j)) return BP_ERR_UNIMPLEMENTED;
  j.nv = (j.P - 1) * j.wp + j.Q;
  int64_t *koff = malloc((size_t)j.crs * sizeof *koff);
  if (!koff) return BP_ERR_UNIMPLEMENTED;
  for (int64_t c = 0, k = 0; c < j.cg; c++)
    for (int64_t r = 0; r < R; r++)
      for (int64_t s = 0; s < S; s++)
        koff[k++] = c * j.ssc + r * a->dilation_h * j.wp + s * a->dilation_w;
  j.koff = koff;
  /* tasks: runs of pixel blocks (a thread streams along its part of the
   * planes), and channel parts while there are too few blocks for the
   * threads to share evenly */
  int64_t T = dev->pool ? cpu_pool_size(dev->pool) : 1;
  conv_amx_grid_plan(&j.grid, N * j.G, (j.nv + AC_NB - 1) / AC_NB, j.mpanels, T, 1, AC_RUN_MAX);
  double flops = 2.0 * (double)(j.kg * j.G) * (double)j.crs * (double)(j.P * j.Q * N);
  bool done = conv_amx_grid_run(dev, &j.grid, flops, conv_task, &j);
  free(koff);
  return done ? BP_OK : BP_ERR_UNIMPLEMENTED;
}
