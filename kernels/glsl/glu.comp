#version 460
// glu.comp — gated linear units: y = act(gate) * up, computed in f32.
// kind (bp_glu_kind_t) is specialization constant 0: SwiGLU (silu),
// GeGLU (exact gelu), GeGLU with tanh gelu, ReGLU (relu). Variants:
// glu_<dtype>.
#include "common.glsl"
#include "mathfn.glsl"

layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y, g, u;
  int n, rank, kind, pad_;
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK], sg[BP_MAX_RANK], su[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };
layout(constant_id = 0) const int KIND_SPEC = -1; // -1: p.kind

float glu_act(int kind, float x) {
  switch (kind) {
  case 0: return bp_unary(8, x);  // silu
  case 1: return bp_unary(7, x);  // exact gelu
  case 2: return bp_unary(13, x); // tanh gelu
  default: return bp_unary(6, x); // relu
  }
}

void main() {
  T1Buf y = T1Buf(p.y), g = T1Buf(p.g), u = T1Buf(p.u);
  const int n = p.n, rank = p.rank, kind = KIND_SPEC >= 0 ? KIND_SPEC : p.kind;
  const int sy0 = p.sy[0], sg0 = p.sg[0], su0 = p.su[0];
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += stride) {
    int oy = i * sy0, og = i * sg0, ou = i * su0;
    if (rank != 1) {
      BP_ND_OFFSET(oy, i, rank, p.shape, p.sy);
      BP_ND_OFFSET(og, i, rank, p.shape, p.sg);
      BP_ND_OFFSET(ou, i, rank, p.shape, p.su);
    }
    STORE1(y, oy, glu_act(kind, LOAD1(g, og)) * LOAD1(u, ou));
  }
}
