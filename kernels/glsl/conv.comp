#version 460
// conv.comp — NCHW conv2d forward as an implicit GEMM: per group, the
// output [Kg, N*P*Q] is the weights [Kg, Cg*R*S] times the im2col matrix,
// whose entries are gathered from x on the fly (padding reads as 0), never
// materialised. Each invocation keeps a 4 x 4 register tile (4 output
// channels x 4 output pixels); a workgroup covers 16 channels x 64 pixels.
// Variants: conv_<dtype>.
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t x, w, bias, y;
  int N, C, H, W, K, R, S, P, Q;
  int sh, sw, ph, pw, dh, dw, groups, sbias;
  int sx[4], sww[4], sy[4];
};
layout(push_constant) uniform PC { Params p; };

void main() {
  T1Buf X = T1Buf(p.x), Wt = T1Buf(p.w), Bi = T1Buf(p.bias), Y = T1Buf(p.y);
  int tid = int(gl_LocalInvocationID.x), tx = tid % 16, ty = tid / 16;
  int g = int(gl_WorkGroupID.z), Kg = p.K / p.groups, Cg = p.C / p.groups;
  int npix = p.N * p.P * p.Q;
  int k0 = int(gl_WorkGroupID.y) * 16 + ty * 4;
  int pix0 = int(gl_WorkGroupID.x) * 64 + tx;
  // Decomposed output pixels (clamped past the edge; never stored).
  int xb[4], hb[4], wb[4];
  [[unroll]] for (int j = 0; j < 4; j++) {
    int pix = min(pix0 + 16 * j, npix - 1);
    int q = pix % p.Q, pp = (pix / p.Q) % p.P, n = pix / (p.Q * p.P);
    xb[j] = n * p.sx[0] + g * Cg * p.sx[1];
    hb[j] = pp * p.sh - p.ph;
    wb[j] = q * p.sw - p.pw;
  }
  int wrow[4];
  [[unroll]] for (int i = 0; i < 4; i++) wrow[i] = (g * Kg + min(k0 + i, Kg - 1)) * p.sww[0];
  vec4 acc[4];
  [[unroll]] for (int i = 0; i < 4; i++) acc[i] = vec4(0.0);
  for (int c = 0; c < Cg; c++)
    for (int r = 0; r < p.R; r++)
      for (int s = 0; s < p.S; s++) {
        vec4 xv;
        [[unroll]] for (int j = 0; j < 4; j++) {
          int h = hb[j] + r * p.dh, w = wb[j] + s * p.dw;
          bool in_ = h >= 0 && h < p.H && w >= 0 && w < p.W;
          xv[j] = in_ ? LOAD1(X, xb[j] + c * p.sx[1] + h * p.sx[2] + w * p.sx[3]) : 0.0;
        }
        int wo = c * p.sww[1] + r * p.sww[2] + s * p.sww[3];
        [[unroll]] for (int i = 0; i < 4; i++)
          acc[i] = fma(vec4(LOAD1(Wt, wrow[i] + wo)), xv, acc[i]);
      }
  [[unroll]] for (int i = 0; i < 4; i++) {
    int k = k0 + i;
    if (k >= Kg) break;
    float b = p.bias != 0 ? LOAD1(Bi, (g * Kg + k) * p.sbias) : 0.0;
    [[unroll]] for (int j = 0; j < 4; j++) {
      int pix = pix0 + 16 * j;
      if (pix >= npix) break;
      int q = pix % p.Q, pp = (pix / p.Q) % p.P, n = pix / (p.Q * p.P);
      STORE1(Y, n * p.sy[0] + (g * Kg + k) * p.sy[1] + pp * p.sy[2] + q * p.sy[3],
             acc[i][j] + b);
    }
  }
}
