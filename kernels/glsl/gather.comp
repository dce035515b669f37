#version 460
// gather.comp — gather along an axis (embedding lookup) by element size:
// the bits are moved, never converted. Variants: gather_b8 .. gather_b64.
// y, the table and the indices are walked over y's shape: the table's
// strides are 0 along y's index dims, the indices' 0 along the others
// (plugins/vulkan/ops_model.c lays them out). An index outside
// [0, axis_len) gives zeros.
#include "common.glsl"

#if defined(T1_b8)
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#define ELEM uint8_t
#define ALIGN 1
#elif defined(T1_b16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#define ELEM uint16_t
#define ALIGN 2
#elif defined(T1_b32)
#define ELEM uint
#define ALIGN 4
#else
#define ELEM uint64_t
#define ALIGN 8
#endif

layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = ALIGN) buffer EBuf { ELEM v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer I32Buf { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer I64Buf { int64_t v[]; };

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y, t, ix;
  int n, rank, idx64, axis_len, axis_stride, pad_;
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK], st[BP_MAX_RANK], si[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };

// Offsets of linear index i in three tensors walked over one shape: one
// pass over the dims (BP_ND_OFFSET three times would read each extent and
// divide three times; parameter reads are per-lane loops on CPU drivers).
#define ND_OFFSET3(o1, o2, o3, i, rank, shape, s1, s2, s3)                   \
  {                                                                          \
    int rem_ = (i);                                                          \
    o1 = 0, o2 = 0, o3 = 0;                                                  \
    for (int d_ = (rank) - 1; d_ >= 0; d_--) {                               \
      int e_ = shape[d_], c_ = rem_ % e_;                                    \
      rem_ /= e_;                                                            \
      o1 += c_ * s1[d_], o2 += c_ * s2[d_], o3 += c_ * s3[d_];               \
    }                                                                        \
  }


void main() {
  EBuf y = EBuf(p.y), t = EBuf(p.t);
  const int n = p.n, rank = p.rank, len = p.axis_len, step = p.axis_stride;
  const bool wide = p.idx64 != 0;
  const int sy0 = p.sy[0], st0 = p.st[0], si0 = p.si[0];
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += stride) {
    int oy = i * sy0, ot = i * st0, oi = i * si0;
    if (rank != 1) ND_OFFSET3(oy, ot, oi, i, rank, p.shape, p.sy, p.st, p.si);
    int64_t k = wide ? I64Buf(p.ix).v[oi] : int64_t(I32Buf(p.ix).v[oi]);
    bool in_range = k >= 0 && k < int64_t(len);
    y.v[oy] = in_range ? t.v[ot + int(k) * step] : ELEM(0);
  }
}
