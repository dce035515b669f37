/*
 * fast/attention/attention_amx_f32.c — fused scaled dot-product attention
 * for f32 q, k, v and out on the bf16 AMX tiles, FlashAttention-2 style,
 * at f32 accuracy.
 *
 * Every f32 operand x is split into bf16 parts, x = x0 + x1 + x2 (x0 =
 * bf16(x), x1 = bf16(x - x0), x2 = bf16(x - x0 - x1), nearest even; exact
 * for normal values, 8 significand bits each). TDPBF16PS multiplies bf16
 * exactly and sums in f32, so a product is a sum of part products:
 *   Q K^T  the six that reach f32's precision,
 *          x0 y0 + x0 y1 + x1 y0 + x0 y2 + x1 y1 + x2 y0
 *          (the three left out are below 2^-24 of |x y|): a score's error
 *          becomes a weight's relative error through the exponential, so
 *          the scores get f32 accuracy however large they are;
 *   P V    the three of the two-part splits, x0 y0 + x0 y1 + x1 y0 (within
 *          3 * 2^-18 of x y): the weights are positive, so the output's
 *          error stays within that share of the largest |v|, inside the
 *          f32 tolerance of the other kernels, for a quarter fewer tile
 *          products than six.
 * The tiles do these nine products several times faster than AVX-512
 * FMAs do the one.
 *
 * The structure is attention_amx.c's: work split over (batch, query head,
 * block of XF_BQ queries) taken from a shared counter; per block the keys
 * are walked in blocks of XF_BK:
 *   S = Q K^T        six part products, K^T's parts packed into VNNI
 *                    tiles of 16 keys once per kv head and worker
 *   online softmax   f32 with AVX-512, e^x to f32 precision (2^f by a
 *                    degree-5 polynomial, VSCALEFPS); the running max moves
 *                    only when a block passes it by XF_LAZY_MAX, so most
 *                    blocks need no rescale; the weights split into parts
 *   O += P V         three part products, V's parts packed like K^T
 * O stays f32 and is divided by the row sums once, at the end. A query
 * block is XF_SUB sub-blocks of 32 rows that take each key block in turn,
 * so a key block's packed parts are read from L2 once per XF_BQ queries.
 * With the causal mask, key blocks past the block's last visible key are
 * never visited.
 *
 * Entry conditions (anything else returns BP_ERR_UNIMPLEMENTED, and the
 * AVX-512 FMA kernel runs): q, k, v and out f32 of rank 4; Hq a multiple
 * of Hkv; D >= 1; no mask of ABI 1.5 beyond causal; every value of q, k and
 * v the tasks load finite and below 2^127 in magnitude (the split of inf is
 * NaN, and bf16 rounding could overflow above it; checked as they are
 * packed, and the call declined once the tasks ran); out not overlapping
 * q, k or v; the workspace under 256 MB. Any
 * strides. The caller (cpu_fast_attention) has checked AMX-BF16, AVX-512
 * with AVX512-BF16 and the permission to use tile state. Compiled with
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

#define XF_SUB 2            /* 32-query sub-blocks per query block */
#define XF_BQ (32 * XF_SUB) /* queries per block */
#define XF_BK 256           /* keys per block: up to eight 32-key sub-blocks */
#define XF_KC 32            /* bf16 per tile row (a 64-byte row) */
#define XF_TILE 512         /* bf16 per 16 x 64-byte tile */
#define XF_PARTS 3          /* bf16 parts of an f32 value */
#define XF_QK_PARTS 3       /* parts of Q and K: six products */
#define XF_PV_PARTS 2       /* parts of P and V: three products */
#define XF_LAZY_MAX 8.0f    /* see attention_amx.c's AX_LAZY_MAX */

typedef struct xf_job {
  const float *q, *k, *v;
  float *o;
  int64_t Hq, grp, Sq, Skv, D, Dv, off; /* grp = Hq / Hkv, off = Skv - Sq */
  int64_t Dp, Dvp, Skp;                 /* D, Dv, Skv rounded up to 32 */
  int64_t sq[4], sk[4], sv[4], so[4];
  int64_t nqb; /* query blocks per head */
  cpu_fast_att_sched_t tasks;
  float scale;
  int causal;
  att_mask_t mk;
  int *bad; /* set when a value packed or loaded cannot be split */
} xf_job_t;

/* Per-worker workspace; each uint16_t array holds XF_PARTS parts, one
 * after the other. */
typedef struct xf_ws {
  uint16_t *kt; /* part stride Skp * Dp: VNNI tiles of K^T, 16 keys each */
  uint16_t *vt; /* part stride Skp * Dvp: VNNI tiles of V, 32 keys each */
  uint16_t *qb; /* part stride XF_BQ * Dp: the block's queries, zero padded */
  uint16_t *p;  /* part stride 32 * XF_BK: one sub-block's weights */
  float *s;     /* [32][XF_BK] one sub-block's scores */
  float *o;     /* [XF_BQ][Dvp] unnormalised output */
  float m[XF_BQ], corr[XF_BQ];
  float l[XF_BQ][16];      /* running sums, 16 lanes a row */
  int64_t kb, kg, kpacked; /* whose keys and values kt, vt hold, how many */
} xf_ws_t;

static inline int64_t xf_min(int64_t a, int64_t b) {
  return a < b ? a : b;
}

/* ---- the split ----------------------------------------------------------- */

/* bf16 (in the low 16 bits of each lane) back to f32, exactly. */
static inline __m512 xf_widen(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* x = x0 + x1 + x2, each part bf16 rounded to nearest even. */
static inline void xf_split(__m512 x, __m256i part[XF_PARTS]) {
  part[0] = (__m256i)_mm512_cvtneps_pbh(x);
  x = _mm512_sub_ps(x, xf_widen(part[0]));
  part[1] = (__m256i)_mm512_cvtneps_pbh(x);
  x = _mm512_sub_ps(x, xf_widen(part[1]));
  part[2] = (__m256i)_mm512_cvtneps_pbh(x);
}

/* Two vectors' parts interleaved as VNNI pairs: lane i of the result is
 * (a's bf16 i, b's bf16 i), a 64-byte tile row. */
static inline __m512i xf_pairs(__m256i a, __m256i b) {
  return _mm512_or_si512(_mm512_cvtepu16_epi32(a), _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}

/* 16 floats from src with stride st (lanes past n are zero). */
static inline __m512 xf_load(const float *src, int64_t st, int64_t n) {
  __mmask16 k = fa_lanes(n);
  if (st == 1) return _mm512_maskz_loadu_ps(k, src);
  alignas(64) float t[16] = {0};
  for (int64_t i = 0; i < 16 && i < n; i++) t[i] = src[i * st];
  return _mm512_load_ps(t);
}

/* ---- packing ------------------------------------------------------------ */

/* 16 floats from src with stride st (lanes past n are zero), by one
 * gather at the offsets idx when gather (the scalar loop's stores and
 * reload cost several times the gather). */
static inline __m512 xf_column(const float *src, int64_t st, int64_t n, bool gather, __m512i idx) {
  if (!gather) return xf_load(src, st, n);
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), fa_lanes(n), idx, src, 4);
}

/* mag raised to the magnitudes' bit patterns of x's lanes. */
static inline __m512i xf_mag(__m512i mag, __m512 x) {
  return _mm512_max_epu32(mag,
                          _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}

/* Flags the job when a magnitude in mag is not below 2^127 (NaN and inf
 * lie above it, as unsigned bit patterns): the split of inf is NaN, and
 * rounding to bf16 could overflow there. The call then declines and the
 * FMA kernel redoes it (cpu_fast_attention_amx_f32). */
static inline void xf_check(const xf_job_t *j, __m512i mag) {
  if (_mm512_reduce_max_epu32(mag) >= 0x7f000000u) __atomic_store_n(j->bad, 1, __ATOMIC_RELAXED);
}

/* K^T tiles (panel of 16 keys, chunk c of 32 dims) of keys [key0, key1):
 * row r holds the pairs (K[key][32c + 2r], K[key][32c + 2r + 1]) of the 16
 * keys, one such tile array per part. Zero past Skv and D. */
static void xf_pack_keys(const xf_job_t *j, const float *k, int64_t key0, int64_t key1,
                         uint16_t *kt) {
  int64_t nc = j->Dp / XF_KC, sd = j->sk[3], ld = j->sk[2], pst = j->Skp * j->Dp;
  __m512i mag = _mm512_setzero_si512();
  /* a column of K (stride ld) in one gather where the offsets fit */
  bool gather = ld > 0 && 16 * ld < INT32_MAX / 4;
  __m512i idx =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32((int)(gather ? ld : 0)));
  for (int64_t p0 = key0; p0 < key1; p0 += 16) {
    int64_t live = xf_min(16, j->Skv - p0);
    for (int64_t d = 0; d < j->Dp; d += 2) {
      /* 16 keys of dims d and d + 1: a column of K, stride ld */
      __m512 x0 =
          d < j->D ? xf_column(k + p0 * ld + d * sd, ld, live, gather, idx) : _mm512_setzero_ps();
      __m512 x1 = d + 1 < j->D ? xf_column(k + p0 * ld + (d + 1) * sd, ld, live, gather, idx)
                               : _mm512_setzero_ps();
      __m256i a[XF_PARTS], b[XF_PARTS];
      mag = xf_mag(xf_mag(mag, x0), x1);
      xf_split(x0, a);
      xf_split(x1, b);
      int64_t at = (p0 / 16) * nc * XF_TILE + (d / XF_KC) * XF_TILE + (d % XF_KC) / 2 * 32;
      for (int t = 0; t < XF_PARTS; t++)
        _mm512_storeu_si512(kt + t * pst + at, xf_pairs(a[t], b[t]));
    }
  }
  xf_check(j, mag);
}

/* V tiles (chunk c of 32 keys, columns 16t .. 16t + 15) of keys [key0,
 * key1): row r holds the pairs (V[32c + 2r][col], V[32c + 2r + 1][col]),
 * one tile array per part. Zero past Skv and Dv. */
static void xf_pack_values(const xf_job_t *j, const float *v, int64_t key0, int64_t key1,
                           uint16_t *vt) {
  int64_t nt = j->Dvp / 16, se = j->sv[3], ld = j->sv[2], pst = j->Skp * j->Dvp;
  __m512i mag = _mm512_setzero_si512();
  for (int64_t key = key0; key < key1; key += 2) {
    int64_t at0 = (key / XF_KC) * nt * XF_TILE + (key % XF_KC) / 2 * 32;
    for (int64_t e = 0; e < j->Dvp; e += 16) {
      int64_t n = j->Dv - e;
      __m512 x0 = key < j->Skv ? xf_load(v + key * ld + e * se, se, n) : _mm512_setzero_ps();
      __m512 x1 =
          key + 1 < j->Skv ? xf_load(v + (key + 1) * ld + e * se, se, n) : _mm512_setzero_ps();
      __m256i a[XF_PARTS], b[XF_PARTS];
      mag = xf_mag(xf_mag(mag, x0), x1);
      xf_split(x0, a);
      xf_split(x1, b);
      int64_t at = at0 + (e / 16) * XF_TILE;
      for (int t = 0; t < XF_PV_PARTS; t++)
        _mm512_storeu_si512(vt + t * pst + at, xf_pairs(a[t], b[t]));
    }
  }
  xf_check(j, mag);
}

/* kt and vt hold the first `need` keys (rounded up to 32) of kv head
 * (b, g). */
static void xf_pack_head(const xf_job_t *j, xf_ws_t *w, int64_t b, int64_t g, int64_t need) {
  if (w->kb != b || w->kg != g) w->kb = b, w->kg = g, w->kpacked = 0;
  int64_t upto = xf_min(j->Skp, (need + XF_KC - 1) / XF_KC * XF_KC);
  if (upto <= w->kpacked) return;
  xf_pack_keys(j, j->k + b * j->sk[0] + g * j->sk[1], w->kpacked, upto, w->kt);
  xf_pack_values(j, j->v + b * j->sv[0] + g * j->sv[1], w->kpacked, upto, w->vt);
  w->kpacked = upto;
}

/* The block's queries split into qb's parts, [XF_BQ][Dp] each, zeros
 * past nq and D. */
static void xf_load_queries(const xf_job_t *j, xf_ws_t *w, const float *qp, int64_t nq) {
  int64_t pst = XF_BQ * j->Dp;
  __m512i mag = _mm512_setzero_si512();
  for (int64_t r = 0; r < XF_BQ; r++)
    for (int64_t d = 0; d < j->Dp; d += 16) {
      __m512 x = r < nq ? xf_load(qp + r * j->sq[2] + d * j->sq[3], j->sq[3], j->D - d)
                        : _mm512_setzero_ps();
      __m256i h[XF_PARTS];
      mag = xf_mag(mag, x);
      xf_split(x, h);
      for (int t = 0; t < XF_PARTS; t++)
        _mm256_storeu_si256((__m256i *)(w->qb + t * pst + r * j->Dp + d), h[t]);
    }
  xf_check(j, mag);
}

/* ---- the tiles ---------------------------------------------------------- */

/* Tiles 0-3 += the 32 x 32 block of A B over the part products (a, b)
 * with a + b < nparts, each A part loaded once: A part a's two 16-row
 * tiles at a + a * ast (rows lda bytes apart), B part b's two tiles at b +
 * b * bst and b + bst2 (64-byte rows). */
static inline void xf_products(const uint16_t *a, int64_t ast, int64_t lda, int64_t ahalf,
                               const uint16_t *b, int64_t bst, int64_t bst2, int nparts) {
  for (int pa = 0; pa < nparts; pa++) {
    _tile_loadd(4, a + pa * ast, lda);
    _tile_loadd(5, a + pa * ast + ahalf, lda);
    for (int pb = 0; pb < nparts - pa; pb++) {
      _tile_loadd(6, b + pb * bst, 64);
      _tile_loadd(7, b + pb * bst + bst2, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
}

/* s[:, 32 sb .. 32 sb + 31] = Q K^T of sub-block x's queries for the keys
 * of sub-blocks [0, nsub) starting at key k0 (a multiple of 32). */
static void xf_scores(const xf_job_t *j, xf_ws_t *w, int64_t x, int64_t k0, int64_t nsub) {
  int64_t nc = j->Dp / XF_KC, sst = XF_BK * 4;
  const uint16_t *q = w->qb + 32 * x * j->Dp;
  for (int64_t sb = 0; sb < nsub; sb++) {
    const uint16_t *kp = w->kt + (k0 / 16 + 2 * sb) * nc * XF_TILE;
    cpu_amx_acc_start(NULL, 0, true);
    for (int64_t c = 0; c < nc; c++)
      xf_products(q + c * XF_KC, XF_BQ * j->Dp, j->Dp * 2, 16 * j->Dp, kp + c * XF_TILE,
                  j->Skp * j->Dp, nc * XF_TILE, XF_QK_PARTS);
    float *s = w->s + sb * 32;
    _tile_stored(0, s, sst);
    _tile_stored(1, s + 16, sst);
    _tile_stored(2, s + 16 * XF_BK, sst);
    _tile_stored(3, s + 16 * XF_BK + 16, sst);
  }
}

/* o of sub-block x += P V over the sub-blocks [0, nsub) of the key block
 * at k0. */
static void xf_pv(const xf_job_t *j, xf_ws_t *w, int64_t x, int64_t k0, int64_t nsub) {
  int64_t nt = j->Dvp / 16;
  float *ox = w->o + 32 * x * j->Dvp;
  for (int64_t e0 = 0; e0 < j->Dvp; e0 += 32) {
    cpu_amx_acc_start(ox + e0, j->Dvp, false);
    for (int64_t c = 0; c < nsub; c++)
      xf_products(w->p + c * XF_KC, 32 * XF_BK, XF_BK * 2, 16 * XF_BK,
                  w->vt + ((k0 / XF_KC + c) * nt + e0 / 16) * XF_TILE, j->Skp * j->Dvp, XF_TILE,
                  XF_PV_PARTS);
    cpu_amx_acc_store(ox + e0, j->Dvp);
  }
}

/* ---- online softmax ----------------------------------------------------- */

/* 2^t for t <= 0 to f32 precision: f = t - floor(t) in [0, 1) by one
 * VREDUCEPS, 2^f by a degree-5 polynomial fitted to its relative error
 * (under 1.6e-7 evaluated in f32; the weights keep 16 bits), times
 * 2^floor(t) by VSCALEFPS, which floors t itself (no rounding, subtraction
 * or clamp of its own). -inf gives 0 (VREDUCEPS gives 0 for it, VSCALEFPS
 * by -inf gives 0), NaN gives NaN. */
static inline __m512 xf_exp2(__m512 t) {
  __m512 f = _mm512_reduce_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 p = _mm512_set1_ps(1.87757658e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(8.98934063e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.58263175e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.40153611e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.93153083e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.99999940e-1f));
  return _mm512_scalef_ps(p, t);
}

/* Weights ea (columns c .. c + 15 of sub-block row r) and eb (c + 16 ..
 * c + 31) split into the two weight parts, as xf_split splits them: both
 * rounded by one VCVTNE2PS2BF16 and the first part widened back by one
 * word permute each, so a 64-byte store takes 32 weights of a part (one
 * conversion and two 32-byte stores a vector cost more than the
 * exponential's polynomial). */
static inline void xf_store_weights(xf_ws_t *w, int64_t r, int64_t c, __m512 ea, __m512 eb) {
  const __m512i ia = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0, 6,
                                      0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
  const __m512i ib = _mm512_add_epi16(ia, _mm512_set1_epi16(16));
  __m512i h0 = (__m512i)_mm512_cvtne2ps_pbh(eb, ea);
  __m512 a0 = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, ia, h0));
  __m512 b0 = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, ib, h0));
  __m512i h1 = (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(eb, b0), _mm512_sub_ps(ea, a0));
  uint16_t *p = w->p + r * XF_BK + c;
  _mm512_storeu_si512(p, h0);
  _mm512_storeu_si512(p + 32 * XF_BK, h1);
}

/* Row R of the block (row r of the sub-block) after a block whose
 * weights, relative to the max mnew, add up to the lanes of sum; returns
 * the factor for the row's output so far. A NaN sum means a NaN or +inf
 * score: the reference's row is NaN. */
static float xf_update(xf_ws_t *w, int64_t R, float mnew, __m512 sum) {
  float mold = w->m[R];
  /* a row that has seen only -inf (or nothing) has no output to rescale */
  float corr = mold == mnew || mold == -INFINITY || mnew == -INFINITY ? 1.0f : expf(mold - mnew);
  w->m[R] = mnew;
  __m512 l = _mm512_loadu_ps(w->l[R]);
  _mm512_storeu_ps(w->l[R], _mm512_fmadd_ps(l, _mm512_set1_ps(corr), sum));
  return corr;
}

/* The largest scaled score of sub-block row r over keys [0, n), n > 0:
 * two max chains, whole vectors without masks (the loop's scalar work
 * would take the vector ports' slots). The max is taken before scaling
 * (scale > 0). */
static float xf_row_max(const xf_job_t *j, const xf_ws_t *w, int64_t r, int64_t n) {
  const float *s = w->s + r * XF_BK;
  int64_t nf = n / 16 * 16, c = 0;
  __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0;
  for (; c + 32 <= nf; c += 32) {
    m0 = _mm512_max_ps(m0, _mm512_loadu_ps(s + c));
    m1 = _mm512_max_ps(m1, _mm512_loadu_ps(s + c + 16));
  }
  if (c < nf) m0 = _mm512_max_ps(m0, _mm512_loadu_ps(s + c));
  if (nf < n) m1 = _mm512_mask_max_ps(m1, fa_lanes(n - nf), m1, _mm512_loadu_ps(s + nf));
  return j->scale * _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

/* Row r of the sub-block (row R of the block) over keys [0, n) of the
 * block, scores computed up to ncols (a multiple of 32) and bm their
 * largest (xf_row_max, taken for every row of the sub-block first, so no
 * row's exponentials wait on its own reduction): weights in the parts of
 * p, zero from n to ncols; returns the factor for the row's output so
 * far. */
static float xf_softmax_row(const xf_job_t *j, xf_ws_t *w, int64_t r, int64_t R, int64_t n,
                            int64_t ncols, float bm) {
  const float *s = w->s + r * XF_BK;
  if (n <= 0) {
    for (int64_t c = 0; c < ncols; c += 32)
      xf_store_weights(w, r, c, _mm512_setzero_ps(), _mm512_setzero_ps());
    return 1.0f;
  }
  float mold = w->m[R];
  float mnew = bm > mold + XF_LAZY_MAX ? bm : mold;
  const float log2e = 1.44269504f;
  /* only -inf so far: subtracting 0 gives weights 0 and m stays -inf */
  __m512 vm = _mm512_set1_ps(mnew == -INFINITY ? 0.0f : mnew * log2e);
  __m512 vs = _mm512_set1_ps(j->scale * log2e), sa = _mm512_setzero_ps(), sb = sa;
  for (int64_t c = 0; c < ncols; c += 32) {
    __m512 ea = xf_exp2(_mm512_fmsub_ps(vs, _mm512_loadu_ps(s + c), vm));
    __m512 eb = xf_exp2(_mm512_fmsub_ps(vs, _mm512_loadu_ps(s + c + 16), vm));
    if (c + 32 > n) {
      ea = _mm512_maskz_mov_ps(fa_lanes(n - c), ea);
      eb = _mm512_maskz_mov_ps(fa_lanes(n - c - 16), eb);
    }
    xf_store_weights(w, r, c, ea, eb);
    sa = _mm512_add_ps(sa, ea);
    sb = _mm512_add_ps(sb, eb);
  }
  return xf_update(w, R, mnew, _mm512_add_ps(sa, sb));
}

/* o[R] *= corr[R] for the sub-block's rows whose running max moved. */
static void xf_rescale(xf_ws_t *w, int64_t R0, int64_t Dvp) {
  for (int64_t R = R0; R < R0 + 32; R++) {
    if (w->corr[R] == 1.0f) continue;
    float *o = w->o + R * Dvp;
    __m512 c = _mm512_set1_ps(w->corr[R]);
    for (int64_t e = 0; e < Dvp; e += 16)
      _mm512_storeu_ps(o + e, _mm512_mul_ps(c, _mm512_loadu_ps(o + e)));
  }
}

/* One key block [k0, k0 + nk) for every sub-block of the query block's
 * nq rows from i0. */
static void xf_key_block(const xf_job_t *j, xf_ws_t *w, int64_t b, int64_t i0, int64_t nq,
                         int64_t k0, int64_t nk) {
  int64_t nsub = (nk + XF_KC - 1) / XF_KC;
  for (int64_t x = 0; x < XF_SUB && 32 * x < nq; x++) {
    int64_t n[32];
    float bm[32];
    xf_scores(j, w, x, k0, nsub);
    for (int64_t r = 0; r < 32; r++) {
      int64_t R = 32 * x + r, lo = 0, hi = 0;
      if (R < nq) att_mask_keys(&j->mk, b, i0 + R, &lo, &hi);
      n[r] = hi - k0 < 0 ? 0 : xf_min(nk, hi - k0);
      bm[r] = n[r] > 0 ? xf_row_max(j, w, r, n[r]) : -INFINITY;
    }
    for (int64_t r = 0; r < 32; r++)
      w->corr[32 * x + r] = xf_softmax_row(j, w, r, 32 * x + r, n[r], nsub * XF_KC, bm[r]);
    xf_rescale(w, 32 * x, j->Dvp);
    xf_pv(j, w, x, k0, nsub);
  }
}

/* out row = o / l; zeros for a row that sees no key or only -inf scores,
 * NaN for a row with a NaN or +inf score. */
static void xf_store(const xf_job_t *j, const xf_ws_t *w, int64_t b, int64_t h, int64_t i0,
                     int64_t nq) {
  int64_t Dv = j->Dv;
  for (int64_t r = 0; r < nq; r++) {
    float *orow = j->o + b * j->so[0] + h * j->so[1] + (i0 + r) * j->so[2];
    float l = _mm512_reduce_add_ps(_mm512_loadu_ps(w->l[r]));
    bool nan = l != l, none = !nan && w->m[r] == -INFINITY;
    __m512 vi = _mm512_set1_ps(l > 0 && !none ? 1.0f / l : 0.0f);
    const float *src = w->o + r * j->Dvp;
    for (int64_t e = 0; e < Dv; e += 16) {
      __mmask16 k = fa_lanes(Dv - e);
      __m512 x = nan    ? _mm512_set1_ps(NAN)
                 : none ? _mm512_setzero_ps()
                        : _mm512_mul_ps(vi, _mm512_loadu_ps(src + e));
      if (j->so[3] == 1) {
        _mm512_mask_storeu_ps(orow + e, k, x);
        continue;
      }
      alignas(64) float t[16];
      _mm512_store_ps(t, x);
      for (int64_t c = 0; c < 16 && e + c < Dv; c++) orow[(e + c) * j->so[3]] = t[c];
    }
  }
}

/* Queries [i0, i0 + nq) of query head h of batch b. */
static void xf_query_block(const xf_job_t *j, xf_ws_t *w, int64_t b, int64_t h, int64_t i0,
                           int64_t nq) {
  for (int64_t r = 0; r < XF_BQ; r++) {
    w->m[r] = -INFINITY;
    memset(w->l[r], 0, sizeof w->l[r]);
  }
  memset(w->o, 0, sizeof(float) * (size_t)(XF_BQ * j->Dvp));
  xf_load_queries(j, w, j->q + b * j->sq[0] + h * j->sq[1] + i0 * j->sq[2], nq);
  /* keys past the last query's limit are hidden from the whole block */
  int64_t lo, kend;
  att_mask_keys(&j->mk, b, i0 + nq - 1, &lo, &kend);
  xf_pack_head(j, w, b, h / j->grp, kend);
  for (int64_t k0 = 0; k0 < kend; k0 += XF_BK)
    xf_key_block(j, w, b, i0, nq, k0, xf_min(XF_BK, kend - k0));
  xf_store(j, w, b, h, i0, nq);
}

/* ---- driver --------------------------------------------------------------- */

static size_t xf_ws_bytes(const xf_job_t *j) {
  size_t halves = (size_t)(XF_PARTS * (j->Skp * (j->Dp + j->Dvp) + XF_BQ * j->Dp + 32 * XF_BK));
  size_t floats = (size_t)(32 * XF_BK + XF_BQ * j->Dvp);
  return 2 * halves + 4 * floats + 5 * 64; /* five arrays start on 64 bytes */
}

static void *xf_align(void *p) {
  return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* Task t: head t / per (batch-major), query block t % per; causal heads
 * pair block c with block nqb - 1 - c so that every task does about the
 * same work. Workers take tasks from j->tasks (their own range first,
 * then the others', cpu_fast_att_sched_t); every task writes only its own
 * rows, so results do not depend on who runs what. */
static void xf_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  xf_job_t *j = ctx;
  (void)worker, (void)end;
  char *buf = cpu_fast_scratch(0, xf_ws_bytes(j));
  if (!buf) return; /* the other workers take the tasks */
  xf_ws_t w;
  w.kt = xf_align(buf);
  w.vt = xf_align(w.kt + XF_PARTS * j->Skp * j->Dp);
  w.qb = xf_align(w.vt + XF_PARTS * j->Skp * j->Dvp);
  w.p = xf_align(w.qb + XF_PARTS * XF_BQ * j->Dp);
  w.s = xf_align(w.p + XF_PARTS * 32 * XF_BK);
  w.o = w.s + 32 * XF_BK;
  w.kb = w.kg = -1, w.kpacked = 0;
  cpu_amx_configure_full();
  int64_t b, h, blocks[2];
  int nb;
  while ((nb = cpu_fast_att_sched_next(&j->tasks, (unsigned)begin, &b, &h, blocks)) > 0) {
    for (int x = 0; x < nb; x++) {
      int64_t i0 = blocks[x] * XF_BQ;
      xf_query_block(j, &w, b, h, i0, xf_min(XF_BQ, j->Sq - i0));
    }
  }
  _tile_release();
}

static bool xf_covered(const bp_attention_args_t *a) {
  const bp_plugin_tensor_t *t[4] = {&a->q, &a->k, &a->v, &a->out};
  for (int x = 0; x < 4; x++)
    if (t[x]->dtype != BP_F32 || t[x]->rank != 4) return false;
  return a->k.shape[1] > 0 && a->q.shape[1] % a->k.shape[1] == 0 && a->q.shape[3] >= 1 &&
         a->scale > 0 && isfinite(a->scale);
}

static const void *xf_base(const bp_plugin_tensor_t *t) {
  return (const char *)(uintptr_t)t->ptr + t->offset;
}

/* true when views a and b (f32, rank 4) may share bytes: their address
 * ranges meet, or a stride is negative. */
static bool xf_overlaps(const bp_plugin_tensor_t *a, const bp_plugin_tensor_t *b) {
  const bp_plugin_tensor_t *t[2] = {a, b};
  uintptr_t lo[2], hi[2];
  for (int x = 0; x < 2; x++) {
    int64_t last = 0;
    for (int d = 0; d < 4; d++) {
      if (t[x]->shape[d] == 0) return false;
      if (t[x]->strides[d] < 0) return true;
      last += (t[x]->shape[d] - 1) * t[x]->strides[d];
    }
    lo[x] = (uintptr_t)xf_base(t[x]), hi[x] = lo[x] + 4 * (uintptr_t)(last + 1);
  }
  return lo[0] < hi[1] && lo[1] < hi[0];
}

bp_status_t cpu_fast_attention_amx_f32(cpu_device_t *dev, const bp_attention_args_t *a) {
  if (!xf_covered(a)) return BP_ERR_UNIMPLEMENTED;
  const bp_plugin_tensor_t *q = &a->q, *k = &a->k, *v = &a->v, *o = &a->out;
  xf_job_t j;
  memset(&j, 0, sizeof j);
  j.q = xf_base(q), j.k = xf_base(k), j.v = xf_base(v);
  j.o = (float *)(uintptr_t)xf_base(o);
  int64_t B = q->shape[0];
  j.Hq = q->shape[1], j.Sq = q->shape[2], j.D = q->shape[3];
  j.grp = q->shape[1] / k->shape[1], j.Skv = k->shape[2], j.Dv = v->shape[3];
  j.off = j.Skv - j.Sq;
  if (B == 0 || j.Hq == 0 || j.Sq == 0 || j.Dv == 0) return BP_OK;
  j.Dp = (j.D + 31) / 32 * 32, j.Dvp = (j.Dv + 31) / 32 * 32, j.Skp = (j.Skv + 31) / 32 * 32;
  cpu_fast_attention_strides(a, j.sq, j.sk, j.sv, j.so);
  /* each worker holds a kv head's K^T and V parts: absurd ones go elsewhere */
  if ((double)xf_ws_bytes(&j) > 256e6) return BP_ERR_UNIMPLEMENTED;
  if (!att_mask_init(&j.mk, a) || att_mask_additive(&j.mk) || att_mask_ranged(&j.mk))
    return BP_ERR_UNIMPLEMENTED;
  /* values the split cannot take are found as the tasks pack them (a pass
   * of its own would read q, k and v from memory once more) and the call
   * is declined after the fact: the FMA kernel then rewrites every
   * output. Where out overlaps an input that would change the input
   * first, so such calls go to the FMA kernel from the start. */
  int bad = 0;
  j.bad = &bad;
  if (xf_overlaps(o, q) || xf_overlaps(o, k) || xf_overlaps(o, v)) return BP_ERR_UNIMPLEMENTED;
  j.scale = (float)a->scale;
  j.causal = a->causal;
  j.nqb = (j.Sq + XF_BQ - 1) / XF_BQ;
  int64_t per = j.causal ? (j.nqb + 1) / 2 : j.nqb;
  cpu_fast_att_sched_init(&j.tasks, B * j.Hq * per, per, j.Hq, j.nqb, j.causal);
  double work = (double)B * (double)j.Hq * (double)j.Sq * (double)j.Skv * (double)(j.D + j.Dv);
  cpu_fast_attention_run_sched(dev, &j.tasks, work, 4e6, xf_task, &j);
  if (bad) return BP_ERR_UNIMPLEMENTED;
  /* tasks left over: no worker could get its scratch memory */
  return cpu_fast_att_sched_done(&j.tasks) ? BP_OK : BP_ERR_OUT_OF_MEMORY;
}
