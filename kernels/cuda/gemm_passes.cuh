// gemm_passes.cuh — the kernels of kernels/cuda/gemm.cu that
// kernels/hip/gemm.hip shares whole (it has its own GEMM: gemm.cu's f16 /
// bf16 GEMM is PTX mma.sync): the GEMV, a warp per row, and the GEMM
// epilogue as its own pass.
#pragma once
#include "bp_cuda_common.cuh"

// ---- the epilogue as its own pass ------------------------------------------
// After a vendor BLAS call into an f32 / f64 C (plugins/gpu/ops_blas.c):
// C = act(C + bias) in place. C already holds alpha·acc + beta·C in the
// compute type, so this is the fused kernels' arithmetic, not a second
// rounding. Grid x covers n, grid y the (batch, row) pairs.
template <typename T> __device__ void gemm_epilogue_pass(const bpk_gemm_args_t &p) {
  const int64_t M = p.c.shape[1], N = p.c.shape[2], rows = p.c.shape[0] * M;
  const int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const int64_t bz = row / M, m = row - bz * M;
    T *c = (T *)p.c.ptr + bz * p.c.strides[0] + m * p.c.strides[1] + n * p.c.strides[2];
    *c = bpk_gemm_epilogue<T>(p, bz, m, n, *c);
  }
}

extern "C" __global__ void bp_gemm_epilogue_f(const bpk_gemm_args_t p) {
  gemm_epilogue_pass<float>(p);
}
extern "C" __global__ void bp_gemm_epilogue_d(const bpk_gemm_args_t p) {
  gemm_epilogue_pass<double>(p);
}

template <typename T> __device__ void gemv(const bpk_gemv_args_t &p) {
  const int lane = threadIdx.x & 31;
  BPK_FOR_EACH_ROW(i, p.m) {
    T s = 0;
    for (int64_t j = lane; j < p.n; j += 32) {
      const int64_t ao = i * p.a.strides[0] + j * p.a.strides[1];
      s += bpk_ld<T>(p.a.ptr, p.a.dtype, ao) * bpk_ld<T>(p.x.ptr, p.x.dtype, j * p.x.stride);
    }
    s = bpk_warp_sum(s);
    if (lane == 0) {
      T v = (T)p.alpha * s;
      if (p.beta != 0) v += (T)p.beta * bpk_ld<T>(p.y.ptr, p.y.dtype, i * p.y.stride);
      bpk_st(p.y.ptr, p.y.dtype, i * p.y.stride, v);
    }
  }
}

extern "C" __global__ void bp_gemv_f(const bpk_gemv_args_t p) { gemv<float>(p); }
extern "C" __global__ void bp_gemv_d(const bpk_gemv_args_t p) { gemv<double>(p); }
