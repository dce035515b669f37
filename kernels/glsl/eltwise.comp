#version 460
// eltwise.comp — unary and binary elementwise ops over strided tensors with
// broadcasting by stride 0, computed in f32. Variants: eltwise_<dtype>.
// The op is a field of the parameter block, or (what the plugin does)
// specialization constants 0 (op) and 1 (binary): CPU drivers such as
// lavapipe run every case of a switch they cannot prove uniform, under a
// lane mask, so an unspecialised add also paid for exp, log, erf, pow...
#include "common.glsl"

layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y, a, b;
  int n, rank;
  int op, binary; // binary == 0: y = unary op(a)
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK], sa[BP_MAX_RANK], sb[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };
#ifdef T2_tex
// eltwise_f32_tex, for CPU drivers (lavapipe): rank 1 only, y, a and b
// read and written through r32f storage texel buffers (vectorised there,
// where buffer loads are per-lane loops). A view starts at a 16-byte
// boundary: sy[1], sa[1], sb[1] hold each tensor's element shift in it,
// sy[0], sa[0], sb[0] its stride (1, or 0 for a broadcast scalar).
layout(set = 0, binding = 0, r32f) uniform writeonly imageBuffer ty;
layout(set = 0, binding = 1, r32f) uniform readonly imageBuffer ta;
layout(set = 0, binding = 2, r32f) uniform readonly imageBuffer tb;
#endif
layout(constant_id = 0) const int OP_SPEC = -1;     // -1: p.op
layout(constant_id = 1) const int BINARY_SPEC = -1; // -1: p.binary

#include "mathfn.glsl"

#ifdef T2_tex
void main() {
  const int n = p.n, op = OP_SPEC >= 0 ? OP_SPEC : p.op;
  const bool binary = BINARY_SPEC >= 0 ? BINARY_SPEC != 0 : p.binary != 0;
  const int sy0 = p.sy[0], sa0 = p.sa[0], sb0 = p.sb[0];
  const int hy = p.sy[1], ha = p.sa[1], hb = p.sb[1];
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += step) {
    float r;
    if (binary)
      r = bp_binary(op, imageLoad(ta, ha + i * sa0).x, imageLoad(tb, hb + i * sb0).x);
    else
      r = bp_unary(op, imageLoad(ta, ha + i * sa0).x);
    imageStore(ty, hy + i * sy0, vec4(r));
  }
}
#else
void main() {
  T1Buf y = T1Buf(p.y), a = T1Buf(p.a), b = T1Buf(p.b);
  // Parameters read once: on CPU drivers (lavapipe) each read through the
  // block's address is a per-lane load loop that is not hoisted. Rank 1
  // (every contiguous tensor, after the host merges dims) needs no index
  // arithmetic at all.
  const int n = p.n, rank = p.rank, op = OP_SPEC >= 0 ? OP_SPEC : p.op;
  const bool binary = BINARY_SPEC >= 0 ? BINARY_SPEC != 0 : p.binary != 0;
  const int sy0 = p.sy[0], sa0 = p.sa[0], sb0 = p.sb[0];
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += step) {
    int oy = i * sy0, oa = i * sa0, ob = i * sb0;
    if (rank != 1) {
      BP_ND_OFFSET(oy, i, rank, p.shape, p.sy);
      BP_ND_OFFSET(oa, i, rank, p.shape, p.sa);
      if (binary) BP_ND_OFFSET(ob, i, rank, p.shape, p.sb);
    }
    float r;
    if (binary)
      r = bp_binary(op, LOAD1(a, oa), LOAD1(b, ob));
    else
      r = bp_unary(op, LOAD1(a, oa));
    STORE1(y, oy, r);
  }
}
#endif
