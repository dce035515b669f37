/*
 * plugins/gpu/ops_model.c — the model ops of ABI 1.5 for the CUDA and ROCm
 * backends: marshalling into kernels/cuda/model.cu (kernels/hip/model.hip
 * compiles the same source). gather, arange, binary with a scalar, GLU and
 * RoPE; what a device claims of them is bp_gpu_model_claims.
 */
#include <string.h>

#include "kernels/common/bp_half.h"
#include "kernels/cuda/bp_model_args.h"
#include "plugins/gpu/gpu.h"

void gpu_model_claims(bp_device_info_t *info) {
  uint32_t *t = info->op_dtypes;
  t[BP_OP_GATHER] = BP_DTYPES_FLOAT | BP_DTYPES_INT; /* raw moves */
  t[BP_OP_ARANGE] = BP_DTYPES_FLOAT | BP_DTYPES_INT; /* double, then stored */
  t[BP_OP_BINARY_SCALAR] = BP_DTYPES_FLOAT;
  t[BP_OP_GLU] = BP_DTYPES_FLOAT;
  t[BP_OP_ROPE] = BP_DTYPES_FLOAT;
  info->op_features[BP_OP_UNARY] |= BP_FEATURE_UNARY_GELU_TANH;
}

/* f64 computes in double ("_d"), every other float dtype in float. */
static const char *kernel_for(bp_dtype_t dt, const char *f, const char *d) {
  return dt == BP_F64 ? d : f;
}

bp_status_t gpu_op_gather(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_gather_args_t *a) {
  bpk_gather_args_t p;
  memset(&p, 0, sizeof p);
  /* The table's and the indices' strides laid over y's dims: y's dim k is
   * the table's k before the axis, an index dim for the next rank(indices)
   * dims, then the table's dims after the axis. */
  bp_plugin_tensor_t tbl = a->y, idx = a->y;
  const int ax = a->axis, ri = a->indices.rank;
  tbl.ptr = a->table.ptr, tbl.offset = a->table.offset, tbl.dtype = a->table.dtype;
  idx.ptr = a->indices.ptr, idx.offset = a->indices.offset, idx.dtype = a->indices.dtype;
  for (int k = 0; k < a->y.rank; k++) {
    bool in_index = k >= ax && k < ax + ri;
    tbl.strides[k] = in_index ? 0 : a->table.strides[k < ax ? k : k - ri + 1];
    idx.strides[k] = in_index ? a->indices.strides[k - ax] : 0;
  }
  bpk_tensor_t ts[3];
  bp_gpu_tensor(&a->y, &ts[0]);
  bp_gpu_tensor(&tbl, &ts[1]);
  bp_gpu_tensor(&idx, &ts[2]);
  bp_gpu_coalesce(ts, 3);
  p.y = ts[0];
  p.tbl = ts[1];
  p.idx = ts[2];
  p.n = bp_gpu_numel(&p.y);
  p.axis_len = a->table.shape[ax];
  p.axis_stride = a->table.strides[ax];
  p.elem_size = bp_gpu_dtype_size(a->y.dtype);
  return gpu_launch_flat(device, stream, BP_GPU_MOD_MODEL, "bp_gather", p.n, &p);
}

bp_status_t gpu_op_arange(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_arange_args_t *a) {
  bpk_arange_args_t p;
  memset(&p, 0, sizeof p);
  bp_gpu_tensor(&a->y, &p.y);
  p.n = bp_gpu_numel(&p.y);
  p.start = a->start;
  p.step = a->step;
  return gpu_launch_flat(device, stream, BP_GPU_MOD_MODEL, "bp_arange", p.n, &p);
}

/* The scalar as a one-element tensor of dt would hold it. */
static double scalar_in(bp_dtype_t dt, double v) {
  switch (dt) {
  case BP_F16:
    return bp_f16_to_f64(bp_f64_to_f16(v));
  case BP_BF16:
    return bp_bf16_to_f64(bp_f64_to_bf16(v));
  case BP_F32:
    return (double)(float)v;
  default:
    return v;
  }
}

bp_status_t gpu_op_binary_scalar(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                 const bp_binary_scalar_args_t *a) {
  bpk_binary_scalar_args_t p;
  memset(&p, 0, sizeof p);
  bpk_tensor_t ts[2];
  bp_gpu_tensor(&a->y, &ts[0]);
  bp_gpu_tensor(&a->a, &ts[1]);
  bp_gpu_coalesce(ts, 2);
  p.y = ts[0];
  p.a = ts[1];
  p.n = bp_gpu_numel(&p.y);
  p.scalar = scalar_in(a->a.dtype, a->scalar);
  p.op = (int32_t)a->op;
  p.first = a->scalar_first != 0;
  return gpu_launch_flat(device, stream, BP_GPU_MOD_MODEL,
                         kernel_for(a->y.dtype, "bp_binary_scalar_f", "bp_binary_scalar_d"), p.n,
                         &p);
}

bp_status_t gpu_op_glu(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                       const bp_glu_args_t *a) {
  bpk_glu_args_t p;
  memset(&p, 0, sizeof p);
  bpk_tensor_t ts[3];
  bp_gpu_tensor(&a->y, &ts[0]);
  bp_gpu_tensor(&a->gate, &ts[1]);
  bp_gpu_tensor(&a->up, &ts[2]);
  bp_gpu_coalesce(ts, 3);
  p.y = ts[0];
  p.gate = ts[1];
  p.up = ts[2];
  p.n = bp_gpu_numel(&p.y);
  p.kind = (int32_t)a->kind;
  return gpu_launch_flat(device, stream, BP_GPU_MOD_MODEL,
                         kernel_for(a->y.dtype, "bp_glu_f", "bp_glu_d"), p.n, &p);
}

bp_status_t gpu_op_rope(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_rope_args_t *a) {
  bpk_rope_args_t p;
  memset(&p, 0, sizeof p);
  bp_gpu_tensor(&a->x, &p.x);
  bp_gpu_tensor(&a->y, &p.y);
  const bp_plugin_tensor_t *pos = &a->positions;
  if (pos->rank > 0) {
    p.pos = pos->ptr + pos->offset;
    p.pos_dtype = (int32_t)pos->dtype;
    p.pos_s0 = pos->rank == 2 ? pos->strides[0] : 0;
    p.pos_s1 = pos->strides[pos->rank - 1];
  }
  p.pos_offset = a->pos_offset;
  p.theta = a->theta_base;
  p.interleaved = a->mode == BP_ROPE_INTERLEAVED;
  p.rotary_dim = a->rotary_dim;
  int64_t rows = a->x.shape[0] * a->x.shape[1] * a->x.shape[2];
  p.n = rows * (a->rotary_dim / 2 + a->x.shape[3] - a->rotary_dim);
  return gpu_launch_flat(device, stream, BP_GPU_MOD_MODEL,
                         kernel_for(a->y.dtype, "bp_rope_f", "bp_rope_d"), p.n, &p);
}
