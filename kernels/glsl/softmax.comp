#version 460
// softmax.comp — softmax (op 0) or log-softmax (op 1) along one axis,
// max-subtracted, f32 accumulation. Variants: softmax_<dtype>.
#include "common.glsl"
#include "rows.glsl"

void main() {
  T1Buf x = T1Buf(p.x), y = T1Buf(p.y);
  int t = int(gl_LocalInvocationID.x);
  // Parameters read once: on CPU drivers (lavapipe) every read through the
  // block's address is a per-lane load loop that is not hoisted.
  const int rows = p.rows, len = p.len, sxa = p.sx_axis, sya = p.sy_axis;
  const bool logsm = p.op == 1;
  for (int r = int(gl_WorkGroupID.x); r < rows; r += int(gl_NumWorkGroups.x)) {
    int ox, oy;
    row_offsets(r, ox, oy);
    float m = -BP_INF;
    for (int j = t; j < len; j += WG)
      m = bp_combine(1, m, LOAD1(x, ox + j * sxa));
    m = wg_reduce(1, m);
    float s = 0.0;
    for (int j = t; j < len; j += WG)
      s += exp(LOAD1(x, ox + j * sxa) - m);
    s = wg_reduce(0, s);
    float ls = log(s), inv = 1.0 / s;
    for (int j = t; j < len; j += WG) {
      float d = LOAD1(x, ox + j * sxa) - m;
      STORE1(y, oy + j * sya, logsm ? d - ls : exp(d) * inv);
    }
  }
}
