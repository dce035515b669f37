#version 460
// arange.comp — y's i-th element (row-major) = start + i * step, computed
// in double and stored as y's dtype the way bp_cast converts: floats
// rounded once (f16 / bf16 through a float rounded to odd), integers NaN 0,
// halves to even, saturating. Variants: arange_<dtype>, every dtype; the
// plugin claims them where the device has shaderFloat64.
#include "common.glsl"

#if defined(T1_f64)
layout(buffer_reference, std430, buffer_reference_align = 8) buffer T1Buf { double v[]; };
#elif defined(T1_i64)
layout(buffer_reference, std430, buffer_reference_align = 8) buffer T1Buf { int64_t v[]; };
#endif

layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y;
  double start, step;
  int n, rank;
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };

// d to float rounded to odd: a later rounding to f16 / bf16 (fewer
// significand bits) is then the correct rounding of d.
float bp_d2f_odd(double d) {
  float f = float(d);
  if (isnan(d) || double(f) == d) return f;
  if (abs(double(f)) > abs(d)) f = uintBitsToFloat(floatBitsToUint(f) - 1u);
  return uintBitsToFloat(floatBitsToUint(f) | 1u);
}

double bp_sat(double v, double lo, double hi) {
  return isnan(v) ? 0.0lf : clamp(roundEven(v), lo, hi);
}

void store(T1Buf y, int o, double v) {
#if defined(T1_f32)
  y.v[o] = float(v);
#elif defined(T1_f16)
  y.v[o] = uint16_t(bp_f2h(bp_d2f_odd(v)));
#elif defined(T1_bf16)
  y.v[o] = uint16_t(bp_f2bf(bp_d2f_odd(v)));
#elif defined(T1_f64)
  y.v[o] = v;
#elif defined(T1_i32)
  y.v[o] = int(bp_sat(v, -2147483648.0lf, 2147483647.0lf));
#elif defined(T1_u8)
  y.v[o] = uint8_t(uint(bp_sat(v, 0.0lf, 255.0lf)));
#else
  // 2^63 has no int64: the top saturates explicitly.
  double r = bp_sat(v, -9223372036854775808.0lf, 9223372036854775808.0lf);
  y.v[o] = r >= 9223372036854775808.0lf ? int64_t(0x7fffffffffffffffl) : int64_t(r);
#endif
}

void main() {
  T1Buf y = T1Buf(p.y);
  const int n = p.n, rank = p.rank, sy0 = p.sy[0];
  const double start = p.start, step = p.step;
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += stride) {
    int oy = i * sy0;
    if (rank != 1) BP_ND_OFFSET(oy, i, rank, p.shape, p.sy);
    store(y, oy, start + double(i) * step);
  }
}
