/*
 * fast/gemm/gemm_team.c — one GEMM run by all workers of the pool together.
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
 *   2. once all panels are in, they claim chunks of MR-aligned rows of A
 *      and run the macro-kernel on each against the shared B block.
 * A's rows for one k block are packed once, into one of two shared slabs,
 * by whoever claims the chunk in the k block's first n block; the later n
 * blocks wait for that chunk's stamp and reuse it. A worker that runs out
 * of chunks packs the next block's B in the other buffer while the rest
 * finish. Which worker computes a chunk never changes a bit of C: every
 * element sees the same operations in the same order. Problems taller
 * than the kernel's MC run as row groups of at most MC rows, one after
 * another, so the slabs stay the size the per-thread loops pack.
 *
 * An f16 / bf16 C cannot hold partial sums: the row group is summed into
 * f32 scratch instead (the blocks and chunks as above), and whoever
 * computes a chunk's last k block rounds that chunk into C while it is
 * still in cache. The per-thread loops sum the same k blocks in the same
 * order (gemm_narrow_bands), so C is the same bits either way.
 *
 * Ordering, checked with counters (claimed / done per block) and stamps:
 *   - chunk r of block b writes the C that chunk r of block b - nn (same
 *     columns, the previous k block) wrote, so it starts after that one
 *     is done (its C stamp reaches p), not after the whole block: a worker
 *     that runs out of chunks goes on with the next k block's first
 *     chunks while the others finish their last ones;
 *   - block b packs into the B buffer block b - 2 read, so its packing
 *     starts after all of b - 2 is done;
 *   - k block p packs A into the slab k block p - 2 read, so it starts
 *     after every block of p - 2 is done; an n block past the first waits
 *     for its chunk's stamp (p + 1) before reading the slab.
 * A worker only ever waits for work that is already claimed by a worker
 * that is running, so a pool that runs the tasks one after another (a
 * nested call runs inline) still finishes: the first task does it all.
 */
#include <sched.h>
#include <stdalign.h>
#include <string.h>

#include "gemm_driver.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TEAM_PAUSE() _mm_pause()
#else
#define TEAM_PAUSE() ((void)0)
#endif

#define TEAM_CHUNKS_PER_WORKER 4 /* row chunks per worker and block */
#define TEAM_MAX_CHUNK_PANELS 16 /* A micro-panels per chunk at most */

/* Per-block counters, one cache line each: claims and completions. */
typedef struct team_block {
  alignas(64) int64_t pack_claimed, pack_done, rows_claimed, rows_done;
} team_block_t;

typedef struct gemm_team_job {
  const gemm_type_t *t;
  const cpu_fast_gemm_kernel_t *kr;
  const gemm_view_t *v;
  const void *alpha, *beta, *one, *zero;
  float *sums;     /* narrow C: the row group's f32 sums, n floats a row */
  int64_t kc, nc, nn, nblocks;
  int64_t claim_cols; /* B columns packed per claim */
  int64_t panels;  /* MR-row panels of A */
  int64_t nchunks; /* row chunks per block, panels dealt out evenly */
  team_block_t *blocks;
  int64_t *stamp[2]; /* per chunk: k block + 1 whose A the slab holds */
  int64_t *cdone;    /* [nn][nchunks]: k blocks of that C chunk done */
  char *bbuf[2], *aslab[2];
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
  int64_t cols = j->claim_cols;
  for (int64_t g; (g = claim(&blk->pack_claimed)) < groups;) {
    int64_t j0 = g * cols, w = nb - j0 < cols ? nb - j0 : cols;
    cpu_fast_gemm_pack_b(j->t, j->kr, j->v, jc + j0, pc, w, kb,
                     bp + j0 * kb * (int64_t)j->t->esize);
    mark_done(&blk->pack_done);
  }
}

/* Rows of chunk r: MR panels dealt out evenly. */
static void chunk_rows(const gemm_team_job_t *j, int64_t r, int64_t *i0, int64_t *mb) {
  int64_t mr = j->kr->mr, end = (r + 1) * j->panels / j->nchunks * mr;
  *i0 = r * j->panels / j->nchunks * mr;
  *mb = (end < j->v->m ? end : j->v->m) - *i0;
}

/* Claims row chunks of block b and multiplies them by its packed B; in k
 * block p's first n block the claimer packs the chunk's A first. */
static void rows_share(const gemm_team_job_t *j, team_block_t *blk, int64_t p,
                       int64_t pc, int64_t kb, int64_t jc, int64_t nb,
                       const char *bp) {
  const gemm_view_t *v = j->v;
  int64_t cs = (int64_t)j->t->in_size, es = (int64_t)j->t->esize;
  for (int64_t r; (r = claim(&blk->rows_claimed)) < j->nchunks;) {
    int64_t i0, mb;
    chunk_rows(j, r, &i0, &mb);
    char *ap = j->aslab[p & 1] + i0 * kb * es;
    if (jc == 0) {
      cpu_fast_gemm_pack_a(j->t, j->kr, v, i0, pc, mb, kb, ap);
      __atomic_store_n(&j->stamp[p & 1][r], p + 1, __ATOMIC_RELEASE);
    } else {
      wait_for(&j->stamp[p & 1][r], p + 1);
    }
    int64_t *cdone = &j->cdone[jc / j->nc * j->nchunks + r];
    if (p > 0) wait_for(cdone, p);
    if (j->sums) {
      float *s = j->sums + i0 * v->n + jc;
      gemm_macro_t mk = {&cpu_fast_gemm_type_f32, j->kr, (char *)s, v->n, 1,
                         j->one, pc == 0 ? j->zero : j->one, j->one, j->zero};
      cpu_fast_gemm_macro(&mk, ap, bp, mb, nb, kb);
      if (pc + kb == v->k)
        cpu_fast_gemm_round_c(j->t, j->kr, s, v->n,
                              v->c + (i0 * v->scm + jc * v->scn) * cs, v->scm,
                              v->scn, mb, nb, j->alpha, j->beta);
    } else {
      gemm_macro_t mk = {j->t, j->kr, v->c + (i0 * v->scm + jc * v->scn) * cs,
                         v->scm, v->scn, j->alpha, pc == 0 ? j->beta : j->one,
                         j->one, j->zero};
      cpu_fast_gemm_macro(&mk, ap, bp, mb, nb, kb);
    }
    __atomic_store_n(cdone, p + 1, __ATOMIC_RELEASE);
    mark_done(&blk->rows_done);
  }
}

static void team_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)begin, (void)end, (void)worker;
  const gemm_team_job_t *j = ctx;
  const gemm_view_t *v = j->v;
  int64_t group_cols = j->claim_cols;
  for (int64_t b = 0; b < j->nblocks; b++) {
    team_block_t *blk = &j->blocks[b];
    int64_t p = b / j->nn, pc = p * j->kc, jc = b % j->nn * j->nc;
    int64_t kb = v->k - pc < j->kc ? v->k - pc : j->kc;
    int64_t nb = v->n - jc < j->nc ? v->n - jc : j->nc;
    int64_t groups = (nb + group_cols - 1) / group_cols;
    char *bp = j->bbuf[b & 1];
    if (b >= 2) wait_for(&j->blocks[b - 2].rows_done, j->nchunks);
    pack_b_share(j, blk, pc, kb, jc, nb, bp, groups);
    wait_for(&blk->pack_done, groups);
    if (jc == 0 && p >= 2) /* the A slab of k block p - 2 is free */
      for (int64_t x = (p - 2) * j->nn; x < (p - 1) * j->nn; x++)
        wait_for(&j->blocks[x].rows_done, j->nchunks);
    rows_share(j, blk, p, pc, kb, jc, nb, bp);
  }
}

static size_t round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* Blocks and chunks of one row group (m <= MC); the bytes of scratch it
 * needs. */
static size_t team_plan(gemm_team_job_t *j, unsigned workers) {
  const gemm_view_t *v = j->v;
  int64_t mr = j->kr->mr, nr = j->kr->nr, es = (int64_t)j->t->esize;
  j->kc = cpu_fast_gemm_even_block(v->k, j->kr->kc, 8);
  j->nc = (cpu_fast_gemm_even_block(v->n, j->kr->nc, nr) + nr - 1) / nr * nr;
  j->nn = (v->n + j->nc - 1) / j->nc;
  j->nblocks = (v->k + j->kc - 1) / j->kc * j->nn;
  /* a block's B split evenly between the workers: the packer reads each
   * of B's rows in runs as long as its share, and long runs are what
   * reading B from memory wants (CPU_FAST_PACK_STRIP, fast/gemm/gemm.h) */
  int64_t block_panels = j->nc / nr;
  j->claim_cols = (block_panels + workers - 1) / workers * nr;
  /* enough chunks that a worker held back costs little, few enough that
   * each is worth a claim */
  j->panels = (v->m + mr - 1) / mr;
  int64_t want = (int64_t)workers * TEAM_CHUNKS_PER_WORKER;
  if ((j->panels + want - 1) / want > TEAM_MAX_CHUNK_PANELS)
    want = (j->panels + TEAM_MAX_CHUNK_PANELS - 1) / TEAM_MAX_CHUNK_PANELS;
  want = (want + workers - 1) / workers * workers; /* every worker alike */
  j->nchunks = want < j->panels ? want : j->panels;
  return round64((size_t)j->nblocks * sizeof(team_block_t)) +
         2 * round64((size_t)j->nchunks * sizeof(int64_t)) +
         round64((size_t)(j->nn * j->nchunks) * sizeof(int64_t)) +
         2 * round64((size_t)(j->nc * j->kc * es)) +
         2 * round64((size_t)(j->panels * mr * j->kc * es));
}

/* Lays out mem (team_plan's bytes, or more) and runs the group. */
static void team_run(cpu_device_t *dev, unsigned workers, gemm_team_job_t *j, char *mem) {
  int64_t es = (int64_t)j->t->esize;
  size_t blocks_bytes = round64((size_t)j->nblocks * sizeof(team_block_t));
  size_t stamp_bytes = round64((size_t)j->nchunks * sizeof(int64_t));
  size_t b_bytes = round64((size_t)(j->nc * j->kc * es));
  size_t a_bytes = round64((size_t)(j->panels * j->kr->mr * j->kc * es));
  size_t cdone_bytes = round64((size_t)(j->nn * j->nchunks) * sizeof(int64_t));
  memset(mem, 0, blocks_bytes + 2 * stamp_bytes + cdone_bytes);
  j->blocks = (team_block_t *)(void *)mem;
  j->stamp[0] = (int64_t *)(void *)(mem + blocks_bytes);
  j->stamp[1] = (int64_t *)(void *)(mem + blocks_bytes + stamp_bytes);
  j->cdone = (int64_t *)(void *)(mem + blocks_bytes + 2 * stamp_bytes);
  j->bbuf[0] = mem + blocks_bytes + 2 * stamp_bytes + cdone_bytes;
  j->bbuf[1] = j->bbuf[0] + b_bytes;
  j->aslab[0] = j->bbuf[1] + b_bytes;
  j->aslab[1] = j->aslab[0] + a_bytes;
  cpu_pool_run(dev->pool, workers, 1, team_task, j);
}

bool cpu_fast_gemm_team(cpu_device_t *dev, const gemm_type_t *t,
                    const cpu_fast_gemm_kernel_t *kr, const gemm_view_t *v,
                    const void *alpha, const void *beta, const void *one,
                    const void *zero, int64_t c_floats) {
  unsigned workers = dev->pool ? cpu_pool_size(dev->pool) : 1;
  bool narrow = !t->wide_c;
  if (workers < 2 || v->k == 0) return false;
  /* a narrow C is summed in the f32 kernels' scratch: only for the types
   * widened to f32, with rows short enough for the vector rounding */
  if (narrow && (t->esize != sizeof(float) || !cpu_fast_gemm_narrow_rows_fit(kr, v->n)))
    return false;
  /* row groups of at most MC rows (and c_floats of f32 sums for a narrow
   * C), MR-aligned, evenly sized; the first is the largest, so its
   * scratch serves them all */
  int64_t mr = kr->mr, cap = kr->mc;
  if (narrow && c_floats / v->n < cap) cap = c_floats / v->n / mr * mr;
  if (cap < mr) cap = mr;
  int64_t groups = (v->m + cap - 1) / cap;
  int64_t rows = ((v->m + groups - 1) / groups + mr - 1) / mr * mr;
  float *sums = NULL;
  if (narrow && !(sums = cpu_fast_scratch(4, (size_t)(rows * v->n) * sizeof(float))))
    return false;
  char *mem = NULL;
  for (int64_t i0 = 0; i0 < v->m; i0 += rows) {
    gemm_view_t sub = *v;
    sub.m = v->m - i0 < rows ? v->m - i0 : rows;
    sub.a += i0 * v->sam * (int64_t)t->in_size;
    sub.c += i0 * v->scm * (int64_t)t->in_size;
    gemm_team_job_t j = {.t = t, .kr = kr, .v = &sub, .alpha = alpha,
                         .beta = beta, .one = one, .zero = zero, .sums = sums};
    size_t bytes = team_plan(&j, workers);
    if (!mem && !(mem = cpu_fast_scratch(1, bytes))) return false;
    team_run(dev, workers, &j, mem);
  }
  return true;
}
