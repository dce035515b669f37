/*
 * plugins/gpu/ops_data.c — fill, copy, cast and random of the CUDA and ROCm
 * backends: marshalling into kernels/cuda/elementwise.cu and random.cu; a
 * dense copy is a driver memcpy.
 */
#include <string.h>

#include "kernels/common/bp_half.h"
#include "kernels/common/bp_qcodec.h"
#include "plugins/gpu/gpu.h"

/* The bit pattern of value in dtype dt, with the cast rules of the ABI
 * (round to nearest even, NaN to integer 0, saturation). */
static uint64_t fill_bits(double v, bp_dtype_t dt);

bp_status_t gpu_op_fill(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_fill_args_t *a) {
  bpk_fill_args_t p;
  memset(&p, 0, sizeof p);
  bp_gpu_tensor(&a->y, &p.y);
  bp_gpu_coalesce(&p.y, 1);
  p.n = bp_gpu_numel(&p.y);
  p.elem_size = bp_gpu_dtype_size(a->y.dtype);
  p.bits = fill_bits(a->value, a->y.dtype);
  return gpu_launch_flat(device, stream, BP_GPU_MOD_ELEMENTWISE, "bp_fill", p.n, &p);
}

static bp_status_t copy_like(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                             const bp_copy_args_t *a, const char *kernel) {
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
  return gpu_launch_flat(device, stream, BP_GPU_MOD_ELEMENTWISE, kernel, p.n, &p);
}

bp_status_t gpu_op_copy(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_copy_args_t *a) {
  /* A dense copy of one contiguous range is a driver memcpy (copy engine,
   * no kernel). */
  bpk_tensor_t ts[2];
  bp_gpu_tensor(&a->y, &ts[0]);
  bp_gpu_tensor(&a->x, &ts[1]);
  bp_gpu_coalesce(ts, 2);
  if (ts[0].rank == 1 && ts[0].strides[0] == 1 && ts[1].strides[0] == 1) {
    uint64_t bytes = (uint64_t)ts[0].shape[0] * bp_gpu_dtype_size(a->y.dtype);
    if (bytes == 0) return BP_OK;
    return gpu_mem_copy(device, stream, ts[0].ptr, 0, ts[1].ptr, 0, bytes);
  }
  return copy_like(device, stream, a, "bp_copy");
}

bp_status_t gpu_op_cast(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_copy_args_t *a) {
  if (gpu_cast_is_quant(a)) return gpu_cast_quant(device, stream, a); /* ops_quant.c */
  return copy_like(device, stream, a, "bp_cast");
}

bp_status_t gpu_op_random(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_random_args_t *a) {
  bpk_random_args_t p;
  memset(&p, 0, sizeof p);
  bp_gpu_tensor(&a->y, &p.y);
  p.n = bp_gpu_numel(&p.y);
  p.seed = a->seed;
  p.offset = a->offset;
  p.a = a->a;
  p.b = a->b;
  p.dist = (int32_t)a->dist;
  /* Element i of y (row-major) is number i of the stream, so the view is not
   * coalesced in a way that reorders elements; coalescing only merges. */
  bp_gpu_coalesce(&p.y, 1);
  return gpu_launch_flat(device, stream, BP_GPU_MOD_RANDOM, "bp_random", p.n, &p);
}

/* ---- fill values -------------------------------------------------------- */

static int64_t saturate(double v, double lo, double hi, int64_t lo_i, int64_t hi_i) {
  if (v != v) return 0;
  v = __builtin_rint(v);
  if (v <= lo) return lo_i;
  if (v >= hi) return hi_i;
  return (int64_t)v;
}

static uint64_t fill_bits(double v, bp_dtype_t dt) {
  union {
    float f;
    uint32_t u;
  } f32;
  union {
    double d;
    uint64_t u;
  } f64;
  switch (dt) {
  case BP_F32:
    f32.f = (float)v;
    return f32.u;
  case BP_F16:
    return bp_f32_to_f16((float)v);
  case BP_BF16:
    return bp_f32_to_bf16((float)v);
  case BP_F64:
    f64.d = v;
    return f64.u;
  case BP_I32:
    return (uint32_t)(int32_t)saturate(v, -2147483648.0, 2147483647.0, INT32_MIN, INT32_MAX);
  case BP_U8:
    return (uint8_t)saturate(v, 0, 255, 0, 255);
  case BP_I8:
    return (uint8_t)(int8_t)saturate(v, -128, 127, -128, 127);
  case BP_FP8_E4M3:
    return bp_fp8_encode(v, 3);
  case BP_FP8_E5M2:
    return bp_fp8_encode(v, 2);
  default:
    return (uint64_t)saturate(v, -9223372036854775808.0, 9223372036854775808.0, INT64_MIN,
                              INT64_MAX);
  }
}
