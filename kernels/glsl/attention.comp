#version 460
// attention.comp — fused scaled dot-product attention with online softmax:
// out = softmax(q kᵀ · scale [+ causal mask]) v, never materialising the
// score matrix. One workgroup per query row (grid-stride over rows); each
// invocation scores one key of a 64-key chunk, the workgroup combines the
// chunk's max and sum, rescales the running output and accumulates the
// chunk's values (invocation t owns output dims t, t+64, ...).
// Causal masking is bottom-right aligned (key j visible to query i when
// j <= i + Skv - Sq); grouped-query heads share kv head h / (Hq / Hkv).
// Variants: attention_<dtype>. D and Dv are at most 256.
#include "common.glsl"

layout(local_size_x = 64) in;
#define WG 64
#define MAXD 256

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t q, k, v, o;
  int B, Hq, Hkv, Sq, Skv, D, Dv, causal;
  float scale, pad;
  int sq[4], sk[4], sv[4], so[4];
};
layout(push_constant) uniform PC { Params p; };

#include "wgreduce.glsl"

shared float qs[MAXD];
shared float ps[WG];

void main() {
  T1Buf Q = T1Buf(p.q), K = T1Buf(p.k), V = T1Buf(p.v), O = T1Buf(p.o);
  int t = int(gl_LocalInvocationID.x);
  int rows = p.B * p.Hq * p.Sq;
  for (int row = int(gl_WorkGroupID.x); row < rows; row += int(gl_NumWorkGroups.x)) {
    int i = row % p.Sq, h = (row / p.Sq) % p.Hq, b = row / (p.Sq * p.Hq);
    int hk = h / (p.Hq / p.Hkv);
    int qo = b * p.sq[0] + h * p.sq[1] + i * p.sq[2];
    int ko = b * p.sk[0] + hk * p.sk[1], vo = b * p.sv[0] + hk * p.sv[1];
    int oo = b * p.so[0] + h * p.so[1] + i * p.so[2];
    for (int d = t; d < p.D; d += WG) qs[d] = LOAD1(Q, qo + d * p.sq[3]) * p.scale;
    barrier();
    int limit = p.causal != 0 ? min(p.Skv, i + p.Skv - p.Sq + 1) : p.Skv;
    float m = -BP_INF, l = 0.0;
    float acc[MAXD / WG];
    for (int c = 0; c < MAXD / WG; c++) acc[c] = 0.0;
    for (int j0 = 0; j0 < limit; j0 += WG) {
      int j = j0 + t;
      float s = -BP_INF;
      if (j < limit) {
        s = 0.0;
        int kr = ko + j * p.sk[2];
        for (int d = 0; d < p.D; d++) s += qs[d] * LOAD1(K, kr + d * p.sk[3]);
      }
      float mn = max(m, wg_reduce(1, s));
      float pj = j < limit ? exp(s - mn) : 0.0;
      ps[t] = pj;
      float corr = exp(m - mn); // 0 on the first chunk (m = -inf)
      l = l * corr + wg_reduce(0, pj); // its barriers also publish ps
      int n = min(WG, limit - j0);
      for (int c = 0; c < MAXD / WG; c++) {
        int d = t + c * WG;
        if (d >= p.Dv) break;
        float a = acc[c] * corr;
        for (int jj = 0; jj < n; jj++)
          a += ps[jj] * LOAD1(V, vo + (j0 + jj) * p.sv[2] + d * p.sv[3]);
        acc[c] = a;
      }
      m = mn;
      barrier(); // ps is rewritten by the next chunk
    }
    for (int c = 0; c < MAXD / WG; c++) {
      int d = t + c * WG;
      if (d < p.Dv) STORE1(O, oo + d * p.so[3], limit > 0 ? acc[c] / l : 0.0);
    }
    barrier(); // qs is rewritten by the next row
  }
}
