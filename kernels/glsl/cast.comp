#version 460
// cast.comp — y = x converted from T1 to T2 over strided tensors.
// Variants: cast_<src>_<dst> for f32, f16, bf16, i32, u8. Floats convert
// through f32 (exact for these sources); integer to integer stays integer.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y, a, b;
  int n, rank, op, binary;
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK], sa[BP_MAX_RANK], sb[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };

void main() {
  T2Buf y = T2Buf(p.y);
  T1Buf x = T1Buf(p.a);
  // Parameters read once, no index arithmetic at rank 1 (see eltwise.comp).
  const int n = p.n, rank = p.rank, sy0 = p.sy[0], sa0 = p.sa[0];
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += step) {
    int oy = i * sy0, ox = i * sa0;
    if (rank != 1) {
      BP_ND_OFFSET(oy, i, rank, p.shape, p.sy);
      BP_ND_OFFSET(ox, i, rank, p.shape, p.sa);
    }
#if defined(T1_IS_INT) && defined(T2_IS_INT)
    STOREI2(y, oy, LOADI1(x, ox));
#else
    STORE2(y, oy, LOAD1(x, ox));
#endif
  }
}
