#version 460
// copy.comp — fill and strided copy, by element size (the bits are moved,
// never converted). Variants: copy_b8, copy_b16, copy_b32, copy_b64.
// Fill when x == 0: every element of y gets the host-converted bit pattern.
#include "common.glsl"

#if defined(T1_b8)
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#define ELEM uint8_t
#define ALIGN 1
#define FROM_BITS(lo, hi) uint8_t(lo)
#elif defined(T1_b16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#define ELEM uint16_t
#define ALIGN 2
#define FROM_BITS(lo, hi) uint16_t(lo)
#elif defined(T1_b32)
#define ELEM uint
#define ALIGN 4
#define FROM_BITS(lo, hi) (lo)
#else
#define ELEM uint64_t
#define ALIGN 8
#define FROM_BITS(lo, hi) (uint64_t(hi) << 32 | uint64_t(lo))
#endif

layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = ALIGN) buffer EBuf { ELEM v[]; };

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y, x;
  int n, rank;
  uint lo, hi;
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK], sx[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };

void main() {
  EBuf y = EBuf(p.y), x = EBuf(p.x);
  // Parameters read once and no index arithmetic at rank 1 (every
  // contiguous tensor): see eltwise.comp.
  const bool fill = p.x == 0;
  const ELEM value = FROM_BITS(p.lo, p.hi);
  const int n = p.n, rank = p.rank, sy0 = p.sy[0], sx0 = p.sx[0];
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += step) {
    int oy = i * sy0, ox = i * sx0;
    if (rank != 1) {
      BP_ND_OFFSET(oy, i, rank, p.shape, p.sy);
      if (!fill) BP_ND_OFFSET(ox, i, rank, p.shape, p.sx);
    }
    if (fill)
      y.v[oy] = value;
    else
      y.v[oy] = x.v[ox];
  }
}
