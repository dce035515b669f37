/*
 * blas_ref.c — see blas_ref.h.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test/shims/common/blas_ref.h"

static int elem_size(int dt) {
  return dt == SHIM_BLAS_F64 ? 8 : dt == SHIM_BLAS_F32 ? 4 : 2;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f,
           man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man) { /* subnormal */
    float f = ldexpf((float)man, -24);
    return sign ? -f : f;
  } else {
    bits = sign;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Round to nearest even, overflow to infinity, NaN kept. */
static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  float a = fabsf(f);
  if (isnan(f))
    return sign | 0x7e00;
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < 6.103515625e-05f) { /* subnormal: multiples of 2^-24 */
    float q = nearbyintf(a * 16777216.0f);
    return sign | (uint16_t)q;
  }
  uint32_t ax;
  memcpy(&ax, &a, 4);
  uint32_t mant = ax & 0x7fffff, exp = (ax >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13), rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    h++;
  return sign | (uint16_t)h;
}

static float bf16_to_float(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if (isnan(f))
    return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

static double load(int dt, uint64_t base, int64_t i) {
  switch (dt) {
  case SHIM_BLAS_F64: return ((const double *)(uintptr_t)base)[i];
  case SHIM_BLAS_F32: return ((const float *)(uintptr_t)base)[i];
  case SHIM_BLAS_F16: return half_to_float(((const uint16_t *)(uintptr_t)base)[i]);
  default: return bf16_to_float(((const uint16_t *)(uintptr_t)base)[i]);
  }
}

static void store(int dt, uint64_t base, int64_t i, double v) {
  switch (dt) {
  case SHIM_BLAS_F64: ((double *)(uintptr_t)base)[i] = v; break;
  case SHIM_BLAS_F32: ((float *)(uintptr_t)base)[i] = (float)v; break;
  case SHIM_BLAS_F16: ((uint16_t *)(uintptr_t)base)[i] = float_to_half((float)v); break;
  default: ((uint16_t *)(uintptr_t)base)[i] = float_to_bf16((float)v); break;
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
