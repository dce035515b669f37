#version 460
// gemmpack.comp — copies one GEMM operand into the zero-padded f32 panels
// that gemmtex.comp reads: dst[b][x / PW][p][x % PW] = src[b*sb + p*sp +
// x*sx] (x runs over m for A, over n for B; p over k), zero where x or p is
// past the operand. This absorbs any strides, transposes and storage dtype,
// so the GEMM kernel reads one contiguous layout. One invocation writes one
// vec4 texel (4 neighbouring x of one p) through a storage texel buffer.
// Variants gemmpack_<dt> (the source dtype), gemmpack_f32_tex.
#include "common.glsl"

layout(local_size_x = 64) in;
layout(set = 0, binding = 0, rgba32f) uniform writeonly imageBuffer dst;
#ifdef T2_tex
// gemmpack_f32_tex: the source read through an r32f texel view too (a
// gather on lavapipe instead of a per-lane loop); the view starts at a
// 16-byte boundary and `shift` is the source's element 0 in it.
layout(set = 0, binding = 1, r32f) uniform readonly imageBuffer srcv;
#define SRC(i) imageLoad(srcv, shift + (i)).x
#else
#define SRC(i) LOAD1(s, i)
#endif

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t src;
  int rows_k, cols_x, sb, sp, sx, kp, xp, pw, shift;
};
layout(push_constant) uniform PC { Params p; };

void main() {
  T1Buf s = T1Buf(p.src);
  // Parameters read once (see gemmtex.comp).
  const int pw = p.pw, kp = p.kp, xp4 = p.xp / 4, rows = p.rows_k, cols = p.cols_x;
  const int SB = p.sb, SP = p.sp, SX = p.sx, shift = p.shift;
  // Neighbouring invocations walk the source's contiguous axis: along p
  // when the source is contiguous in p (A untransposed, B transposed).
  const bool along_p = SP == 1 && SX != 1;
  int b = int(gl_WorkGroupID.z);
  int dst_b = b * kp * xp4, texels = kp * xp4;
  for (int idx = int(gl_GlobalInvocationID.x); idx < texels;
       idx += int(gl_NumWorkGroups.x) * 64) {
    int pk = along_p ? idx % kp : idx / xp4;
    int x = 4 * (along_p ? idx / kp : idx % xp4);
    vec4 v = vec4(0.0);
    if (pk < rows) {
      int base = b * SB + pk * SP;
      for (int e = 0; e < 4; e++)
        if (x + e < cols) v[e] = SRC(base + (x + e) * SX);
    }
    // panel x / pw, row pk, column x % pw (pw is a multiple of 4)
    imageStore(dst, dst_b + ((x / pw) * kp + pk) * (pw / 4) + (x % pw) / 4, v);
  }
}
