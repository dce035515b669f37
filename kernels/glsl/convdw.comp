#version 460
// convdw.comp — depthwise conv2d (one input channel per group, channel
// multiplier K / C): an invocation per output pixel, consecutive
// invocations along an output row, so a CPU implementation's SIMD lanes
// load neighbouring input pixels. conv.comp's 16-channel tile would leave
// all but one channel of it idle. Workgroups: x over the P*Q pixels, y the
// output channel, z the image. Variants: convdw_<dtype>; convdw_f32_tex
// (CPU drivers, lavapipe) reads x and w and writes y through r32f storage
// texel views (vectorised there, where loads through an address are
// per-lane loops); hx, hw, hy: each tensor's element 0 in its view.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t x, w, bias, y;
  int N, C, H, W, K, R, S, P, Q;
  int sh, sw, ph, pw, dh, dw, groups, sbias;
  int sx[4], sww[4], sy[4];
  int hx, hw, hy;
};
layout(push_constant) uniform PC { Params p; };

#ifdef T2_tex
layout(set = 0, binding = 0, r32f) uniform writeonly imageBuffer ty;
layout(set = 0, binding = 1, r32f) uniform readonly imageBuffer tx;
layout(set = 0, binding = 2, r32f) uniform readonly imageBuffer tw;
#define LOADX(i) imageLoad(tx, p.hx + (i)).x
#define LOADW(i) imageLoad(tw, p.hw + (i)).x
#define STOREY(i, v) imageStore(ty, p.hy + (i), vec4(v))
#else
#define LOADX(i) LOAD1(X, i)
#define LOADW(i) LOAD1(Wt, i)
#define STOREY(i, v) STORE1(Y, i, v)
#endif

void main() {
  T1Buf X = T1Buf(p.x), Wt = T1Buf(p.w), Bi = T1Buf(p.bias), Y = T1Buf(p.y);
  int k = int(gl_WorkGroupID.y), n = int(gl_WorkGroupID.z);
  int c = k / (p.K / p.C), xb = n * p.sx[0] + c * p.sx[1], wb = k * p.sww[0];
  float b = p.bias != 0 ? LOAD1(Bi, k * p.sbias) : 0.0;
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int pix = int(gl_GlobalInvocationID.x); pix < p.P * p.Q; pix += stride) {
    int oq = pix % p.Q, op = pix / p.Q;
    float acc = 0.0;
    for (int r = 0; r < p.R; r++) {
      int h = op * p.sh - p.ph + r * p.dh;
      if (h < 0 || h >= p.H) continue;
      for (int s = 0; s < p.S; s++) {
        int w = oq * p.sw - p.pw + s * p.dw;
        if (w >= 0 && w < p.W)
          acc = fma(LOADW(wb + r * p.sww[2] + s * p.sww[3]), LOADX(xb + h * p.sx[2] + w * p.sx[3]),
                    acc);
      }
    }
    STOREY(n * p.sy[0] + k * p.sy[1] + op * p.sy[2] + oq * p.sy[3], acc + b);
  }
}
