#version 460
// quantmv.comp — y[r, j] = sum_l a[r, l] * w[j, l] with q8_0 / q4_0
// weights, for one activation row per batch (the token-generation GEMV):
// bandwidth first. Each workgroup takes ROWS weight rows for one
// activation row; its lanes split the row's blocks (neighbouring lanes read
// neighbouring blocks), each block's activations are loaded once for the
// ROWS rows, and the lanes' partial sums meet in shared memory. A block's
// sum is taken over its integers and multiplied by its scale once.
// Variants quantmv_<dt> (a's and y's dtype) read through buffer device
// addresses; quantmv_<dt>_tex, for CPU implementations, read the weights
// through an r32ui texel view of their allocation (binding 0; p.w is then
// the weights' byte offset in it) and f32 activations through an r32f one
// (binding 1; p.a is then their element offset in it): those drivers fetch
// texels vectorised and load storage buffers per lane.
#include "common.glsl"
#include "quant.inc"
#extension GL_EXT_control_flow_attributes : require

#ifdef T2_tex
layout(set = 0, binding = 0, r32ui) uniform readonly uimageBuffer wv;
#ifdef T1_f32
layout(set = 0, binding = 1, r32f) uniform readonly imageBuffer av;
#define ACT(o) imageLoad(av, int(p.a) + (o)).x
#endif
// The block accessors of quant.inc on byte offsets into the view.
uint t_ld32(uint64_t off) {
  int w = int(off >> 2);
  uint lo = imageLoad(wv, w).x;
  if ((off & uint64_t(3)) == uint64_t(0)) return lo;
  return (lo >> 16) | (imageLoad(wv, w + 1).x << 16);
}
#define Q_LD32 t_ld32
float t_scale(uint64_t off) {
  uint w = imageLoad(wv, int(off >> 2)).x;
  return bp_h2f(((off & uint64_t(2)) != uint64_t(0) ? w >> 16 : w) & 0xffffu);
}
#define Q_SCALE t_scale
#else
#define Q_LD32 q_ld32
#define Q_SCALE q_scale
#endif
#ifndef ACT
#define ACT(o) LOAD1(a, o)
#endif

vec4 w8_quad(uint64_t blk, int wi) {
  uint w = Q_LD32(blk + 2u + uint64_t(4 * wi));
  return vec4(q_byte(w, 0), q_byte(w, 1), q_byte(w, 2), q_byte(w, 3));
}
void w4_quads(uint64_t blk, int wi, out vec4 lo, out vec4 hi) {
  uint w = Q_LD32(blk + 2u + uint64_t(4 * wi));
  lo = vec4(ivec4(w, w >> 8, w >> 16, w >> 24) & 15) - 8.0;
  hi = vec4(ivec4(w >> 4, w >> 12, w >> 20, w >> 28) & 15) - 8.0;
}

const int LANES = 64, ROWS = 4;
layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t a, w, y;
  int n, nb, qt, m; // qt: 0 q8_0, 1 q4_0
  int sab, sam, sak, swn; // swn: w's row stride in blocks
  int syb, sym, syn, rows; // rows = batches * m
};
layout(push_constant) uniform PC { Params p; };

shared float red[ROWS * LANES];

void main() {
  // Parameters read once: CPU implementations load a parameter per lane
  // each time the loops read it.
  const int lane = int(gl_LocalInvocationID.x), n = p.n, nb = p.nb, qt = p.qt, m = p.m;
  const int sak = p.sak, sab = p.sab, sam = p.sam, rows = p.rows;
  const uint64_t wbase = p.w, bytes = qt == 0 ? 34u : 18u, wrow_bytes = uint64_t(p.swn) * bytes;
  T1Buf a = T1Buf(p.a), y = T1Buf(p.y);
  for (int r = int(gl_WorkGroupID.y); r < rows; r += int(gl_NumWorkGroups.y)) {
    int bi = r / m, i = r % m;
    int arow = bi * sab + i * sam;
    for (int j0 = int(gl_WorkGroupID.x) * ROWS; j0 < n; j0 += int(gl_NumWorkGroups.x) * ROWS) {
      float part[ROWS];
      uint64_t wrow[ROWS];
      [[unroll]] for (int t = 0; t < ROWS; t++) {
        part[t] = 0.0;
        wrow[t] = wbase + uint64_t(min(j0 + t, n - 1)) * wrow_bytes;
      }
      for (int b = lane; b < nb; b += LANES) {
        vec4 x[8];
        int l0 = arow + 32 * b * sak;
        [[unroll]] for (int q = 0; q < 8; q++)
          x[q] = vec4(ACT(l0 + (4 * q) * sak), ACT(l0 + (4 * q + 1) * sak),
                      ACT(l0 + (4 * q + 2) * sak), ACT(l0 + (4 * q + 3) * sak));
        [[unroll]] for (int t = 0; t < ROWS; t++) {
          uint64_t blk = wrow[t] + uint64_t(b) * bytes;
          float s = 0.0;
          if (qt == 0) {
            [[unroll]] for (int q = 0; q < 8; q++) s += dot(x[q], w8_quad(blk, q));
          } else {
            [[unroll]] for (int q = 0; q < 4; q++) {
              vec4 lo, hi;
              w4_quads(blk, q, lo, hi);
              s += dot(x[q], lo) + dot(x[q + 4], hi);
            }
          }
          part[t] += s * Q_SCALE(blk);
        }
      }
      [[unroll]] for (int t = 0; t < ROWS; t++) red[t * LANES + lane] = part[t];
      barrier();
      for (int h = LANES / 2; h > 0; h >>= 1) {
        if (lane < h)
          [[unroll]] for (int t = 0; t < ROWS; t++) red[t * LANES + lane] += red[t * LANES + lane + h];
        barrier();
      }
      if (lane < ROWS && j0 + lane < n)
        STORE1(y, bi * p.syb + i * p.sym + (j0 + lane) * p.syn, red[lane * LANES]);
      barrier();
    }
  }
}
