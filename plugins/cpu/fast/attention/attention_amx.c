/*
 * fast/attention/attention_amx.c — fused scaled dot-product attention for
 * bf16 q, k, v and out on AMX tiles, FlashAttention-2 style.
 *
 * Work is split over (batch, query head, block of AX_BQ = 32 queries), taken
 * from a shared counter by the pool's workers. For one query block the
 * keys are walked in blocks of AX_BK:
 *   S = Q K^T        TDPBF16PS, bf16 products summed in f32: the block's
 *                    queries (two 16-row tiles, D padded to 32) against
 *                    K^T in VNNI tiles of 16 keys, packed once per kv head
 *                    and worker and reused by every query block (and every
 *                    query head of a GQA group) that worker takes next
 *   online softmax   in f32 with AVX-512: scaled scores, per query a
 *                    running max m and sum l, the output so far rescaled by
 *                    e^(m_old - m_new); the weights P rounded to bf16 (the
 *                    sum l adds them before rounding)
 *   O += P V         TDPBF16PS again, V in VNNI tiles of 32 keys x 16
 *                    columns, packed once per kv head like K^T; O stays f32
 * and is rounded to bf16 (nearest even) once, at the end. The Sq x Skv
 * score matrix never exists. With the causal mask, key blocks past the
 * block's last visible key are never visited.
 *
 * Semantics are the reference's (ref/ref_attention.c): bottom-right causal
 * mask, grouped-query heads, Dv != D, a row that sees no key gives zeros,
 * a NaN or +inf score (or only -inf scores) makes the row NaN.
 *
 * Entry conditions (anything else returns BP_ERR_UNIMPLEMENTED, and the
 * next kernel runs): q, k, v and out bf16 of rank 4; Hq a multiple of Hkv;
 * D >= 1; the workspace under 256 MB; with the causal mask, every value
 * finite (a key hidden from a query inside a tile would add 0 * inf). Any
 * strides. The caller (cpu_fast_attention) has checked AMX-BF16, AVX-512
 * (with AVX512-BF16, for the rounding) and the kernel's permission to use tile state. Compiled with
 * AVX-512, AVX512-BF16 and AMX flags (fast.mk).
 */
#include <immintrin.h>
#include <math.h>
#include <stdalign.h>
#include <string.h>

#include "attention.h"
#include "attention_exp512.h"
#include "attention_mask.h"
#include "plugins/cpu/fast/amx_tiles.h"
#include "plugins/cpu/fast/gemm/gemm.h"

#define AX_BQ 32    /* queries per block: two 16-row tiles */
#define AX_BK 256   /* keys per block: up to eight 32-key sub-blocks */
#define AX_KC 32    /* bf16 per tile row (a 64-byte row) */
#define AX_TILE 512 /* bf16 per 16 x 64-byte tile */

typedef struct ax_job {
  const uint16_t *q, *k, *v;
  uint16_t *o;
  int64_t Hq, grp, Sq, Skv, D, Dv, off; /* grp = Hq / Hkv, off = Skv - Sq */
  int64_t Dp, Dvp, Skp;                 /* D, Dv, Skv rounded up to 32 */
  int64_t sq[4], sk[4], sv[4], so[4];
  int64_t nqb; /* query blocks per head */
  cpu_fast_att_sched_t tasks;
  float scale;
  int causal;
  bool prescale; /* masks of ABI 1.5: scores scaled before the softmax */
  att_mask_t mk;
} ax_job_t;

/* Per-worker workspace. */
typedef struct ax_ws {
  uint16_t *kt; /* [Skp / 16][Dp / 32] VNNI tiles of K^T: 16 keys each */
  uint16_t *vt; /* [Skp / 32][Dvp / 16] VNNI tiles of V */
  uint16_t *qb; /* [AX_BQ][Dp] the block's queries, zero padded */
  uint16_t *p;  /* [AX_BQ][AX_BK] weights */
  float *s;     /* [AX_BQ][AX_BK] scores */
  float *o;     /* [AX_BQ][Dvp] unnormalised output */
  float m[AX_BQ], corr[AX_BQ];
  float l[AX_BQ][16]; /* running sums, 16 lanes a row */
  bool bad[AX_BQ];
  float slope;             /* the query head's ALiBi slope */
  int64_t kb, kg, kpacked; /* whose keys and values kt, vt hold, how many */
} ax_ws_t;

static inline int64_t ax_min(int64_t a, int64_t b) {
  return a < b ? a : b;
}

/* 16 floats to bf16, nearest even (VCVTNEPS2BF16). */
static inline __m256i ax_round16(__m512 v) {
  return (__m256i)_mm512_cvtneps_pbh(v);
}

/* The running max moves only when a block's max passes it by more than
 * this (natural log units): the weights are then at most e^8, harmless in
 * f32 and exact in bf16's exponent, and most blocks need no rescale. */
#define AX_LAZY_MAX 8.0f

/* 2^t to bf16 precision, for the weights: f = t - floor(t) in [0, 1) by
 * one VREDUCEPS, 2^f by a degree-3 polynomial fitted to its relative
 * error (under 7.5e-5; bf16 rounds at 2^-9), times 2^floor(t) by VSCALEFPS,
 * which floors t itself: four operations where rounding, subtracting,
 * clamping and a degree-4 polynomial took seven. -inf gives 0 (VREDUCEPS
 * gives 0 for it, VSCALEFPS by -inf gives 0), NaN gives NaN. */
static inline __m512 ax_exp2(__m512 t) {
  __m512 f = _mm512_reduce_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 p = _mm512_set1_ps(7.80244917e-2f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.26067200e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.95833504e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.99925196e-1f));
  return _mm512_scalef_ps(p, t);
}

/* Keys [lo, hi) query i of batch b sees, relative to the key block at k0
 * of nk keys and clamped to it. */
static void ax_block_keys(const ax_job_t *j, int64_t b, int64_t i, int64_t k0, int64_t nk,
                          int64_t *lo, int64_t *hi) {
  att_mask_keys(&j->mk, b, i, lo, hi);
  *lo = *lo - k0 < 0 ? 0 : ax_min(nk, *lo - k0);
  *hi = *hi - k0 < 0 ? 0 : ax_min(nk, *hi - k0);
}

/* ---- packing ------------------------------------------------------------ */

/* K^T tile (panel of 16 keys, chunk c of 32 dims): row r holds the pairs
 * (K[key][32c + 2r], K[key][32c + 2r + 1]) of the 16 keys. Keys past Skv
 * and dims past D are zero. With unit dim stride a row is one gather of
 * 16 pairs; the odd last dim and strided dims go one value at a time. */
static void ax_pack_keys(const ax_job_t *j, const uint16_t *k, int64_t key0, int64_t key1,
                         uint16_t *kt) {
  int64_t nc = j->Dp / AX_KC, sd = j->sk[3], ld = j->sk[2];
  bool gather = sd == 1 && 16 * ld < INT32_MAX;
  __m512i idx =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32((int)(gather ? ld : 0)));
  for (int64_t p0 = key0; p0 < key1; p0 += 16) {
    const uint16_t *src = k + p0 * ld;
    __mmask16 live = fa_lanes(ax_min(16, j->Skv - p0));
    uint16_t *panel = kt + (p0 / 16) * nc * AX_TILE;
    for (int64_t d = 0; d < j->Dp; d += 2) {
      uint16_t *dst = panel + (d / AX_KC) * AX_TILE + (d % AX_KC) / 2 * 32;
      if (gather && d + 1 < j->D) {
        __m512i x = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, idx, src + d, 2);
        _mm512_storeu_si512(dst, x);
        continue;
      }
      for (int64_t jj = 0; jj < 16; jj++) {
        bool in = p0 + jj < j->Skv;
        dst[2 * jj] = in && d < j->D ? src[jj * ld + d * sd] : 0;
        dst[2 * jj + 1] = in && d + 1 < j->D ? src[jj * ld + (d + 1) * sd] : 0;
      }
    }
  }
}

/* V tile (chunk c of 32 keys, columns 16t .. 16t + 15): row r holds the
 * pairs (V[32c + 2r][col], V[32c + 2r + 1][col]). Zero past Skv and Dv.
 * With unit column stride two rows interleave in registers, 32 columns at
 * a time. */
static void ax_pack_values(const ax_job_t *j, const uint16_t *v, int64_t key0, int64_t key1,
                           uint16_t *vt) {
  const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8,
                                      39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
  int64_t nt = j->Dvp / 16, se = j->sv[3], ld = j->sv[2];
  for (int64_t key = key0; key < key1; key += 2) {
    uint16_t *dst = vt + (key / AX_KC) * nt * AX_TILE + (key % AX_KC) / 2 * 32;
    const uint16_t *r0 = v + key * ld, *r1 = r0 + ld;
    bool in0 = key < j->Skv, in1 = key + 1 < j->Skv;
    for (int64_t e = 0; e < j->Dvp; e += 32) {
      uint16_t *d0 = dst + (e / 16) * AX_TILE, *d1 = d0 + AX_TILE;
      if (se == 1) {
        int64_t n = ax_min(32, j->Dv - e);
        __mmask32 m = n >= 32 ? 0xffffffffu : n <= 0 ? 0 : (__mmask32)((1u << n) - 1);
        __m512i x = _mm512_maskz_loadu_epi16(in0 ? m : 0, r0 + e);
        __m512i y = _mm512_maskz_loadu_epi16(in1 ? m : 0, r1 + e);
        _mm512_storeu_si512(d0, _mm512_permutex2var_epi16(x, lo, y));
        _mm512_storeu_si512(d1, _mm512_permutex2var_epi16(x, hi, y));
        continue;
      }
      for (int64_t c = 0; c < 32; c++) {
        uint16_t *d = (c < 16 ? d0 : d1) + (c % 16) * 2;
        bool col = e + c < j->Dv;
        d[0] = in0 && col ? r0[(e + c) * se] : 0;
        d[1] = in1 && col ? r1[(e + c) * se] : 0;
      }
    }
  }
}

/* kt and vt hold the first `need` keys (rounded up to 32) of kv head
 * (b, g). */
static void ax_pack_head(const ax_job_t *j, ax_ws_t *w, int64_t b, int64_t g, int64_t need) {
  if (w->kb != b || w->kg != g) w->kb = b, w->kg = g, w->kpacked = 0;
  int64_t upto = ax_min(j->Skp, (need + AX_KC - 1) / AX_KC * AX_KC);
  if (upto <= w->kpacked) return;
  ax_pack_keys(j, j->k + b * j->sk[0] + g * j->sk[1], w->kpacked, upto, w->kt);
  ax_pack_values(j, j->v + b * j->sv[0] + g * j->sv[1], w->kpacked, upto, w->vt);
  w->kpacked = upto;
}

/* The block's queries into qb, [AX_BQ][Dp], zeros past nq and D. */
static void ax_load_queries(const ax_job_t *j, ax_ws_t *w, const uint16_t *qp, int64_t nq) {
  memset(w->qb, 0, sizeof(uint16_t) * (size_t)(AX_BQ * j->Dp));
  for (int64_t r = 0; r < nq; r++) {
    const uint16_t *src = qp + r * j->sq[2];
    uint16_t *dst = w->qb + r * j->Dp;
    if (j->sq[3] == 1)
      memcpy(dst, src, sizeof(uint16_t) * (size_t)j->D);
    else
      for (int64_t d = 0; d < j->D; d++) dst[d] = src[d * j->sq[3]];
  }
}

/* ---- the tiles ---------------------------------------------------------- */

/* s[:, 32 sb .. 32 sb + 31] = Q K^T for the keys of sub-blocks
 * [0, nsub) starting at key k0 (a multiple of 32). */
static void ax_scores(const ax_job_t *j, ax_ws_t *w, int64_t k0, int64_t nsub) {
  int64_t nc = j->Dp / AX_KC, qst = j->Dp * 2, sst = AX_BK * 4;
  for (int64_t sb = 0; sb < nsub; sb++) {
    const uint16_t *kp = w->kt + (k0 / 16 + 2 * sb) * nc * AX_TILE;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t c = 0; c < nc; c++) {
      _tile_loadd(4, w->qb + c * AX_KC, qst);
      _tile_loadd(5, w->qb + 16 * j->Dp + c * AX_KC, qst);
      _tile_loadd(6, kp + c * AX_TILE, 64);
      _tile_loadd(7, kp + (nc + c) * AX_TILE, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    float *s = w->s + sb * 32;
    _tile_stored(0, s, sst);
    _tile_stored(1, s + 16, sst);
    _tile_stored(2, s + 16 * AX_BK, sst);
    _tile_stored(3, s + 16 * AX_BK + 16, sst);
  }
}

/* o += P V over the sub-blocks [0, nsub) of the key block at k0. */
static void ax_pv(const ax_job_t *j, ax_ws_t *w, int64_t k0, int64_t nsub) {
  int64_t nt = j->Dvp / 16, ost = j->Dvp * 4, pst = AX_BK * 2;
  for (int64_t e0 = 0; e0 < j->Dvp; e0 += 32) {
    float *o = w->o + e0;
    _tile_loadd(0, o, ost);
    _tile_loadd(1, o + 16, ost);
    _tile_loadd(2, o + 16 * j->Dvp, ost);
    _tile_loadd(3, o + 16 * j->Dvp + 16, ost);
    for (int64_t c = 0; c < nsub; c++) {
      const uint16_t *vp = w->vt + ((k0 / AX_KC + c) * nt + e0 / 16) * AX_TILE;
      _tile_loadd(4, w->p + c * AX_KC, pst);
      _tile_loadd(5, w->p + 16 * AX_BK + c * AX_KC, pst);
      _tile_loadd(6, vp, 64);
      _tile_loadd(7, vp + AX_TILE, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, o, ost);
    _tile_stored(1, o + 16, ost);
    _tile_stored(2, o + 16 * j->Dvp, ost);
    _tile_stored(3, o + 16 * j->Dvp + 16, ost);
  }
}

/* ---- online softmax ----------------------------------------------------- */

/* The row's new running max after a block whose largest scaled score is
 * bm (NaN keeps the old one). */
static inline float ax_new_max(float bm, float mold) {
  return bm > mold + AX_LAZY_MAX ? bm : mold;
}

/* Row r after a block whose weights (relative to the max mnew) add up to
 * the lanes of sum; returns the factor for the row's output so far. A NaN
 * sum means a NaN or +inf score: the reference's row is NaN. */
static float ax_update(ax_ws_t *w, int64_t r, float mnew, __m512 sum) {
  float mold = w->m[r];
  /* a row that has seen only -inf (or nothing) has no output to rescale */
  float corr = mold == mnew || mold == -INFINITY || mnew == -INFINITY ? 1.0f : expf(mold - mnew);
  w->m[r] = mnew;
  __m512 l = _mm512_loadu_ps(w->l[r]);
  _mm512_storeu_ps(w->l[r], _mm512_fmadd_ps(l, _mm512_set1_ps(corr), sum));
  return corr;
}

/* The largest scaled score of row r's first nv vectors (nv even, scale >
 * 0: the max is taken before scaling). */
static float ax_row_max(const ax_ws_t *w, int64_t r, int nv, float scale) {
  const float *s = w->s + r * AX_BK;
  __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0;
  for (int c = 0; c < nv; c += 2) {
    m0 = _mm512_max_ps(m0, _mm512_loadu_ps(s + 16 * c));
    m1 = _mm512_max_ps(m1, _mm512_loadu_ps(s + 16 * c + 16));
  }
  return scale * _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

/* Row r's step over the first nv vectors of scores (nv even), every key
 * visible, scale > 0 and bm the row's largest scaled score (ax_row_max,
 * taken for every row of the block first, so no row's exponentials wait
 * for its own reduction); the weights are rounded two vectors at a
 * time. */
static float ax_softmax_full(ax_ws_t *w, int64_t r, int nv, float scale, float bm) {
  const float *s = w->s + r * AX_BK;
  uint16_t *p = w->p + r * AX_BK;
  float mnew = ax_new_max(bm, w->m[r]);
  const float log2e = 1.44269504f;
  __m512 vm = _mm512_set1_ps(mnew == -INFINITY ? 0.0f : mnew * log2e);
  __m512 vs = _mm512_set1_ps(scale * log2e), sum[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int c = 0; c < nv; c += 2) {
    __m512 e0 = ax_exp2(_mm512_fmsub_ps(_mm512_loadu_ps(s + 16 * c), vs, vm));
    __m512 e1 = ax_exp2(_mm512_fmsub_ps(_mm512_loadu_ps(s + 16 * c + 16), vs, vm));
    sum[0] = _mm512_add_ps(sum[0], e0);
    sum[1] = _mm512_add_ps(sum[1], e1);
    _mm512_storeu_si512(p + 16 * c, (__m512i)_mm512_cvtne2ps_pbh(e1, e0));
  }
  return ax_update(w, r, mnew, _mm512_add_ps(sum[0], sum[1]));
}

/* Row r's step over keys [0, n) of the block (scores computed up to
 * ncols, a multiple of 32): weights in p, zero from n to ncols; returns the
 * factor for the row's output so far. */
static float ax_softmax_row(ax_ws_t *w, int64_t r, int64_t n, int64_t ncols, float scale) {
  const float *s = w->s + r * AX_BK;
  uint16_t *p = w->p + r * AX_BK;
  if (n <= 0) {
    memset(p, 0, sizeof(uint16_t) * (size_t)ncols);
    return 1.0f;
  }
  __m512 vs = _mm512_set1_ps(scale), mx = _mm512_set1_ps(-INFINITY);
  for (int64_t c = 0; c < n; c += 16) {
    __mmask16 k = fa_lanes(n - c);
    __m512 x = _mm512_mul_ps(vs, _mm512_maskz_loadu_ps(k, s + c));
    mx = _mm512_mask_max_ps(mx, k, mx, x);
  }
  float mnew = ax_new_max(_mm512_reduce_max_ps(mx), w->m[r]);
  const float log2e = 1.44269504f;
  /* only -inf so far: subtracting 0 gives weights 0 and m stays -inf */
  __m512 vm = _mm512_set1_ps(mnew == -INFINITY ? 0.0f : mnew * log2e);
  __m512 sum = _mm512_setzero_ps();
  vs = _mm512_set1_ps(scale * log2e);
  for (int64_t c = 0; c < ncols; c += 16) {
    __m512 x = _mm512_fmsub_ps(vs, _mm512_loadu_ps(s + c), vm);
    __m512 e = _mm512_maskz_mov_ps(fa_lanes(n - c), ax_exp2(x));
    _mm256_storeu_si256((__m256i *)(p + c), ax_round16(e));
    sum = _mm512_add_ps(sum, e);
  }
  return ax_update(w, r, mnew, sum);
}

/* o[r] *= corr[r] for the rows whose running max moved. */
static void ax_rescale(ax_ws_t *w, int64_t Dvp) {
  for (int64_t r = 0; r < AX_BQ; r++) {
    if (w->corr[r] == 1.0f) continue;
    float *o = w->o + r * Dvp;
    __m512 c = _mm512_set1_ps(w->corr[r]);
    for (int64_t e = 0; e < Dvp; e += 16)
      _mm512_storeu_ps(o + e, _mm512_mul_ps(c, _mm512_loadu_ps(o + e)));
  }
}

/* With the masks of ABI 1.5, row r's scores (query i, key block at k0)
 * of [0, ncols) scaled, -inf before the row's first key lo, and the bias
 * and ALiBi terms added on [lo, hi), as the reference adds them. */
static void ax_mask_row(const ax_job_t *j, ax_ws_t *w, int64_t b, int64_t h, int64_t i, int64_t r,
                        int64_t k0, int64_t lo, int64_t hi, int64_t ncols) {
  float *s = w->s + r * AX_BK;
  __m512 vs = _mm512_set1_ps(j->scale);
  for (int64_t c = 0; c < ncols; c += 16)
    _mm512_storeu_ps(s + c, _mm512_mul_ps(vs, _mm512_loadu_ps(s + c)));
  for (int64_t c = 0; c < lo; c++) s[c] = -INFINITY;
  const att_mask_t *m = &j->mk;
  if (m->bias) {
    const uint16_t *bp = (const uint16_t *)m->bias + b * m->bs[0] + h * m->bs[1] + i * m->bs[2];
    for (int64_t c = lo; m->bs[3] == 1 && c < hi; c += 16) { /* bf16 to f32: 16 bits up */
      __mmask16 k = fa_lanes(hi - c);
      __m512i x = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, bp + k0 + c));
      __m512 f = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
      _mm512_mask_storeu_ps(s + c, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, s + c), f));
    }
    for (int64_t c = lo; m->bs[3] != 1 && c < hi; c++) {
      uint32_t bits = (uint32_t)bp[(k0 + c) * m->bs[3]] << 16;
      float x;
      memcpy(&x, &bits, sizeof x);
      s[c] += x;
    }
  }
  if (w->slope != 0.0f) fa_alibi_add(s, lo, hi, i + j->off - k0, w->slope);
}

/* One key block [k0, k0 + nk) for the query block's nq rows from i0. */
static void ax_key_block(const ax_job_t *j, ax_ws_t *w, int64_t b, int64_t h, int64_t i0,
                         int64_t nq, int64_t k0, int64_t nk) {
  int64_t nsub = (nk + AX_KC - 1) / AX_KC, ncols = nsub * AX_KC, n[AX_BQ];
  float sc = j->prescale ? 1.0f : j->scale, bm[AX_BQ];
  ax_scores(j, w, k0, nsub);
  for (int64_t r = 0; r < AX_BQ; r++) {
    int64_t lo = 0, hi = 0;
    if (r < nq) ax_block_keys(j, b, i0 + r, k0, nk, &lo, &hi);
    if (j->prescale && hi > lo) ax_mask_row(j, w, b, h, i0 + r, r, k0, lo, hi, ncols);
    n[r] = hi > lo ? hi : 0;
    if (n[r] == ncols && sc > 0) bm[r] = ax_row_max(w, r, (int)(ncols / 16), sc);
  }
  for (int64_t r = 0; r < AX_BQ; r++)
    w->corr[r] = n[r] == ncols && sc > 0 ? ax_softmax_full(w, r, (int)(ncols / 16), sc, bm[r])
                                         : ax_softmax_row(w, r, n[r], ncols, sc);
  ax_rescale(w, j->Dvp);
  ax_pv(j, w, k0, nsub);
}

/* out row = o / l rounded to bf16; zeros for a row that sees no key or
 * only -inf scores, NaN for a row with a NaN or +inf score. */
static void ax_store(const ax_job_t *j, const ax_ws_t *w, int64_t b, int64_t h, int64_t i0,
                     int64_t nq) {
  int64_t Dv = j->Dv;
  for (int64_t r = 0; r < nq; r++) {
    uint16_t *orow = j->o + b * j->so[0] + h * j->so[1] + (i0 + r) * j->so[2];
    float l = _mm512_reduce_add_ps(_mm512_loadu_ps(w->l[r]));
    bool nan = w->bad[r] || l != l, none = !nan && w->m[r] == -INFINITY;
    __m512 vi = _mm512_set1_ps(l > 0 && !none ? 1.0f / l : 0.0f);
    const float *src = w->o + r * j->Dvp;
    for (int64_t e = 0; e < Dv; e += 16) {
      __mmask16 k = fa_lanes(Dv - e);
      __m256i x = nan    ? _mm256_set1_epi16(0x7fc0)
                  : none ? _mm256_setzero_si256()
                         : ax_round16(_mm512_mul_ps(vi, _mm512_loadu_ps(src + e)));
      if (j->so[3] == 1) {
        _mm256_mask_storeu_epi16(orow + e, k, x);
        continue;
      }
      alignas(32) uint16_t t[16];
      _mm256_store_si256((__m256i *)t, x);
      for (int64_t c = 0; c < 16 && e + c < Dv; c++) orow[(e + c) * j->so[3]] = t[c];
    }
  }
}

/* Queries [i0, i0 + nq) of query head h of batch b. */
static void ax_query_block(const ax_job_t *j, ax_ws_t *w, int64_t b, int64_t h, int64_t i0,
                           int64_t nq) {
  for (int64_t r = 0; r < AX_BQ; r++) {
    w->m[r] = -INFINITY;
    memset(w->l[r], 0, sizeof w->l[r]);
    w->bad[r] = false;
  }
  memset(w->o, 0, sizeof(float) * (size_t)(AX_BQ * j->Dvp));
  w->slope = att_mask_slope(&j->mk, h);
  ax_load_queries(j, w, j->q + b * j->sq[0] + h * j->sq[1] + i0 * j->sq[2], nq);
  /* keys past the last query's limit, or before the first query's start,
   * are hidden from the whole block; the keys up to the first query's
   * limit (whole tile rows of them) are seen by every row without a
   * window and take the softmax without masks */
  int64_t kbeg, kend, kall, lo;
  att_mask_keys(&j->mk, b, i0, &kbeg, &kall);
  att_mask_keys(&j->mk, b, i0 + nq - 1, &lo, &kend);
  kbeg = kbeg / AX_KC * AX_KC, kall = kall / AX_KC * AX_KC;
  if (kall < kbeg) kall = kbeg;
  ax_pack_head(j, w, b, h / j->grp, kend);
  for (int64_t k0 = kbeg; k0 < kall; k0 += AX_BK)
    ax_key_block(j, w, b, h, i0, nq, k0, ax_min(AX_BK, kall - k0));
  for (int64_t k0 = kall; k0 < kend; k0 += AX_BK)
    ax_key_block(j, w, b, h, i0, nq, k0, ax_min(AX_BK, kend - k0));
  ax_store(j, w, b, h, i0, nq);
}

/* ---- driver --------------------------------------------------------------- */

static size_t ax_ws_bytes(const ax_job_t *j) {
  size_t halves = (size_t)(j->Skp * (j->Dp + j->Dvp) + AX_BQ * (j->Dp + AX_BK));
  size_t floats = (size_t)(AX_BQ * (AX_BK + j->Dvp));
  return 2 * halves + 4 * floats + 4 * 64;
}

static void *ax_align(void *p) {
  return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* Task t: head t / per (batch-major), query block t % per; causal heads
 * pair block c with block nqb - 1 - c so that every task does about the
 * same work. Workers take tasks from j->tasks (their own range first,
 * then the others', cpu_fast_att_sched_t); every task writes only its own
 * rows, so results do not depend on who runs what. */
static void ax_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  ax_job_t *j = ctx;
  (void)worker, (void)end;
  char *buf = cpu_fast_scratch(0, ax_ws_bytes(j));
  if (!buf) return; /* the other workers take the tasks */
  ax_ws_t w;
  w.kt = ax_align(buf);
  w.vt = ax_align(w.kt + j->Skp * j->Dp);
  w.qb = ax_align(w.vt + j->Skp * j->Dvp);
  w.p = w.qb + AX_BQ * j->Dp;
  w.s = ax_align(w.p + AX_BQ * AX_BK);
  w.o = w.s + AX_BQ * AX_BK;
  w.kb = w.kg = -1, w.kpacked = 0;
  cpu_amx_configure_full();
  int64_t b, h, blocks[2];
  int nb;
  while ((nb = cpu_fast_att_sched_next(&j->tasks, (unsigned)begin, &b, &h, blocks)) > 0) {
    for (int x = 0; x < nb; x++) {
      int64_t i0 = blocks[x] * AX_BQ;
      ax_query_block(j, &w, b, h, i0, ax_min(AX_BQ, j->Sq - i0));
    }
  }
  _tile_release();
}

/* true when every value of v is finite (bf16: exponent not all ones);
 * rows of unit stride 32 values at a time. */
static bool ax_values_finite(const ax_job_t *j, const uint16_t *v, int64_t B, int64_t Hkv) {
  const __m512i expo = _mm512_set1_epi16(0x7f80);
  for (int64_t b = 0; b < B; b++)
    for (int64_t g = 0; g < Hkv; g++)
      for (int64_t key = 0; key < j->Skv; key++) {
        const uint16_t *row = v + b * j->sv[0] + g * j->sv[1] + key * j->sv[2];
        if (j->sv[3] != 1) {
          for (int64_t e = 0; e < j->Dv; e++)
            if ((row[e * j->sv[3]] & 0x7f80) == 0x7f80) return false;
          continue;
        }
        for (int64_t e = 0; e < j->Dv; e += 32) {
          int64_t n = ax_min(32, j->Dv - e);
          __mmask32 m = n >= 32 ? 0xffffffffu : (__mmask32)((1u << n) - 1);
          __m512i x = _mm512_and_si512(_mm512_maskz_loadu_epi16(m, row + e), expo);
          if (_mm512_mask_cmpeq_epi16_mask(m, x, expo)) return false;
        }
      }
  return true;
}

static bool ax_covered(const bp_attention_args_t *a) {
  const bp_plugin_tensor_t *t[4] = {&a->q, &a->k, &a->v, &a->out};
  for (int x = 0; x < 4; x++)
    if (t[x]->dtype != BP_BF16 || t[x]->rank != 4) return false;
  return a->k.shape[1] > 0 && a->q.shape[1] % a->k.shape[1] == 0 && a->q.shape[3] >= 1;
}

static const void *ax_base(const bp_plugin_tensor_t *t) {
  return (const char *)(uintptr_t)t->ptr + t->offset;
}

bp_status_t cpu_fast_attention_amx(cpu_device_t *dev, const bp_attention_args_t *a) {
  if (!ax_covered(a)) return BP_ERR_UNIMPLEMENTED;
  const bp_plugin_tensor_t *q = &a->q, *k = &a->k, *v = &a->v, *o = &a->out;
  ax_job_t j;
  memset(&j, 0, sizeof j);
  j.q = ax_base(q), j.k = ax_base(k), j.v = ax_base(v);
  j.o = (uint16_t *)(uintptr_t)ax_base(o);
  int64_t B = q->shape[0];
  j.Hq = q->shape[1], j.Sq = q->shape[2], j.D = q->shape[3];
  j.grp = q->shape[1] / k->shape[1], j.Skv = k->shape[2], j.Dv = v->shape[3];
  j.off = j.Skv - j.Sq;
  if (B == 0 || j.Hq == 0 || j.Sq == 0 || j.Dv == 0) return BP_OK;
  j.Dp = (j.D + 31) / 32 * 32, j.Dvp = (j.Dv + 31) / 32 * 32, j.Skp = (j.Skv + 31) / 32 * 32;
  cpu_fast_attention_strides(a, j.sq, j.sk, j.sv, j.so);
  /* each worker holds a kv head's K^T and V: absurd ones go elsewhere */
  if ((double)ax_ws_bytes(&j) > 256e6) return BP_ERR_UNIMPLEMENTED;
  if (!att_mask_init(&j.mk, a)) return BP_ERR_UNIMPLEMENTED;
  /* a value hidden from a query inside a tile would add 0 * inf */
  if ((a->causal || att_mask_ranged(&j.mk)) && !ax_values_finite(&j, j.v, B, k->shape[1]))
    return BP_ERR_UNIMPLEMENTED;
  j.prescale = att_mask_additive(&j.mk) || att_mask_ranged(&j.mk);
  j.scale = (float)a->scale;
  j.causal = a->causal;
  j.nqb = (j.Sq + AX_BQ - 1) / AX_BQ;
  int64_t per = j.causal ? (j.nqb + 1) / 2 : j.nqb;
  cpu_fast_att_sched_init(&j.tasks, B * j.Hq * per, per, j.Hq, j.nqb, j.causal);
  double work = (double)B * (double)j.Hq * (double)j.Sq * (double)j.Skv * (double)(j.D + j.Dv);
  cpu_fast_attention_run_sched(dev, &j.tasks, work, 4e6, ax_task, &j);
  /* tasks left over: no worker could get its scratch memory */
  return cpu_fast_att_sched_done(&j.tasks) ? BP_OK : BP_ERR_OUT_OF_MEMORY;
}
