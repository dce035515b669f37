#version 460
// quantmv.comp — y[r, j] = sum_l a[r, l] * w[j, l] with q8_0 / q4_0
// weights, for one activation row per batch (the token-generation GEMV):
// bandwidth first. Each workgroup takes ROWS weight rows for one
// activation row; its lanes split the row's blocks (neighbouring lanes read
// neighbouring blocks), each block's activations are loaded once for the
// ROWS rows, and the lanes' partial sums meet in shared memory. A block's
// sum is taken over its integers and multiplied by its scale once.
// Variants quantmv_<dt> (a's and y's dtype).
#include "common.glsl"
#include "quant.inc"
#extension GL_EXT_control_flow_attributes : require

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
          x[q] = vec4(LOAD1(a, l0 + (4 * q) * sak), LOAD1(a, l0 + (4 * q + 1) * sak),
                      LOAD1(a, l0 + (4 * q + 2) * sak), LOAD1(a, l0 + (4 * q + 3) * sak));
        [[unroll]] for (int t = 0; t < ROWS; t++) {
          uint64_t blk = wrow[t] + uint64_t(b) * bytes;
          float s = 0.0;
          if (qt == 0) {
            [[unroll]] for (int q = 0; q < 8; q++) s += dot(x[q], q8_quad(blk, q));
          } else {
            [[unroll]] for (int q = 0; q < 4; q++) {
              vec4 lo, hi;
              q4_quads(blk, q, lo, hi);
              s += dot(x[q], lo) + dot(x[q + 4], hi);
            }
          }
          part[t] += s * q_scale(blk);
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
