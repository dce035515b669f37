/*
 * gemm_epilogue.c — one GEMM call on rank-3 views, with its epilogue
 * c = act(alpha a·b + beta c + bias): validated, then issued fused when the
 * device claims the epilogue's BP_FEATURE_GEMM_* bits, else as the GEMM
 * followed by a broadcast add and a unary op on the same stream (the same
 * result, rounded to c's dtype between the steps), so that no device fails
 * a call for lack of the feature.
 */
#include <string.h>

#include "internal.h"

bp_status_t bp__epilogue_init(bp__stream_t *s, const char *op, const bp_gemm_epilogue_t *e,
                              const bp_tensor_t *c, bp__epilogue_t *out) {
  memset(out, 0, sizeof *out);
  if (!e) return BP_OK;
  if (e->struct_size < sizeof *e)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: epilogue->struct_size %u is less than %zu", op,
                    e->struct_size, sizeof *e);
  if (e->activate && (unsigned)e->activation >= BP_UNARY_COUNT)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: epilogue activation %d is not a bp_unary_op_t",
                    op, (int)e->activation);
  out->activate = e->activate;
  out->activation = e->activation;
  if (!e->bias) return BP_OK;
  bp_status_t st = bp__tensor_check(e->bias, s->device, op, "bias");
  if (st != BP_OK) return st;
  if (e->bias->dtype != c->dtype)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: bias is %s; expected c's dtype %s", op,
                    bp_dtype_name(e->bias->dtype), bp_dtype_name(c->dtype));
  if (bp__tensors_overlap(e->bias, c))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: bias overlaps c", op);
  out->bias = *e->bias;
  out->has_bias = true;
  return bp__tensor_broadcast(&out->bias, c->rank, c->shape, op, "bias");
}

bp_status_t bp__tensor_broadcast(bp_tensor_t *x, int32_t rank, const int64_t *shape, const char *op,
                                 const char *what) {
  bp_plugin_tensor_t p;
  bp__tensor_to_plugin(x, &p);
  bp_status_t st = bp__broadcast_to(&p, rank, shape, op, what);
  if (st != BP_OK) return st;
  x->rank = rank;
  memcpy(x->shape, p.shape, sizeof x->shape);
  memcpy(x->strides, p.strides, sizeof x->strides);
  return BP_OK;
}

/* The epilogue's parts the device runs fused: the activation only after a
 * fused bias (it applies to the sum). */
static uint32_t fused_parts(const bp__device_t *d, const bp__epilogue_t *e) {
  uint32_t have = d->entry.info.op_features[BP_OP_GEMM], fuse = 0;
  if (e->has_bias && (have & BP_FEATURE_GEMM_BIAS)) fuse |= BP_FEATURE_GEMM_BIAS;
  if (e->activate && (have & BP_FEATURE_GEMM_ACT) && (!e->has_bias || fuse))
    fuse |= BP_FEATURE_GEMM_ACT;
  return fuse;
}

/* Checks that the steps composed after the GEMM can run on s. */
static bp_status_t require_composite(bp__stream_t *s, const char *op, const bp__epilogue_t *e,
                                     uint32_t fuse, bp_dtype_t dt) {
  bp_status_t st = BP_OK;
  if (e->has_bias && !(fuse & BP_FEATURE_GEMM_BIAS))
    st = bp__require_op(s->device, BP_OP_BINARY, dt, op);
  if (st == BP_OK && e->activate && !(fuse & BP_FEATURE_GEMM_ACT))
    st = bp__require_op(s->device, BP_OP_UNARY, dt, op);
  return st;
}

/* c += bias, then c = act(c), for the parts not fused. */
static bp_status_t run_composite(bp__stream_t *s, const bp__epilogue_t *e, uint32_t fuse,
                                 const bp_plugin_tensor_t *c) {
  bp_status_t st = BP_OK;
  if (e->has_bias && !(fuse & BP_FEATURE_GEMM_BIAS)) {
    bp_binary_args_t b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    b.op = BP_BINARY_ADD;
    b.a = b.y = *c;
    bp__tensor_to_plugin(&e->bias, &b.b);
    st = bp__call_op(s, BP_OP_BINARY, &b);
  }
  if (st == BP_OK && e->activate && !(fuse & BP_FEATURE_GEMM_ACT)) {
    bp_unary_args_t u;
    memset(&u, 0, sizeof u);
    u.struct_size = sizeof u;
    u.op = e->activation;
    u.x = u.y = *c;
    st = bp__call_op(s, BP_OP_UNARY, &u);
  }
  return st;
}

bp_status_t bp__gemm_dispatch(bp__stream_t *s, const char *op, double alpha, const bp_tensor_t *a,
                              const bp_tensor_t *b, double beta, const bp_tensor_t *c,
                              const bp__epilogue_t *e) {
  static const bp__epilogue_t none;
  if (!e) e = &none;
  if (bp__tensors_overlap(c, a) || bp__tensors_overlap(c, b))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: C overlaps A or B", op);
  bp_status_t st = bp__check_output(op, c, "c", 0, NULL, NULL, false);
  if (st == BP_OK) st = bp__require_op(s->device, BP_OP_GEMM, a->dtype, op);
  uint32_t fuse = fused_parts(s->device, e);
  if (st == BP_OK) st = require_composite(s, op, e, fuse, c->dtype);
  if (st != BP_OK) return st;
  if (bp_tensor_numel(c) == 0) return BP_OK;
  bp_gemm_args_t args;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.alpha = alpha;
  args.beta = beta;
  if (s->device->allow_reduced_precision) args.flags |= BP_GEMM_FLAG_ALLOW_TF32;
  bp__tensor_to_plugin(a, &args.a);
  bp__tensor_to_plugin(b, &args.b);
  bp__tensor_to_plugin(c, &args.c);
  if (fuse & BP_FEATURE_GEMM_BIAS) bp__tensor_to_plugin(&e->bias, &args.bias);
  if (fuse & BP_FEATURE_GEMM_ACT) {
    args.flags |= BP_GEMM_FLAG_ACTIVATION;
    args.activation = (int32_t)e->activation;
  }
  st = bp__call_op(s, BP_OP_GEMM, &args);
  if (st == BP_OK) st = run_composite(s, e, fuse, &args.c);
  return st;
}
