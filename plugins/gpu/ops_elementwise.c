/*
 * plugins/gpu/ops_elementwise.c — unary and binary ops of the CUDA and
 * ROCm backends: marshalling into kernels/cuda/elementwise.cu (one flat
 * grid-stride kernel per op; f64 computes in double, the "_d" kernels,
 * everything else in float). Also the flat launch the other op files use.
 */
#include <string.h>

#include "plugins/gpu/gpu.h"

#define ELEM_THREADS 256u

bp_status_t gpu_launch_flat(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                            bp_gpu_module_id_t m, const char *name, int64_t n, void *params) {
  if (n <= 0) return BP_OK;
  unsigned grid[3] = {gpu_blocks_for(n, ELEM_THREADS), 1, 1};
  unsigned block[3] = {ELEM_THREADS, 1, 1};
  return gpu_launch(gpu_dev(device), stream, m, name, grid, block, 0, params);
}

/* Whether the kernel's float4 path takes this view (elementwise.cu's
 * vec4_view): then a quarter of the threads cover it. The kernels
 * grid-stride, so the launch size is a matter of speed, not of results. */
static bool vec4_view(const bpk_tensor_t *t) {
  return t->rank == 1 && t->dtype == BPK_F32 && t->strides[0] == 1 && (t->ptr & 15) == 0;
}

static int64_t flat_threads(const bpk_tensor_t *ts, int count, int64_t n) {
  for (int k = 0; k < count; k++)
    if (!vec4_view(&ts[k])) return n;
  return (n + 3) / 4;
}

bp_status_t gpu_op_unary(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                         const bp_unary_args_t *a) {
  bpk_unary_args_t p;
  memset(&p, 0, sizeof p);
  bpk_tensor_t ts[2];
  bp_gpu_tensor(&a->y, &ts[0]);
  bp_gpu_tensor(&a->x, &ts[1]);
  bp_gpu_coalesce(ts, 2);
  p.y = ts[0];
  p.x = ts[1];
  p.n = bp_gpu_numel(&p.y);
  p.op = (int32_t)a->op;
  return gpu_launch_flat(device, stream, BP_GPU_MOD_ELEMENTWISE,
                         a->y.dtype == BP_F64 ? "bp_unary_d" : "bp_unary_f",
                         flat_threads(ts, 2, p.n), &p);
}

bp_status_t gpu_op_binary(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_binary_args_t *a) {
  bpk_binary_args_t p;
  memset(&p, 0, sizeof p);
  bpk_tensor_t ts[3];
  bp_gpu_tensor(&a->y, &ts[0]);
  bp_gpu_tensor(&a->a, &ts[1]);
  bp_gpu_tensor(&a->b, &ts[2]);
  bp_gpu_coalesce(ts, 3);
  p.y = ts[0];
  p.a = ts[1];
  p.b = ts[2];
  p.n = bp_gpu_numel(&p.y);
  p.op = (int32_t)a->op;
  return gpu_launch_flat(device, stream, BP_GPU_MOD_ELEMENTWISE,
                         a->y.dtype == BP_F64 ? "bp_binary_d" : "bp_binary_f",
                         flat_threads(ts, 3, p.n), &p);
}
