#version 460
// quantmm.comp — y[b, i, j] = sum_l a[b, i, l] * w[j, l] with q8_0 / q4_0
// weights for m > 1: each workgroup computes a BM x BN tile of y, each
// invocation a TM x TN register tile strided by the thread grid, walking
// k a block at a time. Per block, four weights of each of its TN rows are
// decoded at a time (integers, exact in f32) and multiplied with four
// activations of each of its TM rows; the block's sums are scaled by the
// blocks' scales once, so nothing is dequantized into memory. Variants
// quantmm_<dt> (a's and y's dtype).
#include "common.glsl"
#include "quant.inc"
#extension GL_EXT_control_flow_attributes : require

const int TM = 4, TN = 4, WM = 8, WN = 8;
const int BM = TM * WM, BN = TN * WN;
layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t a, w, y;
  int n, nb, qt, m; // qt: 0 q8_0, 1 q4_0
  int sab, sam, sak, swn; // swn: w's row stride in blocks
  int syb, sym, syn, pad_;
};
layout(push_constant) uniform PC { Params p; };

vec4 quad(T1Buf a, int o, int sak) {
  return vec4(LOAD1(a, o), LOAD1(a, o + sak), LOAD1(a, o + 2 * sak), LOAD1(a, o + 3 * sak));
}

void main() {
  int tid = int(gl_LocalInvocationID.x), tx = tid % WN, ty = tid / WN;
  int m0 = int(gl_WorkGroupID.y) * BM, n0 = int(gl_WorkGroupID.x) * BN;
  int batch = int(gl_WorkGroupID.z);
  // Parameters read once: CPU implementations load a parameter per lane
  // each time the loops read it.
  const int sak = p.sak, nb = p.nb, qt = p.qt;
  const uint64_t bytes = qt == 0 ? 34u : 18u;
  T1Buf a = T1Buf(p.a);
  // Rows and columns past the edge are clamped, not branched around.
  int ra[TM];
  uint64_t wr[TN];
  [[unroll]] for (int i = 0; i < TM; i++)
    ra[i] = batch * p.sab + min(m0 + ty + i * WM, p.m - 1) * p.sam;
  [[unroll]] for (int j = 0; j < TN; j++)
    wr[j] = p.w + uint64_t(min(n0 + tx + j * WN, p.n - 1)) * uint64_t(p.swn) * bytes;
  vec4 acc[TM];
  [[unroll]] for (int i = 0; i < TM; i++) acc[i] = vec4(0.0);
  for (int b = 0; b < nb; b++) {
    uint64_t blk[TN];
    [[unroll]] for (int j = 0; j < TN; j++) blk[j] = wr[j] + uint64_t(b) * bytes;
    vec4 part[TM];
    [[unroll]] for (int i = 0; i < TM; i++) part[i] = vec4(0.0);
    int l0 = 32 * b * sak;
    if (qt == 0) {
      for (int q = 0; q < 8; q++) {
        mat4 w4 = mat4(q8_quad(blk[0], q), q8_quad(blk[1], q), q8_quad(blk[2], q), q8_quad(blk[3], q));
        [[unroll]] for (int i = 0; i < TM; i++) part[i] += quad(a, ra[i] + l0 + 4 * q * sak, sak) * w4;
      }
    } else {
      for (int q = 0; q < 4; q++) {
        vec4 lo[TN], hi[TN];
        [[unroll]] for (int j = 0; j < TN; j++) q4_quads(blk[j], q, lo[j], hi[j]);
        mat4 wl = mat4(lo[0], lo[1], lo[2], lo[3]), wh = mat4(hi[0], hi[1], hi[2], hi[3]);
        [[unroll]] for (int i = 0; i < TM; i++) {
          int o = ra[i] + l0 + 4 * q * sak;
          part[i] += quad(a, o, sak) * wl + quad(a, o + 16 * sak, sak) * wh;
        }
      }
    }
    vec4 d = vec4(q_scale(blk[0]), q_scale(blk[1]), q_scale(blk[2]), q_scale(blk[3]));
    [[unroll]] for (int i = 0; i < TM; i++) acc[i] += part[i] * d;
  }
  T1Buf y = T1Buf(p.y);
  [[unroll]] for (int i = 0; i < TM; i++) {
    int gm = m0 + ty + i * WM;
    if (gm >= p.m) break;
    [[unroll]] for (int j = 0; j < TN; j++) {
      int gn = n0 + tx + j * WN;
      if (gn >= p.n) break;
      STORE1(y, batch * p.syb + gm * p.sym + gn * p.syn, acc[i][j]);
    }
  }
}
