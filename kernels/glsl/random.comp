#version 460
// random.comp — Philox4x32-10 random fill, a line-by-line port of
// kernels/common/bp_philox.h (normative; read it first), so every backend
// produces the same bits. Variants: random_<dt> for f32, f16, bf16, f64.
//
// Every float operation below goes through bp_fmul / bp_fadd / bp_fsub,
// whose result is `precise`: SPIR-V NoContraction, which stops glslang,
// spirv-opt and the driver (Mesa marks such ops exact) from fusing a
// multiply and an add into an FMA — that single rounding would change bits.
#include "common.glsl"

layout(local_size_x = 256) in;

#ifdef T1_f64
layout(buffer_reference, std430, buffer_reference_align = 8) buffer YBuf { double v[]; };
#else
#define YBuf T1Buf
#endif

// Matches random_params_t in plugins/vulkan/ops_data.c.
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y, seed, offset;
  uint64_t a_bits, b_bits; // a, b as IEEE double bits (f64 variant)
  float fa, fb;            // (float)a, (float)b, rounded on the host
  int n, rank, normal, pad;
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };

const uint M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
const uint W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
const float P2M24 = 5.9604644775390625e-08; // 2^-24, exact

float bp_fmul(float x, float y) { precise float r = x * y; return r; }
float bp_fadd(float x, float y) { precise float r = x + y; return r; }
float bp_fsub(float x, float y) { precise float r = x - y; return r; }

uvec4 philox_element(uint64_t seed, uint64_t offset, uint idx) {
  // The kernels index with int32, so hi32(i) is always 0.
  uvec4 c = uvec4(idx, 0u, uint(offset), uint(offset >> 32));
  uint k0 = uint(seed), k1 = uint(seed >> 32);
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += W0;
      k1 += W1;
    }
    uint hi0, lo0, hi1, lo1;
    umulExtended(M0, c.x, hi0, lo0);
    umulExtended(M1, c.z, hi1, lo1);
    c = uvec4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
  }
  return c;
}

float det_logf(float x) {
  uint bits = floatBitsToUint(x);
  int e = int((bits >> 23) & 0xffu) - 127;
  uint mant = bits & 0x7fffffu;
  uint mexp = 0x3f800000u;
  if (mant > 0x3504f3u) {
    mexp = 0x3f000000u;
    e += 1;
  }
  float m = uintBitsToFloat(mexp | mant);
  float f = bp_fsub(m, 1.0);
  float r = 0.06769023835659027;
  r = bp_fadd(bp_fmul(r, f), -0.11557287722826004);
  r = bp_fadd(bp_fmul(r, f), 0.11812136322259903);
  r = bp_fadd(bp_fmul(r, f), -0.12420814484357834);
  r = bp_fadd(bp_fmul(r, f), 0.14232318103313446);
  r = bp_fadd(bp_fmul(r, f), -0.1666753739118576);
  r = bp_fadd(bp_fmul(r, f), 0.20001447200775146);
  r = bp_fadd(bp_fmul(r, f), -0.25000011920928955);
  r = bp_fadd(bp_fmul(r, f), 0.33333322405815125);
  r = bp_fadd(bp_fmul(r, f), -0.5);
  float fe = float(e);
  float lo = bp_fadd(bp_fmul(bp_fmul(f, f), r), bp_fmul(fe, 1.4286068203094172e-06));
  return bp_fadd(bp_fadd(f, lo), bp_fmul(fe, 0.693145751953125));
}

float det_sqrtf(float x) {
  float y = uintBitsToFloat(0x5f3759dfu - (floatBitsToUint(x) >> 1));
  float hx = bp_fmul(x, 0.5);
  for (int i = 0; i < 4; i++) {
    float t = bp_fmul(bp_fmul(hx, y), y);
    y = bp_fmul(y, bp_fsub(1.5, t));
  }
  return bp_fmul(x, y);
}

float det_cos2pif(float u) {
  float sign = 1.0;
  if (u > 0.5)
    u = bp_fsub(1.0, u);
  if (u > 0.25) {
    u = bp_fsub(0.5, u);
    sign = -1.0;
  }
  bool use_sin = u > 0.125;
  float w = use_sin ? bp_fsub(0.25, u) : u;
  float s = bp_fmul(w, w);
  float q;
  if (use_sin) {
    q = 41.47283172607422;
    q = bp_fadd(bp_fmul(q, s), -76.69786834716797);
    q = bp_fadd(bp_fmul(q, s), 81.6052017211914);
    q = bp_fadd(bp_fmul(q, s), -41.34170150756836);
    q = bp_fadd(bp_fmul(q, s), 6.2831854820251465);
    q = bp_fmul(q, w);
  } else {
    q = 59.22016906738281;
    q = bp_fadd(bp_fmul(q, s), -85.4428482055664);
    q = bp_fadd(bp_fmul(q, s), 64.93931579589844);
    q = bp_fadd(bp_fmul(q, s), -19.739208221435547);
    q = bp_fadd(bp_fmul(q, s), 1.0);
  }
  return bp_fmul(sign, q);
}

// The largest float below x (bp_philox_below_f32).
float below_f32(float x) {
  uint u = floatBitsToUint(x);
  if ((u & 0x7fffffffu) == 0u) return uintBitsToFloat(0x80000001u);
  return uintBitsToFloat((u & 0x80000000u) != 0u ? u + 1u : u - 1u);
}

#ifdef T1_f64
// The largest double below x (bp_philox_below_f64).
double below_f64(double x) {
  uint64_t u = doubleBitsToUint64(x);
  if ((u & 0x7fffffffffffffffUL) == 0UL) return uint64BitsToDouble(0x8000000000000001UL);
  return uint64BitsToDouble((u & 0x8000000000000000UL) != 0UL ? u + 1UL : u - 1UL);
}
#endif

float normal_z(uvec4 r) {
  float u1 = bp_fmul(float((r.x >> 8) + 1u), P2M24);
  float u2 = bp_fmul(float(r.y >> 8), P2M24);
  float rad = det_sqrtf(bp_fmul(-2.0, det_logf(u1)));
  return bp_fmul(rad, det_cos2pif(u2));
}

void main() {
  YBuf y = YBuf(p.y);
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += step) {
    int oy;
    BP_ND_OFFSET(oy, i, p.rank, p.shape, p.sy);
    uvec4 r = philox_element(p.seed, p.offset, uint(i));
#ifdef T1_f64
    double a = uint64BitsToDouble(p.a_bits), b = uint64BitsToDouble(p.b_bits);
    precise double v;
    if (p.normal != 0) {
      v = a + b * double(normal_z(r));
    } else {
      uint64_t bits = (uint64_t(r.x) << 21) | uint64_t(r.y >> 11);
      double u = double(bits) * 1.1102230246251565404236316680908203125e-16LF;
      v = a + (b - a) * u;
      if (a < b && v >= b) // half-open: the largest double below b
        v = below_f64(b);
    }
    y.v[oy] = v;
#else
    float v;
    if (p.normal != 0) {
      v = bp_fadd(p.fa, bp_fmul(p.fb, normal_z(r)));
    } else {
      float u = bp_fmul(float(r.x >> 8), P2M24);
      v = bp_fadd(p.fa, bp_fmul(bp_fsub(p.fb, p.fa), u));
      if (p.fa < p.fb && v >= p.fb) // half-open: the largest float below fb
        v = below_f32(p.fb);
#if defined(T1_f16) || defined(T1_bf16)
      // bp_philox_uniform_16: rounded here (common.glsl's bit conversions),
      // one step down when that reached fb, stored as bits.
#ifdef T1_f16
      uint h = bp_f2h(v);
      float hv = bp_h2f(h);
#else
      uint h = bp_f2bf(v);
      float hv = bp_bf2f(h);
#endif
      if (p.fa < p.fb && hv >= p.fb)
        h = (h & 0x7fffu) == 0u ? 0x8001u : ((h & 0x8000u) != 0u ? h + 1u : h - 1u);
      y.v[oy] = uint16_t(h);
      continue;
#endif
    }
    STORE1(y, oy, v);
#endif
  }
}
