#version 460
// glu.comp — gated linear units: y = act(gate) * up, computed in f32.
// kind (bp_glu_kind_t) is specialization constant 0: SwiGLU (silu),
// GeGLU (exact gelu), GeGLU with tanh gelu, ReGLU (relu). Variants:
// glu_<dtype>; glu_f32_tex (CPU drivers, lavapipe): rank 1 or 2 (a packed
// gate / up pair is rank 2), the tensors through r32f storage texel views
// (vectorised there, where buffer loads are per-lane loops); hy, hg, hu:
// each tensor's element 0 in its view.
#include "common.glsl"
#include "mathfn.glsl"

layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y, g, u;
  int n, rank, kind, pad_;
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK], sg[BP_MAX_RANK], su[BP_MAX_RANK];
  int hy, hg, hu;
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

#ifdef T2_tex
layout(set = 0, binding = 0, r32f) uniform writeonly imageBuffer ty;
layout(set = 0, binding = 1, r32f) uniform readonly imageBuffer tg;
layout(set = 0, binding = 2, r32f) uniform readonly imageBuffer tu;

void main() {
  const int n = p.n, kind = KIND_SPEC >= 0 ? KIND_SPEC : p.kind;
  const bool two = p.rank == 2;
  const int cols = two ? p.shape[1] : n, sy0 = p.sy[0], sg0 = p.sg[0], su0 = p.su[0];
  const int sy1 = two ? p.sy[1] : sy0, sg1 = two ? p.sg[1] : sg0, su1 = two ? p.su[1] : su0;
  const int hy = p.hy, hg = p.hg, hu = p.hu;
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += stride) {
    int r = i / cols, c = i - r * cols;
    float gv = imageLoad(tg, hg + r * sg0 + c * sg1).x, uv = imageLoad(tu, hu + r * su0 + c * su1).x;
    imageStore(ty, hy + r * sy0 + c * sy1, vec4(glu_act(kind, gv) * uv));
  }
}
#else
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
#endif
