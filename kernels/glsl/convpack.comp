#version 460
// convpack.comp — im2col for conv2d on CPU devices
// (plugins/vulkan/ops_dnn_texel.c): writes the B panels of gemmtex.comp
// for one image, [group][pq / PW][crs][PW] f32,
// element (g, crs, pq) = x[g*cg + c][p*sh - ph + r*dh][q*sw - pw + s*dw]
// with crs = (c, r, s) and pq = (p, q), zero in the padding and past PQ.
// One invocation writes one vec4 texel (4 neighbouring output pixels of
// one crs); neighbouring invocations walk q, x's contiguous axis.
// Variants convpack_<dt>, convpack_f32_tex.
#include "common.glsl"

layout(local_size_x = 64) in;
layout(set = 0, binding = 0, rgba32f) uniform writeonly imageBuffer dst;
#ifdef T2_tex
// convpack_f32_tex: x read through an r32f texel view (a gather on
// lavapipe instead of a per-lane loop, as gemmpack_f32_tex); the view
// starts at a 16-byte boundary and `shift` is the image's element 0 in it.
layout(set = 0, binding = 1, r32f) uniform readonly imageBuffer srcv;
#define SRC(i) imageLoad(srcv, shift + (i)).x
#else
#define SRC(i) LOAD1(X, i)
#endif

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t x; // image n, channel 0
  int cg, H, W, R, S, P, Q;
  int sh, sw, ph, pw, dh, dw;
  int sc, sy, sx; // x strides: channel, row, column
  int kp, xp, bw; // crs count, pq padded, panel width
  int shift;
};
layout(push_constant) uniform PC { Params p; };

void main() {
  T1Buf X = T1Buf(p.x);
  // Parameters read once (see gemmtex.comp).
  const int cg = p.cg, H = p.H, W = p.W, R = p.R, S = p.S, Q = p.Q;
  const int PQ = p.P * p.Q, sh = p.sh, sw = p.sw, ph = p.ph, pw = p.pw;
  const int dh = p.dh, dw = p.dw, sc = p.sc, sy = p.sy, sx = p.sx;
  const int kp = p.kp, xp4 = p.xp / 4, bw = p.bw, shift = p.shift;
  int g = int(gl_WorkGroupID.z);
  int texels = kp * xp4, dst_g = g * texels;
  for (int idx = int(gl_GlobalInvocationID.x); idx < texels;
       idx += int(gl_NumWorkGroups.x) * 64) {
    int crs = idx / xp4, x = 4 * (idx % xp4);
    int c = crs / (R * S), r = (crs / S) % R, s = crs % S;
    int base = (g * cg + c) * sc;
    vec4 v = vec4(0.0);
    for (int e = 0; e < 4; e++) {
      int pq = x + e;
      int ih = (pq / Q) * sh - ph + r * dh, iw = (pq % Q) * sw - pw + s * dw;
      if (pq < PQ && ih >= 0 && ih < H && iw >= 0 && iw < W)
        v[e] = SRC(base + ih * sy + iw * sx);
    }
    imageStore(dst, dst_g + ((x / bw) * kp + crs) * (bw / 4) + (x % bw) / 4, v);
  }
}
