/*
 * fast/quant/qgemm_amx.h — what the AMX-INT8 GEMM's driver (qgemm_amx.c,
 * built with the tile flags; a and b each i8 or u8) shares with its
 * packers and its epilogue (qgemm_amx_pack.c, AVX-512 only).
 *
 * Layouts (k padded to kp, a multiple of 64 and at least 64, with zeros):
 *  - B: 16-column panels, each kp / 4 steps of 64 bytes: step s holds, for
 *    column j of the panel, b[4s .. 4s + 3][j] at bytes 4j .. 4j + 3 (the
 *    VNNI-4 layout of cpu_qb_pack_t). 16 steps (one 64-deep k chunk) are
 *    one 16 x 64-byte B tile, so a panel is its own tile row stride. The
 *    panel count is even, so 32-column pairs never run out.
 *  - A: 32-row micro-panels, each kp / 64 chunks of 2 KiB: rows 0-15 of the
 *    chunk are one A tile, rows 16-31 the next; row r of chunk c holds
 *    a[r][64c .. 64c + 63] (XORed with 0x80 for the VNNI micro-kernel when
 *    a and b have the same signedness).
 * Rows are counted over the batch: row q is a's row q % m of batch q / m.
 */
#ifndef BACKPLANE_CPU_FAST_QGEMM_AMX_H
#define BACKPLANE_CPU_FAST_QGEMM_AMX_H

#include "plugins/cpu/fast/quant/quant.h"

#define CPU_QA_KC 64             /* k bytes per tile row: one k chunk */
#define CPU_QA_APANEL_CHUNK 2048 /* bytes of one 32-row chunk of a micro-panel */

/* out[32][ldo] = (first ? 0 : w[32][ld]) + micro-panel ap x the column
 * pair b0 / b1 (two panels) over `chunks` 64-deep chunks: the blocked
 * driver's micro-kernel (AMX tiles, or AVX512-VNNI in qgemm_vnni.c). */
typedef void (*cpu_qa_ukr_fn)(int64_t chunks, const int8_t *ap, const int8_t *b0, const int8_t *b1,
                              const int32_t *w, int64_t ld, bool first, int32_t *out, int64_t ldo);

typedef struct cpu_qa_job cpu_qa_job_t;

/* The packers and the epilogue a job runs (below: the int8 ones; the fp8
 * GEMM's in qgemm_fp8.c, on the same layouts in bytes). */
typedef void (*cpu_qa_pack_b_fn)(const cpu_qa_job_t *j, int64_t p0, int64_t p1);
typedef void (*cpu_qa_pack_a_fn)(const cpu_qa_job_t *j, int64_t q, int64_t rows, int8_t *dst);
typedef void (*cpu_qa_store_fn)(const cpu_qa_job_t *j, const int32_t *w, int64_t ld, int64_t q,
                                int64_t rows, int64_t c0, int64_t cols);

struct cpu_qa_job {
  cpu_qa_ukr_fn ukr;
  cpu_qa_pack_b_fn pack_b;
  cpu_qa_pack_a_fn pack_a;
  cpu_qa_store_fn store;
  bool tiles;  /* the micro-kernel uses AMX tiles: configure them */
  bool flip_a; /* pack a ^ 0x80 (a + 128 or a - 128, for vpdpbusd) */
  int64_t kb;  /* k bytes per block, a multiple of 64 */
  const bp_qgemm_args_t *args;
  const int8_t *a, *b; /* a's base (all batches), b's base for this job */
  int64_t m, n, k, kp; /* per batch; kp: k padded (see above) */
  int64_t q0, rows;    /* the job's rows: [q0, q0 + rows) over the batch */
  int64_t sab, sam, sak, sbk, sbn;
  int64_t panels;         /* 16-column B panels, even */
  int8_t *bpack;          /* panels * kp * 16 bytes */
  const float *sb;        /* panels * 16 column scales (1 when absent) */
  /* The split of one pool run (qgemm_amx.c): B in pieces of panels, then
   * tasks of rtask micro-panels x ptask column pairs, each claimed from a
   * shared counter by whichever worker is free. */
  int64_t pieces, rtask, ptask, ncg, ntasks;
  int64_t next_piece, pieces_done, next_task; /* atomics, zero per run */
  int failed;                                 /* a worker lacked scratch memory */
};

/* The micro-kernel on AVX512-VNNI (qgemm_vnni.c) for a's and b's dtypes
 * (u8 or i8); a is packed flipped (flip_a) exactly when a_u8 == b_u8. */
CPU_HIDDEN cpu_qa_ukr_fn cpu_qgemm_vnni_ukr_for(bool a_u8, bool b_u8);
/* 16-column panels [p0, p1) of the job's b into j->bpack. */
CPU_HIDDEN void cpu_qa_pack_b(const cpu_qa_job_t *j, int64_t p0, int64_t p1);
/* Rows [q, q + rows) (rows <= 32) as one micro-panel at dst. */
CPU_HIDDEN void cpu_qa_pack_a(const cpu_qa_job_t *j, int64_t q, int64_t rows, int8_t *dst);
/* The int32 sums w (rows x cols, row stride ld) of rows [q, q + rows) and
 * columns [c0, c0 + cols) into c, by the rules of bp_qgemm_args_t (the
 * reference's order of float operations, so the bits match). */
CPU_HIDDEN void cpu_qa_store(const cpu_qa_job_t *j, const int32_t *w, int64_t ld, int64_t q,
                             int64_t rows, int64_t c0, int64_t cols);
/* Runs a job set up but for bpack, sb, b, q0 and rows (qgemm_amx.c): B's
 * scratch, the column scales, then each b (shared, or per batch).
 * BP_ERR_UNIMPLEMENTED (nothing written) without scratch for B,
 * BP_ERR_OUT_OF_MEMORY when a worker lacked its own. */
CPU_HIDDEN bp_status_t cpu_qa_run_job(cpu_device_t *dev, cpu_qa_job_t *j);

#endif /* BACKPLANE_CPU_FAST_QGEMM_AMX_H */
