#version 460
// adam.comp — one Adam / AdamW step (PyTorch's formula) over one parameter
// tensor; param, exp_avg and exp_avg_sq are updated in place. The bias
// corrections are computed by the host in double. Variants: adam_<dtype>.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t prm, grad, m, v;
  int n, rank, adamw, pad;
  float lr, beta1, beta2, eps, wd, step_size, bc2_sqrt, pad2;
  int shape[BP_MAX_RANK], sp[BP_MAX_RANK], sg[BP_MAX_RANK], sm[BP_MAX_RANK], sv[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };

void main() {
  T1Buf P = T1Buf(p.prm), G = T1Buf(p.grad), M = T1Buf(p.m), V = T1Buf(p.v);
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += step) {
    int op, og, om, ov;
    BP_ND_OFFSET(op, i, p.rank, p.shape, p.sp);
    BP_ND_OFFSET(og, i, p.rank, p.shape, p.sg);
    BP_ND_OFFSET(om, i, p.rank, p.shape, p.sm);
    BP_ND_OFFSET(ov, i, p.rank, p.shape, p.sv);
    float w = LOAD1(P, op), g = LOAD1(G, og);
    if (p.adamw != 0) w *= 1.0 - p.lr * p.wd;
    else g += p.wd * w;
    float m = p.beta1 * LOAD1(M, om) + (1.0 - p.beta1) * g;
    float v = p.beta2 * LOAD1(V, ov) + (1.0 - p.beta2) * g * g;
    w -= p.step_size * m / (sqrt(v) / p.bc2_sqrt + p.eps);
    STORE1(M, om, m);
    STORE1(V, ov, v);
    STORE1(P, op, w);
  }
}
