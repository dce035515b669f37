// conv.cu — NCHW conv2d forward as an implicit GEMM.
//
// Per group g (grid z): rows are output pixels m = (n, p, q) of all images,
// columns the group's output channels, and the reduction runs over
// kr = (c, r, s) of the group's input channels and the filter window. The
// A tile is gathered from x on the fly (zero outside the image: padding), so
// no im2col buffer is ever written. 64x64 block tile, BK = 16, 256 threads
// with 4x4 outputs each; float accumulation for every storage dtype.
#include "bp_cuda_common.cuh"

#define CBM 64
#define CBN 64
#define CBK 16

struct conv_dims {
  int64_t N, C, H, W, K, R, S, P, Q, Cg, Kg;
};

__device__ __forceinline__ conv_dims conv_dims_of(const bpk_conv2d_args_t &a) {
  conv_dims d;
  d.N = a.x.shape[0]; d.C = a.x.shape[1]; d.H = a.x.shape[2]; d.W = a.x.shape[3];
  d.K = a.w.shape[0]; d.R = a.w.shape[2]; d.S = a.w.shape[3];
  d.P = a.y.shape[2]; d.Q = a.y.shape[3];
  d.Cg = d.C / a.groups; d.Kg = d.K / a.groups;
  return d;
}

// x value feeding output pixel m at reduction index kr of group g.
__device__ __forceinline__ float conv_a(const bpk_conv2d_args_t &a, const conv_dims &d,
                                        int64_t g, int64_t m, int64_t kr) {
  const int64_t RS = d.R * d.S;
  if (m >= d.N * d.P * d.Q || kr >= d.Cg * RS) return 0.f;
  const int64_t q = m % d.Q, p = (m / d.Q) % d.P, n = m / (d.P * d.Q);
  const int64_t c = kr / RS, r = (kr % RS) / d.S, s = kr % d.S;
  const int64_t h = p * a.stride_h - a.pad_h + r * a.dilation_h;
  const int64_t w = q * a.stride_w - a.pad_w + s * a.dilation_w;
  if (h < 0 || h >= d.H || w < 0 || w >= d.W) return 0.f;
  const int64_t off = n * a.x.strides[0] + (g * d.Cg + c) * a.x.strides[1] +
                      h * a.x.strides[2] + w * a.x.strides[3];
  return bpk_ld<float>(a.x.ptr, a.x.dtype, off);
}

__device__ __forceinline__ float conv_b(const bpk_conv2d_args_t &a, const conv_dims &d,
                                        int64_t g, int64_t kr, int64_t col) {
  const int64_t RS = d.R * d.S;
  if (col >= d.Kg || kr >= d.Cg * RS) return 0.f;
  const int64_t c = kr / RS, r = (kr % RS) / d.S, s = kr % d.S;
  const int64_t off = (g * d.Kg + col) * a.w.strides[0] + c * a.w.strides[1] +
                      r * a.w.strides[2] + s * a.w.strides[3];
  return bpk_ld<float>(a.w.ptr, a.w.dtype, off);
}

extern "C" __global__ void __launch_bounds__(256) bp_conv2d_f(const bpk_conv2d_args_t a) {
  __shared__ float As[CBK][CBM];
  __shared__ float Bs[CBK][CBN];
  const conv_dims d = conv_dims_of(a);
  const int64_t g = blockIdx.z;
  const int64_t m0 = (int64_t)blockIdx.x * CBM, c0 = (int64_t)blockIdx.y * CBN;
  const int64_t KR = d.Cg * d.R * d.S, M = d.N * d.P * d.Q;
  const int tid = threadIdx.x, tr = tid / 16, tc = tid % 16;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < KR; k0 += CBK) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const int e = tid + 256 * i;
      As[e / CBM][e % CBM] = conv_a(a, d, g, m0 + e % CBM, k0 + e / CBM); // along q
      Bs[e % CBK][e / CBK] = conv_b(a, d, g, k0 + e % CBK, c0 + e / CBK); // along kr
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < CBK; kk++) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; i++) { av[i] = As[kk][tr * 4 + i]; bv[i] = Bs[kk][tc * 4 + i]; }
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; i++) {
    const int64_t m = m0 + tr * 4 + i;
    if (m >= M) break;
    const int64_t q = m % d.Q, p = (m / d.Q) % d.P, n = m / (d.P * d.Q);
    for (int j = 0; j < 4; j++) {
      const int64_t col = c0 + tc * 4 + j;
      if (col >= d.Kg) break;
      const int64_t k = g * d.Kg + col;
      const float v = acc[i][j] + bpk_ldv<float>(a.bias, k, 0.f);
      const int64_t off = n * a.y.strides[0] + k * a.y.strides[1] + p * a.y.strides[2] +
                          q * a.y.strides[3];
      bpk_st(a.y.ptr, a.y.dtype, off, v);
    }
  }
}
