#version 460
// gemm.comp — C[b] = act(alpha * A[b] · B[b] + beta * C[b] + bias[b]) over
// arbitrary strides (transposes are strides; the bias broadcasts by stride
// 0), f32 accumulation. Variants: gemm_<dt>.
//
// Each workgroup computes a BM x BN tile of C, staging BK-deep slices of A
// and B in shared memory; each invocation keeps a TM x TN register tile
// whose rows and columns are strided by the thread grid, so global stores
// and shared reads of neighbouring invocations are adjacent. Tile sizes and
// the load order (which of A's / B's axes is contiguous) are specialization
// constants, so one SPIR-V module serves every layout and tile choice.
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require

#ifdef T2_direct
// A fixed size: llvmpipe generates much slower code for a workgroup size
// it only learns at specialization. The host uses tile 16 x 64 here.
layout(local_size_x = 64) in;
#else
layout(local_size_x_id = 0) in;
#endif
layout(constant_id = 1) const int BM = 64;
layout(constant_id = 2) const int BN = 64;
layout(constant_id = 3) const int BK = 16;
// The register tile is fixed at compile time: loops over it must unroll
// so the accumulators stay in registers (lavapipe turns indexed private
// arrays into memory gathers otherwise).
const int TM = 4, TN = 4;
layout(constant_id = 4) const int UNUSED_TM = 4;
layout(constant_id = 5) const int UNUSED_TN = 4;
// bit 0: A is contiguous along k (else along m); bit 1: B along n (else k)
layout(constant_id = 6) const int LAYOUT = 1;
// The epilogue's activation, a bp_unary_op_t code (-1: none); a constant,
// so the op switch folds away.
layout(constant_id = 7) const int ACT = -1;

// Variant gemm_<dt>_direct (-DT2_direct): no shared memory and no
// barriers, operands read straight from global memory. CPU implementations
// (lavapipe) run a shader containing barriers as coroutines and let caches
// do the staging, so this variant is the fast one there.
#ifdef T2_direct
const bool USE_SHARED = false;
#else
const bool USE_SHARED = true;
#endif

const int WM = BM / TM, WN = BN / TN, THREADS = WM * WN;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t a, b, c;
  int m, n, k, beta_zero;
  int sab, sam, sak, sbb, sbk, sbn, scb, scm, scn;
  float alpha, beta;
  int pad0;
  uint64_t bias; // c's dtype, element (b, i, j) at b * sxb + i * sxm + j * sxn
  int has_bias, sxb, sxm, sxn;
};
layout(push_constant) uniform PC { Params p; };

#include "mathfn.glsl"

#ifndef T2_direct
shared float As[BK * BM]; // As[kk * BM + mm]
shared float Bs[BK * BN]; // Bs[kk * BN + nn]

void load_tiles(T1Buf a, T1Buf b, int m0, int n0, int k0, int tid) {
  for (int idx = tid; idx < BM * BK; idx += THREADS) {
    int mm, kk;
    if ((LAYOUT & 1) != 0) { kk = idx % BK; mm = idx / BK; }
    else { mm = idx % BM; kk = idx / BM; }
    int gm = m0 + mm, gk = k0 + kk;
    As[kk * BM + mm] = gm < p.m && gk < p.k ? LOAD1(a, gm * p.sam + gk * p.sak) : 0.0;
  }
  for (int idx = tid; idx < BN * BK; idx += THREADS) {
    int nn, kk;
    if ((LAYOUT & 2) != 0) { nn = idx % BN; kk = idx / BN; }
    else { kk = idx % BK; nn = idx / BK; }
    int gn = n0 + nn, gk = k0 + kk;
    Bs[kk * BN + nn] = gn < p.n && gk < p.k ? LOAD1(b, gk * p.sbk + gn * p.sbn) : 0.0;
  }
}
#endif

void main() {
  int tid = int(gl_LocalInvocationID.x);
  int tx = tid % WN, ty = tid / WN;
  int m0 = int(gl_WorkGroupID.y) * BM, n0 = int(gl_WorkGroupID.x) * BN;
  int batch = int(gl_WorkGroupID.z);
  T1Buf a = T1Buf(p.a + uint64_t(batch * p.sab) * uint64_t(SIZE1));
  T1Buf b = T1Buf(p.b + uint64_t(batch * p.sbb) * uint64_t(SIZE1));
  T1Buf c = T1Buf(p.c + uint64_t(batch * p.scb) * uint64_t(SIZE1));
  T1Buf bias = T1Buf(p.bias + uint64_t(batch * p.sxb) * uint64_t(SIZE1));

  vec4 acc[TM];
  [[unroll]] for (int i = 0; i < TM; i++) acc[i] = vec4(0.0);
#ifndef T2_direct
  if (USE_SHARED) {
    for (int k0 = 0; k0 < p.k; k0 += BK) {
      load_tiles(a, b, m0, n0, k0, tid);
      barrier();
      for (int kk = 0; kk < BK; kk++) {
        vec4 rb = vec4(Bs[kk * BN + tx], Bs[kk * BN + tx + WN],
                       Bs[kk * BN + tx + 2 * WN], Bs[kk * BN + tx + 3 * WN]);
        [[unroll]] for (int i = 0; i < TM; i++)
          acc[i] = fma(vec4(As[kk * BM + ty + i * WM]), rb, acc[i]);
      }
      barrier();
    }
  }
#else
  {
    // Rows and columns past the edge are clamped, not branched around:
    // their results are computed from valid data and never stored.
    int ra[TM], cb[TN];
    [[unroll]] for (int i = 0; i < TM; i++) ra[i] = min(m0 + ty + i * WM, p.m - 1) * p.sam;
    [[unroll]] for (int j = 0; j < TN; j++) cb[j] = min(n0 + tx + j * WN, p.n - 1) * p.sbn;
    for (int k = 0; k < p.k; k++) {
      int ak = k * p.sak, bk = k * p.sbk;
      vec4 rb = vec4(LOAD1(b, bk + cb[0]), LOAD1(b, bk + cb[1]),
                     LOAD1(b, bk + cb[2]), LOAD1(b, bk + cb[3]));
      [[unroll]] for (int i = 0; i < TM; i++)
        acc[i] = fma(vec4(LOAD1(a, ra[i] + ak)), rb, acc[i]);
    }
  }
#endif
  [[unroll]] for (int i = 0; i < TM; i++) {
    int gm = m0 + ty + i * WM;
    if (gm >= p.m) break;
    [[unroll]] for (int j = 0; j < TN; j++) {
      int gn = n0 + tx + j * WN;
      if (gn >= p.n) break;
      int oc = gm * p.scm + gn * p.scn;
      float r = p.alpha * acc[i][j];
      // beta == 0 never reads C, so NaN there does not propagate
      if (p.beta_zero == 0) r += p.beta * LOAD1(c, oc);
      if (p.has_bias != 0) r += LOAD1(bias, gm * p.sxm + gn * p.sxn);
      if (ACT >= 0) r = bp_unary(ACT, r);
      STORE1(c, oc, r);
    }
  }
}
