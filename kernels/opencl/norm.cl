/*
 * norm.cl — layer norm and RMS norm over the last axis (-DDT=code), one
 * work-group per row. Mean and variance are two passes over the row (no
 * E[x^2] - E[x]^2 cancellation). gamma / beta are optional (has_* = 0).
 */
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
  ACC mean = 0;
  if (!rms) {
    ACC sum = 0;
    for (long j = t; j < len; j += BP_WG)
      sum += LD(x, j * sxl);
    mean = bp_wg_sum(sum, s) / (ACC)len;
  }
  ACC sq = 0;
  for (long j = t; j < len; j += BP_WG) {
    ACC d = LD(x, j * sxl) - mean;
    sq += d * d;
  }
  ACC inv = rsqrt(bp_wg_sum(sq, s) / (ACC)len + eps);
  for (long j = t; j < len; j += BP_WG) {
    ACC v = (LD(x, j * sxl) - mean) * inv;
    if (has_g)
      v *= LD(g, j * gs);
    if (has_b)
      v += LD(b, j * bs);
    ST(y, j * syl, v);
  }
}
