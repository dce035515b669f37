#version 460
// norm.comp — layer norm (op 0) and RMS norm (op 1) over the last axis,
// two-pass statistics in f32. gamma / beta addresses are 0 when absent.
// Variants: norm_<dtype>.
//
// The row is scaled by 2^-e first, 2^e the power of two of its largest
// magnitude (e clamped to [-126, 126], so 2^-e and 2^e are normal floats;
// the scaling is exact), so that neither the squares nor the sums overflow
// (x = 2e19) or underflow (x = 1e-30): y = (x' - m) / sqrt(v + eps 2^-2e),
// m and v the mean and variance of x' = x 2^-e. When eps 2^-2e overflows,
// v is nothing beside it and y = (x' - m) 2^e / sqrt(eps).
#include "common.glsl"
#include "rows.glsl"

void main() {
  T1Buf x = T1Buf(p.x), y = T1Buf(p.y), g = T1Buf(p.g), b = T1Buf(p.b);
  int t = int(gl_LocalInvocationID.x);
  // flags: gamma / beta strides along the axis (the kernels use p.sx for
  // rows only, so these come in pad / pad2 slots)
  int sg = p.flags, sb = p.pad;
  // Parameters read once (see softmax.comp).
  const int rows = p.rows, len = p.len, sxa = p.sx_axis, sya = p.sy_axis;
  const bool layer = p.op == 0, has_g = p.g != 0, has_b = p.b != 0;
  const float eps = p.eps;
  for (int r = int(gl_WorkGroupID.x); r < rows; r += int(gl_NumWorkGroups.x)) {
    int ox, oy;
    row_offsets(r, ox, oy);
    float amax = 0.0;
    for (int j = t; j < len; j += WG) amax = max(amax, abs(LOAD1(x, ox + j * sxa)));
    amax = wg_reduce(1, amax);
    // 0, inf and NaN rows unscaled: their answer (NaN) stays
    int e = amax > 0.0 && amax < BP_INF
                ? clamp(int((floatBitsToUint(amax) >> 23) & 0xffu) - 127, -126, 126) : 0;
    const float sc = uintBitsToFloat(uint(127 - e) << 23); // 2^-e
    float mean = 0.0;
    if (layer) {
      float s = 0.0;
      for (int j = t; j < len; j += WG) s += LOAD1(x, ox + j * sxa) * sc;
      mean = wg_reduce(0, s) / float(len);
    }
    float q = 0.0;
    for (int j = t; j < len; j += WG) {
      float d = LOAD1(x, ox + j * sxa) * sc - mean;
      q += d * d;
    }
    float e2 = eps * sc * sc;
    float inv = isinf(e2) ? inversesqrt(eps) * uintBitsToFloat(uint(127 + e) << 23)
                          : inversesqrt(wg_reduce(0, q) / float(len) + e2);
    for (int j = t; j < len; j += WG) {
      float v = (LOAD1(x, ox + j * sxa) * sc - mean) * inv;
      if (has_g) v *= LOAD1(g, j * sg);
      if (has_b) v += LOAD1(b, j * sb);
      STORE1(y, oy + j * sya, v);
    }
  }
}
