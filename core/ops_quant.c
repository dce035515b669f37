/*
 * ops_quant.c — the quantized ops of ABI 1.5 (backplane_quant.h):
 * quantize, dequantize, int8 / uint8 / fp8 GEMM and GEMM/GEMV with block-quantized
 * weights. Each validates every argument before anything runs, so a
 * rejected call writes nothing.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

#define NT(...) ((const bp_tensor_t *const[]){__VA_ARGS__})
#define NN(...) ((const char *const[]){__VA_ARGS__})

/* The activations' dtypes of the quantized ops. */
static bool act_dtype(bp_dtype_t dt) { return dt == BP_F32 || dt == BP_F16 || dt == BP_BF16; }

uint64_t bp_quant_bytes(bp_dtype_t dt, uint64_t count) {
  if (!bp__dtype_valid(dt)) return 0;
  if (!BP_DTYPE_IS_BLOCK(dt)) return count > UINT64_MAX / 8 ? 0 : count * bp_dtype_size(dt);
  if (count % BP_QUANT_BLOCK) return 0;
  return count / BP_QUANT_BLOCK * bp_dtype_size(dt);
}

/* An f32 scale broadcast to `rank` dims of `shape` (NULL: none, for a
 * block dtype or a rank-0 "1"). */
static bp_status_t scale_arg(const char *op, const bp_tensor_t *scale, const char *what,
                             int32_t rank, const int64_t *shape, bp_plugin_tensor_t *out) {
  memset(out, 0, sizeof *out);
  if (!scale) return BP_OK;
  if (scale->dtype != BP_F32)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s has dtype %s; expected f32", op, what,
                    bp_dtype_name(scale->dtype));
  bp__tensor_to_plugin(scale, out);
  return bp__broadcast_to(out, rank, shape, op, what);
}

/* ---- quantize / dequantize ------------------------------------------------- */

/* q is the quantized side (i8, u8 or a block dtype), f the float side. */
static bp_status_t quant_common(bp_stream_t *sh, const char *op, bp_op_t opk, const bp_tensor_t *x,
                                const bp_tensor_t *scale, const bp_tensor_t *y, const bp_tensor_t *q,
                                const bp_tensor_t *f) {
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, op, "stream");
  bp_status_t st = bp__check_tensors(s, op, 2, NT(x, y), NN("x", "y"));
  if (st == BP_OK && scale) st = bp__check_tensors(s, op, 1, NT(scale), NN("scale"));
  if (st != BP_OK) return st;
  const char *qn = q == x ? "x" : "y", *fn = f == x ? "x" : "y";
  if (!act_dtype(f->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s has dtype %s; expected f32, f16 or bf16", op,
                    fn, bp_dtype_name(f->dtype));
  bool int8 = q->dtype == BP_I8 || q->dtype == BP_U8;
  if (!int8 && !BP_DTYPE_IS_BLOCK(q->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s has dtype %s; expected i8, u8, q8_0 or q4_0",
                    op, qn, bp_dtype_name(q->dtype));
  if (int8 && !scale)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s (%s) needs a scale", op, qn,
                    bp_dtype_name(q->dtype));
  if (!int8 && scale)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: %s's blocks carry their own scales: scale must be NULL", op, qn);
  if ((st = bp__same_shape(x, y, op, "x", "y"))) return st;
  bp_quantize_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  bp__tensor_to_plugin(x, &a.x);
  bp__tensor_to_plugin(y, &a.y);
  if ((st = scale_arg(op, scale, "scale", y->rank, y->shape, &a.scale)) ||
      (st = bp__check_output(op, y, "y", 2, NT(x, scale), NN("x", "scale"), false)) ||
      (st = bp__require_op(s->device, opk, q->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  return bp__call_op(s, opk, &a);
}

bp_status_t bp_quantize(bp_stream_t *sh, const bp_tensor_t *x, const bp_tensor_t *scale,
                        const bp_tensor_t *y) {
  bp__clear_error();
  return quant_common(sh, "bp_quantize", BP_OP_QUANTIZE, x, scale, y, y, x);
}

bp_status_t bp_dequantize(bp_stream_t *sh, const bp_tensor_t *x, const bp_tensor_t *scale,
                          const bp_tensor_t *y) {
  bp__clear_error();
  return quant_common(sh, "bp_dequantize", BP_OP_DEQUANTIZE, x, scale, y, x, y);
}

/* ---- shapes of the two GEMMs ------------------------------------------------ */

/* a [.., m, k], b [.., k, n] (bt: b is [.., n, k]), c [.., m, n]: rank 2,
 * or 3 with a batch (b may be rank 2 and shared). */
static bp_status_t gemm_shapes(const char *op, const bp_tensor_t *a, const bp_tensor_t *b, bool bt,
                               const bp_tensor_t *c, const char *bname) {
  if ((a->rank != 2 && a->rank != 3) || c->rank != a->rank)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: a and c must both be rank 2 or both rank 3 (got %d, %d)",
                    op, a->rank, c->rank);
  if (b->rank != 2 && !(b->rank == 3 && a->rank == 3 && !bt))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s has rank %d; expected 2%s", op, bname, b->rank,
                    bt ? "" : " (or 3 with a's batch)");
  int32_t ra = a->rank, rb = b->rank;
  int64_t m = a->shape[ra - 2], k = a->shape[ra - 1];
  int64_t bk = b->shape[rb - (bt ? 1 : 2)], n = b->shape[rb - (bt ? 2 : 1)];
  if (bk != k)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: a has k = %lld but %s has %lld", op, (long long)k,
                    bname, (long long)bk);
  if (c->shape[ra - 2] != m || c->shape[ra - 1] != n)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: c is [%lld, %lld]; expected [%lld, %lld]", op,
                    (long long)c->shape[ra - 2], (long long)c->shape[ra - 1], (long long)m,
                    (long long)n);
  if (ra == 3 && (c->shape[0] != a->shape[0] || (rb == 3 && b->shape[0] != a->shape[0])))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: the batch dims of a, %s and c differ", op, bname);
  return BP_OK;
}

/* ---- int8 / fp8 GEMM ---------------------------------------------------------- */

static bool int8_dtype(bp_dtype_t dt) { return dt == BP_I8 || dt == BP_U8; }
static bool fp8_dtype(bp_dtype_t dt) { return dt == BP_FP8_E4M3 || dt == BP_FP8_E5M2; }

/* fp8 a and b (any mix of e4m3 / e5m2): f32 accumulation, a float c. */
static bp_status_t qgemm_fp8_dtypes(const char *op, const bp_tensor_t *a, const bp_tensor_t *b,
                                    const bp_tensor_t *c) {
  if (!fp8_dtype(a->dtype) || !fp8_dtype(b->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: a (%s) and b (%s): fp8 operands do not mix with i8 or u8", op,
                    bp_dtype_name(a->dtype), bp_dtype_name(b->dtype));
  if (!act_dtype(c->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: c has dtype %s; expected f32, f16 or bf16 with fp8 a and b", op,
                    bp_dtype_name(c->dtype));
  return BP_OK;
}

static bp_status_t qgemm_dtypes(const char *op, const bp_tensor_t *a, const bp_tensor_t *b,
                                const bp_tensor_t *sa, const bp_tensor_t *sb, float out_scale,
                                const bp_tensor_t *c) {
  bool ok_a = int8_dtype(a->dtype) || fp8_dtype(a->dtype);
  bool ok_b = int8_dtype(b->dtype) || fp8_dtype(b->dtype);
  if (!ok_a || !ok_b)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: %s has dtype %s; expected i8 or u8 (or both fp8)", op,
                    ok_a ? "b" : "a", bp_dtype_name(ok_a ? b->dtype : a->dtype));
  if (fp8_dtype(a->dtype) || fp8_dtype(b->dtype)) return qgemm_fp8_dtypes(op, a, b, c);
  if (c->dtype != BP_I32 && c->dtype != BP_F32 && c->dtype != BP_I8)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: c has dtype %s; expected i32, f32 or i8", op,
                    bp_dtype_name(c->dtype));
  if (c->dtype == BP_I32 && (sa || sb))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: an i32 c is the exact sum: scales must be NULL", op);
  if (c->dtype == BP_I8 && !(isfinite(out_scale) && out_scale > 0))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: out_scale %g must be finite and > 0 for an i8 c", op,
                    (double)out_scale);
  return BP_OK;
}

/* The claims a qgemm needs: i8 (the op's), plus u8 for a u8 operand; fp8
 * operands need their own dtypes' claims instead (an older plugin's kernels
 * would read u8 or fp8 bytes as i8). */
static bp_status_t qgemm_claims(const bp__device_t *d, const char *op, bp_dtype_t a, bp_dtype_t b) {
  bp_status_t st;
  if (fp8_dtype(a)) {
    if ((st = bp__require_op(d, BP_OP_QGEMM, a, op))) return st;
    return b == a ? BP_OK : bp__require_op(d, BP_OP_QGEMM, b, op);
  }
  if ((st = bp__require_op(d, BP_OP_QGEMM, BP_I8, op))) return st;
  return a == BP_U8 || b == BP_U8 ? bp__require_op(d, BP_OP_QGEMM, BP_U8, op) : BP_OK;
}

bp_status_t bp_qgemm(bp_stream_t *sh, const bp_tensor_t *a, const bp_tensor_t *b,
                     const bp_tensor_t *scale_a, const bp_tensor_t *scale_b, float out_scale,
                     const bp_tensor_t *c) {
  bp__clear_error();
  const char *op = "bp_qgemm";
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, op, "stream");
  bp_status_t st = bp__check_tensors(s, op, 3, NT(a, b, c), NN("a", "b", "c"));
  if (st == BP_OK && scale_a) st = bp__check_tensors(s, op, 1, NT(scale_a), NN("scale_a"));
  if (st == BP_OK && scale_b) st = bp__check_tensors(s, op, 1, NT(scale_b), NN("scale_b"));
  if (st || (st = qgemm_dtypes(op, a, b, scale_a, scale_b, out_scale, c)) ||
      (st = gemm_shapes(op, a, b, false, c, "b")))
    return st;
  bp_qgemm_args_t q;
  memset(&q, 0, sizeof q);
  q.struct_size = sizeof q;
  q.out_scale = c->dtype == BP_I8 ? out_scale : 1.0f;
  int64_t m = a->shape[a->rank - 2], n = c->shape[c->rank - 1];
  bp__tensor_to_plugin(a, &q.a);
  bp__tensor_to_plugin(b, &q.b);
  bp__tensor_to_plugin(c, &q.c);
  if ((st = scale_arg(op, scale_a, "scale_a", 1, &m, &q.scale_a)) ||
      (st = scale_arg(op, scale_b, "scale_b", 1, &n, &q.scale_b)) ||
      (st = bp__check_output(op, c, "c", 4, NT(a, b, scale_a, scale_b),
                             NN("a", "b", "scale_a", "scale_b"), false)) ||
      (st = qgemm_claims(s->device, op, a->dtype, b->dtype)))
    return st;
  if (bp_tensor_numel(c) == 0) return BP_OK;
  return bp__call_op(s, BP_OP_QGEMM, &q);
}

/* ---- GEMM / GEMV with block-quantized weights ---------------------------------- */

bp_status_t bp_qmatmul(bp_stream_t *sh, const bp_tensor_t *a, const bp_tensor_t *w,
                       const bp_tensor_t *y) {
  bp__clear_error();
  const char *op = "bp_qmatmul";
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, op, "stream");
  bp_status_t st = bp__check_tensors(s, op, 3, NT(a, w, y), NN("a", "w", "y"));
  if (st == BP_OK) st = bp__check_float_dtypes(op, 2, NT(a, y), NN("a", "y"));
  if (st) return st;
  if (!act_dtype(a->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: a has dtype %s; expected f32, f16 or bf16", op,
                    bp_dtype_name(a->dtype));
  if (!BP_DTYPE_IS_BLOCK(w->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: w has dtype %s; expected q8_0 or q4_0", op,
                    bp_dtype_name(w->dtype));
  if ((st = gemm_shapes(op, a, w, true, y, "w")) ||
      (st = bp__check_output(op, y, "y", 2, NT(a, w), NN("a", "w"), false)) ||
      (st = bp__require_op(s->device, BP_OP_QMATMUL, w->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  bp_qmatmul_args_t q;
  memset(&q, 0, sizeof q);
  q.struct_size = sizeof q;
  bp__tensor_to_plugin(a, &q.a);
  bp__tensor_to_plugin(w, &q.w);
  bp__tensor_to_plugin(y, &q.y);
  return bp__call_op(s, BP_OP_QMATMUL, &q);
}
