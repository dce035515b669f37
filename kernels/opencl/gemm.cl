/*
 * gemm.cl — C[b] = alpha * A[b] B[b] + beta * C[b], and y = alpha A x + beta y.
 * Built with -DDT=code; CT is the compute type (f32, or f64 for f64).
 *
 * Large problems run in two steps. `pack` copies A (transposed, [K][Mp]) and
 * B ([K][Np]) into zero-padded compute-type scratch buffers, which absorbs
 * any strides, transposes and storage dtype. `gemm_tiled` then works on
 * exact tile multiples: each work-item keeps a WM x WN block of C in
 * registers as WM x (WN/VW) vectors; with -DUSE_LOCAL=1 the work-group first
 * stages TK-deep slices of A and B in local memory (GPUs), with 0 it reads
 * the packed buffers directly (CPU drivers, where local memory is plain
 * memory and barriers cost a spill of every accumulator).
 * Tunables: TM TN (work-group tile), TK, WM WN (per-item tile), VW (vector
 * width), UK (K unroll), USE_LOCAL. `gemm_direct` serves small problems with
 * no scratch at all.
 *
 * Every GEMM kernel ends in the epilogue C = act(alpha A B + beta C + bias)
 * on the compute-type value before C is rounded (GEMM_EPI_ARGS: the bias
 * buffer and offset, its strides over [batch, m, n] with s3 != 0 when there
 * is one, and the bp_unary_op_t activation or -1), so a linear layer's
 * bias, activation and residual add cost no extra pass over C.
 */
#define CT ACC

#define GEMM_EPI_ARGS __global const uchar *eb, ulong eo, long4 es, int act
inline CT gemm_epi(CT v, __global const uchar *eb, ulong eo, long4 es, int act,
                   long bi, long i, long j) {
  if (es.s3)
    v += (CT)LD(BP_PTR(const T, eb, eo), bi * es.s0 + i * es.s1 + j * es.s2);
  return act >= 0 ? bp_unary(act, v) : v;
}

/* One element of C, (bi, i, j) at offset oc: epilogue(alpha * sum + beta * c). */
inline void gemm_store1(__global uchar *cb, ulong co, long oc, CT sum, CT alpha,
                        CT beta, GEMM_EPI_ARGS, long bi, long i, long j) {
  __global T *c = BP_PTR(T, cb, co);
  CT v = alpha * sum;
  if (beta != (CT)0)
    v = fma(beta, (CT)LD(c, oc), v);
  ST(c, oc, gemm_epi(v, eb, eo, es, act, bi, i, j));
}

/* ---- direct: one C element per work-item, any strides ------------------- */
__kernel void gemm_direct(__global const uchar *ab, ulong ao,
                          __global const uchar *bb, ulong bo,
                          __global uchar *cb, ulong co, long m, long n, long k,
                          long8 s, /* a: b m k, b: b k n (s0..s5) */
                          long csb, long csm, long csn, CT alpha, CT beta,
                          GEMM_EPI_ARGS) {
  long j = get_global_id(0), i = get_global_id(1), bi = get_global_id(2);
  if (i >= m || j >= n)
    return;
  __global const T *a = BP_PTR(const T, ab, ao) + bi * s.s0 + i * s.s1;
  __global const T *b = BP_PTR(const T, bb, bo) + bi * s.s3 + j * s.s5;
  CT acc = 0;
  for (long p = 0; p < k; p++)
    acc = fma((CT)LD(a, p * s.s2), (CT)LD(b, p * s.s4), acc);
  gemm_store1(cb, co, bi * csb + i * csm + j * csn, acc, alpha, beta, eb, eo, es,
              act, bi, i, j);
}

/* ---- pack: src[b*sb + p*sp + x*sx] into panels of pw columns ------------
 * dst[b][x / pw][p][x % pw], zero padded to kp x xp: every work-group of
 * gemm_tiled then walks one contiguous panel (no page-strided k steps). */
__kernel void pack(__global const uchar *sbuf, ulong so, long rows_k,
                   long cols_x, long sb, long sp, long sx,
                   __global CT *dst, long kp, long xp, long pw) {
  long x = get_global_id(0), p = get_global_id(1), bi = get_global_id(2);
  if (x >= xp || p >= kp)
    return;
  __global const T *src = BP_PTR(const T, sbuf, so);
  CT v = 0;
  if (p < rows_k && x < cols_x)
    v = (CT)LD(src, bi * sb + p * sp + x * sx);
  dst[bi * kp * xp + ((x / pw) * kp + p) * pw + x % pw] = v;
}

#ifdef TM
#define VT BP_CAT(CT, VW)
#define VLOAD BP_CAT(vload, VW)
#define NV (WN / VW)

/* B's element type and loads. Packed panels hold the compute type; a
 * program built with -DBX (bf16 only) reads B in place as bf16 instead (a
 * 1x1 conv2d's x, ldb != 0 only), widening each vector as it is loaded
 * (the bits shifted into f32's upper half), so no pass converts x first. */
#if defined(BX) && DT == 2
#define BT ushort
#define BVLOAD(p) BP_CAT(as_, VT)(BP_CAT(convert_uint, VW)(VLOAD(0, p)) << 16)
#define BLD1(p, i) bp_bf2f((p)[i])
#else
#define BT CT
#define BVLOAD(p) VLOAD(0, p)
#define BLD1(p, i) ((p)[i])
#endif

/* A vector of the compute type (packed panels, local-memory tiles). */
#define CVLOAD(p) VLOAD(0, p)

/* Register-blocked micro-kernel over one k step: acc += a[r] * b[v], B's
 * vectors loaded by bload (BVLOAD from B, CVLOAD from a local tile). */
#define MICRO_STEP(apt, bpt, bload)                                            \
  do {                                                                         \
    VT bv[NV];                                                                 \
    _Pragma("unroll") for (int v = 0; v < NV; v++)                             \
      bv[v] = bload((bpt) + v * VW);                                           \
    _Pragma("unroll") for (int r = 0; r < WM; r++) {                           \
      VT av = (VT)((apt)[r]);                                                  \
      _Pragma("unroll") for (int v = 0; v < NV; v++)                           \
        acc[r][v] = fma(av, bv[v], acc[r][v]);                                 \
    }                                                                          \
  } while (0)

__kernel __attribute__((reqd_work_group_size(TN / WN, TM / WM, 1))) void
gemm_tiled(__global const CT *ap, __global const BT *bp, long mp, long np,
           long kp, long sab, long sbb, __global uchar *cb, ulong co, long m,
           long n, long csb, long csm, long csn, CT alpha, CT beta, long nb1,
           long csb1, long boff, int tri, long tri_off, long ldb, long bofs,
           GEMM_EPI_ARGS) {
  int tx = get_local_id(0), ty = get_local_id(1);
  long bi = get_global_id(2);
  long i0 = get_group_id(1) * TM, j0 = get_group_id(0) * TN;
  /* ldb 0: B is packed panels [np / TN][kp][TN]. Otherwise B is read where
   * it is (a 1x1 conv2d's x; bf16 with -DBX): rows of ldb elements from
   * bofs, n >= TN, kp rows; the last tile moves back to end at column n
   * (jb) and stores only its columns from j0 on, so no read passes the
   * matrix. */
  long jb = ldb && j0 + TN > n ? n - TN : j0, bstep = ldb ? ldb : TN;
  /* Causal attention (ops_attention.c): tri 1 skips the tiles of S = Q Kt
   * whose every column is masked (j > i + tri_off for each row i of the
   * tile), tri 3 the same tiles of its transpose St = K Qt; tri 2 stops P V's k loop where the tile's last row stops seeing
   * keys (P is zero beyond). Both are uniform over the work-group. */
  if (tri == 1 && j0 > i0 + TM - 1 + tri_off)
    return;
  if (tri == 3 && i0 > j0 + TN - 1 + tri_off) /* the same for St = K Qt */
    return;
  long kend = kp;
  if (tri == 2) {
    long kstep = USE_LOCAL ? TK : UK;
    kend = clamp((i0 + TM + tri_off + kstep - 1) / kstep * kstep, 0L, kp);
  }
  ap += bi * sab + get_group_id(1) * kp * TM; /* this group's panels */
  bp += ldb ? bofs + bi * sbb + jb : bi * sbb + get_group_id(0) * kp * TN;
  VT acc[WM][NV];
  for (int r = 0; r < WM; r++)
    for (int v = 0; v < NV; v++)
      acc[r][v] = (VT)0;
#if USE_LOCAL == 1
  __local CT as[TK * TM], bs[TK * TN];
  const int nthreads = (TN / WN) * (TM / WM), tid = ty * (TN / WN) + tx;
  for (long p0 = 0; p0 < kend; p0 += TK) {
    for (int e = tid; e < TK * TM; e += nthreads)
      as[e] = ap[p0 * TM + e];
    for (int e = tid; e < TK * TN; e += nthreads)
      bs[e] = BLD1(bp, (p0 + e / TN) * bstep + e % TN);
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll UK
    for (int p = 0; p < TK; p++)
      MICRO_STEP(as + p * TM + ty * WM, bs + p * TN + tx * WN, CVLOAD);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#elif USE_LOCAL == 2
  /* K blocks of TK separated by barriers, no local memory: on CPU drivers
   * (PoCL) a barrier makes every item of the group finish block k before
   * any starts block k + 1, so the group's TK-deep slices of both panels
   * stay in L1 while all its items use them. */
  __global const CT *a = ap + ty * WM;
  __global const BT *b = bp + tx * WN;
  for (long p0 = 0; p0 < kend; p0 += TK) {
    for (int p1 = 0; p1 < TK; p1 += UK) {
#pragma unroll
      for (int p = 0; p < UK; p++)
        MICRO_STEP(a + (p0 + p1 + p) * TM, b + (p0 + p1 + p) * bstep, BVLOAD);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
#else
  __global const CT *a = ap + ty * WM;
  __global const BT *b = bp + tx * WN;
  for (long p0 = 0; p0 < kend; p0 += UK) {
#pragma unroll
    for (int p = 0; p < UK; p++)
      MICRO_STEP(a + (p0 + p) * TM, b + (p0 + p) * bstep, BVLOAD);
  }
#endif
  /* C's batch index splits in two (attention's batch and head). */
  long cbi = bi + boff;
  __global T *c = BP_PTR(T, cb, co) + (cbi / nb1) * csb + (cbi % nb1) * csb1;
  for (int r = 0; r < WM; r++) {
    long i = i0 + ty * WM + r;
    if (i >= m)
      break;
    CT vals[WN];
    for (int v = 0; v < NV; v++)
      BP_CAT(vstore, VW)(acc[r][v], 0, vals + v * VW);
    for (int q = 0; q < WN; q++) {
      long j = jb + tx * WN + q;
      if (j >= n)
        break;
      if (j < j0) /* computed by the tile before */
        continue;
      long oc = i * csm + j * csn;
      CT val = alpha * vals[q];
      if (beta != (CT)0)
        val = fma(beta, (CT)LD(c, oc), val);
      ST(c, oc, gemm_epi(val, eb, eo, es, act, cbi, i, j));
    }
  }
}
#endif /* TM */

/* ---- skinny: C has m <= MB rows (a few tokens through a layer) ----------
 * Each work-item owns SKV-wide column blocks of C and keeps their m rows of
 * sums in explicit vectors, so B is read exactly once with whole-vector
 * loads (CPU drivers run a work-item's loop as is: vectors in the source
 * are what reach the SIMD units). A row index past m reads row m - 1 again
 * (always valid) and is never stored.
 * gemm_skinny_n: B's rows are contiguous (column stride 1); an item walks
 * SK_NV blocks of 16 columns down k. gemm_skinny_k: B's columns and A's
 * rows are contiguous along k (x Wt, the usual linear layer); an item
 * takes one column and reduces it against the m rows 16 at a time. */
#define SKV 16
#if DT == 1
#define SK_LD(p, i) vload_half16(0, (p) + (i))
#elif DT == 2
#define SK_LD(p, i) as_float16(convert_uint16(vload16(0, (p) + (i))) << 16)
#else
#define SK_LD(p, i) vload16(0, (p) + (i))
#endif
#define SK_VT BP_CAT(CT, 16)
#ifdef MB
/* Column blocks per item: fewer rows leave registers for more columns. */
#define SK_NV (MB == 1 ? 8 : MB <= 2 ? 4 : MB <= 4 ? 2 : 1)

inline void sk_store(__global T *c, long csm, long csn, long m, long n,
                     long j, SK_VT v, int r, CT alpha, CT beta, long bi,
                     GEMM_EPI_ARGS) {
  CT vals[SKV];
  vstore16(v, 0, vals);
  for (int q = 0; q < SKV && j + q < n; q++) {
    long oc = r * csm + (j + q) * csn;
    CT x = alpha * vals[q];
    if (beta != (CT)0)
      x = fma(beta, (CT)LD(c, oc), x);
    ST(c, oc, gemm_epi(x, eb, eo, es, act, bi, r, j + q));
  }
}

__kernel void gemm_skinny_n(__global const uchar *ab, ulong ao,
                            __global const uchar *bb, ulong bo,
                            __global uchar *cb, ulong co, long m, long n,
                            long k, long8 s, /* a: b m k, b: b k n */
                            long csb, long csm, long csn, CT alpha, CT beta,
                            GEMM_EPI_ARGS) {
  long j0 = get_global_id(0) * (SKV * SK_NV), bi = get_global_id(1);
  if (j0 >= n)
    return;
  __global const T *a = BP_PTR(const T, ab, ao) + bi * s.s0;
  __global const T *b = BP_PTR(const T, bb, bo) + bi * s.s3;
  long ar[MB];
  SK_VT acc[MB][SK_NV];
  for (int r = 0; r < MB; r++) {
    ar[r] = min((long)r, m - 1) * s.s1;
    for (int v = 0; v < SK_NV; v++)
      acc[r][v] = 0;
  }
  /* Blocks past n (the last item's) read a valid block instead. */
  long jb[SK_NV];
  for (int v = 0; v < SK_NV; v++)
    jb[v] = min(j0 + v * SKV, n - SKV);
  for (long p = 0; p < k; p++) {
    SK_VT bv[SK_NV];
#pragma unroll
    for (int v = 0; v < SK_NV; v++)
      bv[v] = SK_LD(b, p * s.s4 + jb[v]);
#pragma unroll
    for (int r = 0; r < MB; r++) {
      SK_VT av = (SK_VT)((CT)LD(a, ar[r] + p * s.s2));
#pragma unroll
      for (int v = 0; v < SK_NV; v++)
        acc[r][v] = fma(av, bv[v], acc[r][v]);
    }
  }
  __global T *c = BP_PTR(T, cb, co) + bi * csb;
  for (int v = 0; v < SK_NV; v++) {
    long j = j0 + v * SKV;
    if (j >= n)
      break;
    /* a block moved back to fit holds columns jb..: store from j on */
    for (int r = 0; r < MB && r < m; r++) {
      SK_VT x = acc[r][v];
      if (jb[v] != j) {
        CT t[SKV];
        vstore16(x, 0, t);
        int sh = (int)(j - jb[v]);
        for (int q = 0; q < SKV; q++)
          t[q] = q + sh < SKV ? t[q + sh] : 0;
        x = vload16(0, t);
      }
      sk_store(c, csm, csn, m, n, j, x, r, alpha, beta, bi, eb, eo, es, act);
    }
  }
}

__kernel void gemm_skinny_k(__global const uchar *ab, ulong ao,
                            __global const uchar *bb, ulong bo,
                            __global uchar *cb, ulong co, long m, long n,
                            long k, long8 s, /* a: b m k, b: b k n */
                            long csb, long csm, long csn, CT alpha, CT beta,
                            GEMM_EPI_ARGS) {
  long j = get_global_id(0), bi = get_global_id(1);
  if (j >= n)
    return;
  __global const T *a = BP_PTR(const T, ab, ao) + bi * s.s0;
  __global const T *b = BP_PTR(const T, bb, bo) + bi * s.s3 + j * s.s5;
  long ar[MB];
  SK_VT acc[MB];
  for (int r = 0; r < MB; r++) {
    ar[r] = min((long)r, m - 1) * s.s1;
    acc[r] = 0;
  }
  long kv = k / SKV * SKV;
  for (long p = 0; p < kv; p += SKV) {
    SK_VT bv = SK_LD(b, p);
#pragma unroll
    for (int r = 0; r < MB; r++)
      acc[r] = fma(SK_LD(a, ar[r] + p), bv, acc[r]);
  }
  __global T *c = BP_PTR(T, cb, co) + bi * csb + j * csn;
  for (int r = 0; r < MB && r < m; r++) {
    CT t[SKV], sum = 0;
    vstore16(acc[r], 0, t);
    for (int q = 0; q < SKV; q++)
      sum += t[q];
    for (long p = kv; p < k; p++)
      sum = fma((CT)LD(a, ar[r] + p), (CT)LD(b, p), sum);
    CT x = alpha * sum;
    if (beta != (CT)0)
      x = fma(beta, (CT)LD(c, r * csm), x);
    ST(c, r * csm, gemm_epi(x, eb, eo, es, act, bi, r, j));
  }
}
#endif /* MB */

/* ---- gemv: one work-group per output row, work-group reduction ---------- */
#define GEMV_WG 64
__kernel __attribute__((reqd_work_group_size(GEMV_WG, 1, 1))) void
gemv(__global const uchar *ab, ulong ao, __global const uchar *xb, ulong xo,
     __global uchar *yb, ulong yo, long m, long n, long sam, long san,
     long sx, long sy, CT alpha, CT beta) {
  __local CT part[GEMV_WG];
  long i = get_group_id(0);
  int t = get_local_id(0);
  __global const T *a = BP_PTR(const T, ab, ao) + i * sam;
  __global const T *x = BP_PTR(const T, xb, xo);
  CT acc = 0;
  for (long j = t; j < n; j += GEMV_WG)
    acc = fma((CT)LD(a, j * san), (CT)LD(x, j * sx), acc);
  part[t] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = GEMV_WG / 2; w > 0; w >>= 1) {
    if (t < w)
      part[t] += part[t + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) {
    __global T *y = BP_PTR(T, yb, yo);
    CT v = alpha * part[0];
    if (beta != (CT)0)
      v = fma(beta, (CT)LD(y, i * sy), v);
    ST(y, i * sy, v);
  }
}

/* ---- matrix-vector product at the memory's streaming rate --------------
 * y = alpha W x + beta y (+ the epilogue), for the 1 x k x n GEMM and gemv.
 * A CPU driver runs each work-item as a plain loop, so speed comes from
 * long contiguous whole-vector reads and from enough items for every core,
 * not from work-group cooperation (barriers and local memory cost there).
 *
 * mv_cols_part + mv_cols_sum: W is [k][n] with contiguous rows (x^T B, a
 * decode step's x W). Item s of batch bi takes rows [s kc, s kc + kc) and
 * walks across all n columns MV_NV vectors at a time, so each of its kc
 * rows is read front to back (kc concurrent sequential streams the
 * prefetcher follows) instead of one narrow column block down all k rows;
 * it leaves one partial row part[bi][s][:]. mv_cols_sum adds the nsplit
 * partials of each column, then alpha, beta and the epilogue.
 * mv_rows: W's rows are contiguous along k (A x, x Wt): an item per output
 * reads its row front to back. */
#define MV_NV 8

/* Partial sums of one column block starting at j (moved back to n - SKV
 * when it would pass n: those columns are then stored from j on only). */
inline void mv_part_store(__global CT *out, long n, long j, long jb, SK_VT v) {
  if (jb == j) {
    vstore16(v, 0, out + j);
    return;
  }
  CT t[SKV];
  vstore16(v, 0, t);
  for (long q = j; q < n; q++)
    out[q] = t[q - jb];
}

__kernel void mv_cols_part(__global const uchar *xb, ulong xo, long sx,
                           long sxb, __global const uchar *wb, ulong wo,
                           long swk, long swb, __global CT *part, long n,
                           long k, long kc, long nsplit) {
  long s = get_global_id(0), bi = get_global_id(1);
  if (s >= nsplit)
    return;
  long p0 = s * kc, p1 = min(k, p0 + kc);
  __global const T *x = BP_PTR(const T, xb, xo) + bi * sxb;
  __global const T *w = BP_PTR(const T, wb, wo) + bi * swb;
  __global CT *out = part + (bi * nsplit + s) * n;
  for (long j0 = 0; j0 < n; j0 += SKV * MV_NV) {
    long jb[MV_NV];
    SK_VT acc[MV_NV];
#pragma unroll
    for (int v = 0; v < MV_NV; v++) {
      jb[v] = min(j0 + v * SKV, n - SKV);
      acc[v] = 0;
    }
    for (long p = p0; p < p1; p++) {
      SK_VT xv = (SK_VT)((CT)LD(x, p * sx));
      __global const T *row = w + p * swk;
#pragma unroll
      for (int v = 0; v < MV_NV; v++)
        acc[v] = fma(xv, SK_LD(row, jb[v]), acc[v]);
    }
    for (int v = 0; v < MV_NV && j0 + v * SKV < n; v++)
      mv_part_store(out, n, j0 + v * SKV, jb[v], acc[v]);
  }
}

__kernel void mv_cols_sum(__global const CT *part, long nsplit,
                          __global uchar *cb, ulong co, long n, long csb,
                          long csn, CT alpha, CT beta, GEMM_EPI_ARGS) {
  long j = get_global_id(0), bi = get_global_id(1);
  if (j >= n)
    return;
  __global const CT *p = part + bi * nsplit * n + j;
  CT sum = 0;
  for (long s = 0; s < nsplit; s++)
    sum += p[s * n];
  gemm_store1(cb, co, bi * csb + j * csn, sum, alpha, beta, eb, eo, es, act, bi,
              0, j);
}

/* x must be contiguous (whole-vector loads of both). */
__kernel void mv_rows(__global const uchar *wb, ulong wo, long swr, long swb,
                      __global const uchar *xb, ulong xo, long sxb,
                      __global uchar *cb, ulong co, long n, long k, long csb,
                      long csn, CT alpha, CT beta, GEMM_EPI_ARGS) {
  long j = get_global_id(0), bi = get_global_id(1);
  if (j >= n)
    return;
  __global const T *w = BP_PTR(const T, wb, wo) + bi * swb + j * swr;
  __global const T *x = BP_PTR(const T, xb, xo) + bi * sxb;
  /* four independent sums: the loads, not the add latency, set the pace */
  SK_VT a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  long kv = k / (4 * SKV) * (4 * SKV), p = 0;
  for (; p < kv; p += 4 * SKV) {
    a0 = fma(SK_LD(w, p), SK_LD(x, p), a0);
    a1 = fma(SK_LD(w, p + SKV), SK_LD(x, p + SKV), a1);
    a2 = fma(SK_LD(w, p + 2 * SKV), SK_LD(x, p + 2 * SKV), a2);
    a3 = fma(SK_LD(w, p + 3 * SKV), SK_LD(x, p + 3 * SKV), a3);
  }
  CT t[SKV], sum = 0;
  vstore16((a0 + a1) + (a2 + a3), 0, t);
  for (int q = 0; q < SKV; q++)
    sum += t[q];
  for (; p < k; p++)
    sum = fma((CT)LD(w, p), (CT)LD(x, p), sum);
  gemm_store1(cb, co, bi * csb + j * csn, sum, alpha, beta, eb, eo, es, act, bi,
              0, j);
}
