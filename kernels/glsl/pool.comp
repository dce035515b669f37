#version 460
// pool.comp — max / average 2-D pooling, NCHW, one invocation per output.
// Padding counts as -inf for max; for average it is left out of the
// divisor unless count_include_pad. Variants: pool_<dtype>.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t x, y;
  int N, C, H, W, P, Q, kh, kw, sh, sw, ph, pw, kind, include_pad;
  int sx[4], sy[4];
};
layout(push_constant) uniform PC { Params p; };

void main() {
  T1Buf x = T1Buf(p.x), y = T1Buf(p.y);
  int total = p.N * p.C * p.P * p.Q;
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < total; i += step) {
    int q = i % p.Q, pp = (i / p.Q) % p.P, c = (i / (p.Q * p.P)) % p.C,
        n = i / (p.Q * p.P * p.C);
    int xb = n * p.sx[0] + c * p.sx[1];
    float acc = p.kind == 0 ? -BP_INF : 0.0;
    int cnt = 0;
    for (int r = 0; r < p.kh; r++) {
      int h = pp * p.sh - p.ph + r;
      for (int s = 0; s < p.kw; s++) {
        int w = q * p.sw - p.pw + s;
        bool in_ = h >= 0 && h < p.H && w >= 0 && w < p.W;
        if (in_) {
          float v = LOAD1(x, xb + h * p.sx[2] + w * p.sx[3]);
          if (p.kind == 0) acc = isnan(v) || isnan(acc) ? BP_NAN : max(acc, v);
          else acc += v;
          cnt++;
        } else if (p.include_pad != 0 && h < p.H + p.ph && w < p.W + p.pw) {
          cnt++;
        }
      }
    }
    if (p.kind == 1) acc /= float(p.include_pad != 0 ? p.kh * p.kw : max(cnt, 1));
    STORE1(y, n * p.sy[0] + c * p.sy[1] + pp * p.sy[2] + q * p.sy[3], acc);
  }
}
