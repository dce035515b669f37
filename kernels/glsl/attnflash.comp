#version 460
// attnflash.comp — attention in one pass for CPU implementations of Vulkan
// (lavapipe; plugins/vulkan/ops_dnn_flash.c): no score matrix in memory,
// no softmax pass. Each invocation owns TM query rows of one head and walks
// the keys TN at a time: the TM x TN scores (Q·Kᵀ over d, from the packed
// panels), the running row max and sum (online softmax) and the TM x DV
// output stay in registers; the output is normalised once at the end.
//
// Operands are the f32 panels gemmpack.comp writes, read through storage
// texel buffers (the vectorised loads on llvmpipe; gemmtex.comp says why):
//   Q [head][Sq / BM][d][BM]   (BM = TM * WY: one workgroup's rows)
//   K [kv head][Skv / TN][d][TN]
//   V [kv head][Skv padded][DV] (zero columns past dv, zero rows past Skv)
// An invocation's TM rows are one texel per four rows, so no lane ever
// splits a row with another: the max, the sum and the rescaling are
// per-lane arithmetic, with no shared memory and no subgroup operations
// (both are per-lane loops on llvmpipe 22.3).
//
// Masks (ABI 1.5), in the causal mask's bottom-right alignment (row i at
// key position i + Skv - Sq): causal, the key length, a sliding window
// (the key loop runs over the keys some row of the workgroup sees, so the
// blocks past the diagonal and before the window are never computed), an
// additive bias and ALiBi. Keys past Skv (panel padding) are masked too. A
// row that sees no key writes zeros.
//
// Variants attnflash_<out dtype>_<tile>; the tile fixes DV (the output
// columns kept in registers) and TM, so every register array is indexed by
// constants once its loops unroll (a run-time index puts it in memory).
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require

#if defined(T2_d128)
#define DV_ 128
#elif defined(T2_d32)
#define DV_ 32
#else // d64
#define DV_ 64
#endif
// TM, WY and TN match ops_dnn_flash.c's FLASH_TM, FLASH_WY, FLASH_TN
#define TM_ 4
#define TN_ 8
#define WY_ 16
const int TM = TM_, TN = TN_, WY = WY_, DV = DV_;
const int TM4 = TM / 4, TN4 = TN / 4, DV4 = DV / 4, BM = TM * WY;
layout(local_size_x = WY_) in;

layout(set = 0, binding = 0, rgba32f) uniform readonly imageBuffer pq;
layout(set = 0, binding = 1, rgba32f) uniform readonly imageBuffer pk;
layout(set = 0, binding = 2, rgba32f) uniform readonly imageBuffer pv;
// the output itself as r32f when it is f32 (use_view): vectorised stores
layout(set = 0, binding = 3, r32f) uniform writeonly imageBuffer ov;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t o;         // out, element (head z, row i, column c) at z*soh + i*som + c*son
  int sq, skv, d, dv; // rows, keys, the score product's depth, output columns
  int qh, kh, vh;     // texels per head of the Q, K and V panels
  int bg;             // query heads per kv head (GQA)
  int causal;
  float scale;
  int soh, som, son;
  int use_view, vshift; // out through ov, its element 0 at texel vshift
  // the masks, as gemmtex.comp's score variant takes them: kv_len, this
  // batch's i32 key length (0: none); slopes, the f32 ALiBi slopes
  // slope_stride apart (0: none, then alibi_heads > 0 gives the standard
  // slope of head alibi_head0 + z); the bias of this batch, element (z, i,
  // j) at bias_shift + z*sbb + i*sbias + j*sbn in f32 (bias_dt 0), f16 (1)
  // or bf16 (2) from the 4-byte words at its address
  uint64_t kv_len, slopes, bias;
  int slope_stride, alibi_heads, alibi_head0, window;
  int has_bias, bias_dt, bias_shift, sbb, sbias, sbn;
};
layout(push_constant) uniform PC { Params p; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer U32Buf { uint v[]; };

// Element e of the attention bias (f32, f16 or bf16 by dt); the same as
// gemmtex.comp's score_bias.
float score_bias(uint64_t addr, int dt, int e) {
  U32Buf w = U32Buf(addr);
  if (dt == 0) return uintBitsToFloat(w.v[e]);
  uint h = (w.v[e >> 1] >> (16 * (e & 1))) & 0xffffu;
  return dt == 1 ? bp_h2f(h) : bp_bf2f(h);
}

// Head z's ALiBi slope (0: none): the slopes tensor, or the standard
// geometric slope of head hh of a model with `heads` heads: 2^(-8 (hh + 1)
// / q) for the largest power of two q <= heads, every other one of the
// sequence for 2q past it (as gemmtex.comp's alibi_slope).
float alibi_slope(int z) {
  if (p.slopes != 0ul) return uintBitsToFloat(U32Buf(p.slopes).v[z * p.slope_stride]);
  int heads = p.alibi_heads;
  if (heads <= 0) return 0.0;
  int q = 1;
  while (q * 2 <= heads) q *= 2;
  int hh = z + p.alibi_head0;
  return hh < q ? exp2(-8.0 * float(hh + 1) / float(q))
                : exp2(-4.0 * float(2 * (hh - q) + 1) / float(q));
}

// One query row's value of a TM-row quad texel: rows 4*i4 .. 4*i4 + 3.
#define QROW(q, i) q[(i) / 4][(i) % 4]

void main() {
  // Every parameter is read once (gemmtex.comp says why).
  const int SQ = p.sq, SKV = p.skv, D = p.d, DVO = p.dv, QH = p.qh, KH = p.kh, VH = p.vh;
  const float scale = p.scale;
  const bool causal = p.causal != 0;
  const int shift = SKV - SQ;
  int ty = int(gl_LocalInvocationID.x), mb = int(gl_WorkGroupID.x), z = int(gl_WorkGroupID.y);
  int kvz = z / p.bg;
  int r0 = mb * BM + ty * TM; // this invocation's first row
  int qa = z * QH + mb * D * (BM / 4) + ty * TM4;
  int kb = kvz * KH, vb = kvz * VH;
  const int klen = p.kv_len != 0ul ? clamp(int(U32Buf(p.kv_len).v[0]), 0, SKV) : SKV;
  const int window = p.window;
  const float slope = alibi_slope(z);
  const bool has_bias = p.has_bias != 0;
  const int bdt = p.bias_dt, SBIAS = p.sbias, SBN = p.sbn, bias0 = p.bias_shift + z * p.sbb;
  const uint64_t bias = p.bias;
  // keys some row of the workgroup sees: [kbeg, kend), kbeg a whole step
  int kend = causal || window > 0 ? clamp(mb * BM + BM - 1 + shift + 1, 0, klen) : klen;
  int kbeg = window > 0 ? max(mb * BM + shift - window + 1, 0) / TN * TN : 0;

  vec4 o[TM][DV4];
  float mx[TM], sum[TM];
  [[unroll]] for (int i = 0; i < TM; i++) {
    mx[i] = -BP_INF;
    sum[i] = 0.0;
    [[unroll]] for (int c = 0; c < DV4; c++) o[i][c] = vec4(0.0);
  }
  for (int k0 = kbeg; k0 < kend; k0 += TN) {
    // scores of the TM rows against keys k0 .. k0 + TN - 1
    vec4 s[TM][TN4];
    [[unroll]] for (int i = 0; i < TM; i++)
      [[unroll]] for (int j = 0; j < TN4; j++) s[i][j] = vec4(0.0);
    int ka = kb + (k0 / TN) * D * TN4;
    for (int dd = 0; dd < D; dd++) {
      vec4 qv[TM4], kv[TN4];
      [[unroll]] for (int i = 0; i < TM4; i++) qv[i] = imageLoad(pq, qa + dd * (BM / 4) + i);
      [[unroll]] for (int j = 0; j < TN4; j++) kv[j] = imageLoad(pk, ka + dd * TN4 + j);
      [[unroll]] for (int i = 0; i < TM; i++)
        [[unroll]] for (int j = 0; j < TN4; j++) s[i][j] = fma(vec4(QROW(qv, i)), kv[j], s[i][j]);
    }
    // online softmax: mask, new max, weights, the correction of what the
    // rows hold so far
    float corr[TM];
    [[unroll]] for (int i = 0; i < TM; i++) {
      int at = r0 + i + shift; // the row's key position
      int khi = causal || window > 0 ? min(klen, at + 1) : klen;
      int klo = window > 0 ? at - window + 1 : 0;
      float m = mx[i];
      [[unroll]] for (int j = 0; j < TN; j++) {
        int key = k0 + j;
        bool keep = key < khi && key >= klo && r0 + i < SQ;
        float v = scale * s[i][j / 4][j % 4] - slope * float(abs(at - key));
        if (keep && has_bias) v += score_bias(bias, bdt, bias0 + (r0 + i) * SBIAS + key * SBN);
        v = keep ? v : -BP_INF;
        s[i][j / 4][j % 4] = v;
        m = max(m, v);
      }
      // nothing seen yet: a zero reference, so exp(-inf - 0) = 0, not NaN
      float ref = m == -BP_INF ? 0.0 : m;
      corr[i] = exp(mx[i] - ref);
      mx[i] = m;
      float add = 0.0;
      [[unroll]] for (int j = 0; j < TN4; j++) {
        vec4 e = exp(s[i][j] - ref);
        s[i][j] = e;
        add += e.x + e.y + e.z + e.w;
      }
      sum[i] = sum[i] * corr[i] + add;
    }
    // o = o * corr + P · V, one texel column of V at a time
    int va = vb + k0 * DV4;
    [[unroll]] for (int c = 0; c < DV4; c++) {
      vec4 vv[TN];
      [[unroll]] for (int j = 0; j < TN; j++) vv[j] = imageLoad(pv, va + j * DV4 + c);
      [[unroll]] for (int i = 0; i < TM; i++) {
        vec4 acc = o[i][c] * corr[i];
        [[unroll]] for (int j = 0; j < TN; j++) acc = fma(vec4(s[i][j / 4][j % 4]), vv[j], acc);
        o[i][c] = acc;
      }
    }
  }
  T1Buf ob = T1Buf(p.o);
  const int SOM = p.som, SON = p.son, obase = z * p.soh, VS = p.vshift;
  const bool use_view = p.use_view != 0;
  [[unroll]] for (int i = 0; i < TM; i++) {
    int gm = r0 + i;
    if (gm >= SQ) continue;
    float inv = sum[i] > 0.0 ? 1.0 / sum[i] : 0.0;
    [[unroll]] for (int c = 0; c < DV4; c++)
      [[unroll]] for (int e = 0; e < 4; e++) {
        int col = 4 * c + e;
        if (col < DVO) {
          int at = obase + gm * SOM + col * SON;
          float r = o[i][c][e] * inv;
          if (use_view)
            imageStore(ov, VS + at, vec4(r));
          else
            STORE1(ob, at, r);
        }
      }
  }
}
