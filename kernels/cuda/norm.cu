// norm.cu — layer norm and RMS norm (one warp per row), inference batch
// norm and 2-D pooling (one thread per output element).
#include "bp_cuda_common.cuh"
#include "bp_rows.cuh"

// Layer / RMS norm scale the row by 2^-e first, 2^e the power of two of its
// largest magnitude (clamped so 2^-e and 2^e are normal in T; the scaling is
// exact), so that neither the squares nor the sums overflow (x = 2e19 in
// f32) or underflow: y = (x' - m) / sqrt(v + eps 2^-2e), m and v the mean
// and variance of x' = x 2^-e. When eps 2^-2e overflows, v is nothing
// beside it and y = (x' - m) 2^e / sqrt(eps).

// The scale exponent e of a row from its largest magnitude (above).
template <typename T> __device__ __forceinline__ int norm_exponent(T amax) {
  // 0, inf and NaN rows unscaled: their answer (NaN) stays
  const int emax = sizeof(T) == 4 ? 126 : 1022;
  return amax > 0 && isfinite(amax) ? max(-emax, min(emax, ilogb(amax))) : 0;
}

// The same with the row staged in shared memory (bp_rows.cuh): one read
// and one write of global memory; the passes after the first read shared
// memory.
template <typename T> __device__ void norm_block(const bpk_norm_args_t &p) {
  __shared__ T sh[32];
  T *buf = (T *)bpk_row_smem;
  const bpk_rows_t &r = p.r;
  const int len = (int)r.len; // at most BPK_ROW_SMEM / sizeof(T)
  for (int64_t row = blockIdx.x; row < r.rows; row += gridDim.x) {
    const int64_t xb = bpk_offset(r.x, row), yb = bpk_offset(r.y, row);
    T amax = 0;
#pragma unroll 8 // loads in flight
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
      const T x = bpk_ld<T>(r.x.ptr, r.x.dtype, xb + j * r.x_step);
      buf[j] = x;
      amax = bpk_max(amax, (T)fabs(x));
    }
    const int e = norm_exponent<T>(bpk_block_max(amax, (T)0, sh));
    const T sc = ldexp((T)1, -e);
    T mean = 0;
    if (!p.rms) {
      T s = 0;
      for (int j = threadIdx.x; j < len; j += blockDim.x) s += buf[j] * sc;
      mean = bpk_block_sum(s, sh) / (T)len;
    }
    // Around the mean (zero for RMS norm): no cancellation.
    T sq = 0;
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
      const T d = buf[j] * sc - mean;
      sq += d * d;
    }
    const T eps = (T)p.eps, e2 = eps * sc * sc, var = bpk_block_sum(sq, sh) / (T)len;
    const T inv = isinf(e2) ? ldexp((T)1 / sqrt(eps), e) : (T)1 / sqrt(var + e2);
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
      const T v = (buf[j] * sc - mean) * inv;
      bpk_st(r.y.ptr, r.y.dtype, yb + j * r.y_step,
             v * bpk_ldv<T>(p.gamma, j, (T)1) + bpk_ldv<T>(p.beta, j, (T)0));
    }
  }
}

template <typename T> __device__ void norm(const bpk_norm_args_t &p) {
  if (bpk_row_in_block<T>(p.r.len)) {
    norm_block<T>(p);
    return;
  }
  const int lane = threadIdx.x & 31;
  const bpk_rows_t &r = p.r;
  BPK_FOR_EACH_ROW(row, r.rows) {
    const int64_t xb = bpk_offset(r.x, row), yb = bpk_offset(r.y, row);
    T amax = 0;
    for (int64_t j = lane; j < r.len; j += 32)
      amax = bpk_max(amax, (T)fabs(bpk_ld<T>(r.x.ptr, r.x.dtype, xb + j * r.x_step)));
    const int e = norm_exponent<T>(bpk_warp_max(amax));
    const T sc = ldexp((T)1, -e);
    T mean = 0;
    if (!p.rms) {
      T s = 0;
      for (int64_t j = lane; j < r.len; j += 32)
        s += bpk_ld<T>(r.x.ptr, r.x.dtype, xb + j * r.x_step) * sc;
      mean = bpk_warp_sum(s) / (T)r.len;
    }
    // Second pass around the mean (zero for RMS norm): no cancellation.
    T sq = 0;
    for (int64_t j = lane; j < r.len; j += 32) {
      T d = bpk_ld<T>(r.x.ptr, r.x.dtype, xb + j * r.x_step) * sc - mean;
      sq += d * d;
    }
    const T eps = (T)p.eps, e2 = eps * sc * sc, var = bpk_warp_sum(sq) / (T)r.len;
    const T inv = isinf(e2) ? ldexp((T)1 / sqrt(eps), e) : (T)1 / sqrt(var + e2);
    for (int64_t j = lane; j < r.len; j += 32) {
      T v = (bpk_ld<T>(r.x.ptr, r.x.dtype, xb + j * r.x_step) * sc - mean) * inv;
      v = v * bpk_ldv<T>(p.gamma, j, (T)1) + bpk_ldv<T>(p.beta, j, (T)0);
      bpk_st(r.y.ptr, r.y.dtype, yb + j * r.y_step, v);
    }
  }
}

extern "C" __global__ void bp_norm_f(const bpk_norm_args_t p) { norm<float>(p); }
extern "C" __global__ void bp_norm_d(const bpk_norm_args_t p) { norm<double>(p); }

template <typename T> __device__ void batch_norm(const bpk_batch_norm_args_t &p) {
  int64_t inner = 1;
  for (int d = 2; d < p.y.rank; d++) inner *= p.y.shape[d];
  const int64_t channels = p.y.rank > 1 ? p.y.shape[1] : 1;
  BPK_FOR_EACH(i, p.n) {
    const int64_t c = (i / inner) % channels;
    const T x = bpk_ld<T>(p.x.ptr, p.x.dtype, bpk_offset(p.x, i));
    const T inv = (T)1 / sqrt(bpk_ldv<T>(p.var, c, (T)1) + (T)p.eps);
    const T v = (x - bpk_ldv<T>(p.mean, c, (T)0)) * inv * bpk_ldv<T>(p.scale, c, (T)1) +
                bpk_ldv<T>(p.bias, c, (T)0);
    bpk_st(p.y.ptr, p.y.dtype, bpk_offset(p.y, i), v);
  }
}

extern "C" __global__ void bp_batch_norm_f(const bpk_batch_norm_args_t p) { batch_norm<float>(p); }
extern "C" __global__ void bp_batch_norm_d(const bpk_batch_norm_args_t p) { batch_norm<double>(p); }

template <typename T> __device__ void pool2d(const bpk_pool2d_args_t &p) {
  const int64_t C = p.y.shape[1], P = p.y.shape[2], Q = p.y.shape[3];
  const int64_t H = p.x.shape[2], W = p.x.shape[3];
  BPK_FOR_EACH(i, p.n) {
    const int64_t q = i % Q, pp = (i / Q) % P, c = (i / (Q * P)) % C, n = i / (Q * P * C);
    const int64_t h0 = pp * p.stride_h - p.pad_h, w0 = q * p.stride_w - p.pad_w;
    const int64_t xb = n * p.x.strides[0] + c * p.x.strides[1];
    T acc = p.kind == 0 ? (T)-INFINITY : (T)0;
    int64_t count = 0;
    for (int kh = 0; kh < p.kernel_h; kh++) {
      const int64_t h = h0 + kh;
      if (h < 0 || h >= H) continue; // padding: -inf for max, skipped for avg
      for (int kw = 0; kw < p.kernel_w; kw++) {
        const int64_t w = w0 + kw;
        if (w < 0 || w >= W) continue;
        const T v = bpk_ld<T>(p.x.ptr, p.x.dtype, xb + h * p.x.strides[2] + w * p.x.strides[3]);
        acc = p.kind == 0 ? bpk_max(acc, v) : acc + v;
        count++;
      }
    }
    if (p.kind != 0) {
      // PyTorch's divisor: the window clipped to the padded input.
      const int64_t hend = min(h0 + p.kernel_h, H + p.pad_h), wend = min(w0 + p.kernel_w, W + p.pad_w);
      const int64_t padded = (hend - h0) * (wend - w0);
      const int64_t div = p.count_include_pad ? padded : count;
      acc = div > 0 ? acc / (T)div : (T)0;
    }
    const int64_t yo = n * p.y.strides[0] + c * p.y.strides[1] + pp * p.y.strides[2] + q * p.y.strides[3];
    bpk_st(p.y.ptr, p.y.dtype, yo, acc);
  }
}

extern "C" __global__ void bp_pool2d_f(const bpk_pool2d_args_t p) { pool2d<float>(p); }
extern "C" __global__ void bp_pool2d_d(const bpk_pool2d_args_t p) { pool2d<double>(p); }
