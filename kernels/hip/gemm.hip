// gemm.hip — batched GEMM and GEMV for HIP.
//
// kernels/cuda/gemm.cu cannot be shared whole: its f16 / bf16 path is PTX
// mma.sync inline assembly. The GEMV half is the same as gemm.cu's; the GEMM
// is one SIMT kernel for every float dtype, with the CUDA kernels' launch
// geometry (grid x = n tiles, y = m tiles, z = batch, grid-stride beyond
// 65535; 256 threads with an 8x8 register tile each over a 128x128 block
// tile), so the host side (plugins/gpu/ops_blas.c) marshals exactly as the
// CUDA backend does.
//  bp_gemm_f32 / bp_gemm_f16 / bp_gemm_bf16: float accumulation.
//  bp_gemm_f64: double.
// The epilogue (bias, activation) is fused into the stores, as in gemm.cu.
// Matrix cores (MFMA on CDNA, WMMA on RDNA3) are not used yet.
// NOT CHECKED ON AMD HARDWARE (see docs/backend-rocm.md).
#include "bp_hip_compat.h"
#include "bp_cuda_common.cuh"

#define TILE 128
#define BK 8

__device__ __forceinline__ int64_t elem_bytes(int dt) {
  return dt == BPK_F16 || dt == BPK_BF16 ? 2 : dt == BPK_F64 || dt == BPK_I64 ? 8 : dt == BPK_U8 ? 1 : 4;
}

// Stages a TILE (outer) x BK (k) slab of an operand into S[k][outer],
// converted to the compute type; element (o, k) is at offset
// o * so + k * sk of the view. Out-of-range elements are 0.
template <typename C>
__device__ __forceinline__ void stage(C (*S)[TILE], uint64_t base, int dt,
                                      int64_t so, int64_t sk, int64_t o0,
                                      int64_t no, int64_t k0, int64_t nk) {
  for (int e = threadIdx.x; e < TILE * BK; e += blockDim.x) {
    // Consecutive threads take consecutive k when the operand is contiguous
    // along k, consecutive outer indices otherwise: coalesced either way.
    int o, kk;
    if (sk == 1) { o = e / BK; kk = e % BK; } else { kk = e / TILE; o = e % TILE; }
    const int64_t go = o0 + o, gk = k0 + kk;
    S[kk][o] = (go < no && gk < nk) ? bpk_ld<C>(base, dt, go * so + gk * sk) : (C)0;
  }
}

template <typename C> __device__ void gemm_simt(const bpk_gemm_args_t &p) {
  __shared__ C As[BK][TILE];
  __shared__ C Bs[BK][TILE];
  const int64_t M = p.c.shape[1], N = p.c.shape[2], K = p.a.shape[2];
  const int64_t m0 = (int64_t)blockIdx.y * TILE, n0 = (int64_t)blockIdx.x * TILE;
  const int tr = threadIdx.x / 16, tc = threadIdx.x % 16;
  for (int64_t bz = blockIdx.z; bz < p.c.shape[0]; bz += gridDim.z) {
    const uint64_t A = p.a.ptr + (uint64_t)(bz * p.a.strides[0] * elem_bytes(p.a.dtype));
    const uint64_t B = p.b.ptr + (uint64_t)(bz * p.b.strides[0] * elem_bytes(p.b.dtype));
    C acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
      for (int j = 0; j < 8; j++) acc[i][j] = 0;
    for (int64_t k0 = 0; k0 < K; k0 += BK) {
      stage<C>(As, A, p.a.dtype, p.a.strides[1], p.a.strides[2], m0, M, k0, K);
      stage<C>(Bs, B, p.b.dtype, p.b.strides[2], p.b.strides[1], n0, N, k0, K);
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < BK; kk++) {
        C a[8], b[8];
#pragma unroll
        for (int i = 0; i < 8; i++) { a[i] = As[kk][tr * 8 + i]; b[i] = Bs[kk][tc * 8 + i]; }
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
          for (int j = 0; j < 8; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);
      }
      __syncthreads();
    }
    const uint64_t Cp = p.c.ptr + (uint64_t)(bz * p.c.strides[0] * elem_bytes(p.c.dtype));
    for (int i = 0; i < 8; i++) {
      const int64_t m = m0 + tr * 8 + i;
      if (m >= M) break;
      for (int j = 0; j < 8; j++) {
        const int64_t n = n0 + tc * 8 + j;
        if (n >= N) break;
        const int64_t off = m * p.c.strides[1] + n * p.c.strides[2];
        C v = (C)p.alpha * acc[i][j];
        // beta == 0 never reads C, so NaN there cannot leak.
        if (p.beta != 0) v += (C)p.beta * bpk_ld<C>(Cp, p.c.dtype, off);
        bpk_st(Cp, p.c.dtype, off, bpk_gemm_epilogue<C>(p, bz, m, n, v));
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) bp_gemm_f32(const bpk_gemm_args_t p) {
  gemm_simt<float>(p);
}
extern "C" __global__ void __launch_bounds__(256) bp_gemm_f16(const bpk_gemm_args_t p) {
  gemm_simt<float>(p);
}
extern "C" __global__ void __launch_bounds__(256) bp_gemm_bf16(const bpk_gemm_args_t p) {
  gemm_simt<float>(p);
}
extern "C" __global__ void __launch_bounds__(256) bp_gemm_f64(const bpk_gemm_args_t p) {
  gemm_simt<double>(p);
}

// ---- the GEMV and the epilogue pass (as kernels/cuda/gemm.cu) -------------
#include "gemm_passes.cuh"
