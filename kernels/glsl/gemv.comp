#version 460
// gemv.comp — skinny GEMM, C[m][n] = alpha A[m][k] B[k][n] + beta C with
// m <= 16 (a few tokens through a layer; m = 1 is the matrix-vector
// product), for CPU implementations (lavapipe). One invocation owns four
// columns of C and keeps their m rows of sums, walking B once: B, the big
// operand, is read exactly once and never packed. Loads go through texel
// views, the kind llvmpipe vectorises (docs/backend-vulkan.md): A packed
// k-major in rgba32f (texel r * kq + g holds A[r][4g .. 4g + 3], zero past
// k; gemmpack.comp), B (f32) as rgba32f when its rows are contiguous and
// 16-byte aligned (VEC: one load per four columns), else as r32f (four
// loads, any strides). C is written through its buffer address.
// Variants gemv_<dt> (C's dtype); specialization constants: 0 MB (m
// rounded up to a multiple of 4; 1 for m = 1), 1 VEC, 2 ACT (the epilogue's activation,
// a bp_unary_op_t code, -1: none).
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 64) in;
layout(constant_id = 0) const int MB = 4;
layout(constant_id = 1) const int VEC = 0;
layout(constant_id = 2) const int ACT = -1;
layout(set = 0, binding = 0, rgba32f) uniform readonly imageBuffer av;
layout(set = 0, binding = 1, r32f) uniform readonly imageBuffer bv;
layout(set = 0, binding = 2, rgba32f) uniform readonly imageBuffer bv4;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t c;
  int m, n, k, kq, sbb, sbk, sbn, shift, pab, scb, scm, scn, beta_zero;
  float alpha, beta;
  int pad0;
  uint64_t bias; // c's dtype, element (b, r, j) at b * sxb + r * sxm + j * sxn
  int has_bias, sxb, sxm, sxn;
};
layout(push_constant) uniform PC { Params p; };

#include "mathfn.glsl"

// Four columns of B at row offset off (elements).
vec4 load_b(ivec4 col, int off) {
  if (VEC != 0)
    return imageLoad(bv4, (col.x + off) / 4);
  return vec4(imageLoad(bv, col.x + off).x, imageLoad(bv, col.y + off).x,
              imageLoad(bv, col.z + off).x, imageLoad(bv, col.w + off).x);
}

void main() {
  // Parameters read once: every buffer-address load is a per-lane loop.
  const int m = p.m, n = p.n, k = p.k, kq = p.kq, sbk = p.sbk, sbn = p.sbn;
  const int j0 = 4 * int(gl_GlobalInvocationID.x), b = int(gl_WorkGroupID.z);
  if (j0 >= n)
    return;
  const int bb = p.shift + b * p.sbb, abase = b * p.pab;
  // columns past n read column n - 1 again and are never stored
  ivec4 col = min(ivec4(j0, j0 + 1, j0 + 2, j0 + 3), ivec4(n - 1)) * sbn + bb;
  vec4 acc[MB];
  [[unroll]] for (int r = 0; r < MB; r++) acc[r] = vec4(0.0);
  // Whole groups of four k first, then the tail: no early exit inside the
  // unrolled loops, so every array index is a constant.
  const int kfull = k / 4;
  for (int g = 0; g < kfull; g++) {
    vec4 a[MB];
    [[unroll]] for (int r = 0; r < MB; r++) a[r] = imageLoad(av, abase + r * kq + g);
    [[unroll]] for (int e = 0; e < 4; e++) {
      vec4 x = load_b(col, (4 * g + e) * sbk);
      [[unroll]] for (int r = 0; r < MB; r++) acc[r] += a[r][e] * x;
    }
  }
  if (kfull < kq) {
    vec4 a[MB];
    [[unroll]] for (int r = 0; r < MB; r++) a[r] = imageLoad(av, abase + r * kq + kfull);
    [[unroll]] for (int e = 0; e < 4; e++) {
      // past k, A's panel holds zeros: load a valid row of B instead
      vec4 x = load_b(col, min(4 * kfull + e, k - 1) * sbk);
      [[unroll]] for (int r = 0; r < MB; r++) acc[r] += a[r][e] * x;
    }
  }
  T1Buf c = T1Buf(p.c);
  const float alpha = p.alpha, beta = p.beta;
  const bool bz = p.beta_zero != 0;
  const int cb = b * p.scb, scm = p.scm, scn = p.scn;
  const bool has_bias = p.has_bias != 0;
  const int sxm = p.sxm, sxn = p.sxn;
  T1Buf bias = T1Buf(p.bias + uint64_t(b * p.sxb) * uint64_t(SIZE1));
  // Loops over constants only (MB is one once specialised): a register
  // array indexed by a run-time value would live in memory on llvmpipe.
  [[unroll]] for (int q = 0; q < 4; q++)
    [[unroll]] for (int r = 0; r < MB; r++)
      if (r < m && j0 + q < n) {
        float v = alpha * acc[r][q];
        int o = cb + r * scm + (j0 + q) * scn;
        if (!bz)
          v += beta * LOAD1(c, o);
        if (has_bias)
          v += LOAD1(bias, r * sxm + (j0 + q) * sxn);
        if (ACT >= 0)
          v = bp_unary(ACT, v);
        STORE1(c, o, v);
      }
}
