/*
 * cases.c — setting up, running and timing the op cases of bp run and
 * bp bench through the public API.
 */
#include "cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp.h"

static const char *const op_names[BPT_OP_COUNT] = {
    "gemm", "attention", "conv2d", "softmax", "layer_norm", "add", "gelu"};

const char *bpt_op_name(bpt_op_t op) {
  return (unsigned)op < BPT_OP_COUNT ? op_names[op] : "?";
}

bool bpt_op_parse(const char *name, bpt_op_t *out_op) {
  for (int i = 0; i < BPT_OP_COUNT; i++)
    if (!strcmp(name, op_names[i])) {
      *out_op = (bpt_op_t)i;
      return true;
    }
  return false;
}

static int64_t conv_out(const bpt_case_t *c) {
  return (c->hw + 2 * c->pad - c->r) / c->stride + 1;
}

void bpt_case_label(const bpt_case_t *c, char *out, size_t size) {
  switch (c->op) {
  case BPT_GEMM:
    if (c->batch > 1)
      snprintf(out, size, "%lldx(%lldx%lldx%lld)%s", (long long)c->batch,
               (long long)c->m, (long long)c->n, (long long)c->k, c->trans_b ? " B^T" : "");
    else
      snprintf(out, size, "%lldx%lldx%lld%s", (long long)c->m, (long long)c->n,
               (long long)c->k, c->trans_b ? " B^T" : "");
    break;
  case BPT_ATTENTION:
    snprintf(out, size, "B%lld H%lld S%lld D%lld%s", (long long)c->batch,
             (long long)c->heads, (long long)c->seq, (long long)c->dim,
             c->causal ? " causal" : "");
    break;
  case BPT_CONV2D:
    snprintf(out, size, "%lldx%lldx%lldx%lld K%lld %lldx%lld s%lld%s",
             (long long)c->batch, (long long)c->c, (long long)c->hw,
             (long long)c->hw, (long long)c->k, (long long)c->r,
             (long long)c->r, (long long)c->stride,
             c->groups > 1 ? " dw" : "");
    break;
  case BPT_SOFTMAX:
  case BPT_LAYER_NORM:
  case BPT_GELU:
    snprintf(out, size, "%lldx%lld", (long long)c->m, (long long)c->n);
    break;
  case BPT_ADD:
    snprintf(out, size, "%lld", (long long)c->n);
    break;
  default:
    snprintf(out, size, "?");
  }
}

double bpt_case_flops(const bpt_case_t *c) {
  switch (c->op) {
  case BPT_GEMM:
    return 2.0 * (double)c->batch * (double)c->m * (double)c->n * (double)c->k;
  case BPT_ATTENTION: {
    /* q·kᵀ and p·v; a causal mask halves the useful work (FlashAttention's
     * convention). */
    double f = 4.0 * (double)c->batch * (double)c->heads * (double)c->seq *
               (double)c->seq * (double)c->dim;
    return c->causal ? f / 2 : f;
  }
  case BPT_CONV2D: {
    double p = (double)conv_out(c);
    return 2.0 * (double)c->batch * (double)c->k * p * p *
           (double)(c->c / c->groups) * (double)(c->r * c->r);
  }
  default:
    return 0;
  }
}

double bpt_case_bytes(const bpt_case_t *c) {
  double es = (double)bp_dtype_size(c->dtype);
  switch (c->op) {
  case BPT_SOFTMAX:
  case BPT_LAYER_NORM:
  case BPT_GELU:
    return 2.0 * (double)c->m * (double)c->n * es;
  case BPT_ADD:
    return 3.0 * (double)c->n * es;
  default:
    return 0;
  }
}

bp_op_t bpt_case_bp_op(const bpt_case_t *c) {
  static const bp_op_t map[BPT_OP_COUNT] = {BP_OP_GEMM,    BP_OP_ATTENTION,
                                            BP_OP_CONV2D,  BP_OP_SOFTMAX,
                                            BP_OP_LAYER_NORM, BP_OP_BINARY,
                                            BP_OP_UNARY};
  return map[c->op];
}

/* Element counts of the inputs and the output of c. */
static int case_sizes(const bpt_case_t *c, int64_t in[3], int64_t *out) {
  switch (c->op) {
  case BPT_GEMM:
    in[0] = c->batch * c->m * c->k;
    in[1] = c->batch * c->k * c->n;
    *out = c->batch * c->m * c->n;
    return 2;
  case BPT_ATTENTION:
    in[0] = in[1] = in[2] = c->batch * c->heads * c->seq * c->dim;
    *out = in[0];
    return 3;
  case BPT_CONV2D:
    in[0] = c->batch * c->c * c->hw * c->hw;
    in[1] = c->k * (c->c / c->groups) * c->r * c->r;
    *out = c->batch * c->k * conv_out(c) * conv_out(c);
    return 2;
  case BPT_SOFTMAX:
  case BPT_LAYER_NORM:
  case BPT_GELU:
    in[0] = *out = c->m * c->n;
    return 1;
  case BPT_ADD:
    in[0] = in[1] = *out = c->n;
    return 2;
  default:
    return -1;
  }
}

/* A contiguous tensor of the case's dtype over buf. */
static bp_status_t tensor(bp_buffer_t *buf, bp_dtype_t dt, int32_t rank,
                          const int64_t *shape, bp_tensor_t *out) {
  return bp_tensor_init(buf, 0, dt, rank, shape, NULL, out);
}

/* Uniform [-1, 1) floats from a host generator (splitmix64), for devices
 * without a random op. */
static bp_status_t fill_host(bpt_instance_t *inst, int i, uint64_t seed) {
  if (inst->c.dtype != BP_F32) return BP_ERR_UNSUPPORTED;
  size_t n = (size_t)inst->in_numel[i];
  float *h = malloc(n * sizeof *h);
  if (!h) return BP_ERR_OUT_OF_MEMORY;
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i;
  for (size_t j = 0; j < n; j++) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    h[j] = (float)((double)(z >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
  }
  bp_status_t st = bp_buffer_write(inst->in[i], 0, h, n * sizeof *h);
  free(h);
  return st;
}

static bp_status_t fill_random(bpt_instance_t *inst, int i, uint64_t seed) {
  bool native = false;
  bp_device_supports(inst->device, BP_OP_RANDOM, inst->c.dtype, &native);
  if (!native) return fill_host(inst, i, seed);
  bp_tensor_t t;
  int64_t n = inst->in_numel[i];
  bp_status_t st = tensor(inst->in[i], inst->c.dtype, 1, &n, &t);
  if (st == BP_OK)
    st = bp_random(inst->stream, BP_RANDOM_UNIFORM, seed + (uint64_t)i, 0,
                   -1.0, 1.0, &t);
  return st;
}

bp_status_t bpt_instance_create(const bpt_case_t *c, bp_device_t *device,
                                uint64_t seed, bpt_instance_t *out) {
  memset(out, 0, sizeof *out);
  out->c = *c;
  out->device = device;
  out->inputs = case_sizes(c, out->in_numel, &out->out_numel);
  if (out->inputs < 0) return BP_ERR_INVALID_ARGUMENT;
  uint64_t es = bp_dtype_size(c->dtype);
  const char *step = "creating a stream";
  bp_status_t st = bp_stream_create(device, &out->stream);
  if (st == BP_OK) step = "allocating";
  for (int i = 0; st == BP_OK && i < out->inputs; i++)
    st = bp_buffer_alloc(device, (uint64_t)out->in_numel[i] * es, &out->in[i]);
  if (st == BP_OK)
    st = bp_buffer_alloc(device, (uint64_t)out->out_numel * es, &out->out);
  if (st == BP_OK) step = "filling inputs";
  for (int i = 0; st == BP_OK && i < out->inputs; i++)
    st = fill_random(out, i, seed);
  if (st == BP_OK) st = bp_stream_synchronize(out->stream);
  /* a network's conv weights are constant: the backend may keep them
   * packed or transformed between calls, as oneDNN's anchor keeps its
   * weights reordered (bp_buffer_set_constant) */
  if (st == BP_OK && c->op == BPT_CONV2D) st = bp_buffer_set_constant(out->in[1], true);
  if (st != BP_OK) {
    char msg[sizeof out->error];
    snprintf(msg, sizeof msg, "%s: %s%s%s", step, bp_status_string(st),
             bp_last_error()[0] ? ": " : "", bp_last_error());
    bpt_instance_destroy(out);
    memcpy(out->error, msg, sizeof msg);
  }
  return st;
}

void bpt_instance_destroy(bpt_instance_t *inst) {
  if (inst->stream) bp_stream_synchronize(inst->stream);
  for (int i = 0; i < 3; i++) bp_buffer_free(inst->in[i]);
  bp_buffer_free(inst->out);
  bp_stream_destroy(inst->stream);
  memset(inst, 0, sizeof *inst);
}

static bp_status_t exec_gemm(bpt_instance_t *x) {
  const bpt_case_t *c = &x->c;
  bp_transpose_t tb = c->trans_b ? BP_TRANS : BP_NO_TRANS;
  int64_t ldb = c->trans_b ? c->k : c->n;
  if (c->batch <= 1)
    return bp_gemm(x->stream, c->dtype, BP_ROW_MAJOR, BP_NO_TRANS, tb, c->m, c->n, c->k, 1.0,
                   x->in[0], 0, c->k, x->in[1], 0, ldb, 0.0, x->out, 0, c->n);
  return bp_gemm_strided_batched(x->stream, c->dtype, BP_ROW_MAJOR, BP_NO_TRANS, tb, c->m, c->n,
                                 c->k, 1.0, x->in[0], 0, c->k, c->m * c->k, x->in[1], 0, ldb,
                                 c->k * c->n, 0.0, x->out, 0, c->n, c->m * c->n, c->batch);
}

static bp_status_t exec_attention(bpt_instance_t *x) {
  const bpt_case_t *c = &x->c;
  int64_t shape[4] = {c->batch, c->heads, c->seq, c->dim};
  bp_tensor_t q, k, v, o;
  bp_status_t st = tensor(x->in[0], c->dtype, 4, shape, &q);
  if (st == BP_OK) st = tensor(x->in[1], c->dtype, 4, shape, &k);
  if (st == BP_OK) st = tensor(x->in[2], c->dtype, 4, shape, &v);
  if (st == BP_OK) st = tensor(x->out, c->dtype, 4, shape, &o);
  if (st == BP_OK) st = bp_attention(x->stream, &q, &k, &v, 0.0, c->causal, &o);
  return st;
}

static bp_status_t exec_conv2d(bpt_instance_t *x) {
  const bpt_case_t *c = &x->c;
  int64_t p = conv_out(c);
  int64_t xs[4] = {c->batch, c->c, c->hw, c->hw};
  int64_t ws[4] = {c->k, c->c / c->groups, c->r, c->r};
  int64_t ys[4] = {c->batch, c->k, p, p};
  bp_conv2d_params_t prm = {.struct_size = sizeof prm,
                            .stride_h = (int32_t)c->stride,
                            .stride_w = (int32_t)c->stride,
                            .pad_h = (int32_t)c->pad,
                            .pad_w = (int32_t)c->pad,
                            .groups = (int32_t)c->groups};
  bp_tensor_t tx, tw, ty;
  bp_status_t st = tensor(x->in[0], c->dtype, 4, xs, &tx);
  if (st == BP_OK) st = tensor(x->in[1], c->dtype, 4, ws, &tw);
  if (st == BP_OK) st = tensor(x->out, c->dtype, 4, ys, &ty);
  if (st == BP_OK) st = bp_conv2d(x->stream, &prm, &tx, &tw, NULL, &ty);
  return st;
}

static bp_status_t exec_rows(bpt_instance_t *x) {
  const bpt_case_t *c = &x->c;
  int64_t shape[2] = {c->m, c->n};
  bp_tensor_t tx, ty;
  bp_status_t st = tensor(x->in[0], c->dtype, 2, shape, &tx);
  if (st == BP_OK) st = tensor(x->out, c->dtype, 2, shape, &ty);
  if (st != BP_OK) return st;
  if (c->op == BPT_SOFTMAX) return bp_softmax(x->stream, &tx, -1, false, &ty);
  if (c->op == BPT_GELU) return bp_unary(x->stream, BP_UNARY_GELU, &tx, &ty);
  return bp_layer_norm(x->stream, &tx, NULL, NULL, 1e-5, &ty);
}

static bp_status_t exec_add(bpt_instance_t *x) {
  bp_tensor_t a, b, y;
  int64_t n = x->c.n;
  bp_status_t st = tensor(x->in[0], x->c.dtype, 1, &n, &a);
  if (st == BP_OK) st = tensor(x->in[1], x->c.dtype, 1, &n, &b);
  if (st == BP_OK) st = tensor(x->out, x->c.dtype, 1, &n, &y);
  if (st == BP_OK) st = bp_binary(x->stream, BP_BINARY_ADD, &a, &b, &y);
  return st;
}

bp_status_t bpt_instance_exec(bpt_instance_t *inst) {
  switch (inst->c.op) {
  case BPT_GEMM: return exec_gemm(inst);
  case BPT_ATTENTION: return exec_attention(inst);
  case BPT_CONV2D: return exec_conv2d(inst);
  case BPT_SOFTMAX:
  case BPT_LAYER_NORM:
  case BPT_GELU: return exec_rows(inst);
  case BPT_ADD: return exec_add(inst);
  default: return BP_ERR_INVALID_ARGUMENT;
  }
}

bp_status_t bpt_instance_read_input(bpt_instance_t *inst, int i, float *dst) {
  return bp_buffer_read(inst->in[i], 0, dst,
                        (uint64_t)inst->in_numel[i] * sizeof(float));
}

bp_status_t bpt_instance_write_input(bpt_instance_t *inst, int i,
                                     const float *src) {
  bool constant = false;
  bp_status_t st = bp_buffer_is_constant(inst->in[i], &constant);
  if (st == BP_OK && constant) st = bp_buffer_set_constant(inst->in[i], false);
  if (st == BP_OK)
    st = bp_buffer_write(inst->in[i], 0, src, (uint64_t)inst->in_numel[i] * sizeof(float));
  if (st == BP_OK && constant) st = bp_buffer_set_constant(inst->in[i], true);
  return st;
}

bp_status_t bpt_instance_read_output(bpt_instance_t *inst, float *dst) {
  return bp_buffer_read(inst->out, 0, dst,
                        (uint64_t)inst->out_numel * sizeof(float));
}

/* One call timed between two device synchronisations, in seconds. */
static bp_status_t time_once(bpt_instance_t *inst, double *out_s) {
  bp_status_t st = bp_device_synchronize(inst->device);
  double t0 = bpt_now();
  if (st == BP_OK) st = bpt_instance_exec(inst);
  if (st == BP_OK) st = bp_device_synchronize(inst->device);
  *out_s = bpt_now() - t0;
  return st;
}

bp_status_t bpt_instance_time(bpt_instance_t *inst, int warmup, int reps,
                              int max_reps, double min_seconds,
                              double *out_best_ms) {
  double s, best = 1e300, total = 0;
  *out_best_ms = 0;
  bp_status_t st = BP_OK;
  for (int i = 0; st == BP_OK && i < warmup; i++) st = time_once(inst, &s);
  for (int i = 0; st == BP_OK && i < max_reps; i++) {
    if (i >= reps && total >= min_seconds) break;
    st = time_once(inst, &s);
    total += s;
    if (s < best) best = s;
  }
  if (st == BP_OK) *out_best_ms = best * 1e3;
  return st;
}
