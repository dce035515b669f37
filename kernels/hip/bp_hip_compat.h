// bp_hip_compat.h — lets the CUDA kernels of kernels/cuda compile as HIP.
//
// CUDA and HIP are nearly one language; what differs for these kernels is
// the half / bfloat16 types and the *_sync warp intrinsics. This header
// supplies both under the CUDA names, so kernels/hip/<name>.hip can be a
// two-line file that includes kernels/cuda/<name>.cu unchanged. It must come
// first (each .hip includes it before anything else); kernels/hip/compat/
// holds empty stand-ins for <cuda_fp16.h> and <cuda_bf16.h> for offline
// hipcc builds, and the embedding step (plugins/rocm/embed.sh) drops those
// includes for hiprtc.
//
// Warps: the CUDA kernels assume 32-lane warps (one warp per row, shuffles
// over offsets 16..1). AMD wavefronts are 64 lanes on GCN / CDNA and 32 on
// RDNA; every shuffle here is given width 32, so a 64-lane wavefront acts as
// two independent 32-lane warps and the kernels' arithmetic is unchanged.
//
// NOT CHECKED ON AMD HARDWARE: this compiles with hipcc / hiprtc (see
// docs/backend-rocm.md), but no kernel here has run on an AMD GPU yet.
#pragma once
#define BPK_HIP 1

#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#include <stdint.h>
#else
// hiprtc has no libc headers, and which fixed-width types its built-in
// header defines varies by release (ROCm 5.2 has the 32- and 64-bit ones
// only). Define them all with the very types hiprtc uses (64-bit ones are
// long long there), since repeating a typedef of the same type is legal C++
// and a different one is an error.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef signed int int32_t;
typedef unsigned int uint32_t;
typedef signed long long int64_t;
typedef unsigned long long uint64_t;
#ifndef INT32_MIN
#define INT32_MIN (-__INT32_MAX__ - 1)
#define INT32_MAX __INT32_MAX__
#define INT64_MIN (-__INT64_MAX__ - 1)
#define INT64_MAX __INT64_MAX__
#endif
#ifndef INFINITY
#define INFINITY __builtin_huge_valf()
#endif
#ifndef NAN
#define NAN __builtin_nanf("")
#endif
#endif

// ---- f16: the compiler's _Float16 -----------------------------------------
typedef _Float16 bpk_half_t;
#define __half bpk_half_t
__device__ __forceinline__ float bpk_half2float(bpk_half_t h) { return (float)h; }
__device__ __forceinline__ bpk_half_t bpk_float2half_rn(float f) { return (bpk_half_t)f; }
// One rounding from double (LLVM's fptrunc f64 -> f16 is correctly rounded).
__device__ __forceinline__ bpk_half_t bpk_double2half(double d) { return (bpk_half_t)d; }
#define __half2float bpk_half2float
#define __float2half_rn bpk_float2half_rn
#define __double2half bpk_double2half

// ---- bf16: 16 raw bits, converted by hand ---------------------------------
// (hip_bf16.h changed its API between ROCm 5 and 6; this does not depend on
// either.)
struct bpk_bf16_t {
  unsigned short x;
};
#define __nv_bfloat16 bpk_bf16_t
__device__ __forceinline__ float bpk_bfloat162float(bpk_bf16_t b) {
  return __uint_as_float((unsigned)b.x << 16);
}
// Round to nearest even; NaN stays a quiet NaN.
__device__ __forceinline__ bpk_bf16_t bpk_float2bfloat16_rn(float f) {
  const unsigned u = __float_as_uint(f);
  bpk_bf16_t r;
  if ((u & 0x7fffffffu) > 0x7f800000u)
    r.x = (unsigned short)((u >> 16) | 0x40u);
  else
    r.x = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return r;
}
// One rounding from double: round to float toward zero, make the result
// odd when inexact (round-to-odd keeps the sticky information), then round
// to nearest even; float has enough extra bits for that to be exact.
__device__ __forceinline__ bpk_bf16_t bpk_double2bfloat16(double d) {
  float f = __double2float_rz(d);
  if ((double)f != d && f == f)
    f = __uint_as_float(__float_as_uint(f) | 1u);
  return bpk_float2bfloat16_rn(f);
}
#define __bfloat162float bpk_bfloat162float
#define __float2bfloat16_rn bpk_float2bfloat16_rn
#define __double2bfloat16 bpk_double2bfloat16

// ---- warp intrinsics: 32-lane groups whatever the wavefront size ----------
#define __shfl_xor_sync(mask, v, o) __shfl_xor((v), (o), 32)
#define __shfl_sync(mask, v, lane) __shfl((v), (lane), 32)
