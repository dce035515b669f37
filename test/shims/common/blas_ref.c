/*
 * blas_ref.c — see blas_ref.h.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/common/bp_half.h"
#include "test/shims/common/blas_ref.h"

static int elem_size(int dt) {
  return dt == SHIM_BLAS_F64 ? 8 : dt == SHIM_BLAS_F32 ? 4 : 2;
}

static double load(int dt, uint64_t base, int64_t i) {
  switch (dt) {
  case SHIM_BLAS_F64: return ((const double *)(uintptr_t)base)[i];
  case SHIM_BLAS_F32: return ((const float *)(uintptr_t)base)[i];
  case SHIM_BLAS_F16: return bp_f16_to_f32(((const uint16_t *)(uintptr_t)base)[i]);
  default: return bp_bf16_to_f32(((const uint16_t *)(uintptr_t)base)[i]);
  }
}

static void store(int dt, uint64_t base, int64_t i, double v) {
  switch (dt) {
  case SHIM_BLAS_F64: ((double *)(uintptr_t)base)[i] = v; break;
  case SHIM_BLAS_F32: ((float *)(uintptr_t)base)[i] = (float)v; break;
  case SHIM_BLAS_F16: ((uint16_t *)(uintptr_t)base)[i] = bp_f32_to_f16((float)v); break;
  default: ((uint16_t *)(uintptr_t)base)[i] = bp_f32_to_bf16((float)v); break;
  }
}

/* Bytes a stored rows x cols column-major matrix with ld spans, over the
 * batch. */
static uint64_t extent(int rows, int cols, int ld, int64_t stride, int batch,
                       int es) {
  if (rows == 0 || cols == 0)
    return 0;
  uint64_t one = ((uint64_t)(cols - 1) * (uint64_t)ld + (uint64_t)rows);
  return ((uint64_t)(batch - 1) * (uint64_t)(stride < 0 ? -stride : stride) + one) *
         (uint64_t)es;
}

bool shim_blas_check(const shim_blas_gemm_t *g, const char *fn,
                     bool (*mem_valid)(uint64_t, uint64_t)) {
  const int ar = g->trans_a ? g->k : g->m, ac = g->trans_a ? g->m : g->k;
  const int br = g->trans_b ? g->n : g->k, bc = g->trans_b ? g->k : g->n;
  const char *why = NULL;
  if (g->m < 0 || g->n < 0 || g->k < 0 || g->batch < 0)
    why = "negative dimension";
  else if (g->lda < (ar > 1 ? ar : 1))
    why = "lda below the rows of the stored A";
  else if (g->ldb < (br > 1 ? br : 1))
    why = "ldb below the rows of the stored B";
  else if (g->ldc < (g->m > 1 ? g->m : 1))
    why = "ldc below m";
  else if (g->stride_a < 0 || g->stride_b < 0 || g->stride_c < 0)
    why = "negative batch stride";
  if (why) {
    fprintf(stderr, "blas-shim: %s: %s (m %d n %d k %d lda %d ldb %d ldc %d "
            "trans %d%d)\n", fn, why, g->m, g->n, g->k, g->lda, g->ldb, g->ldc,
            g->trans_a, g->trans_b);
    return false;
  }
  if (g->m == 0 || g->n == 0 || g->batch == 0)
    return true;
  const int es = elem_size(g->dtype);
  const bool need_ab = g->k > 0 && g->alpha != 0.0;
  if ((need_ab && !mem_valid(g->a, extent(ar, ac, g->lda, g->stride_a, g->batch, es))) ||
      (need_ab && !mem_valid(g->b, extent(br, bc, g->ldb, g->stride_b, g->batch, es))) ||
      !mem_valid(g->c, extent(g->m, g->n, g->ldc, g->stride_c, g->batch, es))) {
    fprintf(stderr, "blas-shim: %s: an operand reaches outside its "
            "allocation\n", fn);
    return false;
  }
  return true;
}

void shim_blas_run(void *arg) {
  const shim_blas_gemm_t *g = arg;
  for (int b = 0; b < g->batch; b++) {
    const uint64_t es = (uint64_t)elem_size(g->dtype);
    const uint64_t A = g->a + (uint64_t)(b * g->stride_a) * es;
    const uint64_t B = g->b + (uint64_t)(b * g->stride_b) * es;
    const uint64_t C = g->c + (uint64_t)(b * g->stride_c) * es;
    for (int j = 0; j < g->n; j++)
      for (int i = 0; i < g->m; i++) {
        double acc = 0.0; /* f32 compute for f32/f16/bf16, rounded below */
        for (int p = 0; p < g->k; p++) {
          double x = load(g->dtype, A, g->trans_a ? (int64_t)i * g->lda + p
                                                   : (int64_t)p * g->lda + i);
          double y = load(g->dtype, B, g->trans_b ? (int64_t)p * g->ldb + j
                                                   : (int64_t)j * g->ldb + p);
          acc += x * y;
        }
        const int64_t ci = (int64_t)j * g->ldc + i;
        double v = g->alpha * acc;
        if (g->beta != 0.0) /* beta 0: C is not read (BLAS rule) */
          v += g->beta * load(g->dtype, C, ci);
        store(g->dtype, C, ci, v);
      }
  }
}
