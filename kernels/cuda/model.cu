// model.cu — the model ops of ABI 1.5: gather, arange, binary with a scalar
// operand, gated linear units and rotary position embedding
// (bp_model_args.h). Gather moves raw elements of any dtype; arange and
// RoPE's angles are formed in double (an f32 angle of a late position is
// off by more than an f32 output may be); the rest compute in float ("_f")
// or double ("_d") like elementwise.cu.
#include "bp_cuda_common.cuh"
#include "bp_model_args.h"

__device__ __forceinline__ int64_t model_index(uint64_t base, int dt,
                                               int64_t off) {
  return dt == BPK_I64 ? ((const int64_t *)base)[off]
                       : (int64_t)((const int32_t *)base)[off];
}

__device__ __forceinline__ void model_move(const bpk_gather_args_t &p,
                                           int64_t oy, int64_t ot, bool in) {
  switch (p.elem_size) {
  case 1: ((uint8_t *)p.y.ptr)[oy] = in ? ((const uint8_t *)p.tbl.ptr)[ot] : 0; break;
  case 2: ((uint16_t *)p.y.ptr)[oy] = in ? ((const uint16_t *)p.tbl.ptr)[ot] : 0; break;
  case 8: ((uint64_t *)p.y.ptr)[oy] = in ? ((const uint64_t *)p.tbl.ptr)[ot] : 0; break;
  default: ((uint32_t *)p.y.ptr)[oy] = in ? ((const uint32_t *)p.tbl.ptr)[ot] : 0; break;
  }
}

extern "C" __global__ void bp_gather(const bpk_gather_args_t p) {
  BPK_FOR_EACH(i, p.n) {
    int64_t k = model_index(p.idx.ptr, p.idx.dtype, bpk_offset(p.idx, i));
    bool in = k >= 0 && k < p.axis_len;
    model_move(p, bpk_offset(p.y, i), bpk_offset(p.tbl, i) + (in ? k * p.axis_stride : 0), in);
  }
}

// The cast rules: NaN 0, halves to even, saturating at the bounds.
__device__ __forceinline__ int64_t model_sat(double v, double lo, double hi,
                                             int64_t lo_i, int64_t hi_i) {
  if (v != v) return 0;
  v = rint(v);
  return v <= lo ? lo_i : v >= hi ? hi_i : (int64_t)v;
}

extern "C" __global__ void bp_arange(const bpk_arange_args_t p) {
  BPK_FOR_EACH(i, p.n) {
    const double v = p.start + (double)i * p.step;
    const int64_t o = bpk_offset(p.y, i);
    switch (p.y.dtype) {
    case BPK_I32:
      ((int32_t *)p.y.ptr)[o] = (int32_t)model_sat(v, -2147483648.0, 2147483647.0, INT32_MIN, INT32_MAX);
      break;
    case BPK_I64:
      ((int64_t *)p.y.ptr)[o] = model_sat(v, -9223372036854775808.0, 9223372036854775808.0, INT64_MIN, INT64_MAX);
      break;
    case BPK_U8: ((uint8_t *)p.y.ptr)[o] = (uint8_t)model_sat(v, 0.0, 255.0, 0, 255); break;
    default: bpk_st(p.y.ptr, p.y.dtype, o, v); break; // one rounding from double
    }
  }
}

template <typename T> __device__ __forceinline__ T model_binary(int op, T a, T b) {
  switch (op) {
  case 0: return a + b;
  case 1: return a - b;
  case 2: return a * b;
  case 3: return a / b;
  case 4: return bpk_max(a, b);
  case 5: return bpk_min(a, b);
  default: return pow(a, b);
  }
}

template <typename T> __device__ void binary_scalar(const bpk_binary_scalar_args_t &p) {
  const T s = (T)p.scalar;
  BPK_FOR_EACH(i, p.n) {
    T a = bpk_ld<T>(p.a.ptr, p.a.dtype, bpk_offset(p.a, i));
    bpk_st(p.y.ptr, p.y.dtype, bpk_offset(p.y, i),
           p.first ? model_binary<T>(p.op, s, a) : model_binary<T>(p.op, a, s));
  }
}

// bp_glu_kind_t: SwiGLU, GeGLU (exact), GeGLU (tanh), ReGLU.
template <typename T> __device__ __forceinline__ T glu_act(int kind, T x) {
  switch (kind) {
  case 0: return x / ((T)1 + exp(-x));
  case 1: return x * (T)0.5 * ((T)1 + erf(x * (T)0.70710678118654752440));
  case 2: return (T)0.5 * x * ((T)1 + tanh((T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x)));
  default: return x > (T)0 ? x : (x != x ? x : (T)0);
  }
}

template <typename T> __device__ void glu(const bpk_glu_args_t &p) {
  BPK_FOR_EACH(i, p.n) {
    T g = bpk_ld<T>(p.gate.ptr, p.gate.dtype, bpk_offset(p.gate, i));
    T u = bpk_ld<T>(p.up.ptr, p.up.dtype, bpk_offset(p.up, i));
    bpk_st(p.y.ptr, p.y.dtype, bpk_offset(p.y, i), glu_act<T>(p.kind, g) * u);
  }
}

// cos and sin of a RoPE angle formed in double: double ones for f64; for
// the float kernels the angle is reduced modulo 2 pi in double first, so
// that f32 sincosf (double transcendentals are slow on most GPUs) sees a
// small argument and is as exact as an f32 output needs.
template <typename T> __device__ __forceinline__ void rope_sincos(double a, T *c, T *s);
template <> __device__ __forceinline__ void rope_sincos<double>(double a, double *c, double *s) {
  sincos(a, s, c);
}
template <> __device__ __forceinline__ void rope_sincos<float>(double a, float *c, float *s) {
  const double k = rint(a * 0.15915494309189535);
  sincosf((float)((a - k * 6.283185307179586) - k * 2.4492935982947064e-16), s, c);
}

// One item per pair (read whole before it is written, so y may be x) or
// per copied feature past rotary_dim.
template <typename T> __device__ void rope(const bpk_rope_args_t &p) {
  const int64_t half = p.rotary_dim / 2, per_row = half + p.x.shape[3] - p.rotary_dim;
  const double l2theta = log2(p.theta);
  BPK_FOR_EACH(i, p.n) {
    const int64_t j = i % per_row, r = i / per_row;
    const int64_t h = r % p.x.shape[2], s = (r / p.x.shape[2]) % p.x.shape[1];
    const int64_t b = r / (p.x.shape[2] * p.x.shape[1]);
    const int64_t bx = b * p.x.strides[0] + s * p.x.strides[1] + h * p.x.strides[2];
    const int64_t by = b * p.y.strides[0] + s * p.y.strides[1] + h * p.y.strides[2];
    const int64_t sx = p.x.strides[3], sy = p.y.strides[3];
    if (j >= half) {
      const int64_t d = p.rotary_dim + (j - half);
      bpk_st(p.y.ptr, p.y.dtype, by + d * sy, bpk_ld<T>(p.x.ptr, p.x.dtype, bx + d * sx));
      continue;
    }
    const int64_t pos = p.pos ? model_index(p.pos, p.pos_dtype, b * p.pos_s0 + s * p.pos_s1)
                              : p.pos_offset + s;
    T c, sn;
    rope_sincos<T>((double)pos * exp2(-(double)(2 * j) / (double)p.rotary_dim * l2theta), &c, &sn);
    const int64_t d1 = p.interleaved ? 2 * j : j, d2 = p.interleaved ? 2 * j + 1 : j + half;
    const T x1 = bpk_ld<T>(p.x.ptr, p.x.dtype, bx + d1 * sx);
    const T x2 = bpk_ld<T>(p.x.ptr, p.x.dtype, bx + d2 * sx);
    bpk_st(p.y.ptr, p.y.dtype, by + d1 * sy, x1 * c - x2 * sn);
    bpk_st(p.y.ptr, p.y.dtype, by + d2 * sy, x1 * sn + x2 * c);
  }
}

extern "C" __global__ void bp_binary_scalar_f(const bpk_binary_scalar_args_t p) { binary_scalar<float>(p); }
extern "C" __global__ void bp_binary_scalar_d(const bpk_binary_scalar_args_t p) { binary_scalar<double>(p); }
extern "C" __global__ void bp_glu_f(const bpk_glu_args_t p) { glu<float>(p); }
extern "C" __global__ void bp_glu_d(const bpk_glu_args_t p) { glu<double>(p); }
extern "C" __global__ void bp_rope_f(const bpk_rope_args_t p) { rope<float>(p); }
extern "C" __global__ void bp_rope_d(const bpk_rope_args_t p) { rope<double>(p); }
