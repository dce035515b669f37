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
    }
    y[oy] = v;
#else
    float fa = (float)a, fb = (float)b, v;
    if (normal) {
      v = fa + fb * bp_philox_normal_z(r);
    } else {
      float u = (float)(r.s0 >> 8) * 0x1p-24f;
      v = fa + (fb - fa) * u;
    }
    ST(y, oy, v);
#endif
  }
}
