/*
 * model.c — the model's configuration, weights (bp_random), RoPE tables,
 * buffers and timing; the blocks themselves are in model_forward.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/model/model_internal.h"

#define TRY(call)                                                                                  \
  do {                                                                                             \
    bp_status_t st_ = (call);                                                                      \
    if (st_ != BP_OK) return st_;                                                                  \
  } while (0)

void model_config_default(model_config_t *cfg, model_kind_t kind, bp_dtype_t dtype, int64_t d_model,
                          int64_t heads, int32_t layers, int64_t batch, int64_t max_seq) {
  memset(cfg, 0, sizeof *cfg);
  cfg->kind = kind;
  cfg->dtype = dtype;
  cfg->layers = layers;
  cfg->d_model = d_model;
  cfg->heads = heads;
  cfg->kv_heads = kind == MODEL_LLAMA ? 2 : heads;
  /* Llama's SwiGLU keeps the parameter count of a 4x MLP: 2/3 of 4x. */
  cfg->d_ff = kind == MODEL_LLAMA ? (8 * d_model / 3 + 31) / 32 * 32 : 4 * d_model;
  cfg->vocab = 512;
  cfg->batch = batch;
  cfg->max_seq = max_seq;
  cfg->seed = 2024;
}

bp_tensor_t model_view(const model_t *m, bp_buffer_t *b, int64_t off, int32_t rank,
                       const int64_t *shape, const int64_t *strides) {
  bp_tensor_t t;
  memset(&t, 0, sizeof t);
  t.buffer = b;
  t.offset = (uint64_t)off * m->esz;
  t.dtype = m->cfg.dtype;
  t.rank = rank;
  int64_t stride = 1;
  for (int32_t i = rank - 1; i >= 0; i--) {
    t.shape[i] = shape[i];
    t.strides[i] = strides ? strides[i] : stride;
    stride *= shape[i];
  }
  return t;
}

static bool config_valid(const model_config_t *c) {
  return (c->dtype == BP_F32 || c->dtype == BP_BF16) && c->layers >= 1 &&
         c->layers <= MODEL_MAX_LAYERS && c->heads > 0 && c->kv_heads > 0 &&
         c->heads % c->kv_heads == 0 && c->d_model % c->heads == 0 &&
         (c->d_model / c->heads) % 2 == 0 && c->d_ff > 0 && c->vocab > 0 && c->batch > 0 &&
         c->max_seq > 0 && (c->kind == MODEL_LLAMA || c->kv_heads == c->heads);
}

/* Allocates numel elements of the model's dtype and remembers the buffer. */
static bp_status_t alloc(model_t *m, bp_device_t *dev, int64_t numel, bp_buffer_t **out) {
  if (m->nall == (int)(sizeof m->all / sizeof m->all[0])) return BP_ERR_INTERNAL;
  TRY(bp_buffer_alloc(dev, (uint64_t)numel * m->esz, out));
  m->all[m->nall++] = *out;
  return BP_OK;
}

/* A weight of numel elements from Philox stream (seed, *offset): normal
 * with standard deviation 1/sqrt(fan_in) when fan_in > 0, else uniform in
 * [lo, hi). Each weight takes the next offset, so the weights differ. */
static bp_status_t weight(model_t *m, bp_device_t *dev, bp_stream_t *s, int64_t numel,
                          int64_t fan_in, double lo, double hi, uint64_t *offset,
                          bp_buffer_t **out) {
  TRY(alloc(m, dev, numel, out));
  int64_t shape[1] = {numel};
  bp_tensor_t t = model_view(m, *out, 0, 1, shape, NULL);
  m->weight_bytes += (double)numel * (double)m->esz;
  uint64_t off = (*offset)++;
  if (fan_in > 0)
    return bp_random(s, BP_RANDOM_NORMAL, m->cfg.seed, off, 0.0, 1.0 / sqrt((double)fan_in), &t);
  return bp_random(s, BP_RANDOM_UNIFORM, m->cfg.seed, off, lo, hi, &t);
}

static bp_status_t layer_weights(model_t *m, bp_device_t *dev, bp_stream_t *s, model_layer_t *l,
                                 uint64_t *off) {
  const model_config_t *c = &m->cfg;
  int64_t d = c->d_model, f = c->d_ff;
  bool gpt = c->kind == MODEL_GPT2;
  int64_t up = gpt ? f : 2 * f;
  TRY(weight(m, dev, s, d, 0, 0.8, 1.2, off, &l->norm1_g));
  TRY(weight(m, dev, s, d, 0, 0.8, 1.2, off, &l->norm2_g));
  TRY(weight(m, dev, s, d * m->qkv_width, d, 0, 0, off, &l->w_qkv));
  TRY(weight(m, dev, s, d * d, d, 0, 0, off, &l->w_o));
  TRY(weight(m, dev, s, d * up, d, 0, 0, off, &l->w_up));
  TRY(weight(m, dev, s, f * d, f, 0, 0, off, &l->w_down));
  if (gpt) {
    TRY(weight(m, dev, s, d, 0, -0.1, 0.1, off, &l->norm1_b));
    TRY(weight(m, dev, s, d, 0, -0.1, 0.1, off, &l->norm2_b));
    TRY(weight(m, dev, s, m->qkv_width, 0, -0.1, 0.1, off, &l->b_qkv));
    TRY(weight(m, dev, s, d, 0, -0.1, 0.1, off, &l->b_o));
    TRY(weight(m, dev, s, f, 0, -0.1, 0.1, off, &l->b_up));
    TRY(weight(m, dev, s, d, 0, -0.1, 0.1, off, &l->b_down));
  }
  int64_t cache = c->batch * c->kv_heads * c->max_seq * m->head_dim;
  TRY(alloc(m, dev, cache, &l->k_cache));
  TRY(alloc(m, dev, cache, &l->v_cache));
  return BP_OK;
}

/* cos and sin of p * 10000^(-2i/Dh) for every position p and pair i, in
 * f32 on the host, cast to the model's dtype on the device. */
static bp_status_t rope_tables(model_t *m, bp_device_t *dev, bp_stream_t *s) {
  int64_t half = m->head_dim / 2, n = m->cfg.max_seq * half;
  float *host = malloc((size_t)n * 2 * sizeof *host);
  if (!host) return BP_ERR_OUT_OF_MEMORY;
  for (int64_t p = 0; p < m->cfg.max_seq; p++)
    for (int64_t i = 0; i < half; i++) {
      double angle = (double)p * pow(10000.0, -2.0 * (double)i / (double)m->head_dim);
      host[p * half + i] = (float)cos(angle);
      host[n + p * half + i] = (float)sin(angle);
    }
  bp_buffer_t *stage = NULL;
  bp_status_t st = alloc(m, dev, n, &m->rope_cos);
  if (st == BP_OK) st = alloc(m, dev, n, &m->rope_sin);
  if (st == BP_OK) st = bp_buffer_alloc(dev, (uint64_t)n * 2 * sizeof(float), &stage);
  if (st == BP_OK) st = bp_buffer_write(stage, 0, host, (uint64_t)n * 2 * sizeof(float));
  for (int i = 0; i < 2 && st == BP_OK; i++) {
    bp_tensor_t from, to = model_view(m, i ? m->rope_sin : m->rope_cos, 0, 1, &n, NULL);
    st = bp_tensor_init(stage, (uint64_t)(i * n) * sizeof(float), BP_F32, 1, &n, NULL, &from);
    if (st == BP_OK) st = bp_cast(s, &from, &to);
  }
  if (st == BP_OK) st = bp_stream_synchronize(s);
  bp_buffer_free(stage);
  free(host);
  return st;
}

static bp_status_t activations(model_t *m, bp_device_t *dev) {
  const model_config_t *c = &m->cfg;
  int64_t t = m->tokens, d = c->d_model;
  int64_t ff = c->kind == MODEL_LLAMA ? 2 * c->d_ff : c->d_ff;
  TRY(alloc(m, dev, t * d, &m->x));
  TRY(alloc(m, dev, t * d, &m->h));
  TRY(alloc(m, dev, t * m->qkv_width, &m->qkv));
  TRY(alloc(m, dev, t * d, &m->q_rot));
  TRY(alloc(m, dev, t * d / 2, &m->rope_t1));
  TRY(alloc(m, dev, t * d / 2, &m->rope_t2));
  TRY(alloc(m, dev, t * d, &m->attn));
  TRY(alloc(m, dev, t * ff, &m->ff));
  TRY(alloc(m, dev, t * c->d_ff, &m->ff2));
  TRY(alloc(m, dev, t * c->vocab, &m->logits));
  return BP_OK;
}

static bp_status_t build(model_t *m, bp_device_t *dev, bp_stream_t *s) {
  const model_config_t *c = &m->cfg;
  uint64_t off = 0;
  for (int32_t i = 0; i < c->layers; i++) TRY(layer_weights(m, dev, s, &m->layer[i], &off));
  TRY(weight(m, dev, s, c->d_model, 0, 0.8, 1.2, &off, &m->normf_g));
  if (c->kind == MODEL_GPT2) TRY(weight(m, dev, s, c->d_model, 0, -0.1, 0.1, &off, &m->normf_b));
  TRY(weight(m, dev, s, c->d_model * c->vocab, c->d_model, 0, 0, &off, &m->w_lm));
  TRY(activations(m, dev));
  if (c->kind == MODEL_LLAMA) TRY(rope_tables(m, dev, s));
  return bp_stream_synchronize(s);
}

bp_status_t model_create(bp_device_t *device, bp_stream_t *stream, const model_config_t *cfg,
                         model_t **out) {
  *out = NULL;
  if (!device || !stream || !cfg || !config_valid(cfg)) return BP_ERR_INVALID_ARGUMENT;
  model_t *m = calloc(1, sizeof *m);
  if (!m) return BP_ERR_OUT_OF_MEMORY;
  m->cfg = *cfg;
  m->esz = cfg->dtype == BP_F32 ? 4 : 2;
  m->head_dim = cfg->d_model / cfg->heads;
  m->kv_dim = cfg->kv_heads * m->head_dim;
  m->qkv_width = cfg->d_model + 2 * m->kv_dim;
  m->tokens = cfg->batch * cfg->max_seq;
  bp_device_supports(device, BP_OP_ROPE, cfg->dtype, &m->native_rope);
  bp_device_supports(device, BP_OP_GLU, cfg->dtype, &m->native_glu);
  bp_status_t st = build(m, device, stream);
  if (st != BP_OK) {
    model_destroy(m);
    return st;
  }
  *out = m;
  return BP_OK;
}

void model_destroy(model_t *m) {
  if (!m) return;
  for (int i = 0; i < m->nall; i++) bp_buffer_free(m->all[i]);
  free(m);
}

bp_buffer_t *model_logits(const model_t *m) {
  return m->logits;
}
bp_buffer_t *model_qkv_weight(const model_t *m, int32_t layer) {
  return m->layer[layer].w_qkv;
}
const model_config_t *model_config(const model_t *m) {
  return &m->cfg;
}
double model_weight_bytes(const model_t *m) {
  return m->weight_bytes;
}

double model_forward_flops(const model_t *m, int64_t seq, int64_t pos) {
  const model_config_t *c = &m->cfg;
  double t = (double)(c->batch * seq), d = (double)c->d_model, f = (double)c->d_ff;
  double up = c->kind == MODEL_LLAMA ? 2 * f : f;
  double linear = d * (double)m->qkv_width + d * d + d * up + f * d;
  /* q·kᵀ and p·v over the visible keys (about half the rows when causal) */
  double keys = (double)pos + ((double)seq + 1) / 2;
  double attention = 2.0 * t * keys * d;
  return 2.0 * (t * linear * c->layers + t * d * (double)c->vocab) + 2.0 * attention * c->layers;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double model_time_forward(model_t *m, bp_stream_t *stream, const bp_tensor_t *input, int64_t seq,
                          int64_t pos, int warmup, int reps) {
  double best = -1;
  for (int i = 0; i < warmup + reps; i++) {
    double t0 = now_ms();
    if (model_forward(m, stream, input, seq, pos) != BP_OK) return -1;
    if (bp_stream_synchronize(stream) != BP_OK) return -1;
    double ms = now_ms() - t0;
    if (i >= warmup && (best < 0 || ms < best)) best = ms;
  }
  return best;
}
