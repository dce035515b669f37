#version 460
// gemmtex.comp — C[b] = alpha * A[b] · B[b] + beta * C[b] for CPU
// implementations of Vulkan (lavapipe), from operands that gemmpack.comp
// has copied into f32 panels: A as [b][m / BM][k][BM], B as [b][n / BN][k]
// [BN], zero-padded, so the loop has no bounds checks and a workgroup walks
// two contiguous panels.
//
// Why storage texel buffers: llvmpipe turns every load from a storage
// buffer, a buffer device address or shared memory into a loop over the
// SIMD lanes with a branch per lane, while imageLoad on a texel buffer is
// one vectorised gather; packing the operands into panels first makes the
// gathers contiguous. The measurements behind this are in
// docs/performance.md ("Vulkan on lavapipe") and docs/backend-vulkan.md.
//
// Each invocation keeps a TM x TN register tile (vec4 columns); WX x WY
// invocations per workgroup. Variants gemmtex_<C dtype>_t<TM><TN><WX><WY>
// [u<KU>], e.g. t8844, t8844u4 (KU k-steps per loop iteration); the tile
// is a compile-time constant so the accumulator loops unroll.
//
// The GEMM epilogue (ABI 1.5) is applied in the store: + bias (C's dtype,
// any broadcast by strides), then the activation ACT (a specialization
// constant: a bp_unary_op_t code, -1 none), before C is rounded.
//
// gemmtex_score_<tile> is the first product of attention on CPU devices
// (plugins/vulkan/ops_dnn_texel.c): S = scale * Q·Kᵀ + bias - ALiBi, with
// the masked keys (causal, sliding window, key lengths, padding) set to
// -inf, written as the A panels of the second product ([b][m / BM][kp2]
// [BM]) through a third texel buffer instead of to C.
//
// gemmtex_<C dtype>_<tile>_conv is conv2d's implicit GEMM
// (plugins/vulkan/ops_dnn_conv.c): B is not packed but read in place from
// an image through an r32f view (binding 1), B(k, n) = x[koff(k) +
// noff(n)] with k = (c, r, s) and n = (p, q); the image is the input
// itself when it has no padding, else a zero-padded copy of it, so the
// loop has no bounds checks. koff advances by the filter's steps, with
// selects instead of branches (a branch is a lane-mask change on
// llvmpipe), and noff is computed once per column of the tile.
//
// gemmtex_bf16_<tile>_convx is the _conv variant for a bf16 image without
// padding: B is x itself through an r16ui view, each value widened to f32
// as it is loaded (bf16 is f32's upper half), so no convpad copy converts
// it first.
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require

#if defined(T2_t4888)
#define TM_ 4
#define TN_ 8
#define WX_ 8
#define WY_ 8
#elif defined(T2_t8888)
#define TM_ 8
#define TN_ 8
#define WX_ 8
#define WY_ 8
#elif defined(T2_t8448)
#define TM_ 8
#define TN_ 4
#define WX_ 4
#define WY_ 8
#elif defined(T2_t81644)
#define TM_ 8
#define TN_ 16
#define WX_ 4
#define WY_ 4
#elif defined(T2_t8844u4)
#define TM_ 8
#define TN_ 8
#define WX_ 4
#define WY_ 4
#define KU_ 4
#elif defined(T2_t4888u4)
#define TM_ 4
#define TN_ 8
#define WX_ 8
#define WY_ 8
#define KU_ 4
#elif defined(T2_t8448u4)
#define TM_ 8
#define TN_ 4
#define WX_ 4
#define WY_ 8
#define KU_ 4
#elif defined(T2_t81644u4)
#define TM_ 8
#define TN_ 16
#define WX_ 4
#define WY_ 4
#define KU_ 4
#elif defined(T2_t8888u4)
#define TM_ 8
#define TN_ 8
#define WX_ 8
#define WY_ 8
#define KU_ 4
#else // t8844
#define TM_ 8
#define TN_ 8
#define WX_ 4
#define WY_ 4
#endif
#ifndef KU_
#define KU_ 1
#endif
// KU: k-steps per loop iteration. llvmpipe blends every value a loop
// carries with the loop's lane mask, once per iteration, so unrolling k
// divides the blends on the accumulators by KU.
const int TM = TM_, TN = TN_, WX = WX_, WY = WY_, KU = KU_;
const int TM4 = TM / 4, TN4 = TN / 4, BM = TM * WY, BN = TN * WX;
layout(local_size_x = WX_ * WY_) in;

layout(set = 0, binding = 0, rgba32f) uniform readonly imageBuffer pa;
#if defined(T3_conv) || defined(T3_convx)
#define CONV_
#endif
#ifdef T3_convx
layout(set = 0, binding = 1, r16ui) uniform readonly uimageBuffer pbx;
#define BX(i) uintBitsToFloat(imageLoad(pbx, i).x << 16)
#elif defined(T3_conv)
layout(set = 0, binding = 1, r32f) uniform readonly imageBuffer pbx;
#define BX(i) imageLoad(pbx, i).x
#else
layout(set = 0, binding = 1, rgba32f) uniform readonly imageBuffer pb;
#endif
#ifdef T1_score
layout(set = 0, binding = 2, rgba32f) uniform writeonly imageBuffer ps;
#else
// C itself as r32f when it is f32 (use_view): its loads and stores are
// then vectorised, where those through its address are per-lane loops.
layout(set = 0, binding = 2, r32f) uniform imageBuffer cv;
#endif

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t c;
  int m, n, kp, beta_zero;
  int scb, scm, scn, pab, pbb; // panel batch strides in texels (0: shared)
  float alpha, beta;
  int bg;       // B panels are shared by bg consecutive batches (GQA)
  int causal;   // score: mask key j > row i + n - m; P·V: k stops after
                // the tile's last visible key, row + kshift
  int skp;      // score: the output panels' k extent (n padded)
  int amod;     // A panel of batch b is b % amod (conv2d groups)
  int has_bias, sbias, kshift;
  uint64_t bias; // C[b][i][j] += bias[b * sbb + i * sbias + j * sbn]
  int use_view, vshift; // C through cv, its element 0 at texel vshift
  int sbb, sbn;
  // score: the masks of ABI 1.5 in the causal mask's alignment (row i at
  // key position i + n - m). kv_len: this batch's i32 key length (0: none);
  // slopes: the chunk's first f32 ALiBi slope, slope_stride apart (0: none,
  // then alibi_heads > 0 gives the standard slope of head alibi_head0 + z);
  // the bias is f32 (bias_dt 0), f16 (1) or bf16 (2) from the 4-byte word
  // at its address, bias_shift elements in.
  uint64_t kv_len, slopes;
  int slope_stride, alibi_heads, alibi_head0, window;
  int bias_dt, bias_shift;
  // _conv: B(k, n) = x[koff + noff] at texel xshift + b / bg * pbb on:
  // the filter is cs wide and cr high, koff steps by cdx along s, cdy
  // along r and csc along c; noff = (n / cq) * shy + (n % cq) * swx.
  int cq, cs, cr, cdx, cdy, csc, shy, swx, xshift;
  // P·V of attention: row gm of batch b is scaled by rscale[b * rs_b +
  // gm] (the softmax's 1 / sum, so it need not rewrite the scores); 0: none
  uint64_t rscale;
  int rs_b;
};
layout(push_constant) uniform PC { Params p; };
layout(constant_id = 0) const int ACT = -1;

#include "mathfn.glsl"

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer F32Buf { float v[]; };
#ifdef T1_score
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer U32Buf { uint v[]; };

// Element e of the attention bias (f32, f16 or bf16 by bias_dt).
float score_bias(uint64_t addr, int dt, int e) {
  U32Buf w = U32Buf(addr);
  if (dt == 0) return uintBitsToFloat(w.v[e]);
  uint h = (w.v[e >> 1] >> (16 * (e & 1))) & 0xffffu;
  return dt == 1 ? bp_h2f(h) : bp_bf2f(h);
}

// Head z's ALiBi slope (0: none): the slopes tensor, or the standard
// geometric slope of head hh of a model with `heads` heads: 2^(-8 (hh + 1)
// / q) for the largest power of two q <= heads, every other one of the
// sequence for 2q past it.
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
#endif

void main() {
  // Every parameter is read once: each read through the block's address is
  // a per-lane memory loop on llvmpipe, which it does not hoist.
  const int kp = p.kp, M = p.m, N = p.n, SCB = p.scb, SCM = p.scm, SCN = p.scn;
  const bool beta_zero = p.beta_zero != 0;
  const float alpha = p.alpha, beta = p.beta;
  int tid = int(gl_LocalInvocationID.x);
  int tx = tid % WX, ty = tid / WX;
  int mb = int(gl_WorkGroupID.y), nb = int(gl_WorkGroupID.x);
  int b = int(gl_WorkGroupID.z);
  int a0 = (b % p.amod) * p.pab + mb * kp * (BM / 4) + ty * TM4;
#ifdef CONV_
  // This invocation's TN columns of B (a column past n reads column 0: its
  // sums are never stored), and the filter position (c, kr, ks) of k.
  const int CS = p.cs, CR = p.cr, CDX = p.cdx;
  const int CJR = p.cdy - CS * CDX, CJC = p.csc - CR * p.cdy;
  int noff[TN];
  {
    const int CQ = p.cq, SHY = p.shy, SWX = p.swx, x0 = p.xshift + (b / p.bg) * p.pbb;
    [[unroll]] for (int j = 0; j < TN; j++) {
      int gn = nb * BN + tx * TN + j;
      noff[j] = x0 + (gn < N ? (gn / CQ) * SHY + (gn % CQ) * SWX : 0);
    }
  }
  int koff = 0, ks = 0, kr = 0;
  // B's row k into bv, then k + 1's position
#define B_ROW(kk, bv)                                                                  \
  [[unroll]] for (int j = 0; j < TN4; j++) bv[j] =                                     \
      vec4(BX(koff + noff[4 * j]), BX(koff + noff[4 * j + 1]),                        \
           BX(koff + noff[4 * j + 2]), BX(koff + noff[4 * j + 3]));                    \
  {                                                                                    \
    ks++;                                                                              \
    bool ws = ks == CS;                                                                \
    ks = ws ? 0 : ks;                                                                  \
    kr += ws ? 1 : 0;                                                                  \
    bool wr = kr == CR;                                                                \
    kr = wr ? 0 : kr;                                                                  \
    koff += CDX + (ws ? CJR : 0) + (wr ? CJC : 0);                                     \
  }
#else
  int b0 = (b / p.bg) * p.pbb + nb * kp * (BN / 4) + tx * TN4;
#define B_ROW(kk, bv) \
  [[unroll]] for (int j = 0; j < TN4; j++) bv[j] = imageLoad(pb, b0 + (kk) * (BN / 4) + j)
#endif
  vec4 acc[TM][TN4];
  [[unroll]] for (int i = 0; i < TM; i++)
    [[unroll]] for (int j = 0; j < TN4; j++) acc[i][j] = vec4(0.0);
  // Causal attention: keys past the last row's limit (+ shift) are masked
  // for the whole tile. The score product skips a tile that is all masked;
  // P·V (kcausal != 0, k = keys) stops where the tile's probabilities end.
  int kend = kp;
  if (p.causal != 0) {
#ifdef T1_score
    int last = mb * BM + BM - 1 + (p.n - p.m); // last row's last visible key
    // nothing reads a tile past every row's keys (attnsoftmax.comp stops
    // at each row's last key, P·V at the tile's): not even -inf is stored
    if (nb * BN > last) return;
#else
    int last = mb * BM + BM - 1 + p.kshift;
    kend = min(kp, max(last + 1, 0));
#endif
  }
  int k = 0;
  for (; k + KU <= kend && KU > 1; k += KU) {
    vec4 t[TM][TN4];
    [[unroll]] for (int i = 0; i < TM; i++)
      [[unroll]] for (int j = 0; j < TN4; j++) t[i][j] = acc[i][j];
    [[unroll]] for (int u = 0; u < KU; u++) {
      vec4 av[TM4], bv[TN4];
      [[unroll]] for (int i = 0; i < TM4; i++) av[i] = imageLoad(pa, a0 + (k + u) * (BM / 4) + i);
      B_ROW(k + u, bv);
      [[unroll]] for (int i = 0; i < TM; i++)
        [[unroll]] for (int j = 0; j < TN4; j++)
          t[i][j] = fma(vec4(av[i / 4][i % 4]), bv[j], t[i][j]);
    }
    [[unroll]] for (int i = 0; i < TM; i++)
      [[unroll]] for (int j = 0; j < TN4; j++) acc[i][j] = t[i][j];
  }
  for (; k < kend; k++) {
    vec4 av[TM4], bv[TN4];
    [[unroll]] for (int i = 0; i < TM4; i++) av[i] = imageLoad(pa, a0 + k * (BM / 4) + i);
    B_ROW(k, bv);
    [[unroll]] for (int i = 0; i < TM; i++)
      [[unroll]] for (int j = 0; j < TN4; j++)
        acc[i][j] = fma(vec4(av[i / 4][i % 4]), bv[j], acc[i][j]);
  }
  int m0 = mb * BM + ty * TM, n0 = nb * BN + tx * TN;
#ifdef T1_score
  // Texel (4 rows i..i+3, column j) of the panels [b][i / BM][j][BM].
  const int SKP = p.skp, shift = N - M, window = p.window;
  const bool causal = p.causal != 0;
  // Keys [klo, khi) of row position at: the window's start, and the end
  // from causal (window implies it), the key length and n.
  const int klen = p.kv_len != 0ul ? min(N, int(U32Buf(p.kv_len).v[0])) : N;
  const bool has_bias = p.has_bias != 0;
  const int SBIAS = p.sbias, SBN = p.sbn, bdt = p.bias_dt;
  const int bias0 = p.bias_shift + b * p.sbb;
  const float slope = alibi_slope(b);
  int pbase = (b * int(gl_NumWorkGroups.y) + mb) * SKP * (BM / 4) + ty * TM4;
  [[unroll]] for (int i4 = 0; i4 < TM4; i4++)
    [[unroll]] for (int j = 0; j < TN; j++) {
      int gn = n0 + j;
      vec4 v;
      [[unroll]] for (int e = 0; e < 4; e++) {
        int gm = m0 + 4 * i4 + e, at = gm + shift;
        int khi = causal ? min(klen, at + 1) : klen, klo = window > 0 ? at - window + 1 : 0;
        bool keep = gn < khi && gn >= klo && gm < M;
        float sc = alpha * acc[4 * i4 + e][j / 4][j % 4] - slope * float(abs(at - gn));
        if (keep && has_bias) sc += score_bias(p.bias, bdt, bias0 + gm * SBIAS + gn * SBN);
        v[e] = keep ? sc : -BP_INF;
      }
      imageStore(ps, pbase + gn * (BM / 4) + i4, v);
    }
#else
  T1Buf c = T1Buf(p.c);
  const bool has_bias = p.has_bias != 0;
  const int bias0 = b * p.sbb, SBIAS = p.sbias, SBN = p.sbn;
  // a bias constant along n (conv2d's, a [m, 1] one) is read once per row
  const bool row_bias = has_bias && SBN == 0;
  T1Buf bias = T1Buf(p.bias);
  const bool use_view = p.use_view != 0;
  const int VS = p.vshift;
  const bool row_scale = p.rscale != 0ul;
  F32Buf rscale = F32Buf(p.rscale);
  const int rs0 = b * p.rs_b;
  [[unroll]] for (int i = 0; i < TM; i++) {
    int gm = m0 + i;
    float bi = row_bias && gm < M ? LOAD1(bias, bias0 + gm * SBIAS) : 0.0;
    // read once per row, as the bias above
    float rs = row_scale && gm < M ? alpha * rscale.v[rs0 + gm] : alpha;
    [[unroll]] for (int j = 0; j < TN; j++) {
      int gn = n0 + j;
      if (gm < M && gn < N) {
        int oc = b * SCB + gm * SCM + gn * SCN;
        float r = rs * acc[i][j / 4][j % 4] + bi;
        if (has_bias && !row_bias) r += LOAD1(bias, bias0 + gm * SBIAS + gn * SBN);
        if (use_view) {
          if (!beta_zero) r += beta * imageLoad(cv, VS + oc).x;
          if (ACT >= 0) r = bp_unary(ACT, r);
          imageStore(cv, VS + oc, vec4(r));
        } else {
          if (!beta_zero) r += beta * LOAD1(c, oc);
          if (ACT >= 0) r = bp_unary(ACT, r);
          STORE1(c, oc, r);
        }
      }
    }
  }
#endif
}
