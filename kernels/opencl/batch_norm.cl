/*
 * batch_norm.cl — inference batch norm over axis 1 (-DDT=code):
 * y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c], for x of
 * any rank >= 2 and any strides (full shape passed, not collapsed, so the
 * channel coordinate is known).
 */
__kernel void batch_norm(__global const uchar *xb, ulong xo,
                         __global uchar *yb, ulong yo, int rank, long n,
                         long8 shape8, long8 xs8, long8 ys8,
                         __global const uchar *mb, ulong mo, long ms,
                         __global const uchar *vb, ulong vo, long vs,
                         __global const uchar *sb, ulong so, long ss,
                         __global const uchar *bb, ulong bo, long bs,
                         ACC eps) {
  long shape[8], xst[8], yst[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(xs8, xst);
  BP_UNPACK8(ys8, yst);
  __global const T *x = BP_PTR(const T, xb, xo);
  __global T *y = BP_PTR(T, yb, yo);
  __global const T *mean = BP_PTR(const T, mb, mo);
  __global const T *var = BP_PTR(const T, vb, vo);
  __global const T *scale = BP_PTR(const T, sb, so);
  __global const T *bias = BP_PTR(const T, bb, bo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long r = i, ox = 0, oy = 0, c = 0;
    for (int d = rank - 1; d >= 0; d--) {
      long k = r % shape[d];
      r /= shape[d];
      ox += k * xst[d];
      oy += k * yst[d];
      if (d == 1)
        c = k;
    }
    ACC inv = (ACC)1 / sqrt(LD(var, c * vs) + eps);
    ACC v = (LD(x, ox) - LD(mean, c * ms)) * inv * LD(scale, c * ss) +
            LD(bias, c * bs);
    ST(y, oy, v);
  }
}
