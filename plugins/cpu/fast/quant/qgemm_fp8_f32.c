/*
 * fast/quant/qgemm_fp8_f32.c — the fp8 GEMM where the CPU has no AMX-BF16
 * (or BP_CPU_QGEMM_ISA names vnni / avx2): a and b decoded to f32 (exact,
 * one table lookup per code) into contiguous scratch, the f32 GEMM
 * (cpu_fast_gemm: the AVX-512 / AVX2 micro-kernels over the pool) into an
 * f32 scratch c, then (float)acc * sa * sb rounded once to c's dtype (any
 * strides). The f32 copies cost 4 bytes per element of a, b and c; when
 * they cannot be had, or the GEMM declines, nothing is written and the
 * reference runs the call.
 */
#include <stdlib.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/quant/quant.h"
#include "plugins/cpu/fp8.h"
#include "plugins/cpu/tensor.h"

/* A contiguous rank-3 f32 tensor at p, [d0, d1, d2], batch stride s0. */
static bp_plugin_tensor_t f32_tensor(float *p, int64_t d0, int64_t d1, int64_t d2, int64_t s0) {
  bp_plugin_tensor_t t = {.ptr = (uint64_t)(uintptr_t)p, .dtype = BP_F32, .rank = 3};
  t.shape[0] = d0, t.shape[1] = d1, t.shape[2] = d2;
  t.strides[0] = s0, t.strides[1] = d2, t.strides[2] = 1;
  return t;
}

static void decode_table(bp_dtype_t dt, float *lut) {
  for (int v = 0; v < 256; v++)
    lut[v] = (float)cpu_fp8_decode((uint8_t)v, dt == BP_FP8_E4M3 ? 3 : 2);
}

/* rows x cols of the fp8 matrix at p (strides sr, sc) into dst, row-major. */
static void decode(const uint8_t *p, int64_t sr, int64_t sc, int64_t rows, int64_t cols,
                   const float *lut, float *dst) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t l = 0; l < cols; l++) dst[i * cols + l] = lut[p[i * sr + l * sc]];
}

static float scale_at(const bp_plugin_tensor_t *s, int64_t i) {
  return s->rank ? ((const float *)cpu_tensor_base(s))[i * s->strides[0]] : 1.0f;
}

/* c = round((float)acc * sa * sb) from the f32 sums w [batch, m, n]. */
static void epilogue(const bp_qgemm_args_t *q, const float *w, int64_t batch, int64_t m,
                     int64_t n) {
  const bp_plugin_tensor_t *C = &q->c;
  int32_t r = C->rank;
  for (int64_t bi = 0; bi < batch; bi++)
    for (int64_t i = 0; i < m; i++) {
      float sa = scale_at(&q->scale_a, i);
      int64_t off = (r == 3 ? bi * C->strides[0] : 0) + i * C->strides[r - 2];
      for (int64_t j = 0; j < n; j++)
        cpu_store(cpu_tensor_base(C), C->dtype, off + j * C->strides[r - 1],
                  w[(bi * m + i) * n + j] * sa * scale_at(&q->scale_b, j));
    }
}

bp_status_t cpu_qgemm_fp8_f32(cpu_device_t *dev, const bp_qgemm_args_t *q) {
  const bp_plugin_tensor_t *A = &q->a, *B = &q->b, *C = &q->c;
  int32_t r = A->rank, rb = B->rank;
  int64_t batch = r == 3 ? A->shape[0] : 1, bb = rb == 3 ? batch : 1;
  int64_t m = A->shape[r - 2], k = A->shape[r - 1], n = C->shape[r - 1];
  if (batch == 0 || m == 0 || n == 0) return BP_OK;
  float *fa = malloc(sizeof(float) * (size_t)(batch * m * (k ? k : 1)));
  float *fb = malloc(sizeof(float) * (size_t)(bb * (k ? k : 1) * n));
  float *fc = malloc(sizeof(float) * (size_t)(batch * m * n));
  bp_status_t st = BP_ERR_UNIMPLEMENTED;
  if (fa && fb && fc) {
    float la[256], lb[256];
    decode_table(A->dtype, la);
    decode_table(B->dtype, lb);
    const uint8_t *pa = cpu_tensor_base(A), *pb = cpu_tensor_base(B);
    for (int64_t bi = 0; bi < batch; bi++)
      decode(pa + (r == 3 ? bi * A->strides[0] : 0), A->strides[r - 2], A->strides[r - 1], m, k, la,
             fa + bi * m * k);
    for (int64_t bi = 0; bi < bb; bi++)
      decode(pb + (rb == 3 ? bi * B->strides[0] : 0), B->strides[rb - 2], B->strides[rb - 1], k, n,
             lb, fb + bi * k * n);
    bp_gemm_args_t g = {.struct_size = sizeof g, .alpha = 1.0, .beta = 0.0};
    g.a = f32_tensor(fa, batch, m, k, m * k);
    g.b = f32_tensor(fb, batch, k, n, rb == 3 ? k * n : 0);
    g.c = f32_tensor(fc, batch, m, n, m * n);
    st = cpu_fast_gemm(dev, &g);
    if (st == BP_OK) epilogue(q, fc, batch, m, n);
  }
  free(fa), free(fb), free(fc);
  return st;
}
