#version 460
// gemmv4.comp — f32 GEMM for CPU implementations (lavapipe): no shared
// memory and no barriers, vec4 loads, and a large register tile per
// invocation, so each loaded value feeds many FMAs. llvmpipe runs 8
// invocations in the lanes of one SIMD register and turns each per-lane
// load into a gather, so loads, not FMAs, are what cost: an invocation
// computing TM x TN outputs does TM + 4 * TN / 4 vec4 loads per 4 k-steps
// for 4 * TM * TN FMAs. Eight neighbouring invocations share their A rows
// (the same addresses) and read neighbouring B columns.
//
// Preconditions (checked by the host, ops_blas.c): A contiguous along k,
// B along n, k, n and the row strides multiples of 4, A and B 16-byte
// aligned. Variants gemmv4_f32_t<TM><TN>.
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require

#if defined(T2_t48)
const int TM = 4, TN = 8;
#elif defined(T2_t88)
const int TM = 8, TN = 8;
#elif defined(T2_t84)
const int TM = 8, TN = 4;
#else
const int TM = 4, TN = 4;
#endif
const int WX = 8, WY = 8; // invocations along n and m
const int TN4 = TN / 4;
layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer V4 { vec4 v[]; };

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t a, b, c;
  int m, n, k, beta_zero;
  int sab, sam, sak, sbb, sbk, sbn, scb, scm, scn;
  float alpha, beta;
};
layout(push_constant) uniform PC { Params p; };

void main() {
  // Parameters are read once into locals: each read through the
  // parameter block's address is a memory load llvmpipe does not hoist.
  const int M = p.m, N = p.n, K4 = p.k / 4, SAM4 = p.sam / 4, SBK4 = p.sbk / 4;
  int tid = int(gl_LocalInvocationID.x);
  int tx = tid % WX, ty = tid / WX;
  int batch = int(gl_WorkGroupID.z);
  V4 a = V4(p.a + uint64_t(batch * p.sab) * 4ul);
  V4 b = V4(p.b + uint64_t(batch * p.sbb) * 4ul);
  T1Buf c = T1Buf(p.c + uint64_t(batch * p.scb) * 4ul);
  int m0 = int(gl_WorkGroupID.y) * (WY * TM) + ty * TM;
  int n0 = int(gl_WorkGroupID.x) * (WX * TN) + tx * TN;
  // Out-of-range rows / column groups are clamped, not branched around:
  // they compute from valid data and are never stored.
  int ra[TM], cb[TN4];
  [[unroll]] for (int i = 0; i < TM; i++) ra[i] = min(m0 + i, M - 1) * SAM4;
  [[unroll]] for (int j = 0; j < TN4; j++) cb[j] = min(n0 / 4 + j, N / 4 - 1);
  vec4 acc[TM][TN4];
  [[unroll]] for (int i = 0; i < TM; i++)
    [[unroll]] for (int j = 0; j < TN4; j++) acc[i][j] = vec4(0.0);
  for (int k4 = 0; k4 < K4; k4++) {
    vec4 av[TM];
    [[unroll]] for (int i = 0; i < TM; i++) av[i] = a.v[ra[i] + k4];
    [[unroll]] for (int kk = 0; kk < 4; kk++) {
      int bro = (4 * k4 + kk) * SBK4;
      [[unroll]] for (int j = 0; j < TN4; j++) {
        vec4 bv = b.v[bro + cb[j]];
        [[unroll]] for (int i = 0; i < TM; i++)
          acc[i][j] = fma(vec4(av[i][kk]), bv, acc[i][j]);
      }
    }
  }
  [[unroll]] for (int i = 0; i < TM; i++) {
    int gm = m0 + i;
    if (gm >= p.m) break;
    [[unroll]] for (int j = 0; j < TN; j++) {
      int gn = n0 + j;
      if (gn >= p.n) break;
      int oc = gm * p.scm + gn * p.scn;
      float r = p.alpha * acc[i][j / 4][j % 4];
      if (p.beta_zero == 0) r += p.beta * c.v[oc];
      c.v[oc] = r;
    }
  }
}
