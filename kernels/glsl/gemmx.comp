#version 460
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t a, b, c;
  int m, n, k, beta_zero;
  int sab, sam, sak, sbb, sbk, sbn, scb, scm, scn;
  float alpha, beta;
};
layout(push_constant) uniform PC { Params p; };
void main() {
  int tid = int(gl_LocalInvocationID.x);
  int tx = tid % 16, ty = tid / 16;
  int m0 = int(gl_WorkGroupID.y) * 16 + ty * 4, n0 = int(gl_WorkGroupID.x) * 64 + tx;
  T1Buf a = T1Buf(p.a), b = T1Buf(p.b), c = T1Buf(p.c);
  vec4 acc[4];
  [[unroll]] for (int i = 0; i < 4; i++) acc[i] = vec4(0.0);
  for (int k = 0; k < p.k; k++) {
    vec4 rb = vec4(LOAD1(b, k * p.sbn * 0 + k * p.sbk + n0 * p.sbn), LOAD1(b, k * p.sbk + (n0 + 16) * p.sbn),
                   LOAD1(b, k * p.sbk + (n0 + 32) * p.sbn), LOAD1(b, k * p.sbk + (n0 + 48) * p.sbn));
    [[unroll]] for (int i = 0; i < 4; i++)
      acc[i] = fma(vec4(LOAD1(a, (m0 + i) * p.sam + k * p.sak)), rb, acc[i]);
  }
  [[unroll]] for (int i = 0; i < 4; i++)
    [[unroll]] for (int j = 0; j < 4; j++)
      STORE1(c, (m0 + i) * p.scm + (n0 + 16 * j) * p.scn, p.alpha * acc[i][j]);
}
