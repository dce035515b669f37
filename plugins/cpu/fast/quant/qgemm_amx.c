/*
 * fast/quant/qgemm_amx.c — int8 / uint8 GEMM on AMX-INT8 tiles: TDPBSSD
 * multiplies s8 by s8 sixty-four deep into int32 lanes that wrap like the
 * reference (TDPBSUD, TDPBUSD, TDPBUUD the other signedness pairs of a and
 * b), so a and b go in as they are (no a + 128 and column-sum correction
 * as on VNNI) and the sums are exact.
 *
 * Compiled with -mamx-tile -mamx-int8 and AVX-512 (fast.mk); called only
 * when CPUID reports AMX-INT8 and Linux granted tile state (quant.c).
 * Layouts in qgemm_amx.h. Blocking, as the bf16 kernel's (gemm_amx.c):
 *  - One pool run per call (per batch when b is batched), in two phases:
 *    the workers pack B in pieces of panels claimed from a shared counter
 *    and wait until all are packed; then they claim tasks (a few
 *    micro-panels of rows, and for short problems a part of the column
 *    pairs) from a second counter. Claiming, not a fixed split, keeps a
 *    call steady on a shared machine: a preempted worker takes fewer tasks
 *    instead of holding up the call.
 *  - Each task packs its rows of A into 32-row micro-panels (per-worker
 *    scratch, kept across calls) and sweeps them against blocks
 *    of QA_NB column pairs, QA_KB deep: a 32 x QA_KB A sub-panel stays in
 *    L1 across the block, the block (QA_NB x 32 x QA_KB bytes) in L2 across
 *    QA_MB micro-panels.
 *  - The micro-kernel keeps a 32 x 32 int32 block of C in four tiles for a
 *    whole k block; between k blocks it waits in a workspace of QA_MB x
 *    QA_NB micro-tiles, and after the last one the epilogue (scales,
 *    requantize) writes it to c, or the tiles go straight to an int32 c.
 * The same driver runs the AVX512-VNNI micro-kernel (qgemm_vnni.c) on CPUs
 * without AMX, with a flipped by 0x80 when a and b have the same
 * signedness (qgemm_vnni.c says why) and a shorter k block.
 */
#include <immintrin.h>
#include <string.h>

#include "plugins/cpu/fast/amx_tiles.h"
#include "plugins/cpu/fast/gemm/gemm.h"
#include "plugins/cpu/fast/shared_pieces.h"
#include "plugins/cpu/fast/quant/qgemm_amx.h"
#include "plugins/cpu/tensor.h"

/* k bytes per block: the A sub-panel is 32 KiB for the tiles; VNNI reads
 * the B pair (32 x kb bytes) from L1 once per 8 rows, so it takes less */
#define QA_KB_AMX 1024
#define QA_KB_VNNI 256
#define QA_MB 8 /* micro-panels of A per block */
#define QA_NB 8 /* column pairs of B per block */
#define QA_WS_LD (QA_NB * 32)
#define QA_APACK_BYTES ((int64_t)4 << 20) /* A packed at a time per worker */
#define QA_PACK_PIECE 4       /* B panels per claim: pack_4panels' unit */
#define QA_TASKS_PER_WORKER 4 /* tasks per worker, for the dynamic split */

/* out[32][ldo] = (first ? 0 : w[32][ld]) + micro-panel ap x the panel
 * pair b0 / b1 over `chunks` 64-deep chunks, with the tile instruction DP
 * of the operands' signedness (TDPB<a><b>D, S signed, U unsigned). */
#define QA_UKR(name, DP)                                                                           \
  static void name(int64_t chunks, const int8_t *ap, const int8_t *b0, const int8_t *b1,           \
                   const int32_t *w, int64_t ld, bool first, int32_t *out, int64_t ldo) {          \
    cpu_amx_acc_start(w, ld, first);                                                               \
    for (int64_t c = 0; c < chunks; c++) {                                                         \
      _tile_loadd(4, ap, CPU_QA_KC);                                                               \
      _tile_loadd(5, ap + 1024, CPU_QA_KC);                                                        \
      _tile_loadd(6, b0, CPU_QA_KC);                                                               \
      _tile_loadd(7, b1, CPU_QA_KC);                                                               \
      DP(0, 4, 6);                                                                                 \
      DP(1, 4, 7);                                                                                 \
      DP(2, 5, 6);                                                                                 \
      DP(3, 5, 7);                                                                                 \
      ap += CPU_QA_APANEL_CHUNK;                                                                   \
      b0 += 1024;                                                                                  \
      b1 += 1024;                                                                                  \
    }                                                                                              \
    cpu_amx_acc_store(out, ldo);                                                                   \
  }

QA_UKR(qa_ukr_ss, _tile_dpbssd)
QA_UKR(qa_ukr_su, _tile_dpbsud)
QA_UKR(qa_ukr_us, _tile_dpbusd)
QA_UKR(qa_ukr_uu, _tile_dpbuud)

/* The tile micro-kernel for a's and b's dtypes (i8 or u8). */
static cpu_qa_ukr_fn qa_ukr_for(bool a_u8, bool b_u8) {
  return a_u8 ? (b_u8 ? qa_ukr_uu : qa_ukr_us) : (b_u8 ? qa_ukr_su : qa_ukr_ss);
}

/* Where the last k block of the 32 x 32 block at row q, column c0 may go
 * straight from the tiles: into an int32 c with unit column stride when the
 * block is whole and its rows lie in one batch. NULL: through the
 * epilogue. */
static int32_t *qa_direct(const cpu_qa_job_t *j, int64_t q, int64_t c0, int64_t *ldo) {
  const bp_plugin_tensor_t *C = &j->args->c;
  int32_t rk = C->rank;
  if (C->dtype != BP_I32 || C->strides[rk - 1] != 1 || c0 + 32 > j->n || q % j->m + 32 > j->m)
    return NULL;
  *ldo = C->strides[rk - 2];
  return (int32_t *)cpu_tensor_base(C) + (rk == 3 ? (q / j->m) * C->strides[0] : 0) +
         (q % j->m) * *ldo + c0;
}

/* Micro-panels [0, ni) of apack (rows q + 32 i, up to q_end) against the
 * column pairs [p0, p1), all of k, finishing in c. */
static void qa_block(const cpu_qa_job_t *j, const int8_t *apack, int64_t ni, int64_t q,
                     int64_t q_end, int64_t p0, int64_t p1, int32_t *ws) {
  int64_t kp = j->kp, bpanel = kp * 16;
  for (int64_t k0 = 0; k0 < kp; k0 += j->kb) {
    int64_t kb = kp - k0 < j->kb ? kp - k0 : j->kb;
    bool first = k0 == 0, last = k0 + kb >= kp;
    for (int64_t i = 0; i < ni; i++) {
      int64_t r0 = q + i * 32, rows = q_end - r0 < 32 ? q_end - r0 : 32;
      const int8_t *ap = apack + i * 32 * kp + k0 * 32;
      for (int64_t p = p0; p < p1; p++) {
        int32_t *w = ws + i * 32 * QA_WS_LD + (p - p0) * 32, *out = w;
        const int8_t *b0 = j->bpack + 2 * p * bpanel + k0 * 16;
        int64_t c0 = p * 32, cols = j->n - c0 < 32 ? j->n - c0 : 32, ldo = QA_WS_LD;
        int32_t *direct = last ? qa_direct(j, r0, c0, &ldo) : NULL;
        if (direct)
          out = direct;
        else
          ldo = QA_WS_LD;
        j->ukr(kb / CPU_QA_KC, ap, b0, b0 + bpanel, w, QA_WS_LD, first, out, ldo);
        if (last && !direct) j->store(j, w, QA_WS_LD, r0, rows, c0, cols);
      }
    }
  }
}

/* Rows [q, q + cnt) against column pairs [p0, p1): A packed up to
 * QA_APACK_BYTES at a time, each part swept over the pairs block by block.
 * The tiles are configured by the caller (qa_worker). */
static void qa_range(cpu_qa_job_t *j, int64_t q, int64_t cnt, int64_t p0, int64_t p1) {
  int64_t panel = 32 * j->kp, mpanels = (cnt + 31) / 32;
  int64_t mblk = QA_APACK_BYTES / panel;
  mblk = mblk < QA_MB ? QA_MB : mblk / QA_MB * QA_MB;
  int64_t cap = mpanels < mblk ? mpanels : mblk;
  int8_t *apack = cpu_fast_scratch(0, (size_t)(cap * panel));
  int32_t *ws = cpu_fast_scratch(3, sizeof(int32_t) * QA_MB * 32 * QA_WS_LD);
  if (!apack || !ws) {
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t ib = 0; ib < mpanels; ib += mblk) {
    int64_t ie = ib + mblk < mpanels ? ib + mblk : mpanels;
    for (int64_t i = ib; i < ie; i++) {
      int64_t r0 = q + i * 32, rows = q + cnt - r0 < 32 ? q + cnt - r0 : 32;
      j->pack_a(j, r0, rows, apack + (i - ib) * panel);
    }
    for (int64_t i0 = ib; i0 < ie; i0 += QA_MB)
      for (int64_t pb = p0; pb < p1; pb += QA_NB)
        qa_block(j, apack + (i0 - ib) * panel, (i0 + QA_MB < ie ? i0 + QA_MB : ie) - i0,
                 q + i0 * 32, q + cnt, pb, pb + QA_NB < p1 ? pb + QA_NB : p1, ws);
  }
}

/* Piece x of phase 1: QA_PACK_PIECE panels of B. */
static void qa_pack_b_piece(void *ctx, int64_t x) {
  cpu_qa_job_t *j = ctx;
  int64_t p0 = x * QA_PACK_PIECE, p1 = p0 + QA_PACK_PIECE;
  j->pack_b(j, p0, p1 < j->panels ? p1 : j->panels);
}

/* Phase 1: pieces of B claimed from the shared counter and packed, then a
 * wait until every piece is in (fast/shared_pieces.h). */
static void qa_pack_b_phase(cpu_qa_job_t *j) {
  cpu_fast_share_pieces(&j->next_piece, &j->pieces_done, j->pieces, qa_pack_b_piece, j);
}

/* Phase 2: tasks (row part t / ncg x pair part t % ncg) claimed from the
 * shared counter until none is left, so a worker that runs slower (shared
 * CPU, preemption) simply takes fewer. */
static void qa_compute_phase(cpu_qa_job_t *j) {
  int64_t pairs = j->panels / 2, rows = j->rtask * 32;
  for (;;) {
    int64_t t = __atomic_fetch_add(&j->next_task, 1, __ATOMIC_RELAXED);
    if (t >= j->ntasks) break;
    int64_t r0 = (t / j->ncg) * rows, p0 = (t % j->ncg) * j->ptask;
    if (r0 >= j->rows || p0 >= pairs) continue;
    qa_range(j, j->q0 + r0, j->rows - r0 < rows ? j->rows - r0 : rows, p0,
             p0 + j->ptask < pairs ? p0 + j->ptask : pairs);
  }
}

/* Every worker of the one pool run of a job: both phases, the tiles
 * configured once. */
static void qa_worker(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  cpu_qa_job_t *j = ctx;
  (void)begin, (void)end, (void)worker;
  qa_pack_b_phase(j);
  if (j->tiles) cpu_amx_configure_full(); /* tiles 0-3 C, 4-5 A, 6-7 B */
  qa_compute_phase(j);
  if (j->tiles) _tile_release();
}

/* The task grid for `workers`: row tasks of up to QA_MB micro-panels, small
 * enough for about QA_TASKS_PER_WORKER per worker; too few rows for that:
 * the column pairs split too. */
static void qa_split(cpu_qa_job_t *j, int64_t workers) {
  int64_t mpanels = (j->rows + 31) / 32, pairs = j->panels / 2;
  int64_t want = workers * QA_TASKS_PER_WORKER;
  j->pieces = (j->panels + QA_PACK_PIECE - 1) / QA_PACK_PIECE;
  j->rtask = (mpanels + want - 1) / want;
  if (j->rtask > QA_MB) j->rtask = QA_MB;
  int64_t rtasks = (mpanels + j->rtask - 1) / j->rtask;
  j->ncg = workers > 1 && rtasks < want ? (want + rtasks - 1) / rtasks : 1;
  if (j->ncg > pairs) j->ncg = pairs;
  j->ptask = (pairs + j->ncg - 1) / j->ncg;
  j->ncg = (pairs + j->ptask - 1) / j->ptask;
  j->ntasks = rtasks * j->ncg;
  j->next_piece = j->pieces_done = j->next_task = 0;
}

/* One b (shared by all rows of the job): one pool run packs it and then
 * computes the rows. */
static void qa_run(cpu_device_t *dev, cpu_qa_job_t *j) {
  unsigned threads = dev->pool ? cpu_pool_size(dev->pool) : 1;
  double ops = 2.0 * (double)j->rows * (double)(j->panels * 16) * (double)j->kp;
  bool par = threads > 1 && ops >= 4e6;
  qa_split(j, par ? threads : 1);
  if (par)
    cpu_pool_run(dev->pool, threads, 1, qa_worker, j);
  else
    qa_worker(j, 0, 1, 0);
}

bp_status_t cpu_qgemm_blocked(cpu_device_t *dev, const bp_qgemm_args_t *a, bool amx) {
  const bp_plugin_tensor_t *A = &a->a, *B = &a->b, *C = &a->c;
  int32_t r = A->rank, rb = B->rank;
  int64_t batch = r == 3 ? A->shape[0] : 1, m = A->shape[r - 2], k = A->shape[r - 1];
  int64_t n = C->shape[r - 1];
  if (batch == 0 || m == 0 || n == 0) return BP_OK;
  bool a_u8 = A->dtype == BP_U8, b_u8 = B->dtype == BP_U8;
  cpu_qa_job_t j = {.ukr = amx ? qa_ukr_for(a_u8, b_u8) : cpu_qgemm_vnni_ukr_for(a_u8, b_u8),
                    .pack_b = cpu_qa_pack_b,
                    .pack_a = cpu_qa_pack_a,
                    .store = cpu_qa_store,
                    .tiles = amx,
                    .flip_a = !amx && a_u8 == b_u8,
                    .kb = amx ? QA_KB_AMX : QA_KB_VNNI,
                    .args = a,
                    .a = cpu_tensor_base(A),
                    .m = m,
                    .n = n,
                    .k = k,
                    .kp = k ? (k + CPU_QA_KC - 1) / CPU_QA_KC * CPU_QA_KC : CPU_QA_KC,
                    .sab = r == 3 ? A->strides[0] : 0,
                    .sam = A->strides[r - 2],
                    .sak = A->strides[r - 1],
                    .sbk = B->strides[rb - 2],
                    .sbn = B->strides[rb - 1],
                    .panels = (n + 31) / 32 * 2};
  return cpu_qa_run_job(dev, &j);
}

bp_status_t cpu_qa_run_job(cpu_device_t *dev, cpu_qa_job_t *j) {
  const bp_plugin_tensor_t *A = &j->args->a, *B = &j->args->b, *S = &j->args->scale_b;
  int32_t r = A->rank, rb = B->rank;
  int64_t batch = r == 3 ? A->shape[0] : 1, m = j->m, n = j->n;
  size_t bbytes = (size_t)(j->panels * j->kp * 16);
  int8_t *mem = cpu_fast_scratch(2, bbytes + (size_t)j->panels * 16 * sizeof(float));
  if (!mem) return BP_ERR_UNIMPLEMENTED; /* nothing written: the reference runs */
  float *sb = (float *)(mem + bbytes);
  for (int64_t c = 0; c < j->panels * 16; c++)
    sb[c] = S->rank && c < n ? ((const float *)cpu_tensor_base(S))[c * S->strides[0]] : 1.0f;
  j->bpack = mem;
  j->sb = sb;
  bool shared = rb == 2;
  const int8_t *pb = cpu_tensor_base(B);
  for (int64_t bi = 0; bi < (shared ? 1 : batch); bi++) {
    j->b = pb + (shared ? 0 : bi * B->strides[0]);
    j->q0 = shared ? 0 : bi * m;
    j->rows = shared ? batch * m : m;
    qa_run(dev, j);
    if (j->failed) return BP_ERR_OUT_OF_MEMORY;
  }
  return BP_OK;
}
