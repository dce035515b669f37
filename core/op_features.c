/*
 * op_features.c — the optional parts of an op's arguments (ABI 1.5), as
 * BP_FEATURE_* bits of bp_device_info_t.op_features: which ones a call
 * uses, so that the door refuses a call whose device does not claim them
 * exactly as it refuses an unclaimed dtype (and fallback, the graph
 * scheduler and conformance see the same answer), and their names for the
 * message. An op family with no optional parts uses none.
 */
#include "internal.h"

static uint32_t gemm_features(const bp_gemm_args_t *a) {
  return (a->bias.rank ? BP_FEATURE_GEMM_BIAS : 0u) |
         ((a->flags & BP_GEMM_FLAG_ACTIVATION) ? BP_FEATURE_GEMM_ACT : 0u);
}

static uint32_t attention_features(const bp_attention_args_t *a) {
  return (a->kv_lens.rank ? BP_FEATURE_ATTENTION_KV_LENS : 0u) | (a->window > 0 ? BP_FEATURE_ATTENTION_WINDOW : 0u) |
         (a->bias.rank ? BP_FEATURE_ATTENTION_BIAS : 0u) |
         (a->alibi_heads > 0 || a->alibi_slopes.rank ? BP_FEATURE_ATTENTION_ALIBI : 0u);
}

uint32_t bp__op_features_used(bp_op_t op, const void *args) {
  switch (op) {
  case BP_OP_UNARY:
    return ((const bp_unary_args_t *)args)->op == BP_UNARY_GELU_TANH ? BP_FEATURE_UNARY_GELU_TANH : 0;
  case BP_OP_GEMM: return gemm_features(args);
  case BP_OP_ATTENTION: return attention_features(args);
  case BP_OP_CAST:
    return (((const bp_copy_args_t *)args)->cast_flags & BP_CAST_SATURATE) ? BP_FEATURE_CAST_SATURATE : 0;
  default: break;
  }
  return 0;
}

const char *bp__op_feature_name(bp_op_t op, uint32_t bit) {
  if (op == BP_OP_UNARY && bit == BP_FEATURE_UNARY_GELU_TANH) return "unary op gelu_tanh";
  if (op == BP_OP_CAST && bit == BP_FEATURE_CAST_SATURATE) return "a saturating fp8 cast";
  if (op == BP_OP_GEMM) return bit == BP_FEATURE_GEMM_BIAS ? "a bias epilogue" : "an activation epilogue";
  if (op == BP_OP_ATTENTION) {
    switch (bit) {
    case BP_FEATURE_ATTENTION_KV_LENS: return "per-sequence key lengths";
    case BP_FEATURE_ATTENTION_WINDOW: return "a sliding window";
    case BP_FEATURE_ATTENTION_BIAS: return "an additive bias";
    case BP_FEATURE_ATTENTION_ALIBI: return "ALiBi";
    default: break;
    }
  }
  return "an optional feature";
}
