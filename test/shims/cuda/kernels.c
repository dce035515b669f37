/*
 * kernels.c — C stand-ins for the kernels of kernels/cuda (NAME.cu).
 *
 * Each reads the same parameter block as its CUDA twin (bp_cuda_args.h) and
 * does the same math as plain loops in double, rounding once into the
 * output dtype. They exist so the plugin's host side — argument
 * marshalling, views, launch choices — can be checked end to end against
 * the CPU reference. They say nothing about the CUDA kernels' correctness
 * or speed: that takes a GPU (tools/gpu-check.sh). Every element access is
 * checked against the live allocations, so a view the plugin marshalled
 * wrongly shows up as an "illegal address" instead of a silent wrong read.
 */
#include <math.h>
#include <string.h>

#include "kernels/common/bp_half.h"
#include "kernels/common/bp_philox.h"
#include "kernels/common/bp_qcodec.h"
#include "test/shims/cuda/shim.h"

static _Thread_local bool bad; /* an access failed during this launch */

static int dsize(int dt) {
  switch (dt) {
  case BPK_F16: case BPK_BF16: return 2;
  case BPK_F64: case BPK_I64: return 8;
  case BPK_U8: case 7: case 8: case 9: return 1; /* u8, i8, fp8 (bp_quant_args.h) */
  default: return 4;
  }
}

/* Allocations this launch has already validated: the common case checks an
 * access against them without taking the driver's lock. Reset by begin(). */
#define SEEN_MAX 8
static _Thread_local uint64_t seen_lo[SEEN_MAX], seen_hi[SEEN_MAX];
static _Thread_local int seen_n;

static void *at(uint64_t base, int dt, int64_t off) {
  uint64_t p = base + (uint64_t)(off * dsize(dt)), n = (uint64_t)dsize(dt);
  if (bad) return NULL;
  for (int i = 0; i < seen_n; i++)
    if (p >= seen_lo[i] && p + n <= seen_hi[i]) return (void *)(uintptr_t)p;
  uint64_t lo, hi;
  if (!shim_mem_find(p, n, "kernel access", &lo, &hi)) {
    bad = true;
    return NULL;
  }
  int slot = seen_n < SEEN_MAX ? seen_n++ : (int)(p % SEEN_MAX);
  seen_lo[slot] = lo;
  seen_hi[slot] = hi;
  return (void *)(uintptr_t)p;
}

static double ld(uint64_t base, int dt, int64_t off) {
  void *p = at(base, dt, off);
  if (!p) return 0;
  switch (dt) {
  case BPK_F16: return bp_f16_to_f32(*(uint16_t *)p);
  case BPK_BF16: return bp_bf16_to_f32(*(uint16_t *)p);
  case BPK_F64: return *(double *)p;
  case BPK_I32: return *(int32_t *)p;
  case BPK_I64: return (double)*(int64_t *)p;
  case BPK_U8: return *(uint8_t *)p;
  case 7: return *(int8_t *)p; /* i8, then fp8 e4m3 / e5m2 (bp_quant_args.h) */
  case 8: return bp_fp8_decode(*(uint8_t *)p, 3);
  case 9: return bp_fp8_decode(*(uint8_t *)p, 2);
  default: return *(float *)p;
  }
}

/* Float dtypes only; the cast kernel writes integers itself. */
static void st(uint64_t base, int dt, int64_t off, double v) {
  void *p = at(base, dt, off);
  if (!p) return;
  switch (dt) {
  case BPK_F16: *(uint16_t *)p = bp_f32_to_f16((float)v); break;
  case BPK_BF16: *(uint16_t *)p = bp_f32_to_bf16((float)v); break;
  case BPK_F64: *(double *)p = v; break;
  default: *(float *)p = (float)v; break;
  }
}

static int64_t offset(const bpk_tensor_t *t, int64_t i) {
  int64_t off = 0;
  for (int d = t->rank - 1; d >= 0; d--) {
    off += (i % t->shape[d]) * t->strides[d];
    i /= t->shape[d];
  }
  return off;
}

static double vec(const bpk_vec_t *v, int64_t i, double dflt) {
  return v->ptr ? ld(v->ptr, v->dtype, i * v->stride) : dflt;
}

static bool begin(void) {
  bad = false;
  seen_n = 0; /* allocations may have changed since the last launch */
  return true;
}
static bool end(void) { return !bad; }

/* ---- elementwise --------------------------------------------------------- */

static double unary_op(int op, double x) {
  switch (op) {
  case 0: return -x;
  case 1: return fabs(x);
  case 2: return exp(x);
  case 3: return log(x);
  case 4: return sqrt(x);
  case 5: return 1 / sqrt(x);
  case 6: return x > 0 ? x : (isnan(x) ? x : 0);
  case 7: return x * 0.5 * (1 + erf(x / sqrt(2.0)));
  case 8: return x / (1 + exp(-x));
  case 9: return 1 / (1 + exp(-x));
  case 10: return tanh(x);
  case 11: return sin(x);
  case 13: return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
  default: return cos(x);
  }
}

static double nan_max(double a, double b) { return isnan(a) || isnan(b) ? a + b : a > b ? a : b; }
static double nan_min(double a, double b) { return isnan(a) || isnan(b) ? a + b : a < b ? a : b; }

static double binary_op(int op, double a, double b) {
  switch (op) {
  case 0: return a + b;
  case 1: return a - b;
  case 2: return a * b;
  case 3: return a / b;
  case 4: return nan_max(a, b);
  case 5: return nan_min(a, b);
  default: return pow(a, b);
  }
}

static bool k_unary(const void *pp) {
  const bpk_unary_args_t *p = pp;
  begin();
  for (int64_t i = 0; i < p->n && !bad; i++)
    st(p->y.ptr, p->y.dtype, offset(&p->y, i),
       unary_op(p->op, ld(p->x.ptr, p->x.dtype, offset(&p->x, i))));
  return end();
}

static bool k_binary(const void *pp) {
  const bpk_binary_args_t *p = pp;
  begin();
  for (int64_t i = 0; i < p->n && !bad; i++)
    st(p->y.ptr, p->y.dtype, offset(&p->y, i),
       binary_op(p->op, ld(p->a.ptr, p->a.dtype, offset(&p->a, i)),
                 ld(p->b.ptr, p->b.dtype, offset(&p->b, i))));
  return end();
}

static bool k_fill(const void *pp) {
  const bpk_fill_args_t *p = pp;
  begin();
  for (int64_t i = 0; i < p->n && !bad; i++) {
    void *d = at(p->y.ptr, p->y.dtype, offset(&p->y, i));
    if (d) memcpy(d, &p->bits, (size_t)p->elem_size); /* little endian */
  }
  return end();
}

static bool k_copy(const void *pp) {
  const bpk_copy_args_t *p = pp;
  begin();
  for (int64_t i = 0; i < p->n && !bad; i++) {
    void *s = at(p->x.ptr, p->x.dtype, offset(&p->x, i));
    void *d = at(p->y.ptr, p->y.dtype, offset(&p->y, i));
    if (s && d) memcpy(d, s, (size_t)p->elem_size);
  }
  return end();
}

static int64_t sat(double v, double lo, double hi, int64_t lo_i, int64_t hi_i) {
  if (isnan(v)) return 0;
  v = rint(v);
  return v <= lo ? lo_i : v >= hi ? hi_i : (int64_t)v;
}

static void cast_one(const bpk_copy_args_t *p, int64_t i) {
  const int xd = p->x.dtype, yd = p->y.dtype;
  const int64_t xo = offset(&p->x, i), yo = offset(&p->y, i);
  int64_t iv = 0;
  bool is_int = yd == BPK_I32 || yd == BPK_I64 || yd == BPK_U8;
  double v = 0;
  if (xd == BPK_I64) {
    int64_t *s = at(p->x.ptr, xd, xo);
    iv = s ? *s : 0;
    v = (double)iv;
  } else {
    v = ld(p->x.ptr, xd, xo);
    if (yd == BPK_I32) iv = sat(v, -2147483648.0, 2147483647.0, INT32_MIN, INT32_MAX);
    if (yd == BPK_U8) iv = sat(v, 0, 255, 0, 255);
    if (yd == BPK_I64) iv = sat(v, -0x1p63, 0x1p63, INT64_MIN, INT64_MAX);
  }
  if (!is_int) {
    if (xd == BPK_I64 && yd == BPK_F32) v = (double)(float)iv; /* one rounding */
    st(p->y.ptr, yd, yo, v);
    return;
  }
  void *d = at(p->y.ptr, yd, yo);
  if (!d) return;
  if (yd == BPK_I32) *(int32_t *)d = (int32_t)(iv < INT32_MIN ? INT32_MIN : iv > INT32_MAX ? INT32_MAX : iv);
  else if (yd == BPK_U8) *(uint8_t *)d = (uint8_t)(iv < 0 ? 0 : iv > 255 ? 255 : iv);
  else *(int64_t *)d = iv;
}

static bool k_cast(const void *pp) {
  const bpk_copy_args_t *p = pp;
  begin();
  for (int64_t i = 0; i < p->n && !bad; i++) cast_one(p, i);
  return end();
}

/* ---- rows: reduce, softmax, norms ---------------------------------------- */

static double row_x(const bpk_rows_t *r, int64_t base, int64_t j) {
  return ld(r->x.ptr, r->x.dtype, base + j * r->x_step);
}

static bool k_reduce(const void *pp) {
  const bpk_reduce_args_t *p = pp;
  const bpk_rows_t *r = &p->r;
  begin();
  for (int64_t row = 0; row < r->rows && !bad; row++) {
    const int64_t xb = offset(&r->x, row), yo = offset(&r->y, row);
    double acc = p->op == 4 ? 1 : p->op == 2 ? -INFINITY : p->op == 3 ? INFINITY : 0;
    int64_t best = 0;
    for (int64_t j = 0; j < r->len; j++) {
      double v = row_x(r, xb, j), b = row_x(r, xb, best);
      if (p->op == 6 && j > 0 && !isnan(b) && (isnan(v) || v > b)) best = j;
      acc = p->op == 2 ? nan_max(acc, v) : p->op == 3 ? nan_min(acc, v)
            : p->op == 4 ? acc * v : acc + v;
    }
    if (p->op == 6) {
      void *d = at(r->y.ptr, r->y.dtype, yo);
      if (d && r->y.dtype == BPK_I64) *(int64_t *)d = best;
      else if (d) *(int32_t *)d = (int32_t)best;
      continue;
    }
    if (p->op == 1 || p->op == 5) acc /= (double)r->len;
    if (p->op == 5) {
      double mean = acc, sq = 0;
      for (int64_t j = 0; j < r->len; j++) sq += pow(row_x(r, xb, j) - mean, 2);
      acc = sq / (double)r->len;
    }
    st(r->y.ptr, r->y.dtype, yo, acc);
  }
  return end();
}

static bool k_softmax(const void *pp) {
  const bpk_softmax_args_t *p = pp;
  const bpk_rows_t *r = &p->r;
  begin();
  for (int64_t row = 0; row < r->rows && !bad; row++) {
    const int64_t xb = offset(&r->x, row), yb = offset(&r->y, row);
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < r->len; j++) m = nan_max(m, row_x(r, xb, j));
    for (int64_t j = 0; j < r->len; j++) s += exp(row_x(r, xb, j) - m);
    for (int64_t j = 0; j < r->len; j++) {
      double d = row_x(r, xb, j) - m;
      st(r->y.ptr, r->y.dtype, yb + j * r->y_step, p->log ? d - log(s) : exp(d) / s);
    }
  }
  return end();
}

/* As norm.cu: the row scaled by 2^-e (e the exponent of its largest
 * magnitude) so that no square or sum overflows or underflows double. */
static bool k_norm(const void *pp) {
  const bpk_norm_args_t *p = pp;
  const bpk_rows_t *r = &p->r;
  begin();
  for (int64_t row = 0; row < r->rows && !bad; row++) {
    const int64_t xb = offset(&r->x, row), yb = offset(&r->y, row);
    double amax = 0, mean = 0, sq = 0;
    for (int64_t j = 0; j < r->len; j++) amax = fmax(amax, fabs(row_x(r, xb, j)));
    int e = amax > 0 && isfinite(amax) ? ilogb(amax) : 0;
    if (!p->rms) {
      for (int64_t j = 0; j < r->len; j++) mean += ldexp(row_x(r, xb, j), -e);
      mean /= (double)r->len;
    }
    for (int64_t j = 0; j < r->len; j++) sq += pow(ldexp(row_x(r, xb, j), -e) - mean, 2);
    double e2 = ldexp(p->eps, -2 * e);
    double inv = isinf(e2) ? ldexp(1 / sqrt(p->eps), e) : 1 / sqrt(sq / (double)r->len + e2);
    for (int64_t j = 0; j < r->len; j++)
      st(r->y.ptr, r->y.dtype, yb + j * r->y_step,
         (ldexp(row_x(r, xb, j), -e) - mean) * inv * vec(&p->gamma, j, 1) + vec(&p->beta, j, 0));
  }
  return end();
}

#include "test/shims/cuda/kernels_dnn.inc"
#include "test/shims/cuda/kernels_model.inc"
#include "test/shims/cuda/kernels_quant.inc"

static const shim_kernel_t table[] = {
#define K(name, type, fn) {#name, sizeof(type), fn, 0, NULL, NULL}
    K(bp_unary_f, bpk_unary_args_t, k_unary),
    K(bp_unary_d, bpk_unary_args_t, k_unary),
    K(bp_binary_f, bpk_binary_args_t, k_binary),
    K(bp_binary_d, bpk_binary_args_t, k_binary),
    K(bp_fill, bpk_fill_args_t, k_fill),
    K(bp_copy, bpk_copy_args_t, k_copy),
    K(bp_cast, bpk_copy_args_t, k_cast),
    K(bp_reduce_f, bpk_reduce_args_t, k_reduce),
    K(bp_reduce_d, bpk_reduce_args_t, k_reduce),
    K(bp_softmax_f, bpk_softmax_args_t, k_softmax),
    K(bp_softmax_d, bpk_softmax_args_t, k_softmax),
    K(bp_norm_f, bpk_norm_args_t, k_norm),
    K(bp_norm_d, bpk_norm_args_t, k_norm),
    K(bp_batch_norm_f, bpk_batch_norm_args_t, k_batch_norm),
    K(bp_batch_norm_d, bpk_batch_norm_args_t, k_batch_norm),
    K(bp_pool2d_f, bpk_pool2d_args_t, k_pool2d),
    K(bp_pool2d_d, bpk_pool2d_args_t, k_pool2d),
    K(bp_conv2d_f, bpk_conv2d_args_t, k_conv2d),
    K(bp_conv2d_im2col, bpk_conv2d_im2col_args_t, k_conv2d_im2col),
    K(bp_conv2d_bias_fill, bpk_conv2d_args_t, k_conv2d_bias_fill),
    K(bp_gemm_f32, bpk_gemm_args_t, k_gemm),
    K(bp_gemm_f64, bpk_gemm_args_t, k_gemm),
    K(bp_gemm_f16, bpk_gemm_args_t, k_gemm),
    K(bp_gemm_bf16, bpk_gemm_args_t, k_gemm),
    K(bp_gemm_epilogue_f, bpk_gemm_args_t, k_gemm_epilogue),
    K(bp_gemm_epilogue_d, bpk_gemm_args_t, k_gemm_epilogue),
    K(bp_gemm_bias_fill_h, bpk_gemm_args_t, k_gemm_bias_fill),
    K(bp_gemv_f, bpk_gemv_args_t, k_gemv),
    K(bp_gemv_d, bpk_gemv_args_t, k_gemv),
    K(bp_attention_f, bpk_attention_args_t, k_attention),
    K(bp_attention_mma_h64, bpk_attention_args_t, k_attention_mma_h64),
    K(bp_attention_mma_h128, bpk_attention_args_t, k_attention_mma_h128),
    K(bp_attention_mma_bf64, bpk_attention_args_t, k_attention_mma_bf64),
    K(bp_attention_mma_bf128, bpk_attention_args_t, k_attention_mma_bf128),
    K(bp_adam_f, bpk_adam_args_t, k_adam),
    K(bp_adam_d, bpk_adam_args_t, k_adam),
    K(bp_random, bpk_random_args_t, k_random),
#undef K
};

const shim_kernel_t *shim_kernel_find(const char *name) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].name, name) == 0)
      return &table[i];
  const shim_kernel_t *m = model_kernel_find(name);
  if (!m) m = quant_kernel_find(name);
  return m ? m : shim_custom_find(name);
}
