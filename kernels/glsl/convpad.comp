#version 460
// convpad.comp — the zero-padded f32 copy of one image that conv2d's
// implicit GEMM (gemmtex_<dt>_<tile>_conv, plugins/vulkan/ops_dnn_conv.c)
// reads in place: dst = [C][H + 2 ph][W + 2 pw] flattened, x in the middle,
// zero around it, so the GEMM's loads need no bounds checks. It is the
// image plus its border, where im2col (convpack.comp) writes every input
// pixel R·S times. One invocation writes one vec4 texel (4 consecutive
// elements); neighbouring invocations walk x's rows.
// Variants convpad_<dt>, convpad_f32_tex.
#include "common.glsl"

layout(local_size_x = 64) in;
layout(set = 0, binding = 0, rgba32f) uniform writeonly imageBuffer dst;
#ifdef T2_tex
// convpad_f32_tex: x read through an r32f texel view (a gather on lavapipe
// instead of a per-lane loop); `shift` is the image's element 0 in it.
layout(set = 0, binding = 1, r32f) uniform readonly imageBuffer srcv;
#define SRC(i) imageLoad(srcv, shift + (i)).x
#else
#define SRC(i) LOAD1(X, i)
#endif

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t x;                   // image n, channel 0
  int C, H, W, ph, pw, sc, sy, sx; // x's channels, size, padding, strides
  int texels, shift;            // dst's texels; x's element 0 in srcv
};
layout(push_constant) uniform PC { Params p; };

void main() {
  T1Buf X = T1Buf(p.x);
  // Parameters read once (see gemmtex.comp).
  const int C = p.C, H = p.H, W = p.W, ph = p.ph, pw = p.pw;
  const int sc = p.sc, sy = p.sy, sx = p.sx, texels = p.texels, shift = p.shift;
  const int Wp = W + 2 * pw, plane = (H + 2 * ph) * Wp;
  for (int idx = int(gl_GlobalInvocationID.x); idx < texels;
       idx += int(gl_NumWorkGroups.x) * 64) {
    vec4 v = vec4(0.0);
    for (int e = 0; e < 4; e++) {
      int el = 4 * idx + e, c = el / plane, yx = el % plane;
      int y = yx / Wp - ph, x = yx % Wp - pw;
      if (c < C && y >= 0 && y < H && x >= 0 && x < W) v[e] = SRC(c * sc + y * sy + x * sx);
    }
    imageStore(dst, idx, v);
  }
}
