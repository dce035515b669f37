#version 460
// quantgemm.comp — int8 GEMM over panels packed by quantpack.comp:
// acc[i, j] = sum over words w of dot4(A[b][i][w], B[b][j][w]) in int32
// (wrapping, as the ABI says past k = 2^17), then c by its dtype: i32 acc;
// f32 (float)acc * sa[i] * sb[j]; i8 saturate(rne(that / out_scale)), the
// division in double so that its f32 rounding is the correctly rounded
// one the CPU gives (docs/ops.md: the same bits on every device).
// Variants quantgemm_<dot|wide>_<s8|w>[_<u8i8|i8u8|u8u8>]: dot uses
// OpSDot on packed 4x8-bit words (VK_KHR_shader_integer_dot_product;
// OpUDot, or OpSUDot with the signed operand first, where a or b is u8),
// wide extracts the four bytes, signed or unsigned by their operand's
// dtype, and multiplies; s8 / w say how an i8 c is stored (quant.inc); the
// third part names the dtypes of a and b when either is u8 (i8 x i8
// without it). The panels hold the bytes as they are.
// quantgemm_<dottex|widetex>_<s8|w> read the panels, packed k-major in
// 16-byte texels (quantpack.comp's kmajor), through rgba32ui texel views at
// bindings 0 (a) and 1 (b): CPU implementations turn every storage-buffer
// load into a per-lane loop but fetch texels vectorised, and neighbouring
// invocations read neighbouring texels.
//
// Each workgroup computes a BM x BN tile of c, each invocation a TM x TN
// register tile strided by the thread grid; the operands are read straight
// from the packed panels (contiguous along k), whose rows the caches keep.
#include "common.glsl"
#include "quant.inc"
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : require

#if defined(T1_dottex) || defined(T1_widetex)
#define TEX 1
layout(set = 0, binding = 0, rgba32ui) uniform readonly uimageBuffer pa;
layout(set = 0, binding = 1, rgba32ui) uniform readonly uimageBuffer pb;
#endif
#if defined(T3_u8i8) || defined(T3_u8u8)
#define A_U8 1
#endif
#if defined(T3_i8u8) || defined(T3_u8u8)
#define B_U8 1
#endif

#if defined(T1_dot) || defined(T1_dottex)
#extension GL_EXT_spirv_intrinsics : require
// OpSDot (4450), OpUDot (4451), OpSUDot (4452, its first operand signed,
// the second unsigned), with the PackedVectorFormat4x8Bit operand (0): the
// dot product of the four bytes of a and b.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450) int q_sdot(uint a, uint b, spirv_literal int fmt);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4451) uint q_udot(uint a, uint b, spirv_literal int fmt);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4452) int q_sudot(uint a, uint b, spirv_literal int fmt);
#if defined(A_U8) && defined(B_U8)
int dot4(uint a, uint b) { return int(q_udot(a, b, 0)); }
#elif defined(A_U8)
int dot4(uint a, uint b) { return q_sudot(b, a, 0); }
#elif defined(B_U8)
int dot4(uint a, uint b) { return q_sudot(a, b, 0); }
#else
int dot4(uint a, uint b) { return q_sdot(a, b, 0); }
#endif
#else
#ifdef A_U8
#define A_BYTE q_ubyte
#else
#define A_BYTE q_byte
#endif
#ifdef B_U8
#define B_BYTE q_ubyte
#else
#define B_BYTE q_byte
#endif
int dot4(uint a, uint b) {
  return A_BYTE(a, 0) * B_BYTE(b, 0) + A_BYTE(a, 1) * B_BYTE(b, 1) + A_BYTE(a, 2) * B_BYTE(b, 2) +
         A_BYTE(a, 3) * B_BYTE(b, 3);
}
#endif

const int TM = 4, TN = 4, WM = 8, WN = 8;
const int BM = TM * WM, BN = TN * WN;
layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer Words { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer IBuf { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer FBuf { float v[]; };

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t a, b, c, sa, sb;
  int m, n, kw, cdt; // cdt: 0 i32, 1 f32, 2 i8
  int sab, sbb, scb, scm, scn; // panel batch strides (words), c strides
  int ssa, ssb, has_sa, has_sb;
  float out_scale;
  int pad_;
};
layout(push_constant) uniform PC { Params p; };

float scale_of(uint64_t addr, int has, int idx) { return has != 0 ? FBuf(addr).v[idx] : 1.0; }

void store(int gm, int gn, int off, int acc) {
  if (p.cdt == 0) {
    IBuf(p.c).v[off] = acc;
    return;
  }
  precise float v = float(acc) * scale_of(p.sa, p.has_sa, gm * p.ssa);
  v = v * scale_of(p.sb, p.has_sb, gn * p.ssb);
  if (p.cdt == 1) {
    FBuf(p.c).v[off] = v;
    return;
  }
  float q = float(double(v) / double(p.out_scale));
  q_st8(p.c + uint64_t(off), q_sat_i8(q));
}

void main() {
  int tid = int(gl_LocalInvocationID.x), tx = tid % WN, ty = tid / WN;
  int m0 = int(gl_WorkGroupID.y) * BM, n0 = int(gl_WorkGroupID.x) * BN;
  int batch = int(gl_WorkGroupID.z), kw = p.kw;
  Words a = Words(p.a + uint64_t(batch) * uint64_t(p.sab) * 4u);
  Words b = Words(p.b + uint64_t(batch) * uint64_t(p.sbb) * 4u);
  // Rows and columns past the edge are clamped, not branched around: their
  // sums are computed from valid data and never stored.
  int ra[TM], cb[TN];
  [[unroll]] for (int i = 0; i < TM; i++) ra[i] = min(m0 + ty + i * WM, p.m - 1) * kw;
  [[unroll]] for (int j = 0; j < TN; j++) cb[j] = min(n0 + tx + j * WN, p.n - 1) * kw;
  ivec4 acc[TM];
  [[unroll]] for (int i = 0; i < TM; i++) acc[i] = ivec4(0);
#ifdef TEX
  // Texel t of a row: (batch * kw / 4 + t) * rows + row; strides sab, sbb
  // count texels here.
  const int m = p.m, n = p.n, kt = kw >> 2;
  int ta[TM], tb[TN];
  [[unroll]] for (int i = 0; i < TM; i++) ta[i] = batch * p.sab + ra[i] / kw;
  [[unroll]] for (int j = 0; j < TN; j++) tb[j] = batch * p.sbb + cb[j] / kw;
  for (int t = 0; t < kt; t++) {
    uvec4 bv[TN];
    [[unroll]] for (int j = 0; j < TN; j++) bv[j] = imageLoad(pb, tb[j] + t * n).xyzw;
    [[unroll]] for (int i = 0; i < TM; i++) {
      uvec4 av = imageLoad(pa, ta[i] + t * m);
      ivec4 s = ivec4(0);
      [[unroll]] for (int q = 0; q < 4; q++)
        s += ivec4(dot4(av[q], bv[0][q]), dot4(av[q], bv[1][q]), dot4(av[q], bv[2][q]),
                   dot4(av[q], bv[3][q]));
      acc[i] += s;
    }
  }
#else
  for (int w = 0; w < kw; w++) {
    uint bw[TN];
    [[unroll]] for (int j = 0; j < TN; j++) bw[j] = b.v[cb[j] + w];
    [[unroll]] for (int i = 0; i < TM; i++) {
      uint aw = a.v[ra[i] + w];
      acc[i] += ivec4(dot4(aw, bw[0]), dot4(aw, bw[1]), dot4(aw, bw[2]), dot4(aw, bw[3]));
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
