/*
 * backplane_fused.h — the fused forms of GEMM and attention (ABI 1.5):
 * a GEMM epilogue (bias, activation, residual) and NumPy-shaped matmul,
 * attention with masks beyond causal. Included by backplane.h; include
 * that.
 */
#ifndef BACKPLANE_FUSED_H
#define BACKPLANE_FUSED_H

#include "backplane.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a GEMM does to its result before storing it (ABI 1.5):
 * c = act(alpha * a · b + beta * c + bias). bias (NULL: none) has c's dtype
 * and broadcasts to c's shape by NumPy rules (a [n] bias is one value per
 * output column, as in a linear layer); beta * c is the residual add (c
 * holds the residual stream). act, when activate is true, is any
 * bp_unary_op_t (BP_UNARY_RELU, BP_UNARY_GELU, BP_UNARY_SILU, ...). A
 * device that runs the epilogue fused claims BP_FEATURE_GEMM_BIAS /
 * BP_FEATURE_GEMM_ACT; on any other the core runs the GEMM, a broadcast
 * add and the unary op on the same stream, so the call never fails for
 * lack of the feature. */
typedef struct bp_gemm_epilogue {
  uint32_t struct_size; /* sizeof(bp_gemm_epilogue_t) */
  const bp_tensor_t *bias;
  bool activate;
  bp_unary_op_t activation;
} bp_gemm_epilogue_t;

/* bp_matmul with NumPy matmul shapes and an epilogue (NULL: none). a
 * [..., m, k] and b [..., k, n] have any number of batch dimensions (rank
 * <= BP_MAX_RANK), which broadcast against each other; a rank-1 a is one
 * row [k] and a rank-1 b one column [k], whose axis c then lacks. c has the
 * broadcast result's shape exactly. Batch dimensions that collapse to one
 * stride run as one strided batched GEMM; others as one GEMM per outer
 * index, queued on stream in order. */
BP_API bp_status_t bp_matmul_ex(bp_stream_t *stream, double alpha,
                                const bp_tensor_t *a, const bp_tensor_t *b,
                                double beta, const bp_tensor_t *c,
                                const bp_gemm_epilogue_t *epilogue);

/* bp_gemm with an epilogue (see bp_gemm_epilogue_t; NULL: none); bias is a
 * tensor broadcasting to C's [m, n]. */
BP_API bp_status_t bp_gemm_ex(bp_stream_t *stream, bp_dtype_t dtype,
                              bp_layout_t layout, bp_transpose_t trans_a,
                              bp_transpose_t trans_b, int64_t m, int64_t n,
                              int64_t k, double alpha, bp_buffer_t *a,
                              uint64_t a_offset, int64_t lda, bp_buffer_t *b,
                              uint64_t b_offset, int64_t ldb, double beta,
                              bp_buffer_t *c, uint64_t c_offset, int64_t ldc,
                              const bp_gemm_epilogue_t *epilogue);

/* Options of bp_attention_ex (ABI 1.5). Every mask uses the causal mask's
 * bottom-right alignment: query i stands at key position
 * i' = i + Skv - Sq (i' = i when Sq == Skv; the last query is at the last
 * key in KV-cache decoding). A query whose keys are all masked gives
 * zeros. */
typedef struct bp_attention_options {
  uint32_t struct_size; /* sizeof(bp_attention_options_t) */
  double scale;         /* 0 means 1/sqrt(D) */
  bool causal;          /* keys j > i' masked */
  /* > 0: a sliding window, query i sees keys i' - window < j <= i' (causal
   * by definition; 1 sees key i' only). */
  int32_t window;
  /* Padding: i32 [B], keys j >= kv_lens[b] masked. NULL: none. */
  const bp_tensor_t *kv_lens;
  /* Added to the scaled scores; q's dtype, broadcasting to [B, Hq, Sq,
   * Skv] by NumPy rules (a [Sq, Skv] bias is shared by every batch and
   * head). -inf masks. NULL: none. */
  const bp_tensor_t *bias;
  /* ALiBi: -slope_h * |i' - j| is added to head h's scores, with the
   * standard geometric slopes over Hq heads when alibi is true, or the f32
   * [Hq] alibi_slopes when that is not NULL. */
  bool alibi;
  const bp_tensor_t *alibi_slopes;
} bp_attention_options_t;

/* bp_attention with the masks of options (NULL: no mask, scale 1/sqrt(D)).
 * A device that does not claim a mask's BP_FEATURE_ATTENTION_* bit runs
 * the call elsewhere with automatic fallback, else BP_ERR_UNSUPPORTED. */
BP_API bp_status_t bp_attention_ex(bp_stream_t *stream, const bp_tensor_t *q,
                                   const bp_tensor_t *k, const bp_tensor_t *v,
                                   const bp_attention_options_t *options,
                                   const bp_tensor_t *out);

#ifdef __cplusplus
}
#endif
#endif /* BACKPLANE_FUSED_H */
