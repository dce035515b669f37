#version 460
// scalar.comp — binary ops with a scalar operand: y = a op s, or s op a
// (first != 0), computed in f32 (mathfn.glsl's bp_binary). The host rounds
// s to a's dtype first. Variants: scalar_<dtype>; the op is
// specialization constant 0, as eltwise.comp's (it says why).
// scalar_f32_tex (CPU drivers, lavapipe): rank 1 or 2, y and a through
// r32f storage texel views (vectorised there, where buffer loads are
// per-lane loops); hy, ha: each tensor's element 0 in its view.
#include "common.glsl"
#include "mathfn.glsl"

layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y, a;
  int n, rank, op, first;
  float s;
  int pad_;
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK], sa[BP_MAX_RANK];
  int hy, ha;
};
layout(push_constant) uniform PC { Params p; };
layout(constant_id = 0) const int OP_SPEC = -1; // -1: p.op

#ifdef T2_tex
layout(set = 0, binding = 0, r32f) uniform writeonly imageBuffer ty;
layout(set = 0, binding = 1, r32f) uniform readonly imageBuffer ta;

void main() {
  const int n = p.n, op = OP_SPEC >= 0 ? OP_SPEC : p.op, cols = p.rank == 2 ? p.shape[1] : n;
  const bool first = p.first != 0;
  const float s = p.s;
  const int sy0 = p.sy[0], sa0 = p.sa[0], sy1 = p.rank == 2 ? p.sy[1] : sy0;
  const int sa1 = p.rank == 2 ? p.sa[1] : sa0, hy = p.hy, ha = p.ha;
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += stride) {
    int r = i / cols, c = i - r * cols;
    float v = imageLoad(ta, ha + r * sa0 + c * sa1).x;
    imageStore(ty, hy + r * sy0 + c * sy1, vec4(first ? bp_binary(op, s, v) : bp_binary(op, v, s)));
  }
}
#else

void main() {
  T1Buf y = T1Buf(p.y), a = T1Buf(p.a);
  const int n = p.n, rank = p.rank, op = OP_SPEC >= 0 ? OP_SPEC : p.op;
  const bool first = p.first != 0;
  const float s = p.s;
  const int sy0 = p.sy[0], sa0 = p.sa[0];
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += stride) {
    int oy = i * sy0, oa = i * sa0;
    if (rank != 1) {
      BP_ND_OFFSET(oy, i, rank, p.shape, p.sy);
      BP_ND_OFFSET(oa, i, rank, p.shape, p.sa);
    }
    float v = LOAD1(a, oa);
    STORE1(y, oy, first ? bp_binary(op, s, v) : bp_binary(op, v, s));
  }
}
#endif
