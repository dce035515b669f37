/*
 * attention.cl — fused scaled dot-product attention with online softmax
 * (-DDT=code). One work-group of BP_WG items per query row (b, h, i): for
 * each chunk of BP_WG keys every item scores one key, the group folds the
 * chunk into the running max / sum, and item t accumulates output dims
 * t, t + BP_WG, ... (so Dv <= BP_WG * ATT_DV_PER_ITEM). Nothing of size
 * Sq x Skv is ever stored.
 * Causal masking is bottom-right aligned: query i sees keys
 * j <= i + Skv - Sq; a row that sees no key is written as zeros.
 * GQA: query head h reads kv head h / (Hq / Hkv).
 *
 * The masks of ABI 1.5 (ATT_MASK_ARGS) use the same alignment, query i at
 * key position at = i + Skv - Sq. Key lengths and the sliding window narrow
 * each row's key range [lo, hi) (att_range), so both kernels skip the keys
 * they mask; the bias and ALiBi are added to the scaled scores. mf holds
 * (has key lengths, window, has bias, ALiBi: 0 none / 1 slopes tensor /
 * 2 standard slopes, alibi_heads, alibi_head_offset, -, -).
 */
#define ATT_DV_PER_ITEM 8
#define ATT_MAX_D 512

#define ATT_MASK_ARGS                                                          \
  __global const uchar *lb, ulong lo_, long lst, __global const uchar *bb,     \
      ulong bo, long4 bst, __global const uchar *sb, ulong so, long sst,       \
      int8 mf

/* The keys [*lo, *hi) that query position at of batch b sees. */
inline void att_range(long at, long skv, int causal, int8 mf,
                      __global const uchar *lb, ulong lo_, long lst, long b,
                      long *lo, long *hi) {
  long l = 0, h = skv;
  if (causal || mf.s1 > 0)
    h = min(h, at + 1);
  if (mf.s1 > 0)
    l = max(0L, at - mf.s1 + 1);
  if (mf.s0)
    h = min(h, (long)BP_PTR(const int, lb, lo_)[b * lst]);
  *lo = l;
  *hi = max(h, l);
}

/* Head h's ALiBi slope (0 without ALiBi): the slopes tensor, or the
 * standard geometric slope of head h + offset of mf.s4 heads (Press et
 * al.): 2^(-8 (h + 1) / p) over the largest power of two p <= heads, then
 * every other slope of the sequence for 2p. */
inline ACC att_slope(int8 mf, __global const uchar *sb, ulong so, long sst,
                     long h) {
  if (mf.s3 == 1)
    return (ACC)BP_PTR(const float, sb, so)[h * sst];
  if (mf.s3 != 2)
    return 0;
  int p = 1;
  while (p * 2 <= mf.s4)
    p *= 2;
  int hh = (int)h + mf.s5;
  return hh < p ? exp2((ACC)-8 * (ACC)(hh + 1) / (ACC)p)
                : exp2((ACC)-4 * (ACC)(2 * (hh - p) + 1) / (ACC)p);
}

__kernel __attribute__((reqd_work_group_size(BP_WG, 1, 1))) void
attention(__global const uchar *qb, ulong qo, long4 qs,
          __global const uchar *kb, ulong ko, long4 ks,
          __global const uchar *vb, ulong vo, long4 vs,
          __global uchar *ob, ulong oo, long4 os, int hq, int hkv, long sq,
          long skv, int d, int dv, ACC scale, int causal, ATT_MASK_ARGS) {
  __local ACC ql[ATT_MAX_D];
  __local ACC p[BP_WG];
  __local ACC red[BP_WG];
  long row = get_group_id(0);
  int t = get_local_id(0);
  long i = row % sq;
  long bh = row / sq;
  int h = (int)(bh % hq);
  long b = bh / hq;
  int hk = h / (hq / hkv);
  __global const T *q = BP_PTR(const T, qb, qo) + b * qs.s0 + h * qs.s1 + i * qs.s2;
  __global const T *k = BP_PTR(const T, kb, ko) + b * ks.s0 + hk * ks.s1;
  __global const T *v = BP_PTR(const T, vb, vo) + b * vs.s0 + hk * vs.s1;
  __global T *o = BP_PTR(T, ob, oo) + b * os.s0 + h * os.s1 + i * os.s2;
  for (int c = t; c < d; c += BP_WG)
    ql[c] = LD(q, c * qs.s3) * scale; /* fold the scale into q once */
  barrier(CLK_LOCAL_MEM_FENCE);
  long at = i + skv - sq, kbeg, kend;
  att_range(at, skv, causal, mf, lb, lo_, lst, b, &kbeg, &kend);
  ACC slope = att_slope(mf, sb, so, sst, h);
  __global const T *bias =
      BP_PTR(const T, bb, bo) + b * bst.s0 + h * bst.s1 + i * bst.s2;
  ACC m = (ACC)-INFINITY, l = 0, acc[ATT_DV_PER_ITEM];
  for (int r = 0; r < ATT_DV_PER_ITEM; r++)
    acc[r] = 0;
  for (long j0 = kbeg; j0 < kend; j0 += BP_WG) {
    long j = j0 + t;
    ACC s = (ACC)-INFINITY;
    if (j < kend) {
      s = 0;
      __global const T *kj = k + j * ks.s2;
      for (int c = 0; c < d; c++)
        s = fma(ql[c], LD(kj, c * ks.s3), s);
      if (mf.s2)
        s += LD(bias, j * bst.s3);
      s -= slope * (ACC)abs(at - j);
    }
    ACC mnew = fmax(m, bp_wg_max(s, red));
    /* -inf scores (masked by the bias) weigh nothing, also while every
     * score so far is -inf */
    ACC pt = s > (ACC)-INFINITY ? exp(s - mnew) : (ACC)0;
    p[t] = pt;
    ACC corr = mnew > (ACC)-INFINITY ? exp(m - mnew) : (ACC)1;
    l = l * corr + bp_wg_sum(pt, red); /* its barriers also publish p[] */
    m = mnew;
    int n = (int)min((long)BP_WG, kend - j0);
    for (int r = 0; r < ATT_DV_PER_ITEM; r++) {
      int c = t + r * BP_WG;
      if (c >= dv)
        break;
      ACC a = acc[r] * corr;
      for (int u = 0; u < n; u++)
        a = fma(p[u], LD(v, (j0 + u) * vs.s2 + c * vs.s3), a);
      acc[r] = a;
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* p[] is rewritten by the next chunk */
  }
  ACC inv = l > 0 ? (ACC)1 / l : (ACC)0;
  for (int r = 0; r < ATT_DV_PER_ITEM; r++) {
    int c = t + r * BP_WG;
    if (c < dv)
      ST(o, c * os.s3, acc[r] * inv);
  }
}

/* ---- attention through the tuned GEMM (ops_attention_gemm.c) -------------
 * S = scale Q Kt and O = P V run as gemm.cl's gemm_tiled over panels these
 * kernels write; att_softmax turns S's rows into P, written straight into
 * the A panels of the second multiply. Heads bh0 .. bh0 + batch - 1 of the
 * flattened (batch, head) index at a time. */

/* One operand into gemm_tiled's panels: dst[bi][(x / pwid) * kp + p][x %
 * pwid] = src[b, hh, x, p] (x, p along strides sx, sp), zero padded to kp x
 * xp. hh = h / grp maps a query head to its kv head (GQA). An item packs
 * one x for every p: few work-groups, which CPU drivers start slowly.
 * With key lengths (lens_axis 1: keys along x, K; 2: along p, V) the keys
 * at or past batch b's length pack as zeros, so whatever a cache holds
 * there never reaches a product (0 x NaN would). */
__kernel void att_pack(__global const uchar *sb, ulong so, long s0, long s1,
                       long sx, long sp, int hq, int grp, long bh0,
                       long rows_p, long cols_x, __global ACC *dst, long kp,
                       long xp, long pwid, __global const uchar *lb, ulong lo_,
                       long lst, int lens_axis) {
  long x = get_global_id(0), bi = get_global_id(1);
  if (x >= xp)
    return;
  long bh = bh0 + bi;
  long b = bh / hq, hh = (bh % hq) / grp;
  if (lens_axis) {
    long len = max(0L, (long)BP_PTR(const int, lb, lo_)[b * lst]);
    if (lens_axis == 1)
      cols_x = min(cols_x, len);
    else
      rows_p = min(rows_p, len);
  }
  __global const T *src = BP_PTR(const T, sb, so) + b * s0 + hh * s1 + x * sx;
  __global ACC *out = dst + bi * kp * xp + (x / pwid) * kp * pwid + x % pwid;
  long pend = x < cols_x ? rows_p : 0;
  for (long p = 0; p < pend; p++)
    out[p * pwid] = LD(src, p * sp);
  for (long p = pend; p < kp; p++)
    out[p * pwid] = 0;
}

/* S arrives transposed (St[bi][j][i], rows padded to sqp): an item takes
 * 16 neighbouring query rows as one vector, so every load and store below
 * is a whole contiguous vector and no work-group barrier is needed. Row i
 * becomes probabilities written into the A panels of P V:
 * dst[bi][(i / pwid) * kp + j][i % pwid] (pwid a multiple of 16), zero
 * outside the row's visible keys [lo, hi) (att_range). With a bias or ALiBi
 * the first pass adds them and writes the scores back, which only this
 * item reads. A row that sees no key, or whose every score is -inf, is all
 * zeros (so is its output). bh0 + bi is the (batch, head) index. */
#define AV BP_CAT(ACC, 16)
__kernel void att_softmax(__global ACC *st, long sq, long sqp, long skv,
                          int causal, __global ACC *dst, long kp, long mp,
                          long pwid, long bh0, int hq, ATT_MASK_ARGS) {
  long i0 = get_global_id(0) * 16, bi = get_global_id(1);
  if (i0 >= sq)
    return;
  long bh = bh0 + bi, b = bh / hq, h = bh % hq;
  __global ACC *s = st + bi * skv * sqp + i0;
  const AV lane = (AV)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  /* rows are monotone: the first row starts the union of the rows' key
   * ranges, the last row (or row sq - 1) ends it */
  long at0 = i0 + skv - sq, ilast = min(i0 + 15, sq - 1), lo0, hi0, lo1, hi1;
  att_range(at0, skv, causal, mf, lb, lo_, lst, b, &lo0, &hi0);
  att_range(ilast + skv - sq, skv, causal, mf, lb, lo_, lst, b, &lo1, &hi1);
  long kbeg = lo0, kend = max(hi1, lo0);
  AV at = (AV)(at0) + lane, lo = (AV)(0), hi = (AV)(skv);
  if (causal || mf.s1 > 0)
    hi = fmin(hi, at + 1);
  if (mf.s1 > 0)
    lo = fmax(lo, at - mf.s1 + 1);
  if (mf.s0)
    hi = fmin(hi, (AV)(BP_PTR(const int, lb, lo_)[b * lst]));
  AV mx = (AV)(-INFINITY);
  if (mf.s2 || mf.s3) {
    ACC slope = att_slope(mf, sb, so, sst, h);
    __global const T *bias = BP_PTR(const T, bb, bo) + b * bst.s0 + h * bst.s1;
    for (long j = kbeg; j < kend; j++) {
      AV x = vload16(0, s + j * sqp) - slope * fabs(at - (AV)j);
      if (mf.s2) {
        ACC bv[16];
        for (int r = 0; r < 16; r++)
          bv[r] = LD(bias, min(i0 + r, sq - 1) * bst.s2 + j * bst.s3);
        x += vload16(0, bv);
      }
      vstore16(x, 0, s + j * sqp);
    }
  }
  for (long j = kbeg; j < kend; j++) {
    AV x = vload16(0, s + j * sqp);
    mx = select(mx, fmax(mx, x), (AV)j >= lo && (AV)j < hi);
  }
  /* a row of -inf scores: exp(-inf - 0) = 0, so its sum is 0 */
  mx = select(mx, (AV)0, mx == (AV)(-INFINITY));
  AV sum = 0;
  for (long j = kbeg; j < kend; j++)
    sum += select((AV)0, exp(vload16(0, s + j * sqp) - mx), (AV)j >= lo && (AV)j < hi);
  AV inv = select((AV)0, (AV)1 / sum, sum > (AV)0);
  __global ACC *out = dst + bi * kp * mp + (i0 / pwid) * kp * pwid + i0 % pwid;
  for (long j = 0; j < kbeg; j++)
    vstore16((AV)0, 0, out + j * pwid);
  for (long j = kbeg; j < kend; j++)
    vstore16(select((AV)0, exp(vload16(0, s + j * sqp) - mx) * inv, (AV)j >= lo && (AV)j < hi), 0,
             out + j * pwid);
  for (long j = kend; j < kp; j++)
    vstore16((AV)0, 0, out + j * pwid);
}

/* ---- flash attention for CPU drivers (ops_attention_flash.c) --------------
 * A work-item owns FL_Q = 32 query rows of one (batch, head) as two 16-wide
 * vectors (queries along the lanes: no horizontal reductions) and walks its
 * visible keys FL_KB at a time: the scores of the block (2 x FL_KB vectors
 * in registers) from Qt (packed [d][sqp], query-contiguous) against FL_KB
 * broadcast key rows, the online softmax update, then o[c] = o[c] * corr +
 * sum p_u v[j + u][c] into o (the item's [dv][FL_Q] accumulators in a
 * scratch that stays in L1). Keys past the block union of the rows' ranges
 * (att_range) are never read, so a causal call skips the masked half;
 * nothing of size Sq x Skv exists. CPU drivers run a work-item's loops as
 * written, so the explicit vectors are what reach the SIMD units; GPUs keep
 * the GEMM-based path.
 * Key and value rows are read at b * s0 + ((bh % hq) / grp) * s1 + j * s2 +
 * c of ACC elements, bh = bh0 + bi - base: the caller's f32 / f64 tensors
 * directly (base 0), or panels it packed (base bh0, hq = grp = 1). */
#define FL_Q 32
#define FL_KB 8

inline __global const ACC *fl_row(__global const uchar *b, ulong o, long bh,
                                  int hq, int grp, long4 s) {
  return BP_PTR(const ACC, b, o) + (bh / hq) * s.s0 + ((bh % hq) / grp) * s.s1;
}

__kernel void att_flash(__global const ACC *qt, long sqp, long d, long dv,
                        long sq, long skv, ACC scale, int causal, long bh0,
                        int hq, __global const uchar *kb, ulong ko, long kbase,
                        int khq, int kgrp, long4 ks, __global const uchar *vb,
                        ulong vo, long vbase, int vhq, int vgrp, long4 vs,
                        __global uchar *ob, ulong oo, long4 os,
                        __global AV *oacc, ATT_MASK_ARGS) {
  long nblk = (sq + FL_Q - 1) / FL_Q;
  /* the longest rows (causal: the last) first, so the short ones fill in */
  long blk = nblk - 1 - get_global_id(0), bi = get_global_id(1);
  if (blk < 0)
    return;
  long i0 = blk * FL_Q, bh = bh0 + bi, b = bh / hq, h = bh % hq;
  qt += bi * d * sqp + i0;
  __global AV *o = oacc + (bi * nblk + blk) * dv * 2;
  __global const ACC *k = fl_row(kb, ko, bh - kbase, khq, kgrp, ks);
  __global const ACC *v = fl_row(vb, vo, bh - vbase, vhq, vgrp, vs);
  const AV lane = (AV)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  long at0 = i0 + skv - sq, ilast = min(i0 + FL_Q - 1, sq - 1), lo0, hi0, lo1, hi1;
  att_range(at0, skv, causal, mf, lb, lo_, lst, b, &lo0, &hi0);
  att_range(ilast + skv - sq, skv, causal, mf, lb, lo_, lst, b, &lo1, &hi1);
  long kbeg = lo0, kend = max(hi1, lo0);
  AV at[2], lo[2], hi[2], m[2], l[2];
  for (int w = 0; w < 2; w++) {
    at[w] = (AV)(at0 + 16 * w) + lane;
    lo[w] = (AV)(0), hi[w] = (AV)(skv);
    if (causal || mf.s1 > 0)
      hi[w] = fmin(hi[w], at[w] + 1);
    if (mf.s1 > 0)
      lo[w] = fmax(lo[w], at[w] - mf.s1 + 1);
    if (mf.s0)
      hi[w] = fmin(hi[w], (AV)(BP_PTR(const int, lb, lo_)[b * lst]));
    m[w] = (AV)(-INFINITY), l[w] = 0;
  }
  for (long c = 0; c < 2 * dv; c++)
    o[c] = 0;
  ACC slope = att_slope(mf, sb, so, sst, h);
  __global const T *bias = BP_PTR(const T, bb, bo) + b * bst.s0 + h * bst.s1;
  for (long j0 = kbeg; j0 < kend; j0 += FL_KB) {
    __global const ACC *kr[FL_KB], *vr[FL_KB];
    AV s[2][FL_KB];
#pragma unroll
    for (int u = 0; u < FL_KB; u++) {
      long j = min(j0 + u, kend - 1); /* a row past kend is never read */
      kr[u] = k + j * ks.s2, vr[u] = v + j * vs.s2;
      s[0][u] = 0, s[1][u] = 0;
    }
    for (long c = 0; c < d; c++) {
      AV q0 = vload16(0, qt + c * sqp), q1 = vload16(0, qt + c * sqp + 16);
#pragma unroll
      for (int u = 0; u < FL_KB; u++) {
        AV kv = (AV)(kr[u][c]);
        s[0][u] = fma(q0, kv, s[0][u]);
        s[1][u] = fma(q1, kv, s[1][u]);
      }
    }
    AV p[2][FL_KB], corr[2];
    for (int w = 0; w < 2; w++) {
      AV bm = (AV)(-INFINITY);
#pragma unroll
      for (int u = 0; u < FL_KB; u++) {
        AV x = s[w][u] * scale, jv = (AV)(j0 + u);
        if (mf.s3)
          x -= slope * fabs(at[w] - jv);
        if (mf.s2) {
          ACC bv[16];
          for (int r = 0; r < 16; r++)
            bv[r] = LD(bias, min(i0 + 16 * w + r, sq - 1) * bst.s2 +
                                 min(j0 + u, kend - 1) * bst.s3);
          x += vload16(0, bv);
        }
        x = select((AV)(-INFINITY), x, jv >= lo[w] && jv < hi[w]);
        s[w][u] = x;
        bm = fmax(bm, x);
      }
      AV mnew = fmax(m[w], bm);
      /* -inf scores weigh nothing, also while every score so far is -inf */
      corr[w] = select((AV)1, exp(m[w] - mnew), mnew > (AV)(-INFINITY));
      AV sum = 0;
#pragma unroll
      for (int u = 0; u < FL_KB; u++) {
        p[w][u] = select((AV)0, exp(s[w][u] - mnew), s[w][u] > (AV)(-INFINITY));
        sum += p[w][u];
      }
      l[w] = l[w] * corr[w] + sum;
      m[w] = mnew;
    }
    for (long c = 0; c < dv; c++) {
      AV a0 = o[2 * c] * corr[0], a1 = o[2 * c + 1] * corr[1];
#pragma unroll
      for (int u = 0; u < FL_KB; u++) {
        AV vv = (AV)(vr[u][c]);
        a0 = fma(p[0][u], vv, a0);
        a1 = fma(p[1][u], vv, a1);
      }
      o[2 * c] = a0, o[2 * c + 1] = a1;
    }
  }
  __global T *out = BP_PTR(T, ob, oo) + b * os.s0 + h * os.s1;
  for (int w = 0; w < 2; w++) {
    AV inv = select((AV)0, (AV)1 / l[w], l[w] > (AV)0);
    for (long c = 0; c < dv; c++) {
      ACC t[16];
      vstore16(o[2 * c + w] * inv, 0, t);
      for (int r = 0; r < 16 && i0 + 16 * w + r < sq; r++)
        ST(out, (i0 + 16 * w + r) * os.s2 + c * os.s3, t[r]);
    }
  }
}
