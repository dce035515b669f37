#version 460
// attnsoftmax.comp — the row softmax of attention on CPU devices
// (plugins/vulkan/ops_dnn_texel.c), in place on the score panels
// gemmtex_score wrote: [panel][k][BM] f32, one invocation per 4
// neighbouring rows (one vec4 texel per key), so every load and store is a
// vectorised texel access.
// A row whose keys are all masked (-inf) becomes zeros. Causal (and
// windowed) scores: each quad stops after its last row's last visible key
// and writes zeros from there to the end of what the P·V product reads for
// its tile (gemmtex's kend), so half the keys are never touched and the
// score tiles past the diagonal need not be written. Variant
// attnsoftmax_f32.
#include "common.glsl"

layout(local_size_x = 64) in;
layout(set = 0, binding = 0, rgba32f) uniform coherent imageBuffer ps;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  int quads; // panels * BM / 4
  int bm4;   // BM / 4
  int kp;    // keys per row (padded)
  int causal, shift, pph; // row i sees keys <= i + shift; pph: panels per head
  // non-zero: the rows' 1 / sum go here (quad q's at q) and the scores
  // stay unnormalised: the P·V product scales its rows (gemmtex rscale)
  uint64_t inv_sums;
};
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer V4Buf { vec4 v[]; };
layout(push_constant) uniform PC { Params p; };

void main() {
  const int quads = p.quads, bm4 = p.bm4, kp = p.kp, shift = p.shift, pph = p.pph;
  const bool causal = p.causal != 0, defer = p.inv_sums != 0ul;
  V4Buf inv_sums = V4Buf(p.inv_sums);
  for (int q = int(gl_GlobalInvocationID.x); q < quads;
       q += int(gl_NumWorkGroups.x) * 64) {
    int base = (q / bm4) * kp * bm4 + q % bm4;
    // keys this quad's rows may see [0, kq); the tile's P·V reads [0, kt)
    int tile0 = ((q / bm4) % pph) * bm4 * 4, row3 = tile0 + (q % bm4) * 4 + 3;
    int kq = causal ? clamp(row3 + shift + 1, 0, kp) : kp;
    int kt = causal ? clamp(tile0 + 4 * bm4 + shift, 0, kp) : kp;
    for (int k = kq; k < kt; k++) imageStore(ps, base + k * bm4, vec4(0.0));
    vec4 mx = vec4(-BP_INF);
    for (int k = 0; k < kq; k++) mx = max(mx, imageLoad(ps, base + k * bm4));
    // all keys masked: exp(-inf - 0) = 0 instead of NaN
    mx = mix(mx, vec4(0.0), equal(mx, vec4(-BP_INF)));
    vec4 sum = vec4(0.0);
    for (int k = 0; k < kq; k++) {
      vec4 e = exp(imageLoad(ps, base + k * bm4) - mx);
      imageStore(ps, base + k * bm4, e);
      sum += e;
    }
    vec4 inv = mix(vec4(0.0), 1.0 / sum, greaterThan(sum, vec4(0.0)));
    if (defer) {
      inv_sums.v[q] = inv;
      continue;
    }
    for (int k = 0; k < kq; k++)
      imageStore(ps, base + k * bm4, imageLoad(ps, base + k * bm4) * inv);
  }
}
