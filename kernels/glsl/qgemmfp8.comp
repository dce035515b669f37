#version 460
// qgemmfp8.comp — the fp8 GEMM (bp_qgemm with a and b fp8 e4m3 / e5m2,
// any mix) over the panels quantpack.comp packs for quantgemm.comp (a code
// is a byte; the zero padding is +0 in both formats): acc[i, j] = sum of
// the decoded products in f32 (each product of two fp8 values is exact in
// f32; the order is the device's), then c = (float)acc * sa[i] * sb[j]
// rounded once to c's dtype (f32, f16, bf16; bp_f2h / bp_f2bf round to
// nearest even). The formats come in the parameter block (p.fp8: a's
// mantissa bits + 8 * b's), so one shader serves the four pairs; each
// workgroup decodes the 256 codes of each format into shared tables once.
// Variants qgemmfp8_buf (panels through buffer addresses) and qgemmfp8_tex
// (the k-major texel panels through rgba32ui views, as quantgemm's texel
// variants: CPU implementations fetch texels vectorised).
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require

#ifdef T1_tex
#define TEX 1
layout(set = 0, binding = 0, rgba32ui) uniform readonly uimageBuffer pa;
layout(set = 0, binding = 1, rgba32ui) uniform readonly uimageBuffer pb;
#endif

const int TM = 4, TN = 4, WM = 8, WN = 8;
const int BM = TM * WM, BN = TN * WN;
layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer Words { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer FBuf { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer HBuf { uint16_t v[]; };

// quantgemm.comp's block; cdt: 1 f32, 3 f16, 4 bf16; out_scale unused.
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t a, b, c, sa, sb;
  int m, n, kw, cdt;
  int sab, sbb, scb, scm, scn; // panel batch strides (words or texels), c strides
  int ssa, ssb, has_sa, has_sb;
  float out_scale;
  int fp8;
};
layout(push_constant) uniform PC { Params p; };

shared float lut_a[256], lut_b[256];

// OCP fp8 (mbits 3: E4M3, 2: E5M2) to f32, exactly (cast.comp's bp_fp82f).
float fp8_value(uint b, int mbits) {
  int ebits = 7 - mbits, bias = (1 << (ebits - 1)) - 1;
  int e = int(b >> mbits) & ((1 << ebits) - 1), m = int(b) & ((1 << mbits) - 1);
  float s = (b & 0x80u) != 0u ? -1.0 : 1.0;
  if (mbits == 3 && e == 15 && m == 7) return BP_NAN;
  if (mbits == 2 && e == 31) return m != 0 ? BP_NAN : s * BP_INF;
  if (e == 0) return s * ldexp(float(m), 1 - bias - mbits);
  return s * ldexp(float((1 << mbits) + m), e - bias - mbits);
}

vec4 dec_a(uint w) {
  return vec4(lut_a[w & 255u], lut_a[(w >> 8) & 255u], lut_a[(w >> 16) & 255u], lut_a[w >> 24]);
}
vec4 dec_b(uint w) {
  return vec4(lut_b[w & 255u], lut_b[(w >> 8) & 255u], lut_b[(w >> 16) & 255u], lut_b[w >> 24]);
}

float scale_of(uint64_t addr, int has, int idx) { return has != 0 ? FBuf(addr).v[idx] : 1.0; }

void store(int gm, int gn, int off, float acc) {
  precise float v = acc * scale_of(p.sa, p.has_sa, gm * p.ssa);
  v = v * scale_of(p.sb, p.has_sb, gn * p.ssb);
  if (p.cdt == 1)
    FBuf(p.c).v[off] = v;
  else
    HBuf(p.c).v[off] = uint16_t(p.cdt == 3 ? bp_f2h(v) : bp_f2bf(v));
}

void main() {
  int tid = int(gl_LocalInvocationID.x), tx = tid % WN, ty = tid / WN;
  for (int e = tid; e < 256; e += 64) {
    lut_a[e] = fp8_value(uint(e), p.fp8 & 7);
    lut_b[e] = fp8_value(uint(e), p.fp8 >> 3);
  }
  barrier();
  int m0 = int(gl_WorkGroupID.y) * BM, n0 = int(gl_WorkGroupID.x) * BN;
  int batch = int(gl_WorkGroupID.z), kw = p.kw;
  // Rows and columns past the edge are clamped, not branched around: their
  // sums are computed from valid data and never stored.
  int ra[TM], cb[TN];
  [[unroll]] for (int i = 0; i < TM; i++) ra[i] = min(m0 + ty + i * WM, p.m - 1) * kw;
  [[unroll]] for (int j = 0; j < TN; j++) cb[j] = min(n0 + tx + j * WN, p.n - 1) * kw;
  vec4 acc[TM];
  [[unroll]] for (int i = 0; i < TM; i++) acc[i] = vec4(0.0);
#ifdef TEX
  const int m = p.m, n = p.n, kt = kw >> 2;
  int ta[TM], tb[TN];
  [[unroll]] for (int i = 0; i < TM; i++) ta[i] = batch * p.sab + ra[i] / kw;
  [[unroll]] for (int j = 0; j < TN; j++) tb[j] = batch * p.sbb + cb[j] / kw;
  for (int t = 0; t < kt; t++) {
    uvec4 bv[TN];
    [[unroll]] for (int j = 0; j < TN; j++) bv[j] = imageLoad(pb, tb[j] + t * n).xyzw;
    [[unroll]] for (int q = 0; q < 4; q++) {
      vec4 bf[TN];
      [[unroll]] for (int j = 0; j < TN; j++) bf[j] = dec_b(bv[j][q]);
      [[unroll]] for (int i = 0; i < TM; i++) {
        vec4 af = dec_a(imageLoad(pa, ta[i] + t * m)[q]);
        acc[i] += vec4(dot(af, bf[0]), dot(af, bf[1]), dot(af, bf[2]), dot(af, bf[3]));
      }
    }
  }
#else
  Words a = Words(p.a + uint64_t(batch) * uint64_t(p.sab) * 4u);
  Words b = Words(p.b + uint64_t(batch) * uint64_t(p.sbb) * 4u);
  for (int w = 0; w < kw; w++) {
    vec4 bf[TN];
    [[unroll]] for (int j = 0; j < TN; j++) bf[j] = dec_b(b.v[cb[j] + w]);
    [[unroll]] for (int i = 0; i < TM; i++) {
      vec4 af = dec_a(a.v[ra[i] + w]);
      acc[i] += vec4(dot(af, bf[0]), dot(af, bf[1]), dot(af, bf[2]), dot(af, bf[3]));
    }
  }
#endif
  int cbase = batch * p.scb;
  [[unroll]] for (int i = 0; i < TM; i++) {
    int gm = m0 + ty + i * WM;
    if (gm >= p.m) break;
    [[unroll]] for (int j = 0; j < TN; j++) {
      int gn = n0 + tx + j * WN;
      if (gn >= p.n) break;
      store(gm, gn, cbase + gm * p.scm + gn * p.scn, acc[i][j]);
    }
  }
}
