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
