// conv.cu — NCHW conv2d forward as an implicit GEMM.
//
// Per group g (grid z): rows are output pixels m = (n, p, q) of all images,
// columns the group's output channels, and the reduction runs over
// kr = (c, r, s) of the group's input channels and the filter window. The
// A tile is gathered from x on the fly (zero outside the image: padding), so
// no im2col buffer is ever written. 64x64 block tile, BK = 16, 256 threads
// with 4x4 outputs each; float accumulation for every storage dtype.
// Where the plugin can run a conv2d as GEMMs on its tuned GEMM (cuBLAS /
// rocBLAS or the tensor-core tiles), plugins/gpu/ops_conv_gemm.c uses the
// two kernels at the end of this file instead; bp_conv2d_f takes the rest
// (depthwise and small layers, graph captures).
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

// ---- conv2d as GEMMs: the patch matrix and the bias ------------------------
// Raw element copies (T is the storage type of x's dtype): a patch matrix
// holds x's values exactly. Each thread keeps one output pixel and walks
// BPK_IM2COL_ROWS reduction rows by stepping (c, r, s), so no division runs
// per element.
template <typename T> __device__ void im2col(const bpk_conv2d_im2col_args_t &a) {
  const bpk_conv2d_args_t &cv = a.conv;
  const int Q = (int)cv.y.shape[3], PQ = (int)(cv.y.shape[2] * cv.y.shape[3]);
  const int S = (int)cv.w.shape[3], RS = (int)(cv.w.shape[2] * cv.w.shape[3]);
  const int KR = (int)(cv.w.shape[1]) * RS, H = (int)cv.x.shape[2], W = (int)cv.x.shape[3];
  const int pq = blockIdx.x * blockDim.x + threadIdx.x;
  if (pq >= PQ) return;
  const int p = pq / Q, q = pq - p * Q;
  const int h0 = p * cv.stride_h - cv.pad_h, w0 = q * cv.stride_w - cv.pad_w;
  const int chunks = (KR + BPK_IM2COL_ROWS - 1) / BPK_IM2COL_ROWS;
  const T *x = (const T *)cv.x.ptr;
  T *col = (T *)a.col;
  const int64_t *xs = cv.x.strides;
  for (int64_t job = blockIdx.y; job < a.nb * chunks; job += gridDim.y) {
    const int64_t b = job / chunks;
    const int kr0 = (int)(job - b * chunks) * BPK_IM2COL_ROWS;
    int c = kr0 / RS, r = (kr0 - c * RS) / S, s = kr0 - c * RS - r * S;
    const int64_t xb = (a.n0 + b) * xs[0] + a.g * cv.w.shape[1] * xs[1];
    T *out = col + ((b * KR + kr0) * (int64_t)PQ + pq);
    const int rows = KR - kr0 < BPK_IM2COL_ROWS ? KR - kr0 : BPK_IM2COL_ROWS;
    for (int i = 0; i < rows; i++, out += PQ) {
      const int h = h0 + r * cv.dilation_h, w = w0 + s * cv.dilation_w;
      T v = T(0);
      if (h >= 0 && h < H && w >= 0 && w < W) v = x[xb + c * xs[1] + h * xs[2] + w * xs[3]];
      *out = v;
      if (++s == S) {
        s = 0;
        if (++r == (int)cv.w.shape[2]) r = 0, c++;
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(BPK_IM2COL_THREADS)
    bp_conv2d_im2col(const bpk_conv2d_im2col_args_t a) {
  switch (a.conv.x.dtype) {
  case BPK_F16:
  case BPK_BF16: im2col<uint16_t>(a); break;
  case BPK_F64: im2col<uint64_t>(a); break;
  default: im2col<uint32_t>(a); break;
  }
}

template <typename T> __device__ void bias_fill(const bpk_conv2d_args_t &a) {
  const int64_t K = a.y.shape[1], Q = a.y.shape[3], PQ = a.y.shape[2] * Q, rows = a.y.shape[0] * K;
  const int64_t pq = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (pq >= PQ) return;
  const int64_t p = pq / Q, q = pq - p * Q;
  const T *bias = (const T *)a.bias.ptr;
  T *y = (T *)a.y.ptr;
  const int64_t *ys = a.y.strides;
  const int64_t pix = p * ys[2] + q * ys[3];
  for (int64_t row0 = (int64_t)blockIdx.y * BPK_IM2COL_ROWS; row0 < rows;
       row0 += (int64_t)gridDim.y * BPK_IM2COL_ROWS) {
    int64_t n = row0 / K, k = row0 - n * K;
    const int64_t end = rows - row0 < BPK_IM2COL_ROWS ? rows - row0 : BPK_IM2COL_ROWS;
    for (int64_t i = 0; i < end; i++) {
      y[n * ys[0] + k * ys[1] + pix] = bias[k * a.bias.stride];
      if (++k == K) k = 0, n++;
    }
  }
}

extern "C" __global__ void __launch_bounds__(BPK_IM2COL_THREADS)
    bp_conv2d_bias_fill(const bpk_conv2d_args_t a) {
  switch (a.y.dtype) {
  case BPK_F16:
  case BPK_BF16: bias_fill<uint16_t>(a); break;
  case BPK_F64: bias_fill<uint64_t>(a); break;
  default: bias_fill<uint32_t>(a); break;
  }
}
