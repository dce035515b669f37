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
    if (rank != 1) ND_OFFSET3(oy, og, ou, i, rank, p.shape, p.sy, p.sg, p.su);
    STORE1(y, oy, glu_act(kind, LOAD1(g, og)) * LOAD1(u, ou));
  }
}
