/*
 * fast_gemm_team.c — one GEMM run by all workers of the pool together.
 *
 * Split by rows up front, every worker packs all of B for its own rows:
 * with two workers B is read and packed twice, which costs most when m is
 * small against n x k (512 x 4096 x 4096 packs 64 MiB of B per worker).
 * And a fixed split makes the call wait for the slowest worker, which on
 * a shared machine is whichever core the host took away for a while.
 *
 * Here the problem is cut into blocks, k blocks outer and n blocks inner
 * (KC x NC of B, the size the per-thread loops use). For each block:
 *   1. the workers pack B's panels together, claiming groups of panels
 *      from a counter, into one of two shared buffers;
 *   2. once all panels are in, they claim chunks of MR-aligned rows of A:
 *      each packs its chunk into its own buffer and runs the macro-kernel
 *      against the shared B block.
 * A worker that runs out of chunks packs the next block's B in the other
 * buffer while the rest finish. Which worker computes a chunk never
 * changes a bit of C: every element sees the same operations in the same
 * order.
 *
 * Ordering, checked with counters (claimed / done per block):
 *   - block b's chunks write the C that block b - nn (same columns, the
 *     previous k block) wrote, so they start after all of b - nn is done;
 *   - block b packs into the buffer block b - 2 read, so its packing starts
 *     after all of b - 2 is done.
 * A worker only ever waits for work that is already claimed by a worker
 * that is running, so a pool that runs the tasks one after another (a
 * nested call runs inline) still finishes: the first task does it all.
 */
#include <sched.h>
#include <stdalign.h>
#include <string.h>

#include "fast_gemm_driver.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TEAM_PAUSE() _mm_pause()
#else
#define TEAM_PAUSE() ((void)0)
#endif

#define TEAM_PANELS_PER_CLAIM 4 /* B panels packed per claim */
#define TEAM_CHUNKS_PER_WORKER 4 /* row chunks per worker and block */
#define TEAM_MAX_CHUNK_PANELS 16 /* A micro-panels per chunk at most */

/* Per-block counters, one cache line each: claims and completions. */
typedef struct team_block {
  alignas(64) int64_t pack_claimed, pack_done, rows_claimed, rows_done;
} team_block_t;

typedef struct gemm_team_job {
  const gemm_type_t *t;
  const fast_gemm_kernel_t *kr;
  const gemm_view_t *v;
  const void *alpha, *beta, *one, *zero;
  int64_t kc, nc, nn, nblocks;
  int64_t panels;  /* MR-row panels of A */
  int64_t nchunks; /* row chunks per block, panels dealt out evenly */
  team_block_t *blocks;
  char *bbuf[2];
  char *abuf;          /* one chunk buffer per worker */
  size_t abuf_bytes;   /* per worker */
} gemm_team_job_t;

/* Waits until *word reaches target; the work behind it is claimed and
 * running on another worker, so it comes. Yields the CPU now and then for
 * a worker the host or the scheduler holds back. */
static void wait_for(const int64_t *word, int64_t target) {
  for (unsigned spins = 0; __atomic_load_n(word, __ATOMIC_ACQUIRE) < target;
       spins++) {
    TEAM_PAUSE();
    if ((spins & 1023) == 1023) sched_yield();
  }
}

static int64_t claim(int64_t *counter) {
  return __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

static void mark_done(int64_t *counter) {
  __atomic_fetch_add(counter, 1, __ATOMIC_RELEASE);
}

/* Packs block b's B panels, a group at a time, until none are left. */
static void pack_b_share(const gemm_team_job_t *j, team_block_t *blk,
                         int64_t pc, int64_t kb, int64_t jc, int64_t nb,
                         char *bp, int64_t groups) {
  int64_t cols = (int64_t)j->kr->nr * TEAM_PANELS_PER_CLAIM;
  for (int64_t g; (g = claim(&blk->pack_claimed)) < groups;) {
    int64_t j0 = g * cols, w = nb - j0 < cols ? nb - j0 : cols;
    fast_gemm_pack_b(j->t, j->kr, j->v, jc + j0, pc, w, kb,
                     bp + j0 * kb * (int64_t)j->t->esize);
    mark_done(&blk->pack_done);
  }
}

/* Claims row chunks of block b and multiplies them by its packed B. */
static void rows_share(const gemm_team_job_t *j, team_block_t *blk,
                       int64_t pc, int64_t kb, int64_t jc, int64_t nb,
                       const char *bp, char *ap) {
  const gemm_view_t *v = j->v;
  int64_t cs = (int64_t)j->t->in_size;
  for (int64_t r; (r = claim(&blk->rows_claimed)) < j->nchunks;) {
    int64_t i0 = r * j->panels / j->nchunks * j->kr->mr;
    int64_t i1 = (r + 1) * j->panels / j->nchunks * j->kr->mr;
    int64_t mb = (i1 < v->m ? i1 : v->m) - i0;
    fast_gemm_pack_a(j->t, j->kr, v, i0, pc, mb, kb, ap);
    gemm_macro_t mk = {j->t, j->kr, v->c + (i0 * v->scm + jc * v->scn) * cs,
                       v->scm, v->scn, j->alpha, pc == 0 ? j->beta : j->one,
                       j->one, j->zero};
    fast_gemm_macro(&mk, ap, bp, mb, nb, kb);
    mark_done(&blk->rows_done);
  }
}

static void team_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)begin, (void)end;
  const gemm_team_job_t *j = ctx;
  const gemm_view_t *v = j->v;
  char *ap = j->abuf + (size_t)worker * j->abuf_bytes;
  int64_t group_cols = (int64_t)j->kr->nr * TEAM_PANELS_PER_CLAIM;
  for (int64_t b = 0; b < j->nblocks; b++) {
    team_block_t *blk = &j->blocks[b];
    int64_t pc = b / j->nn * j->kc, jc = b % j->nn * j->nc;
    int64_t kb = v->k - pc < j->kc ? v->k - pc : j->kc;
    int64_t nb = v->n - jc < j->nc ? v->n - jc : j->nc;
    int64_t groups = (nb + group_cols - 1) / group_cols;
    char *bp = j->bbuf[b & 1];
    if (b >= 2) wait_for(&j->blocks[b - 2].rows_done, j->nchunks);
    pack_b_share(j, blk, pc, kb, jc, nb, bp, groups);
    wait_for(&blk->pack_done, groups);
    if (b >= j->nn) wait_for(&j->blocks[b - j->nn].rows_done, j->nchunks);
    rows_share(j, blk, pc, kb, jc, nb, bp, ap);
  }
}

static size_t round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

bool fast_gemm_team(cpu_device_t *dev, const gemm_type_t *t,
                    const fast_gemm_kernel_t *kr, const gemm_view_t *v,
                    const void *alpha, const void *beta, const void *one,
                    const void *zero) {
  unsigned workers = dev->pool ? cpu_pool_size(dev->pool) : 1;
  if (workers < 2 || !t->wide_c || v->k == 0) return false;
  gemm_team_job_t j = {t, kr, v, alpha, beta, one, zero, 0, 0, 0, 0,
                       0, 0, NULL, {NULL, NULL}, NULL, 0};
  int64_t mr = kr->mr, nr = kr->nr, es = (int64_t)t->esize;
  j.kc = v->k < kr->kc ? v->k : kr->kc;
  j.nc = v->n < kr->nc ? (v->n + nr - 1) / nr * nr : kr->nc;
  j.nn = (v->n + j.nc - 1) / j.nc;
  j.nblocks = (v->k + j.kc - 1) / j.kc * j.nn;
  /* enough chunks that a worker held back costs little, few enough that
   * each A chunk is worth packing; panels dealt out evenly */
  int64_t panels = (v->m + mr - 1) / mr;
  int64_t want = (int64_t)workers * TEAM_CHUNKS_PER_WORKER;
  if ((panels + want - 1) / want > TEAM_MAX_CHUNK_PANELS)
    want = (panels + TEAM_MAX_CHUNK_PANELS - 1) / TEAM_MAX_CHUNK_PANELS;
  j.panels = panels;
  j.nchunks = want < panels ? want : panels;
  int64_t chunk_rows = (panels + j.nchunks - 1) / j.nchunks * mr;
  size_t blocks_bytes = round64((size_t)j.nblocks * sizeof(team_block_t));
  size_t b_bytes = round64((size_t)(j.nc * j.kc * es));
  j.abuf_bytes = round64((size_t)(chunk_rows * j.kc * es));
  char *mem = fast_scratch(1, blocks_bytes + 2 * b_bytes +
                                  (size_t)workers * j.abuf_bytes);
  if (!mem) return false;
  j.blocks = (team_block_t *)mem;
  memset(j.blocks, 0, (size_t)j.nblocks * sizeof(team_block_t));
  j.bbuf[0] = mem + blocks_bytes;
  j.bbuf[1] = j.bbuf[0] + b_bytes;
  j.abuf = j.bbuf[1] + b_bytes;
  cpu_pool_run(dev->pool, workers, 1, team_task, &j);
  return true;
}
