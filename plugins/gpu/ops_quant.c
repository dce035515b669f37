/*
 * plugins/gpu/ops_quant.c — the quantized ops of ABI 1.5 for the CUDA and
 * ROCm backends: marshalling into kernels/cuda/quant.cu (kernels/hip/
 * quant.hip compiles the same source). quantize and dequantize (i8 / u8
 * with scales elementwise; q8_0 / q4_0 one warp per block), the 8-bit GEMM
 * (dp4a or tensor-core tiles, a and b each i8 or u8), GEMM / GEMV with
 * block-quantized weights, and the casts with an i8 or fp8 side; what a
 * device claims of them is gpu_quant_claims.
 */
#include <string.h>

#include "kernels/cuda/bp_quant_args.h"
#include "plugins/gpu/gpu.h"

_Static_assert((int)BPK_I8 == (int)BP_I8 && (int)BPK_FP8_E4M3 == (int)BP_FP8_E4M3 &&
                   (int)BPK_FP8_E5M2 == (int)BP_FP8_E5M2 && (int)BPK_Q8_0 == (int)BP_Q8_0 &&
                   (int)BPK_Q4_0 == (int)BP_Q4_0 && BPK_QBLOCK == BP_QUANT_BLOCK,
               "kernel dtype codes follow bp_dtype_t");

/* Up to this many rows of activations (batch x m), qmatmul runs the GEMV
 * kernel (a warp per BPK_QMM_GEMV_OUTS outputs, each lane reading whole
 * blocks);
 * past it the tiled GEMM, which reads a weight block once per 64 rows. */
#define QMATMUL_GEMV_ROWS 4
#define GRID_YZ_MAX 65535

void gpu_quant_claims(bp_device_info_t *info) {
  uint32_t *t = info->op_dtypes;
  const uint32_t bytes = BP_DTYPE_BIT(BP_I8) | BP_DTYPES_FP8;
  t[BP_OP_FILL] |= bytes;
  t[BP_OP_COPY] |= bytes;
  t[BP_OP_CAST] |= bytes;
  const uint32_t eight = BP_DTYPE_BIT(BP_I8) | BP_DTYPE_BIT(BP_U8);
  t[BP_OP_QUANTIZE] = eight | BP_DTYPES_BLOCK;
  t[BP_OP_DEQUANTIZE] = eight | BP_DTYPES_BLOCK;
  t[BP_OP_QGEMM] = eight | BP_DTYPES_FP8; /* a and b each i8 or u8, or both fp8 */
  t[BP_OP_QMATMUL] = BP_DTYPES_BLOCK;
}

/* ---- quantize / dequantize ------------------------------------------------- */

/* f: the float side, q: the quantized side. */
static bp_status_t quant_run(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                             const bp_quantize_args_t *a, bool to_q) {
  const bp_plugin_tensor_t *f = to_q ? &a->x : &a->y, *q = to_q ? &a->y : &a->x;
  bpk_quant_args_t p;
  memset(&p, 0, sizeof p);
  p.qdtype = (int32_t)q->dtype;
  if (q->dtype == BP_I8 || q->dtype == BP_U8) {
    static const char *const names[2][2] = {{"bp_dequantize_i8", "bp_quantize_i8"},
                                            {"bp_dequantize_u8", "bp_quantize_u8"}};
    bpk_tensor_t ts[3];
    bp_gpu_tensor(q, &ts[0]);
    bp_gpu_tensor(f, &ts[1]);
    bp_gpu_tensor(&a->scale, &ts[2]); /* broadcast to q's shape by the core */
    bp_gpu_coalesce(ts, 3);
    p.q = ts[0], p.f = ts[1], p.scale = ts[2];
    p.n = bp_gpu_numel(&p.q);
    return gpu_launch_flat(device, stream, BP_GPU_MOD_QUANT, names[q->dtype == BP_U8][to_q], p.n,
                           &p);
  }
  const int last = q->rank - 1;
  int64_t q_step;
  bp_gpu_rows_view(q, last, &p.q, &q_step); /* 1: the core checked the layout */
  bp_gpu_rows_view(f, last, &p.f, &p.f_step);
  p.nb = q->shape[last] / BP_QUANT_BLOCK;
  p.n = bp_gpu_numel(&p.q) * p.nb;
  return gpu_launch_rows(device, stream, BP_GPU_MOD_QUANT,
                         to_q ? "bp_quantize_block" : "bp_dequantize_block", p.n, &p);
}

bp_status_t gpu_op_quantize(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                            const bp_quantize_args_t *a) {
  return quant_run(device, stream, a, true);
}

bp_status_t gpu_op_dequantize(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                              const bp_quantize_args_t *a) {
  return quant_run(device, stream, a, false);
}

/* ---- the two GEMMs ------------------------------------------------------------- */

/* A rank-2 matrix as a batch of one (batch stride 0: shared by every
 * batch when the other operands have one). */
static void as_rank3(const bp_plugin_tensor_t *t, bpk_tensor_t *out) {
  bp_gpu_tensor(t, out);
  if (t->rank != 2) return;
  out->rank = 3;
  out->shape[2] = t->shape[1], out->strides[2] = t->strides[1];
  out->shape[1] = t->shape[0], out->strides[1] = t->strides[0];
  out->shape[0] = 1, out->strides[0] = 0;
}

/* The tiled grid over c [batch, rows, cols]: x column tiles, y row tiles,
 * z the batch (the kernels grid-stride past 65535). */
static bp_status_t tile_grid(const char *op, int64_t batch, int64_t rows, int64_t cols,
                             unsigned tile, unsigned grid[3]) {
  const int64_t tiles_m = (rows + tile - 1) / tile;
  if (tiles_m > GRID_YZ_MAX) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": %s with m = %lld exceeds the grid (at most %lld rows)",
                        op, (long long)rows, (long long)GRID_YZ_MAX * tile);
    return BP_ERR_UNSUPPORTED;
  }
  grid[0] = (unsigned)((cols + tile - 1) / tile);
  grid[1] = (unsigned)tiles_m;
  grid[2] = (unsigned)(batch < GRID_YZ_MAX ? batch : GRID_YZ_MAX);
  return BP_OK;
}

/* CUDA runs the int8 tensor-core kernel (every device the sm_80 PTX runs
 * on has them); BACKPLANE_CUDA_QGEMM=dp4a picks the dp4a kernel, which is
 * what HIP runs (test_quant_gpu checks both). A u8 operand picks the
 * kernel of its signedness pair, bp_qgemm[_mma]_<a><b> (quant.cu). fp8 a
 * and b run bp_qgemm_fp8 (codes decoded to f32, f32 sums) on both. */
static const char *qgemm_kernel(bp_dtype_t a, bp_dtype_t b) {
  if (a == BP_FP8_E4M3 || a == BP_FP8_E5M2) return "bp_qgemm_fp8"; /* formats from p.a, p.b */
  static const char *const dp4a[2][2] = {{"bp_qgemm", "bp_qgemm_i8u8"},
                                         {"bp_qgemm_u8i8", "bp_qgemm_u8u8"}};
  const int au = a == BP_U8, bu = b == BP_U8;
#if defined(BP_GPU_CUDA)
  static const char *const mma[2][2] = {{"bp_qgemm_mma", "bp_qgemm_mma_i8u8"},
                                        {"bp_qgemm_mma_u8i8", "bp_qgemm_mma_u8u8"}};
  const char *v = gpu_env("BACKPLANE_CUDA_QGEMM");
  if (!v || strcmp(v, "dp4a") != 0) return mma[au][bu];
#endif
  return dp4a[au][bu];
}

bp_status_t gpu_op_qgemm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                         const bp_qgemm_args_t *a) {
  bpk_qgemm_args_t p;
  memset(&p, 0, sizeof p);
  as_rank3(&a->a, &p.a);
  as_rank3(&a->b, &p.b);
  as_rank3(&a->c, &p.c);
  bp_gpu_vec(&a->scale_a, &p.sa); /* rank 0: absent, 1 */
  bp_gpu_vec(&a->scale_b, &p.sb);
  p.out_scale = a->out_scale;
  unsigned grid[3], block[3] = {BPK_QGEMM_THREADS, 1, 1};
  bp_status_t st =
      tile_grid("qgemm", p.c.shape[0], p.c.shape[1], p.c.shape[2], BPK_QGEMM_TILE, grid);
  if (st != BP_OK) return st;
  return gpu_launch(gpu_dev(device), stream, BP_GPU_MOD_QUANT, qgemm_kernel(a->a.dtype, a->b.dtype),
                    grid, block, 0, &p);
}

bp_status_t gpu_op_qmatmul(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                           const bp_qmatmul_args_t *a) {
  bpk_qmatmul_args_t p;
  memset(&p, 0, sizeof p);
  as_rank3(&a->a, &p.a);
  as_rank3(&a->y, &p.y);
  p.w_ptr = a->w.ptr + a->w.offset;
  p.w_row_blocks = a->w.strides[0] / BP_QUANT_BLOCK; /* whole blocks (the core checked) */
  p.n = a->w.shape[0];
  p.k = a->w.shape[1];
  p.w_dtype = (int32_t)a->w.dtype;
  const int64_t rows = p.y.shape[0] * p.y.shape[1];
  if (rows <= QMATMUL_GEMV_ROWS)
    return gpu_launch_rows(device, stream, BP_GPU_MOD_QUANT, "bp_qmatmul_gemv",
                           rows * ((p.n + BPK_QMM_GEMV_OUTS - 1) / BPK_QMM_GEMV_OUTS), &p);
  unsigned grid[3], block[3] = {BPK_QMM_THREADS, 1, 1};
  bp_status_t st = tile_grid("qmatmul", p.y.shape[0], p.y.shape[1], p.n, BPK_QMM_TILE, grid);
  if (st != BP_OK) return st;
  return gpu_launch(gpu_dev(device), stream, BP_GPU_MOD_QUANT, "bp_qmatmul_gemm", grid, block, 0,
                    &p);
}

/* ---- casts with an i8 or fp8 side ------------------------------------------------ */

bool gpu_cast_is_quant(const bp_copy_args_t *a) {
  const uint32_t bytes = BP_DTYPE_BIT(BP_I8) | BP_DTYPES_FP8;
  return ((BP_DTYPE_BIT(a->x.dtype) | BP_DTYPE_BIT(a->y.dtype)) & bytes) != 0;
}

bp_status_t gpu_cast_quant(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                           const bp_copy_args_t *a) {
  bpk_copy_args_t p;
  memset(&p, 0, sizeof p);
  bpk_tensor_t ts[2];
  bp_gpu_tensor(&a->y, &ts[0]);
  bp_gpu_tensor(&a->x, &ts[1]);
  bp_gpu_coalesce(ts, 2);
  p.y = ts[0];
  p.x = ts[1];
  p.n = bp_gpu_numel(&p.y);
  p.elem_size = bp_gpu_dtype_size(a->y.dtype);
  return gpu_launch_flat(device, stream, BP_GPU_MOD_QUANT, "bp_cast_q", p.n, &p);
}
