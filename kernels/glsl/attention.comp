#version 460
// attention.comp — fused scaled dot-product attention with online softmax:
// out = softmax(q kᵀ · scale [+ causal mask]) v, never materialising the
// score matrix. One workgroup per query row (grid-stride over rows); each
// invocation scores one key of a 64-key chunk, the workgroup combines the
// chunk's max and sum, rescales the running output and accumulates the
// chunk's values (invocation t owns output dims t, t+64, ...).
// Causal masking is bottom-right aligned (key j visible to query i when
// j <= i + Skv - Sq); grouped-query heads share kv head h / (Hq / Hkv).
// The masks of ABI 1.5 use the same alignment: the key lengths and the
// sliding window narrow the row's key range [lo, hi), the additive bias
// and ALiBi are added to the scaled scores; a row with no visible key (or
// only -inf scores) writes zeros.
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
  // masks (0 / absent when unused): kv_lens i32 [B] (stride skl), bias in
  // q's dtype (strides sb), slopes f32 [Hq] (stride sslope) or, with
  // alibi_heads > 0, the standard slope of head h + alibi_head0
  uint64_t kv_lens, bias, slopes;
  int skl, sslope, window, alibi_heads, alibi_head0, has_bias;
  int sb[4];
};
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer I32Buf { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer F32Buf { float v[]; };
layout(push_constant) uniform PC { Params p; };

#include "wgreduce.glsl"

shared float qs[MAXD];
shared float ps[WG];

// Head h's ALiBi slope (0: none): the slopes tensor, or the standard
// geometric slope of head hh of a model with `heads` heads: 2^(-8 (hh + 1)
// / q) for the largest power of two q <= heads, every other one of the
// sequence for 2q past it.
float alibi_slope(int h) {
  if (p.slopes != 0ul) return F32Buf(p.slopes).v[h * p.sslope];
  int heads = p.alibi_heads;
  if (heads <= 0) return 0.0;
  int q = 1;
  while (q * 2 <= heads) q *= 2;
  int hh = h + p.alibi_head0;
  return hh < q ? exp2(-8.0 * float(hh + 1) / float(q))
                : exp2(-4.0 * float(2 * (hh - q) + 1) / float(q));
}

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
    // the row's visible keys [lo, hi), at its key position
    int at = i + p.Skv - p.Sq;
    int hi = p.causal != 0 || p.window > 0 ? min(p.Skv, at + 1) : p.Skv;
    if (p.kv_lens != 0ul) hi = min(hi, I32Buf(p.kv_lens).v[b * p.skl]);
    int lo = p.window > 0 ? max(0, at - p.window + 1) : 0;
    float slope = alibi_slope(h);
    T1Buf BIAS = T1Buf(p.bias);
    int bo = b * p.sb[0] + h * p.sb[1] + i * p.sb[2];
    float m = -BP_INF, l = 0.0;
    float acc[MAXD / WG];
    for (int c = 0; c < MAXD / WG; c++) acc[c] = 0.0;
    for (int j0 = lo; j0 < hi; j0 += WG) {
      int j = j0 + t;
      float s = -BP_INF;
      if (j < hi) {
        s = 0.0;
        int kr = ko + j * p.sk[2];
        for (int d = 0; d < p.D; d++) s += qs[d] * LOAD1(K, kr + d * p.sk[3]);
        s -= slope * float(abs(at - j));
        if (p.has_bias != 0) s += LOAD1(BIAS, bo + j * p.sb[3]);
      }
      float mn = max(m, wg_reduce(1, s));
      // a -inf score (masked by the bias) weighs 0, even while mn is -inf
      float pj = s == -BP_INF ? 0.0 : exp(s - mn);
      ps[t] = pj;
      float corr = m == -BP_INF ? 0.0 : exp(m - mn);
      l = l * corr + wg_reduce(0, pj); // its barriers also publish ps
      int n = min(WG, hi - j0);
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
      if (d < p.Dv) STORE1(O, oo + d * p.so[3], l > 0.0 ? acc[c] / l : 0.0);
    }
    barrier(); // qs is rewritten by the next row
  }
}
