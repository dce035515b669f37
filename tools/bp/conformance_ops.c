/*
 * conformance_ops.c — every op and dtype the device claims, against the
 * cpu-ref device, over a grid of shapes with the awkward ones in it: zero
 * and one sizes, primes, tall-skinny, large leading dimensions,
 * non-contiguous and transposed views, broadcasting, NaN / Inf / -0.0 /
 * denormals, causal attention with seq_q != seq_kv.
 *
 * A case is a function that builds its inputs from fixed seeds on one device
 * and runs the op, returning the output tensor. It runs once on the device
 * under test and once on the reference, and the outputs are compared.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

typedef struct cf_case {
  const char *name;
  bp_op_t op;
  int64_t p[12];   /* shape parameters, meaning per op */
  int variant;     /* op-specific: layout, transposes, sub-op */
  cf_fill_t fill;
  int64_t reduction; /* for the tolerance */
} cf_case_t;

typedef bp_status_t (*case_fn)(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out);

#define T(rank, ...) cf_tensor(r, dt, rank, (const int64_t[]){__VA_ARGS__}, CF_CONTIGUOUS, k->fill, __LINE__)

/* ---- BLAS -----------------------------------------------------------------*/

/* The epilogue (ABI 1.5) on one row-major C [m, n] (batch 1): a bias [n]
 * and GELU, with the residual add of beta = 1. */
static bp_status_t run_gemm_epilogue(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  int64_t m = k->p[0], n = k->p[1], kk = k->p[2];
  bp_tensor_t a = T(2, m, kk), b = T(2, kk, n), bias = T(1, n);
  *out = T(2, m, n);
  if (r->failed) return BP_ERR_INTERNAL;
  bp_gemm_epilogue_t ep = {sizeof ep, &bias, true, BP_UNARY_GELU};
  return bp_matmul_ex(r->s, 1.0, &a, &b, 1.0, out, &ep);
}

/* p: m n k batch ld_pad; variant bits: 1 trans_a, 2 trans_b, 4 col-major,
 * 8 beta = 0 with NaN in C, 16 alpha/beta non-trivial, 32 the epilogue
 * (run_gemm_epilogue). */
static bp_status_t run_gemm(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  if (k->variant & 32) return run_gemm_epilogue(r, k, dt, out);
  int64_t m = k->p[0], n = k->p[1], kk = k->p[2], batch = k->p[3], pad = k->p[4];
  bool ta = k->variant & 1, tb = k->variant & 2, col = k->variant & 4;
  int64_t ar = ta ? kk : m, ac = ta ? m : kk, br = tb ? n : kk, bc = tb ? kk : n;
  /* CBLAS wants every leading dimension >= 1, even for empty matrices. */
  int64_t lda = (col ? ar : ac) + pad, ldb = (col ? br : bc) + pad, ldc = (col ? m : n) + pad;
  lda += lda == 0, ldb += ldb == 0, ldc += ldc == 0;
  int64_t sa = lda * (col ? ac : ar), sb = ldb * (col ? bc : br), sc = ldc * (col ? n : m);
  int64_t na = sa * batch + 1, nb = sb * batch + 1, nc = sc * batch + 1;
  bp_tensor_t a = cf_tensor(r, dt, 1, &na, CF_CONTIGUOUS, k->fill, 1);
  bp_tensor_t b = cf_tensor(r, dt, 1, &nb, CF_CONTIGUOUS, k->fill, 2);
  *out = cf_tensor(r, dt, 1, &nc, CF_CONTIGUOUS, (k->variant & 8) ? CF_FILL_NAN : CF_FILL_NORMAL, 3);
  if (r->failed) return BP_ERR_INTERNAL;
  double alpha = (k->variant & 16) ? -0.75 : 1.0, beta = (k->variant & 8) ? 0.0 : (k->variant & 16) ? 0.5 : 1.0;
  return bp_gemm_strided_batched(r->s, dt, col ? BP_COL_MAJOR : BP_ROW_MAJOR, ta ? BP_TRANS : BP_NO_TRANS,
                                 tb ? BP_TRANS : BP_NO_TRANS, m, n, kk, alpha, a.buffer, 0, lda, sa,
                                 b.buffer, 0, ldb, sb, beta, out->buffer, 0, ldc, sc, batch);
}

/* p: m n; variant 1: transposed. */
static bp_status_t run_gemv(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  int64_t m = k->p[0], n = k->p[1], lda = n + 3;
  bool t = k->variant & 1;
  int64_t na = m * lda + 1, nx = (t ? m : n) * 2 + 1, ny = (t ? n : m) + 1;
  bp_tensor_t a = cf_tensor(r, dt, 1, &na, CF_CONTIGUOUS, k->fill, 1);
  bp_tensor_t x = cf_tensor(r, dt, 1, &nx, CF_CONTIGUOUS, k->fill, 2);
  *out = cf_tensor(r, dt, 1, &ny, CF_CONTIGUOUS, CF_FILL_NORMAL, 3);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_gemv(r->s, dt, BP_ROW_MAJOR, t ? BP_TRANS : BP_NO_TRANS, m, n, 1.25, a.buffer, 0, lda,
                 x.buffer, 0, 2, 0.5, out->buffer, 0, 1);
}

/* ---- DNN ------------------------------------------------------------------*/

/* Marks w's buffer constant after a call with other weights in it under an
 * earlier mark, so that a plugin which keeps a prepared form of w past the
 * id the core gave it (bp_conv2d_args_t.w_const_id) computes the final call
 * with stale weights: w's contents rotated by one element, marked, a call
 * made; then the mark cleared, the contents put back, marked again. */
static bp_status_t conv2d_after_change(cf_run_t *r, const bp_conv2d_params_t *cp,
                                       const bp_tensor_t *x, const bp_tensor_t *w,
                                       const bp_tensor_t *bias, const bp_tensor_t *out) {
  uint64_t es = bp_dtype_size(w->dtype), n = (uint64_t)bp_tensor_numel(w), bytes = n * es;
  unsigned char *orig = malloc(2 * bytes), *moved = orig + bytes;
  if (!orig) return BP_ERR_OUT_OF_MEMORY;
  bp_status_t st = bp_buffer_read(w->buffer, w->offset, orig, bytes);
  memcpy(moved, orig + es, bytes - es);
  memcpy(moved + bytes - es, orig, es);
  if (st == BP_OK) st = bp_buffer_write(w->buffer, w->offset, moved, bytes);
  if (st == BP_OK) st = bp_buffer_set_constant(w->buffer, true);
  if (st == BP_OK) st = bp_conv2d(r->s, cp, x, w, bias, out);
  if (st == BP_OK) st = bp_stream_synchronize(r->s);
  if (st == BP_OK) st = bp_buffer_set_constant(w->buffer, false);
  if (st == BP_OK) st = bp_buffer_write(w->buffer, w->offset, orig, bytes);
  if (st == BP_OK) st = bp_buffer_set_constant(w->buffer, true);
  free(orig);
  return st;
}

/* p: N C H W K R S stride pad dil groups bias; variant 1: w in a constant
 * buffer whose contents changed under an earlier mark */
static bp_status_t run_conv2d(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  const int64_t *p = k->p;
  bp_conv2d_params_t cp = {sizeof cp, (int)p[7], (int)p[7], (int)p[8], (int)p[8], (int)p[9], (int)p[9], (int)p[10]};
  int64_t P = (p[2] + 2 * p[8] - p[9] * (p[5] - 1) - 1) / p[7] + 1;
  int64_t Q = (p[3] + 2 * p[8] - p[9] * (p[6] - 1) - 1) / p[7] + 1;
  bp_tensor_t x = T(4, p[0], p[1], p[2], p[3]);
  bp_tensor_t w = T(4, p[4], p[1] / p[10], p[5], p[6]);
  bp_tensor_t bias = T(1, p[4]);
  *out = T(4, p[0], p[4], P, Q);
  if (r->failed) return BP_ERR_INTERNAL;
  bp_status_t st = BP_OK;
  if (k->variant & 1) st = conv2d_after_change(r, &cp, &x, &w, p[11] ? &bias : NULL, out);
  return st != BP_OK ? st : bp_conv2d(r->s, &cp, &x, &w, p[11] ? &bias : NULL, out);
}

/* p: N C H W kernel stride pad; variant: 0 max, 1 avg, 2 avg counting pad */
static bp_status_t run_pool2d(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  const int64_t *p = k->p;
  bp_pool2d_params_t pp = {sizeof pp, k->variant ? BP_POOL_AVG : BP_POOL_MAX, (int)p[4], (int)p[4],
                           (int)p[5], (int)p[5], (int)p[6], (int)p[6], k->variant == 2};
  int64_t P = (p[2] + 2 * p[6] - p[4]) / p[5] + 1, Q = (p[3] + 2 * p[6] - p[4]) / p[5] + 1;
  bp_tensor_t x = T(4, p[0], p[1], p[2], p[3]);
  *out = T(4, p[0], p[1], P, Q);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_pool2d(r->s, &pp, &x, out);
}

static bp_status_t run_batch_norm(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  const int64_t *p = k->p;
  bp_tensor_t x = T(4, p[0], p[1], p[2], p[3]);
  bp_tensor_t mean = T(1, p[1]), scale = T(1, p[1]), bias = T(1, p[1]);
  bp_tensor_t var = cf_tensor(r, dt, 1, &p[1], CF_CONTIGUOUS, CF_FILL_POSITIVE, 9);
  *out = T(4, p[0], p[1], p[2], p[3]);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_batch_norm(r->s, &x, &mean, &var, &scale, &bias, 1e-5, out);
}

/* p: rows cols; variant: 0 layer norm, 1 layer norm without affine, 2 rms,
 * 3 rms without gamma; the input is a strided view. */
static bp_status_t run_norm(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  int64_t shape[2] = {k->p[0], k->p[1]};
  bp_tensor_t x = cf_tensor(r, dt, 2, shape, CF_STRIDED, k->fill, 1);
  bp_tensor_t g = T(1, k->p[1]), b = T(1, k->p[1]);
  *out = T(2, k->p[0], k->p[1]);
  if (r->failed) return BP_ERR_INTERNAL;
  bool affine = !(k->variant & 1);
  if (k->variant < 2) return bp_layer_norm(r->s, &x, affine ? &g : NULL, affine ? &b : NULL, 1e-5, out);
  return bp_rms_norm(r->s, &x, affine ? &g : NULL, 1e-6, out);
}

/* p: d0 d1 d2 axis log */
static bp_status_t run_softmax(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  bp_tensor_t x = cf_tensor(r, dt, 3, k->p, (cf_layout_t)k->variant, k->fill, 1);
  *out = T(3, k->p[0], k->p[1], k->p[2]);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_softmax(r->s, &x, (int32_t)k->p[3], k->p[4] != 0, out);
}

/* p: B Hq Hkv Sq Skv D Dv causal */
static bp_status_t run_attention(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  const int64_t *p = k->p;
  bp_tensor_t q = T(4, p[0], p[1], p[3], p[5]);
  bp_tensor_t kt = T(4, p[0], p[2], p[4], p[5]);
  bp_tensor_t v = T(4, p[0], p[2], p[4], p[6]);
  *out = T(4, p[0], p[1], p[3], p[6]);
  if (r->failed) return BP_ERR_INTERNAL;
  if (!k->variant) return bp_attention(r->s, &q, &kt, &v, 0.0, p[7] != 0, out);
  /* the masks of ABI 1.5: variant bits are their BP_FEATURE_ATTENTION_* bits */
  bp_tensor_t lens = cf_tensor(r, BP_I32, 1, &p[0], CF_CONTIGUOUS, CF_FILL_NORMAL, 7);
  bp_tensor_t bias = T(2, p[3], p[4]);
  if (r->failed) return BP_ERR_INTERNAL;
  bp_status_t st = (k->variant & BP_FEATURE_ATTENTION_KV_LENS) ? bp_fill(r->s, &lens, (double)(p[4] - 2)) : BP_OK;
  bp_attention_options_t o = {.struct_size = sizeof o, .causal = p[7] != 0,
                              .window = (k->variant & BP_FEATURE_ATTENTION_WINDOW) ? 3 : 0,
                              .kv_lens = (k->variant & BP_FEATURE_ATTENTION_KV_LENS) ? &lens : NULL,
                              .bias = (k->variant & BP_FEATURE_ATTENTION_BIAS) ? &bias : NULL,
                              .alibi = (k->variant & BP_FEATURE_ATTENTION_ALIBI) != 0};
  return st == BP_OK ? bp_attention_ex(r->s, &q, &kt, &v, &o, out) : st;
}

/* p: n0 n1; variant 1: AdamW. Returns the first parameter tensor. */
static bp_status_t run_adam(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  bp_tensor_t prm[2], g[2], m[2], v[2];
  for (int i = 0; i < 2; i++) {
    prm[i] = T(1, k->p[i]);
    g[i] = T(1, k->p[i]);
    m[i] = T(1, k->p[i]);
    v[i] = cf_tensor(r, dt, 1, &k->p[i], CF_CONTIGUOUS, CF_FILL_POSITIVE, 40 + i);
  }
  if (r->failed) return BP_ERR_INTERNAL;
  bp_adam_params_t ap = {sizeof ap, 1e-2, 0.9, 0.999, 1e-8, 0.01, 3, k->variant == 1};
  *out = prm[1];
  return bp_adam(r->s, &ap, 2, prm, g, m, v);
}

/* ---- elementwise and reductions -----------------------------------------*/

/* p: rows cols; variant: the unary op. Input is a transposed view. */
static bp_status_t run_unary(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  bp_tensor_t x = cf_tensor(r, dt, 2, k->p, CF_TRANSPOSED, k->fill, 1);
  *out = T(2, k->p[0], k->p[1]);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_unary(r->s, (bp_unary_op_t)k->variant, &x, out);
}

/* p: rows cols; variant: the binary op. a [rows,1] broadcasts against a
 * strided b [rows, cols]... and a row vector [cols]. */
static bp_status_t run_binary(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  int64_t col[2] = {k->p[0], 1};
  bp_tensor_t a = cf_tensor(r, dt, 2, col, CF_CONTIGUOUS, k->fill, 1);
  bp_tensor_t b = cf_tensor(r, dt, 1, &k->p[1], CF_STRIDED, k->fill, 2);
  *out = T(2, k->p[0], k->p[1]);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_binary(r->s, (bp_binary_op_t)k->variant, &a, &b, out);
}

/* p: d0 d1 d2 axis; variant: the reduce op. */
static bp_status_t run_reduce(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  bp_tensor_t x = cf_tensor(r, dt, 3, k->p, CF_STRIDED, k->fill, 1);
  int64_t shape[3] = {k->p[0], k->p[1], k->p[2]};
  shape[k->p[3]] = 1;
  bool arg = k->variant == BP_REDUCE_ARGMAX;
  *out = cf_tensor(r, arg ? BP_I64 : dt, 3, shape, CF_CONTIGUOUS, CF_FILL_NORMAL, 3);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_reduce(r->s, (bp_reduce_op_t)k->variant, &x, (int32_t)k->p[3], out);
}

/* ---- data -------------------------------------------------------------------*/

static bp_status_t run_fill(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  int64_t shape[2] = {k->p[0], k->p[1]};
  *out = cf_tensor(r, dt, 2, shape, CF_STRIDED, CF_FILL_NORMAL, 1);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_fill(r->s, out, k->variant ? -2.75 : 3.5);
}

/* A permuted copy: y = x viewed with axes (2, 0, 1). */
static bp_status_t run_copy(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  bp_tensor_t x = cf_tensor(r, dt, 3, k->p, CF_CONTIGUOUS, k->fill, 1), xv;
  bp_tensor_permute(&x, (const int32_t[]){2, 0, 1}, &xv);
  *out = T(3, k->p[2], k->p[0], k->p[1]);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_copy(r->s, &xv, out);
}

/* dt is the source; variant is the target dtype. */
static bp_status_t run_cast(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  bp_tensor_t x = cf_tensor(r, dt, 2, k->p, CF_TRANSPOSED, k->fill, 1);
  *out = cf_tensor(r, (bp_dtype_t)k->variant, 2, k->p, CF_CONTIGUOUS, CF_FILL_SMALL_INT, 2);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_cast(r->s, &x, out);
}

static bp_status_t run_random(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  *out = cf_tensor(r, dt, 2, k->p, CF_STRIDED, CF_FILL_NAN, 1);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_random(r->s, k->variant ? BP_RANDOM_NORMAL : BP_RANDOM_UNIFORM, 1234, 77, k->variant ? 0.5 : -1,
                   k->variant ? 2 : 3, out);
}

/* ---- model ops (ABI 1.5) ---------------------------------------------------*/

/* p: vocab dim n_idx; variant: index dtype. Small integer indices, some
 * outside the table (those give zeros). */
static bp_status_t run_gather(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  bp_tensor_t table = cf_tensor(r, dt, 2, k->p, CF_STRIDED, k->fill, 1);
  bp_tensor_t idx = cf_tensor(r, (bp_dtype_t)k->variant, 1, &k->p[2], CF_CONTIGUOUS, CF_FILL_SMALL_INT, 2);
  *out = T(2, k->p[2], k->p[1]);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_gather(r->s, &table, &idx, 0, out);
}

/* p: rows cols; variant 0: from -3 by 0.25, 1: from 7 by -1. */
static bp_status_t run_arange(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  *out = cf_tensor(r, dt, 2, k->p, CF_STRIDED, CF_FILL_SMALL_INT, 1);
  if (r->failed) return BP_ERR_INTERNAL;
  return k->variant ? bp_arange(r->s, 7, -1, out) : bp_arange(r->s, -3, 0.25, out);
}

/* p: rows cols; variant: op + 16 for the scalar first. a is transposed. */
static bp_status_t run_binary_scalar(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  bp_tensor_t a = cf_tensor(r, dt, 2, k->p, CF_TRANSPOSED, k->fill, 1);
  *out = T(2, k->p[0], k->p[1]);
  if (r->failed) return BP_ERR_INTERNAL;
  bp_binary_op_t op = (bp_binary_op_t)(k->variant & 15);
  return k->variant & 16 ? bp_binary_scalar_first(r->s, op, 1.7, &a, out)
                         : bp_binary_scalar(r->s, op, &a, 1.7, out);
}

/* p: rows cols; variant: kind. gate and up are the halves of one packed
 * [rows, 2 cols] row. */
static bp_status_t run_glu(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  int64_t packed[2] = {k->p[0], 2 * k->p[1]};
  bp_tensor_t x = cf_tensor(r, dt, 2, packed, CF_CONTIGUOUS, k->fill, 1), g, u;
  *out = T(2, k->p[0], k->p[1]);
  if (r->failed) return BP_ERR_INTERNAL;
  bp_tensor_narrow(&x, 1, 0, k->p[1], &g);
  bp_tensor_narrow(&x, 1, k->p[1], k->p[1], &u);
  return bp_glu(r->s, (bp_glu_kind_t)k->variant, &g, &u, out);
}

/* p: batch seq heads dim rotary_dim; variant: mode. Positions are an
 * offset of 5. */
static bp_status_t run_rope(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  bp_tensor_t x = cf_tensor(r, dt, 4, k->p, CF_STRIDED, k->fill, 1);
  *out = T(4, k->p[0], k->p[1], k->p[2], k->p[3]);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_rope(r->s, (bp_rope_mode_t)k->variant, (int32_t)k->p[4], 10000.0, 5, NULL, &x, out);
}

/* ---- quantized ops (ABI 1.5) -----------------------------------------------*/

/* p: rows cols (a multiple of 32); dt: the quantized dtype. Quantize an f32
 * [rows, cols] (i8 / u8: by a per-row scale) and dequantize it back to f32, so
 * the output compares as numbers; the quantize and dequantize cases share
 * it, each claimed by its own op. */
static bp_status_t run_quant_roundtrip(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  bp_dtype_t f = BP_F32;
  bp_tensor_t x = cf_tensor(r, f, 2, k->p, CF_TRANSPOSED, k->fill, 1), q = T(2, k->p[0], k->p[1]);
  bp_tensor_t sc = cf_tensor(r, f, 2, (const int64_t[]){k->p[0], 1}, CF_CONTIGUOUS, CF_FILL_POSITIVE, 2);
  *out = cf_tensor(r, f, 2, k->p, CF_CONTIGUOUS, CF_FILL_NAN, 3);
  if (r->failed) return BP_ERR_INTERNAL;
  const bp_tensor_t *s = dt == BP_I8 || dt == BP_U8 ? &sc : NULL;
  bp_status_t st = bp_quantize(r->s, &x, s, &q);
  return st != BP_OK ? st : bp_dequantize(r->s, &q, s, out);
}

/* fp8 (variant + 16): variant & 3: 0 f32 c unscaled, 1 f32, 2 f16, 3 bf16
 * c with per-row / per-column scales; + 4: a e5m2 (else e4m3), + 8: b e5m2
 * (the case runs as a's format; the device claims both). b transposed. */
static bp_status_t run_qgemm_fp8(cf_run_t *r, const cf_case_t *k, bp_tensor_t *out) {
  int64_t m = k->p[0], n = k->p[1], kk = k->p[2], bt = k->p[3];
  int v = k->variant & 3;
  bp_dtype_t cd = v <= 1 ? BP_F32 : v == 2 ? BP_F16 : BP_BF16;
  bp_dtype_t ad = (k->variant & 4) ? BP_FP8_E5M2 : BP_FP8_E4M3, bd = (k->variant & 8) ? BP_FP8_E5M2 : BP_FP8_E4M3;
  bp_tensor_t a = cf_tensor(r, ad, 3, (const int64_t[]){bt, m, kk}, CF_CONTIGUOUS, k->fill, 3);
  bp_tensor_t b = cf_tensor(r, bd, 2, (const int64_t[]){kk, n}, CF_TRANSPOSED, k->fill, 4);
  bp_tensor_t sa = cf_tensor(r, BP_F32, 1, &m, CF_CONTIGUOUS, CF_FILL_POSITIVE, 5);
  bp_tensor_t sb = cf_tensor(r, BP_F32, 1, &n, CF_CONTIGUOUS, CF_FILL_POSITIVE, 6);
  *out = cf_tensor(r, cd, 3, (const int64_t[]){bt, m, n}, CF_CONTIGUOUS, CF_FILL_NAN, 7);
  if (r->failed) return BP_ERR_INTERNAL;
  return bp_qgemm(r->s, &a, &b, v ? &sa : NULL, v ? &sb : NULL, 1.0f, out);
}

/* p: m n k batch; variant & 3: 0 i32 c, 1 f32 c with per-row / per-column
 * scales, 2 requantized i8 c; + 4: a u8, + 8: b u8 (a u8 dt with neither
 * runs a u8 a, so a probe of u8 runs u8). b is transposed (strides).
 * + 16: fp8 (run_qgemm_fp8). */
static bp_status_t run_qgemm(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  if (k->variant & 16) return run_qgemm_fp8(r, k, out);
  int64_t m = k->p[0], n = k->p[1], kk = k->p[2], bt = k->p[3];
  bp_dtype_t cd = (k->variant & 3) == 0 ? BP_I32 : (k->variant & 3) == 1 ? BP_F32 : BP_I8;
  bool u8 = dt == BP_U8, b_u8 = u8 && (k->variant & 8), a_u8 = u8 && ((k->variant & 4) || !b_u8);
  bp_tensor_t a = cf_tensor(r, a_u8 ? BP_U8 : BP_I8, 3, (const int64_t[]){bt, m, kk}, CF_CONTIGUOUS, k->fill, 3);
  bp_tensor_t b = cf_tensor(r, b_u8 ? BP_U8 : BP_I8, 2, (const int64_t[]){kk, n}, CF_TRANSPOSED, k->fill, 4);
  bp_tensor_t sa = cf_tensor(r, BP_F32, 1, &m, CF_CONTIGUOUS, CF_FILL_POSITIVE, 5);
  bp_tensor_t sb = cf_tensor(r, BP_F32, 1, &n, CF_CONTIGUOUS, CF_FILL_POSITIVE, 6);
  *out = cf_tensor(r, cd, 3, (const int64_t[]){bt, m, n}, CF_CONTIGUOUS, CF_FILL_SMALL_INT, 7);
  if (r->failed) return BP_ERR_INTERNAL;
  bool scaled = (k->variant & 3) != 0;
  return bp_qgemm(r->s, &a, &b, scaled ? &sa : NULL, scaled ? &sb : NULL, 2.5f, out);
}

/* p: batch m n k (k a multiple of 32); dt: w's block dtype. w is quantized
 * from f32 on the device first. */
static bp_status_t run_qmatmul(cf_run_t *r, const cf_case_t *k, bp_dtype_t dt, bp_tensor_t *out) {
  int64_t bt = k->p[0], m = k->p[1], n = k->p[2], kk = k->p[3];
  bp_tensor_t a = cf_tensor(r, BP_F32, 3, (const int64_t[]){bt, m, kk}, CF_STRIDED, k->fill, 1);
  bp_tensor_t wf = cf_tensor(r, BP_F32, 2, (const int64_t[]){n, kk}, CF_CONTIGUOUS, k->fill, 2);
  bp_tensor_t w = T(2, n, kk);
  *out = cf_tensor(r, BP_F32, 3, (const int64_t[]){bt, m, n}, CF_CONTIGUOUS, CF_FILL_NAN, 3);
  if (r->failed) return BP_ERR_INTERNAL;
  bp_status_t st = bp_quantize(r->s, &wf, NULL, &w);
  return st != BP_OK ? st : bp_qmatmul(r->s, &a, &w, out);
}

static const case_fn case_fns[BP_OP_COUNT] = {
    [BP_OP_GEMM] = run_gemm,       [BP_OP_GEMV] = run_gemv,         [BP_OP_CONV2D] = run_conv2d,
    [BP_OP_POOL2D] = run_pool2d,   [BP_OP_BATCH_NORM] = run_batch_norm, [BP_OP_LAYER_NORM] = run_norm,
    [BP_OP_RMS_NORM] = run_norm,   [BP_OP_SOFTMAX] = run_softmax,   [BP_OP_ATTENTION] = run_attention,
    [BP_OP_ADAM] = run_adam,       [BP_OP_UNARY] = run_unary,       [BP_OP_BINARY] = run_binary,
    [BP_OP_REDUCE] = run_reduce,   [BP_OP_FILL] = run_fill,         [BP_OP_COPY] = run_copy,
    [BP_OP_CAST] = run_cast,       [BP_OP_RANDOM] = run_random,     [BP_OP_GATHER] = run_gather,
    [BP_OP_ARANGE] = run_arange,   [BP_OP_BINARY_SCALAR] = run_binary_scalar, [BP_OP_GLU] = run_glu,
    [BP_OP_ROPE] = run_rope,       [BP_OP_QUANTIZE] = run_quant_roundtrip,
    [BP_OP_DEQUANTIZE] = run_quant_roundtrip, [BP_OP_QGEMM] = run_qgemm, [BP_OP_QMATMUL] = run_qmatmul,
};

#include "conformance_grid.inc"

/* ---- running a case on both devices --------------------------------------*/

/* Ops whose grid runs every dtype, not only the float ones. */
static bool every_dtype_op(bp_op_t op) {
  return op == BP_OP_FILL || op == BP_OP_COPY || op == BP_OP_CAST || op == BP_OP_GATHER || op == BP_OP_ARANGE;
}

/* The dtypes a quantized op's grid runs (its quantized operand's; qgemm's
 * u8 cases are those with a u8 a or b). */
static const bp_dtype_t quant_types[] = {BP_I8, BP_U8, BP_FP8_E4M3, BP_FP8_E5M2, BP_Q8_0, BP_Q4_0};

static bool quant_op(bp_op_t op) {
  return op == BP_OP_QUANTIZE || op == BP_OP_DEQUANTIZE || op == BP_OP_QGEMM || op == BP_OP_QMATMUL;
}

static bool quant_type_of(bp_op_t op, bp_dtype_t dt) {
  if (op == BP_OP_QGEMM) return dt == BP_I8 || dt == BP_U8 || dt == BP_FP8_E4M3 || dt == BP_FP8_E5M2;
  if (op == BP_OP_QMATMUL) return BP_DTYPE_IS_BLOCK(dt);
  return dt == BP_I8 || dt == BP_U8 || BP_DTYPE_IS_BLOCK(dt);
}

/* An fp8 qgemm case's a format (run_qgemm_fp8). */
static bp_dtype_t fp8_case_type(const cf_case_t *k) {
  return (k->variant & 4) ? BP_FP8_E5M2 : BP_FP8_E4M3;
}

/* Whether case k runs with quantized dtype dt: a qgemm case by its
 * operands' bits (i8 x i8 is i8's, any u8 operand u8's). */
static bool quant_case_type(const cf_case_t *k, bp_dtype_t dt) {
  if (k->op == BP_OP_QGEMM && (k->variant & 16)) return dt == fp8_case_type(k);
  if (k->op == BP_OP_QGEMM) return dt == ((k->variant & 12) ? BP_U8 : BP_I8);
  return quant_type_of(k->op, dt);
}

static bool exact_op(const cf_case_t *k) {
  /* one rounding rule everywhere but qmatmul's and fp8 qgemm's f32 sums */
  if (quant_op(k->op)) return k->op != BP_OP_QMATMUL && !(k->op == BP_OP_QGEMM && (k->variant & 16));
  return k->op == BP_OP_FILL || k->op == BP_OP_COPY || k->op == BP_OP_CAST || k->op == BP_OP_RANDOM ||
         k->op == BP_OP_GATHER || k->op == BP_OP_ARANGE ||
         (k->op == BP_OP_REDUCE && k->variant == BP_REDUCE_ARGMAX);
}

/* qmatmul's bound (docs/ops.md) admits activations rounded to int8 per
 * block of 32, (1 + 2^-10) sum_b amax_b(a) / 254 sum_{l in b} |w_l| +
 * 2^-12 sum_l |a_l w_l|, which grows with k, not with sqrt(k) as f32 sums
 * do. For the standard normal fill a block's amax stays under 4.5 and a
 * weight's mean magnitude is sqrt(2 / pi), so the bound stays under
 * 0.0144 k; normalised by the largest output, of order sqrt(k), that is
 * 0.0144 sqrt(k). */
static double qmatmul_tolerance(int64_t k) {
  return (1 + 0x1p-10) * (4.5 / 254 * 0.7979 + 0x1p-12) * sqrt((double)(k > 1 ? k : 1));
}

/* Elementwise transcendental functions are allowed a few ulp of their own. */
static double case_tolerance(const cf_case_t *k, bp_dtype_t dt) {
  if (exact_op(k)) return 0;
  /* an fp8 qgemm rounds to its c's dtype */
  if (k->op == BP_OP_QGEMM) dt = (k->variant & 3) == 2 ? BP_F16 : (k->variant & 3) == 3 ? BP_BF16 : BP_F32;
  if (k->op == BP_OP_QMATMUL) return qmatmul_tolerance(k->reduction);
  double tol = cf_tolerance(dt, k->reduction);
  if (k->op == BP_OP_UNARY || k->op == BP_OP_BINARY || k->op == BP_OP_SOFTMAX || k->op == BP_OP_ATTENTION ||
      k->op == BP_OP_LAYER_NORM || k->op == BP_OP_RMS_NORM || k->op == BP_OP_ADAM || k->op == BP_OP_GLU ||
      k->op == BP_OP_ROPE || k->op == BP_OP_BINARY_SCALAR)
    tol *= 8;
  return tol;
}

static double *run_on(cf_child_t *c, bool ref, const cf_case_t *k, bp_dtype_t dt, int64_t *n,
                      bp_status_t *st, char *err, size_t size) {
  cf_run_t r;
  cf_run_init(&r, ref ? c->ref : c->dev, ref ? c->ref_s : c->dev_s);
  bp_tensor_t out;
  *st = case_fns[k->op](&r, k, dt, &out);
  double *v = NULL;
  if (r.failed) {
    snprintf(err, size, "%s: %s", ref ? "reference" : "device", r.err);
  } else if (*st != BP_OK) {
    snprintf(err, size, "%s: %s", bp_status_name(*st), bp_last_error());
  } else if (bp_stream_synchronize(r.s) != BP_OK || !(v = cf_read(&r, &out, n))) {
    snprintf(err, size, "%s: synchronize or read failed: %s", ref ? "reference" : "device", bp_last_error());
    *st = BP_ERR_INTERNAL;
  }
  cf_run_free(&r);
  return v;
}

static void run_case(cf_child_t *c, const cf_case_t *k, bp_dtype_t dt) {
  char name[160], err[512] = "";
  snprintf(name, sizeof name, "%s %s %s", bp_op_name(k->op), bp_dtype_name(dt), k->name);
  cf_begin(c, "ops", name);
  bool supported = false;
  bp_device_supports(c->dev, k->op, dt, &supported);
  /* an fp8 qgemm needs b's format claimed too */
  if (k->op == BP_OP_QGEMM && (k->variant & 16) && supported)
    bp_device_supports(c->dev, k->op, (k->variant & 8) ? BP_FP8_E5M2 : BP_FP8_E4M3, &supported);
  if (k->op == BP_OP_CAST && supported) bp_device_supports(c->dev, k->op, (bp_dtype_t)k->variant, &supported);
  /* gelu_tanh (ABI 1.5) is claimed by a feature bit of its own */
  if (k->op == BP_OP_UNARY && k->variant == BP_UNARY_GELU_TANH &&
      !(c->entry.info.op_features[BP_OP_UNARY] & BP_FEATURE_UNARY_GELU_TANH))
    supported = false;
  /* attention's masks (ABI 1.5): the variant's bits are the features */
  if (k->op == BP_OP_ATTENTION && (c->entry.info.op_features[BP_OP_ATTENTION] & k->variant) != (uint32_t)k->variant)
    supported = false;
  if (!supported) {
    cf_end(c, CF_UNSUPPORTED, "not claimed by the device");
    return;
  }
  int64_t n = 0, nref = 0;
  bp_status_t st, st_ref;
  double *got = run_on(c, false, k, dt, &n, &st, err, sizeof err);
  if (!got) {
    cf_end(c, CF_FAIL, "%s%s", err, st == BP_ERR_UNSUPPORTED ? " (claimed in op_dtypes but refused)" : "");
    return;
  }
  double *ref = run_on(c, true, k, dt, &nref, &st_ref, err, sizeof err);
  if (!ref) {
    cf_end(c, CF_SKIP, "reference could not run it: %s", err);
  } else {
    char detail[256];
    bool ok = n == nref && cf_compare(got, ref, n, case_tolerance(k, dt), detail, sizeof detail);
    cf_end(c, ok ? CF_PASS : CF_FAIL, "%s (tolerance %.2g)", detail, case_tolerance(k, dt));
  }
  free(got);
  free(ref);
}

static const bp_dtype_t float_types[] = {BP_F32, BP_F16, BP_BF16, BP_F64};

bool cf_dtype_in_grid(bp_op_t op, bp_dtype_t dt) {
  /* a block dtype's tensor needs whole blocks: only the quantized ops' grid has them */
  if (every_dtype_op(op)) return dt >= 0 && dt < BP_DTYPE_COUNT && !BP_DTYPE_IS_BLOCK(dt);
  if (quant_op(op)) return quant_type_of(op, dt);
  for (size_t d = 0; d < sizeof float_types / sizeof float_types[0]; d++)
    if (float_types[d] == dt) return true;
  return false;
}

bp_status_t cf_try_op(cf_child_t *c, bp_op_t op, bp_dtype_t dt) {
  for (size_t i = 0; i < sizeof grid / sizeof grid[0]; i++) {
    if (grid[i].op != op) continue;
    cf_run_t r;
    cf_run_init(&r, c->dev, c->dev_s);
    bp_tensor_t out;
    bp_status_t st = case_fns[op](&r, &grid[i], dt, &out);
    if (st == BP_OK) st = bp_stream_synchronize(r.s);
    cf_run_free(&r);
    return st;
  }
  return BP_ERR_INTERNAL; /* no case for op in the grid */
}

void cf_stage_ops(cf_child_t *c) {
  bool software = c->entry.info.kind == BP_DEVICE_SOFTWARE || c->quick;
  for (size_t i = 0; i < sizeof grid / sizeof grid[0]; i++) {
    const cf_case_t *k = &grid[i];
    if (software && k->reduction > 600) continue; /* keep emulated devices quick */
    if (every_dtype_op(k->op)) {
      for (int dt = 0; dt < BP_DTYPE_COUNT; dt++)
        if (cf_dtype_in_grid(k->op, (bp_dtype_t)dt)) run_case(c, k, (bp_dtype_t)dt);
      continue;
    }
    if (quant_op(k->op)) {
      for (size_t d = 0; d < sizeof quant_types / sizeof quant_types[0]; d++)
        if (quant_case_type(k, quant_types[d])) run_case(c, k, quant_types[d]);
      continue;
    }
    for (size_t d = 0; d < sizeof float_types / sizeof float_types[0]; d++)
      run_case(c, k, float_types[d]);
  }
}
