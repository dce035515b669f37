/*
 * fast/attention/attention_avx512.c — fused scaled dot-product attention,
 * f32 arithmetic on f32, bf16 or f16 tensors, AVX-512, FlashAttention-2
 * style on the GEMM micro-kernel.
 *
 * Work is split over (batch, query head, block of FA_BQ queries), taken
 * from a shared counter by the pool's workers. For one query block the
 * keys are walked in blocks of FA_BK:
 *   S = scale * Q K^T   the f32 GEMM's packed micro-kernel (ukr, MR
 *                       queries x NR keys per call): the block's queries
 *                       packed once into k-major tiles, K^T in NR-key
 *                       panels packed by the GEMM's packer
 *   online softmax      per query a running max m and sum l; S becomes
 *                       P = e^(S - m) and the output so far is rescaled by
 *                       e^(m_old - m_new)
 *   O += P V            the unpacked micro-kernel, V read in place; whole
 *                       tiles through an instance whose P rows lie a fixed
 *                       FA_BK apart (one pointer for all MR rows)
 * so the Sq x Skv score matrix never exists: per worker there is one
 * FA_BQ x FA_BK block of it. With the causal mask, key blocks above the
 * diagonal are never visited, and within a block each MR-row tile stops
 * at the last key its last row sees. The K^T panels of a kv head are
 * packed once per worker and reused by every query block (and every query
 * head of a GQA group) that worker takes next on the same kv head.
 *
 * Semantics are the reference's (ref/ref_attention.c): bottom-right causal
 * mask, grouped-query heads, Dv != D, a row that sees no key gives zeros,
 * a NaN or +inf score (or only -inf scores) makes the row NaN, and a value
 * row hidden from a query never reaches it (diagonal tiles whose hidden
 * values are not finite are finished row by row).
 *
 * Covered: q, k, v and out each f32, bf16 or f16, any strides. bf16 and
 * f16 are widened to f32 where they are copied anyway: keys as their K^T
 * panels are packed, values into an f32 copy of the kv head kept beside
 * K^T (packed once per worker and kv head, as K^T), queries per block;
 * the output is rounded (nearest even) once, from the f32 O / l. So a CPU
 * with AVX-512 but no AMX runs bf16 and f16 at the f32 kernel's speed and
 * accuracy, where the AVX2 kernel would run them at half the vector width.
 * f32 Q and V rows with unit stride are read in place; other strides are
 * copied like bf16. Anything else returns BP_ERR_UNIMPLEMENTED and the
 * next kernel runs. Compiled with AVX-512 flags (fast.mk);
 * cpu_fast_attention checks the CPU first.
 */
#include <immintrin.h>
#include <math.h>
#include <stdalign.h>
#include <string.h>

#include "attention.h"
#include "attention_exp512.h"
#include "attention_mask.h"
#include "plugins/cpu/fast/gemm/gemm.h"
#include "plugins/cpu/fast/gemm/gemm_epi512.h"
#include "plugins/cpu/fast/gemm/gemm_ukr_rows.h"

#define FA_MR 12          /* rows of the micro-kernel's tile (queries) */
#define FA_NR 32          /* columns of the micro-kernel's tile (keys, values) */
#define FA_BQ (4 * FA_MR) /* queries per block */
#define FA_BK (4 * FA_NR) /* keys per block */

/* O += P V for a whole tile: the unpacked micro-kernel with P's rows
 * FA_BK apart in the score block, fixed, so one pointer reaches all
 * FA_MR of them (the GEMM's ukr_rows keeps a register per row). */
#include "plugins/cpu/fast/gemm/ukr_avx512_f32.h"
CPU_FAST_DEFINE_UKR_ROWS_FIXED(fa_pv_ukr, FA_MR, FA_BK)
#include "plugins/cpu/fast/gemm/ukr_undef.h"

static inline int64_t fa_min(int64_t a, int64_t b) {
  return a < b ? a : b;
}

/* Element i of a tensor of dt (f32, bf16 or f16) at base. */
static inline const char *fa_at(const char *base, bp_dtype_t dt, int64_t i) {
  return base + i * (dt == BP_F32 ? 4 : 2);
}

/* Element i of base, widened to f32. */
static inline float fa_load1(const char *base, bp_dtype_t dt, int64_t i) {
  if (dt == BP_F32) return ((const float *)(const void *)base)[i];
  return epi_half_to_float(((const uint16_t *)(const void *)base)[i], dt == BP_F16);
}

/* The first lanes m of 16 consecutive elements at base, widened. */
static inline __m512 fa_load16(const char *base, bp_dtype_t dt, __mmask16 m) {
  if (dt == BP_F32) return _mm512_maskz_loadu_ps(m, base);
  return epi_half_widen16(_mm256_maskz_loadu_epi16(m, base), dt == BP_F16);
}

/* dst[0..n) = src[e * stride], widened to f32. */
static void fa_widen(const char *src, bp_dtype_t dt, int64_t stride, int64_t n, float *dst) {
  for (int64_t e = 0; stride == 1 && e < n; e += 16) {
    __mmask16 m = fa_lanes(n - e);
    _mm512_mask_storeu_ps(dst + e, m, fa_load16(fa_at(src, dt, e), dt, m));
  }
  for (int64_t e = 0; stride != 1 && e < n; e++) dst[e] = fa_load1(src, dt, e * stride);
}

/* dst[e * stride] = src[e] for e < n, rounded to dt (nearest even; NaN
 * stays NaN), as cpu_store rounds. */
static void fa_narrow(const float *src, int64_t n, char *dst, bp_dtype_t dt, int64_t stride) {
  bool f16 = dt == BP_F16;
  for (int64_t e = 0; e < n; e += 16) {
    __mmask16 m = fa_lanes(n - e);
    __m512 x = _mm512_maskz_loadu_ps(m, src + e);
    if (stride == 1 && dt == BP_F32) {
      _mm512_mask_storeu_ps(dst + 4 * e, m, x);
    } else if (stride == 1) {
      _mm256_mask_storeu_epi16(dst + 2 * e, m, epi_half_narrow16(x, f16));
    } else if (dt == BP_F32) {
      for (int64_t c = e; c < n && c < e + 16; c++) ((float *)(void *)dst)[c * stride] = src[c];
    } else {
      alignas(32) uint16_t t[16];
      _mm256_store_si256((__m256i *)(void *)t, epi_half_narrow16(x, f16));
      for (int64_t c = e; c < n && c < e + 16; c++)
        ((uint16_t *)(void *)dst)[c * stride] = t[c - e];
    }
  }
}

typedef struct fa_job {
  const char *q, *k, *v; /* element 0 of each tensor */
  char *o;
  bp_dtype_t tq, tk, tv, to;            /* f32, bf16 or f16 */
  int64_t Hq, grp, Sq, Skv, D, Dv, off; /* grp = Hq / Hkv, off = Skv - Sq */
  int64_t sq[4], sk[4], sv[4], so[4];
  int64_t nqb; /* query blocks per head */
  cpu_fast_att_sched_t tasks;
  int64_t ldkt;          /* floats of packed K^T per kv head */
  bool qdirect, vdirect; /* f32 rows with unit stride: read in place */
  float scale;
  int causal;
  bool additive; /* bias or ALiBi terms on the scores */
  att_mask_t mk;
  const cpu_fast_gemm_kernel_t *kr;
} fa_job_t;

/* Per-worker workspace (floats unless said otherwise). */
typedef struct fa_ws {
  float *kt; /* [ldkt] K^T of one kv head in NR-key panels [D][NR] */
  float *qb; /* [FA_BQ][D] the block's queries when not read in place */
  float *qk; /* [FA_BQ / FA_MR][D][FA_MR] the block's queries, k-major tiles */
  float *s;  /* [FA_BQ][FA_BK] scores, then weights */
  float *o;  /* [FA_BQ][Dv] unnormalised output */
  float *vh; /* [Skv][Dv] the kv head's values when not read in place */
  float *kw; /* [FA_NR][D] a panel's keys widened (bf16, f16) */
  float m[FA_BQ], l[FA_BQ], corr[FA_BQ];
  int64_t nlo[FA_BQ], nvis[FA_BQ]; /* keys [nlo, nvis) of the key block row r sees */
  bool bad[FA_BQ];
  float slope;                      /* the query head's ALiBi slope */
  int64_t kb, kg, kpacked, vpacked; /* whose keys kt (values vh) hold, how many */
} fa_ws_t;

/* Keys [lo, hi) query i of batch b sees, relative to the key block at k0
 * of nk keys and clamped to it. */
static void fa_block_keys(const fa_job_t *j, int64_t b, int64_t i, int64_t k0, int64_t nk,
                          int64_t *lo, int64_t *hi) {
  att_mask_keys(&j->mk, b, i, lo, hi);
  *lo = *lo - k0 < 0 ? 0 : fa_min(nk, *lo - k0);
  *hi = *hi - k0 < 0 ? 0 : fa_min(nk, *hi - k0);
}

/* Scores [c0, c1) of row r (query i, key block at k0) += bias - slope *
 * |i' - key|, before the softmax as in the reference. */
static void fa_add_terms(const fa_job_t *j, fa_ws_t *w, int64_t b, int64_t h, int64_t i, int64_t r,
                         int64_t k0, int64_t c0, int64_t c1) {
  float *s = w->s + r * FA_BK;
  const att_mask_t *m = &j->mk;
  if (m->bias) { /* in q's dtype */
    bp_dtype_t dt = j->tq;
    const char *bp = fa_at(m->bias, dt, b * m->bs[0] + h * m->bs[1] + i * m->bs[2]);
    for (int64_t c = c0; m->bs[3] == 1 && c < c1; c += 16) {
      __mmask16 k = fa_lanes(c1 - c);
      __m512 x =
          _mm512_add_ps(_mm512_maskz_loadu_ps(k, s + c), fa_load16(fa_at(bp, dt, k0 + c), dt, k));
      _mm512_mask_storeu_ps(s + c, k, x);
    }
    for (int64_t c = c0; m->bs[3] != 1 && c < c1; c++)
      s[c] += fa_load1(bp, dt, (k0 + c) * m->bs[3]);
  }
  if (w->slope != 0.0f) fa_alibi_add(s, c0, c1, i + j->off - k0, w->slope);
}

/* Row r's scores before its first key [0, lo) become -inf (they are not
 * computed, or belong to hidden keys), the rest within [lo, min(hi, ncols))
 * get their additive terms. */
static void fa_mask_row(const fa_job_t *j, fa_ws_t *w, int64_t b, int64_t h, int64_t i, int64_t r,
                        int64_t k0, int64_t ncols) {
  int64_t lo = w->nlo[r], hi = fa_min(w->nvis[r], ncols);
  float *s = w->s + r * FA_BK;
  for (int64_t c = 0; c < lo && c < ncols; c++) s[c] = -INFINITY;
  if (j->additive && hi > lo) fa_add_terms(j, w, b, h, i, r, k0, lo, hi);
}

/* kt holds the first `need` keys of kv head (b, g) in NR-key panels. The
 * panel holding the last packed key is packed again, whole. bf16 and f16
 * keys are widened a panel at a time into kw and packed from there. */
static void fa_pack_keys(const fa_job_t *j, fa_ws_t *w, int64_t b, int64_t g, int64_t need) {
  if (need <= w->kpacked) return;
  int64_t start = w->kpacked / FA_NR * FA_NR, cnt = need - start, D = j->D;
  const char *src = fa_at(j->k, j->tk, b * j->sk[0] + g * j->sk[1] + start * j->sk[2]);
  float *dst = w->kt + start * D;
  int64_t sd = D > 1 ? j->sk[3] : 1;
  w->kpacked = need;
  for (int64_t p0 = 0; j->tk != BP_F32 && p0 < cnt; p0 += FA_NR) {
    int64_t n = fa_min(FA_NR, cnt - p0);
    for (int64_t i = 0; i < n; i++)
      fa_widen(fa_at(src, j->tk, (p0 + i) * j->sk[2]), j->tk, sd, D, w->kw + i * D);
    cpu_fast_spack_avx512(w->kw, D, 1, n, D, FA_NR, dst + p0 * D);
  }
  if (j->tk != BP_F32) return;
  const float *srcf = (const float *)(const void *)src;
  if (!cpu_fast_spack_avx512(srcf, j->sk[2], sd, cnt, D, FA_NR, dst)) {
    int64_t panels = (cnt + FA_NR - 1) / FA_NR;
    for (int64_t p = 0; p < panels; p++)
      for (int64_t d = 0; d < D; d++)
        for (int64_t i = 0; i < FA_NR; i++) {
          int64_t key = p * FA_NR + i;
          dst[(p * D + d) * FA_NR + i] = key < cnt ? srcf[key * j->sk[2] + d * sd] : 0.0f;
        }
  }
}

/* vh holds the first `need` values of kv head (b, g) widened to f32 rows
 * of Dv (unless they are read in place). */
static void fa_pack_values(const fa_job_t *j, fa_ws_t *w, int64_t b, int64_t g, int64_t need) {
  if (j->vdirect || need <= w->vpacked) return;
  const char *v = fa_at(j->v, j->tv, b * j->sv[0] + g * j->sv[1]);
  int64_t se = j->Dv > 1 ? j->sv[3] : 1;
  for (int64_t key = w->vpacked; key < need; key++)
    fa_widen(fa_at(v, j->tv, key * j->sv[2]), j->tv, se, j->Dv, w->vh + key * j->Dv);
  w->vpacked = need;
}

/* kt and vh hold the first `need` keys and values of kv head (b, g). */
static void fa_pack_head(const fa_job_t *j, fa_ws_t *w, int64_t b, int64_t g, int64_t need) {
  if (w->kb != b || w->kg != g) w->kb = b, w->kg = g, w->kpacked = w->vpacked = 0;
  fa_pack_keys(j, w, b, g, need);
  fa_pack_values(j, w, b, g, need);
}

/* The whole-block case of fa_softmax_row (every key of a full block
 * seen): the row's FA_BK scores held in registers, no masks, so the
 * exponentials of a row overlap. */
static float fa_softmax_full(fa_ws_t *w, int64_t r) {
  float *s = w->s + r * FA_BK;
  enum { NV = FA_BK / 16 };
  __m512 x[NV], mx = _mm512_set1_ps(-INFINITY), sum = _mm512_setzero_ps();
  __mmask16 bad = 0;
  _Pragma("GCC unroll 16") for (int c = 0; c < NV; c++) {
    x[c] = _mm512_loadu_ps(s + 16 * c);
    bad |= _mm512_cmp_ps_mask(x[c], _mm512_set1_ps(INFINITY), _CMP_NLT_UQ);
    mx = _mm512_max_ps(mx, x[c]);
  }
  if (bad) w->bad[r] = true;
  float bm = _mm512_reduce_max_ps(mx), mold = w->m[r];
  float mnew = bm > mold ? bm : mold;
  __m512 vm = _mm512_set1_ps(mnew == -INFINITY ? 0.0f : mnew);
  _Pragma("GCC unroll 16") for (int c = 0; c < NV; c++) {
    __m512 p = fa_exp(_mm512_sub_ps(x[c], vm));
    _mm512_storeu_ps(s + 16 * c, p);
    sum = _mm512_add_ps(sum, p);
  }
  float corr = mold == mnew || mold == -INFINITY || mnew == -INFINITY ? 1.0f : expf(mold - mnew);
  w->m[r] = mnew;
  w->l[r] = w->l[r] * corr + _mm512_reduce_add_ps(sum);
  return corr;
}

/* Online-softmax step of one row over keys [0, n) of the block (the row's
 * tile computed scores up to ncols): scores become weights, zero from n to
 * ncols; returns the factor for the row's output so far. */
static float fa_softmax_row(fa_ws_t *w, int64_t r, int64_t n, int64_t ncols) {
  float *s = w->s + r * FA_BK;
  if (n == FA_BK && ncols == FA_BK) return fa_softmax_full(w, r);
  if (n <= 0) {
    for (int64_t c = 0; c < ncols; c += 16)
      _mm512_mask_storeu_ps(s + c, fa_lanes(ncols - c), _mm512_setzero_ps());
    return 1.0f;
  }
  __m512 mx = _mm512_set1_ps(-INFINITY);
  __mmask16 bad = 0;
  for (int64_t c = 0; c < n; c += 16) {
    __mmask16 k = fa_lanes(n - c);
    __m512 x = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, s + c);
    /* NaN or +inf: the reference's row is NaN */
    bad |= _mm512_mask_cmp_ps_mask(k, x, _mm512_set1_ps(INFINITY), _CMP_NLT_UQ);
    mx = _mm512_max_ps(mx, x);
  }
  if (bad) w->bad[r] = true;
  float bm = _mm512_reduce_max_ps(mx), mold = w->m[r];
  float mnew = bm > mold ? bm : mold;
  /* only -inf so far: subtracting 0 gives weights 0 and m stays -inf */
  __m512 vm = _mm512_set1_ps(mnew == -INFINITY ? 0.0f : mnew), sum = _mm512_setzero_ps();
  for (int64_t c = 0; c < ncols; c += 16) {
    __m512 p =
        _mm512_maskz_mov_ps(fa_lanes(n - c), fa_exp(_mm512_sub_ps(_mm512_loadu_ps(s + c), vm)));
    _mm512_mask_storeu_ps(s + c, fa_lanes(ncols - c), p);
    sum = _mm512_add_ps(sum, p);
  }
  /* a row that has seen only -inf (or nothing) has no output to rescale */
  float corr = mold == mnew || mold == -INFINITY || mnew == -INFINITY ? 1.0f : expf(mold - mnew);
  w->m[r] = mnew;
  w->l[r] = w->l[r] * corr + _mm512_reduce_add_ps(sum);
  return corr;
}

/* o[r] *= corr[r] for the rows whose running max moved. */
static void fa_rescale(fa_ws_t *w, int64_t nq, int64_t Dv) {
  for (int64_t r = 0; r < nq; r++) {
    if (w->corr[r] == 1.0f) continue;
    float *o = w->o + r * Dv;
    __m512 c = _mm512_set1_ps(w->corr[r]);
    for (int64_t e = 0; e < Dv; e += 16) {
      __mmask16 k = fa_lanes(Dv - e);
      _mm512_mask_storeu_ps(o + e, k, _mm512_mul_ps(c, _mm512_maskz_loadu_ps(k, o + e)));
    }
  }
}

/* true when rows [0, n) of v (row stride ldv, Dv long) are all finite. */
static bool fa_finite(const float *v, int64_t ldv, int64_t n, int64_t Dv) {
  const __m512i expo = _mm512_set1_epi32(0x7f800000);
  for (int64_t jj = 0; jj < n; jj++)
    for (int64_t e = 0; e < Dv; e += 16) {
      __m512i x = _mm512_maskz_loadu_epi32(fa_lanes(Dv - e), v + jj * ldv + e);
      if (_mm512_cmpeq_epi32_mask(_mm512_and_si512(x, expo), expo)) return false;
    }
  return true;
}

/* o[r] += p[r][k] v[k] for row r of the tile and keys [k0, k1). */
static void fa_pv_row(const fa_job_t *j, fa_ws_t *w, const float *vp, int64_t ldv, int64_t r,
                      int64_t k0, int64_t k1) {
  int64_t Dv = j->Dv;
  const float *p = w->s + r * FA_BK;
  float *o = w->o + r * Dv;
  for (int64_t jj = k0; jj < k1; jj++)
    for (int64_t e = 0; e < Dv; e++) o[e] += p[jj] * vp[jj * ldv + e];
}

/* O[t0 .. t0 + rows) += P V over the tile's keys [lo, nk), lo the first
 * row's first key: the micro-kernel for all of them, or, when keys that
 * some rows do not see ([lo, lmax) before the last row's first key,
 * [hmin, nk) after the first row's last) hold values that are not finite
 * (0 * inf is NaN), for the keys every row sees and then row by row over
 * the rest each row sees. */
static void fa_pv_tile(const fa_job_t *j, fa_ws_t *w, const float *vp, int64_t ldv, int64_t t0,
                       int64_t rows, int64_t nk) {
  int64_t Dv = j->Dv, lo = w->nlo[t0], lmax = w->nlo[t0 + rows - 1];
  int64_t hmin = fa_min(w->nvis[t0], nk);
  bool exact = (hmin < nk && !fa_finite(vp + hmin * ldv, ldv, nk - hmin, Dv)) ||
               (lmax > lo && !fa_finite(vp + lo * ldv, ldv, lmax - lo, Dv));
  int64_t k0 = exact ? lmax : lo, k1 = exact ? (hmin > lmax ? hmin : lmax) : nk;
  const float *p = w->s + t0 * FA_BK;
  float *o = w->o + t0 * Dv;
  for (int64_t e0 = 0; k1 > k0 && e0 < Dv; e0 += FA_NR) {
    const float *ve = vp + k0 * ldv + e0;
    if (rows == FA_MR && Dv - e0 >= FA_NR)
      fa_pv_ukr(k1 - k0, p + k0, ve, ldv, o + e0, Dv, 1.0f, 1.0f);
    else
      j->kr->ukr_rows(k1 - k0, p + k0, FA_BK, ve, ldv, o + e0, Dv, (int)rows,
                      (int)fa_min(FA_NR, Dv - e0), 1.0f, 1.0f);
  }
  if (!exact) return;
  for (int64_t r = t0; r < t0 + rows; r++) {
    fa_pv_row(j, w, vp, ldv, r, w->nlo[r], fa_min(k0, w->nvis[r]));
    fa_pv_row(j, w, vp, ldv, r, k1 > w->nlo[r] ? k1 : w->nlo[r], w->nvis[r]);
  }
}

/* Values from key k0 of kv head (b, g): in place, or in vh's copy. */
static const float *fa_values(const fa_job_t *j, fa_ws_t *w, int64_t b, int64_t g, int64_t k0,
                              int64_t *ldv) {
  if (!j->vdirect) {
    *ldv = j->Dv;
    return w->vh + k0 * j->Dv;
  }
  *ldv = j->sv[2];
  return (const float *)(const void *)fa_at(j->v, BP_F32,
                                            b * j->sv[0] + g * j->sv[1] + k0 * j->sv[2]);
}

/* One key block [k0, k0 + nk) for the query block's nq rows (packed in
 * w->qk). */
static void fa_key_block(const fa_job_t *j, fa_ws_t *w, int64_t b, int64_t h, int64_t i0,
                         int64_t nq, int64_t k0, int64_t nk) {
  static const float zero = 0.0f;
  int64_t D = j->D, tk[FA_BQ / FA_MR];
  for (int64_t r = 0; r < nq; r++) fa_block_keys(j, b, i0 + r, k0, nk, &w->nlo[r], &w->nvis[r]);
  /* scores, each MR-row tile from the NR panel of the first key its first
   * row sees up to the last key its last row sees; the packed kernel
   * writes whole tiles (rows past nq and keys past the last seen lie
   * inside the score block and are never read) */
  for (int64_t t0 = 0; t0 < nq; t0 += FA_MR) {
    int64_t kv = w->nvis[fa_min(t0 + FA_MR, nq) - 1];
    tk[t0 / FA_MR] = kv;
    for (int64_t p0 = w->nlo[t0] / FA_NR * FA_NR; p0 < kv; p0 += FA_NR)
      j->kr->ukr(D, w->qk + t0 * D, w->kt + (k0 + p0) * D, w->s + t0 * FA_BK + p0, FA_BK, &j->scale,
                 &zero);
  }
  for (int64_t r = 0; r < nq; r++) {
    int64_t kv = tk[r / FA_MR];
    fa_mask_row(j, w, b, h, i0 + r, r, k0, kv);
    int64_t n = w->nvis[r] > w->nlo[r] ? w->nvis[r] : 0;
    w->corr[r] = fa_softmax_row(w, r, n, kv);
  }
  fa_rescale(w, nq, j->Dv);
  int64_t ldv;
  const float *vp = fa_values(j, w, b, h / j->grp, k0, &ldv);
  for (int64_t t0 = 0; t0 < nq; t0 += FA_MR)
    if (tk[t0 / FA_MR] > w->nlo[t0])
      fa_pv_tile(j, w, vp, ldv, t0, fa_min(FA_MR, nq - t0), tk[t0 / FA_MR]);
}

/* out row = o / l, rounded once to out's dtype; zeros for a row that sees
 * no key or only -inf scores, NaN for a row with a NaN or +inf score. */
static void fa_store(const fa_job_t *j, fa_ws_t *w, int64_t b, int64_t h, int64_t i0, int64_t nq) {
  int64_t Dv = j->Dv, se = Dv > 1 ? j->so[3] : 1;
  for (int64_t r = 0; r < nq; r++) {
    char *orow = (char *)fa_at(j->o, j->to, b * j->so[0] + h * j->so[1] + (i0 + r) * j->so[2]);
    bool nan = w->bad[r], none = !nan && w->m[r] == -INFINITY;
    float *row = w->o + r * Dv;
    __m512 vi = _mm512_set1_ps(w->l[r] > 0 ? 1.0f / w->l[r] : 0.0f);
    for (int64_t e = 0; e < Dv; e += 16) {
      __mmask16 k = fa_lanes(Dv - e);
      __m512 x = nan    ? _mm512_set1_ps(NAN)
                 : none ? _mm512_setzero_ps()
                        : _mm512_mul_ps(vi, _mm512_maskz_loadu_ps(k, row + e));
      _mm512_mask_storeu_ps(row + e, k, x);
    }
    fa_narrow(row, Dv, orow, j->to, se);
  }
}

/* Queries [i0, i0 + nq) of query head h of batch b. */
static void fa_query_block(const fa_job_t *j, fa_ws_t *w, int64_t b, int64_t h, int64_t i0,
                           int64_t nq) {
  int64_t g = h / j->grp, D = j->D;
  w->slope = att_mask_slope(&j->mk, h);
  for (int64_t r = 0; r < nq; r++) {
    w->m[r] = -INFINITY;
    w->l[r] = 0;
    w->bad[r] = false;
  }
  memset(w->o, 0, sizeof(float) * (size_t)(nq * j->Dv));
  const char *q = fa_at(j->q, j->tq, b * j->sq[0] + h * j->sq[1] + i0 * j->sq[2]);
  const float *qp = (const float *)(const void *)q;
  int64_t lda = j->sq[2];
  if (!j->qdirect) {
    for (int64_t r = 0; r < nq; r++)
      fa_widen(fa_at(q, j->tq, r * j->sq[2]), j->tq, D > 1 ? j->sq[3] : 1, D, w->qb + r * D);
    qp = w->qb, lda = D;
  }
  /* k-major tiles for the packed kernel (rows past nq zero); unit k
   * stride, which the packer always takes */
  cpu_fast_spack_avx512(qp, lda, 1, nq, D, FA_MR, w->qk);
  /* keys past the last query's limit and before the first query's start
   * are hidden from the whole block */
  int64_t kbeg, kend, lo, hi;
  att_mask_keys(&j->mk, b, i0, &kbeg, &hi);
  att_mask_keys(&j->mk, b, i0 + nq - 1, &lo, &kend);
  fa_pack_head(j, w, b, g, kend);
  for (int64_t k0 = kbeg / FA_NR * FA_NR; k0 < kend; k0 += FA_BK)
    fa_key_block(j, w, b, h, i0, nq, k0, fa_min(FA_BK, kend - k0));
  fa_store(j, w, b, h, i0, nq);
}

static size_t fa_ws_floats(const fa_job_t *j) {
  int64_t vh = j->vdirect ? 0 : j->Skv * j->Dv, kw = j->tk == BP_F32 ? 0 : FA_NR * j->D;
  return (size_t)(j->ldkt + FA_BQ * (2 * j->D + FA_BK + j->Dv) + vh + kw + 64);
}

/* Task t: head t / per (batch-major), query block t % per; causal heads
 * pair block c with block nqb - 1 - c so that every task does about the
 * same work. Workers take tasks from j->tasks (their own range first,
 * then the others', cpu_fast_att_sched_t), so a core slowed down by other
 * processes does less of the work; every task writes only its own rows,
 * so results do not depend on who runs what. */
static void fa_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  fa_job_t *j = ctx;
  (void)worker, (void)end;
  float *buf = cpu_fast_scratch(0, fa_ws_floats(j) * sizeof(float));
  if (!buf) return; /* the other workers take the tasks */
  fa_ws_t w;
  w.kt = buf;
  w.qb = w.kt + j->ldkt;
  w.qk = w.qb + FA_BQ * j->D;
  w.s = w.qk + FA_BQ * j->D;
  w.o = w.s + FA_BQ * FA_BK;
  w.vh = w.o + FA_BQ * j->Dv;
  w.kw = w.vh + (j->vdirect ? 0 : j->Skv * j->Dv);
  w.kb = w.kg = -1, w.kpacked = w.vpacked = 0;
  int64_t b, h, blocks[2];
  int nb;
  while ((nb = cpu_fast_att_sched_next(&j->tasks, (unsigned)begin, &b, &h, blocks)) > 0) {
    for (int x = 0; x < nb; x++) {
      int64_t i0 = blocks[x] * FA_BQ;
      fa_query_block(j, &w, b, h, i0, fa_min(FA_BQ, j->Sq - i0));
    }
  }
}

static bool fa_covered(const bp_attention_args_t *a) {
  const bp_plugin_tensor_t *t[4] = {&a->q, &a->k, &a->v, &a->out};
  for (int x = 0; x < 4; x++) {
    bp_dtype_t dt = t[x]->dtype;
    if ((dt != BP_F32 && dt != BP_BF16 && dt != BP_F16) || t[x]->rank != 4) return false;
  }
  const cpu_fast_gemm_kernel_t *kr = &cpu_fast_sgemm_avx512;
  return a->k.shape[1] > 0 && a->q.shape[1] % a->k.shape[1] == 0 && kr->ukr_rows &&
         kr->mr == FA_MR && kr->nr == FA_NR;
}

bp_status_t cpu_fast_attention_avx512(cpu_device_t *dev, const bp_attention_args_t *a) {
  const bp_plugin_tensor_t *q = &a->q, *k = &a->k, *v = &a->v, *o = &a->out;
  if (!fa_covered(a)) return BP_ERR_UNIMPLEMENTED;
  fa_job_t j;
  memset(&j, 0, sizeof j);
  if (!att_mask_init(&j.mk, a)) return BP_ERR_UNIMPLEMENTED;
  j.kr = &cpu_fast_sgemm_avx512;
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
  j.qdirect = j.tq == BP_F32 && (q->strides[3] == 1 || j.D <= 1);
  j.vdirect = j.tv == BP_F32 && (v->strides[3] == 1 || j.Dv <= 1);
  j.ldkt = (j.Skv + FA_NR - 1) / FA_NR * FA_NR * (j.D > 0 ? j.D : 1);
  /* each worker holds a kv head's K^T (and values when copied): absurd
   * ones go to the next kernel */
  if ((double)fa_ws_floats(&j) * sizeof(float) > 256e6) return BP_ERR_UNIMPLEMENTED;
  j.scale = (float)a->scale;
  j.causal = a->causal;
  j.additive = att_mask_additive(&j.mk);
  j.nqb = (j.Sq + FA_BQ - 1) / FA_BQ;
  int64_t per = j.causal ? (j.nqb + 1) / 2 : j.nqb;
  cpu_fast_att_sched_init(&j.tasks, B * j.Hq * per, per, j.Hq, j.nqb, j.causal);
  double work = (double)B * (double)j.Hq * (double)j.Sq * (double)j.Skv * (double)(j.D + j.Dv);
  cpu_fast_attention_run_sched(dev, &j.tasks, work, 1e6, fa_task, &j);
  /* tasks left over: no worker could get its scratch memory */
  return cpu_fast_att_sched_done(&j.tasks) ? BP_OK : BP_ERR_OUT_OF_MEMORY;
}
