// reduce.cu — reductions and softmax along one axis: one warp per row.
//
// A row is the len elements along the axis, x_step elements apart; rows are
// enumerated by the x and y views with that axis at extent 1. Lanes stride
// the row and combine by shuffles, which also sums more accurately than a
// sequential loop.
#include "bp_cuda_common.cuh"
#include "bp_rows.cuh"

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_VAR, R_ARGMAX };

template <typename T> __device__ __forceinline__ T warp_prod(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v *= __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T> __device__ __forceinline__ T warp_min(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = bpk_min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// argmax: the first index of the maximum, a NaN counting as the maximum.
template <typename T>
__device__ __forceinline__ bool argmax_better(T a, int64_t ia, T b, int64_t ib) {
  const bool an = a != a, bn = b != b;
  if (an || bn) return an && (!bn || ia < ib);
  return a > b || (a == b && ia < ib);
}

template <typename T>
__device__ int64_t row_argmax(const bpk_rows_t &r, int64_t base, int lane) {
  T best = 0;
  int64_t bi = -1;
  for (int64_t j = lane; j < r.len; j += 32) {
    T v = bpk_ld<T>(r.x.ptr, r.x.dtype, base + j * r.x_step);
    if (bi < 0 || argmax_better(v, j, best, bi)) { best = v; bi = j; }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    T ov = __shfl_xor_sync(0xffffffffu, best, o);
    int64_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (oi >= 0 && (bi < 0 || argmax_better(ov, oi, best, bi))) { best = ov; bi = oi; }
  }
  return bi < 0 ? 0 : bi;
}

template <typename T>
__device__ T row_reduce(const bpk_rows_t &r, int op, int64_t base, int lane) {
  T acc = op == R_PROD ? (T)1 : op == R_MAX ? (T)-INFINITY : op == R_MIN ? (T)INFINITY : (T)0;
  for (int64_t j = lane; j < r.len; j += 32) {
    T v = bpk_ld<T>(r.x.ptr, r.x.dtype, base + j * r.x_step);
    if (op == R_MAX) acc = bpk_max(acc, v);
    else if (op == R_MIN) acc = bpk_min(acc, v);
    else if (op == R_PROD) acc *= v;
    else acc += v;
  }
  if (op == R_MAX) return bpk_warp_max(acc);
  if (op == R_MIN) return warp_min(acc);
  if (op == R_PROD) return warp_prod(acc);
  acc = bpk_warp_sum(acc);
  if (op == R_SUM) return acc;
  const T mean = acc / (T)r.len;
  if (op == R_MEAN) return mean;
  T sq = 0; // variance in a second pass: no cancellation of E[x^2]-E[x]^2
  for (int64_t j = lane; j < r.len; j += 32) {
    T d = bpk_ld<T>(r.x.ptr, r.x.dtype, base + j * r.x_step) - mean;
    sq += d * d;
  }
  return bpk_warp_sum(sq) / (T)r.len;
}

template <typename T> __device__ void reduce(const bpk_reduce_args_t &p) {
  const int lane = threadIdx.x & 31;
  BPK_FOR_EACH_ROW(row, p.r.rows) {
    const int64_t base = bpk_offset(p.r.x, row), yo = bpk_offset(p.r.y, row);
    if (p.op == R_ARGMAX) {
      int64_t i = row_argmax<T>(p.r, base, lane);
      if (lane == 0) {
        if (p.r.y.dtype == BPK_I64) ((int64_t *)p.r.y.ptr)[yo] = i;
        else ((int32_t *)p.r.y.ptr)[yo] = (int32_t)i;
      }
      continue;
    }
    T v = row_reduce<T>(p.r, p.op, base, lane);
    if (lane == 0) bpk_st(p.r.y.ptr, p.r.y.dtype, yo, v);
  }
}

// Softmax of a row staged in shared memory (bp_rows.cuh): one read and
// one write of global memory, each exp computed once.
template <typename T> __device__ void softmax_block(const bpk_softmax_args_t &p) {
  __shared__ T sh[32];
  T *buf = (T *)bpk_row_smem;
  const bpk_rows_t &r = p.r;
  const int len = (int)r.len; // at most BPK_ROW_SMEM / sizeof(T)
  for (int64_t row = blockIdx.x; row < r.rows; row += gridDim.x) {
    const int64_t xb = bpk_offset(r.x, row), yb = bpk_offset(r.y, row);
    T m = (T)-INFINITY;
#pragma unroll 8 // loads in flight
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
      const T x = bpk_ld<T>(r.x.ptr, r.x.dtype, xb + j * r.x_step);
      buf[j] = x;
      m = bpk_max(m, x);
    }
    m = bpk_block_max(m, (T)-INFINITY, sh);
    T s = 0;
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
      const T d = buf[j] - m, e = exp(d);
      s += e;
      buf[j] = p.log ? d : e;
    }
    s = bpk_block_sum(s, sh);
    const T ls = log(s), inv = (T)1 / s;
    for (int j = threadIdx.x; j < len; j += blockDim.x)
      bpk_st(r.y.ptr, r.y.dtype, yb + j * r.y_step, p.log ? buf[j] - ls : buf[j] * inv);
  }
}

template <typename T> __device__ void softmax(const bpk_softmax_args_t &p) {
  if (bpk_row_in_block<T>(p.r.len)) {
    softmax_block<T>(p);
    return;
  }
  const int lane = threadIdx.x & 31;
  const bpk_rows_t &r = p.r;
  BPK_FOR_EACH_ROW(row, r.rows) {
    const int64_t xb = bpk_offset(r.x, row), yb = bpk_offset(r.y, row);
    T m = (T)-INFINITY;
    for (int64_t j = lane; j < r.len; j += 32)
      m = bpk_max(m, bpk_ld<T>(r.x.ptr, r.x.dtype, xb + j * r.x_step));
    m = bpk_warp_max(m);
    T s = 0;
    for (int64_t j = lane; j < r.len; j += 32)
      s += exp(bpk_ld<T>(r.x.ptr, r.x.dtype, xb + j * r.x_step) - m);
    s = bpk_warp_sum(s);
    const T ls = log(s), inv = (T)1 / s;
    for (int64_t j = lane; j < r.len; j += 32) {
      T d = bpk_ld<T>(r.x.ptr, r.x.dtype, xb + j * r.x_step) - m;
      bpk_st(r.y.ptr, r.y.dtype, yb + j * r.y_step, p.log ? d - ls : exp(d) * inv);
    }
  }
}

extern "C" __global__ void bp_reduce_f(const bpk_reduce_args_t p) { reduce<float>(p); }
extern "C" __global__ void bp_reduce_d(const bpk_reduce_args_t p) { reduce<double>(p); }
extern "C" __global__ void bp_softmax_f(const bpk_softmax_args_t p) { softmax<float>(p); }
extern "C" __global__ void bp_softmax_d(const bpk_softmax_args_t p) { softmax<double>(p); }
