#version 460
// cast.comp — y = x converted from T1 to T2 over strided tensors.
// Variants: cast_<src>_<dst> for f32, f16, bf16, i32, u8, i8, e4m3, e5m2
// (the OCP fp8 dtypes). Floats convert through f32 (exact for these
// sources); integer to integer stays integer.
#include "common.glsl"

// i8 and fp8 (ABI 1.5) as bytes, defined here rather than in common.glsl
// since only casts convert them. fp8: docs/ops.md's rules, as
// plugins/cpu/fp8.h: round to nearest even straight from the value (an f32
// holds every source exactly), E4M3 NaN past 464, E5M2 inf from 61440,
// NaN as S.1111.111 / S.11111.10.
uint bp_f2fp8(float v, int mbits) {
  int ebits = 7 - mbits, bias = (1 << (ebits - 1)) - 1;
  uint sign = (floatBitsToUint(v) >> 24) & 0x80u, nan = mbits == 3 ? 0x7Fu : 0x7Eu;
  if (isnan(v)) return sign | nan;
  float a = abs(v);
  if (mbits == 3 ? a > 464.0 : a >= 61440.0) return sign | (mbits == 3 ? nan : 0x7Cu);
  int x;
  frexp(a, x); // a = f * 2^x, f in [0.5, 1)
  int e = x - 1;
  if (a == 0.0 || e < 1 - bias) e = 1 - bias; // subnormal: a count of quanta
  int n = int(roundEven(ldexp(a, mbits - e))); // exact before the rounding
  return sign | uint((e - (1 - bias)) * (1 << mbits) + n); // a carry moves up
}
// The saturating mode (p.op != 0: BP_CAST_SATURATE): where the above
// overflows, infinities included, the largest finite value with its sign;
// NaN stays NaN.
uint bp_f2fp8s(float v, int mbits, int sat) {
  uint code = bp_f2fp8(v, mbits);
  bool over = !isnan(v) && (mbits == 3 ? (code & 0x7Fu) == 0x7Fu : (code & 0x7Cu) == 0x7Cu);
  return sat != 0 && over ? (code & 0x80u) | (mbits == 3 ? 0x7Eu : 0x7Bu) : code;
}
float bp_fp82f(uint b, int mbits) {
  int ebits = 7 - mbits, bias = (1 << (ebits - 1)) - 1;
  int e = int(b >> mbits) & ((1 << ebits) - 1), m = int(b) & ((1 << mbits) - 1);
  float s = (b & 0x80u) != 0u ? -1.0 : 1.0;
  if (mbits == 3 && e == 15 && m == 7) return BP_NAN;
  if (mbits == 2 && e == 31) return m != 0 ? BP_NAN : s * BP_INF;
  if (e == 0) return s * ldexp(float(m), 1 - bias - mbits);
  return s * ldexp(float((1 << mbits) + m), e - bias - mbits);
}
// float -> int8: NaN 0, halves to even, saturating (the ABI's cast rule).
uint bp_f2i8(float x) {
  if (isnan(x)) return 0u;
  return uint(int(roundEven(clamp(x, -128.0, 127.0)))) & 0xffu;
}
int bp_i8(uint b) { return int(b << 24) >> 24; }

#if defined(T1_i8) || defined(T1_e4m3) || defined(T1_e5m2) || defined(T2_i8) || \
    defined(T2_e4m3) || defined(T2_e5m2)
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#endif
#if defined(T1_i8) || defined(T1_e4m3) || defined(T1_e5m2)
BP_DT_u8(1)
#endif
#if defined(T2_i8) || defined(T2_e4m3) || defined(T2_e5m2)
BP_DT_u8(2)
#endif
#if defined(T1_i8)
#define T1_IS_INT 1
#define LOAD1(b, i) float(bp_i8(uint(b.v[i])))
#define LOADI1(b, i) bp_i8(uint(b.v[i]))
#elif defined(T1_e4m3)
#define LOAD1(b, i) bp_fp82f(uint(b.v[i]), 3)
#elif defined(T1_e5m2)
#define LOAD1(b, i) bp_fp82f(uint(b.v[i]), 2)
#endif
#if defined(T2_i8)
#define T2_IS_INT 1
#define STORE2(b, i, x) b.v[i] = uint8_t(bp_f2i8(x))
#define STOREI2(b, i, x) b.v[i] = uint8_t(uint(clamp((x), -128, 127)) & 0xffu)
#elif defined(T2_e4m3)
#define STORE2(b, i, x) b.v[i] = uint8_t(bp_f2fp8s((x), 3, p.op))
#elif defined(T2_e5m2)
#define STORE2(b, i, x) b.v[i] = uint8_t(bp_f2fp8s((x), 2, p.op))
#endif

layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t y, a, b;
  int n, rank, op, binary;
  int shape[BP_MAX_RANK], sy[BP_MAX_RANK], sa[BP_MAX_RANK], sb[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };

void main() {
  T2Buf y = T2Buf(p.y);
  T1Buf x = T1Buf(p.a);
  // Parameters read once, no index arithmetic at rank 1 (see eltwise.comp).
  const int n = p.n, rank = p.rank, sy0 = p.sy[0], sa0 = p.sa[0];
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += step) {
    int oy = i * sy0, ox = i * sa0;
    if (rank != 1) {
      BP_ND_OFFSET(oy, i, rank, p.shape, p.sy);
      BP_ND_OFFSET(ox, i, rank, p.shape, p.sa);
    }
#if defined(T1_IS_INT) && defined(T2_IS_INT)
    STOREI2(y, oy, LOADI1(x, ox));
#else
    STORE2(y, oy, LOAD1(x, ox));
#endif
  }
}
