/*
 * fast/vec_kern.h — the row kernels of fast/vec.h, written once in the
 * vector ops of fast/vec_isa.h and instantiated per ISA: the includer
 * defines CPU_FAST_VEC_512 or not and CPU_FAST_VEC_TABLE (the table's name).
 * Rows are processed in whole vectors plus one masked tail.
 */
#include <math.h>
#include <string.h>

#include "vec.h"
#include "vec_isa.h"
#include "vec_math.h"

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
static void k_dw_plane(const cpu_fast_dw_geom_t *g, const float *x, const float *w,
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

#include "plugins/cpu/fast/rows/vec_rows.h"

/* ---- exact sums for the reductions -------------------------------------------*/

/* Every element widened to double, as the reference sums. */
static double row_sum_exact(const float *x, int64_t n) {
  VD a = vd_zero(), b = vd_zero();
  int64_t i = 0;
  for (; i + VL <= n; i += VL) vacc_d(vload(x + i), &a, &b);
  if (i < n) vacc_d(vload_n(x + i, n - i), &a, &b);
  return vd_hsum(a) + vd_hsum(b);
}

/* Sum of (x - c)^2, squares in f32, each added in double. */
static double row_sqdev_exact(const float *x, int64_t n, float c) {
  VD a = vd_zero(), b = vd_zero();
  V vc = vset1(c);
  int64_t i = 0;
  for (; i < n; i += VL) {
    V d = vsub(load_or(x + i, n - i, c), vc);
    vacc_d(vmul(d, d), &a, &b);
  }
  return vd_hsum(a) + vd_hsum(b);
}

static void k_affine_row(const float *x, float *y, int64_t n, float scale,
                         float shift, bool nt) {
  V a = vset1(scale), b = vset1(shift);
#define AFFINE_OUT(i, c) vfma(ldn(x + (i), (c)), a, b)
  ROW_OUT(y, n, nt, AFFINE_OUT);
#undef AFFINE_OUT
}

/* ---- unary and binary ---------------------------------------------------*/

/* Applies the vector expression F (of v) over a row, streaming stores
 * when nt. */
#define ROW_MAP(F)                                                             \
  do {                                                                         \
    if (nt) { /* whole lines streamed, as ROW_OUT */                         \
      int64_t h = nt_head(y, n), e = nt_lines_end(h, n), i = 0, c;             \
      for (; i < h; i += c) {                                                  \
        c = h - i < VL ? h - i : VL;                                           \
        V v = vload_n(x + i, c);                                               \
        vstore_n(y + i, F, c);                                                 \
      }                                                                        \
      for (; i < e; i += VL) {                                                 \
        V v = vload(x + i);                                                    \
        vstream(y + i, F);                                                     \
      }                                                                        \
      x += i, y += i, n -= i;                                                  \
    }                                                                          \
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
                        int64_t n, bool nt) {
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
  case BP_UNARY_GELU: ROW_MAP(vgelu(v)); return true;
  case BP_UNARY_GELU_TANH: ROW_MAP(vgelu_tanh(v)); return true;
  default: return false; /* sin, cos: the reference */
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
    if (nt) { /* whole lines streamed, as ROW_OUT */                         \
      int64_t h = nt_head(y, n), e = nt_lines_end(h, n), c;                    \
      for (; i < h; i += c) {                                                  \
        c = h - i < VL ? h - i : VL;                                           \
        V va = sa ? vload_n(a + i, c) : a0, vb = sb ? vload_n(b + i, c) : b0;  \
        vstore_n(y + i, F, c);                                                 \
      }                                                                        \
      for (; i < e; i += VL) {                                                 \
        V va = sa ? vload(a + i) : a0, vb = sb ? vload(b + i) : b0;            \
        vstream(y + i, F);                                                     \
      }                                                                        \
    }                                                                          \
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
                         const float *b, int64_t sb, float *y, int64_t n,
                         bool nt) {
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
  case BP_REDUCE_SUM: return row_sum_exact(x, n);
  case BP_REDUCE_MEAN: return n ? row_sum_exact(x, n) / (double)n : NAN;
  case BP_REDUCE_MAX: return n ? row_extreme(x, n, 1) : -INFINITY;
  case BP_REDUCE_MIN: return n ? row_extreme(x, n, 0) : INFINITY;
  case BP_REDUCE_VAR: {
    if (!n) return NAN;
    double mean = row_sum_exact(x, n) / (double)n;
    float fm = (float)mean;
    return row_sqdev_exact(x, n, fm) / (double)n - (mean - fm) * (mean - fm);
  }
  default: return NAN;
  }
}

/* Rows per pass over the accumulators: they stay in registers for that
 * many rows, added to in the same order as one row at a time (so the same
 * bits), with an eighth of the accumulator loads and stores, which bound
 * the loop otherwise (docs/performance.md). */
#define COLS_ROWS 8

/* acc: doubles for sum / mean, floats for max / min (first NaN kept). */
static void k_reduce_cols(bp_reduce_op_t op, const float *x, int64_t stride,
                          int64_t len, void *acc_, int64_t width) {
  if (op == BP_REDUCE_SUM || op == BP_REDUCE_MEAN) {
    double *acc = acc_;
    for (int64_t i = 0; i < len; i += COLS_ROWS) {
      int64_t rows = len - i < COLS_ROWS ? len - i : COLS_ROWS;
      const float *r = x + i * stride;
      int64_t j = 0;
      for (; j + VL <= width; j += VL) {
        VD lo, hi;
        memcpy(&lo, acc + j, sizeof lo);
        memcpy(&hi, acc + j + VL / 2, sizeof hi);
        if (rows == COLS_ROWS) {
          _Pragma("GCC unroll 8") for (int q = 0; q < COLS_ROWS; q++)
              vacc_d(vload(r + q * stride + j), &lo, &hi);
        } else {
          for (int64_t q = 0; q < rows; q++) vacc_d(vload(r + q * stride + j), &lo, &hi);
        }
        memcpy(acc + j, &lo, sizeof lo);
        memcpy(acc + j + VL / 2, &hi, sizeof hi);
      }
      for (; j < width; j++)
        for (int64_t q = 0; q < rows; q++) acc[j] += r[q * stride + j];
    }
    return;
  }
  float *acc = acc_;
  int is_max = op == BP_REDUCE_MAX;
  for (int64_t i = 0; i < len; i += COLS_ROWS) {
    int64_t rows = len - i < COLS_ROWS ? len - i : COLS_ROWS;
    const float *r = x + i * stride;
    for (int64_t j = 0; j < width; j += VL) {
      int64_t w = width - j;
      V a = w >= VL ? vload(acc + j) : vload_n(acc + j, w);
      for (int64_t q = 0; q < rows; q++) {
        const float *rq = r + q * stride + j;
        V v = w >= VL ? vload(rq) : vload_n(rq, w);
        /* keep a NaN already there; else take a NaN or a strictly better v */
        M take = VCMP(v, v, _CMP_UNORD_Q);
        /* the predicate must be a constant expression (clang) */
        take = mor(take, is_max ? VCMP(v, a, _CMP_GT_OQ) : VCMP(v, a, _CMP_LT_OQ));
        take = mand(take, VCMP(a, a, _CMP_ORD_Q));
        a = vsel(take, a, v);
      }
      if (w >= VL)
        vstore(acc + j, a);
      else
        vstore_n(acc + j, a, w);
    }
  }
}

/* ---- casts ----------------------------------------------------------------*/

#ifdef CPU_FAST_VEC_512
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

/* ---- rotary position embedding ---------------------------------------------*/

/* Swaps the two floats of every pair (0 1 2 3 -> 1 0 3 2). */
static inline V vswap_pairs(V v) {
#ifdef CPU_FAST_VEC_512
  return _mm512_permute_ps(v, 0xB1);
#else
  return _mm256_permute_ps(v, 0xB1);
#endif
}

static void k_rope_row(const float *x, float *y, const float *c,
                       const float *s, int64_t rd, int interleaved) {
  if (interleaved) { /* y = x c + swap(x) s, c and s per feature */
    for (int64_t j = 0; j < rd; j += VL) {
      int64_t n = rd - j < VL ? rd - j : VL;
      V v = vload_n(x + j, n);
      V r = vfma(v, vload_n(c + j, n), vmul(vswap_pairs(v), vload_n(s + j, n)));
      vstore_n(y + j, r, n);
    }
    return;
  }
  int64_t h = rd / 2;
  for (int64_t i = 0; i < h; i += VL) {
    int64_t n = h - i < VL ? h - i : VL;
    V x0 = vload_n(x + i, n), x1 = vload_n(x + h + i, n);
    V cv = vload_n(c + i, n), sv = vload_n(s + i, n);
    vstore_n(y + i, vfnma(x1, sv, vmul(x0, cv)), n);
    vstore_n(y + h + i, vfma(x0, sv, vmul(x1, cv)), n);
  }
}

const cpu_fast_vec_kernels_t CPU_FAST_VEC_TABLE = {
    k_dw_plane, k_softmax_row, k_norm_row,    k_affine_row, k_unary_row,
    k_binary_row, k_reduce_row, k_reduce_cols, k_cvt, k_rope_row};
