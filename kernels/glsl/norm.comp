#version 460
// norm.comp — layer norm (op 0) and RMS norm (op 1) over the last axis,
// two-pass statistics in f32. gamma / beta addresses are 0 when absent.
// Variants: norm_<dtype>.
#include "common.glsl"
#include "rows.glsl"

void main() {
  T1Buf x = T1Buf(p.x), y = T1Buf(p.y), g = T1Buf(p.g), b = T1Buf(p.b);
  int t = int(gl_LocalInvocationID.x);
  // flags: gamma / beta strides along the axis (the kernels use p.sx for
  // rows only, so these come in pad / pad2 slots)
  int sg = p.flags, sb = p.pad;
  for (int r = int(gl_WorkGroupID.x); r < p.rows; r += int(gl_NumWorkGroups.x)) {
    int ox, oy;
    row_offsets(r, ox, oy);
    float mean = 0.0;
    if (p.op == 0) {
      float s = 0.0;
      for (int j = t; j < p.len; j += WG) s += LOAD1(x, ox + j * p.sx_axis);
      mean = wg_reduce(0, s) / float(p.len);
    }
    float q = 0.0;
    for (int j = t; j < p.len; j += WG) {
      float d = LOAD1(x, ox + j * p.sx_axis) - mean;
      q += d * d;
    }
    float inv = inversesqrt(wg_reduce(0, q) / float(p.len) + p.eps);
    for (int j = t; j < p.len; j += WG) {
      float v = (LOAD1(x, ox + j * p.sx_axis) - mean) * inv;
      if (p.g != 0) v *= LOAD1(g, j * sg);
      if (p.b != 0) v += LOAD1(b, j * sb);
      STORE1(y, oy + j * p.sy_axis, v);
    }
  }
}
