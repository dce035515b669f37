/*
 * fast/gemm/gemm_skinny.h — the skinny GEMM's job (a few rows of C, B's
 * rows contiguous: one-token decode), shared by its AVX-512 kernel
 * (gemm_skinny_lowp.c) and its AMX kernel for bf16 (gemm_skinny_amx.c),
 * which both end in the same store (the epilogue, one rounding).
 */
#ifndef BACKPLANE_CPU_FAST_GEMM_SKINNY_H
#define BACKPLANE_CPU_FAST_GEMM_SKINNY_H

#include <stdbool.h>
#include <stdint.h>

#include "gemm.h"

typedef enum skinny_kind { SKINNY_BF16, SKINNY_F16, SKINNY_F32 } skinny_kind_t;

typedef struct skinny_job {
  skinny_kind_t kind;
  int64_t m, k, n;
  const float *a; /* m x k, row-major, widened */
  const void *b;  /* k rows of n, ldb elements apart */
  int64_t ldb;
  void *c; /* m x n at strides scm, scn */
  int64_t scm, scn;
  float alpha, beta;
  const void *bias; /* NULL: none; else at strides sbm, sbn */
  int64_t sbm, sbn;
  int act;        /* bp_unary_op_t, or -1: none */
  int64_t cols;   /* columns per task */
  int64_t kparts; /* row ranges of W per column block */
  float *partial; /* kparts > 1: kparts x m x n sums */
} skinny_job_t;

/* C[i][c0 + c] = round(act(alpha * s + beta * C + bias)) for the m rows of
 * C and w columns from c0, s the f32 sum at sums[i * ld + c]; C is not read
 * when beta == 0. */
CPU_HIDDEN void cpu_fast_skinny_store(const skinny_job_t *j, const float *sums, int64_t ld,
                                      int64_t c0, int64_t w);

/* bf16 on AMX tiles: whether it applies (the CPU has AMX-BF16, tile state
 * was granted, W small enough to come from the caches, as decode of a
 * small model) and the run itself (j->kind SKINNY_BF16, j->a the rows of A
 * widened from bf16). Returns false, writing nothing, when its scratch
 * memory cannot be had. */
/* 1: the AMX kernel where it applies; 0: never (the AVX-512 kernel: tests,
 * comparisons); -1 (the start): read once from BP_CPU_SKINNY_AMX ("0": off). */
CPU_HIDDEN extern int cpu_fast_skinny_amx_enabled;
CPU_HIDDEN bool cpu_fast_skinny_amx_ok(const skinny_job_t *j);
CPU_HIDDEN bool cpu_fast_skinny_amx_run(cpu_device_t *dev, const skinny_job_t *j);

#endif /* BACKPLANE_CPU_FAST_GEMM_SKINNY_H */
