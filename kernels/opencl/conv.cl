/*
 * conv.cl — NCHW conv2d forward as an implicit GEMM (-DDT=code): per image
 * and group, C[K/g][P*Q] = W[K/g][Cg*R*S] x im2col(X)[Cg*R*S][P*Q], the
 * im2col matrix never materialised: tiles of it are gathered straight into
 * local memory. Work-group CT x CT items, each one output (channel, pixel).
 */
#define CT 16
#define AV16 BP_CAT(ACC, 16)

__kernel __attribute__((reqd_work_group_size(CT, CT, 1))) void
conv2d(__global const uchar *xb, ulong xo, long4 xs, __global const uchar *wb,
       ulong wo, long4 ws, __global const uchar *bb, ulong bo, long bst,
       int has_bias, __global uchar *yb, ulong yo, long4 ys, int c_in,
       int h, int w, int k_out, int r_k, int s_k, int p_out, int q_out,
       int sh, int sw, int ph, int pw, int dh, int dw, int groups) {
  __local ACC wt[CT][CT + 1], xt[CT][CT + 1];
  int tx = get_local_id(0), ty = get_local_id(1);
  long pix = get_global_id(0);              /* p * Q + q */
  int kg = get_group_id(1) * CT + ty;       /* output channel within group */
  int ng = get_global_id(2);                /* image * groups + group */
  int n = ng / groups, g = ng % groups;
  int kpg = k_out / groups, cg = c_in / groups;
  long npix = (long)p_out * q_out, red = (long)cg * r_k * s_k;
  __global const T *x = BP_PTR(const T, xb, xo) + n * xs.s0 + (long)g * cg * xs.s1;
  __global const T *wp = BP_PTR(const T, wb, wo) + (long)g * kpg * ws.s0;
  /* The pixel this item gathers for the X tile (column tx of the tile). */
  long lpix = get_group_id(0) * CT + tx;
  int op = (int)(lpix / q_out), oq = (int)(lpix % q_out);
  ACC acc = 0;
  for (long e0 = 0; e0 < red; e0 += CT) {
    /* W tile: row ty (output channel), column tx (reduction index). */
    long e = e0 + tx;
    int kr = get_group_id(1) * CT + ty;
    ACC wv = 0;
    if (kr < kpg && e < red) {
      int c = (int)(e / (r_k * s_k)), rs = (int)(e % (r_k * s_k));
      wv = LD(wp, kr * ws.s0 + c * ws.s1 + (rs / s_k) * ws.s2 + (rs % s_k) * ws.s3);
    }
    wt[ty][tx] = wv;
    /* X tile: row ty (reduction index), column tx (pixel). */
    long ex = e0 + ty;
    ACC xv = 0;
    if (lpix < npix && ex < red) {
      int c = (int)(ex / (r_k * s_k)), rs = (int)(ex % (r_k * s_k));
      int ih = op * sh - ph + (rs / s_k) * dh, iw = oq * sw - pw + (rs % s_k) * dw;
      if (ih >= 0 && ih < h && iw >= 0 && iw < w)
        xv = LD(x, c * xs.s1 + ih * xs.s2 + iw * xs.s3);
    }
    xt[ty][tx] = xv;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int u = 0; u < CT; u++)
      acc = fma(wt[ty][u], xt[u][tx], acc);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (kg >= kpg || pix >= npix)
    return;
  int kk = g * kpg + kg;
  if (has_bias)
    acc += LD(BP_PTR(const T, bb, bo), kk * bst);
  __global T *y = BP_PTR(T, yb, yo);
  ST(y, n * ys.s0 + kk * ys.s1 + (pix / q_out) * ys.s2 + (pix % q_out) * ys.s3, acc);
}

/* ---- conv2d through the tuned GEMM (ops_conv_gemm.c) ----------------------
 * Per image and group, y[K/g][P*Q] = W[K/g][Cg*R*S] x im2col(x): the two
 * operands are written straight into gemm.cl's zero-padded panels, so
 * gemm_tiled (tuned per device) does the multiply-adds. Reduction index
 * e = (c * R + r) * S + s, pixel x = p * Q + q. */

/* im2col(x) as B panels: dst[b][(x / pwid) * kp + e][x % pwid]. An item
 * writes one panel row (reduction index e, the panel's pwid pixels) front
 * to back, walking the output pixel (op, oq) along, so its stores are
 * contiguous and, at stride 1, so are its loads along a row of x. */
__kernel void conv_im2col(__global const uchar *xb, ulong xo, long4 xs,
                          int h, int w, int r_k, int s_k, int q_out,
                          long npix, long red, int sh, int sw, int ph,
                          int pw, int dh, int dw, __global ACC *dst, long kp,
                          long xp, long pwid) {
  long e = get_global_id(0), pan = get_global_id(1), bi = get_global_id(2);
  if (e >= kp)
    return;
  long x0 = pan * pwid;
  __global ACC *out = dst + bi * kp * xp + pan * kp * pwid + e * pwid;
  long nvalid = e < red ? clamp(npix - x0, 0L, pwid) : 0;
  int rs = r_k * s_k, c = (int)(e / rs), r = (int)(e % rs) / s_k, s = (int)(e % rs) % s_k;
  __global const T *src = BP_PTR(const T, xb, xo) + bi * xs.s0 + c * xs.s1;
  int op = (int)(x0 / q_out), oq = (int)(x0 % q_out);
  for (long t = 0; t < nvalid; t++) {
    int ih = op * sh - ph + r * dh, iw = oq * sw - pw + s * dw;
#if DT == 0 || DT == 3
    /* 16 pixels of one output row inside x at stride 1 or 2: one vector
     * (at stride 2 the even lanes of two) */
    if (sw <= 2 && xs.s3 == 1 && t + 16 <= nvalid && oq + 16 <= q_out &&
        ih >= 0 && ih < h && iw >= 0 && iw + 16 * sw <= w) {
      __global const T *row = src + ih * xs.s2 + iw;
      AV16 v = sw == 1 ? vload16(0, row)
                       : (AV16)(vload16(0, row).even, vload16(0, row + 16).even);
      vstore16(v, 0, out + t);
      t += 15, oq += 15;
      if (++oq == q_out)
        oq = 0, op++;
      continue;
    }
#endif
    ACC v = 0;
    if (ih >= 0 && ih < h && iw >= 0 && iw < w)
      v = LD(src, ih * xs.s2 + iw * xs.s3);
    out[t] = v;
    if (++oq == q_out)
      oq = 0, op++;
  }
  for (long t = nvalid; t < pwid; t++)
    out[t] = 0;
}

/* W (one group's K/g filters) as A panels: dst[(k / pwid) * kp + e][k %
 * pwid]. As im2col: an item writes one panel row (reduction index e, the
 * panel's pwid filters) front to back; the items of a group read
 * neighbouring e of the same filters. */
__kernel void conv_packw(__global const uchar *wb, ulong wo, long4 ws, int r_k,
                         int s_k, long kpg, long red, __global ACC *dst,
                         long kp, long xp, long pwid) {
  long e = get_global_id(0), pan = get_global_id(1);
  if (e >= kp)
    return;
  long k0 = pan * pwid;
  __global ACC *out = dst + pan * kp * pwid + e * pwid;
  long nvalid = e < red ? clamp(kpg - k0, 0L, pwid) : 0;
  int rs = r_k * s_k, c = (int)(e / rs), r = (int)(e % rs);
  __global const T *src = BP_PTR(const T, wb, wo) + k0 * ws.s0 + c * ws.s1 +
                          (r / s_k) * ws.s2 + (r % s_k) * ws.s3;
  for (long t = 0; t < nvalid; t++)
    out[t] = LD(src, t * ws.s0);
  for (long t = nvalid; t < pwid; t++)
    out[t] = 0;
}

/* ---- depthwise conv2d (ops_conv_dw.c) ---------------------------------------
 * One input channel per group (k_out a multiple of c_in): an item computes
 * DW_TILE neighbouring output pixels of one output row, one channel and one
 * image as a vector, one filter tap at a time, so the vector lanes run
 * along the row instead of over a GEMM tile that would be mostly padding. */
#define DW_TILE 16

/* The DW_TILE inputs under tap column s for output pixels q0.. of a row:
 * one vector load where they are contiguous or every second element,
 * else lane by lane with zeros outside the row (padding, past q_out). */
static AV16 dw_inputs(__global const T *row, long xs3, int w, int iw0, int sw, int nq) {
#if DT == 0 || DT == 3
  if (xs3 == 1 && nq == DW_TILE && iw0 >= 0) {
    if (sw == 1 && iw0 + DW_TILE <= w)
      return vload16(0, row + iw0);
    if (sw == 2 && iw0 + 2 * DW_TILE <= w)
      return (AV16)(vload16(0, row + iw0).even, vload16(0, row + iw0 + DW_TILE).even);
  }
#endif
  ACC t[DW_TILE];
  for (int i = 0; i < DW_TILE; i++) {
    int iw = iw0 + i * sw;
    t[i] = i < nq && iw >= 0 && iw < w ? (ACC)LD(row, iw * xs3) : (ACC)0;
  }
  return vload16(0, t);
}

__kernel void conv2d_dw(__global const uchar *xb, ulong xo, long4 xs, __global const uchar *wb,
                        ulong wo, long4 ws, __global const uchar *bb, ulong bo, long bst,
                        int has_bias, __global uchar *yb, ulong yo, long4 ys, int c_in, int h,
                        int w, int k_out, int r_k, int s_k, int q_out, int sh, int sw, int ph,
                        int pw, int dh, int dw) {
  int q0 = (int)get_global_id(0) * DW_TILE, op = (int)get_global_id(1);
  long nk = get_global_id(2);
  int kk = (int)(nk % k_out);
  long n = nk / k_out;
  if (q0 >= q_out)
    return;
  int nq = min(DW_TILE, q_out - q0), c = kk / (k_out / c_in);
  __global const T *x = BP_PTR(const T, xb, xo) + n * xs.s0 + c * xs.s1;
  __global const T *wp = BP_PTR(const T, wb, wo) + kk * ws.s0;
  AV16 acc = 0;
  for (int r = 0; r < r_k; r++) {
    int ih = op * sh - ph + r * dh;
    if (ih < 0 || ih >= h)
      continue;
    __global const T *row = x + ih * xs.s2;
    for (int s = 0; s < s_k; s++) {
      ACC wv = LD(wp, r * ws.s2 + s * ws.s3);
      acc = fma((AV16)wv, dw_inputs(row, xs.s3, w, q0 * sw - pw + s * dw, sw, nq), acc);
    }
  }
  if (has_bias)
    acc += (AV16)LD(BP_PTR(const T, bb, bo), kk * bst);
  ACC out[DW_TILE];
  vstore16(acc, 0, out);
  __global T *y = BP_PTR(T, yb, yo) + n * ys.s0 + kk * ys.s1 + op * ys.s2;
  for (int i = 0; i < nq; i++)
    ST(y, (q0 + i) * ys.s3, out[i]);
}
