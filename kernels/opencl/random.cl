/*
 * random.cl — Philox4x32-10 random fill, a line-by-line port of
 * kernels/common/bp_philox.h (normative; read it first), so every backend
 * produces the same bits. FP_CONTRACT is off and every operation below is
 * a single correctly rounded IEEE op in the order the header spells it.
 * -DDT=code selects y's dtype (float dtypes only).
 */
#pragma OPENCL FP_CONTRACT OFF

#define BP_PHILOX_M0 0xD2511F53u
#define BP_PHILOX_M1 0xCD9E8D57u
#define BP_PHILOX_W0 0x9E3779B9u
#define BP_PHILOX_W1 0xBB67AE85u

inline uint4 bp_philox_round(uint4 c, uint k0, uint k1) {
  ulong p0 = (ulong)BP_PHILOX_M0 * c.s0;
  ulong p1 = (ulong)BP_PHILOX_M1 * c.s2;
  return (uint4)((uint)(p1 >> 32) ^ c.s1 ^ k0, (uint)p1,
                 (uint)(p0 >> 32) ^ c.s3 ^ k1, (uint)p0);
}

inline uint4 bp_philox_element(ulong seed, ulong offset, ulong index) {
  uint4 c = (uint4)((uint)index, (uint)(index >> 32), (uint)offset,
                    (uint)(offset >> 32));
  uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += BP_PHILOX_W0;
      k1 += BP_PHILOX_W1;
    }
    c = bp_philox_round(c, k0, k1);
  }
  return c;
}

inline float bp_det_logf(float x) {
  uint bits = as_uint(x);
  int e = (int)((bits >> 23) & 0xffu) - 127;
  uint mant = bits & 0x7fffffu;
  uint mexp = 0x3f800000u;
  if (mant > 0x3504f3u) {
    mexp = 0x3f000000u;
    e += 1;
  }
  float m = as_float(mexp | mant);
  float f = m - 1.0f;
  float r = 0.06769023835659027f;
  r = r * f + -0.11557287722826004f;
  r = r * f + 0.11812136322259903f;
  r = r * f + -0.12420814484357834f;
  r = r * f + 0.14232318103313446f;
  r = r * f + -0.1666753739118576f;
  r = r * f + 0.20001447200775146f;
  r = r * f + -0.25000011920928955f;
  r = r * f + 0.33333322405815125f;
  r = r * f + -0.5f;
  float fe = (float)e;
  float lo = (f * f) * r + fe * 1.4286068203094172e-06f;
  return (f + lo) + fe * 0.693145751953125f;
}

inline float bp_det_sqrtf(float x) {
  float y = as_float(0x5f3759dfu - (as_uint(x) >> 1));
  float hx = x * 0.5f;
  for (int i = 0; i < 4; i++) {
    float t = (hx * y) * y;
    y = y * (1.5f - t);
  }
  return x * y;
}

inline float bp_det_cos2pif(float u) {
  float sign = 1.0f;
  if (u > 0.5f)
    u = 1.0f - u;
  if (u > 0.25f) {
    u = 0.5f - u;
    sign = -1.0f;
  }
  int use_sin = u > 0.125f;
  float w = use_sin ? 0.25f - u : u;
  float s = w * w;
  float p;
  if (use_sin) {
    p = 41.47283172607422f;
    p = p * s + -76.69786834716797f;
    p = p * s + 81.6052017211914f;
    p = p * s + -41.34170150756836f;
    p = p * s + 6.2831854820251465f;
    p = p * w;
  } else {
    p = 59.22016906738281f;
    p = p * s + -85.4428482055664f;
    p = p * s + 64.93931579589844f;
    p = p * s + -19.739208221435547f;
    p = p * s + 1.0f;
  }
  return sign * p;
}

inline float bp_philox_normal_z(uint4 r) {
  float u1 = (float)((r.s0 >> 8) + 1u) * 0x1p-24f;
  float u2 = (float)(r.s1 >> 8) * 0x1p-24f;
  float rad = bp_det_sqrtf(-2.0f * bp_det_logf(u1));
  return rad * bp_det_cos2pif(u2);
}

/* One step toward -inf of the sign-magnitude pattern u of a float (bits
 * 32) or an f16 / bf16 (bits 16): bp_philox_below_f32 / _16. */
inline uint bp_philox_below(uint u, int bits) {
  uint sign = 1u << (bits - 1);
  if ((u & (sign - 1u)) == 0u)
    return sign | 1u;
  return (u & sign) ? u + 1u : u - 1u;
}

/* f32 -> f16 / bf16 bits (round to nearest even) and f16 bits -> float,
 * by integer operations: bp_philox_f2h, bp_philox_f2bf, bp_philox_h2f. */
inline uint bp_philox_f2h(float f) {
  uint x = as_uint(f);
  uint s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u)
    return s | 0x7e00u;
  if (a >= 0x477ff000u)
    return s | 0x7c00u;
  if (a <= 0x33000000u)
    return s;
  if (a < 0x38800000u) {
    uint m = (a & 0x7fffffu) | 0x800000u, sh = 126u - (a >> 23);
    uint q = m >> sh, rem = m & ((1u << sh) - 1u), mid = 1u << (sh - 1u);
    return s | (q + (rem > mid || (rem == mid && (q & 1u)) ? 1u : 0u));
  }
  return s | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13);
}
inline uint bp_philox_f2bf(float f) {
  uint x = as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (x >> 16) | 0x40u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
inline float bp_philox_h2f(uint h) {
  uint s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 31u)
    return as_float(s | 0x7f800000u | (m << 13));
  if (e == 0u) {
    if (m == 0u)
      return as_float(s);
    e = 113u;
    while (!(m & 0x400u)) {
      m <<= 1;
      e--;
    }
    m &= 0x3ffu;
  } else {
    e += 112u;
  }
  return as_float(s | (e << 23) | (m << 13));
}

/* Element i (row-major over y's logical shape) lands at its strided offset.
 */
__kernel void random(__global uchar *yb, ulong yo, int rank, long n,
                     long8 shape8, long8 ys8, ulong seed, ulong offset,
                     int normal, ACC a, ACC b) {
  long shape[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(ys8, ys);
  __global T *y = BP_PTR(T, yb, yo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long oy, unused;
    bp_offsets2(i, rank, shape, ys, ys, &oy, &unused);
    uint4 r = bp_philox_element(seed, offset, (ulong)i);
#if DT == 3
    double v;
    if (normal) {
      v = a + b * (double)bp_philox_normal_z(r);
    } else {
      ulong bits = ((ulong)r.s0 << 21) | (r.s1 >> 11);
      double u = (double)bits * 0x1p-53;
      v = a + (b - a) * u;
      if (a < b && v >= b) { /* half-open: the largest double below b */
        ulong ub = as_ulong(b);
        v = as_double((ub & 0x7fffffffffffffffUL) == 0 ? 0x8000000000000001UL
                      : (ub >> 63) ? ub + 1 : ub - 1);
      }
    }
    y[oy] = v;
#else
    float fa = (float)a, fb = (float)b, v;
    if (normal) {
      v = fa + fb * bp_philox_normal_z(r);
    } else {
      float u = (float)(r.s0 >> 8) * 0x1p-24f;
      v = fa + (fb - fa) * u;
      if (fa < fb && v >= fb) /* half-open: the largest float below fb */
        v = as_float(bp_philox_below(as_uint(fb), 32));
#if DT == 1 || DT == 2
      uint h = DT == 2 ? bp_philox_f2bf(v) : bp_philox_f2h(v);
      float hv = DT == 2 ? as_float(h << 16) : bp_philox_h2f(h);
      if (fa < fb && hv >= fb)
        h = bp_philox_below(h, 16);
      ((__global ushort *)y)[oy] = (ushort)h; /* rounded above, as bits */
      continue;
#endif
    }
    ST(y, oy, v);
#endif
  }
}
