/*
 * model_internal.h — the model's buffers, shared by model.c (allocation,
 * weights) and model_forward.c (the blocks).
 */
#ifndef BP_MODEL_INTERNAL_H
#define BP_MODEL_INTERNAL_H

#include "tools/model/model.h"

typedef struct model_layer {
  bp_buffer_t *norm1_g, *norm1_b, *norm2_g, *norm2_b; /* *_b: GPT-2 only */
  bp_buffer_t *w_qkv, *b_qkv;                         /* [D, qkv_width], bias GPT-2 only */
  bp_buffer_t *w_o, *b_o;                             /* [D, D] */
  bp_buffer_t *w_up, *b_up;                           /* GPT-2 [D, F]; Llama gate|up [D, 2F] */
  bp_buffer_t *w_down, *b_down;                       /* [F, D] */
  bp_buffer_t *k_cache, *v_cache;                     /* [B, Hkv, max_seq, Dh] */
} model_layer_t;

struct model {
  model_config_t cfg;
  int64_t head_dim, kv_dim, qkv_width, tokens; /* tokens: batch * max_seq */
  size_t esz;
  model_layer_t layer[MODEL_MAX_LAYERS];
  bp_buffer_t *normf_g, *normf_b, *w_lm;
  bp_buffer_t *rope_cos, *rope_sin; /* [max_seq, Dh/2] */
  /* activations, each sized for batch * max_seq tokens */
  bp_buffer_t *x;                 /* the residual stream */
  bp_buffer_t *h;                 /* normed [T, D] */
  bp_buffer_t *qkv;               /* [T, qkv_width] */
  bp_buffer_t *q_rot;             /* Llama: rotated queries [T, D] */
  bp_buffer_t *rope_t1, *rope_t2; /* Llama: RoPE products [T, D/2] */
  bp_buffer_t *attn;              /* [T, D] */
  bp_buffer_t *ff, *ff2;          /* [T, F] (GPT-2 ff [T, F]; Llama ff [T, 2F]) */
  bp_buffer_t *logits;            /* [T, vocab] */
  bp_buffer_t *all[64];           /* every buffer, for model_destroy */
  int nall;
  double weight_bytes;
  /* whether the device runs bp_rope / bp_glu for the dtype itself; else
   * the forward composes them from bp_binary / bp_unary */
  bool native_rope, native_glu;
};

/* A tensor over buffer b at element offset off with the model's dtype. */
bp_tensor_t model_view(const model_t *m, bp_buffer_t *b, int64_t off, int32_t rank,
                       const int64_t *shape, const int64_t *strides);

#endif /* BP_MODEL_INTERNAL_H */
