// gemm_passes.cuh — the kernels of kernels/cuda/gemm.cu that
// kernels/hip/gemm.hip shares whole (it has its own GEMM: gemm.cu's f16 /
// bf16 GEMM is PTX mma.sync): the GEMV, a warp per row, and the passes
// over C around a vendor BLAS call (the epilogue after it, a bias before it).
#pragma once
#include "bp_cuda_common.cuh"

// ---- passes over C around a vendor BLAS call (plugins/gpu/ops_blas.c) -----
// Grid x covers n, grid y the (batch, row) pairs; f(bz, m, n) runs once per
// element of C.
template <typename F> __device__ void gemm_c_walk(const bpk_gemm_args_t &p, F f) {
  const int64_t M = p.c.shape[1], N = p.c.shape[2], rows = p.c.shape[0] * M;
  const int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const int64_t bz = row / M;
    f(bz, row - bz * M, n);
  }
}

template <typename T>
__device__ T *gemm_at(const bpk_tensor_t &t, int64_t bz, int64_t m, int64_t n) {
  return (T *)t.ptr + bz * t.strides[0] + m * t.strides[1] + n * t.strides[2];
}

// After the call into an f32 / f64 C: C = act(C + bias) in place. C already
// holds alpha·acc + beta·C in the compute type, so this is the fused
// kernels' arithmetic, not a second rounding.
template <typename T> __device__ void gemm_epilogue_pass(const bpk_gemm_args_t &p) {
  gemm_c_walk(p, [&](int64_t bz, int64_t m, int64_t n) {
    T *c = gemm_at<T>(p.c, bz, m, n);
    *c = bpk_gemm_epilogue<T>(p, bz, m, n, *c);
  });
}

extern "C" __global__ void bp_gemm_epilogue_f(const bpk_gemm_args_t p) {
  gemm_epilogue_pass<float>(p);
}
extern "C" __global__ void bp_gemm_epilogue_d(const bpk_gemm_args_t p) {
  gemm_epilogue_pass<double>(p);
}

// Before the call into an f16 / bf16 C with a bias alone (beta 0, no
// activation): C = bias, copied as 16-bit patterns (the bias has c's
// dtype). The vendor call then runs with beta 1, adding alpha·acc to it in
// its f32 compute type and rounding once, as the fused kernels do.
extern "C" __global__ void bp_gemm_bias_fill_h(const bpk_gemm_args_t p) {
  gemm_c_walk(p, [&](int64_t bz, int64_t m, int64_t n) {
    *gemm_at<unsigned short>(p.c, bz, m, n) =
        *gemm_at<const unsigned short>(p.bias, bz, m, n);
  });
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
