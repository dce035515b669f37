// elementwise.cu — unary, binary, fill, copy and cast over strided views.
//
// The host folds dimensions that are contiguous in every operand
// (bp_gpu_coalesce, plugins/gpu/marshal.h), so most launches index one flat
// axis. The math functions are the accurate ones (no fast-math): backends
// are compared against the CPU reference within tight tolerances.
#include "bp_cuda_common.cuh"

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_POW };

template <typename T> __device__ __forceinline__ T binary_op(int op, T a, T b) {
  switch (op) {
  case B_ADD: return a + b;
  case B_SUB: return a - b;
  case B_MUL: return a * b;
  case B_DIV: return a / b;
  case B_MAX: return bpk_max(a, b);
  case B_MIN: return bpk_min(a, b);
  default: return pow(a, b);
  }
}

// A flat f32 view whose storage float4 loads can read: the host folds
// contiguous operands to rank 1 with stride 1; views with an offset that
// breaks 16-byte alignment take the scalar path.
__device__ __forceinline__ bool vec4_view(const bpk_tensor_t &t) {
  return t.rank == 1 && t.dtype == BPK_F32 && t.strides[0] == 1 && (t.ptr & 15) == 0;
}

__device__ __forceinline__ float4 unary4(int op, float4 x) {
  return make_float4(bpk_unary_op<float>(op, x.x), bpk_unary_op<float>(op, x.y),
                     bpk_unary_op<float>(op, x.z), bpk_unary_op<float>(op, x.w));
}

__device__ __forceinline__ float4 binary4(int op, float4 a, float4 b) {
  return make_float4(binary_op<float>(op, a.x, b.x), binary_op<float>(op, a.y, b.y),
                     binary_op<float>(op, a.z, b.z), binary_op<float>(op, a.w, b.w));
}

// The contiguous f32 case: four elements per load and store, the tail
// (n not a multiple of 4) element by element. Returns false when a view
// does not allow it.
__device__ bool unary_vec4(const bpk_unary_args_t &p) {
  if (!vec4_view(p.x) || !vec4_view(p.y)) return false;
  const float4 *x = (const float4 *)p.x.ptr;
  float4 *y = (float4 *)p.y.ptr;
  BPK_FOR_EACH(i, p.n / 4) y[i] = unary4(p.op, x[i]);
  BPK_FOR_EACH(i, p.n % 4) {
    const int64_t k = p.n / 4 * 4 + i;
    ((float *)p.y.ptr)[k] = bpk_unary_op<float>(p.op, ((const float *)p.x.ptr)[k]);
  }
  return true;
}

__device__ bool binary_vec4(const bpk_binary_args_t &p) {
  if (!vec4_view(p.a) || !vec4_view(p.b) || !vec4_view(p.y)) return false;
  const float4 *a = (const float4 *)p.a.ptr, *b = (const float4 *)p.b.ptr;
  float4 *y = (float4 *)p.y.ptr;
  BPK_FOR_EACH(i, p.n / 4) y[i] = binary4(p.op, a[i], b[i]);
  BPK_FOR_EACH(i, p.n % 4) {
    const int64_t k = p.n / 4 * 4 + i;
    ((float *)p.y.ptr)[k] =
        binary_op<float>(p.op, ((const float *)p.a.ptr)[k], ((const float *)p.b.ptr)[k]);
  }
  return true;
}

template <typename T> __device__ void unary(const bpk_unary_args_t &p) {
  if (sizeof(T) == 4 && unary_vec4(p)) return;
  BPK_FOR_EACH(i, p.n) {
    T x = bpk_ld<T>(p.x.ptr, p.x.dtype, bpk_offset(p.x, i));
    bpk_st(p.y.ptr, p.y.dtype, bpk_offset(p.y, i), bpk_unary_op<T>(p.op, x));
  }
}

template <typename T> __device__ void binary(const bpk_binary_args_t &p) {
  if (sizeof(T) == 4 && binary_vec4(p)) return;
  BPK_FOR_EACH(i, p.n) {
    T a = bpk_ld<T>(p.a.ptr, p.a.dtype, bpk_offset(p.a, i));
    T b = bpk_ld<T>(p.b.ptr, p.b.dtype, bpk_offset(p.b, i));
    bpk_st(p.y.ptr, p.y.dtype, bpk_offset(p.y, i), binary_op<T>(p.op, a, b));
  }
}

extern "C" __global__ void bp_unary_f(const bpk_unary_args_t p) { unary<float>(p); }
extern "C" __global__ void bp_unary_d(const bpk_unary_args_t p) { unary<double>(p); }
extern "C" __global__ void bp_binary_f(const bpk_binary_args_t p) { binary<float>(p); }
extern "C" __global__ void bp_binary_d(const bpk_binary_args_t p) { binary<double>(p); }

// Moves raw elements of 1, 2, 4 or 8 bytes: fill and copy never look at
// values, so every dtype (and NaN payloads) passes through bit for bit.
__device__ __forceinline__ void put_bits(uint64_t base, int size, int64_t off,
                                         uint64_t bits) {
  switch (size) {
  case 1: ((uint8_t *)base)[off] = (uint8_t)bits; break;
  case 2: ((uint16_t *)base)[off] = (uint16_t)bits; break;
  case 8: ((uint64_t *)base)[off] = bits; break;
  default: ((uint32_t *)base)[off] = (uint32_t)bits; break;
  }
}

__device__ __forceinline__ uint64_t get_bits(uint64_t base, int size,
                                             int64_t off) {
  switch (size) {
  case 1: return ((const uint8_t *)base)[off];
  case 2: return ((const uint16_t *)base)[off];
  case 8: return ((const uint64_t *)base)[off];
  default: return ((const uint32_t *)base)[off];
  }
}

extern "C" __global__ void bp_fill(const bpk_fill_args_t p) {
  BPK_FOR_EACH(i, p.n) put_bits(p.y.ptr, p.elem_size, bpk_offset(p.y, i), p.bits);
}

extern "C" __global__ void bp_copy(const bpk_copy_args_t p) {
  BPK_FOR_EACH(i, p.n) {
    uint64_t v = get_bits(p.x.ptr, p.elem_size, bpk_offset(p.x, i));
    put_bits(p.y.ptr, p.elem_size, bpk_offset(p.y, i), v);
  }
}

// Float to integer: round to nearest even, NaN gives 0, out of range
// saturates (the ABI's cast rules).
// lo and hi are exact doubles of the bounds' neighbourhood; the integer
// results are given separately since 2^63 - 1 has no double.
__device__ __forceinline__ int64_t sat_int(double v, double lo, double hi,
                                           int64_t lo_i, int64_t hi_i) {
  if (v != v) return 0;
  v = rint(v);
  if (v <= lo) return lo_i;
  if (v >= hi) return hi_i;
  return (int64_t)v;
}

__device__ __forceinline__ void store_int(uint64_t base, int dt, int64_t off,
                                          int64_t v) {
  if (dt == BPK_I32) {
    ((int32_t *)base)[off] = (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
  } else if (dt == BPK_U8) {
    ((uint8_t *)base)[off] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
  } else {
    ((int64_t *)base)[off] = v;
  }
}

__device__ __forceinline__ bool is_int(int dt) {
  return dt == BPK_I32 || dt == BPK_I64 || dt == BPK_U8;
}

__device__ void cast_one(const bpk_copy_args_t &p, int64_t i) {
  const int64_t xo = bpk_offset(p.x, i), yo = bpk_offset(p.y, i);
  const int xd = p.x.dtype, yd = p.y.dtype;
  if (xd == BPK_I64) { // i64 does not fit a double exactly
    int64_t v = ((const int64_t *)p.x.ptr)[xo];
    if (is_int(yd)) store_int(p.y.ptr, yd, yo, v);
    else if (yd == BPK_F64) ((double *)p.y.ptr)[yo] = __ll2double_rn(v);
    else bpk_st(p.y.ptr, yd, yo, __ll2float_rn(v));
    return;
  }
  double v = bpk_ld<double>(p.x.ptr, xd, xo);
  if (yd == BPK_I32)
    store_int(p.y.ptr, yd, yo, sat_int(v, -2147483648.0, 2147483647.0, INT32_MIN, INT32_MAX));
  else if (yd == BPK_U8)
    store_int(p.y.ptr, yd, yo, sat_int(v, 0.0, 255.0, 0, 255));
  else if (yd == BPK_I64) // 2^63 is the first double out of range
    store_int(p.y.ptr, yd, yo, sat_int(v, -9223372036854775808.0, 9223372036854775808.0, INT64_MIN, INT64_MAX));
  else bpk_st(p.y.ptr, yd, yo, v); // one rounding from the exact double
}

extern "C" __global__ void bp_cast(const bpk_copy_args_t p) {
  BPK_FOR_EACH(i, p.n) cast_one(p, i);
}
