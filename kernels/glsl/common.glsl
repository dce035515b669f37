// common.glsl — included by every kernel in this folder.
//
// Kernels reach memory through buffer device addresses: the only push
// constant is the address of a parameter block written by the host, and
// tensors are uint64 addresses inside it. A variant of a kernel is compiled
// with -DT1_<dtype> (and -DT2_<dtype> for a second dtype), which defines
// T1 / T2 (element storage type), LOAD1 / LOAD2 (to float) and STORE1 /
// STORE2 (from float), plus the buffer types T1Buf / T2Buf.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

#define BP_MAX_RANK 8
#define BP_NAN uintBitsToFloat(0x7fc00000u)
#define BP_INF uintBitsToFloat(0x7f800000u)

// f16 <-> f32 by bit manipulation: exact, round to nearest even, denormals
// kept, independent of the driver's conversion rounding and denormal mode.
float bp_h2f(uint h) {
  uint s = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 31u)
    return uintBitsToFloat(s | 0x7f800000u | (m << 13) | (m != 0u ? 0x400000u : 0u));
  if (e == 0u) {
    float v = float(m) * 5.9604644775390625e-8;
    return s != 0u ? -v : v;
  }
  return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13));
}

uint bp_f2h(float f) {
  uint x = floatBitsToUint(f);
  uint s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u)
    return s | 0x7e00u | ((a >> 13) & 0x3ffu);
  if (a >= 0x477ff000u) // rounds to at least 65520: Inf
    return s | 0x7c00u;
  if (a < 0x38800000u) { // below 2^-14: a half denormal
    // exact scaling by 2^24 then one rounding to an integer
    float v = uintBitsToFloat(a) * 16777216.0;
    return s | uint(roundEven(v));
  }
  return s | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13);
}

float bp_bf2f(uint h) {
  uint b = h << 16;
  if ((b & 0x7fffffffu) > 0x7f800000u)
    b |= 0x400000u;
  return uintBitsToFloat(b);
}

uint bp_f2bf(float f) {
  uint x = floatBitsToUint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (x >> 16) | 0x40u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

// Per-dtype storage, expanded once for slot 1 and once for slot 2.
#define BP_DT_f32(N) \
  layout(buffer_reference, std430, buffer_reference_align = 4) buffer T##N##Buf { float v[]; };
#define BP_DT_f16(N) \
  layout(buffer_reference, std430, buffer_reference_align = 2) buffer T##N##Buf { uint16_t v[]; };
#define BP_DT_bf16(N) BP_DT_f16(N)

#define BP_DT_i32(N) \
  layout(buffer_reference, std430, buffer_reference_align = 4) buffer T##N##Buf { int v[]; };
#define BP_DT_u8(N) \
  layout(buffer_reference, std430, buffer_reference_align = 1) buffer T##N##Buf { uint8_t v[]; };

// float -> integer: NaN gives 0, halves round to even, out of range
// saturates (the ABI's cast rule).
int bp_f2i32(float x) {
  if (isnan(x)) return 0;
  if (x >= 2147483648.0) return 2147483647;
  if (x <= -2147483648.0) return -2147483647 - 1;
  return int(roundEven(x));
}
uint bp_f2u8(float x) {
  if (isnan(x)) return 0u;
  return uint(roundEven(clamp(x, 0.0, 255.0)));
}

#if defined(T1_u8) || defined(T2_u8)
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#endif
#if defined(T1_f16) || defined(T1_bf16) || defined(T2_f16) || defined(T2_bf16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif

#if defined(T1_f32)
BP_DT_f32(1)
#define SIZE1 4
#define LOAD1(b, i) (b.v[i])
#define STORE1(b, i, x) b.v[i] = (x)
#elif defined(T1_f16)
BP_DT_f16(1)
#define SIZE1 2
#define LOAD1(b, i) bp_h2f(uint(b.v[i]))
#define STORE1(b, i, x) b.v[i] = uint16_t(bp_f2h(x))
#elif defined(T1_bf16)
BP_DT_bf16(1)
#define SIZE1 2
#define LOAD1(b, i) bp_bf2f(uint(b.v[i]))
#define STORE1(b, i, x) b.v[i] = uint16_t(bp_f2bf(x))
#elif defined(T1_i32)
BP_DT_i32(1)
#define SIZE1 4
#define T1_IS_INT 1
#define LOAD1(b, i) float(b.v[i])
#define LOADI1(b, i) (b.v[i])
#define STORE1(b, i, x) b.v[i] = bp_f2i32(x)
#define STOREI1(b, i, x) b.v[i] = (x)
#elif defined(T1_u8)
BP_DT_u8(1)
#define SIZE1 1
#define T1_IS_INT 1
#define LOAD1(b, i) float(uint(b.v[i]))
#define LOADI1(b, i) int(uint(b.v[i]))
#define STORE1(b, i, x) b.v[i] = uint8_t(bp_f2u8(x))
#define STOREI1(b, i, x) b.v[i] = uint8_t(clamp((x), 0, 255))
#endif

#if defined(T2_f32)
BP_DT_f32(2)
#define SIZE2 4
#define LOAD2(b, i) (b.v[i])
#define STORE2(b, i, x) b.v[i] = (x)
#elif defined(T2_f16)
BP_DT_f16(2)
#define SIZE2 2
#define LOAD2(b, i) bp_h2f(uint(b.v[i]))
#define STORE2(b, i, x) b.v[i] = uint16_t(bp_f2h(x))
#elif defined(T2_bf16)
BP_DT_bf16(2)
#define SIZE2 2
#define LOAD2(b, i) bp_bf2f(uint(b.v[i]))
#define STORE2(b, i, x) b.v[i] = uint16_t(bp_f2bf(x))
#elif defined(T2_i32)
BP_DT_i32(2)
#define SIZE2 4
#define T2_IS_INT 1
#define LOAD2(b, i) float(b.v[i])
#define LOADI2(b, i) (b.v[i])
#define STORE2(b, i, x) b.v[i] = bp_f2i32(x)
#define STOREI2(b, i, x) b.v[i] = (x)
#elif defined(T2_u8)
BP_DT_u8(2)
#define SIZE2 1
#define T2_IS_INT 1
#define LOAD2(b, i) float(uint(b.v[i]))
#define LOADI2(b, i) int(uint(b.v[i]))
#define STORE2(b, i, x) b.v[i] = uint8_t(bp_f2u8(x))
#define STOREI2(b, i, x) b.v[i] = uint8_t(clamp((x), 0, 255))
#endif

// Element offset of linear index i in a strided tensor of `rank` dims
// (shape and strides as int arrays of the parameter block).
#define BP_ND_OFFSET(out, i, rank, shape, strides)                           \
  {                                                                          \
    int rem_ = (i);                                                          \
    out = 0;                                                                 \
    for (int d_ = (rank) - 1; d_ >= 0; d_--) {                               \
      int c_ = rem_ % shape[d_];                                             \
      rem_ /= shape[d_];                                                     \
      out += c_ * strides[d_];                                               \
    }                                                                        \
  }
