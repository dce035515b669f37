/*
 * model.h — a small transformer written with backplane ops only, shared by
 * test/test_model.c (parity against cpu-ref) and `bp bench --op model`.
 *
 * Two block styles:
 *  - GPT-2: LayerNorm, one packed QKV projection with bias, causal attention
 *    over views of the packed QKV rows, output projection, exact-GELU MLP,
 *    residual adds;
 *  - Llama: RMSNorm, packed Q/K/V projection with fewer KV heads (GQA),
 *    half-split RoPE composed from views and bp_binary mul/sub/add, SwiGLU
 *    MLP (one packed gate|up projection, silu on the gate view, a mul).
 * Each model ends with a final norm and a vocabulary projection (the
 * logits). The input is the embedded sequence [B, S, D] (a tensor, so a
 * view of a longer sequence works): backplane has no gather op today.
 *
 * Every layer keeps a KV cache [B, Hkv, max_seq, Dh]; a forward at position
 * pos writes its keys and values into the cache rows pos.. (the Llama keys
 * straight from RoPE, the rest by a strided bp_copy) and attends over rows
 * 0..pos+seq-1 with bottom-right causal masking, so prefill is pos 0 and
 * one-token decode is seq 1 at pos = the prefill length.
 *
 * Weights come from bp_random (Philox; the same numbers on every device),
 * RoPE's cos/sin tables from the host in f32, cast on the device.
 */
#ifndef BP_MODEL_H
#define BP_MODEL_H

#include <stdint.h>

#include "backplane.h"

#define MODEL_MAX_LAYERS 8

typedef enum model_kind { MODEL_GPT2 = 0, MODEL_LLAMA = 1 } model_kind_t;

typedef struct model_config {
  model_kind_t kind;
  bp_dtype_t dtype; /* BP_F32 or BP_BF16 (weights and activations) */
  int32_t layers;   /* 1..MODEL_MAX_LAYERS */
  int64_t d_model;  /* heads * head_dim */
  int64_t heads;
  int64_t kv_heads; /* GPT-2: == heads; Llama: divides heads */
  int64_t d_ff;     /* MLP width */
  int64_t vocab;    /* logits per token */
  int64_t batch;
  int64_t max_seq; /* KV cache rows; the most tokens pos + seq reaches */
  uint64_t seed;   /* bp_random seed of the weights */
} model_config_t;

typedef struct model model_t;

/* Fills cfg with the defaults for kind (head_dim d_model / heads, d_ff 4x
 * for GPT-2 and 8/3x rounded to 32 for Llama, 2 KV heads for Llama). */
void model_config_default(model_config_t *cfg, model_kind_t kind, bp_dtype_t dtype, int64_t d_model,
                          int64_t heads, int32_t layers, int64_t batch, int64_t max_seq);

/* Allocates the weights (filled on stream), the caches and the activation
 * buffers on stream's device. Returns BP_ERR_INVALID_ARGUMENT for a config
 * that does not fit, else the first failing call's status. */
bp_status_t model_create(bp_device_t *device, bp_stream_t *stream, const model_config_t *cfg,
                         model_t **out);
void model_destroy(model_t *m);

/* Runs the model over input [batch, seq, d_model] (the config's dtype) at
 * positions pos..pos+seq-1, writing the cache rows there and the logits
 * [batch * seq, vocab] (model_logits). Only enqueues: it may be captured. */
bp_status_t model_forward(model_t *m, bp_stream_t *stream, const bp_tensor_t *input, int64_t seq,
                          int64_t pos);

/* The logits buffer ([batch * seq, vocab] of the last forward, row-major)
 * and the weight buffer of layer's QKV projection (for tests that perturb
 * it). */
bp_buffer_t *model_logits(const model_t *m);
bp_buffer_t *model_qkv_weight(const model_t *m, int32_t layer);
const model_config_t *model_config(const model_t *m);

/* Bytes of all weights (what one decode step streams), and the FLOPs of a
 * forward of seq tokens per sequence at pos (2 per multiply-add). */
double model_weight_bytes(const model_t *m);
double model_forward_flops(const model_t *m, int64_t seq, int64_t pos);

/* ms of one forward: best of reps after warm-up calls (synchronised). */
double model_time_forward(model_t *m, bp_stream_t *stream, const bp_tensor_t *input, int64_t seq,
                          int64_t pos, int warmup, int reps);

#endif /* BP_MODEL_H */
