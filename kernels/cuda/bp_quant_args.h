/*
 * bp_quant_args.h — the parameter blocks of the quantized kernels of ABI
 * 1.5 (kernels/cuda/quant.cu, kernels/hip/quant.hip): quantize and
 * dequantize, int8 GEMM, GEMM / GEMV with block-quantized weights, and the
 * casts of the int8 / fp8 dtypes. The same rules as bp_cuda_args.h: one
 * definition compiled by nvcc, by gcc into the plugins and into the test
 * shim, fixed-width fields at natural alignment with explicit padding.
 */
#ifndef BP_QUANT_ARGS_H
#define BP_QUANT_ARGS_H

#include "bp_cuda_args.h"

/* The dtypes of ABI 1.5, bp_dtype_t's values (bp_cuda_args.h has the
 * older ones; ops_quant.c static-asserts that they agree). */
enum { BPK_I8 = 7, BPK_FP8_E4M3 = 8, BPK_FP8_E5M2 = 9, BPK_Q8_0 = 10, BPK_Q4_0 = 11 };

/* Block formats: weights per block, bytes per block. */
#define BPK_QBLOCK 32
#define BPK_Q8_0_BYTES 34
#define BPK_Q4_0_BYTES 18

/* bp_quantize_i8 / bp_dequantize_i8: elementwise over n elements of q's
 * shape; f is the float side, scale f32 broadcast to q's shape (stride 0).
 * To i8: q = saturate(rne(f / scale)) in f32, NaN 0. From i8: f = q *
 * scale, rounded once to f's dtype.
 * bp_quantize_block / bp_dequantize_block: one warp per block of 32
 * weights, n blocks. f and q describe rows (their last dim set to extent
 * 1, so the row's first element is offset(row)); a row has nb blocks, and
 * weight j of block b of a row is f's element b * 32 + j, f_step apart.
 * q.ptr is the block tensor's byte 0; q's offsets count weights. */
typedef struct bpk_quant_args {
  bpk_tensor_t f, scale, q;
  int64_t n;
  int64_t nb, f_step;
  int32_t qdtype;
  int32_t pad_;
} bpk_quant_args_t;

/* bp_qgemm: c[z] = a[z] . b[z] over int8, accumulated in int32 (wrapping);
 * rank-3 views [batch, m, k], [batch, k, n] (b's batch stride may be 0),
 * [batch, m, n]. c dtype: i32 the sum; f32 (float)acc * sa[i] * sb[j]; i8
 * saturate(rne(that / out_scale)); sa, sb absent (ptr 0) mean 1. Grid: x =
 * n tiles, y = m tiles, z = batch (grid-stride). */
#define BPK_QGEMM_TILE 64
#define BPK_QGEMM_BK 32
#define BPK_QGEMM_THREADS 256
typedef struct bpk_qgemm_args {
  bpk_tensor_t a, b, c;
  bpk_vec_t sa, sb;
  float out_scale;
  int32_t pad_;
} bpk_qgemm_args_t;

/* bp_qmatmul_gemv / bp_qmatmul_gemm: y[z, i, j] = sum_l a[z, i, l] *
 * w[j, l] with w [n, k] q8_0 / q4_0 (w_dtype), row j's first block at byte
 * w_ptr + j * w_row_blocks * block bytes; a, y rank 3 [batch, m, k],
 * [batch, m, n]. GEMV: one warp per GEMV_OUTS outputs of a row (consecutive
 * j; grid-stride), lane l takes blocks l, l + 32, ... GEMM: TILE x TILE
 * outputs per block of threads, one weight block of k per step. */
#define BPK_QMM_GEMV_OUTS 4
#define BPK_QMM_TILE 64
#define BPK_QMM_THREADS 256
typedef struct bpk_qmatmul_args {
  bpk_tensor_t a, y;
  uint64_t w_ptr;
  int64_t w_row_blocks, n, k;
  int32_t w_dtype;
  int32_t pad_;
} bpk_qmatmul_args_t;

#endif /* BP_QUANT_ARGS_H */
