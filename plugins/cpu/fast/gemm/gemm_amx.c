/*
 * fast/gemm/gemm_amx.c — bf16 and f16 GEMM on AMX tiles (TDPBF16PS), f32
 * accumulation. f16 runs on the same tiles with each value split into two
 * bf16 values, so every product stays exact (fast/gemm/gemm_amx_f16.c has
 * the split and its packers); the driver below only sees other
 * packers, a k four times as long and the f16 form of the merge.
 *
 * The same driver runs bf16 on CPUs with AVX512-BF16 but no AMX
 * (cpu_fast_gemm_dpbf16): the product of a 32 x 32 block over a run of k
 * chunks is then VDPBF16PS on zmm registers (fast/gemm/gemm_dpbf16.c,
 * which says why this driver), reading the same packed pairs, with the
 * same workspace and merge; the block product is an amx_ops_t member,
 * and the tiles are configured only for the AMX one.
 *
 * Compiled with -mamx-tile -mamx-bf16 and AVX-512 (fast.mk); the AMX
 * product runs only when CPUID reports AMX-BF16 and the kernel granted
 * tile state (cpu_amx_request). Layout:
 *  - B is packed into VNNI tiles: per 32-deep k chunk and 32-column panel,
 *    two 16 x 64-byte tiles whose row r holds the pairs (B[2r][j],
 *    B[2r+1][j]). A into 32-row micro-panels: two 16 x 64-byte tiles per k
 *    chunk (the bf16 packers: fast/gemm/gemm_amx_pack.c).
 *  - One pool run per row group (32 MiB of packed A; one group for any
 *    model shape). The work is cut into units of AMX_MB micro-panels (256
 *    rows) x one block of AMX_NB B panels (fewer when there are too few
 *    units for the workers). Each worker computes a contiguous run of
 *    units of its own, front to back, then takes the units the others
 *    have not reached from the backs of their runs: a worker the shared
 *    machine holds back leaves one unit of tail, not a fixed half.
 *  - Packing has no phase of its own: a unit first packs the pieces of A
 *    and B it needs that nobody has packed (B with the first group only),
 *    claiming each by a flag, and waits for any another worker is
 *    packing. So each piece is packed once per call, the packing falls
 *    between the tile work of the first units, and since each run's row
 *    parts start at its own block of panels, the workers pack different
 *    pieces of B at first instead of the same ones.
 *  - A run sweeps its rows against blocks of AMX_NB B panels, AMX_KB deep:
 *    a 32 x AMX_KB A sub-panel stays in L1 while the block's B sub-panels
 *    come from L2, the row part's A stays in L2 across the blocks, and B
 *    is read from memory once per row part. The micro-kernel keeps a 32 x 32 f32
 *    block of C in four tiles (2 x 2: two A and two B tiles per k chunk)
 *    for a k block; between k blocks it waits in an f32 workspace, after
 *    the last one the vectorised merge writes C once (alpha, beta, the
 *    epilogue, RNE rounding). While a block's tiles work, the B sub-panel
 *    that comes next is prefetched into L2 in slices: tile loads do not
 *    wake the hardware prefetchers.
 */
#include <immintrin.h>
#include <sched.h>
#include <stdalign.h>
#include <string.h>

#include "gemm.h"
#include "gemm_epilogue.h"
#include "plugins/cpu/dtype.h"

/* the epilogue's vector pieces (the activation while the merged values
 * are still in registers, the rounding to bf16) */
#include "gemm_epi512.h"
#include "plugins/cpu/fast/amx_tiles.h"

#define AMX_KC 32       /* bf16 per tile row: one k chunk */
#define AMX_PANEL 1024  /* bf16 per 32 x 32 panel chunk (two 1 KiB tiles) */


/* w[32][ld] (+)= A panel (32 rows) x B panel (32 cols) over kchunks k
 * chunks; first == true starts from zero instead of loading w. pfl lines
 * from pf on are prefetched into L2 per chunk: tile loads do not wake the
 * hardware prefetchers, and a B sub-panel met first from L3 would stall
 * the tiles on every line. */
static void amx_ukr(int64_t kchunks, const uint16_t *ap, const uint16_t *bp,
                    float *w, int64_t ld, bool first, const char *pf, int64_t pfl) {
  cpu_amx_acc_start(w, ld, first);
  for (int64_t c = 0; c < kchunks; c++) {
    for (int64_t l = 0; l < pfl; l++, pf += 64) _mm_prefetch(pf, _MM_HINT_T1);
    cpu_amx_bf16_2x2(ap, ap + 512, 64, bp, bp + 512, 64);
    ap += AMX_PANEL;
    bp += AMX_PANEL;
  }
  cpu_amx_acc_store(w, ld);
}

/* ---- merge: C = bf16 / f16(alpha * acc + beta * C) ----------------------- */

/* The epilogue of ABI 1.5, applied in the merge to the f32 value before
 * its one rounding: bias (C's dtype; bias[i * sbm + j * sbn] for C[i][j],
 * NULL: none), then act (BP_UNARY_*, -1: none). */
typedef struct amx_epi {
  const uint16_t *bias;
  int64_t sbm, sbn;
  int act;
} amx_epi_t;

/* Any C strides: element by element, in double as the reference. */
static void amx_merge_strided(const float *t, int64_t ld, uint16_t *c, int64_t scm, int64_t scn,
                              int64_t rows, int64_t cols, float alpha, float beta,
                              const amx_epi_t *e, const uint16_t *bias, bool f16) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) {
      uint16_t *cij = c + i * scm + j * scn;
      double v = (double)(alpha * t[i * ld + j]);
      if (beta != 0) v += (double)(beta * epi_half_to_float(*cij, f16));
      if (bias) v = (double)(float)v + epi_half_to_float(bias[i * e->sbm + j * e->sbn], f16);
      if (e->act >= 0) v = cpu_fast_gemm_act_value(e->act, (double)(float)v);
      *cij = f16 ? cpu_f16_from_double((double)(float)v) : cpu_bf16_from_double((double)(float)v);
    }
}

/* C = half(act(alpha * acc + beta * C + bias)) for C in bf16 or f16 (f16:
 * AVX-512F's vcvtph2ps / vcvtps2ph, nearest even as the bf16 rounding);
 * bias is e's at this block's first element. */
static inline void amx_merge_half(const float *t, int64_t ld, uint16_t *c, int64_t scm,
                                  int64_t scn, int64_t rows, int64_t cols, float alpha,
                                  float beta, const amx_epi_t *e, const uint16_t *bias, bool f16) {
  if (scn != 1) {
    amx_merge_strided(t, ld, c, scm, scn, rows, cols, alpha, beta, e, bias, f16);
    return;
  }
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j += 16) {
      __mmask16 m = cols - j >= 16 ? 0xffff : (__mmask16)((1u << (cols - j)) - 1);
      uint16_t *cij = c + i * scm + j;
      __m512 v = _mm512_mul_ps(va, _mm512_loadu_ps(t + i * ld + j));
      if (beta != 0)
        v = _mm512_fmadd_ps(vb, epi_half_widen16(_mm256_maskz_loadu_epi16(m, cij), f16), v);
      if (bias)
        v = _mm512_add_ps(v, epi_half_bias16(bias + i * e->sbm + j * e->sbn, e->sbn, m, f16));
      if (e->act >= 0) v = epi_act16(v, e->act);
      _mm256_mask_storeu_epi16(cij, m, epi_half_narrow16(v, f16));
    }
}

static void amx_merge_bf16(const float *t, int64_t ld, uint16_t *c, int64_t scm, int64_t scn,
                           int64_t rows, int64_t cols, float alpha, float beta,
                           const amx_epi_t *e, const uint16_t *bias) {
  amx_merge_half(t, ld, c, scm, scn, rows, cols, alpha, beta, e, bias, false);
}

static void amx_merge_f16(const float *t, int64_t ld, uint16_t *c, int64_t scm, int64_t scn,
                          int64_t rows, int64_t cols, float alpha, float beta,
                          const amx_epi_t *e, const uint16_t *bias) {
  amx_merge_half(t, ld, c, scm, scn, rows, cols, alpha, beta, e, bias, true);
}

/* ---- driver --------------------------------------------------------------- */

/* Per dtype and inner product: the panel packers (k padded to kp tile
 * elements), the merge into C and the 32 x 32 block product (tiles: the
 * AMX one, which needs the tiles configured on each worker). */
typedef void (*amx_pack_fn)(const uint16_t *src, int64_t s_outer, int64_t s_inner,
                            int64_t cnt, int64_t k, int64_t kp, uint16_t *dst);
typedef void (*amx_merge_fn)(const float *t, int64_t ld, uint16_t *c, int64_t scm,
                              int64_t scn, int64_t rows, int64_t cols, float alpha,
                             float beta, const amx_epi_t *e, const uint16_t *bias);
typedef void (*amx_block_fn)(int64_t kchunks, const uint16_t *ap, const uint16_t *bp, float *w,
                             int64_t ld, bool first, const char *pf, int64_t pfl);
typedef struct amx_ops {
  amx_pack_fn pack_a, pack_b;
  amx_merge_fn merge;
  int64_t kmul; /* tile k elements per source k step */
  amx_block_fn block;
  bool tiles;
} amx_ops_t;

/* A worker's run of units, [front, back) packed in one word so that the
 * owner (from the front) and a helper (from the back) claim by one CAS;
 * one cache line each. */
typedef struct amx_run {
  alignas(64) uint64_t span; /* front << 32 | back */
} amx_run_t;
#define AMX_MAX_RUNS 16 /* workers past it only help */

typedef struct amx_job {
  const uint16_t *a, *b;
  uint16_t *c;
  int64_t m, n, k, kp;
  int64_t sam, sak, sbk, sbn, scm, scn;
  float alpha, beta;
  const amx_ops_t *ops;
  amx_epi_t epi;
  uint16_t *bpack; /* all 32-column panels of B, kp deep */
  uint16_t *apack; /* the row group's 32-row micro-panels of A, kp deep */
  /* One pool run per row group [g0, g0 + gcnt): the workers pack pieces of
   * AMX_PACK_PIECE panels (B's, in the first group only, then the group's
   * A) claimed from a shared counter, wait for all, then compute units of
   * rtask micro-panels x ptask B panels (unit u: row part u / ncg, panel
   * part u % ncg), each worker a contiguous run of its own, then the
   * others' remaining units from their backs. */
  int64_t g0, gcnt, npanels, bpieces, pieces, rtask, ptask, ncg, nunits;
  int32_t *pstate; /* per piece: AMX_UNPACKED, AMX_PACKING or AMX_PACKED */
  unsigned nruns;
  int failed; /* a worker lacked scratch memory */
  amx_run_t run[AMX_MAX_RUNS];
} amx_job_t;

static const amx_ops_t amx_bf16_ops = {cpu_fast_amx_bf16_pack_a, cpu_fast_amx_bf16_pack_b,
                                       amx_merge_bf16, 1, amx_ukr, true};
static const amx_ops_t amx_f16_ops = {cpu_fast_amx_f16_pack_a, cpu_fast_amx_f16_pack_b,
                                      amx_merge_f16, 4, amx_ukr, true};
static const amx_ops_t amx_dpbf16_ops = {cpu_fast_amx_bf16_pack_a, cpu_fast_amx_bf16_pack_b,
                                         amx_merge_bf16, 1,
                                         cpu_fast_gemm_dpbf16_block, false};

/* Blocking: a 32 x AMX_KB A sub-panel (16 KiB) stays in L1 while B
 * sub-panels stream from L2; C accumulates in f32 in a workspace of
 * AMX_MB x AMX_NB micro-tiles (256 KiB) between k blocks. A task's A
 * (AMX_MB micro-panels, all of k) is read from L2 for every block of B
 * panels, so each B panel is read from memory once per AMX_MB * 32 rows. */
#define AMX_KB 256
#define AMX_MB 8
#define AMX_NB 8
#define AMX_WS_LD (AMX_NB * 32)
#define AMX_PACK_PIECE 4       /* B panels per claim */
#define AMX_TASKS_PER_WORKER 4 /* units per worker at least (panels split) */

/* Micro-panels [0, ni) of apack (rows r00 + 32 i) against B panels
 * [p0, p1) (at most AMX_NB), all of k, finishing in C; pn is the first
 * panel of the unit this worker takes next (-1: none). */
static void amx_block(amx_job_t *j, const uint16_t *apack, int64_t ni, int64_t r00,
                      int64_t m_end, int64_t p0, int64_t p1, int64_t pn, float *ws) {
  int64_t kp = j->kp, panel = 32 * kp;
  for (int64_t k0 = 0; k0 < kp; k0 += AMX_KB) {
    int64_t kb = kp - k0 < AMX_KB ? kp - k0 : AMX_KB;
    bool first = k0 == 0, last = k0 + kb >= kp;
    for (int64_t i = 0; i < ni; i++) {
      int64_t r0 = r00 + i * 32, rows = m_end - r0 < 32 ? m_end - r0 : 32;
      for (int64_t p = p0; p < p1; p++) {
        float *w = ws + i * 32 * AMX_WS_LD + (p - p0) * 32;
        /* the B sub-panel that takes this one's place next (the next k
         * block's; after the last one, the one at the same place in the
         * next unit's panels), a slice per row panel */
        int64_t q = pn >= 0 && pn + (p - p0) < j->npanels ? pn + (p - p0) : -1;
        const uint16_t *nb = !last ? j->bpack + p * panel + (k0 + kb) * 32
                             : q >= 0 ? j->bpack + q * panel
                                      : NULL;
        int64_t nk = last ? kp : kp - k0 - kb, nkb = nk < AMX_KB ? nk : AMX_KB;
        int64_t bytes = nkb * 64 / ni, chunks = kb / AMX_KC;
        int64_t pfl = nb ? (bytes / 64 + chunks - 1) / chunks : 0;
        j->ops->block(chunks, apack + i * panel + k0 * 32, j->bpack + p * panel + k0 * 32, w,
                AMX_WS_LD, first, nb ? (const char *)nb + i * bytes : NULL, pfl);
        if (!last) continue;
        int64_t c0 = p * 32, cols = j->n - c0 < 32 ? j->n - c0 : 32;
        const uint16_t *bias = j->epi.bias ? j->epi.bias + r0 * j->epi.sbm + c0 * j->epi.sbn : NULL;
        j->ops->merge(w, AMX_WS_LD, j->c + r0 * j->scm + c0 * j->scn, j->scm,
                      j->scn, rows, cols, j->alpha, j->beta, &j->epi, bias);
      }
    }
  }
}

/* Micro-panels [i0, i0 + ni) of the row group (at most AMX_MB) against
 * B panels [p0, p1) (at most AMX_NB), pn as amx_block's. The tiles (when
 * the block product uses them) are configured by the caller (amx_worker). */
static void amx_range(amx_job_t *j, int64_t i0, int64_t ni, int64_t p0, int64_t p1, int64_t pn) {
  float *ws = cpu_fast_scratch(3, sizeof(float) * AMX_MB * 32 * AMX_WS_LD);
  if (!ws) {
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  amx_block(j, j->apack + i0 * 32 * j->kp, ni, j->g0 + i0 * 32, j->g0 + j->gcnt, p0, p1, pn, ws);
}

/* Piece x: AMX_PACK_PIECE panels of B (the first bpieces) or
 * of the row group's A. */
static void amx_pack_piece(amx_job_t *j, int64_t x) {
  bool isb = x < j->bpieces;
  int64_t p0 = (isb ? x : x - j->bpieces) * AMX_PACK_PIECE;
  int64_t cnt = isb ? j->n : j->gcnt, end = (cnt + 31) / 32;
  if (p0 + AMX_PACK_PIECE < end) end = p0 + AMX_PACK_PIECE;
  for (int64_t p = p0; p < end; p++) {
    int64_t e0 = p * 32, w = cnt - e0 < 32 ? cnt - e0 : 32;
    if (isb)
      j->ops->pack_b(j->b + e0 * j->sbn, j->sbk, j->sbn, w, j->k, j->kp,
                     j->bpack + p * 32 * j->kp);
    else
      j->ops->pack_a(j->a + (j->g0 + e0) * j->sam, j->sam, j->sak, w, j->k, j->kp,
                     j->apack + p * 32 * j->kp);
  }
}

enum { AMX_UNPACKED, AMX_PACKING, AMX_PACKED };

/* Pieces [x0, x1] packed: those nobody has started packed here, then a
 * wait for those another worker is packing (a packer never waits, so the
 * wait ends). The first unit that needs a piece packs it, so the packing
 * is spread over the workers' first units, between their tile work,
 * instead of a phase of its own that every worker must finish first. */
static void amx_need(amx_job_t *j, int64_t x0, int64_t x1) {
  for (int64_t x = x0; x <= x1; x++) {
    int32_t idle = AMX_UNPACKED;
    if (__atomic_load_n(&j->pstate[x], __ATOMIC_ACQUIRE) != AMX_UNPACKED ||
        !__atomic_compare_exchange_n(&j->pstate[x], &idle, AMX_PACKING, false, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED))
      continue;
    amx_pack_piece(j, x);
    __atomic_store_n(&j->pstate[x], AMX_PACKED, __ATOMIC_RELEASE);
  }
  for (int64_t x = x0; x <= x1; x++)
    for (unsigned spin = 1; __atomic_load_n(&j->pstate[x], __ATOMIC_ACQUIRE) != AMX_PACKED; spin++)
      if (spin % 256 == 0)
        sched_yield(); /* the packer may need this CPU */
      else
        _mm_pause();
}

/* A unit from run r: its front (the owner) or its back (a helper, so
 * that the owner keeps its order and its L2 prefetch of the next unit);
 * -1 when the run is empty. */
static int64_t amx_take(amx_run_t *r, bool front) {
  uint64_t s = __atomic_load_n(&r->span, __ATOMIC_RELAXED);
  for (;;) {
    uint32_t f = (uint32_t)(s >> 32), b = (uint32_t)s;
    if (f >= b) return -1;
    uint64_t next = front ? s + ((uint64_t)1 << 32) : s - 1;
    if (__atomic_compare_exchange_n(&r->span, &s, next, true, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return front ? (int64_t)f : (int64_t)b - 1;
  }
}

/* The first B panel of unit u, which is row part r = u / ncg (rtask
 * micro-panels) x panel part (u + rot) % ncg. The rotation
 * starts each run's row parts at its own panel part (rot: the share of
 * the row parts before r, in panel parts), so that the workers' first
 * units pack different pieces of B, each beside the others' tile work. */
static int64_t amx_unit_panel(const amx_job_t *j, int64_t u) {
  int64_t gpanels = (j->gcnt + 31) / 32, r = u / j->ncg;
  int64_t rtasks = (gpanels + j->rtask - 1) / j->rtask;
  int64_t rot = r * j->nruns / rtasks * j->ncg / j->nruns;
  return (u % j->ncg + rot) % j->ncg * j->ptask;
}

/* Unit u, its pieces of A and B packed first; the worker's next unit is
 * u + step (its own run: 1; a helper on another run's back: -1), whose B
 * the last k block prefetches. */
static void amx_unit(amx_job_t *j, int64_t u, int64_t step) {
  int64_t gpanels = (j->gcnt + 31) / 32, i0 = u / j->ncg * j->rtask, p0 = amx_unit_panel(j, u);
  int64_t ni = gpanels - i0 < j->rtask ? gpanels - i0 : j->rtask;
  int64_t p1 = p0 + j->ptask < j->npanels ? p0 + j->ptask : j->npanels;
  int64_t next = u + step, pn = next >= 0 && next < j->nunits ? amx_unit_panel(j, next) : -1;
  if (j->bpieces) amx_need(j, p0 / AMX_PACK_PIECE, (p1 - 1) / AMX_PACK_PIECE);
  amx_need(j, j->bpieces + i0 / AMX_PACK_PIECE, j->bpieces + (i0 + ni - 1) / AMX_PACK_PIECE);
  amx_range(j, i0, ni, p0, p1, pn);
}

/* Test hook: each worker helps the others before its own run. */
bool cpu_fast_gemm_amx_help_first;

/* The units: the worker's own run front to back (consecutive units share
 * their rows of A in L2), then the other runs' units from their backs
 * until none is left, so a worker that runs slower (shared CPU,
 * preemption, a late start) leaves its last units to the others, one
 * unit (a small share of the call) at a time. */
static void amx_compute_phase(amx_job_t *j, unsigned worker) {
  unsigned own = worker < j->nruns ? worker : 0, first = cpu_fast_gemm_amx_help_first ? 1 : 0;
  for (unsigned d = first; d < j->nruns + first; d++) {
    amx_run_t *r = &j->run[(own + d) % j->nruns];
    bool mine = r == &j->run[own] && worker < j->nruns;
    for (int64_t u; (u = amx_take(r, mine)) >= 0;) amx_unit(j, u, mine ? 1 : -1);
  }
}

/* Every worker of a row group's pool run: the tiles configured once (AMX
 * product only), then the units. */
static void amx_worker(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  amx_job_t *j = ctx;
  (void)begin, (void)end;
  if (j->ops->tiles) cpu_amx_configure_full(); /* C0..C3 f32, A0/A1 bf16, B0/B1 VNNI */
  amx_compute_phase(j, worker);
  if (j->ops->tiles) _tile_release();
}

/* The pieces and the units of the row group for `workers`: row parts of
 * up to AMX_MB micro-panels, so a unit's A stays in L2 while B streams
 * past it; panel parts of AMX_NB panels (one block: a helper takes a
 * small share of the call), fewer when that leaves under
 * AMX_TASKS_PER_WORKER units per worker. Each worker's run is a
 * contiguous share of the units in row-major order: it reads B once per
 * row part and its rows of A from L2. */
static void amx_split(amx_job_t *j, int64_t workers, bool pack_b) {
  int64_t gpanels = (j->gcnt + 31) / 32, want = workers * AMX_TASKS_PER_WORKER;
  j->npanels = (j->n + 31) / 32;
  j->bpieces = pack_b ? (j->npanels + AMX_PACK_PIECE - 1) / AMX_PACK_PIECE : 0;
  j->pieces = j->bpieces + (gpanels + AMX_PACK_PIECE - 1) / AMX_PACK_PIECE;
  j->rtask = gpanels < AMX_MB ? gpanels : AMX_MB;
  int64_t rtasks = (gpanels + j->rtask - 1) / j->rtask;
  j->ncg = (j->npanels + AMX_NB - 1) / AMX_NB;
  if (workers > 1 && rtasks * j->ncg < want) j->ncg = (want + rtasks - 1) / rtasks;
  if (j->ncg > j->npanels) j->ncg = j->npanels;
  j->ptask = (j->npanels + j->ncg - 1) / j->ncg;
  j->ncg = (j->npanels + j->ptask - 1) / j->ptask;
  j->nunits = rtasks * j->ncg;
  j->nruns = workers < AMX_MAX_RUNS ? (unsigned)workers : AMX_MAX_RUNS;
  for (unsigned w = 0; w < j->nruns; w++) {
    uint64_t f = (uint64_t)(j->nunits * w / j->nruns);
    uint64_t b = (uint64_t)(j->nunits * (w + 1) / j->nruns);
    j->run[w].span = f << 32 | b;
  }
  memset(j->pstate, 0, sizeof *j->pstate * (size_t)j->pieces);
}

/* Packed A per row group (bytes): groups of whole micro-panels. */
#define AMX_GROUP_BYTES ((int64_t)32 << 20)
int64_t cpu_fast_gemm_amx_group_bytes;

/* One batch entry, C row-major (scn == 1) or any strides (scalar merge):
 * per row group one pool run packs (B with the first group) and computes.
 * Returns false when scratch memory could not be had before C was
 * touched. */
static bool amx_one(cpu_device_t *dev, amx_job_t *j) {
  int64_t npanels = (j->n + 31) / 32, panel_bytes = 64 * j->kp;
  int64_t gbytes = cpu_fast_gemm_amx_group_bytes > 0 ? cpu_fast_gemm_amx_group_bytes
                                                     : AMX_GROUP_BYTES;
  int64_t gpanels = gbytes / panel_bytes, mpanels = (j->m + 31) / 32;
  gpanels = gpanels < AMX_MB ? AMX_MB : gpanels / AMX_MB * AMX_MB;
  if (gpanels > mpanels) gpanels = mpanels;
  j->bpack = cpu_fast_scratch(2, (size_t)(npanels * panel_bytes));
  /* the pieces' states after the group's A */
  int64_t states = (npanels + gpanels) / AMX_PACK_PIECE + 2;
  j->apack = cpu_fast_scratch(0, (size_t)(gpanels * panel_bytes + states * 4));
  if (!j->bpack || !j->apack) return false;
  j->pstate = (int32_t *)(j->apack + gpanels * 32 * j->kp);
  unsigned threads = dev->pool ? cpu_pool_size(dev->pool) : 1;
  double flops = 2.0 * (double)j->m * (double)j->n * (double)(j->k * j->ops->kmul);
  bool par = threads > 1 && flops >= 8e6;
  for (j->g0 = 0; j->g0 < j->m && !j->failed; j->g0 += gpanels * 32) {
    j->gcnt = j->m - j->g0 < gpanels * 32 ? j->m - j->g0 : gpanels * 32;
    amx_split(j, par ? threads : 1, j->g0 == 0);
    if (par)
      cpu_pool_run(dev->pool, threads, 1, amx_worker, j);
    else
      amx_worker(j, 0, 1, 0);
  }
  return true;
}

/* The epilogue of g's batch entry b (cpu_fast_gemm_amx_epilogue_ok holds). */
static amx_epi_t amx_epi_of(const bp_gemm_args_t *g, int64_t b) {
  amx_epi_t e = {NULL, 0, 0, (g->flags & BP_GEMM_FLAG_ACTIVATION) ? (int)g->activation : -1};
  if (g->bias.rank) {
    const int64_t *s = g->bias.strides;
    e.bias = (const uint16_t *)((const char *)(uintptr_t)g->bias.ptr + g->bias.offset) + b * s[0];
    e.sbm = s[1], e.sbn = s[2];
  }
  return e;
}

bool cpu_fast_gemm_amx_epilogue_ok(const bp_gemm_args_t *g) {
  if ((g->flags & BP_GEMM_FLAG_ACTIVATION) && !cpu_fast_gemm_act_known(g->activation))
    return false;
  return !g->bias.rank || (g->bias.rank == 3 && g->bias.dtype == g->c.dtype);
}

/* Every batch entry of g through the driver with ops. */
static bp_status_t amx_gemm(cpu_device_t *dev, const bp_gemm_args_t *g, const amx_ops_t *ops) {
  int64_t batch = g->c.shape[0], m = g->c.shape[1], n = g->c.shape[2];
  int64_t k = g->a.shape[2];
  const char *pa = (const char *)(uintptr_t)g->a.ptr + g->a.offset;
  const char *pb = (const char *)(uintptr_t)g->b.ptr + g->b.offset;
  char *pc = (char *)(uintptr_t)g->c.ptr + g->c.offset;
  const int64_t *sa = g->a.strides, *sb = g->b.strides, *sc = g->c.strides;
  for (int64_t b = 0; b < batch; b++) {
    amx_job_t j = {.a = (const uint16_t *)(pa + 2 * b * sa[0]),
                   .b = (const uint16_t *)(pb + 2 * b * sb[0]),
                   .c = (uint16_t *)(pc + 2 * b * sc[0]),
                   .m = m, .n = n, .k = k,
                   .kp = (k * ops->kmul + AMX_KC - 1) / AMX_KC * AMX_KC,
                   .sam = sa[1], .sak = sa[2], .sbk = sb[1], .sbn = sb[2],
                   .scm = sc[1], .scn = sc[2],
                   .alpha = (float)g->alpha, .beta = (float)g->beta,
                   .ops = ops, .epi = amx_epi_of(g, b)};
    /* Column-major C: compute C^T = B^T A^T so the merge runs along rows. */
    if (j.scn != 1 && j.scm == 1) {
      amx_job_t t = j;
      j.a = t.b, j.b = t.a, j.m = t.n, j.n = t.m;
      j.sam = t.sbn, j.sak = t.sbk, j.sbk = t.sak, j.sbn = t.sam;
      j.scm = t.scn, j.scn = t.scm;
      j.epi.sbm = t.epi.sbn, j.epi.sbn = t.epi.sbm;
    }
    if (!amx_one(dev, &j)) return b == 0 ? BP_ERR_UNIMPLEMENTED : BP_ERR_OUT_OF_MEMORY;
    if (j.failed) return BP_ERR_OUT_OF_MEMORY;
  }
  return BP_OK;
}

bp_status_t cpu_fast_gemm_amx(cpu_device_t *dev, const bp_gemm_args_t *g) {
  return amx_gemm(dev, g, g->a.dtype == BP_F16 ? &amx_f16_ops : &amx_bf16_ops);
}

bp_status_t cpu_fast_gemm_dpbf16(cpu_device_t *dev, const bp_gemm_args_t *g) {
  if (g->a.dtype != BP_BF16) return BP_ERR_UNIMPLEMENTED;
  return amx_gemm(dev, g, &amx_dpbf16_ops);
}
