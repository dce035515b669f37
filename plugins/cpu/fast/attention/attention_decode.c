/*
 * fast/attention/attention_decode.c — attention for a few query rows per
 * head (one-token decode, Sq <= CPU_FAST_ATTENTION_DECODE_MAX_SQ), f32 or
 * bf16, AVX-512. A decode step reads every key and value of the cache once
 * for a handful of queries, so it is bound by reading K and V: the tiled
 * kernels (attention_avx512.c, attention_amx.c) would pack K^T first and
 * compute a whole tile of queries (MR rows, all but one of them repeats),
 * for one use of each key. Here each query row walks its visible keys in
 * place: a score is the dot product of the query with the key's row (unit
 * stride), the row's softmax runs over the scores in one scratch row, and
 * the weighted values are added into f32 sums of the output row in L1.
 *
 * Tasks are (batch, query head), taken from a shared counter by the
 * pool's workers; each writes only its own output rows. Semantics are the
 * reference's (ref/ref_attention.c): bottom-right causal mask, sliding
 * window and kv_lens, grouped-query heads, Dv != D, a row that sees no key
 * (or only -inf scores) gives zeros, a NaN or +inf score makes the row
 * NaN. Scores with additive terms (bias, ALiBi), keys or values whose rows
 * are not contiguous, and mixed dtypes are declined (BP_ERR_UNIMPLEMENTED)
 * and the tiled kernels run. Compiled with AVX-512 flags (fast.mk);
 * cpu_fast_attention checks the CPU first.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "attention.h"
#include "attention_exp512.h"
#include "attention_mask.h"
#include "plugins/cpu/fast/gemm/gemm.h"
#include "plugins/cpu/fast/gemm/gemm_epi512.h"

/* Below this many key and value elements read, one thread does it all:
 * waking the pool costs more than the second core brings. */
#define DEC_MT_ELEMS 65536.0

typedef struct dec_job {
  bool bf16;
  const char *q, *k, *v; /* element 0 of each tensor */
  char *o;
  int64_t Hq, grp, Sq, D, Dv;
  int64_t sq[4], sk[4], sv[4], so[4];
  float scale;
  att_mask_t mk;
  int64_t ntasks, next; /* next: the next task to take (atomic) */
} dec_job_t;

/* 16 (m: the first lanes) elements from element off of base, as f32. */
static inline __m512 dec_load16(const dec_job_t *j, const char *base, int64_t off, __mmask16 m) {
  if (!j->bf16) return _mm512_maskz_loadu_ps(m, (const float *)base + off);
  return epi_bf16_widen16(_mm256_maskz_loadu_epi16(m, (const uint16_t *)base + off));
}

static inline float dec_load1(const dec_job_t *j, const char *base, int64_t off) {
  return j->bf16 ? cpu_bf16_to_float(((const uint16_t *)base)[off]) : ((const float *)base)[off];
}

/* s[x] = scale * q . k_(lo + x) for the keys [lo, hi) of kv head (b, g). */
static void dec_scores(const dec_job_t *j, const float *q, int64_t b, int64_t g, int64_t lo,
                       int64_t hi, float *s) {
  int64_t D = j->D, base = b * j->sk[0] + g * j->sk[1];
  for (int64_t key = lo; key < hi; key++) {
    int64_t ko = base + key * j->sk[2];
    __m512 acc = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d += 16) {
      __mmask16 m = fa_lanes(D - d);
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), dec_load16(j, j->k, ko + d, m), acc);
    }
    s[key - lo] = j->scale * _mm512_reduce_add_ps(acc);
  }
}

/* Scores s[0, n) become weights e^(s - max); returns their sum, 0 when
 * the row has no key or only -inf scores, NaN when a score is NaN or
 * +inf (the reference's rows). */
static float dec_softmax(float *s, int64_t n) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  __mmask16 bad = 0;
  for (int64_t c = 0; c < n; c += 16) {
    __mmask16 m = fa_lanes(n - c);
    __m512 x = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), m, s + c);
    bad |= _mm512_mask_cmp_ps_mask(m, x, _mm512_set1_ps(INFINITY), _CMP_NLT_UQ);
    mx = _mm512_max_ps(mx, x);
  }
  if (bad) return NAN;
  float top = n > 0 ? _mm512_reduce_max_ps(mx) : -INFINITY;
  if (top == -INFINITY) return 0.0f;
  __m512 vm = _mm512_set1_ps(top), sum = _mm512_setzero_ps();
  for (int64_t c = 0; c < n; c += 16) {
    __mmask16 m = fa_lanes(n - c);
    __m512 p = _mm512_maskz_mov_ps(m, fa_exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + c), vm)));
    _mm512_mask_storeu_ps(s + c, m, p);
    sum = _mm512_add_ps(sum, p);
  }
  return _mm512_reduce_add_ps(sum);
}

/* acc[0, Dv) = sum over the keys [lo, hi) of p[key - lo] * v_key. */
static void dec_values(const dec_job_t *j, const float *p, int64_t b, int64_t g, int64_t lo,
                       int64_t hi, float *acc) {
  int64_t Dv = j->Dv, base = b * j->sv[0] + g * j->sv[1];
  memset(acc, 0, (size_t)Dv * sizeof *acc);
  for (int64_t key = lo; key < hi; key++) {
    __m512 w = _mm512_set1_ps(p[key - lo]);
    int64_t vo = base + key * j->sv[2];
    for (int64_t e = 0; e < Dv; e += 16) {
      __mmask16 m = fa_lanes(Dv - e);
      __m512 x = _mm512_fmadd_ps(w, dec_load16(j, j->v, vo + e, m), _mm512_maskz_loadu_ps(m, acc + e));
      _mm512_mask_storeu_ps(acc + e, m, x);
    }
  }
}

/* Output row (b, h, i) = acc / sum: zeros for sum == 0, NaN for a NaN sum. */
static void dec_store(const dec_job_t *j, int64_t b, int64_t h, int64_t i, const float *acc,
                      float sum) {
  int64_t oo = b * j->so[0] + h * j->so[1] + i * j->so[2], Dv = j->Dv;
  float inv = sum > 0 ? 1.0f / sum : 0.0f;
  for (int64_t e = 0; e < Dv; e++) {
    /* acc holds nothing when sum is 0 or NaN: it is not read then */
    float x = sum != sum ? NAN : sum == 0 ? 0.0f : acc[e] * inv;
    int64_t off = oo + e * j->so[3];
    if (j->bf16)
      ((uint16_t *)j->o)[off] = cpu_bf16_from_double((double)x);
    else
      ((float *)j->o)[off] = x;
  }
}

/* Query row (b, h, i): its scores, softmax, values and output. */
static void dec_row(const dec_job_t *j, float *ws, int64_t b, int64_t h, int64_t i) {
  int64_t D = j->D, g = h / j->grp, lo, hi;
  float *q = ws, *acc = q + (D + 15) / 16 * 16, *s = acc + (j->Dv + 15) / 16 * 16;
  int64_t qo = b * j->sq[0] + h * j->sq[1] + i * j->sq[2];
  for (int64_t d = 0; d < D; d++) q[d] = dec_load1(j, j->q, qo + d * j->sq[3]);
  att_mask_keys(&j->mk, b, i, &lo, &hi);
  dec_scores(j, q, b, g, lo, hi, s);
  float sum = dec_softmax(s, hi - lo);
  if (sum > 0)
    dec_values(j, s, b, g, lo, hi, acc);
  dec_store(j, b, h, i, acc, sum);
}

static size_t dec_ws_floats(const dec_job_t *j) {
  return (size_t)((j->D + 15) / 16 * 16 + (j->Dv + 15) / 16 * 16 + j->mk.Skv + 16);
}

/* Task t: query head t % Hq of batch t / Hq, all its Sq rows. */
static void dec_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  dec_job_t *j = ctx;
  (void)begin, (void)end, (void)worker;
  float *ws = cpu_fast_scratch(0, dec_ws_floats(j) * sizeof(float));
  if (!ws) return; /* the other workers take the tasks */
  for (int64_t t; (t = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->ntasks;)
    for (int64_t i = 0; i < j->Sq; i++) dec_row(j, ws, t / j->Hq, t % j->Hq, i);
}

static bool dec_covered(const bp_attention_args_t *a, bool *bf16) {
  const bp_plugin_tensor_t *t[4] = {&a->q, &a->k, &a->v, &a->out};
  bp_dtype_t dt = a->q.dtype;
  if (dt != BP_F32 && dt != BP_BF16) return false;
  for (int x = 0; x < 4; x++)
    if (t[x]->dtype != dt || t[x]->rank != 4) return false;
  *bf16 = dt == BP_BF16;
  return a->q.shape[2] <= CPU_FAST_ATTENTION_DECODE_MAX_SQ && a->k.shape[1] > 0 &&
         a->q.shape[1] % a->k.shape[1] == 0 && (a->k.strides[3] == 1 || a->k.shape[3] <= 1) &&
         (a->v.strides[3] == 1 || a->v.shape[3] <= 1);
}

bp_status_t cpu_fast_attention_decode(cpu_device_t *dev, const bp_attention_args_t *a) {
  dec_job_t j;
  memset(&j, 0, sizeof j);
  if (!dec_covered(a, &j.bf16) || !att_mask_init(&j.mk, a) || att_mask_additive(&j.mk))
    return BP_ERR_UNIMPLEMENTED;
  int64_t B = a->q.shape[0];
  j.Hq = a->q.shape[1], j.Sq = a->q.shape[2], j.D = a->q.shape[3], j.Dv = a->v.shape[3];
  j.grp = j.Hq / a->k.shape[1];
  if (B == 0 || j.Hq == 0 || j.Sq == 0 || j.Dv == 0) return BP_OK;
  j.q = (const char *)att_mask_base(&a->q);
  j.k = (const char *)att_mask_base(&a->k);
  j.v = (const char *)att_mask_base(&a->v);
  j.o = (char *)(uintptr_t)a->out.ptr + a->out.offset;
  cpu_fast_attention_strides(a, j.sq, j.sk, j.sv, j.so);
  j.scale = (float)a->scale;
  j.ntasks = B * j.Hq;
  double elems = (double)B * (double)j.Hq * (double)j.Sq * (double)j.mk.Skv * (double)(j.D + j.Dv);
  cpu_fast_attention_run(dev, j.ntasks, elems, DEC_MT_ELEMS, dec_task, &j);
  /* tasks left over: no worker could get its scratch memory */
  return j.next < j.ntasks ? BP_ERR_OUT_OF_MEMORY : BP_OK;
}
