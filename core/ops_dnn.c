/*
 * ops_dnn.c — conv2d, pool2d, batch / layer / RMS norm, softmax and the
 * fused Adam step: shape rules checked, then one plugin call (attention is
 * in ops_attention.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NT(...) ((const bp_tensor_t *const[]){__VA_ARGS__})
#define NN(...) ((const char *const[]){__VA_ARGS__})

static bp_status_t expect_rank(const char *op, const bp_tensor_t *t, const char *what, int rank) {
  if (t->rank != rank)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s has rank %d; expected %d", op, what, t->rank, rank);
  return BP_OK;
}

static bp_status_t expect_dim(const char *op, const char *what, int axis, int64_t got, int64_t want) {
  if (got != want)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s.shape[%d] is %lld; expected %lld", op, what, axis,
                    (long long)got, (long long)want);
  return BP_OK;
}

/* Output extent of a window of size k (dilation d) over n with padding p and
 * stride s; -1 when the window does not fit. */
static int64_t out_extent(int64_t n, int64_t k, int64_t p, int64_t s, int64_t d) {
  /* 128-bit: a fuzzed dilation of 2^31 times a kernel of 2^40 must not wrap */
  __int128 span = (__int128)d * (k - 1) + 1, padded = (__int128)n + 2 * (__int128)p;
  if (padded < span) return -1;
  return (int64_t)((padded - span) / s + 1);
}

/* Bound on window parameters (kernel, stride, padding, dilation), so that a
 * plugin's int32 index arithmetic over them cannot wrap. */
#define MAX_WINDOW (1 << 24)

/* ---- conv2d ----------------------------------------------------------------*/

static bp_status_t conv_params(const char *op, const bp_conv2d_params_t *p, bp_conv2d_args_t *a) {
  bp_conv2d_params_t d = {sizeof d, 1, 1, 0, 0, 1, 1, 1};
  if (p) {
    if (p->struct_size < sizeof *p)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: params->struct_size %u too small", op, p->struct_size);
    d = *p;
  }
  a->stride_h = d.stride_h ? d.stride_h : 1;
  a->stride_w = d.stride_w ? d.stride_w : 1;
  a->dilation_h = d.dilation_h ? d.dilation_h : 1;
  a->dilation_w = d.dilation_w ? d.dilation_w : 1;
  a->groups = d.groups ? d.groups : 1;
  a->pad_h = d.pad_h;
  a->pad_w = d.pad_w;
  if (a->stride_h < 0 || a->stride_w < 0 || a->dilation_h < 0 || a->dilation_w < 0 ||
      a->groups < 0 || a->pad_h < 0 || a->pad_w < 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: negative stride, dilation, padding or groups", op);
  return BP_OK;
}

bp_status_t bp_conv2d(bp_stream_t *sh, const bp_conv2d_params_t *params, const bp_tensor_t *x,
                      const bp_tensor_t *w, const bp_tensor_t *bias, const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_conv2d", "stream");
  const char *op = "bp_conv2d";
  bp_conv2d_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  bp_status_t st = bp__check_tensors(s, op, 3, NT(x, w, y), NN("x", "w", "y"));
  if (st == BP_OK && bias) st = bp__tensor_check(bias, s->device, op, "bias");
  if (st == BP_OK) st = bp__check_float_dtypes(op, 4, NT(x, w, y, bias), NN("x", "w", "y", "bias"));
  if (st == BP_OK) st = conv_params(op, params, &a);
  if (st == BP_OK) st = expect_rank(op, x, "x", 4);
  if (st == BP_OK) st = expect_rank(op, w, "w", 4);
  if (st == BP_OK) st = expect_rank(op, y, "y", 4);
  if (st != BP_OK) return st;
  int64_t N = x->shape[0], C = x->shape[1], K = w->shape[0], G = a.groups;
  if (C % G || K % G)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: groups %lld must divide C (%lld) and K (%lld)", op,
                    (long long)G, (long long)C, (long long)K);
  int64_t P = out_extent(x->shape[2], w->shape[2], a.pad_h, a.stride_h, a.dilation_h);
  int64_t Q = out_extent(x->shape[3], w->shape[3], a.pad_w, a.stride_w, a.dilation_w);
  if (P < 0 || Q < 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: the dilated kernel is larger than the padded input", op);
  if (a.stride_h > MAX_WINDOW || a.stride_w > MAX_WINDOW || a.pad_h > MAX_WINDOW || a.pad_w > MAX_WINDOW ||
      a.dilation_h > MAX_WINDOW || a.dilation_w > MAX_WINDOW)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: stride, padding and dilation must be at most %d", op, MAX_WINDOW);
  if ((st = expect_dim(op, "w", 1, w->shape[1], C / G)) || (st = expect_dim(op, "y", 0, y->shape[0], N)) ||
      (st = expect_dim(op, "y", 1, y->shape[1], K)) || (st = expect_dim(op, "y", 2, y->shape[2], P)) ||
      (st = expect_dim(op, "y", 3, y->shape[3], Q)))
    return st;
  if (bias && (bias->rank != 1 || bias->shape[0] != K))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: bias must be [%lld]", op, (long long)K);
  if ((st = bp__check_output(op, y, "y", 3, NT(x, w, bias), NN("x", "w", "bias"), false)) ||
      (st = bp__require_op(s->device, BP_OP_CONV2D, x->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  bp__tensor_to_plugin(x, &a.x);
  bp__tensor_to_plugin(w, &a.w);
  bp__tensor_to_plugin(bias, &a.bias);
  bp__tensor_to_plugin(y, &a.y);
  a.w_const_id = bp__tensor_const_id(w);
  return bp__call_op(s, BP_OP_CONV2D, &a);
}

/* ---- pool2d ----------------------------------------------------------------*/

bp_status_t bp_pool2d(bp_stream_t *sh, const bp_pool2d_params_t *p, const bp_tensor_t *x,
                      const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_pool2d", "stream");
  const char *op = "bp_pool2d";
  bp_status_t st = bp__check_tensors(s, op, 2, NT(x, y), NN("x", "y"));
  if (st == BP_OK) st = bp__check_float_dtypes(op, 2, NT(x, y), NN("x", "y"));
  if (st == BP_OK) st = expect_rank(op, x, "x", 4);
  if (st == BP_OK) st = expect_rank(op, y, "y", 4);
  if (st != BP_OK) return st;
  if (!p || p->struct_size < sizeof *p)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: params %s", op, p ? "struct_size too small" : "is NULL");
  if (p->kind != BP_POOL_MAX && p->kind != BP_POOL_AVG)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: kind %d invalid", op, (int)p->kind);
  bp_pool2d_args_t a = {sizeof a, p->kind, p->kernel_h, p->kernel_w,
                        p->stride_h ? p->stride_h : p->kernel_h, p->stride_w ? p->stride_w : p->kernel_w,
                        p->pad_h, p->pad_w, p->count_include_pad, {0}, {0}};
  /* Halving the kernel, not doubling the padding: 2 * pad wraps in int32. */
  if (a.kernel_h <= 0 || a.kernel_w <= 0 || a.stride_h <= 0 || a.stride_w <= 0 || a.pad_h < 0 ||
      a.pad_w < 0 || a.pad_h > a.kernel_h / 2 || a.pad_w > a.kernel_w / 2)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: kernel and stride must be positive and padding at most half the kernel", op);
  if (a.kernel_h > MAX_WINDOW || a.kernel_w > MAX_WINDOW || a.stride_h > MAX_WINDOW || a.stride_w > MAX_WINDOW)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: kernel and stride must be at most %d", op, MAX_WINDOW);
  int64_t P = out_extent(x->shape[2], a.kernel_h, a.pad_h, a.stride_h, 1);
  int64_t Q = out_extent(x->shape[3], a.kernel_w, a.pad_w, a.stride_w, 1);
  if (P < 0 || Q < 0) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: kernel larger than the padded input", op);
  for (int i = 0; i < 2; i++)
    if ((st = expect_dim(op, "y", i, y->shape[i], x->shape[i]))) return st;
  if ((st = expect_dim(op, "y", 2, y->shape[2], P)) || (st = expect_dim(op, "y", 3, y->shape[3], Q)) ||
      (st = bp__check_output(op, y, "y", 1, NT(x), NN("x"), false)) ||
      (st = bp__require_op(s->device, BP_OP_POOL2D, x->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  bp__tensor_to_plugin(x, &a.x);
  bp__tensor_to_plugin(y, &a.y);
  return bp__call_op(s, BP_OP_POOL2D, &a);
}

/* ---- norms -----------------------------------------------------------------*/

static bp_status_t check_eps(const char *op, double eps) {
  if (!(eps >= 0) || isinf(eps))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: eps must be finite and >= 0", op);
  return BP_OK;
}

static bp_status_t expect_vector(const char *op, const bp_tensor_t *t, const char *what, int64_t n) {
  if (t && (t->rank != 1 || t->shape[0] != n))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s must be a vector of %lld", op, what, (long long)n);
  return BP_OK;
}

bp_status_t bp_batch_norm(bp_stream_t *sh, const bp_tensor_t *x, const bp_tensor_t *mean,
                          const bp_tensor_t *var, const bp_tensor_t *scale, const bp_tensor_t *bias,
                          double eps, const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_batch_norm", "stream");
  const char *op = "bp_batch_norm";
  bp_status_t st = bp__check_tensors(s, op, 6, NT(x, mean, var, scale, bias, y),
                                     NN("x", "mean", "var", "scale", "bias", "y"));
  if (st == BP_OK) st = bp__check_float_dtypes(op, 6, NT(x, mean, var, scale, bias, y),
                                               NN("x", "mean", "var", "scale", "bias", "y"));
  if (st == BP_OK) st = check_eps(op, eps);
  if (st != BP_OK) return st;
  if (x->rank < 2) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: x needs rank >= 2 (N, C, ...)", op);
  int64_t C = x->shape[1];
  if ((st = expect_vector(op, mean, "mean", C)) || (st = expect_vector(op, var, "var", C)) ||
      (st = expect_vector(op, scale, "scale", C)) || (st = expect_vector(op, bias, "bias", C)) ||
      (st = bp__same_shape(x, y, op, "x", "y")) ||
      (st = bp__check_output(op, y, "y", 5, NT(x, mean, var, scale, bias),
                             NN("x", "mean", "var", "scale", "bias"), true)) ||
      (st = bp__require_op(s->device, BP_OP_BATCH_NORM, x->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  bp_batch_norm_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.eps = eps;
  bp__tensor_to_plugin(x, &a.x);
  bp__tensor_to_plugin(mean, &a.mean);
  bp__tensor_to_plugin(var, &a.var);
  bp__tensor_to_plugin(scale, &a.scale);
  bp__tensor_to_plugin(bias, &a.bias);
  bp__tensor_to_plugin(y, &a.y);
  return bp__call_op(s, BP_OP_BATCH_NORM, &a);
}

static bp_status_t norm_common(bp__stream_t *s, bp_op_t opk, const char *op, const bp_tensor_t *x,
                               const bp_tensor_t *gamma, const bp_tensor_t *beta, double eps,
                               const bp_tensor_t *y) {
  bp_status_t st = bp__check_tensors(s, op, 2, NT(x, y), NN("x", "y"));
  if (st == BP_OK && gamma) st = bp__tensor_check(gamma, s->device, op, "gamma");
  if (st == BP_OK && beta) st = bp__tensor_check(beta, s->device, op, "beta");
  if (st == BP_OK) st = bp__check_float_dtypes(op, 4, NT(x, y, gamma, beta), NN("x", "y", "gamma", "beta"));
  if (st == BP_OK) st = check_eps(op, eps);
  if (st != BP_OK) return st;
  if (x->rank < 1) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: x needs rank >= 1", op);
  int64_t last = x->shape[x->rank - 1];
  if ((st = expect_vector(op, gamma, "gamma", last)) || (st = expect_vector(op, beta, "beta", last)) ||
      (st = bp__same_shape(x, y, op, "x", "y")) ||
      (st = bp__check_output(op, y, "y", 3, NT(x, gamma, beta), NN("x", "gamma", "beta"), true)) ||
      (st = bp__require_op(s->device, opk, x->dtype, op)))
    return st;
  if (bp_tensor_numel(y) == 0) return BP_OK;
  bp_norm_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.eps = eps;
  bp__tensor_to_plugin(x, &a.x);
  bp__tensor_to_plugin(gamma, &a.gamma);
  bp__tensor_to_plugin(beta, &a.beta);
  bp__tensor_to_plugin(y, &a.y);
  return bp__call_op(s, opk, &a);
}

bp_status_t bp_layer_norm(bp_stream_t *sh, const bp_tensor_t *x, const bp_tensor_t *gamma,
                          const bp_tensor_t *beta, double eps, const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_layer_norm", "stream");
  return norm_common(s, BP_OP_LAYER_NORM, "bp_layer_norm", x, gamma, beta, eps, y);
}

bp_status_t bp_rms_norm(bp_stream_t *sh, const bp_tensor_t *x, const bp_tensor_t *gamma, double eps,
                        const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_rms_norm", "stream");
  return norm_common(s, BP_OP_RMS_NORM, "bp_rms_norm", x, gamma, NULL, eps, y);
}

bp_status_t bp_softmax(bp_stream_t *sh, const bp_tensor_t *x, int32_t axis, bool log,
                       const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_softmax", "stream");
  const char *op = log ? "bp_softmax (log)" : "bp_softmax";
  bp_softmax_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.log = log;
  bp_status_t st = bp__check_tensors(s, op, 2, NT(x, y), NN("x", "y"));
  if (st == BP_OK) st = bp__check_float_dtypes(op, 2, NT(x, y), NN("x", "y"));
  if (st == BP_OK) st = bp__normalize_axis(op, axis, x->rank, &a.axis);
  if (st == BP_OK) st = bp__same_shape(x, y, op, "x", "y");
  if (st == BP_OK) st = bp__check_output(op, y, "y", 1, NT(x), NN("x"), true);
  if (st == BP_OK) st = bp__require_op(s->device, BP_OP_SOFTMAX, x->dtype, op);
  if (st != BP_OK || bp_tensor_numel(y) == 0) return st;
  bp__tensor_to_plugin(x, &a.x);
  bp__tensor_to_plugin(y, &a.y);
  return bp__call_op(s, BP_OP_SOFTMAX, &a);
}

/* ---- adam --------------------------------------------------------------------*/

static bp_status_t adam_check_params(const char *op, const bp_adam_params_t *p) {
  if (!p || p->struct_size < sizeof *p)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: params %s", op, p ? "struct_size too small" : "is NULL");
  if (!(p->lr >= 0) || !(p->beta1 >= 0 && p->beta1 < 1) || !(p->beta2 >= 0 && p->beta2 < 1) ||
      !(p->eps >= 0) || !(p->weight_decay >= 0) || p->step < 1 || isinf(p->lr) || isinf(p->eps))
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: need lr >= 0, 0 <= beta1, beta2 < 1, eps >= 0, weight_decay >= 0, step >= 1", op);
  return BP_OK;
}

static bp_status_t adam_check_group(bp__stream_t *s, const char *op, uint32_t i,
                                    const bp_tensor_t *const *g) {
  static const char *const names[4] = {"params", "grads", "exp_avg", "exp_avg_sq"};
  bp_status_t st = BP_OK;
  for (int j = 0; st == BP_OK && j < 4; j++) {
    st = bp__tensor_check(g[j], s->device, op, names[j]);
    if (st == BP_OK && j > 0) st = bp__same_shape(g[0], g[j], op, names[0], names[j]);
  }
  if (st == BP_OK) st = bp__check_float_dtypes(op, 4, g, names);
  for (int j = 0; st == BP_OK && j < 4; j++)
    for (int m = j + 1; m < 4; m++)
      if (bp__tensors_overlap(g[j], g[m]))
        st = bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: tensor %u: %s overlaps %s", op, i, names[j], names[m]);
  if (st == BP_OK) st = bp__check_output(op, g[0], "params", 0, NULL, NULL, false);
  if (st != BP_OK) {
    char msg[900];
    snprintf(msg, sizeof msg, "%s", bp_last_error());
    return bp__fail(st, "%s (tensor %u)", msg, i);
  }
  return BP_OK;
}

typedef struct byte_range {
  const void *buffer;
  __int128 start, end;
  bool written;
  uint32_t index;
} byte_range_t;

static int compare_ranges(const void *pa, const void *pb) {
  const byte_range_t *a = pa, *b = pb;
  if (a->buffer != b->buffer) return (uintptr_t)a->buffer < (uintptr_t)b->buffer ? -1 : 1;
  return a->start < b->start ? -1 : a->start > b->start;
}

/* Across all groups, nothing Adam writes (params, exp_avg, exp_avg_sq) may
 * share memory with any other tensor of the call; gradients may share. */
static bp_status_t adam_check_disjoint(const char *op, uint32_t count, const bp_tensor_t *const *arrays) {
  byte_range_t *r = calloc(4 * (size_t)count, sizeof *r);
  if (!r) return bp__fail(BP_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
  size_t n = 0;
  for (int a = 0; a < 4; a++)
    for (uint32_t i = 0; i < count; i++) {
      const bp_tensor_t *t = &arrays[a][i];
      int64_t numel = bp_tensor_numel(t);
      if (!numel) continue;
      __int128 lo = 0, hi = 0, es = bp_dtype_size(t->dtype);
      for (int d = 0; d < t->rank; d++) {
        __int128 span = (__int128)(t->shape[d] - 1) * t->strides[d];
        if (span < 0) lo += span; else hi += span;
      }
      r[n++] = (byte_range_t){t->buffer, t->offset + lo * es, t->offset + (hi + 1) * es, a != 1, i};
    }
  qsort(r, n, sizeof *r, compare_ranges);
  bp_status_t st = BP_OK;
  __int128 end_any = 0, end_written = 0;
  for (size_t i = 0; i < n && st == BP_OK; i++) {
    if (i == 0 || r[i].buffer != r[i - 1].buffer) end_any = end_written = 0;
    if (r[i].start < end_written || (r[i].written && r[i].start < end_any))
      st = bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: tensor %u overlaps another tensor of the call that Adam updates", op,
                    r[i].index);
    if (r[i].end > end_any) end_any = r[i].end;
    if (r[i].written && r[i].end > end_written) end_written = r[i].end;
  }
  free(r);
  return st;
}

bp_status_t bp_adam(bp_stream_t *sh, const bp_adam_params_t *p, uint32_t count,
                    const bp_tensor_t *params, const bp_tensor_t *grads, const bp_tensor_t *exp_avg,
                    const bp_tensor_t *exp_avg_sq) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_adam", "stream");
  const char *op = "bp_adam";
  bp_status_t st = BP_OK;
  if (st == BP_OK) st = adam_check_params(op, p);
  if (st != BP_OK) return st;
  if (count == 0) return BP_OK;
  if (!params || !grads || !exp_avg || !exp_avg_sq)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: a tensor array is NULL", op);
  if (count > (1u << 20)) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: count %u is absurd", op, count);
  for (uint32_t i = 0; i < count; i++)
    if ((st = adam_check_group(s, op, i, NT(&params[i], &grads[i], &exp_avg[i], &exp_avg_sq[i]))))
      return st;
  if ((st = adam_check_disjoint(op, count, NT(params, grads, exp_avg, exp_avg_sq)))) return st;
  for (uint32_t i = 0; i < count; i++)
    if ((st = bp__tensor_writable(op, &params[i], "params")) ||
        (st = bp__tensor_writable(op, &exp_avg[i], "exp_avg")) ||
        (st = bp__tensor_writable(op, &exp_avg_sq[i], "exp_avg_sq")))
      return st;
  for (uint32_t i = 0; i < count; i++)
    if ((st = bp__require_op(s->device, BP_OP_ADAM, params[i].dtype, op))) return st;
  bp_plugin_tensor_t *t = calloc(4 * (size_t)count, sizeof *t);
  if (!t) return bp__fail(BP_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
  for (uint32_t i = 0; i < count; i++) {
    bp__tensor_to_plugin(&params[i], &t[i]);
    bp__tensor_to_plugin(&grads[i], &t[count + i]);
    bp__tensor_to_plugin(&exp_avg[i], &t[2 * count + i]);
    bp__tensor_to_plugin(&exp_avg_sq[i], &t[3 * count + i]);
  }
  bp_adam_args_t a = {sizeof a, p->adamw, p->step, p->lr, p->beta1, p->beta2, p->eps,
                      p->weight_decay, count, t, t + count, t + 2 * count, t + 3 * count};
  st = bp__call_op(s, BP_OP_ADAM, &a);
  free(t);
  return st;
}
