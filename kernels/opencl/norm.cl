/*
 * norm.cl — layer norm and RMS norm over the last axis (-DDT=code), one
 * work-group per row. Mean and variance are two passes over the row (no
 * E[x^2] - E[x]^2 cancellation). gamma / beta are optional (has_* = 0).
 * The row is scaled by 2^-e first, 2^e the power of two of its largest
 * magnitude (clamped so 2^-e and 2^e are normal; the scaling is exact), so
 * that neither the squares nor the sums overflow (x = 2e19 in f32) or
 * underflow: y = (x' - m) / sqrt(v + eps 2^-2e), m and v the mean and
 * variance of x' = x 2^-e; when eps 2^-2e overflows, v is nothing beside
 * it and y = (x' - m) 2^e / sqrt(eps).
 */
#if DT == 3
#define BP_NORM_EMAX 1022
#else
#define BP_NORM_EMAX 126
#endif
__kernel __attribute__((reqd_work_group_size(BP_WG, 1, 1))) void
layer_norm(__global const uchar *xb, ulong xo, __global uchar *yb, ulong yo,
           BP_ROW_ARGS, __global const uchar *gb, ulong go, long gs,
           int has_g, __global const uchar *bb, ulong bo, long bs, int has_b,
           ACC eps, int rms) {
  __local ACC s[BP_WG];
  long row = get_group_id(0);
  int t = get_local_id(0);
  BP_ROW_SETUP(row, ox, oy);
  __global const T *x = BP_PTR(const T, xb, xo) + ox;
  __global T *y = BP_PTR(T, yb, yo) + oy;
  __global const T *g = BP_PTR(const T, gb, go);
  __global const T *b = BP_PTR(const T, bb, bo);
  ACC amax = 0;
  for (long j = t; j < len; j += BP_WG)
    amax = fmax(amax, fabs(LD(x, j * sxl)));
  amax = bp_wg_max(amax, s);
  /* 0, inf and NaN rows unscaled: their answer (NaN) stays */
  int e = amax > 0 && isfinite(amax)
              ? clamp(ilogb(amax), -BP_NORM_EMAX, BP_NORM_EMAX) : 0;
  const ACC sc = ldexp((ACC)1, -e);
  ACC mean = 0;
  if (!rms) {
    ACC sum = 0;
    for (long j = t; j < len; j += BP_WG)
      sum += LD(x, j * sxl) * sc;
    mean = bp_wg_sum(sum, s) / (ACC)len;
  }
  ACC sq = 0;
  for (long j = t; j < len; j += BP_WG) {
    ACC d = LD(x, j * sxl) * sc - mean;
    sq += d * d;
  }
  ACC e2 = eps * sc * sc;
  ACC var = bp_wg_sum(sq, s) / (ACC)len;
  ACC inv = isinf(e2) ? rsqrt(eps) * ldexp((ACC)1, e) : rsqrt(var + e2);
  for (long j = t; j < len; j += BP_WG) {
    ACC v = (LD(x, j * sxl) * sc - mean) * inv;
    if (has_g)
      v *= LD(g, j * gs);
    if (has_b)
      v += LD(b, j * bs);
    ST(y, j * syl, v);
  }
}
