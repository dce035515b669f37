#version 460
// quantize.comp — f32/f16/bf16 to q8_0 / q4_0 (one invocation per block,
// ggml's quantize_row_q{8,4}_0_ref rounding, so the bytes equal the CPU's)
// or to i8 / u8 with f32 scales (one per element: saturate(rne(x /
// scale)) to the dtype's range).
// Divisions are done in double and rounded once to f32, which is the
// correctly rounded f32 quotient the CPU computes. Variants
// quantize_<dt>_<s8|w> (dt: the float side; s8 / w: how i8 bytes are
// written, quant.inc).
#define Q_CONVERT
#include "common.glsl"
#include "quant.inc"
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : require

layout(local_size_x = 64) in;

float fdiv(float a, float b) { return float(double(a) / double(b)); }

// roundf: halves away from zero (t - trunc(t) is exact).
float round_away(float t) {
  float r = trunc(t);
  return abs(t - r) >= 0.5 ? r + sign(t) : r;
}

void q8_0_block(T1Buf x, int of, uint64_t blk) {
  float v[32], amax = 0.0;
  for (int j = 0; j < 32; j++) {
    v[j] = LOAD1(x, of + j * p.fs);
    if (abs(v[j]) > amax) amax = abs(v[j]); // fmaxf: a NaN is skipped
  }
  float d = fdiv(amax, 127.0), id = d != 0.0 ? fdiv(1.0, d) : 0.0;
  q_st16(blk, bp_f2h(d));
  for (int h = 0; h < 16; h++) {
    uint pair = 0u;
    for (int j = 0; j < 2; j++) {
      precise float t = v[2 * h + j] * id;
      int qi = isnan(t) ? 0 : int(round_away(t));
      pair |= (uint(qi) & 0xffu) << (8 * j);
    }
    q_st16(blk + 2u + uint64_t(2 * h), pair);
  }
}

// A nibble: (int8_t)(t + 8.5f) capped at 15, NaN giving 0 as the CPU's
// conversion does.
uint q4_nibble(float t) {
  precise float u = t + 8.5;
  return isnan(u) ? 0u : uint(min(int(u), 15));
}

void q4_0_block(T1Buf x, int of, uint64_t blk) {
  float v[32], amax = 0.0, mx = 0.0;
  for (int j = 0; j < 32; j++) {
    v[j] = LOAD1(x, of + j * p.fs);
    if (amax < abs(v[j])) {
      amax = abs(v[j]);
      mx = v[j];
    }
  }
  float d = fdiv(mx, -8.0), id = d != 0.0 ? fdiv(1.0, d) : 0.0;
  q_st16(blk, bp_f2h(d));
  for (int h = 0; h < 8; h++) {
    uint pair = 0u;
    for (int j = 0; j < 2; j++) {
      int l = 2 * h + j;
      precise float x0 = v[l] * id, x1 = v[16 + l] * id;
      pair |= (q4_nibble(x0) | (q4_nibble(x1) << 4)) << (8 * j);
    }
    q_st16(blk + 2u + uint64_t(2 * h), pair);
  }
}

void main() {
  T1Buf x = T1Buf(p.f);
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += stride) {
    int of, oq, os;
    Q_ND_OFFSET3(of, oq, os, i, p.rank, p.shape, p.sf, p.sq, p.ss);
    if (p.mode == 0) q8_0_block(x, of, q_block_addr(oq));
    else if (p.mode == 1) q4_0_block(x, of, q_block_addr(oq));
    else {
      float v = fdiv(LOAD1(x, of), QScale(p.s).v[os]);
      q_st8(p.q + uint64_t(oq), p.mode == 3 ? q_sat_u8(v) : q_sat_i8(v));
    }
  }
}
