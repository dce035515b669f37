/*
 * pool.cl — max / average pool2d, NCHW, one work-item per output element
 * (-DDT=code). Max: padding is -inf, the first NaN wins. Average: divides
 * by the real cells, or with count_include_pad by the window clipped to the
 * padded input (PyTorch); an empty window gives 0.
 */
__kernel void pool2d(__global const uchar *xb, ulong xo, long4 xs,
                     __global uchar *yb, ulong yo, long4 ys, long total,
                     int c, int h, int w, int p_out, int q_out, int kh,
                     int kw, int sh, int sw, int ph, int pw, int is_max,
                     int include_pad) {
  long idx = get_global_id(0);
  if (idx >= total)
    return;
  int q = (int)(idx % q_out);
  int p = (int)((idx / q_out) % p_out);
  int ch = (int)((idx / ((long)q_out * p_out)) % c);
  long n = idx / ((long)q_out * p_out * c);
  __global const T *x = BP_PTR(const T, xb, xo) + n * xs.s0 + ch * xs.s1;
  int h0 = p * sh - ph, w0 = q * sw - pw, h1 = h0 + kh, w1 = w0 + kw;
  ACC best = (ACC)-INFINITY, sum = 0;
  int valid = 0;
  for (int ih = max(h0, 0); ih < min(h1, h); ih++)
    for (int iw = max(w0, 0); iw < min(w1, w); iw++) {
      ACC v = LD(x, ih * xs.s2 + iw * xs.s3);
      if (!isnan(best) && (v > best || isnan(v)))
        best = v;
      sum += v;
      valid++;
    }
  ACC out = best;
  if (!is_max) {
    int div = valid;
    if (include_pad)
      div = (min(h1, h + ph) - h0) * (min(w1, w + pw) - w0);
    out = div > 0 ? sum / (ACC)div : (ACC)0;
  }
  __global T *y = BP_PTR(T, yb, yo);
  ST(y, n * ys.s0 + ch * ys.s1 + p * ys.s2 + q * ys.s3, out);
}
