/*
 * fast/gemm/gemm_dot.c — GEMMs with a narrow side of C, as inner products
 * along k (the kernel's ukr_dot, fast/gemm/gemm_dot_ukr.h).
 *
 * The blocked path puts C's columns along the vector and packs both
 * operands. With a few columns (a classifier's handful of outputs over
 * many rows) most of its lanes run empty, and it transposes all of A for
 * the few uses each element gets; with a few rows against B given as Bᵀ
 * (a linear layer's weights stored out x in, one-token decode) it
 * transposes all of the weights for as few uses. Here both operands are
 * read along k where they lie: A's rows in place, and Bᵀ's rows either in
 * place (B's k stride 1) or, for a few columns of a row-major B, copied
 * once into Bᵀ (k x n elements, small beside A).
 *
 * The long side of C is the outer loop, cut into tasks claimed from a
 * shared counter; its tiles read the long operand once, from memory,
 * while the short operand's rows come from L1 / L2 for every tile. k runs
 * in blocks of DOT_KB_BYTES a row, so a tile's rows of the outer operand
 * stay in L1 while they meet all of the inner one; each block after the
 * first adds its sums into C. bf16 and f16 take the f32 kernel's widening
 * instances (f32 sums, C rounded once): their C cannot hold partial sums,
 * so their k is one block.
 */
#include <stdatomic.h>
#include <string.h>

#include "gemm_driver.h"

#define DOT_KB_BYTES (2 << 10) /* k per block: 2 KiB of each row */
#define DOT_TASKS_PER_THREAD 4
#define DOT_MT_FLOPS 4e6 /* least work per thread worth a pool dispatch */

/* The narrow sides taken (docs/backend-cpu.md, "GEMM"). B given as Bᵀ:
 * C of at most DOT_MAX_SIDE_NT rows or columns, where the blocked path
 * would transpose the long operand for as few uses of it. B row-major: C
 * narrower than two of the kernel's NR-column panels, unless it fills
 * whole panels (NR columns: the unpacked path, which runs every lane), or
 * up to two panels where the packed path is the only other one (f64). */
#define DOT_MAX_SIDE_NT 32
#define DOT_MIN_K 32 /* shorter sums: folding the lanes costs more than it saves */

typedef struct dot_job {
  cpu_fast_ukr_dot_fn ukr;
  int64_t es;     /* element size */
  gemm_view_t v;  /* A's rows: v.a, v.sam; C: v.c, v.scm, v.scn */
  const char *bt; /* Bᵀ's rows: n of them, ldb apart, k contiguous */
  int64_t ldb;
  int64_t sab, sbt, scb; /* per batch entry, in elements */
  bool outer_a;          /* the long side is A's rows (else Bᵀ's) */
  int64_t outer_rows, outer_tile, inner_rows, inner_tile;
  int64_t kb; /* k per block */
  int64_t tiles, per_task, tasks_per_entry, ntasks;
  _Atomic int64_t *next; /* NULL: one caller runs them all */
  const void *alpha, *beta, *one;
} dot_job_t;

/* The kernel for t's elements: kr's own (f32, f64), or the f32 kernel's
 * widening ones (bf16, f16). */
static cpu_fast_ukr_dot_fn dot_ukr(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr) {
  switch (t->dtype) {
  case BP_BF16: return kr->ukr_dot_bf16;
  case BP_F16: return kr->ukr_dot_f16;
  default: return kr->ukr_dot;
  }
}

bool cpu_fast_gemm_dot_fits(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                            const gemm_view_t *v) {
  if (!dot_ukr(t, kr) || v->sak != 1 || v->k < DOT_MIN_K) return false;
  if (v->sbk == 1) return (v->m < v->n ? v->m : v->n) <= DOT_MAX_SIDE_NT;
  if (kr->ukr_rows && t == &cpu_fast_gemm_type_f32)
    return v->n < 2 * kr->nr && v->n % kr->nr != 0;
  return v->n <= 2 * kr->nr;
}

/* One tile of C: rows [i0, i0 + ra) against Bᵀ rows [j0, j0 + rb) of batch
 * entry b, k [p0, p0 + kb). */
static void dot_tile(const dot_job_t *j, int64_t b, int64_t i0, int ra, int64_t j0, int rb,
                     int64_t p0, int64_t kb) {
  const gemm_view_t *v = &j->v;
  int64_t es = j->es;
  const char *a = v->a + (b * j->sab + i0 * v->sam + p0) * es;
  const char *bt = j->bt + (b * j->sbt + j0 * j->ldb + p0) * es;
  char *c = v->c + (b * j->scb + i0 * v->scm + j0 * v->scn) * es;
  j->ukr(kb, a, v->sam, bt, j->ldb, c, v->scm, v->scn, ra, rb, j->alpha,
         p0 == 0 ? j->beta : j->one);
}

/* Outer tiles [t0, t1) of batch entry b, every k block. */
static void dot_run(const dot_job_t *j, int64_t b, int64_t t0, int64_t t1) {
  int64_t k = j->v.k;
  for (int64_t t = t0; t < t1; t++) {
    int64_t o0 = t * j->outer_tile;
    int ocnt = (int)(j->outer_rows - o0 < j->outer_tile ? j->outer_rows - o0 : j->outer_tile);
    for (int64_t p0 = 0; p0 < k; p0 += j->kb) {
      int64_t kb = k - p0 < j->kb ? k - p0 : j->kb;
      for (int64_t q0 = 0; q0 < j->inner_rows; q0 += j->inner_tile) {
        int qcnt = (int)(j->inner_rows - q0 < j->inner_tile ? j->inner_rows - q0 : j->inner_tile);
        if (j->outer_a)
          dot_tile(j, b, o0, ocnt, q0, qcnt, p0, kb);
        else
          dot_tile(j, b, q0, qcnt, o0, ocnt, p0, kb);
      }
    }
  }
}

static void dot_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const dot_job_t *j = ctx;
  if (j->next) begin = atomic_fetch_add_explicit(j->next, 1, memory_order_relaxed), end = j->ntasks;
  while (begin < end) {
    int64_t b = begin / j->tasks_per_entry, t0 = begin % j->tasks_per_entry * j->per_task;
    int64_t t1 = t0 + j->per_task < j->tiles ? t0 + j->per_task : j->tiles;
    dot_run(j, b, t0, t1);
    begin = j->next ? atomic_fetch_add_explicit(j->next, 1, memory_order_relaxed) : begin + 1;
  }
}

/* Bᵀ (n rows of k) of every batch entry into dst, from B at any strides,
 * DOT_PACK_STEPS k steps at a time: each of Bᵀ's rows then gets whole
 * lines in turn (its rows are k elements apart, often the same L1 set). */
#define DOT_PACK_STEPS 64
#define DEFINE_DOT_PACK_BT(T, sfx)                                                                 \
  static void dot_pack_bt_##sfx(const gemm_view_t *v, int64_t batch, int64_t sbb, T *dst) {        \
    const T *src = (const T *)v->b;                                                                \
    for (int64_t b = 0; b < batch; b++, src += sbb, dst += v->n * v->k)                            \
      for (int64_t p0 = 0; p0 < v->k; p0 += DOT_PACK_STEPS) {                                      \
        int64_t p1 = v->k - p0 < DOT_PACK_STEPS ? v->k : p0 + DOT_PACK_STEPS;                      \
        for (int64_t c = 0; c < v->n; c++)                                                         \
          for (int64_t p = p0; p < p1; p++) dst[c * v->k + p] = src[p * v->sbk + c * v->sbn];      \
      }                                                                                            \
  }
DEFINE_DOT_PACK_BT(float, f32)
DEFINE_DOT_PACK_BT(double, f64)
DEFINE_DOT_PACK_BT(uint16_t, u16)

bool cpu_fast_gemm_dot(cpu_device_t *dev, const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                       const gemm_view_t *v, int64_t batch, int64_t sab, int64_t sbb, int64_t scb,
                       const void *alpha, const void *beta, const void *one) {
  dot_job_t j;
  memset(&j, 0, sizeof j);
  j.ukr = dot_ukr(t, kr), j.es = (int64_t)t->in_size, j.v = *v;
  int ra = kr->dot_ra;
  cpu_fast_ukr_dot_fn one_row = t->dtype == BP_BF16  ? kr->ukr_dot_bf16_1
                                : t->dtype == BP_F16 ? kr->ukr_dot_f16_1
                                                     : NULL;
  if (v->m == 1 && one_row) j.ukr = one_row, ra = 1;
  j.sab = sab, j.scb = scb;
  j.alpha = alpha, j.beta = beta, j.one = one;
  if (v->sbk == 1) {
    j.bt = v->b, j.ldb = v->sbn, j.sbt = sbb;
  } else {
    char *bt = cpu_fast_scratch(1, (size_t)(batch * v->n * v->k * j.es));
    if (!bt) return false;
    if (j.es == sizeof(double))
      dot_pack_bt_f64(v, batch, sbb, (double *)bt);
    else if (j.es == sizeof(float))
      dot_pack_bt_f32(v, batch, sbb, (float *)bt);
    else
      dot_pack_bt_u16(v, batch, sbb, (uint16_t *)bt);
    j.bt = bt, j.ldb = v->k, j.sbt = v->n * v->k;
  }
  j.outer_a = v->n <= v->m;
  j.outer_rows = j.outer_a ? v->m : v->n;
  j.inner_rows = j.outer_a ? v->n : v->m;
  j.outer_tile = j.outer_a ? ra : CPU_FAST_DOT_RB;
  j.inner_tile = j.outer_a ? CPU_FAST_DOT_RB : ra;
  /* a bf16 / f16 C cannot hold partial sums: all of k in one block */
  j.kb = t->wide_c ? cpu_fast_gemm_even_block(v->k, DOT_KB_BYTES / j.es, 16) : v->k;
  j.tiles = (j.outer_rows + j.outer_tile - 1) / j.outer_tile;
  unsigned threads = dev->pool ? cpu_pool_size(dev->pool) : 1;
  double flops = 2.0 * (double)v->m * (double)v->n * (double)v->k * (double)batch;
  bool mt = threads > 1 && flops >= DOT_MT_FLOPS * threads;
  int64_t want = mt ? (int64_t)threads * DOT_TASKS_PER_THREAD : 1;
  int64_t per_entry = (want + batch - 1) / batch;
  j.per_task = j.tiles > per_entry ? (j.tiles + per_entry - 1) / per_entry : 1;
  j.tasks_per_entry = (j.tiles + j.per_task - 1) / j.per_task;
  j.ntasks = batch * j.tasks_per_entry;
  if (!mt || j.ntasks < 2) {
    dot_task(&j, 0, j.ntasks, 0);
  } else {
    _Atomic int64_t next = 0;
    j.next = &next;
    cpu_pool_run(dev->pool, threads, 1, dot_task, &j);
  }
  return true;
}
