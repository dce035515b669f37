/*
 * fast/attention/attention_avx2.c — fused scaled dot-product attention, AVX2 + FMA.
 *
 * One pass with an online softmax over blocks of ATT_BQ queries and ATT_BK
 * keys: per query a running max m, sum l and unnormalised output, so the
 * Sq x Skv score matrix never exists, and key blocks the masks hide
 * from the whole query block are never visited. Memory per thread is a few
 * blocks (ATT_BQ x (D + Dv + ATT_BK) floats, plus ATT_BK x (D + Dv) when
 * keys or values must be widened), from cpu_fast_scratch.
 *
 * Queries run along the vector lanes. A block's queries are scaled, widened
 * and transposed once (qt[d][q]); then both products are the same
 * broadcast-times-vector micro-kernel, 6 broadcast rows x 16 lanes:
 *   scores  st[j][q] = sum_d k[j][d] * qt[d][q]               (j: keys)
 *   output  ot[e][q] = corr[q] ot[e][q] + sum_j v[j][e] st[j][q] (e: Dv)
 * Keys and values are broadcast straight from their rows (f32 with unit
 * stride along D / Dv) or from a per-key-block widened copy (f16, bf16,
 * other strides), and the softmax over keys is a per-lane max and sum with
 * no horizontal reductions. When Sq is shorter than a block (decoding),
 * the query heads that share a kv head (GQA) are stacked into the lanes of
 * one block, so they share the key and value reads; lanes past the last
 * query compute zeros.
 *
 * Semantics are the reference's (ref/ref_attention.c): bottom-right causal
 * mask and the masks of ABI 1.5 (per lane a key range and additive terms,
 * attention_mask.h), grouped-query heads, a row that sees no key gives zeros, a NaN or
 * +inf score (or only -inf scores) makes the row NaN. Compiled with
 * -mavx2 -mfma -mf16c (fast.mk); fast/attention/attention.c checks the CPU first.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "attention.h"
#include "attention_mask.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/gemm/gemm.h"

/* Block sizes: the kernel is bound by its FMAs, not by where the blocks
 * sit, so the range of block sizes that fit the registers and L1 times
 * alike; these are the smallest that fill whole vectors. */
#define ATT_BQ 32 /* queries per block: the lanes of 4 vectors */
#define ATT_BK 64 /* keys per block */
#define ATT_NR 6  /* broadcast rows of the micro-kernel */
#define ATT_LG 16 /* lanes per micro-kernel call (2 vectors) */

/* e^x for x <= 0 (a score minus the running max): Cody-Waite reduction,
 * e^r = 1 + r + r^2 P(r) with P a degree-3 Remez fit (relative error
 * 1.1e-7, as the degree-6 Taylor form it replaced, one multiply-add
 * fewer), 2^n from the bits of x log2(e) + 1.5 * 2^23 + 127 (no rounding
 * or conversion instruction). Below -87 (and -inf) the result is exactly
 * 0, so masked keys add nothing; NaN gives some finite value (such rows
 * are flagged apart). */
static inline __m256 att_exp(__m256 x) {
  __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ);
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504f), _mm256_set1_ps(12583039.0f));
  __m256 n = _mm256_sub_ps(t, _mm256_set1_ps(12583039.0f));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
  __m256 p = _mm256_set1_ps(8.312524866e-03f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.189011315e-02f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.666711447e-01f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.999923179e-01f));
  p = _mm256_fmadd_ps(_mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f)), r, _mm256_set1_ps(1.0f));
  p = _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23)));
  return _mm256_andnot_ps(tiny, p);
}

/* c[r][0..16) = init + sum_{p < n} a[r*ar + p*ap] * b[p][0..16) for r < R,
 * rows of b and c ATT_BQ floats apart; init is 0 without scale, else
 * scale[0..16) * c[r][0..16). R is a constant after inlining, so the
 * 2R accumulators stay in registers. */
static inline __attribute__((always_inline)) void att_ukr_n(const int R, int64_t n, const float *a,
                                                            int64_t ar, int64_t ap, const float *b,
                                                            float *c, const float *scale) {
  __m256 x0[ATT_NR], x1[ATT_NR];
  const float *ar0[ATT_NR];
  if (scale) {
    __m256 s0 = _mm256_load_ps(scale), s1 = _mm256_load_ps(scale + 8);
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {
      x0[r] = _mm256_mul_ps(s0, _mm256_load_ps(c + r * ATT_BQ));
      x1[r] = _mm256_mul_ps(s1, _mm256_load_ps(c + r * ATT_BQ + 8));
    }
  } else {
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {
      x0[r] = _mm256_setzero_ps();
      x1[r] = _mm256_setzero_ps();
    }
  }
  _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) ar0[r] = a + r * ar;
  for (int64_t p = 0; p < n; p++) {
    __m256 b0 = _mm256_load_ps(b + p * ATT_BQ);
    __m256 b1 = _mm256_load_ps(b + p * ATT_BQ + 8);
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {
      __m256 x = _mm256_broadcast_ss(ar0[r] + p * ap);
      x0[r] = _mm256_fmadd_ps(x, b0, x0[r]);
      x1[r] = _mm256_fmadd_ps(x, b1, x1[r]);
    }
  }
  _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {
    _mm256_store_ps(c + r * ATT_BQ, x0[r]);
    _mm256_store_ps(c + r * ATT_BQ + 8, x1[r]);
  }
}

/* att_ukr_n over rows [0, rows), ATT_NR at a time. */
static void att_ukr(int64_t rows, int64_t n, const float *a, int64_t ar, int64_t ap, const float *b,
                    float *c, const float *scale) {
  for (int64_t r = 0; r < rows; r += ATT_NR) {
    const float *ar_ = a + r * ar;
    float *cr = c + r * ATT_BQ;
    switch (rows - r < ATT_NR ? rows - r : ATT_NR) {
    case 1:
      att_ukr_n(1, n, ar_, ar, ap, b, cr, scale);
      break;
    case 2:
      att_ukr_n(2, n, ar_, ar, ap, b, cr, scale);
      break;
    case 3:
      att_ukr_n(3, n, ar_, ar, ap, b, cr, scale);
      break;
    case 4:
      att_ukr_n(4, n, ar_, ar, ap, b, cr, scale);
      break;
    case 5:
      att_ukr_n(5, n, ar_, ar, ap, b, cr, scale);
      break;
    default:
      att_ukr_n(6, n, ar_, ar, ap, b, cr, scale);
      break;
    }
  }
}

typedef struct att_job {
  const char *q, *k, *v;
  char *o;
  bp_dtype_t tq, tk, tv, to;
  int64_t Hq, grp, Sq, Skv, D, Dv, off; /* grp = Hq / Hkv, off = Skv - Sq */
  int64_t sq[4], sk[4], sv[4], so[4];
  int64_t hs, hchunks;   /* query heads per block, blocks of them per kv head */
  int64_t nqb, per;      /* query blocks per head, tasks per head */
  int64_t ntasks, next;  /* next: the next task to take (atomic) */
  bool kdirect, vdirect; /* f32 rows with unit stride: read in place */
  float scale;
  bool additive; /* bias or ALiBi terms on the scores */
  att_mask_t mk;
} att_job_t;

/* Per-thread workspace; every array is 32-byte aligned. */
typedef struct att_ws {
  float *m, *l, *corr, *bad; /* [ATT_BQ] per lane; bad: all-ones bits */
  float *qt;                 /* [D][ATT_BQ] scaled queries, transposed */
  float *st;                 /* [ATT_BK][ATT_BQ] scores, then weights */
  float *ot;                 /* [Dv][ATT_BQ] unnormalised output */
  float *kb, *vb;            /* [ATT_BK][D], [ATT_BK][Dv] widened rows */
  /* per lane: the keys [lo, hi) it sees (att_mask_keys), its position
   * i' among the keys and ALiBi slope, and its bias row (element offset) */
  int32_t lo[ATT_BQ], hi[ATT_BQ];
  float at[ATT_BQ], slope[ATT_BQ];
  int64_t brow[ATT_BQ];
} att_ws_t;

static inline const char *att_at(const char *base, bp_dtype_t dt, int64_t i) {
  return base + i * (int64_t)cpu_dtype_size(dt);
}

static inline float att_load(const char *base, bp_dtype_t dt, int64_t i) {
  const uint16_t *h = (const uint16_t *)(const void *)base;
  if (dt == BP_F16) return _cvtsh_ss(h[i]);
  if (dt == BP_BF16) {
    uint32_t u = (uint32_t)h[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  return ((const float *)(const void *)base)[i];
}

/* Rounds to nearest even; NaN stays NaN (quiet), as cpu_store does. */
static inline void att_store(char *base, bp_dtype_t dt, int64_t i, float x) {
  uint16_t *h = (uint16_t *)(void *)base;
  if (dt == BP_F16) {
    h[i] = _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT);
  } else if (dt == BP_BF16) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
      h[i] = (uint16_t)((u >> 16) | 0x40u);
    else
      h[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  } else {
    ((float *)(void *)base)[i] = x;
  }
}

/* dst[0..n) = src[i * stride], widened to f32. */
static void att_widen(const char *src, bp_dtype_t dt, int64_t stride, int64_t n, float *dst) {
  int64_t i = 0;
  if (stride == 1 && dt == BP_F32) {
    memcpy(dst, src, (size_t)n * sizeof(float));
    return;
  }
  if (stride == 1 && dt == BP_F16) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(
          dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i))));
  } else if (stride == 1 && dt == BP_BF16) {
    for (; i + 8 <= n; i += 8) {
      __m256i w =
          _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i)));
      _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
  }
  for (; i < n; i++) dst[i] = att_load(src, dt, i * stride);
}

/* In-register 8 x 8 transpose: r[i][k] becomes r[k][i]. */
static inline void att_tr8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/* Lane r's row of q or out: head h0 + r / nq, query i0 + r % nq. */
static inline const char *att_row(const char *base, bp_dtype_t dt, const int64_t *st, int64_t b,
                                  int64_t h0, int64_t nq, int64_t i0, int64_t r) {
  return att_at(base, dt, b * st[0] + (h0 + r / nq) * st[1] + (i0 + r % nq) * st[2]);
}

/* qt[d][r] = scale * q(lane r)[d] for the block's lanes, zeros past nl.
 * f32 rows with unit stride go through 8 x 8 transposes; at short
 * sequences the scalar form was a tenth of the time. */
static void att_load_q(const att_job_t *j, att_ws_t *w, int64_t b, int64_t h0, int64_t nq,
                       int64_t i0, int64_t nl) {
  int64_t D = j->D, r0 = 0, d8 = j->tq == BP_F32 && (j->sq[3] == 1 || D <= 1) ? D / 8 * 8 : 0;
  __m256 sc = _mm256_set1_ps(j->scale);
  for (; r0 + 8 <= nl && d8 > 0; r0 += 8) {
    const float *row[8];
    for (int i = 0; i < 8; i++)
      row[i] = (const float *)(const void *)att_row(j->q, j->tq, j->sq, b, h0, nq, i0, r0 + i);
    for (int64_t d0 = 0; d0 < d8; d0 += 8) {
      __m256 x[8];
      for (int i = 0; i < 8; i++) x[i] = _mm256_loadu_ps(row[i] + d0);
      att_tr8(x);
      for (int k = 0; k < 8; k++) _mm256_store_ps(w->qt + (d0 + k) * ATT_BQ + r0, _mm256_mul_ps(sc, x[k]));
    }
    for (int i = 0; i < 8; i++)
      for (int64_t d = d8; d < D; d++) w->qt[d * ATT_BQ + r0 + i] = j->scale * row[i][d];
  }
  for (int64_t r = r0; r < ATT_BQ; r++) {
    const char *qr = r < nl ? att_row(j->q, j->tq, j->sq, b, h0, nq, i0, r) : NULL;
    for (int64_t d = 0; d < D; d++) /* lanes past nl compute zeros */
      w->qt[d * ATT_BQ + r] = qr ? j->scale * att_load(qr, j->tq, d * j->sq[3]) : 0.0f;
  }
}

/* Whether lane r's row is NaN: a NaN or +inf score. (A row whose every
 * score is -inf has l = 0 and gives zeros, as the reference.) */
static bool att_nan_row(const att_ws_t *w, int64_t r) {
  uint32_t badbits;
  memcpy(&badbits, &w->bad[r], sizeof badbits);
  return badbits != 0;
}

/* out(lane r) = ot[.][r] / l[r] (zeros for a row that sees no key). f32
 * rows with unit stride go through 8 x 8 transposes, eight rows at a
 * time when none of them is NaN. */
static void att_store_out(const att_job_t *j, const att_ws_t *w, int64_t b, int64_t h0,
                          int64_t nq, int64_t i0, int64_t nl) {
  int64_t Dv = j->Dv, r0 = 0, e8 = j->to == BP_F32 && (j->so[3] == 1 || Dv <= 1) ? Dv / 8 * 8 : 0;
  for (; r0 + 8 <= nl && e8 > 0; r0 += 8) {
    bool nan = false;
    float inv[8];
    float *row[8];
    for (int i = 0; i < 8; i++) {
      /* rows of zeros (l = 0) go one by one too: 0 * inf in ot */
      nan = nan || att_nan_row(w, r0 + i) || !(w->l[r0 + i] > 0);
      inv[i] = w->l[r0 + i] > 0 ? 1.0f / w->l[r0 + i] : 0.0f;
      row[i] = (float *)(void *)att_row(j->o, j->to, j->so, b, h0, nq, i0, r0 + i);
    }
    if (nan) break;
    for (int64_t e0 = 0; e0 < e8; e0 += 8) {
      __m256 x[8];
      for (int k = 0; k < 8; k++) x[k] = _mm256_load_ps(w->ot + (e0 + k) * ATT_BQ + r0);
      att_tr8(x);
      for (int i = 0; i < 8; i++) _mm256_storeu_ps(row[i] + e0, _mm256_mul_ps(x[i], _mm256_set1_ps(inv[i])));
    }
    for (int i = 0; i < 8; i++)
      for (int64_t e = e8; e < Dv; e++) row[i][e] = w->ot[e * ATT_BQ + r0 + i] * inv[i];
  }
  for (int64_t r = r0; r < nl; r++) {
    char *orow = (char *)att_row(j->o, j->to, j->so, b, h0, nq, i0, r);
    float l = w->l[r], inv = l > 0 ? 1.0f / l : 0.0f;
    bool nan = att_nan_row(w, r);
    for (int64_t e = 0; e < Dv; e++)
      att_store(orow, j->to, e * j->so[3], nan ? NAN : l > 0 ? w->ot[e * ATT_BQ + r] * inv : 0.0f);
  }
}

/* The additive terms of the 8 lanes at c for key `key`: bias - slope *
 * |i' - key|, as the reference adds them. */
static __m256 att_terms(const att_job_t *j, const att_ws_t *w, int64_t c, int64_t key) {
  __m256 t = _mm256_setzero_ps();
  if (j->mk.bias) {
    float bv[8];
    for (int x = 0; x < 8; x++)
      bv[x] = att_load(j->mk.bias, j->tq, w->brow[c + x] + key * j->mk.bs[3]);
    t = _mm256_loadu_ps(bv);
  }
  __m256 d = _mm256_sub_ps(_mm256_loadu_ps(w->at + c), _mm256_set1_ps((float)key));
  __m256 ad = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), d);
  return _mm256_fnmadd_ps(_mm256_loadu_ps(w->slope + c), ad, t);
}

/* Online-softmax step for the 16 lanes at lane0 over keys [k0, k0 + nk):
 * adds the bias and ALiBi terms, hides the keys outside each lane's
 * [lo, hi), turns the scores into weights and updates m, l, and corr (the
 * factor for the output so far). */
static void att_softmax(const att_job_t *j, att_ws_t *w, int64_t lane0, int64_t k0, int64_t nk) {
  for (int64_t c = lane0; c < lane0 + ATT_LG; c += 8) {
    float *s = w->st + c;
    __m256 mx = _mm256_set1_ps(-INFINITY), bad = _mm256_load_ps(w->bad + c);
    __m256i lo = _mm256_loadu_si256((const void *)(w->lo + c));
    __m256i hi = _mm256_loadu_si256((const void *)(w->hi + c));
    /* keys [lomax, himin) are visible to all 8 lanes */
    int64_t lomax = w->lo[c], himin = w->hi[c];
    for (int x = 1; x < 8; x++) {
      lomax = w->lo[c + x] > lomax ? w->lo[c + x] : lomax;
      himin = w->hi[c + x] < himin ? w->hi[c + x] : himin;
    }
    for (int64_t jj = 0; jj < nk; jj++) {
      int64_t key = k0 + jj;
      __m256 x = _mm256_load_ps(s + jj * ATT_BQ);
      if (j->additive) x = _mm256_add_ps(x, att_terms(j, w, c, key));
      if (key < lomax || key >= himin) {
        __m256i kv = _mm256_set1_epi32((int)key);
        __m256i hide = _mm256_or_si256(_mm256_cmpgt_epi32(lo, kv),
                                       _mm256_xor_si256(_mm256_cmpgt_epi32(hi, kv),
                                                        _mm256_set1_epi32(-1)));
        x = _mm256_blendv_ps(x, _mm256_set1_ps(-INFINITY), _mm256_castsi256_ps(hide));
      }
      if (j->additive || key < lomax || key >= himin) _mm256_store_ps(s + jj * ATT_BQ, x);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(x, _mm256_set1_ps(INFINITY), _CMP_NLT_UQ));
      mx = _mm256_max_ps(mx, x);
    }
    __m256 mold = _mm256_load_ps(w->m + c), mnew = _mm256_max_ps(mold, mx);
    /* a lane that has seen no key yet subtracts 0, so its weights are 0 */
    __m256 none = _mm256_cmp_ps(mnew, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
    __m256 msub = _mm256_andnot_ps(none, mnew);
    __m256 corr = att_exp(_mm256_sub_ps(mold, msub));
    __m256 sum0 = _mm256_setzero_ps(), sum1 = sum0;
    int64_t jj = 0;
    for (; jj + 2 <= nk; jj += 2) {
      __m256 p0 = att_exp(_mm256_sub_ps(_mm256_load_ps(s + jj * ATT_BQ), msub));
      __m256 p1 = att_exp(_mm256_sub_ps(_mm256_load_ps(s + (jj + 1) * ATT_BQ), msub));
      _mm256_store_ps(s + jj * ATT_BQ, p0);
      _mm256_store_ps(s + (jj + 1) * ATT_BQ, p1);
      sum0 = _mm256_add_ps(sum0, p0);
      sum1 = _mm256_add_ps(sum1, p1);
    }
    if (jj < nk) {
      __m256 p0 = att_exp(_mm256_sub_ps(_mm256_load_ps(s + jj * ATT_BQ), msub));
      _mm256_store_ps(s + jj * ATT_BQ, p0);
      sum0 = _mm256_add_ps(sum0, p0);
    }
    __m256 l = _mm256_load_ps(w->l + c);
    _mm256_store_ps(w->l + c, _mm256_fmadd_ps(l, corr, _mm256_add_ps(sum0, sum1)));
    _mm256_store_ps(w->m + c, mnew);
    _mm256_store_ps(w->corr + c, corr);
    _mm256_store_ps(w->bad + c, bad);
  }
}

/* true when rows [0, n) of v (row stride ldv, Dv long) are all finite. */
static bool att_finite(const float *v, int64_t ldv, int64_t n, int64_t Dv) {
  const __m256i expo = _mm256_set1_epi32(0x7f800000);
  __m256i hit = _mm256_setzero_si256();
  bool ok = true;
  for (int64_t jj = 0; jj < n; jj++) {
    const float *r = v + jj * ldv;
    int64_t e = 0;
    for (; e + 8 <= Dv; e += 8) {
      __m256i x = _mm256_and_si256(_mm256_loadu_si256((const void *)(r + e)), expo);
      hit = _mm256_or_si256(hit, _mm256_cmpeq_epi32(x, expo));
    }
    for (; e < Dv; e++) ok = ok && isfinite(r[e]);
  }
  return ok && _mm256_testz_si256(hit, hit);
}

/* ot[e][q] += st[jj][q] v[jj][e] for keys [jd, nk) of the key block at
 * k0 and the group at lane0, skipping the (query, key) pairs the masks
 * hide, so that a NaN or inf in a hidden value row stays out of the rows
 * that do not see it (0 * inf would be NaN). Only for the rare blocks with
 * such values. */
static void att_pv_exact(const att_ws_t *w, const float *v, int64_t ldv, int64_t Dv, int64_t lane0,
                         int64_t k0, int64_t jd, int64_t nk) {
  for (int64_t jj = jd; jj < nk; jj++) {
    const float *p = w->st + jj * ATT_BQ;
    for (int64_t e = 0; e < Dv; e++)
      for (int64_t q = lane0; q < lane0 + ATT_LG; q++)
        if (k0 + jj >= w->lo[q] && k0 + jj < w->hi[q])
          w->ot[e * ATT_BQ + q] += p[q] * v[jj * ldv + e];
  }
}

/* Each lane's keys [lo, hi), position and ALiBi slope, and bias row; lanes
 * past nl see no key. */
static void att_lanes(const att_job_t *j, att_ws_t *w, int64_t b, int64_t h0, int64_t nq,
                      int64_t i0, int64_t nl) {
  for (int64_t r = 0; r < ATT_BQ; r++) {
    int64_t h = h0 + r / nq, i = i0 + r % nq, lo = 0, hi = 0;
    if (r < nl) att_mask_keys(&j->mk, b, i, &lo, &hi);
    w->lo[r] = (int32_t)lo, w->hi[r] = (int32_t)hi;
    w->at[r] = (float)(i + j->off);
    w->slope[r] = r < nl ? att_mask_slope(&j->mk, h) : 0.0f;
    w->brow[r] = r < nl ? b * j->mk.bs[0] + h * j->mk.bs[1] + i * j->mk.bs[2] : 0;
  }
}

/* Queries [i0, i0 + nq) of query heads [h0, h0 + nh) of batch b, all of
 * one kv head, nh * nq <= ATT_BQ; lane L is head h0 + L / nq, query
 * i0 + L % nq. */
static void att_block(const att_job_t *j, att_ws_t *w, int64_t b, int64_t h0, int64_t nh,
                      int64_t i0, int64_t nq) {
  int64_t D = j->D, Dv = j->Dv, g = h0 / j->grp, nl = nh * nq;
  for (int64_t r = 0; r < ATT_BQ; r++) {
    w->m[r] = -INFINITY;
    w->l[r] = 0;
    w->bad[r] = 0;
  }
  att_load_q(j, w, b, h0, nq, i0, nl);
  att_lanes(j, w, b, h0, nq, i0, nl);
  memset(w->ot, 0, sizeof(float) * (size_t)(Dv * ATT_BQ));

  /* keys each group of ATT_LG lanes may see, [gbeg, gend) (the block's:
   * the union), and [glomax, ghimin) that all of its lanes see */
  int64_t ng = (nl + ATT_LG - 1) / ATT_LG, G = ATT_BQ / ATT_LG;
  int64_t gbeg[ATT_BQ / ATT_LG], gend[ATT_BQ / ATT_LG], glomax[ATT_BQ / ATT_LG],
      ghimin[ATT_BQ / ATT_LG];
  int64_t kbeg = j->Skv, kend = 0;
  for (int64_t gi = 0; gi < ng && gi < G; gi++) {
    gbeg[gi] = j->Skv, gend[gi] = 0, glomax[gi] = 0, ghimin[gi] = j->Skv;
    for (int64_t r = gi * ATT_LG; r < gi * ATT_LG + ATT_LG; r++) {
      if (r < nl && w->hi[r] > w->lo[r]) {
        gbeg[gi] = w->lo[r] < gbeg[gi] ? w->lo[r] : gbeg[gi];
        gend[gi] = w->hi[r] > gend[gi] ? w->hi[r] : gend[gi];
      }
      glomax[gi] = w->lo[r] > glomax[gi] ? w->lo[r] : glomax[gi];
      ghimin[gi] = w->hi[r] < ghimin[gi] ? w->hi[r] : ghimin[gi];
    }
    kbeg = gbeg[gi] < kbeg ? gbeg[gi] : kbeg;
    kend = gend[gi] > kend ? gend[gi] : kend;
  }
  const char *kh = att_at(j->k, j->tk, b * j->sk[0] + g * j->sk[1]);
  const char *vh = att_at(j->v, j->tv, b * j->sv[0] + g * j->sv[1]);
  for (int64_t k0 = kbeg; k0 < kend; k0 += ATT_BK) {
    int64_t nk = kend - k0 < ATT_BK ? kend - k0 : ATT_BK;
    const float *kp = w->kb, *vp = w->vb;
    int64_t ldk = D, ldv = Dv;
    if (j->kdirect) {
      kp = (const float *)(const void *)kh + k0 * j->sk[2];
      ldk = j->sk[2];
    } else {
      for (int64_t jj = 0; jj < nk; jj++)
        att_widen(att_at(kh, j->tk, (k0 + jj) * j->sk[2]), j->tk, j->sk[3], D, w->kb + jj * D);
    }
    if (j->vdirect) {
      vp = (const float *)(const void *)vh + k0 * j->sv[2];
      ldv = j->sv[2];
    } else {
      for (int64_t jj = 0; jj < nk; jj++)
        att_widen(att_at(vh, j->tv, (k0 + jj) * j->sv[2]), j->tv, j->sv[3], Dv, w->vb + jj * Dv);
    }
    for (int64_t gi = 0; gi < ng; gi++) {
      int64_t lane0 = gi * ATT_LG, nkg = gend[gi] - k0;
      /* the masks hide this block from the group */
      if (nkg <= 0 || gbeg[gi] >= k0 + nk) continue;
      if (nkg > nk) nkg = nk;
      att_ukr(nkg, D, kp, ldk, 1, w->qt + lane0, w->st + lane0, NULL);
      att_softmax(j, w, lane0, k0, nkg);
      /* keys [jd, nkg) are hidden from some lanes of the group (all of
       * them when some lane's range starts inside the block) */
      int64_t jd = glomax[gi] > k0 ? 0 : ghimin[gi] - k0 < 0 ? 0 : ghimin[gi] - k0;
      jd = jd < nkg ? jd : nkg;
      if (jd < nkg && !att_finite(vp + jd * ldv, ldv, nkg - jd, Dv)) {
        att_ukr(Dv, jd, vp, 1, ldv, w->st + lane0, w->ot + lane0, w->corr + lane0);
        att_pv_exact(w, vp, ldv, Dv, lane0, k0, jd, nkg);
        continue;
      }
      att_ukr(Dv, nkg, vp, 1, ldv, w->st + lane0, w->ot + lane0, w->corr + lane0);
    }
  }

  att_store_out(j, w, b, h0, nq, i0, nl);
}

static size_t att_ws_floats(const att_job_t *j) {
  return (size_t)(ATT_BQ * (4 + j->D + ATT_BK + j->Dv) + (j->kdirect ? 0 : ATT_BK * j->D) +
                  (j->vdirect ? 0 : ATT_BK * j->Dv));
}

/* Task t: heads unit t / per (hs query heads of one kv head), query block
 * t % per; causal heads pair block c with block nqb - 1 - c so that every
 * task does about the same work.
 * Each worker takes the next task from a shared counter rather than a
 * fixed share, so a core slowed down by other processes does less of the
 * work; every task writes only its own rows, so results do not depend on
 * who runs what. */
static void att_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  att_job_t *j = ctx;
  (void)worker, (void)begin, (void)end;
  float *buf = cpu_fast_scratch(0, att_ws_floats(j) * sizeof(float));
  if (!buf) return; /* the other workers take the tasks */
  att_ws_t w;
  w.m = buf;
  w.l = w.m + ATT_BQ;
  w.corr = w.l + ATT_BQ;
  w.bad = w.corr + ATT_BQ;
  w.qt = w.bad + ATT_BQ;
  w.st = w.qt + ATT_BQ * j->D;
  w.ot = w.st + ATT_BQ * ATT_BK;
  w.kb = w.ot + ATT_BQ * j->Dv;
  w.vb = w.kb + (j->kdirect ? 0 : ATT_BK * j->D);
  for (;;) {
    int64_t t = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
    if (t >= j->ntasks) break;
    int64_t u = t / j->per, c = t % j->per, Hkv = j->Hq / j->grp;
    int64_t b = u / (Hkv * j->hchunks), hc = u % j->hchunks;
    int64_t h0 = u / j->hchunks % Hkv * j->grp + hc * j->hs;
    int64_t nh = j->grp - hc * j->hs < j->hs ? j->grp - hc * j->hs : j->hs;
    int64_t blocks[2] = {c, j->nqb - 1 - c};
    int nb = j->mk.causal && blocks[1] != c ? 2 : 1;
    for (int x = 0; x < nb; x++) {
      int64_t i0 = blocks[x] * ATT_BQ;
      att_block(j, &w, b, h0, nh, i0, j->Sq - i0 < ATT_BQ ? j->Sq - i0 : ATT_BQ);
    }
  }
}

static bool att_dtype_ok(bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_F16 || dt == BP_BF16;
}

bp_status_t cpu_fast_attention_avx2(cpu_device_t *dev, const bp_attention_args_t *a) {
  const bp_plugin_tensor_t *q = &a->q, *k = &a->k, *v = &a->v, *o = &a->out;
  if (!att_dtype_ok(q->dtype) || !att_dtype_ok(k->dtype) || !att_dtype_ok(v->dtype) ||
      !att_dtype_ok(o->dtype) || q->rank != 4 || k->rank != 4 || v->rank != 4 || o->rank != 4 ||
      k->shape[1] <= 0 || q->shape[1] % k->shape[1] != 0)
    return BP_ERR_UNIMPLEMENTED;
  att_job_t j;
  memset(&j, 0, sizeof j);
  j.q = (const char *)(uintptr_t)q->ptr + q->offset;
  j.k = (const char *)(uintptr_t)k->ptr + k->offset;
  j.v = (const char *)(uintptr_t)v->ptr + v->offset;
  j.o = (char *)(uintptr_t)o->ptr + o->offset;
  j.tq = q->dtype, j.tk = k->dtype, j.tv = v->dtype, j.to = o->dtype;
  int64_t B = q->shape[0];
  j.Hq = q->shape[1], j.Sq = q->shape[2], j.D = q->shape[3];
  j.grp = q->shape[1] / k->shape[1], j.Skv = k->shape[2], j.Dv = v->shape[3];
  j.off = j.Skv - j.Sq;
  if (B == 0 || j.Hq == 0 || j.Sq == 0 || j.Dv == 0) return BP_OK;
  cpu_fast_attention_strides(a, j.sq, j.sk, j.sv, j.so);
  j.kdirect = k->dtype == BP_F32 && (k->strides[3] == 1 || j.D <= 1);
  j.vdirect = v->dtype == BP_F32 && (v->strides[3] == 1 || j.Dv <= 1);
  /* blocks scale with the head dims; absurd ones go to the reference */
  if ((double)att_ws_floats(&j) * sizeof(float) > 64e6) return BP_ERR_UNIMPLEMENTED;
  j.scale = (float)a->scale;
  if (!att_mask_init(&j.mk, a)) return BP_ERR_UNIMPLEMENTED;
  j.additive = att_mask_additive(&j.mk);
  j.nqb = (j.Sq + ATT_BQ - 1) / ATT_BQ;
  j.per = j.mk.causal ? (j.nqb + 1) / 2 : j.nqb;
  j.hs = j.Sq >= ATT_BQ ? 1 : ATT_BQ / j.Sq < j.grp ? ATT_BQ / j.Sq : j.grp;
  j.hchunks = (j.grp + j.hs - 1) / j.hs;
  j.ntasks = B * (j.Hq / j.grp) * j.hchunks * j.per;
  double work = (double)B * (double)j.Hq * (double)j.Sq * (double)j.Skv * (double)(j.D + j.Dv);
  cpu_fast_attention_run(dev, j.ntasks, work, 1e6, att_task, &j);
  /* tasks left over: no worker could get its scratch memory */
  return j.next < j.ntasks ? BP_ERR_OUT_OF_MEMORY : BP_OK;
}
