#version 460
// bnorm.comp — inference batch norm over channel axis 1:
// y = (x - mean[c]) * rsqrt(var[c] + eps) * scale[c] + bias[c].
// x and y walk the same strided index space; c comes from the logical
// row-major index. Variants: bnorm_<dtype>.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t x, y, mean, var, scale, bias;
  int n, rank, C, inner;
  int smean, svar, sscale, sbias;
  float eps, pad;
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK], sx[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };

void main() {
  T1Buf x = T1Buf(p.x), y = T1Buf(p.y);
  T1Buf mean = T1Buf(p.mean), var = T1Buf(p.var), sc = T1Buf(p.scale), bi = T1Buf(p.bias);
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += step) {
    int oy, ox;
    BP_ND_OFFSET(oy, i, p.rank, p.shape, p.sy);
    BP_ND_OFFSET(ox, i, p.rank, p.shape, p.sx);
    int c = (i / p.inner) % p.C;
    float inv = inversesqrt(LOAD1(var, c * p.svar) + p.eps);
    float v = (LOAD1(x, ox) - LOAD1(mean, c * p.smean)) * inv;
    STORE1(y, oy, v * LOAD1(sc, c * p.sscale) + LOAD1(bi, c * p.sbias));
  }
}
