#version 460
// quantdeq.comp — q8_0 / q4_0 (one invocation per block) or i8 / u8 with f32
// scales (one per element) to f32/f16/bf16: the f32 product q * scale,
// rounded once to the output's dtype. Variants quantdeq_<dt>_<s8|w> (dt:
// the float side; s8 / w: how i8 bytes are read, quant.inc).
#define Q_CONVERT
#include "common.glsl"
#include "quant.inc"

layout(local_size_x = 64) in;

void block(T1Buf y, int of, uint64_t blk) {
  float d = bp_h2f(q_ld16(blk));
  for (int j = 0; j < 32; j++) {
    int q;
    if (p.mode == 0) q = int(q_ld8(blk + 2u + uint64_t(j))) << 24 >> 24;
    else q = int((q_ld8(blk + 2u + uint64_t(j & 15)) >> (j < 16 ? 0 : 4)) & 15u) - 8;
    precise float v = float(q) * d;
    STORE1(y, of + j * p.fs, v);
  }
}

void main() {
  T1Buf y = T1Buf(p.f);
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += stride) {
    int of, oq, os;
    Q_ND_OFFSET3(of, oq, os, i, p.rank, p.shape, p.sf, p.sq, p.ss);
    if (p.mode < 2) {
      block(y, of, q_block_addr(oq));
    } else {
      int q = int(q_ld8(p.q + uint64_t(oq)));
      if (p.mode == 2) q = q << 24 >> 24; // i8; u8 (mode 3) as read
      precise float v = float(q) * QScale(p.s).v[os];
      STORE1(y, of, v);
    }
  }
}
