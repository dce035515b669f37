/*
 * plugins/gpu/ops_reduce.c — reductions of the CUDA and ROCm backends: the
 * row kernels of kernels/cuda/reduce.cu (one warp per row), and the row
 * views and launch that softmax and the norms (ops_dnn.c) share (one block
 * per row for them where the row fits in shared memory).
 */
#include <string.h>

#include "kernels/cuda/bp_rows_args.h"
#include "plugins/gpu/gpu.h"

#define ROW_THREADS 256u

void gpu_rows_of(const bp_plugin_tensor_t *x, const bp_plugin_tensor_t *y, int axis,
                 bpk_rows_t *r) {
  if (axis < 0) axis += x->rank;
  bp_gpu_rows_view(x, axis, &r->x, &r->x_step);
  bp_gpu_rows_view(y, axis, &r->y, &r->y_step);
  r->len = x->rank ? x->shape[axis] : 1;
  r->rows = bp_gpu_numel(&r->x);
}

/* Softmax and the norms (bp_softmax_{f,d}, bp_norm_{f,d}, whose parameter
 * blocks both start with their bpk_rows_t) run one block per row when the
 * row suits kernels/cuda/bp_rows.cuh: the same test as the kernels'
 * bpk_row_in_block, for the compute type the name's suffix gives. The
 * kernels grid-stride either way, so this sizes the launch, not the
 * results. */
static bool row_block_launch(const char *name, const void *params, unsigned *smem) {
  if (strncmp(name, "bp_softmax_", 11) != 0 && strncmp(name, "bp_norm_", 8) != 0) return false;
  const int64_t len = ((const bpk_rows_t *)params)->len;
  const int64_t elem = name[strlen(name) - 1] == 'd' ? 8 : 4;
  if (len < BPK_ROW_BLOCK_MIN || len * elem > BPK_ROW_SMEM) return false;
  *smem = (unsigned)(len * elem);
  return true;
}

bp_status_t gpu_launch_rows(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                            bp_gpu_module_id_t m, const char *name, int64_t rows, void *params) {
  if (rows <= 0) return BP_OK;
  unsigned smem = 0;
  if (row_block_launch(name, params, &smem)) {
    unsigned grid[3] = {gpu_blocks_for(rows, 1), 1, 1};
    unsigned block[3] = {ROW_THREADS, 1, 1};
    return gpu_launch(gpu_dev(device), stream, m, name, grid, block, smem, params);
  }
  unsigned grid[3] = {gpu_blocks_for(rows * 32, ROW_THREADS), 1, 1};
  unsigned block[3] = {ROW_THREADS, 1, 1};
  return gpu_launch(gpu_dev(device), stream, m, name, grid, block, 0, params);
}

bp_status_t gpu_op_reduce(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_reduce_args_t *a) {
  bpk_reduce_args_t p;
  memset(&p, 0, sizeof p);
  gpu_rows_of(&a->x, &a->y, a->axis, &p.r);
  p.op = (int32_t)a->op;
  /* argmax writes integers; the compute type follows the input then. */
  bool dbl = a->x.dtype == BP_F64;
  return gpu_launch_rows(device, stream, BP_GPU_MOD_REDUCE, dbl ? "bp_reduce_d" : "bp_reduce_f",
                         p.r.rows, &p);
}
