/*
 * fast/attention/attention_avx512.c — fused scaled dot-product attention, f32, AVX-512.
 *
 * One task per (batch, query head, block of ATT_BQ queries). Each task walks
 * the keys in blocks of ATT_BK with an online softmax (running max m, sum l
 * and unnormalised output O per query), so the Sq x Skv score matrix never
 * exists; key blocks that the causal mask hides from every query of the
 * block are never visited. Scores are computed against a transposed copy of
 * the key block (vectors run over keys), P.V accumulates straight from V's
 * rows (vectors run over Dv).
 *
 * Covered: f32 q/k/v/out, unit stride along Dv for v and out. Anything else
 * returns BP_ERR_UNIMPLEMENTED (the reference runs). Compiled with AVX-512
 * flags (fast.mk); cpu_fast_attention checks the CPU first.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "plugins/cpu/fast/gemm/gemm.h"

#define ATT_BQ 32
#define ATT_BK 64

/* e^x for x <= 0 (scores minus the running max): Cody-Waite reduction and
 * a degree-6 polynomial (about 1 ulp); -inf and anything below the float
 * range give exactly 0. */
static inline __m512 exp512(__m512 x) {
  const __m512 log2e = _mm512_set1_ps(1.44269504f);
  const __m512 ln2hi = _mm512_set1_ps(0.693145752f);
  const __m512 ln2lo = _mm512_set1_ps(1.42860677e-6f);
  __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-104.0f), _CMP_LT_OQ);
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, ln2hi, x);
  r = _mm512_fnmadd_ps(n, ln2lo, r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps((__mmask16)~tiny, p, n);
}

static inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

typedef struct att_job {
  const float *q, *k, *v;
  float *o;
  int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
  int64_t qchunk, nchunks; /* queries per task, tasks per head */
  int64_t sq[4], sk[4], sv[4], so[4];
  float scale;
  int causal;
  int failed;
} att_job_t;

/* Per-task workspace, in floats. */
typedef struct att_ws {
  float *qs; /* [ATT_BQ][D] scaled queries */
  float *kt; /* [D][ldkt] transposed visible keys of the head */
  float *s;  /* [ATT_BQ][ATT_BK] scores, then probabilities */
  float *o;  /* [ATT_BQ][Dv] unnormalised output */
  float m[ATT_BQ], l[ATT_BQ];
  int nan[ATT_BQ];
  int64_t ldkt;
} att_ws_t;

/* s[r][0..nk) = qs[r] . kt[:, j] for rows r0, r0+1 (both < nq). */
static void att_scores2(const att_ws_t *w, const float *kt, int64_t ldkt,
                        int64_t D, int64_t r0, bool two) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  __m512 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  const float *q0 = w->qs + r0 * D, *q1 = two ? q0 + D : q0;
  for (int64_t d = 0; d < D; d++) {
    const float *kr = kt + d * ldkt;
    __m512 k0 = _mm512_loadu_ps(kr), k1 = _mm512_loadu_ps(kr + 16);
    __m512 k2 = _mm512_loadu_ps(kr + 32), k3 = _mm512_loadu_ps(kr + 48);
    __m512 x = _mm512_set1_ps(q0[d]), y = _mm512_set1_ps(q1[d]);
    a0 = _mm512_fmadd_ps(x, k0, a0);
    a1 = _mm512_fmadd_ps(x, k1, a1);
    a2 = _mm512_fmadd_ps(x, k2, a2);
    a3 = _mm512_fmadd_ps(x, k3, a3);
    b0 = _mm512_fmadd_ps(y, k0, b0);
    b1 = _mm512_fmadd_ps(y, k1, b1);
    b2 = _mm512_fmadd_ps(y, k2, b2);
    b3 = _mm512_fmadd_ps(y, k3, b3);
  }
  float *s0 = w->s + r0 * ATT_BK;
  _mm512_storeu_ps(s0, a0);
  _mm512_storeu_ps(s0 + 16, a1);
  _mm512_storeu_ps(s0 + 32, a2);
  _mm512_storeu_ps(s0 + 48, a3);
  if (!two) return;
  _mm512_storeu_ps(s0 + ATT_BK, b0);
  _mm512_storeu_ps(s0 + ATT_BK + 16, b1);
  _mm512_storeu_ps(s0 + ATT_BK + 32, b2);
  _mm512_storeu_ps(s0 + ATT_BK + 48, b3);
}

/* Online-softmax update of row r with keys [0, nk) of the block visible
 * (nk <= ATT_BK); the scores in s[r] become probabilities. Returns false
 * when the row sees no key of this block. */
static bool att_softmax_row(att_ws_t *w, int64_t r, int64_t nk,
                            float *out_corr) {
  float *s = w->s + r * ATT_BK;
  if (nk <= 0) return false;
  __m512 mx = _mm512_set1_ps(-INFINITY);
  __mmask16 bad = 0;
  for (int64_t j = 0; j < nk; j += 16) {
    __mmask16 m = tail_mask(nk - j);
    __m512 x = _mm512_maskz_loadu_ps(m, s + j);
    bad |= _mm512_mask_cmp_ps_mask(m, x, x, _CMP_UNORD_Q);
    mx = _mm512_mask_max_ps(mx, m, mx, x);
  }
  if (bad) w->nan[r] = 1;
  float bm = _mm512_reduce_max_ps(mx);
  float mnew = bm > w->m[r] ? bm : w->m[r];
  float corr = w->m[r] == -INFINITY ? 0.0f : expf(w->m[r] - mnew);
  __m512 vm = _mm512_set1_ps(mnew), sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < ATT_BK; j += 16) {
    __mmask16 m = j < nk ? tail_mask(nk - j) : 0;
    __m512 p = _mm512_maskz_mov_ps(
        m, exp512(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm)));
    _mm512_storeu_ps(s + j, p); /* masked keys get probability 0 */
    sum = _mm512_add_ps(sum, p);
  }
  w->m[r] = mnew;
  w->l[r] = w->l[r] * corr + _mm512_reduce_add_ps(sum);
  *out_corr = corr;
  return true;
}

/* o[r] = o[r] * corr + sum_j p[j] * v[j] for keys [0, nk), and the same
 * for row r + 1 when two (its nk1 >= nk: causal rows see more keys going
 * down). Two rows share each V load and give 8 independent FMA chains. */
static void att_pv_rows(att_ws_t *w, const att_job_t *j, const float *vblk,
                        int64_t r, int64_t nk, float c0, bool two,
                        int64_t nk1, float c1) {
  const float *p0 = w->s + r * ATT_BK, *p1 = p0 + ATT_BK;
  float *o0 = w->o + r * j->Dv, *o1 = two ? o0 + j->Dv : o0;
  int64_t svr = j->sv[2], Dv = j->Dv;
  if (!two) nk1 = 0;
  for (int64_t d = 0; d < Dv; d += 64) {
    __mmask16 m[4];
    _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++)
      m[q] = d + 16 * q < Dv ? tail_mask(Dv - d - 16 * q) : 0;
    __m512 a[4], b[4];
    _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {
      a[q] = _mm512_mul_ps(_mm512_set1_ps(c0),
                           _mm512_maskz_loadu_ps(m[q], o0 + d + 16 * q));
      b[q] = _mm512_mul_ps(_mm512_set1_ps(c1),
                           _mm512_maskz_loadu_ps(m[q], o1 + d + 16 * q));
    }
    int64_t both = two ? (nk < nk1 ? nk : nk1) : 0;
    for (int64_t jj = 0; jj < both; jj++) {
      const float *vr = vblk + jj * svr + d;
      __m512 x = _mm512_set1_ps(p0[jj]), y = _mm512_set1_ps(p1[jj]);
      _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {
        __m512 vv = _mm512_maskz_loadu_ps(m[q], vr + 16 * q);
        a[q] = _mm512_fmadd_ps(x, vv, a[q]);
        b[q] = _mm512_fmadd_ps(y, vv, b[q]);
      }
    }
    for (int64_t jj = both; jj < nk; jj++) {
      __m512 x = _mm512_set1_ps(p0[jj]);
      _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++)
        a[q] = _mm512_fmadd_ps(
            x, _mm512_maskz_loadu_ps(m[q], vblk + jj * svr + d + 16 * q), a[q]);
    }
    for (int64_t jj = both; jj < nk1; jj++) {
      __m512 y = _mm512_set1_ps(p1[jj]);
      _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++)
        b[q] = _mm512_fmadd_ps(
            y, _mm512_maskz_loadu_ps(m[q], vblk + jj * svr + d + 16 * q), b[q]);
    }
    _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {
      _mm512_mask_storeu_ps(o0 + d + 16 * q, m[q], a[q]);
      if (two) _mm512_mask_storeu_ps(o1 + d + 16 * q, m[q], b[q]);
    }
  }
}

/* Keys query i may see: [0, limit), clamped to [0, Skv]. */
static int64_t att_visible(const att_job_t *j, int64_t i) {
  if (!j->causal) return j->Skv;
  int64_t lim = i + (j->Skv - j->Sq) + 1;
  return lim < 0 ? 0 : lim > j->Skv ? j->Skv : lim;
}

static void att_block(const att_job_t *j, att_ws_t *w, int64_t b, int64_t h,
                      int64_t i0, int64_t nq) {
  int64_t g = h / (j->Hq / j->Hkv), D = j->D, Dv = j->Dv;
  const float *qb = j->q + b * j->sq[0] + h * j->sq[1];
  const float *vb = j->v + b * j->sv[0] + g * j->sv[1];
  for (int64_t r = 0; r < nq; r++) {
    for (int64_t d = 0; d < D; d++)
      w->qs[r * D + d] = j->scale * qb[(i0 + r) * j->sq[2] + d * j->sq[3]];
    w->m[r] = -INFINITY;
    w->l[r] = 0;
    w->nan[r] = 0;
  }
  memset(w->o, 0, sizeof(float) * (size_t)(nq * Dv));
  /* Keys past the last query's limit are masked for the whole block. */
  int64_t kend = att_visible(j, i0 + nq - 1);
  for (int64_t k0 = 0; k0 < kend; k0 += ATT_BK) {
    int64_t nk = kend - k0 < ATT_BK ? kend - k0 : ATT_BK;
    for (int64_t r = 0; r < nq; r += 2)
      att_scores2(w, w->kt + k0, w->ldkt, D, r, r + 1 < nq);
    for (int64_t r = 0; r < nq; r += 2) {
      int64_t v0 = att_visible(j, i0 + r) - k0, v1 = 0;
      int64_t n0 = v0 < nk ? v0 : nk, n1 = 0;
      float c0 = 1, c1 = 1;
      bool ok0 = att_softmax_row(w, r, n0, &c0), ok1 = false;
      if (r + 1 < nq) {
        v1 = att_visible(j, i0 + r + 1) - k0;
        n1 = v1 < nk ? v1 : nk;
        ok1 = att_softmax_row(w, r + 1, n1, &c1);
      }
      /* a row that sees nothing here keeps its state: nk 0, factor 1 */
      att_pv_rows(w, j, vb + k0 * j->sv[2], r, ok0 ? n0 : 0, ok0 ? c0 : 1,
                  r + 1 < nq, ok1 ? n1 : 0, ok1 ? c1 : 1);
    }
  }
  float *ob = j->o + b * j->so[0] + h * j->so[1];
  for (int64_t r = 0; r < nq; r++) {
    float *orow = ob + (i0 + r) * j->so[2];
    float inv = w->l[r] > 0 ? 1.0f / w->l[r] : 0.0f;
    for (int64_t d = 0; d < Dv; d++)
      orow[d] = w->nan[r] ? NAN : w->o[r * Dv + d] * inv;
  }
}

/* kt[d][jj] = k[b, g, jj, d] for the keys [0, nkeys), zero padded. */
static void att_transpose_k(const att_job_t *j, int64_t b, int64_t g,
                            int64_t nkeys, float *kt, int64_t ldkt) {
  const float *kb = j->k + b * j->sk[0] + g * j->sk[1];
  for (int64_t d = 0; d < j->D; d++)
    for (int64_t jj = 0; jj < nkeys; jj++)
      kt[d * ldkt + jj] = kb[jj * j->sk[2] + d * j->sk[3]];
  for (int64_t d = 0; d < j->D; d++)
    for (int64_t jj = nkeys; jj < ldkt; jj++) kt[d * ldkt + jj] = 0;
}

/* Task t: head bh = t / nchunks, queries [c * qchunk, ...) of it. The keys
 * the chunk can see are transposed once and reused by all its blocks. */
static void att_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  att_job_t *j = ctx;
  (void)worker;
  int64_t ldkt = (j->Skv + ATT_BK - 1) / ATT_BK * ATT_BK;
  if (ldkt == 0) ldkt = ATT_BK;
  size_t nf = (size_t)(ATT_BQ * j->D + j->D * ldkt + ATT_BQ * ATT_BK +
                       ATT_BQ * j->Dv);
  float *buf = cpu_fast_scratch(0, nf * sizeof(float));
  if (!buf) {
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  att_ws_t w;
  w.qs = buf;
  w.kt = w.qs + ATT_BQ * j->D;
  w.s = w.kt + j->D * ldkt;
  w.o = w.s + ATT_BQ * ATT_BK;
  w.ldkt = ldkt;
  for (int64_t t = begin; t < end; t++) {
    int64_t bh = t / j->nchunks, c = t % j->nchunks;
    int64_t b = bh / j->Hq, h = bh % j->Hq;
    int64_t q0 = c * j->qchunk, q1 = q0 + j->qchunk < j->Sq ? q0 + j->qchunk : j->Sq;
    if (q0 >= q1) continue;
    att_transpose_k(j, b, h / (j->Hq / j->Hkv), att_visible(j, q1 - 1), w.kt,
                    ldkt);
    for (int64_t i0 = q0; i0 < q1; i0 += ATT_BQ)
      att_block(j, &w, b, h, i0, q1 - i0 < ATT_BQ ? q1 - i0 : ATT_BQ);
  }
}

bp_status_t cpu_fast_attention_avx512(cpu_device_t *dev,
                                  const bp_attention_args_t *a) {
  const bp_plugin_tensor_t *q = &a->q, *k = &a->k, *v = &a->v, *o = &a->out;
  if (q->dtype != BP_F32 || k->dtype != BP_F32 || v->dtype != BP_F32 ||
      o->dtype != BP_F32 || q->rank != 4 || k->rank != 4 || v->rank != 4 ||
      o->rank != 4 || (v->shape[3] > 1 && v->strides[3] != 1) ||
      (o->shape[3] > 1 && o->strides[3] != 1) || k->shape[1] <= 0 ||
      q->shape[1] % k->shape[1] != 0)
    return BP_ERR_UNIMPLEMENTED;
  att_job_t j;
  memset(&j, 0, sizeof j);
  j.q = (const float *)((const char *)(uintptr_t)q->ptr + q->offset);
  j.k = (const float *)((const char *)(uintptr_t)k->ptr + k->offset);
  j.v = (const float *)((const char *)(uintptr_t)v->ptr + v->offset);
  j.o = (float *)((char *)(uintptr_t)o->ptr + o->offset);
  j.B = q->shape[0], j.Hq = q->shape[1], j.Sq = q->shape[2], j.D = q->shape[3];
  j.Hkv = k->shape[1], j.Skv = k->shape[2], j.Dv = v->shape[3];
  if (j.B == 0 || j.Hq == 0 || j.Sq == 0 || j.Dv == 0) return BP_OK;
  /* Each task holds a transposed copy of a head's keys: keep it sane. */
  if ((double)j.D * (double)(j.Skv + ATT_BK) * sizeof(float) > 256e6)
    return BP_ERR_UNIMPLEMENTED;
  memcpy(j.sq, q->strides, sizeof j.sq);
  memcpy(j.sk, k->strides, sizeof j.sk);
  memcpy(j.sv, v->strides, sizeof j.sv);
  memcpy(j.so, o->strides, sizeof j.so);
  j.scale = (float)a->scale;
  j.causal = a->causal;
  /* Whole heads per task when there are enough of them; otherwise split
   * the queries so every thread has several tasks. */
  unsigned threads = dev->pool ? cpu_pool_size(dev->pool) : 1;
  int64_t heads = j.B * j.Hq, qblocks = (j.Sq + ATT_BQ - 1) / ATT_BQ;
  int64_t want = 4 * (int64_t)threads;
  int64_t per = heads >= want ? qblocks : (qblocks * heads + want - 1) / want;
  if (per < 1) per = 1;
  j.qchunk = per * ATT_BQ;
  j.nchunks = (qblocks + per - 1) / per;
  int64_t ntasks = heads * j.nchunks;
  double work = (double)heads * (double)j.Sq * (double)j.Skv * (double)(j.D + j.Dv);
  if (threads > 1 && work > 1e6)
    cpu_pool_run(dev->pool, ntasks, 1, att_task, &j);
  else
    att_task(&j, 0, ntasks, 0);
  return j.failed ? BP_ERR_OUT_OF_MEMORY : BP_OK;
}
