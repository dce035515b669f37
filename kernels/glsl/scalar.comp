#version 460
// scalar.comp — binary ops with a scalar operand: y = a op s, or s op a
// (first != 0), computed in f32 (mathfn.glsl's bp_binary). The host rounds
// s to a's dtype first. Variants: scalar_<dtype>; the op is
// specialization constant 0, as eltwise.comp's (it says why).
#include "common.glsl"
#include "mathfn.glsl"

layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y, a;
  int n, rank, op, first;
  float s;
  int pad_;
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK], sa[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };
layout(constant_id = 0) const int OP_SPEC = -1; // -1: p.op

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
