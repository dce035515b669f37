/*
 * fast_vec_kern.h — the row kernels of fast_vec.h, written once in the
 * vector ops of fast_vec_isa.h and instantiated per ISA: the includer
 * defines FAST_VEC_512 or not and FAST_VEC_TABLE (the table's name).
 * Rows are processed in whole vectors plus one masked tail.
 */
#include <math.h>
#include <string.h>

#include "fast_vec.h"
#include "fast_vec_isa.h"
#include "fast_vec_math.h"

/* ---- depthwise conv -------------------------------------------------------*/

/* nv vectors of one output row from ow on; the last may be partial. */
static inline __attribute__((always_inline)) void
dw_group(const float *rows, const int64_t *toff, const float *w, int64_t taps,
         float bias, float *yr, int64_t ow, int64_t Q, int nv) {
  V acc[4];
  for (int v = 0; v < nv; v++) acc[v] = vset1(bias);
  for (int64_t t = 0; t < taps; t++) {
    V wt = vset1(w[t]);
    const float *src = rows + toff[t] + ow;
    for (int v = 0; v < nv; v++) acc[v] = vfma(wt, vload(src + v * VL), acc[v]);
  }
  for (int v = 0; v < nv; v++) {
    int64_t left = Q - ow - v * VL;
    if (left >= VL)
      vstore(yr + ow + v * VL, acc[v]);
    else
      vstore_n(yr + ow + v * VL, acc[v], left);
  }
}

/* The padded plane is stored split by column phase (column c at phase
 * c % sw, index c / sw, each phase Wq = Wp / sw wide), so that the taps of
 * a strided stencil read contiguous vectors too. */
static void k_dw_plane(const fast_dw_geom_t *g, const float *x, const float *w,
                       float bias, float *y, float *buf) {
  const int64_t sw = g->sw, Wq = g->Wp / sw, Wr = sw * Wq, Q = g->Q;
  float *tmp = buf + g->Hp * Wr; /* one padded row, before the split */
  int64_t w0 = g->pw < Wr ? g->pw : Wr;
  int64_t w1 = g->pw + g->W < Wr ? g->pw + g->W : Wr;
  for (int64_t h = 0; h < g->Hp; h++) {
    int64_t ih = h - g->ph;
    float *d = buf + h * Wr, *row = sw == 1 ? d : tmp;
    if (ih < 0 || ih >= g->H) {
      memset(d, 0, (size_t)Wr * sizeof *d);
      continue;
    }
    const float *s = x + ih * g->sxh;
    memset(row, 0, (size_t)w0 * sizeof *row);
    if (g->sxw == 1)
      memcpy(row + w0, s, (size_t)(w1 - w0) * sizeof *s);
    else
      for (int64_t c = w0; c < w1; c++) row[c] = s[(c - g->pw) * g->sxw];
    memset(row + w1, 0, (size_t)(Wr - w1) * sizeof *row);
    if (sw == 2)
      for (int64_t q = 0; q < Wq; q++) d[q] = tmp[2 * q], d[Wq + q] = tmp[2 * q + 1];
    else if (sw > 2)
      for (int64_t q = 0; q < Wq; q++)
        for (int64_t f = 0; f < sw; f++) d[f * Wq + q] = tmp[q * sw + f];
  }
  const int64_t R = g->R, S = g->S;
  int64_t toff[64]; /* tap (r, s): offset from the output row's first row */
  for (int64_t r = 0; r < R; r++)
    for (int64_t s = 0; s < S; s++) {
      int64_t c = s * g->dw;
      toff[r * S + s] = r * g->dh * Wr + (c % sw) * Wq + c / sw;
    }
  for (int64_t oh = 0; oh < g->P; oh++) {
    const float *rows = buf + oh * g->sh * Wr;
    float *yr = y + oh * Q;
    for (int64_t ow = 0; ow < Q;) {
      int64_t nv = (Q - ow + VL - 1) / VL;
      if (nv >= 4) nv = 4;
      switch (nv) { /* independent accumulators hide the FMA latency */
      case 4: dw_group(rows, toff, w, R * S, bias, yr, ow, Q, 4); break;
      case 3: dw_group(rows, toff, w, R * S, bias, yr, ow, Q, 3); break;
      case 2: dw_group(rows, toff, w, R * S, bias, yr, ow, Q, 2); break;
      default: dw_group(rows, toff, w, R * S, bias, yr, ow, Q, 1); break;
      }
      ow += nv * VL;
    }
  }
}

/* ---- softmax ----------------------------------------------------------------*/

/* Lanes past n read as -inf, which adds nothing to any sum. */
static inline V load_or(const float *p, int64_t n, float fill) {
  if (n >= VL) return vload(p);
  float lane[VL];
  vstore(lane, vset1(fill));
  memcpy(lane, p, (size_t)n * sizeof *p);
  return vload(lane);
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

/* Rows up to this many floats stay in L2 between passes: max, then exp
 * and sum (exps stored in y), then scale — one exp per element, and memory
 * still sees one read and one write. Longer rows use the online form. */
#define SOFTMAX_CACHED_ROW 16384

/* Rows are read several times while in cache, which stalls the hardware
 * prefetcher between rows: the last pass fetches the row that follows in
 * memory (the next row of a dense tensor; a harmless hint otherwise). */
static inline void next_row_prefetch(const float *x, int64_t n, int64_t i) {
  if (n <= SOFTMAX_CACHED_ROW && (i & 15) == 0)
    _mm_prefetch((const char *)(x + n + i), _MM_HINT_T0);
}

static float row_max(const float *x, int64_t n) {
  V m0 = vset1(-INFINITY), m1 = m0;
  M nan = VCMP(m0, m0, _CMP_UNORD_Q);
  int64_t i = 0;
  for (; i + 2 * VL <= n; i += 2 * VL) {
    V a = vload(x + i), b = vload(x + i + VL);
    nan = mor(nan, mor(VCMP(a, a, _CMP_UNORD_Q), VCMP(b, b, _CMP_UNORD_Q)));
    m0 = vmax(a, m0), m1 = vmax(b, m1);
  }
  for (; i < n; i += VL) {
    V a = load_or(x + i, n - i, -INFINITY);
    nan = mor(nan, VCMP(a, a, _CMP_UNORD_Q));
    m0 = vmax(a, m0);
  }
  return many(nan) ? NAN : hmax(vmax(m0, m1));
}

/* sum of e^(x - mx); stores the terms into y when y != NULL */
static float row_expsum(const float *x, float *y, int64_t n, float mx) {
  V M_ = vset1(mx), s0 = vset1(0.0f), s1 = s0;
  int64_t i = 0;
  for (; i + 2 * VL <= n; i += 2 * VL) {
    V e0 = vexp(vsub(vload(x + i), M_)), e1 = vexp(vsub(vload(x + i + VL), M_));
    if (y) vstore(y + i, e0), vstore(y + i + VL, e1);
    s0 = vadd(s0, e0), s1 = vadd(s1, e1);
  }
  for (; i < n; i += VL) {
    int64_t left = n - i < VL ? n - i : VL;
    V e = vexp(vsub(load_or(x + i, left, -INFINITY), M_));
    if (y) vstore_n(y + i, e, left);
    s0 = vadd(s0, e);
  }
  return hsum(vadd(s0, s1));
}

/* max and sum of e^(x - max) in one pass (rows too long for the cache) */
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

static void k_softmax_row(const float *x, float *y, int64_t n, int log_) {
  float mx, sum;
  int cached = n <= SOFTMAX_CACHED_ROW;
  if (cached) {
    mx = row_max(x, n);
    /* NaN anywhere: every output NaN; an all -inf row too (-inf - -inf) */
    if (mx != mx || mx == -INFINITY) mx = NAN;
    sum = row_expsum(x, log_ ? NULL : y, n, mx);
  } else {
    mx = online_max_sum(x, n, &sum);
    if (mx == -INFINITY) mx = NAN;
  }
  int64_t i = 0;
  if (log_) {
    /* (x - max) - lse: x - max is exact near the max, so large offsets
     * lose nothing to a rounded max + lse */
    V M_ = vset1(mx), lse = vset1((float)log((double)sum));
    for (; i + VL <= n; i += VL) {
      next_row_prefetch(x, n, i);
      vstore(y + i, vsub(vsub(vload(x + i), M_), lse));
    }
    if (i < n)
      vstore_n(y + i, vsub(vsub(vload_n(x + i, n - i), M_), lse), n - i);
    return;
  }
  V inv = vset1((float)(1.0 / (double)sum)), M_ = vset1(mx);
  if (cached) {
    for (; i + VL <= n; i += VL) {
      next_row_prefetch(x, n, i);
      vstore(y + i, vmul(vload(y + i), inv));
    }
    if (i < n) vstore_n(y + i, vmul(vload_n(y + i, n - i), inv), n - i);
    return;
  }
  for (; i + VL <= n; i += VL)
    vstore(y + i, vmul(vexp(vsub(vload(x + i), M_)), inv));
  if (i < n)
    vstore_n(y + i, vmul(vexp(vsub(vload_n(x + i, n - i), M_)), inv), n - i);
}

/* ---- norms ------------------------------------------------------------------*/

static double row_sum_d(const float *x, int64_t n) {
  VD a = vd_zero(), b = vd_zero();
  int64_t i = 0;
  for (; i + VL <= n; i += VL) vacc_d(vload(x + i), &a, &b);
  if (i < n) vacc_d(vload_n(x + i, n - i), &a, &b);
  return vd_hsum(a) + vd_hsum(b);
}

/* sum of (x - c)^2, squares in f32, sums in double */
static double row_sqdev_d(const float *x, int64_t n, float c) {
  VD a = vd_zero(), b = vd_zero();
  V vc = vset1(c);
  int64_t i = 0;
  for (; i + VL <= n; i += VL) {
    V d = vsub(vload(x + i), vc);
    vacc_d(vmul(d, d), &a, &b);
  }
  if (i < n) {
    V d = vsub(vload_n(x + i, n - i), vc);
    float lane[VL];
    vstore(lane, vmul(d, d));
    for (int64_t t = n - i; t < VL; t++) lane[t] = 0;
    vacc_d(vload(lane), &a, &b);
  }
  return vd_hsum(a) + vd_hsum(b);
}

static inline V opt_load(const float *p, int64_t i, int64_t n, float dflt) {
  if (!p) return vset1(dflt);
  return n - i >= VL ? vload(p + i) : vload_n(p + i, n - i);
}

static void k_norm_row(const float *x, float *y, int64_t n, const float *gamma,
                       const float *beta, double eps, int rms) {
  double mean = rms ? 0.0 : row_sum_d(x, n) / (double)n;
  float fm = (float)mean;
  /* deviations from the f32 mean, corrected for its rounding */
  double var = row_sqdev_d(x, n, fm) / (double)n;
  if (!rms) var -= (mean - fm) * (mean - fm);
  float inv = (float)(1.0 / sqrt(var + eps));
  V vm = vset1(fm), vi = vset1(inv), vdm = vset1((float)(mean - fm));
  int64_t i = 0;
  for (; i < n; i += VL) {
    int64_t left = n - i;
    next_row_prefetch(x, n, i);
    V v = left >= VL ? vload(x + i) : vload_n(x + i, left);
    v = vmul(vmul(vsub(vsub(v, vm), vdm), vi), opt_load(gamma, i, n, 1.0f));
    if (!rms) v = vadd(v, opt_load(beta, i, n, 0.0f));
    if (left >= VL)
      vstore(y + i, v);
    else
      vstore_n(y + i, v, left);
  }
}

static void k_affine_row(const float *x, float *y, int64_t n, float scale,
                         float shift) {
  V a = vset1(scale), b = vset1(shift);
  int64_t i = 0;
  for (; i + VL <= n; i += VL) vstore(y + i, vfma(vload(x + i), a, b));
  if (i < n) vstore_n(y + i, vfma(vload_n(x + i, n - i), a, b), n - i);
}

/* ---- unary and binary ---------------------------------------------------*/

/* Applies the vector expression F (of v) over a row. */
#define ROW_MAP(F)                                                             \
  do {                                                                         \
    int64_t i = 0;                                                             \
    for (; i + VL <= n; i += VL) {                                             \
      V v = vload(x + i);                                                      \
      vstore(y + i, F);                                                        \
    }                                                                          \
    if (i < n) {                                                               \
      V v = vload_n(x + i, n - i);                                             \
      vstore_n(y + i, F, n - i);                                               \
    }                                                                          \
  } while (0)

static inline V vrelu(V v) {
  /* x > 0 ? x : (NaN ? x : 0), so -0 gives +0 and NaN stays */
  M keep = mor(VCMP(v, vset1(0.0f), _CMP_GT_OQ), VCMP(v, v, _CMP_UNORD_Q));
  return vsel(keep, vset1(0.0f), v);
}

static bool k_unary_row(bp_unary_op_t op, const float *x, float *y,
                        int64_t n) {
  switch (op) {
  case BP_UNARY_NEG: ROW_MAP(vxor(v, vset1(-0.0f))); return true;
  case BP_UNARY_ABS: ROW_MAP(vabs(v)); return true;
  case BP_UNARY_EXP: ROW_MAP(vexp(v)); return true;
  case BP_UNARY_LOG: ROW_MAP(vlog(v)); return true;
  case BP_UNARY_SQRT: ROW_MAP(vsqrt(v)); return true;
  case BP_UNARY_RSQRT: ROW_MAP(vdiv(vset1(1.0f), vsqrt(v))); return true;
  case BP_UNARY_RELU: ROW_MAP(vrelu(v)); return true;
  case BP_UNARY_SILU: ROW_MAP(vsilu(v)); return true;
  case BP_UNARY_SIGMOID: ROW_MAP(vsigmoid(v)); return true;
  case BP_UNARY_TANH: ROW_MAP(vtanh(v)); return true;
  default: return false; /* gelu (erf), sin, cos: the reference */
  }
}

/* NaN-propagating max / min exactly as the reference: a + b when either
 * is NaN, else a > b ? a : b (so max(-0, +0) is +0, as there). */
static inline V vmax_nan(V a, V b) {
  M nan = mor(VCMP(a, a, _CMP_UNORD_Q), VCMP(b, b, _CMP_UNORD_Q));
  return vsel(nan, vsel(VCMP(a, b, _CMP_GT_OQ), b, a), vadd(a, b));
}
static inline V vmin_nan(V a, V b) {
  M nan = mor(VCMP(a, a, _CMP_UNORD_Q), VCMP(b, b, _CMP_UNORD_Q));
  return vsel(nan, vsel(VCMP(a, b, _CMP_LT_OQ), b, a), vadd(a, b));
}

#define ROW_ZIP(F)                                                             \
  do {                                                                         \
    int64_t i = 0;                                                             \
    V a0 = vset1(*a), b0 = vset1(*b);                                          \
    for (; i + VL <= n; i += VL) {                                             \
      V va = sa ? vload(a + i) : a0, vb = sb ? vload(b + i) : b0;              \
      vstore(y + i, F);                                                        \
    }                                                                          \
    if (i < n) {                                                               \
      V va = sa ? vload_n(a + i, n - i) : a0;                                  \
      V vb = sb ? vload_n(b + i, n - i) : b0;                                  \
      vstore_n(y + i, F, n - i);                                               \
    }                                                                          \
  } while (0)

static bool k_binary_row(bp_binary_op_t op, const float *a, int64_t sa,
                         const float *b, int64_t sb, float *y, int64_t n) {
  switch (op) {
  case BP_BINARY_ADD: ROW_ZIP(vadd(va, vb)); return true;
  case BP_BINARY_SUB: ROW_ZIP(vsub(va, vb)); return true;
  case BP_BINARY_MUL: ROW_ZIP(vmul(va, vb)); return true;
  case BP_BINARY_DIV: ROW_ZIP(vdiv(va, vb)); return true;
  case BP_BINARY_MAX: ROW_ZIP(vmax_nan(va, vb)); return true;
  case BP_BINARY_MIN: ROW_ZIP(vmin_nan(va, vb)); return true;
  default: return false; /* pow: the reference */
  }
}

/* ---- reductions -----------------------------------------------------------*/

/* First NaN, or the first element equal to the extreme v (so the sign of
 * a zero is the reference's), of a row. */
static float first_match(const float *x, int64_t n, float v) {
  for (int64_t i = 0; i < n; i++)
    if (x[i] != x[i] || (v == v && x[i] == v)) return x[i];
  return v;
}

static float row_extreme(const float *x, int64_t n, int is_max) {
  V acc = vset1(is_max ? -INFINITY : INFINITY);
  M nan = VCMP(acc, acc, _CMP_UNORD_Q);
  int64_t i = 0;
  for (; i < n; i += VL) {
    V v = load_or(x + i, n - i, is_max ? -INFINITY : INFINITY);
    nan = mor(nan, VCMP(v, v, _CMP_UNORD_Q));
    acc = is_max ? vmax(v, acc) : vmin(v, acc);
  }
  float r = is_max ? hmax(acc) : hmin(acc);
  if (many(nan)) return first_match(x, n, NAN);
  return r == 0.0f ? first_match(x, n, r) : r;
}

static double k_reduce_row(bp_reduce_op_t op, const float *x, int64_t n) {
  switch (op) {
  case BP_REDUCE_SUM: return row_sum_d(x, n);
  case BP_REDUCE_MEAN: return n ? row_sum_d(x, n) / (double)n : NAN;
  case BP_REDUCE_MAX: return n ? row_extreme(x, n, 1) : -INFINITY;
  case BP_REDUCE_MIN: return n ? row_extreme(x, n, 0) : INFINITY;
  case BP_REDUCE_VAR: {
    if (!n) return NAN;
    double mean = row_sum_d(x, n) / (double)n;
    float fm = (float)mean;
    return row_sqdev_d(x, n, fm) / (double)n - (mean - fm) * (mean - fm);
  }
  default: return NAN;
  }
}

/* acc: doubles for sum / mean, floats for max / min (first NaN kept). */
static void k_reduce_cols(bp_reduce_op_t op, const float *x, int64_t stride,
                          int64_t len, void *acc_, int64_t width) {
  if (op == BP_REDUCE_SUM || op == BP_REDUCE_MEAN) {
    double *acc = acc_;
    for (int64_t i = 0; i < len; i++) {
      const float *r = x + i * stride;
      int64_t j = 0;
      for (; j + VL <= width; j += VL) {
        VD lo, hi;
        memcpy(&lo, acc + j, sizeof lo);
        memcpy(&hi, acc + j + VL / 2, sizeof hi);
        vacc_d(vload(r + j), &lo, &hi);
        memcpy(acc + j, &lo, sizeof lo);
        memcpy(acc + j + VL / 2, &hi, sizeof hi);
      }
      for (; j < width; j++) acc[j] += r[j];
    }
    return;
  }
  float *acc = acc_;
  int is_max = op == BP_REDUCE_MAX;
  for (int64_t i = 0; i < len; i++) {
    const float *r = x + i * stride;
    for (int64_t j = 0; j < width; j += VL) {
      int64_t w = width - j;
      V v = w >= VL ? vload(r + j) : vload_n(r + j, w);
      V a = w >= VL ? vload(acc + j) : vload_n(acc + j, w);
      /* keep a NaN already there; else take a NaN or a strictly better v */
      M take = VCMP(v, v, _CMP_UNORD_Q);
      /* the predicate must be a constant expression (clang) */
      take = mor(take, is_max ? VCMP(v, a, _CMP_GT_OQ) : VCMP(v, a, _CMP_LT_OQ));
      take = mand(take, VCMP(a, a, _CMP_ORD_Q));
      a = vsel(take, a, v);
      if (w >= VL)
        vstore(acc + j, a);
      else
        vstore_n(acc + j, a, w);
    }
  }
}

/* ---- casts ----------------------------------------------------------------*/

#ifdef FAST_VEC_512
typedef __m256i VH; /* VL halves */
static inline VH h_load(const uint16_t *p) { return _mm256_loadu_si256((const void *)p); }
static inline void h_store(uint16_t *p, VH h) { _mm256_storeu_si256((void *)p, h); }
static inline V h_to_f(VH h) { return _mm512_cvtph_ps(h); }
static inline VH f_to_h(V f) { return _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline VI vi_set1(int v) { return _mm512_set1_epi32(v); }
static inline V bf_to_f(VH h) {
  VI b = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
  __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, vi_set1(0x7fffffff)),
                                          vi_set1(0x7f800000));
  return vcast_f(_mm512_mask_or_epi32(b, nan, b, vi_set1(0x400000)));
}
/* RNE on the bits (VCVTNEPS2BF16 would flush denormals to zero) */
static inline VH f_to_bf(V f) {
  VI u = vcast_i(f);
  VI r = _mm512_add_epi32(u, _mm512_add_epi32(vi_set1(0x7fff),
                          _mm512_and_si512(_mm512_srli_epi32(u, 16), vi_set1(1))));
  __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, vi_set1(0x7fffffff)),
                                          vi_set1(0x7f800000));
  r = _mm512_mask_or_epi32(r, nan, u, vi_set1(0x400000));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}
#else
typedef __m128i VH;
static inline VH h_load(const uint16_t *p) { return _mm_loadu_si128((const void *)p); }
static inline void h_store(uint16_t *p, VH h) { _mm_storeu_si128((void *)p, h); }
static inline V h_to_f(VH h) { return _mm256_cvtph_ps(h); }
static inline VH f_to_h(V f) { return _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline VI vi_set1(int v) { return _mm256_set1_epi32(v); }
/* unsigned a > b for values below 2^31 */
static inline VI nan_bits(VI u) {
  return _mm256_cmpgt_epi32(_mm256_and_si256(u, vi_set1(0x7fffffff)), vi_set1(0x7f800000));
}
static inline V bf_to_f(VH h) {
  VI b = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
  return vcast_f(_mm256_or_si256(b, _mm256_and_si256(nan_bits(b), vi_set1(0x400000))));
}
static inline VH f_to_bf(V f) {
  VI u = vcast_i(f);
  VI r = _mm256_add_epi32(u, _mm256_add_epi32(vi_set1(0x7fff),
                          _mm256_and_si256(_mm256_srli_epi32(u, 16), vi_set1(1))));
  VI q = _mm256_or_si256(u, vi_set1(0x400000));
  r = _mm256_blendv_epi8(r, q, nan_bits(u));
  r = _mm256_srli_epi32(r, 16);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}
#endif

/* Tail through a bounce buffer, so the vector code needs no masks. */
#define CVT_LOOP(TI, TO, F)                                                    \
  do {                                                                         \
    const TI *s = x;                                                           \
    TO *d = y;                                                                 \
    int64_t i = 0;                                                             \
    for (; i + VL <= n; i += VL) F(s + i, d + i);                              \
    if (i < n) {                                                               \
      TI tin[VL] = {0};                                                        \
      TO tout[VL];                                                             \
      memcpy(tin, s + i, (size_t)(n - i) * sizeof(TI));                        \
      F(tin, tout);                                                            \
      memcpy(d + i, tout, (size_t)(n - i) * sizeof(TO));                       \
    }                                                                          \
  } while (0)

#define CVT_H2F(s, d) vstore((d), h_to_f(h_load(s)))
#define CVT_F2H(s, d) h_store((d), f_to_h(vload(s)))
#define CVT_BF2F(s, d) vstore((d), bf_to_f(h_load(s)))
#define CVT_F2BF(s, d) h_store((d), f_to_bf(vload(s)))

static bool k_cvt(bp_dtype_t from, bp_dtype_t to, const void *x, void *y,
                  int64_t n) {
  if (from == BP_F16 && to == BP_F32) CVT_LOOP(uint16_t, float, CVT_H2F);
  else if (from == BP_F32 && to == BP_F16) CVT_LOOP(float, uint16_t, CVT_F2H);
  else if (from == BP_BF16 && to == BP_F32) CVT_LOOP(uint16_t, float, CVT_BF2F);
  else if (from == BP_F32 && to == BP_BF16) CVT_LOOP(float, uint16_t, CVT_F2BF);
  else return false;
  return true;
}

const fast_vec_kernels_t FAST_VEC_TABLE = {
    k_dw_plane, k_softmax_row, k_norm_row,    k_affine_row, k_unary_row,
    k_binary_row, k_reduce_row, k_reduce_cols, k_cvt};
