/*
 * bp_cuda_args.h — the parameter blocks of every CUDA kernel of backplane.
 *
 * Each kernel takes exactly one parameter: one of the structs below, passed
 * by value (cuLaunchKernel gets a one-element parameter array pointing at
 * it). This header is compiled three ways — by nvcc into the PTX, by gcc
 * into backend-cuda.so that fills the structs, and by gcc into the test shim
 * (test/shims/cuda) that reads them — so the layout is one definition for
 * all three. It is C11 and C++ at once, uses fixed-width types only, and
 * every field sits at its natural alignment with explicit padding, so nvcc
 * and gcc agree on offsets; the shim also checks each struct's size against
 * the .param size the PTX declares.
 */
#ifndef BP_CUDA_ARGS_H
#define BP_CUDA_ARGS_H

#include <stdint.h>

#define BPK_MAX_RANK 8

/* Storage dtypes, the same values as bp_dtype_t in plugin-api.h (kernels do
 * not include that header, so the values are repeated; the plugin
 * static-asserts they agree). */
enum {
  BPK_F32 = 0,
  BPK_F16 = 1,
  BPK_BF16 = 2,
  BPK_F64 = 3,
  BPK_I32 = 4,
  BPK_I64 = 5,
  BPK_U8 = 6
};

/* A strided view: ptr already includes the byte offset; strides in
 * elements. Elementwise kernels walk y's shape; inputs broadcast to it with
 * stride 0. */
typedef struct bpk_tensor {
  uint64_t ptr;
  int32_t dtype;
  int32_t rank;
  int64_t shape[BPK_MAX_RANK];
  int64_t strides[BPK_MAX_RANK];
} bpk_tensor_t; /* 144 bytes */

/* A 1-D operand: a per-channel or per-feature vector, or absent (ptr 0). */
typedef struct bpk_vec {
  uint64_t ptr;
  int64_t stride;
  int32_t dtype;
  int32_t pad_;
} bpk_vec_t; /* 24 bytes */

/* bp_unary_{f,d}: y = op(x) over n = numel(y) elements. */
typedef struct bpk_unary_args {
  bpk_tensor_t x, y;
  int64_t n;
  int32_t op;
  int32_t pad_;
} bpk_unary_args_t;

/* bp_binary_{f,d}: y = a op b. */
typedef struct bpk_binary_args {
  bpk_tensor_t a, b, y;
  int64_t n;
  int32_t op;
  int32_t pad_;
} bpk_binary_args_t;

/* bp_fill: every element of y gets the elem_size low bytes of bits. */
typedef struct bpk_fill_args {
  bpk_tensor_t y;
  int64_t n;
  uint64_t bits;
  int32_t elem_size;
  int32_t pad_;
} bpk_fill_args_t;

/* bp_copy: elem_size-byte moves, x broadcast to y's shape.
 * bp_cast: value conversion from x.dtype to y.dtype. */
typedef struct bpk_copy_args {
  bpk_tensor_t x, y;
  int64_t n;
  int32_t elem_size;
  int32_t pad_;
} bpk_copy_args_t;

/* Row kernels (reduce, softmax, layer/RMS norm): x and y are described with
 * the reduced axis set to extent 1, so they enumerate rows; len elements of
 * each row are x_step (y_step) elements apart. */
typedef struct bpk_rows {
  bpk_tensor_t x, y;
  int64_t rows;
  int64_t len;
  int64_t x_step, y_step;
} bpk_rows_t;

/* bp_reduce_{f,d}: one output per row. */
typedef struct bpk_reduce_args {
  bpk_rows_t r;
  int32_t op;
  int32_t pad_;
} bpk_reduce_args_t;

/* bp_softmax_{f,d}. */
typedef struct bpk_softmax_args {
  bpk_rows_t r;
  int32_t log;
  int32_t pad_;
} bpk_softmax_args_t;

/* bp_norm_{f,d}: layer norm (rms == 0) or RMS norm over each row. */
typedef struct bpk_norm_args {
  bpk_rows_t r;
  bpk_vec_t gamma, beta;
  double eps;
  int32_t rms;
  int32_t pad_;
} bpk_norm_args_t;

/* bp_batch_norm_{f,d}: channel = coordinate on axis 1 of y. */
typedef struct bpk_batch_norm_args {
  bpk_tensor_t x, y;
  bpk_vec_t mean, var, scale, bias;
  int64_t n;
  double eps;
} bpk_batch_norm_args_t;

/* bp_pool2d_{f,d}: x [N,C,H,W], y [N,C,P,Q]. */
typedef struct bpk_pool2d_args {
  bpk_tensor_t x, y;
  int64_t n;
  int32_t kind, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  int32_t count_include_pad;
} bpk_pool2d_args_t;

/* bp_conv2d_f: implicit GEMM over M = N*P*Q rows, K/groups columns per group
 * (grid z), C/groups*R*S reduction. */
/* conv2d launch geometry: grid x covers pixels, y output channels. */
#define BPK_CONV_TILE_M 64
#define BPK_CONV_TILE_N 64
#define BPK_CONV_THREADS 256
typedef struct bpk_conv2d_args {
  bpk_tensor_t x, w, y;
  bpk_vec_t bias;
  int32_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
  int32_t pad_;
} bpk_conv2d_args_t;

/* conv2d as GEMMs (plugins/gpu/ops_conv_gemm.c). bp_conv2d_im2col writes
 * the patches of images n0 .. n0 + nb - 1, group g, as col [nb, Cg*R*S,
 * P*Q] (dense, x's dtype; zero where the window leaves the image): grid x
 * covers P*Q, grid y the (image, BPK_IM2COL_ROWS-row) jobs.
 * bp_conv2d_bias_fill sets y[n, k, p, q] = bias[k] (conv.y, conv.bias; the
 * bias in y's dtype), so that the GEMMs add onto it with beta = 1. */
#define BPK_IM2COL_ROWS 32
#define BPK_IM2COL_THREADS 256
typedef struct bpk_conv2d_im2col_args {
  bpk_conv2d_args_t conv;
  uint64_t col;
  int64_t n0, nb, g;
} bpk_conv2d_im2col_args_t;

/* bp_gemm_*: c[b] = alpha * a[b] . b[b] + beta * c[b]; rank-3 views
 * [batch, m, k], [batch, k, n], [batch, m, n]. beta == 0 never reads c. */
/* GEMM launch geometry: TILE x TILE outputs per block of 256 threads. */
#define BPK_GEMM_TILE 128
#define BPK_GEMM_THREADS 256
/* The epilogue, C = act(alpha a.b + beta c + bias) on the accumulator
 * before C is rounded: bias has c's shape by strides (0 where it
 * broadcasts; ptr 0: absent), act a bp_unary_op_t (BPK_GEMM_NO_ACT: none). */
#define BPK_GEMM_NO_ACT (-1)
typedef struct bpk_gemm_args {
  bpk_tensor_t a, b, c;
  double alpha, beta;
  bpk_tensor_t bias;
  int32_t act;
  int32_t pad_;
} bpk_gemm_args_t;

/* bp_gemv_{f,d}: y = alpha * a . x + beta * y; a [m, n]. */
typedef struct bpk_gemv_args {
  bpk_tensor_t a;
  bpk_vec_t x, y;
  int64_t m, n;
  double alpha, beta;
} bpk_gemv_args_t;

/* bp_attention_f: flash-style fused attention. q [B,Hq,Sq,D],
 * k [B,Hkv,Skv,D], v [B,Hkv,Skv,Dv], out [B,Hq,Sq,Dv]. Grid: x = query
 * tiles, y = B*Hq. */
/* The masks of bp_attention_args_t (plugin-api.h), all aligned as causal
 * is (query i at key position i + Skv - Sq): kv_lens (i32 [B], ptr 0:
 * absent), window (0: none), bias ([B, Hq, Sq, Skv] by strides, ptr 0:
 * absent), ALiBi slopes from alibi_slopes (f32 [Hq]) or, when alibi_heads >
 * 0, the standard ones of head h + alibi_head_offset of alibi_heads. */
typedef struct bpk_attention_args {
  bpk_tensor_t q, k, v, out;
  float scale;
  int32_t causal;
  bpk_tensor_t bias;
  bpk_vec_t kv_lens, alibi_slopes;
  int32_t window, alibi_heads, alibi_head_offset;
  int32_t pad_;
} bpk_attention_args_t;
/* Launch geometry of bp_attention_f: BPK_ATTN_ROWS query rows per block of
 * BPK_ATTN_THREADS, keys staged BPK_ATTN_KEYS at a time; head dims up to
 * BPK_ATTN_MAX_DIM; dynamic shared memory as below. */
#define BPK_ATTN_ROWS 32
#define BPK_ATTN_KEYS 32
#define BPK_ATTN_THREADS 256
#define BPK_ATTN_MAX_DIM 256
#define BPK_ATTN_SMEM(d, dv)                                                   \
  (4u * (unsigned)(BPK_ATTN_ROWS * (d) + BPK_ATTN_KEYS * ((d) + 1) +           \
                   BPK_ATTN_KEYS * (dv)))
/* bp_attention_mma_{h,bf}{64,128} (CUDA only): f16 / bf16 on the tensor
 * cores, BPK_ATTN_MMA_ROWS query rows per block of BPK_ATTN_MMA_THREADS (32
 * per warp), keys BPK_ATTN_MMA_KEYS(d) at a time (fewer at d = 128, so the
 * scores fit in registers beside the output), dynamic shared memory for the
 * Q, K and V tiles, rows of head dim d padded by 8 elements. */
#define BPK_ATTN_MMA_ROWS 128
#define BPK_ATTN_MMA_KEYS(d) ((d) > 64 ? 32 : 64)
#define BPK_ATTN_MMA_THREADS 128
#define BPK_ATTN_MMA_SMEM(d)                                                   \
  (2u * (unsigned)(BPK_ATTN_MMA_ROWS + 2 * BPK_ATTN_MMA_KEYS(d)) * ((unsigned)(d) + 8u))

/* bp_adam_{f,d}: one parameter tensor; bias corrections precomputed. */
typedef struct bpk_adam_args {
  bpk_tensor_t p, g, m, v;
  int64_t n;
  double lr, beta1, beta2, eps, weight_decay;
  double bias_correction1, bias_correction2;
  int32_t adamw;
  int32_t pad_;
} bpk_adam_args_t;

/* bp_random: Philox 4x32-10 stream (seed, offset) into y. */
typedef struct bpk_random_args {
  bpk_tensor_t y;
  int64_t n;
  uint64_t seed, offset;
  double a, b;
  int32_t dist;
  int32_t pad_;
} bpk_random_args_t;

#endif /* BP_CUDA_ARGS_H */
