/*
 * ops_reduce.c — reductions, softmax, layer and RMS norm: the row kernels
 * of kernels/hip/reduce.hip and norm.hip (one warp per row).
 */
#include <string.h>

#include "plugins/rocm/rocm_plugin.h"

#define ROW_THREADS 256u

/* Rows of x along axis (and the matching rows of y). */
static void rows_of(const bp_plugin_tensor_t *x, const bp_plugin_tensor_t *y,
                    int axis, bpk_rows_t *r) {
  if (axis < 0)
    axis += x->rank;
  bp_gpu_rows_view(x, axis, &r->x, &r->x_step);
  bp_gpu_rows_view(y, axis, &r->y, &r->y_step);
  r->len = x->rank ? x->shape[axis] : 1;
  r->rows = bp_gpu_numel(&r->x);
}

static bp_status_t launch_rows(bp_plugin_device_t *device,
                               bp_plugin_stream_t *stream, rocm_module_id_t m,
                               const char *name, int64_t rows, void *params) {
  if (rows <= 0)
    return BP_OK;
  unsigned grid[3] = {rocm_blocks_for(rows * 32, ROW_THREADS), 1, 1};
  unsigned block[3] = {ROW_THREADS, 1, 1};
  return rocm_launch(rocm_dev(device), stream, m, name, grid, block, 0,
                     params);
}

bp_status_t rocm_op_reduce(bp_plugin_device_t *device,
                           bp_plugin_stream_t *stream,
                           const bp_reduce_args_t *a) {
  bpk_reduce_args_t p;
  memset(&p, 0, sizeof p);
  rows_of(&a->x, &a->y, a->axis, &p.r);
  p.op = (int32_t)a->op;
  /* argmax writes integers; the compute type follows the input then. */
  bool dbl = a->x.dtype == BP_F64;
  return launch_rows(device, stream, ROCM_MOD_REDUCE,
                     dbl ? "bp_reduce_d" : "bp_reduce_f", p.r.rows, &p);
}

bp_status_t rocm_op_softmax(bp_plugin_device_t *device,
                            bp_plugin_stream_t *stream,
                            const bp_softmax_args_t *a) {
  bpk_softmax_args_t p;
  memset(&p, 0, sizeof p);
  rows_of(&a->x, &a->y, a->axis, &p.r);
  p.log = a->log != 0;
  return launch_rows(device, stream, ROCM_MOD_REDUCE,
                     a->y.dtype == BP_F64 ? "bp_softmax_d" : "bp_softmax_f",
                     p.r.rows, &p);
}

static bp_status_t norm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_norm_args_t *a, bool rms) {
  bpk_norm_args_t p;
  memset(&p, 0, sizeof p);
  rows_of(&a->x, &a->y, a->x.rank - 1, &p.r);
  bp_gpu_vec(&a->gamma, &p.gamma);
  if (!rms)
    bp_gpu_vec(&a->beta, &p.beta);
  p.eps = a->eps;
  p.rms = rms;
  return launch_rows(device, stream, ROCM_MOD_NORM,
                     a->y.dtype == BP_F64 ? "bp_norm_d" : "bp_norm_f",
                     p.r.rows, &p);
}

bp_status_t rocm_op_layer_norm(bp_plugin_device_t *device,
                               bp_plugin_stream_t *stream,
                               const bp_norm_args_t *a) {
  return norm(device, stream, a, false);
}

bp_status_t rocm_op_rms_norm(bp_plugin_device_t *device,
                             bp_plugin_stream_t *stream,
                             const bp_norm_args_t *a) {
  return norm(device, stream, a, true);
}
