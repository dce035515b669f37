/*
 * model_forward.c — the GPT-2 and Llama blocks as sequences of backplane
 * ops (model.h says what each block is). Every op is enqueued on one
 * stream and nothing is read back, so a whole forward can be captured into
 * a graph. Activations are row-major [tokens, features], tokens ordered
 * (batch, position); heads are views with strides, never copies, except
 * the keys and values that go into the cache.
 */
#include <string.h>

#include "tools/model/model_internal.h"

#define TRY(call)                                                                                  \
  do {                                                                                             \
    bp_status_t st_ = (call);                                                                      \
    if (st_ != BP_OK) return st_;                                                                  \
  } while (0)

/* A rank-2 row-major view [rows, cols] with row stride ld at element off. */
static bp_tensor_t mat(const model_t *m, bp_buffer_t *b, int64_t off, int64_t rows, int64_t cols,
                       int64_t ld) {
  int64_t shape[2] = {rows, cols}, strides[2] = {ld, 1};
  return model_view(m, b, off, 2, shape, strides);
}

/* A rank-4 view with the given shape and strides at element off. */
static bp_tensor_t v4(const model_t *m, bp_buffer_t *b, int64_t off, int64_t d0, int64_t d1,
                      int64_t d2, int64_t d3, int64_t s0, int64_t s1, int64_t s2, int64_t s3) {
  int64_t shape[4] = {d0, d1, d2, d3}, strides[4] = {s0, s1, s2, s3};
  return model_view(m, b, off, 4, shape, strides);
}

/* out[rows, n] = act(in[rows, k] · w[k, n] + beta * out + bias[n]): one
 * GEMM with its epilogue (bias broadcast over rows, GELU when gelu; beta 1
 * adds into out, the residual stream), so a device that fuses it writes out
 * once and rounds once; on another the core composes the same ops. */
static bp_status_t linear_ex(const model_t *m, bp_stream_t *s, bp_buffer_t *in, int64_t rows,
                             int64_t k, bp_buffer_t *w, int64_t n, bp_buffer_t *bias, bool gelu,
                             double beta, bp_buffer_t *out) {
  int64_t len[1] = {n};
  bp_tensor_t bv;
  bp_gemm_epilogue_t ep = {.struct_size = sizeof ep, .activate = gelu,
                           .activation = BP_UNARY_GELU};
  if (bias) {
    bv = model_view(m, bias, 0, 1, len, NULL);
    ep.bias = &bv;
  }
  return bp_gemm_ex(s, m->cfg.dtype, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, rows, n, k, 1.0, in,
                    0, k, w, 0, n, beta, out, 0, n, bias || gelu ? &ep : NULL);
}

/* out[rows, n] = in[rows, k] · w[k, n] (+ bias[n], broadcast over rows). */
static bp_status_t linear(const model_t *m, bp_stream_t *s, bp_buffer_t *in, int64_t rows,
                          int64_t k, bp_buffer_t *w, int64_t n, bp_buffer_t *bias,
                          bp_buffer_t *out) {
  return linear_ex(m, s, in, rows, k, w, n, bias, false, 0.0, out);
}

/* h = norm(x) over the last axis: LayerNorm (GPT-2) or RMSNorm (Llama). */
static bp_status_t norm(const model_t *m, bp_stream_t *s, int64_t rows, bp_buffer_t *gamma,
                        bp_buffer_t *beta) {
  int64_t d = m->cfg.d_model, one[1] = {d};
  bp_tensor_t x = mat(m, m->x, 0, rows, d, d), h = mat(m, m->h, 0, rows, d, d);
  bp_tensor_t g = model_view(m, gamma, 0, 1, one, NULL);
  if (m->cfg.kind == MODEL_LLAMA) return bp_rms_norm(s, &x, &g, 1e-6, &h);
  bp_tensor_t b = model_view(m, beta, 0, 1, one, NULL);
  return bp_layer_norm(s, &x, &g, &b, 1e-5, &h);
}


/* A view of layer l's cache [B, Hkv, rows, Dh] from row `from`. */
static bp_tensor_t cache_view(const model_t *m, bp_buffer_t *cache, int64_t from, int64_t rows) {
  int64_t ms = m->cfg.max_seq, dh = m->head_dim;
  return v4(m, cache, from * dh, m->cfg.batch, m->cfg.kv_heads, rows, dh, m->cfg.kv_heads * ms * dh,
            ms * dh, dh, 1);
}

/* Heads [B, nh, S, Dh] of the packed QKV rows, starting at column col. */
static bp_tensor_t qkv_heads(const model_t *m, int64_t col, int64_t nh, int64_t seq) {
  int64_t w = m->qkv_width;
  return v4(m, m->qkv, col, m->cfg.batch, nh, seq, m->head_dim, seq * w, m->head_dim, w, 1);
}

/* Appends the new values (and, for GPT-2, keys) to the cache at row pos. */
static bp_status_t cache_append(const model_t *m, bp_stream_t *s, const model_layer_t *l,
                                int64_t seq, int64_t pos, bool keys) {
  int64_t d = m->cfg.d_model, hkv = m->cfg.kv_heads;
  bp_tensor_t v = qkv_heads(m, d + m->kv_dim, hkv, seq), vc = cache_view(m, l->v_cache, 0, m->cfg.max_seq);
  TRY(bp_kv_append(s, &vc, &v, 2, pos));
  if (!keys) return BP_OK;
  bp_tensor_t k = qkv_heads(m, d, hkv, seq), kc = cache_view(m, l->k_cache, 0, m->cfg.max_seq);
  return bp_kv_append(s, &kc, &k, 2, pos);
}

/* out = attention(q, k, v) into m->attn [B, S, H, Dh] = [T, D]. */
static bp_status_t attend(const model_t *m, bp_stream_t *s, const bp_tensor_t *q,
                          const bp_tensor_t *k, const bp_tensor_t *v, int64_t seq) {
  int64_t d = m->cfg.d_model, dh = m->head_dim;
  bp_tensor_t out = v4(m, m->attn, 0, m->cfg.batch, m->cfg.heads, seq, dh, seq * d, dh, d, 1);
  return bp_attention(s, q, k, v, 0.0, true, &out);
}

static bp_status_t gpt2_attention(const model_t *m, bp_stream_t *s, const model_layer_t *l,
                                  int64_t seq, int64_t pos) {
  int64_t d = m->cfg.d_model, h = m->cfg.heads;
  TRY(cache_append(m, s, l, seq, pos, true));
  bp_tensor_t q = qkv_heads(m, 0, h, seq);
  if (pos == 0) { /* prefill: attend over the packed rows themselves */
    bp_tensor_t k = qkv_heads(m, d, h, seq), v = qkv_heads(m, 2 * d, h, seq);
    return attend(m, s, &q, &k, &v, seq);
  }
  bp_tensor_t k = cache_view(m, l->k_cache, 0, pos + seq),
              v = cache_view(m, l->v_cache, 0, pos + seq);
  return attend(m, s, &q, &k, &v, seq);
}

/* Half-split RoPE of nh heads of the QKV rows from column col, at
 * positions pos..: out1 = x1 cos - x2 sin, out2 = x2 cos + x1 sin, x1 and
 * x2 the two halves of each head. dst is a [B, S, nh, Dh/2] view of the
 * first halves' destination (the second halves are Dh/2 further). bp_rope
 * where the device runs it, else six bp_binary calls over the tables. */
static bp_status_t rope(const model_t *m, bp_stream_t *s, int64_t col, int64_t nh, int64_t seq,
                        int64_t pos, const bp_tensor_t *dst) {
  int64_t b = m->cfg.batch, dh = m->head_dim, half = dh / 2, w = m->qkv_width;
  if (m->native_rope) {
    bp_tensor_t x = v4(m, m->qkv, col, b, seq, nh, dh, seq * w, w, dh, 1), y = *dst;
    y.shape[3] = dh;
    return bp_rope(s, BP_ROPE_HALF, (int32_t)dh, 10000.0, pos, NULL, &x, &y);
  }
  bp_tensor_t x1 = v4(m, m->qkv, col, b, seq, nh, half, seq * w, w, dh, 1);
  bp_tensor_t x2 = v4(m, m->qkv, col + half, b, seq, nh, half, seq * w, w, dh, 1);
  bp_tensor_t c = v4(m, m->rope_cos, pos * half, b, seq, nh, half, 0, half, 0, 1);
  bp_tensor_t sn = v4(m, m->rope_sin, pos * half, b, seq, nh, half, 0, half, 0, 1);
  bp_tensor_t t1 = v4(m, m->rope_t1, 0, b, seq, nh, half, seq * nh * half, nh * half, half, 1);
  bp_tensor_t t2 = v4(m, m->rope_t2, 0, b, seq, nh, half, seq * nh * half, nh * half, half, 1);
  bp_tensor_t out2 = *dst;
  out2.offset += (uint64_t)half * m->esz;
  TRY(bp_binary(s, BP_BINARY_MUL, &x1, &c, &t1));
  TRY(bp_binary(s, BP_BINARY_MUL, &x2, &sn, &t2));
  TRY(bp_binary(s, BP_BINARY_SUB, &t1, &t2, dst));
  TRY(bp_binary(s, BP_BINARY_MUL, &x2, &c, &t1));
  TRY(bp_binary(s, BP_BINARY_MUL, &x1, &sn, &t2));
  return bp_binary(s, BP_BINARY_ADD, &t1, &t2, &out2);
}

static bp_status_t llama_attention(const model_t *m, bp_stream_t *s, const model_layer_t *l,
                                   int64_t seq, int64_t pos) {
  int64_t b = m->cfg.batch, d = m->cfg.d_model, h = m->cfg.heads, hkv = m->cfg.kv_heads;
  int64_t dh = m->head_dim, ms = m->cfg.max_seq;
  /* rotated queries into q_rot [T, D]; rotated keys straight into the cache */
  bp_tensor_t qdst = v4(m, m->q_rot, 0, b, seq, h, dh / 2, seq * d, d, dh, 1);
  bp_tensor_t kdst =
      v4(m, l->k_cache, pos * dh, b, seq, hkv, dh / 2, hkv * ms * dh, dh, ms * dh, 1);
  TRY(rope(m, s, 0, h, seq, pos, &qdst));
  TRY(rope(m, s, d, hkv, seq, pos, &kdst));
  TRY(cache_append(m, s, l, seq, pos, false));
  bp_tensor_t q = v4(m, m->q_rot, 0, b, h, seq, dh, seq * d, dh, d, 1);
  bp_tensor_t k = cache_view(m, l->k_cache, 0, pos + seq),
              v = cache_view(m, l->v_cache, 0, pos + seq);
  return attend(m, s, &q, &k, &v, seq);
}

static bp_status_t gpt2_mlp(const model_t *m, bp_stream_t *s, const model_layer_t *l,
                            int64_t rows) {
  int64_t d = m->cfg.d_model, f = m->cfg.d_ff;
  TRY(linear_ex(m, s, m->h, rows, d, l->w_up, f, l->b_up, true, 0.0, m->ff));
  /* x += the down projection (the residual add, in the GEMM's epilogue) */
  return linear_ex(m, s, m->ff, rows, f, l->w_down, d, l->b_down, false, 1.0, m->x);
}

/* SwiGLU: silu(h·W_gate) * (h·W_up), gate and up one packed projection
 * (bp_glu on its two halves where the device runs it). */
static bp_status_t llama_mlp(const model_t *m, bp_stream_t *s, const model_layer_t *l,
                             int64_t rows) {
  int64_t d = m->cfg.d_model, f = m->cfg.d_ff;
  TRY(linear(m, s, m->h, rows, d, l->w_up, 2 * f, NULL, m->ff));
  bp_tensor_t gate = mat(m, m->ff, 0, rows, f, 2 * f), up = mat(m, m->ff, f, rows, f, 2 * f);
  bp_tensor_t act = mat(m, m->ff2, 0, rows, f, f);
  if (m->native_glu) {
    TRY(bp_glu(s, BP_GLU_SWIGLU, &gate, &up, &act));
  } else { /* the device has no bp_glu: silu, then the product */
    TRY(bp_unary(s, BP_UNARY_SILU, &gate, &act));
    TRY(bp_binary(s, BP_BINARY_MUL, &act, &up, &act));
  }
  return linear_ex(m, s, m->ff2, rows, f, l->w_down, d, NULL, false, 1.0, m->x);
}

static bp_status_t block(const model_t *m, bp_stream_t *s, const model_layer_t *l, int64_t seq,
                         int64_t pos) {
  int64_t rows = m->cfg.batch * seq, d = m->cfg.d_model;
  bool gpt = m->cfg.kind == MODEL_GPT2;
  TRY(norm(m, s, rows, l->norm1_g, l->norm1_b));
  TRY(linear(m, s, m->h, rows, d, l->w_qkv, m->qkv_width, l->b_qkv, m->qkv));
  TRY(gpt ? gpt2_attention(m, s, l, seq, pos) : llama_attention(m, s, l, seq, pos));
  /* x += the output projection (the residual add, in the GEMM's epilogue) */
  TRY(linear_ex(m, s, m->attn, rows, d, l->w_o, d, l->b_o, false, 1.0, m->x));
  TRY(norm(m, s, rows, l->norm2_g, l->norm2_b));
  return gpt ? gpt2_mlp(m, s, l, rows) : llama_mlp(m, s, l, rows);
}

bp_status_t model_forward(model_t *m, bp_stream_t *stream, const bp_tensor_t *input, int64_t seq,
                          int64_t pos) {
  const model_config_t *c = &m->cfg;
  if (!input || seq < 1 || pos < 0 || pos + seq > c->max_seq || input->rank != 3 ||
      input->shape[0] != c->batch || input->shape[1] != seq || input->shape[2] != c->d_model ||
      input->dtype != c->dtype)
    return BP_ERR_INVALID_ARGUMENT;
  int64_t rows = c->batch * seq, d = c->d_model;
  int64_t shape[3] = {c->batch, seq, d};
  bp_tensor_t x = model_view(m, m->x, 0, 3, shape, NULL);
  TRY(bp_copy(stream, input, &x));
  for (int32_t i = 0; i < c->layers; i++) TRY(block(m, stream, &m->layer[i], seq, pos));
  TRY(norm(m, stream, rows, m->normf_g, m->normf_b));
  return linear(m, stream, m->h, rows, d, m->w_lm, c->vocab, NULL, m->logits);
}
