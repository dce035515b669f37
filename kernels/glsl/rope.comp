#version 460
// rope.comp — rotary position embedding on [batch, seq, heads, head_dim]
// (strides in the parameter block). One invocation per rotating pair (read
// whole before it is written, so y may be x) or per feature past
// rotary_dim (copied). The angle pos * base^j (base = theta^(-2 /
// rotary_dim), from the host) is formed in double and reduced modulo 2 pi
// there, so only the reduced angle meets f32 sin and cos: an f32 angle of
// a late position would be off by more than an f32 output may be.
// Variants: rope_<dtype>; the plugin claims them where the device has
// shaderFloat64.
#include "common.glsl"

layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer I32Buf { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer I64Buf { int64_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y, x, pos;
  int64_t pos_offset;
  double base;
  int n, has_pos, pos64, rotary_dim, interleaved, ps0, ps1, pad_;
  int dims[4], sx[4], sy[4];
};
layout(push_constant) uniform PC { Params p; };

// base^j by squaring, in double.
double pow_int(double b, int j) {
  double r = 1.0lf;
  while (j > 0) {
    if ((j & 1) != 0) r *= b;
    b *= b;
    j >>= 1;
  }
  return r;
}

// a - k 2 pi for the nearest k, in double (2 pi split in two parts).
float reduce_angle(double a) {
  const double two_pi_hi = 6.283185307179586lf, two_pi_lo = 2.4492935982947064e-16lf;
  double k = roundEven(a * 0.15915494309189535lf);
  return float((a - k * two_pi_hi) - k * two_pi_lo);
}

void main() {
  T1Buf x = T1Buf(p.x), y = T1Buf(p.y);
  const int rd = p.rotary_dim, half_rd = rd / 2, per_row = half_rd + p.dims[3] - rd;
  const int n = p.n, H = p.dims[2], S = p.dims[1];
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += stride) {
    int j = i % per_row, r = i / per_row;
    int h = r % H, s = (r / H) % S, b = r / (H * S);
    int bx = b * p.sx[0] + s * p.sx[1] + h * p.sx[2];
    int by = b * p.sy[0] + s * p.sy[1] + h * p.sy[2];
    int dx = p.sx[3], dy = p.sy[3];
    if (j >= half_rd) {
      int d = rd + (j - half_rd);
      STORE1(y, by + d * dy, LOAD1(x, bx + d * dx));
      continue;
    }
    int64_t pos = p.pos_offset + int64_t(s);
    if (p.has_pos != 0) {
      int o = b * p.ps0 + s * p.ps1;
      pos = p.pos64 != 0 ? I64Buf(p.pos).v[o] : int64_t(I32Buf(p.pos).v[o]);
    }
    float ang = reduce_angle(double(pos) * pow_int(p.base, j));
    float c = cos(ang), sn = sin(ang);
    int d1 = p.interleaved != 0 ? 2 * j : j, d2 = p.interleaved != 0 ? 2 * j + 1 : j + half_rd;
    float x1 = LOAD1(x, bx + d1 * dx), x2 = LOAD1(x, bx + d2 * dx);
    STORE1(y, by + d1 * dy, x1 * c - x2 * sn);
    STORE1(y, by + d2 * dy, x1 * sn + x2 * c);
  }
}
