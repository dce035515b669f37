#version 460
// reduce.comp — sum, mean, max, min, prod, var, argmax along one axis.
// Variants: reduce_<dtype of x>. argmax writes i32 (flags 0) or i64 (1).
#include "common.glsl"
#include "rows.glsl"

layout(buffer_reference, std430, buffer_reference_align = 4) buffer I32Buf { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer I64Buf { int64_t v[]; };

// First index of the maximum (a NaN counts as the maximum) across the
// workgroup, given each invocation's candidate (v, i).
int wg_argmax(float v, int i) {
  int t = int(gl_LocalInvocationID.x);
  red_v[t] = v;
  red_i[t] = i;
  barrier();
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (t < s) {
      float a = red_v[t], b = red_v[t + s];
      int ia = red_i[t], ib = red_i[t + s];
      bool take_b = ib >= 0 && (ia < 0 || (isnan(b) && !isnan(a)) ||
                                (!isnan(a) && b > a) ||
                                ((b == a || (isnan(a) && isnan(b))) && ib < ia));
      if (take_b) { red_v[t] = b; red_i[t] = ib; }
    }
    barrier();
  }
  int r = red_i[0];
  barrier();
  return r;
}

void main() {
  T1Buf x = T1Buf(p.x), y = T1Buf(p.y);
  int t = int(gl_LocalInvocationID.x);
  for (int r = int(gl_WorkGroupID.x); r < p.rows; r += int(gl_NumWorkGroups.x)) {
    int ox, oy;
    row_offsets(r, ox, oy);
    if (p.op == 6) { // argmax
      float best = 0.0;
      int bi = -1;
      for (int j = t; j < p.len; j += WG) {
        float v = LOAD1(x, ox + j * p.sx_axis);
        if (bi < 0 || (isnan(v) && !isnan(best)) || (!isnan(best) && v > best)) { best = v; bi = j; }
      }
      int idx = wg_argmax(best, bi);
      if (t == 0) {
        if (p.flags == 1) I64Buf(p.y).v[oy] = int64_t(idx);
        else I32Buf(p.y).v[oy] = idx;
      }
      continue;
    }
    int cop = p.op == 2 ? 1 : p.op == 3 ? 2 : p.op == 4 ? 3 : 0;
    float acc = cop == 3 ? 1.0 : cop == 0 ? 0.0 : p.len > 0 ? LOAD1(x, ox) : BP_NAN;
    for (int j = t; j < p.len; j += WG)
      acc = bp_combine(cop, acc, LOAD1(x, ox + j * p.sx_axis));
    float total = wg_reduce(cop, acc);
    if (p.op == 1 || p.op == 5) total /= float(p.len);
    if (p.op == 5) { // variance: a second pass around the mean
      float s = 0.0;
      for (int j = t; j < p.len; j += WG) {
        float d = LOAD1(x, ox + j * p.sx_axis) - total;
        s += d * d;
      }
      total = wg_reduce(0, s) / float(p.len);
    }
    if (t == 0) STORE1(y, oy, total);
  }
}
