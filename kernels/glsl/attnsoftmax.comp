#version 460
// attnsoftmax.comp — the row softmax of attention on CPU devices
// (plugins/vulkan/ops_dnn_texel.c), in place on the score panels
// gemmtex_score wrote: [panel][k][BM] f32, one invocation per 4
// neighbouring rows (one vec4 texel per key), so every load and store is a
// vectorised texel access.
// A row whose keys are all masked (-inf) becomes zeros. Variant
// attnsoftmax_f32.
#include "common.glsl"

layout(local_size_x = 64) in;
layout(set = 0, binding = 0, rgba32f) uniform coherent imageBuffer ps;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  int quads; // panels * BM / 4
  int bm4;   // BM / 4
  int kp;    // keys per row (padded)
};
layout(push_constant) uniform PC { Params p; };

void main() {
  const int quads = p.quads, bm4 = p.bm4, kp = p.kp;
  for (int q = int(gl_GlobalInvocationID.x); q < quads;
       q += int(gl_NumWorkGroups.x) * 64) {
    int base = (q / bm4) * kp * bm4 + q % bm4;
    vec4 mx = vec4(-BP_INF);
    for (int k = 0; k < kp; k++) mx = max(mx, imageLoad(ps, base + k * bm4));
    // all keys masked: exp(-inf - 0) = 0 instead of NaN
    mx = mix(mx, vec4(0.0), equal(mx, vec4(-BP_INF)));
    vec4 sum = vec4(0.0);
    for (int k = 0; k < kp; k++) {
      vec4 e = exp(imageLoad(ps, base + k * bm4) - mx);
      imageStore(ps, base + k * bm4, e);
      sum += e;
    }
    vec4 inv = mix(vec4(0.0), 1.0 / sum, greaterThan(sum, vec4(0.0)));
    for (int k = 0; k < kp; k++)
      imageStore(ps, base + k * bm4, imageLoad(ps, base + k * bm4) * inv);
  }
}
