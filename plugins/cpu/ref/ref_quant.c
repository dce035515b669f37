/*
 * ref/ref_quant.c — scalar reference of the quantized ops (ABI 1.5):
 * quantize / dequantize (block formats and i8 / u8 with scales), int8 /
 * uint8 GEMM (any mix of i8 and u8 operands) with exact int32 sums, fp8
 * GEMM (any mix of e4m3 and e5m2) summed in double, and GEMM / GEMV with
 * block-quantized weights.
 *
 * quantize, dequantize: one task per row (all dims but the last). qgemm,
 * qmatmul: one task per row of c (batch x m), each writing its n outputs;
 * qmatmul dequantizes one block of w at a time (never a whole copy) and
 * sums in double, rounded once per output.
 */
#include <math.h>
#include <string.h>

#include "ref.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fp8.h"
#include "plugins/cpu/quant_blocks.h"
#include "plugins/cpu/tensor.h"

static int act_dtype(bp_dtype_t dt) { return dt == BP_F32 || dt == BP_F16 || dt == BP_BF16; }
static int int8_dtype(bp_dtype_t dt) { return dt == BP_I8 || dt == BP_U8; }
static int fp8_dtype(bp_dtype_t dt) { return dt == BP_FP8_E4M3 || dt == BP_FP8_E5M2; }

static int64_t rows_of(const bp_plugin_tensor_t *t) {
  int64_t n = 1;
  for (int32_t d = 0; d + 1 < t->rank; d++) n *= t->shape[d];
  return n;
}

static int64_t row_len(const bp_plugin_tensor_t *t) { return t->rank ? t->shape[t->rank - 1] : 1; }

/* ---- quantize / dequantize ------------------------------------------------- */

/* f: the float side, q: the quantized side. */
static int64_t quant_tasks(const bp_quantize_args_t *a, const bp_plugin_tensor_t *f,
                           const bp_plugin_tensor_t *q) {
  if (!act_dtype(f->dtype) || a->x.rank != a->y.rank) return BP_ERR_INVALID_ARGUMENT;
  if (int8_dtype(q->dtype)) {
    if (a->scale.rank != a->y.rank || a->scale.dtype != BP_F32) return BP_ERR_INVALID_ARGUMENT;
  } else if (!BP_DTYPE_IS_BLOCK(q->dtype) || q->rank < 1 || row_len(q) % CPU_QB ||
             q->strides[q->rank - 1] != 1) {
    return BP_ERR_INVALID_ARGUMENT;
  }
  return rows_of(&a->y);
}

int64_t cpu_ref_quantize_tasks(const bp_quantize_args_t *a) { return quant_tasks(a, &a->x, &a->y); }
int64_t cpu_ref_dequantize_tasks(const bp_quantize_args_t *a) { return quant_tasks(a, &a->y, &a->x); }
int64_t cpu_ref_quantize_grain(const bp_quantize_args_t *a) { return cpu_ref_grain_for(row_len(&a->y) * 4); }
int64_t cpu_ref_dequantize_grain(const bp_quantize_args_t *a) { return cpu_ref_grain_for(row_len(&a->y) * 4); }

/* Row r of an i8 / u8 <-> float pair with per-element scales. */
static void int8_row(const bp_quantize_args_t *a, int64_t r, int to_int8) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y, *s = &a->scale;
  int32_t rk = y->rank, last = rk - 1;
  int64_t n = row_len(y);
  int64_t xo = cpu_row_offset(x, y->shape, rk, r), yo = cpu_row_offset(y, y->shape, rk, r);
  int64_t so = cpu_row_offset(s, y->shape, rk, r);
  int64_t xs = rk ? x->strides[last] : 0, ys = rk ? y->strides[last] : 0, ss = rk ? s->strides[last] : 0;
  const float *sc = cpu_tensor_base(s);
  for (int64_t i = 0; i < n; i++) {
    float scale = sc[so + i * ss];
    if (to_int8) {
      float v = (float)cpu_load(cpu_tensor_base(x), x->dtype, xo + i * xs) / scale;
      if (y->dtype == BP_U8) ((uint8_t *)cpu_tensor_base(y))[yo + i * ys] = cpu_sat_u8(v);
      else ((int8_t *)cpu_tensor_base(y))[yo + i * ys] = cpu_sat_i8(v);
    } else {
      float q = x->dtype == BP_U8 ? ((const uint8_t *)cpu_tensor_base(x))[xo + i * xs]
                                  : ((const int8_t *)cpu_tensor_base(x))[xo + i * xs];
      cpu_store(cpu_tensor_base(y), y->dtype, yo + i * ys, q * scale);
    }
  }
}

/* Row r of a float <-> block-dtype pair, one block at a time. */
static void block_row(const bp_quantize_args_t *a, int64_t r, int to_block) {
  const bp_plugin_tensor_t *f = to_block ? &a->x : &a->y, *q = to_block ? &a->y : &a->x;
  int32_t rk = q->rank;
  int64_t fo = cpu_row_offset(f, q->shape, rk, r), qo = cpu_row_offset(q, q->shape, rk, r);
  int64_t fs = f->strides[rk - 1], nb = row_len(q) / CPU_QB;
  float v[CPU_QB];
  for (int64_t b = 0; b < nb; b++) {
    uint8_t *blk = cpu_qblock(q, qo / CPU_QB + b);
    int64_t f0 = fo + b * CPU_QB * fs;
    if (to_block) {
      for (int j = 0; j < CPU_QB; j++) v[j] = (float)cpu_load(cpu_tensor_base(f), f->dtype, f0 + j * fs);
      if (q->dtype == BP_Q8_0) cpu_q8_0_quantize(v, blk);
      else cpu_q4_0_quantize(v, blk);
    } else {
      cpu_qblock_dequantize(q->dtype, blk, v);
      for (int j = 0; j < CPU_QB; j++) cpu_store(cpu_tensor_base(f), f->dtype, f0 + j * fs, v[j]);
    }
  }
}

bp_status_t cpu_ref_quantize_range(const bp_quantize_args_t *a, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; r++) {
    if (int8_dtype(a->y.dtype)) int8_row(a, r, 1);
    else block_row(a, r, 1);
  }
  return BP_OK;
}

bp_status_t cpu_ref_dequantize_range(const bp_quantize_args_t *a, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; r++) {
    if (int8_dtype(a->x.dtype)) int8_row(a, r, 0);
    else block_row(a, r, 0);
  }
  return BP_OK;
}

/* ---- int8 / uint8 GEMM ---------------------------------------------------------- */

int64_t cpu_ref_qgemm_tasks(const bp_qgemm_args_t *a) {
  const bp_plugin_tensor_t *c = &a->c;
  int fp8 = fp8_dtype(a->a.dtype) && fp8_dtype(a->b.dtype);
  int int8 = int8_dtype(a->a.dtype) && int8_dtype(a->b.dtype);
  if (a->a.rank < 2 || a->a.rank > 3 || c->rank != a->a.rank ||
      !(int8 ? c->dtype == BP_I32 || c->dtype == BP_F32 || c->dtype == BP_I8
             : fp8 && act_dtype(c->dtype)))
    return BP_ERR_INVALID_ARGUMENT;
  return rows_of(c);
}

int64_t cpu_ref_qgemm_grain(const bp_qgemm_args_t *a) {
  return cpu_ref_grain_for(a->a.shape[a->a.rank - 1] * a->c.shape[a->c.rank - 1]);
}

/* The f32 scale i of a [m] / [n] scale tensor, or 1 when absent. */
static float scale_at(const bp_plugin_tensor_t *s, int64_t i) {
  return s->rank ? ((const float *)cpu_tensor_base(s))[i * s->strides[0]] : 1.0f;
}

/* acc's value in c's dtype, by the rules of bp_qgemm_args_t. */
static void qgemm_store(const bp_qgemm_args_t *a, int64_t off, int32_t acc, int64_t i, int64_t j) {
  void *c = cpu_tensor_base(&a->c);
  if (a->c.dtype == BP_I32) {
    ((int32_t *)c)[off] = acc;
    return;
  }
  float v = (float)acc * scale_at(&a->scale_a, i) * scale_at(&a->scale_b, j);
  if (a->c.dtype == BP_F32) ((float *)c)[off] = v;
  else ((int8_t *)c)[off] = cpu_sat_i8(v / a->out_scale);
}

/* Byte i of an i8 or u8 operand as its integer value. */
static inline int32_t int8_at(const uint8_t *p, int64_t i, int is_u8) {
  return is_u8 ? (int32_t)p[i] : (int32_t)(int8_t)p[i];
}

/* fp8 rows: the decoded products summed in double (exact products; the
 * sum well inside the f32 tolerance), then (float)acc * sa * sb in f32,
 * rounded once to c's dtype. */
static void qgemm_fp8_range(const bp_qgemm_args_t *a, int64_t begin, int64_t end) {
  const bp_plugin_tensor_t *A = &a->a, *B = &a->b, *C = &a->c;
  int32_t r = A->rank, rb = B->rank;
  int64_t m = A->shape[r - 2], k = A->shape[r - 1], n = C->shape[r - 1];
  const uint8_t *pa = cpu_tensor_base(A), *pb = cpu_tensor_base(B);
  double da[256], db[256];
  for (int v = 0; v < 256; v++) {
    da[v] = cpu_fp8_decode((uint8_t)v, A->dtype == BP_FP8_E4M3 ? 3 : 2);
    db[v] = cpu_fp8_decode((uint8_t)v, B->dtype == BP_FP8_E4M3 ? 3 : 2);
  }
  for (int64_t row = begin; row < end; row++) {
    int64_t bi = row / m, i = row % m;
    const uint8_t *ar = pa + (r == 3 ? bi * A->strides[0] : 0) + i * A->strides[r - 2];
    const uint8_t *bm = pb + (rb == 3 ? bi * B->strides[0] : 0);
    int64_t co = (r == 3 ? bi * C->strides[0] : 0) + i * C->strides[r - 2];
    for (int64_t j = 0; j < n; j++) {
      double acc = 0;
      for (int64_t l = 0; l < k; l++)
        acc += da[ar[l * A->strides[r - 1]]] * db[bm[l * B->strides[rb - 2] + j * B->strides[rb - 1]]];
      float v = (float)acc * scale_at(&a->scale_a, i) * scale_at(&a->scale_b, j);
      cpu_store(cpu_tensor_base(C), C->dtype, co + j * C->strides[r - 1], v);
    }
  }
}

bp_status_t cpu_ref_qgemm_range(const bp_qgemm_args_t *a, int64_t begin, int64_t end) {
  if (fp8_dtype(a->a.dtype)) {
    qgemm_fp8_range(a, begin, end);
    return BP_OK;
  }
  const bp_plugin_tensor_t *A = &a->a, *B = &a->b, *C = &a->c;
  int32_t r = A->rank, rb = B->rank;
  int64_t m = A->shape[r - 2], k = A->shape[r - 1], n = C->shape[r - 1];
  const uint8_t *pa = cpu_tensor_base(A), *pb = cpu_tensor_base(B);
  int au8 = A->dtype == BP_U8, bu8 = B->dtype == BP_U8;
  for (int64_t row = begin; row < end; row++) {
    int64_t bi = row / m, i = row % m;
    const uint8_t *ar = pa + (r == 3 ? bi * A->strides[0] : 0) + i * A->strides[r - 2];
    const uint8_t *bm = pb + (rb == 3 ? bi * B->strides[0] : 0);
    int64_t co = (r == 3 ? bi * C->strides[0] : 0) + i * C->strides[r - 2];
    for (int64_t j = 0; j < n; j++) {
      uint32_t acc = 0; /* wraps modulo 2^32 like the fast paths */
      for (int64_t l = 0; l < k; l++)
        acc += (uint32_t)(int8_at(ar, l * A->strides[r - 1], au8) *
                          int8_at(bm, l * B->strides[rb - 2] + j * B->strides[rb - 1], bu8));
      qgemm_store(a, co + j * C->strides[r - 1], (int32_t)acc, i, j);
    }
  }
  return BP_OK;
}

/* ---- GEMM / GEMV with block-quantized weights ------------------------------------ */

int64_t cpu_ref_qmatmul_tasks(const bp_qmatmul_args_t *a) {
  const bp_plugin_tensor_t *w = &a->w;
  if (!act_dtype(a->a.dtype) || a->y.dtype != a->a.dtype || !BP_DTYPE_IS_BLOCK(w->dtype) ||
      w->rank != 2 || w->strides[1] != 1 || w->shape[1] % CPU_QB || a->a.rank < 2 ||
      a->a.rank > 3 || a->y.rank != a->a.rank)
    return BP_ERR_INVALID_ARGUMENT;
  return rows_of(&a->y);
}

int64_t cpu_ref_qmatmul_grain(const bp_qmatmul_args_t *a) {
  return cpu_ref_grain_for(a->w.shape[0] * a->w.shape[1]);
}

bp_status_t cpu_ref_qmatmul_range(const bp_qmatmul_args_t *a, int64_t begin, int64_t end) {
  const bp_plugin_tensor_t *A = &a->a, *W = &a->w, *Y = &a->y;
  int32_t r = A->rank;
  int64_t m = A->shape[r - 2], n = W->shape[0], nb = W->shape[1] / CPU_QB;
  const void *pa = cpu_tensor_base(A);
  float wv[CPU_QB];
  for (int64_t row = begin; row < end; row++) {
    int64_t bi = row / m, i = row % m;
    int64_t ao = (r == 3 ? bi * A->strides[0] : 0) + i * A->strides[r - 2], as = A->strides[r - 1];
    int64_t yo = (r == 3 ? bi * Y->strides[0] : 0) + i * Y->strides[r - 2];
    for (int64_t j = 0; j < n; j++) {
      double acc = 0;
      for (int64_t b = 0; b < nb; b++) {
        cpu_qblock_dequantize(W->dtype, cpu_qblock(W, j * W->strides[0] / CPU_QB + b), wv);
        for (int l = 0; l < CPU_QB; l++)
          acc += cpu_load(pa, A->dtype, ao + (b * CPU_QB + l) * as) * wv[l];
      }
      cpu_store(cpu_tensor_base(Y), Y->dtype, yo + j * Y->strides[r - 1], acc);
    }
  }
  return BP_OK;
}
