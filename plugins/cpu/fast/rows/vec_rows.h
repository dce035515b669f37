/*
 * fast/rows/vec_rows.h — the softmax and norm row kernels of fast/vec.h, part of
 * the fast/vec_kern.h template (included from there, after the ISA ops).
 *
 * A row that fits in L1 / L2 is read from memory once: the first pass pulls
 * it in, the later passes find it in cache. While a middle, compute-heavy
 * pass runs (softmax's exps, layer norm's squared deviations), the next
 * row (`next`, from the driver; NULL for none) is prefetched one cache
 * line per 64 bytes of progress, so the fetch of row r + 1 overlaps the
 * arithmetic on row r instead of following it. Not while the output
 * streams out: there the prefetches compete with the streaming stores.
 *
 * With `nt` the output is written with non-temporal stores (a normal head
 * up to the vector boundary, then aligned streaming stores, then a normal
 * tail): memory sees no read-for-ownership of y and the caches keep x.
 * Softmax then keeps its exps in a stack scratch rather than in y, so y is
 * written exactly once. The caller fences (cpu_fast_rows_run does).
 */

/* Rows up to this many floats stay in cache between passes: max, then exp
 * and sum, then scale — one exp per element, and memory still sees one
 * read and one write. Longer rows use the online form. */
#define SOFTMAX_CACHED_ROW 16384

/* c lanes from p (c <= VL; c == VL folds to a plain load). */
static inline __attribute__((always_inline)) V ldn(const float *p, int64_t c) {
  return c >= VL ? vload(p) : vload_n(p, c);
}

/* Prefetches next's line at element i, once per 16 elements (64 bytes)
 * of i stepping by VL from any start. */
static inline __attribute__((always_inline)) void pf_next(const float *next,
                                                         int64_t i) {
  if (next && (i & 15) < VL) _mm_prefetch((const char *)(next + i), _MM_HINT_T0);
}

/* Streaming stores go out in whole 64-byte lines only. A line written
 * partly by a streaming store and partly by a normal one (a row's ends,
 * when rows are not whole lines) makes the write-combining buffer flush a
 * partial line; with rows of 100 floats that stalled the stores for a
 * quarter of the row's time. */
#define NT_LINE 16 /* floats in a 64-byte line */

/* Lanes of y before its first 64-byte-aligned element (at most n). */
static inline int64_t nt_head(const float *y, int64_t n) {
  uintptr_t mis = (uintptr_t)0 - (uintptr_t)y;
  int64_t h = (int64_t)(mis & (NT_LINE * sizeof(float) - 1)) / (int64_t)sizeof(float);
  return h < n ? h : n;
}

/* End of the whole lines that start at lane h (the head) of a row of n. */
static inline int64_t nt_lines_end(int64_t h, int64_t n) {
  return h + (n - h) / NT_LINE * NT_LINE;
}

/* y[i .. i+c) = F(i, c) over the row, c = VL but at the ends; F is a macro
 * of the element index and the lane count. With nt, the whole 64-byte
 * lines take streaming stores and the partial ones at the ends normal
 * stores. */
#define ROW_OUT(y, n, nt, F)                                                   \
  do {                                                                         \
    int64_t i_ = 0, c_;                                                        \
    if (nt) {                                                                  \
      int64_t h_ = nt_head((y), (n)), e_ = nt_lines_end(h_, (n));              \
      for (; i_ < h_; i_ += c_) {                                              \
        c_ = h_ - i_ < VL ? h_ - i_ : VL;                                      \
        vstore_n((y) + i_, F(i_, c_), c_);                                     \
      }                                                                        \
      for (; i_ < e_; i_ += VL) vstream((y) + i_, F(i_, VL));                  \
    }                                                                          \
    for (; i_ + VL <= (n); i_ += VL) vstore((y) + i_, F(i_, VL));              \
    if (i_ < (n)) {                                                            \
      c_ = (n) - i_;                                                           \
      vstore_n((y) + i_, F(i_, c_), c_);                                       \
    }                                                                          \
  } while (0)

/* ---- softmax ----------------------------------------------------------------*/

/* Lanes past n read as fill (-inf adds nothing to any sum). */
static inline V load_or(const float *p, int64_t n, float fill) {
  if (n >= VL) return vload(p);
  return vload_n_or(p, n, fill);
}

/* Adds the block x to the running per-lane (max m, sum s). x = -inf adds 0
 * (and m - m is not computed when m did not move, so -inf lanes stay
 * finite); NaN reaches s through exp and makes the row NaN. */
static inline void online_step(V x, V *m, V *s) {
  V mn = vmax(x, *m); /* a NaN x leaves the max alone */
  M moved = VCMP(mn, *m, _CMP_NEQ_OQ);
  V scale = vsel(moved, vset1(1.0f), vexp(vsub(*m, mn)));
  V t = vexp(vsub(x, mn));
  t = vsel(VCMP(x, vset1(-INFINITY), _CMP_EQ_OQ), t, vset1(0.0f));
  *s = vfma(*s, scale, t);
  *m = mn;
}

/* The row's max, NaN ignored (a NaN reaches the output through its exp:
 * NaN - max is NaN, so the sum and every output are NaN, as the
 * reference has them). */
static float row_max(const float *x, int64_t n) {
  /* four chains: a max's latency is two cycles or more */
  V m0 = vset1(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  for (; i + 4 * VL <= n; i += 4 * VL) {
    m0 = vmax(vload(x + i), m0), m1 = vmax(vload(x + i + VL), m1);
    m2 = vmax(vload(x + i + 2 * VL), m2), m3 = vmax(vload(x + i + 3 * VL), m3);
  }
  for (; i < n; i += VL) m0 = vmax(load_or(x + i, n - i, -INFINITY), m0);
  return hmax(vmax(vmax(m0, m1), vmax(m2, m3)));
}

/* Sum of e^(x - mx); stores the terms into e when e != NULL. With a
 * pending output (py: a row of n floats starting on a vector boundary, pe
 * its exps), streams py = pe * pinv out in the same loop, two vectors per
 * two exps, so the stores drain while the exps are computed. */
static inline __attribute__((always_inline)) float row_expsum(
    const float *x, float *e, int64_t n, float mx, const float *next, float *py,
    const float *pe, float pinv) {
  V M_ = vset1(mx), s0 = vset1(0.0f), s1 = s0, PI = vset1(pinv);
  int64_t i = 0;
  for (; i + 2 * VL <= n; i += 2 * VL) {
    pf_next(next, i);
    pf_next(next, i + VL);
    V e0 = vexp_soft(vsub(vload(x + i), M_));
    V e1 = vexp_soft(vsub(vload(x + i + VL), M_));
    if (e) vstore(e + i, e0), vstore(e + i + VL, e1);
    if (py) {
      vstream(py + i, vmul(vload(pe + i), PI));
      vstream(py + i + VL, vmul(vload(pe + i + VL), PI));
    }
    s0 = vadd(s0, e0), s1 = vadd(s1, e1);
  }
  for (; i < n; i += VL) {
    int64_t left = n - i < VL ? n - i : VL;
    pf_next(next, i);
    V t = vexp_soft(vsub(load_or(x + i, left, -INFINITY), M_));
    if (e) vstore_n(e + i, t, left);
    if (py) {
      V o = vmul(ldn(pe + i, left), PI);
      if (left == VL) vstream(py + i, o);
      else vstore_n(py + i, o, left);
    }
    s0 = vadd(s0, t);
  }
  return hsum(vadd(s0, s1));
}

/* Max and sum of e^(x - max) in one pass (rows too long for the cache). */
static float online_max_sum(const float *x, int64_t n, float *sum) {
  V m0 = vset1(-INFINITY), s0 = vset1(0.0f), m1 = m0, s1 = s0;
  int64_t i = 0;
  for (; i + 2 * VL <= n; i += 2 * VL) {
    online_step(vload(x + i), &m0, &s0);
    online_step(vload(x + i + VL), &m1, &s1);
  }
  for (; i < n; i += VL) online_step(load_or(x + i, n - i, -INFINITY), &m0, &s0);
  float mx = hmax(vmax(m0, m1));
  if (mx == -INFINITY) {
    *sum = NAN; /* all -inf: -inf - -inf, as the reference */
    return mx;
  }
  V M_ = vset1(mx);
  *sum = hsum(vfma(s0, vexp(vsub(m0, M_)), vmul(s1, vexp(vsub(m1, M_)))));
  return mx;
}

/* Writes a pending softmax output on its own (the rows that cannot take it
 * in their exp pass). */
static void softmax_flush(cpu_fast_sm_defer_t *d, int64_t n) {
  if (!d || !d->y) return;
  const float *pe = d->e;
  V PI = vset1(d->inv);
#define PEND_OUT(i, c) vmul(ldn(pe + (i), (c)), PI)
  ROW_OUT(d->y, n, true, PEND_OUT);
#undef PEND_OUT
  d->y = NULL;
}

static void k_softmax_row(const float *x, float *y, int64_t n, int log_,
                          const float *next, bool nt, cpu_fast_sm_defer_t *d) {
  float mx, sum;
  /* the exps: in y (the last pass finds them in cache), or with streaming
   * stores in a scratch row (the stack's, or the deferral's), so that y is
   * written once */
  float scratch[SOFTMAX_SCRATCH_ROW] __attribute__((aligned(64)));
  float *e = NULL;
  bool scratch_row = nt && n <= SOFTMAX_SCRATCH_ROW && !log_;
  /* a pending output goes out with this row's exps when this row has an
   * exp pass over a row of the same length (the caller's rows all have n) */
  bool take = d && d->y && n <= SOFTMAX_CACHED_ROW;
  if (d && d->y && !take) softmax_flush(d, n);
  if (n <= SOFTMAX_CACHED_ROW) {
    mx = row_max(x, n);
    /* an all -inf row gives NaN (-inf - -inf), as the reference */
    if (mx == -INFINITY) mx = NAN;
    e = log_ ? NULL : scratch_row ? (d ? d->buf[d->cur] : scratch) : y;
    /* one loop per case (inlined with constant NULLs), so none tests e
     * or the pending output per vector */
    if (take)
      sum = row_expsum(x, e, n, mx, next, d->y, d->e, d->inv);
    else if (e)
      sum = row_expsum(x, e, n, mx, next, NULL, NULL, 0.0f);
    else
      sum = row_expsum(x, NULL, n, mx, next, NULL, NULL, 0.0f);
    if (take) d->y = NULL;
  } else {
    mx = online_max_sum(x, n, &sum);
    if (mx == -INFINITY) mx = NAN;
  }
  V M_ = vset1(mx);
  if (log_) {
    /* (x - max) - lse: x - max is exact near the max, so large offsets
     * lose nothing to a rounded max + lse */
    V lse = vset1((float)log((double)sum));
#define LOGSM_OUT(i, c) vsub(vsub(ldn(x + (i), (c)), M_), lse)
    ROW_OUT(y, n, nt, LOGSM_OUT);
#undef LOGSM_OUT
    return;
  }
  float inv1 = (float)(1.0 / (double)sum);
  if (d && next && scratch_row && nt_head(y, n) == 0 && n % NT_LINE == 0) {
    /* leave it pending: the next row's exp pass writes it */
    *d = (cpu_fast_sm_defer_t){{d->buf[0], d->buf[1]}, d->cur ^ 1, y, e, inv1};
    return;
  }
  V inv = vset1(inv1);
  if (e) {
#define SM_OUT(i, c) vmul(ldn(e + (i), (c)), inv)
    ROW_OUT(y, n, nt, SM_OUT);
#undef SM_OUT
    return;
  }
#define SM_ONLINE_OUT(i, c) vmul(vexp(vsub(ldn(x + (i), (c)), M_)), inv)
  ROW_OUT(y, n, nt, SM_ONLINE_OUT);
#undef SM_ONLINE_OUT
}

/* ---- norms ------------------------------------------------------------------*/

/* Sums of d = x - c and of d^2 in one pass: within a block of eight
 * vectors in f32 (two chains each, for latency), the blocks added into
 * double, so the conversions cost a quarter of a vector op. Lanes past n
 * read as c and add nothing. The next row is prefetched on the way. */
static inline __attribute__((always_inline)) void
row_moments_d(const float *x, int64_t n, float c, const float *next, bool with_sum,
              double *s1, double *s2) {
  VD sa = vd_zero(), sb = vd_zero(), qa = vd_zero(), qb = vd_zero();
  V vc = vset1(c), z = vset1(0.0f);
  int64_t i = 0;
  while (i < n) {
    V s0 = z, s1v = z, q0 = z, q1 = z;
    int64_t stop = n - i < 8 * VL ? n : i + 8 * VL;
    for (; i + 2 * VL <= stop; i += 2 * VL) {
      pf_next(next, i);
      pf_next(next, i + VL);
      V d0 = vsub(vload(x + i), vc), d1 = vsub(vload(x + i + VL), vc);
      if (with_sum) s0 = vadd(s0, d0), s1v = vadd(s1v, d1);
      q0 = vfma(d0, d0, q0), q1 = vfma(d1, d1, q1);
    }
    for (; i < stop; i += VL) {
      pf_next(next, i);
      V d = vsub(load_or(x + i, stop - i < VL ? stop - i : VL, c), vc);
      if (with_sum) s0 = vadd(s0, d);
      q0 = vfma(d, d, q0);
    }
    if (with_sum) vacc_d(vadd(s0, s1v), &sa, &sb);
    vacc_d(vadd(q0, q1), &qa, &qb);
  }
  *s1 = vd_hsum(sa) + vd_hsum(sb);
  *s2 = vd_hsum(qa) + vd_hsum(qb);
}

/* Sum of (x - c)^2 on its own: the exact second pass of a layer norm
 * whose one-pass variance would cancel too much. */
static double row_sqdev_d(const float *x, int64_t n, float c) {
  double s1, s2;
  row_moments_d(x, n, c, NULL, false, &s1, &s2);
  return s2;
}

/* Mean and variance of a row (layer norm). One pass gives them as
 * E[d] and E[d^2] - E[d]^2 with d = x - x[0]; when E[d]^2 is large
 * against the variance (x[0] far out in the row) that difference would
 * cancel, and a second pass over the cached row sums (x - mean)^2
 * instead, so the variance keeps about f32 accuracy either way. */
static void row_mean_var(const float *x, int64_t n, const float *next, double *mean,
                         double *var) {
  float c = isfinite(x[0]) ? x[0] : 0.0f;
  double s1, s2;
  row_moments_d(x, n, c, next, true, &s1, &s2);
  double m = s1 / (double)n;
  *mean = (double)c + m;
  *var = s2 / (double)n - m * m;
  if (m * m <= 8.0 * *var) return; /* also false for NaN: exact pass */
  float fm = (float)*mean;
  double dm = *mean - (double)fm;
  *var = row_sqdev_d(x, n, fm) / (double)n - dm * dm;
}

/* A row the f32 passes cannot take, all in double (scalar): there no
 * square or sum of f32 values overflows or underflows. */
static void norm_row_double(const float *x, float *y, int64_t n, const float *gamma,
                            const float *beta, double eps, int rms) {
  double mean = 0.0, var = 0.0;
  for (int64_t i = 0; i < n && !rms; i++)
    mean += x[i];
  mean /= rms ? 1.0 : (double)n;
  for (int64_t i = 0; i < n; i++)
    var += ((double)x[i] - mean) * ((double)x[i] - mean);
  double inv = 1.0 / sqrt(var / (double)n + eps);
  for (int64_t i = 0; i < n; i++) {
    double v = ((double)x[i] - mean) * inv;
    v *= gamma ? gamma[i] : 1.0f;
    y[i] = (float)(v + (beta && !rms ? beta[i] : 0.0f));
  }
}

static void k_norm_row(const float *x, float *y, int64_t n, const float *gamma,
                       const float *beta, double eps, int rms,
                       const float *next, bool nt) {
  double mean = 0.0, var;
  if (rms) {
    /* RMS norm's one pass is its first: prefetching the next row while
     * this one arrives measured slower (the prefetches and the streaming
     * stores share fill buffers) */
    double unused;
    row_moments_d(x, n, 0.0f, NULL, false, &unused, &var);
    var /= (double)n;
  } else {
    row_mean_var(x, n, next, &mean, &var);
  }
  /* The f32 squares and block sums overflow past |x - mean| ~ 1.8e19 (var
   * inf or NaN; NaN and inf inputs land here too) and lose their precision
   * under ~1e-19 (var below 2^-100), which matters only when eps does not
   * swamp the variance: such rows go through double instead. */
  if (!(var <= 0x1p100) || (var < 0x1p-100 && eps < 0x1p-60)) {
    norm_row_double(x, y, n, gamma, beta, eps, rms);
    return;
  }
  /* (x - mean) / sd as (x - fm) * inv + c: fm the f32 mean, c its rounding
   * residue times -inv, so one multiply-add applies both */
  float fm = (float)mean, inv = (float)(1.0 / sqrt(var + eps));
  V vm = vset1(fm), vi = vset1(inv), vc = vset1((float)(-(mean - fm) * inv));
  /* one loop per gamma / beta presence, so none tests them per vector */
#define NORM_X(i, c) vfma(vsub(ldn(x + (i), (c)), vm), vi, vc)
#define LN_GB(i, c) vfma(NORM_X(i, c), ldn(gamma + (i), (c)), ldn(beta + (i), (c)))
#define LN_G(i, c) vmul(NORM_X(i, c), ldn(gamma + (i), (c)))
#define LN_B(i, c) vadd(NORM_X(i, c), ldn(beta + (i), (c)))
#define RMS_G(i, c) vmul(vmul(ldn(x + (i), (c)), vi), ldn(gamma + (i), (c)))
#define RMS_X(i, c) vmul(ldn(x + (i), (c)), vi)
  if (rms) {
    if (gamma) ROW_OUT(y, n, nt, RMS_G);
    else ROW_OUT(y, n, nt, RMS_X);
  } else if (gamma && beta) {
    ROW_OUT(y, n, nt, LN_GB);
  } else if (gamma) {
    ROW_OUT(y, n, nt, LN_G);
  } else if (beta) {
    ROW_OUT(y, n, nt, LN_B);
  } else {
    ROW_OUT(y, n, nt, NORM_X);
  }
#undef NORM_X
#undef LN_GB
#undef LN_G
#undef LN_B
#undef RMS_G
#undef RMS_X
}
