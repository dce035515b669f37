// bp_cuda_common.cuh — device helpers shared by the kernels of kernels/cuda.
//
// Storage dtypes are a run-time field of each view (bpk_tensor_t.dtype): the
// branch is uniform across a launch, so it costs little next to the memory
// traffic of these kernels, and it keeps one kernel per op and compute type
// (float: "_f", double: "_d") instead of one per storage dtype.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "bp_cuda_args.h"

#define BPK_WARP 32

// Element offset of linear index i (row-major over t's shape). Rank 1,
// what the host's folding leaves of every contiguous operand, needs no
// division: a 64-bit division per axis costs more than the element's
// memory traffic.
__device__ __forceinline__ int64_t bpk_offset(const bpk_tensor_t &t,
                                              int64_t i) {
  if (t.rank == 1) return i * t.strides[0];
  int64_t off = 0;
#pragma unroll
  for (int d = BPK_MAX_RANK - 1; d >= 0; --d) {
    if (d < t.rank) {
      const int64_t s = t.shape[d];
      off += (i % s) * t.strides[d];
      i /= s;
    }
  }
  return off;
}

template <typename T> __device__ __forceinline__ T bpk_from_float(float v);
template <> __device__ __forceinline__ float bpk_from_float<float>(float v) {
  return v;
}
template <> __device__ __forceinline__ double bpk_from_float<double>(float v) {
  return (double)v;
}

// Loads element off of a view's storage, converted to T exactly (f16, bf16
// and f32 are exact in float; f64 and i64 need double).
template <typename T>
__device__ __forceinline__ T bpk_ld(uint64_t base, int dt, int64_t off) {
  switch (dt) {
  case BPK_F16:
    return (T)__half2float(((const __half *)base)[off]);
  case BPK_BF16:
    return (T)__bfloat162float(((const __nv_bfloat16 *)base)[off]);
  case BPK_F64:
    return (T)((const double *)base)[off];
  case BPK_I32:
    return (T)((const int32_t *)base)[off];
  case BPK_I64:
    return (T)((const int64_t *)base)[off];
  case BPK_U8:
    return (T)((const uint8_t *)base)[off];
  default:
    return (T)((const float *)base)[off];
  }
}

// Stores v into a float view with round-to-nearest-even. Integer views are
// written by the cast kernel only (with its saturation rules).
__device__ __forceinline__ void bpk_st(uint64_t base, int dt, int64_t off,
                                       float v) {
  switch (dt) {
  case BPK_F16:
    ((__half *)base)[off] = __float2half_rn(v);
    break;
  case BPK_BF16:
    ((__nv_bfloat16 *)base)[off] = __float2bfloat16_rn(v);
    break;
  case BPK_F64:
    ((double *)base)[off] = (double)v;
    break;
  default:
    ((float *)base)[off] = v;
    break;
  }
}

__device__ __forceinline__ void bpk_st(uint64_t base, int dt, int64_t off,
                                       double v) {
  switch (dt) {
  case BPK_F16:
    ((__half *)base)[off] = __double2half(v);
    break;
  case BPK_BF16:
    ((__nv_bfloat16 *)base)[off] = __double2bfloat16(v);
    break;
  case BPK_F32:
    ((float *)base)[off] = __double2float_rn(v);
    break;
  default:
    ((double *)base)[off] = v;
    break;
  }
}

template <typename T>
__device__ __forceinline__ T bpk_ldv(const bpk_vec_t &v, int64_t i, T dflt) {
  return v.ptr ? bpk_ld<T>(v.ptr, v.dtype, i * v.stride) : dflt;
}

template <typename T> __device__ __forceinline__ T bpk_warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// NaN-propagating max / min, as the ABI asks for max, min and reductions.
template <typename T> __device__ __forceinline__ T bpk_max(T a, T b) {
  return (a != a || b != b) ? (a + b) : (a > b ? a : b);
}
template <typename T> __device__ __forceinline__ T bpk_min(T a, T b) {
  return (a != a || b != b) ? (a + b) : (a < b ? a : b);
}

template <typename T> __device__ __forceinline__ T bpk_warp_max(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = bpk_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The unary ops of bp_unary_op_t (the same order): the elementwise kernels
// and the GEMM epilogue's activation.
enum { U_NEG, U_ABS, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_RELU, U_GELU, U_SILU,
       U_SIGMOID, U_TANH, U_SIN, U_COS, U_GELU_TANH };
template <typename T> __device__ __forceinline__ T bpk_unary_op(int op, T x) {
  switch (op) {
  case U_NEG: return -x;
  case U_ABS: return fabs(x);
  case U_EXP: return exp(x);
  case U_LOG: return log(x);
  case U_SQRT: return sqrt(x);
  case U_RSQRT: return (T)1 / sqrt(x);
  case U_RELU: return x > (T)0 ? x : (x != x ? x : (T)0); // NaN stays NaN
  case U_GELU: return x * (T)0.5 * ((T)1 + erf(x * (T)0.70710678118654752440));
  case U_SILU: return x / ((T)1 + exp(-x));
  case U_SIGMOID: return (T)1 / ((T)1 + exp(-x));
  case U_TANH: return tanh(x);
  case U_SIN: return sin(x);
  case U_GELU_TANH:
    return (T)0.5 * x * ((T)1 + tanh((T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x)));
  default: return cos(x);
  }
}

// The GEMM epilogue on one output (gemm.cu, gemm.hip), v = alpha * acc +
// beta * c: + bias, then the activation, both before C is rounded to its
// dtype (plugin-api.h). Out of line: inlined, the bias load's dtype switch
// and the whole unary switch would be copied into each of a GEMM kernel's
// unrolled stores.
template <typename T>
__device__ __noinline__ T bpk_gemm_epilogue_apply(uint64_t bias, int bias_dtype, int64_t bias_off,
                                                  int act, T v) {
  if (bias) v += bpk_ld<T>(bias, bias_dtype, bias_off);
  return act == BPK_GEMM_NO_ACT ? v : bpk_unary_op<T>(act, v);
}

template <typename T>
__device__ __forceinline__ T bpk_gemm_epilogue(const bpk_gemm_args_t &p, int64_t bz, int64_t m,
                                               int64_t n, T v) {
  if (!p.bias.ptr && p.act == BPK_GEMM_NO_ACT) return v;
  const int64_t off = bz * p.bias.strides[0] + m * p.bias.strides[1] + n * p.bias.strides[2];
  return bpk_gemm_epilogue_apply<T>(p.bias.ptr, p.bias.dtype, off, p.act, v);
}

// Grid-stride loop over [0, n).
#define BPK_FOR_EACH(i, n)                                                     \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);    \
       i += (int64_t)gridDim.x * blockDim.x)

// One warp per row, grid-stride over rows.
#define BPK_FOR_EACH_ROW(row, rows)                                            \
  for (int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;    \
       row < (rows); row += ((int64_t)gridDim.x * blockDim.x) / 32)
