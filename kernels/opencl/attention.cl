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
 */
#define ATT_DV_PER_ITEM 8
#define ATT_MAX_D 512

__kernel __attribute__((reqd_work_group_size(BP_WG, 1, 1))) void
attention(__global const uchar *qb, ulong qo, long4 qs,
          __global const uchar *kb, ulong ko, long4 ks,
          __global const uchar *vb, ulong vo, long4 vs,
          __global uchar *ob, ulong oo, long4 os, int hq, int hkv, long sq,
          long skv, int d, int dv, ACC scale, int causal) {
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
  long kend = causal ? min(skv, i + skv - sq + 1) : skv;
  ACC m = (ACC)-INFINITY, l = 0, acc[ATT_DV_PER_ITEM];
  for (int r = 0; r < ATT_DV_PER_ITEM; r++)
    acc[r] = 0;
  for (long j0 = 0; j0 < kend; j0 += BP_WG) {
    long j = j0 + t;
    ACC s = (ACC)-INFINITY;
    if (j < kend) {
      s = 0;
      __global const T *kj = k + j * ks.s2;
      for (int c = 0; c < d; c++)
        s = fma(ql[c], LD(kj, c * ks.s3), s);
    }
    ACC mnew = fmax(m, bp_wg_max(s, red));
    ACC pt = j < kend ? exp(s - mnew) : (ACC)0;
    p[t] = pt;
    ACC corr = exp(m - mnew); /* exp(-inf) = 0 on the first chunk */
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
 * one x for every p: few work-groups, which CPU drivers start slowly. */
__kernel void att_pack(__global const uchar *sb, ulong so, long s0, long s1,
                       long sx, long sp, int hq, int grp, long bh0,
                       long rows_p, long cols_x, __global ACC *dst, long kp,
                       long xp, long pwid) {
  long x = get_global_id(0), bi = get_global_id(1);
  if (x >= xp)
    return;
  long bh = bh0 + bi;
  long b = bh / hq, hh = (bh % hq) / grp;
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
 * from the row's last visible key to kp. Causal: row i sees keys
 * j <= i + skv - sq; a row that sees none is all zeros (so is its output). */
#define AV BP_CAT(ACC, 16)
__kernel void att_softmax(__global const ACC *st, long sq, long sqp, long skv,
                          int causal, __global ACC *dst, long kp, long mp,
                          long pwid) {
  long i0 = get_global_id(0) * 16, bi = get_global_id(1);
  if (i0 >= sq)
    return;
  __global const ACC *s = st + bi * skv * sqp + i0;
  const AV lane = (AV)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  /* the last key each row sees */
  AV last = causal ? (AV)(i0 + skv - sq) + lane : (AV)(skv - 1);
  long kend = causal ? clamp(i0 + 16 + skv - sq, 0L, skv) : skv;
  AV mx = (AV)(-INFINITY);
  for (long j = 0; j < kend; j++)
    mx = select(mx, fmax(mx, vload16(0, s + j * sqp)), (AV)j <= last);
  AV sum = 0;
  for (long j = 0; j < kend; j++)
    sum += select((AV)0, exp(vload16(0, s + j * sqp) - mx), (AV)j <= last);
  AV inv = select((AV)0, (AV)1 / sum, sum > (AV)0);
  __global ACC *out = dst + bi * kp * mp + (i0 / pwid) * kp * pwid + i0 % pwid;
  for (long j = 0; j < kend; j++)
    vstore16(select((AV)0, exp(vload16(0, s + j * sqp) - mx) * inv, (AV)j <= last), 0,
             out + j * pwid);
  for (long j = kend; j < kp; j++)
    vstore16((AV)0, 0, out + j * pwid);
}
