/*
 * fast/elementwise/transpose.c — copies whose source runs across y's rows: y has unit
 * stride along its last dim, x has it along another (x a transposed or
 * permuted view of a dense tensor, y dense: `x.transpose().contiguous()`).
 *
 * Walked in y's order (the reference), every element of a y row comes
 * from a different line of x, and each line is fetched again for the next
 * row once the rows outgrow the cache, a small fraction of what a
 * streaming copy moves. Here the two dims are copied in TILE x TILE
 * blocks through a buffer (4 x 4 SSE transposes for 4-byte elements), so
 * each line of x is fetched once, y's whole block rows with streaming
 * stores when y is large (docs/performance.md has the figures). Blocks
 * are dealt out to the pool.
 */
#include <string.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/tensor.h"

#define TILE 64                /* 64 x 64 x 8 bytes: a buffer of 32 KiB at most */
#define TILES_PER_TASK 16      /* a claim from the pool */
#define INLINE_ELEMS (1 << 16) /* below: on the calling thread */

typedef struct tr_job {
  const char *x;
  char *y;
  size_t es;
  int32_t rank, t, last; /* t: the dim along which x has unit stride */
  const bp_plugin_tensor_t *tx, *ty;
  int64_t tiles_t, tiles_l, tiles; /* per dim t, last dim, in all */
  bool nt; /* y's whole rows of a block with streaming stores */
} tr_job_t;

/* Copies the block rows [i0, i1) of dim t x columns [j0, j1) of the last
 * dim through a buffer: x's column segments (contiguous in x) are read
 * one after another into it, then y's row segments written out of it one
 * after another. Rows a power of two apart share a few cache sets, so a
 * block walked in place evicted its own lines before their second use;
 * in bursts each line is touched once. */
#define TR_BLOCK(T)                                                            \
  {                                                                            \
    T buf[TILE][TILE];                                                         \
    for (int64_t c = j0; c < j1; c++) {                                        \
      const T *xc = (const T *)(const void *)x + c * sxl;                      \
      for (int64_t i = i0; i < i1; i++) buf[i - i0][c - j0] = xc[i];           \
    }                                                                          \
    for (int64_t i = i0; i < i1; i++)                                          \
      memcpy((T *)(void *)y + i * syt + j0, buf[i - i0],                       \
             (size_t)(j1 - j0) * sizeof(T));                                   \
  }

#if defined(__SSE2__)
/* 4-byte elements: whole 4 x 4 squares of the block through SSE
 * transposes (baseline x86-64), the ragged rest element by element. */
static void copy_block4(const char *x, char *y, int64_t syt, int64_t sxl,
                        int64_t i0, int64_t i1, int64_t j0, int64_t j1, bool nt) {
  float buf[TILE][TILE];
  const float *xf = (const float *)(const void *)x;
  int64_t i4 = i0 + (i1 - i0) / 4 * 4, j4 = j0 + (j1 - j0) / 4 * 4;
  for (int64_t c = j0; c < j4; c += 4)
    for (int64_t i = i0; i < i4; i += 4) {
      __m128 r0 = _mm_loadu_ps(xf + c * sxl + i),
             r1 = _mm_loadu_ps(xf + (c + 1) * sxl + i),
             r2 = _mm_loadu_ps(xf + (c + 2) * sxl + i),
             r3 = _mm_loadu_ps(xf + (c + 3) * sxl + i);
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      _mm_storeu_ps(&buf[i - i0][c - j0], r0);
      _mm_storeu_ps(&buf[i - i0 + 1][c - j0], r1);
      _mm_storeu_ps(&buf[i - i0 + 2][c - j0], r2);
      _mm_storeu_ps(&buf[i - i0 + 3][c - j0], r3);
    }
  for (int64_t c = j0; c < j1; c++)
    for (int64_t i = c < j4 ? i4 : i0; i < i1; i++)
      buf[i - i0][c - j0] = xf[c * sxl + i];
  for (int64_t i = i0; i < i1; i++) {
    float *yr = (float *)(void *)y + i * syt + j0;
    if (nt && ((uintptr_t)yr & 15) == 0 && j1 - j0 == TILE) {
      for (int c = 0; c < TILE; c += 4) _mm_stream_ps(yr + c, _mm_loadu_ps(&buf[i - i0][c]));
    } else {
      memcpy(yr, buf[i - i0], (size_t)(j1 - j0) * sizeof(float));
    }
  }
}
#endif

static void copy_block(const tr_job_t *j, const char *x, char *y, int64_t i0,
                       int64_t i1, int64_t j0, int64_t j1) {
  int64_t syt = j->ty->strides[j->t], sxl = j->tx->strides[j->last];
  switch (j->es) {
  case 1: TR_BLOCK(uint8_t) break;
  case 2: TR_BLOCK(uint16_t) break;
#if defined(__SSE2__)
  case 4: copy_block4(x, y, syt, sxl, i0, i1, j0, j1, j->nt); break;
#else
  case 4: TR_BLOCK(uint32_t) break;
#endif
  default: TR_BLOCK(uint64_t) break;
  }
}

/* Element offsets in x and y of outer index o (every dim but t and the
 * last, row-major over y's shape). */
static void outer_offsets(const tr_job_t *j, int64_t o, int64_t *ox,
                          int64_t *oy) {
  *ox = *oy = 0;
  for (int32_t d = j->rank - 1; d >= 0; d--) {
    if (d == j->t || d == j->last) continue;
    int64_t i = o % j->ty->shape[d];
    o /= j->ty->shape[d];
    *ox += i * j->tx->strides[d];
    *oy += i * j->ty->strides[d];
  }
}

static void tr_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const tr_job_t *j = ctx;
  int64_t per_outer = j->tiles_t * j->tiles_l, n_t = j->ty->shape[j->t],
          n_l = j->ty->shape[j->last];
  int64_t last_tile = end * TILES_PER_TASK < j->tiles ? end * TILES_PER_TASK : j->tiles;
  for (int64_t b = begin * TILES_PER_TASK; b < last_tile; b++) {
    int64_t o = b / per_outer, r = b % per_outer;
    int64_t i0 = r / j->tiles_l * TILE, j0 = r % j->tiles_l * TILE;
    int64_t i1 = i0 + TILE < n_t ? i0 + TILE : n_t, j1 = j0 + TILE < n_l ? j0 + TILE : n_l;
    int64_t ox, oy;
    outer_offsets(j, o, &ox, &oy);
    copy_block(j, j->x + ox * (int64_t)j->es, j->y + oy * (int64_t)j->es, i0, i1,
               j0, j1);
  }
#if defined(__SSE2__)
  _mm_sfence(); /* the streaming stores drain before the pool returns */
#endif
}

bool cpu_fast_copy_transposed(cpu_device_t *dev, const bp_copy_args_t *a) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y;
  size_t es = cpu_dtype_size(y->dtype);
  int32_t last = y->rank - 1, t = -1;
  if (x->dtype != y->dtype || x->rank != y->rank || last < 1 ||
      (es != 1 && es != 2 && es != 4 && es != 8) || y->strides[last] != 1 ||
      x->strides[last] == 1 || y->shape[last] < 2)
    return false;
  for (int32_t d = 0; d <= last; d++) {
    if (x->shape[d] != y->shape[d]) return false;
    if (y->shape[d] > 1 && x->strides[d] == 0) return false; /* broadcast */
    if (d < last && x->strides[d] == 1 && y->shape[d] > 1) t = d;
  }
  if (t < 0) return false;
  tr_job_t j = {cpu_tensor_base(x), cpu_tensor_base(y), es, y->rank, t, last,
                x, y, (y->shape[t] + TILE - 1) / TILE,
                (y->shape[last] + TILE - 1) / TILE, 0, false};
  const bp_plugin_tensor_t *in[1] = {x};
  j.nt = cpu_fast_nt_ok(dev, y, in, 1);
  int64_t numel = cpu_numel(y);
  if (numel == 0) return true;
  j.tiles = numel / y->shape[t] / y->shape[last] * j.tiles_t * j.tiles_l;
  int64_t tasks = (j.tiles + TILES_PER_TASK - 1) / TILES_PER_TASK;
  if (!dev->pool || numel < INLINE_ELEMS)
    tr_task(&j, 0, tasks, 0);
  else
    cpu_pool_run(dev->pool, tasks, 1, tr_task, &j);
  return true;
}
