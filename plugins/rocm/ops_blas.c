/*
 * ops_blas.c — gemm and gemv: marshalling into kernels/hip/gemm.hip.
 */
#include <string.h>

#include "plugins/rocm/rocm_plugin.h"

#define GRID_YZ_MAX 65535

static const char *gemm_kernel(bp_dtype_t dt) {
  switch (dt) {
  case BP_F16:
    return "bp_gemm_f16";
  case BP_BF16:
    return "bp_gemm_bf16";
  case BP_F64:
    return "bp_gemm_f64";
  default:
    return "bp_gemm_f32";
  }
}

bp_status_t rocm_op_gemm(bp_plugin_device_t *device,
                         bp_plugin_stream_t *stream,
                         const bp_gemm_args_t *a) {
  bpk_gemm_args_t p;
  memset(&p, 0, sizeof p);
  bp_gpu_tensor(&a->a, &p.a);
  bp_gpu_tensor(&a->b, &p.b);
  bp_gpu_tensor(&a->c, &p.c);
  p.alpha = a->alpha;
  p.beta = a->beta;
  const int64_t batch = p.c.shape[0], m = p.c.shape[1], n = p.c.shape[2];
  if (batch == 0 || m == 0 || n == 0)
    return BP_OK;
  const int64_t tiles_m = (m + BPK_GEMM_TILE - 1) / BPK_GEMM_TILE;
  if (tiles_m > GRID_YZ_MAX) {
    rocm_host->set_error("rocm: gemm with m = %lld exceeds the grid (at most "
                         "%d rows)",
                         (long long)m, GRID_YZ_MAX * BPK_GEMM_TILE);
    return BP_ERR_UNSUPPORTED;
  }
  /* One SIMT kernel per dtype (kernels/hip/gemm.hip), full f32 precision
   * whatever BP_GEMM_FLAG_ALLOW_TF32 says. The batch loops grid-stride past
   * 65535. */
  unsigned grid[3] = {(unsigned)((n + BPK_GEMM_TILE - 1) / BPK_GEMM_TILE),
                      (unsigned)tiles_m,
                      (unsigned)(batch < GRID_YZ_MAX ? batch : GRID_YZ_MAX)};
  unsigned block[3] = {BPK_GEMM_THREADS, 1, 1};
  return rocm_launch(rocm_dev(device), stream, ROCM_MOD_GEMM,
                     gemm_kernel(a->c.dtype), grid, block, 0, &p);
}

#define ROW_THREADS 256u /* one warp per row: 8 rows per block */

bp_status_t rocm_op_gemv(bp_plugin_device_t *device,
                         bp_plugin_stream_t *stream,
                         const bp_gemv_args_t *a) {
  bpk_gemv_args_t p;
  memset(&p, 0, sizeof p);
  bp_gpu_tensor(&a->a, &p.a);
  bp_gpu_vec(&a->x, &p.x);
  bp_gpu_vec(&a->y, &p.y);
  p.m = a->a.shape[0];
  p.n = a->a.shape[1];
  p.alpha = a->alpha;
  p.beta = a->beta;
  if (p.m == 0)
    return BP_OK;
  unsigned grid[3] = {rocm_blocks_for(p.m * 32, ROW_THREADS), 1, 1};
  unsigned block[3] = {ROW_THREADS, 1, 1};
  return rocm_launch(rocm_dev(device), stream, ROCM_MOD_GEMM,
                     a->y.dtype == BP_F64 ? "bp_gemv_d" : "bp_gemv_f", grid,
                     block, 0, &p);
}
