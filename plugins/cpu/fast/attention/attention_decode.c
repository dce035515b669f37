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

static inline float dec_load1(const dec_job_t *j, const char *base, int64_t off) {
  return j->bf16 ? cpu_bf16_to_float(((const uint16_t *)base)[off]) : ((const float *)base)[off];
}

/* The sums of 16 vectors: lane x of the result is the sum of v[x]'s
 * lanes. A shuffle tree (pairs of vectors, then 64-bit halves, then
 * 128-bit lanes) costs about three operations a vector where a reduction
 * of each vector by itself costs eight, and key after key they would be
 * most of a decode score's work for a head of 32 or 64. */
static inline __m512 dec_sum16(__m512 *v) {
  __m512 p[8], h[4];
  for (int i = 0; i < 8; i++)
    p[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                         _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  for (int i = 0; i < 4; i++) {
    __m512d a = _mm512_castps_pd(p[2 * i]), b = _mm512_castps_pd(p[2 * i + 1]);
    h[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  /* h[i]'s 128-bit lane L: the lane-L sums of v[4i .. 4i + 3] */
  __m512 r0 = _mm512_add_ps(_mm512_shuffle_f32x4(h[0], h[1], 0x88),
                            _mm512_shuffle_f32x4(h[0], h[1], 0xdd));
  __m512 r1 = _mm512_add_ps(_mm512_shuffle_f32x4(h[2], h[3], 0x88),
                            _mm512_shuffle_f32x4(h[2], h[3], 0xdd));
  return _mm512_add_ps(_mm512_shuffle_f32x4(r0, r1, 0x88), _mm512_shuffle_f32x4(r0, r1, 0xdd));
}

/* The 16 lanes of the products q . k for the key at element ko of K.
 * bf16: each 32 elements of the key are one load, split into its even
 * (shifted up) and odd (masked) halves as f32 with no shuffle; q is held
 * split the same way (dec_row), so the products are exact and the sums
 * f32 as in the f32 path. */
static inline __attribute__((always_inline)) __m512 dec_dot(const dec_job_t *j, const float *q,
                                                           int64_t ko, int64_t D) {
  __m512 acc = _mm512_setzero_ps();
  if (!j->bf16) {
    for (int64_t d = 0; d < D; d += 16) {
      __mmask16 m = fa_lanes(D - d);
      acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + d),
                            _mm512_maskz_loadu_ps(m, (const float *)j->k + ko + d), acc);
    }
    return acc;
  }
  const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
  for (int64_t d = 0; d < D; d += 32) {
    int64_t left = D - d;
    __mmask32 m = left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1);
    __m512i x = _mm512_maskz_loadu_epi16(m, (const uint16_t *)j->k + ko + d);
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), _mm512_castsi512_ps(_mm512_slli_epi32(x, 16)),
                          acc);
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + d + 16),
                          _mm512_castsi512_ps(_mm512_and_si512(x, hi)), acc);
  }
  return acc;
}

/* s[x] = scale * q . k_(lo + x) for the keys [lo, hi) of kv head (b, g),
 * 16 keys at a time; D is the head's size (a constant where inlined). */
static inline __attribute__((always_inline)) void dec_scores_d(const dec_job_t *j, const float *q,
                                                               int64_t b, int64_t g, int64_t lo,
                                                               int64_t hi, float *s, int64_t D) {
  int64_t base = b * j->sk[0] + g * j->sk[1], ld = j->sk[2];
  __m512 vs = _mm512_set1_ps(j->scale);
  for (int64_t k0 = lo; k0 < hi; k0 += 16) {
    int64_t n = hi - k0 < 16 ? hi - k0 : 16;
    __m512 v[16];
    if (n == 16)
      for (int64_t x = 0; x < 16; x++) v[x] = dec_dot(j, q, base + (k0 + x) * ld, D);
    else
      for (int64_t x = 0; x < 16; x++)
        v[x] = x < n ? dec_dot(j, q, base + (k0 + x) * ld, D) : _mm512_setzero_ps();
    _mm512_mask_storeu_ps(s + (k0 - lo), fa_lanes(n), _mm512_mul_ps(vs, dec_sum16(v)));
  }
}

/* The usual head sizes get their own copies (loops unrolled, masks
 * known). */
static void dec_scores(const dec_job_t *j, const float *q, int64_t b, int64_t g, int64_t lo,
                       int64_t hi, float *s) {
  if (j->D == 32)
    dec_scores_d(j, q, b, g, lo, hi, s, 32);
  else if (j->D == 64)
    dec_scores_d(j, q, b, g, lo, hi, s, 64);
  else
    dec_scores_d(j, q, b, g, lo, hi, s, j->D);
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

/* Two keys' weights times 32 elements of their value rows (f32: two
 * vectors of 16; bf16: one load's even and odd halves, as dec_dot) added
 * into x0, x1 (the first key) and y0, y1 (the second): two chains, so
 * that the FMAs of consecutive keys do not wait on each other. */
#define DEC_V2(j, p, o0, o1, mk, mh)                                                               \
  do {                                                                                             \
    __m512 w0 = _mm512_set1_ps((p)[0]), w1 = _mm512_set1_ps((p)[1]);                              \
    if (!(j)->bf16) {                                                                              \
      const float *v = (const float *)(j)->v;                                                      \
      x0 = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(mk, v + o0), x0);                             \
      x1 = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(mh, v + o0 + 16), x1);                        \
      y0 = _mm512_fmadd_ps(w1, _mm512_maskz_loadu_ps(mk, v + o1), y0);                             \
      y1 = _mm512_fmadd_ps(w1, _mm512_maskz_loadu_ps(mh, v + o1 + 16), y1);                        \
    } else {                                                                                       \
      const uint16_t *v = (const uint16_t *)(j)->v;                                                \
      __m512i a = _mm512_maskz_loadu_epi16(m32, v + o0), b = _mm512_maskz_loadu_epi16(m32, v + o1); \
      x0 = _mm512_fmadd_ps(w0, _mm512_castsi512_ps(_mm512_slli_epi32(a, 16)), x0);                 \
      x1 = _mm512_fmadd_ps(w0, _mm512_castsi512_ps(_mm512_and_si512(a, hi16)), x1);                \
      y0 = _mm512_fmadd_ps(w1, _mm512_castsi512_ps(_mm512_slli_epi32(b, 16)), y0);                 \
      y1 = _mm512_fmadd_ps(w1, _mm512_castsi512_ps(_mm512_and_si512(b, hi16)), y1);                \
    }                                                                                              \
  } while (0)

/* acc[e0, e0 + 32) (at most Dv) = sum over the keys [lo, hi) of p[key -
 * lo] * v_key, the sums in registers; bf16's even and odd halves are put
 * back in order at the end. */
static void dec_values32(const dec_job_t *j, const float *p, int64_t vbase, int64_t lo,
                         int64_t hi, int64_t e0, float *acc) {
  __m512 x0 = _mm512_setzero_ps(), x1 = x0, y0 = x0, y1 = x0;
  int64_t left = j->Dv - e0;
  __mmask16 mk = fa_lanes(left), mh = fa_lanes(left - 16);
  __mmask32 m32 = left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1);
  const __m512i hi16 = _mm512_set1_epi32((int)0xffff0000u);
  int64_t key = lo;
  for (; key + 2 <= hi; key += 2) {
    int64_t o0 = vbase + key * j->sv[2] + e0;
    DEC_V2(j, p + (key - lo), o0, o0 + j->sv[2], mk, mh);
  }
  if (key < hi) { /* the odd key alone (a zero weight times an inf is NaN) */
    __m512 w = _mm512_set1_ps(p[key - lo]);
    int64_t o = vbase + key * j->sv[2] + e0;
    if (!j->bf16) {
      x0 = _mm512_fmadd_ps(w, _mm512_maskz_loadu_ps(mk, (const float *)j->v + o), x0);
      x1 = _mm512_fmadd_ps(w, _mm512_maskz_loadu_ps(mh, (const float *)j->v + o + 16), x1);
    } else {
      __m512i a = _mm512_maskz_loadu_epi16(m32, (const uint16_t *)j->v + o);
      x0 = _mm512_fmadd_ps(w, _mm512_castsi512_ps(_mm512_slli_epi32(a, 16)), x0);
      x1 = _mm512_fmadd_ps(w, _mm512_castsi512_ps(_mm512_and_si512(a, hi16)), x1);
    }
  }
  x0 = _mm512_add_ps(x0, y0), x1 = _mm512_add_ps(x1, y1);
  if (j->bf16) {
    const __m512i first =
        _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i second =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    __m512 e = _mm512_permutex2var_ps(x0, first, x1), o = _mm512_permutex2var_ps(x0, second, x1);
    x0 = e, x1 = o;
  }
  _mm512_mask_storeu_ps(acc + e0, mk, x0);
  _mm512_mask_storeu_ps(acc + e0 + 16, mh, x1);
}

/* acc[0, Dv) = sum over the keys [lo, hi) of p[key - lo] * v_key. */
static void dec_values(const dec_job_t *j, const float *p, int64_t b, int64_t g, int64_t lo,
                       int64_t hi, float *acc) {
  int64_t base = b * j->sv[0] + g * j->sv[1];
  for (int64_t e0 = 0; e0 < j->Dv; e0 += 32) dec_values32(j, p, base, lo, hi, e0, acc);
}

/* Output row (b, h, i) = acc / sum: zeros for sum == 0, NaN for a NaN sum. */
static void dec_store(const dec_job_t *j, int64_t b, int64_t h, int64_t i, const float *acc,
                      float sum) {
  int64_t oo = b * j->so[0] + h * j->so[1] + i * j->so[2], Dv = j->Dv;
  float inv = sum > 0 ? 1.0f / sum : 0.0f;
  if (j->so[3] == 1 && sum > 0) { /* the usual row: 16 at a time, rounded once */
    for (int64_t e = 0; e < Dv; e += 16) {
      __mmask16 m = fa_lanes(Dv - e);
      __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, acc + e), _mm512_set1_ps(inv));
      if (j->bf16)
        _mm256_mask_storeu_epi16((uint16_t *)j->o + oo + e, m, epi_bf16_round16(x));
      else
        _mm512_mask_storeu_ps((float *)j->o + oo + e, m, x);
    }
    return;
  }
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

/* The query row at element qo as f32 in q (D rounded up to 32, zeros
 * past D): in order for f32; for bf16 each 32 elements as their 16 even
 * then 16 odd ones, the halves dec_dot takes from a key's load. */
static void dec_load_q(const dec_job_t *j, int64_t qo, float *q) {
  int64_t D = j->D, dp = (D + 31) / 32 * 32;
  if (j->bf16 && j->sq[3] == 1) { /* one load per 32, split as dec_dot splits a key */
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    for (int64_t d = 0; d < dp; d += 32) {
      int64_t left = D - d;
      __mmask32 m = left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1);
      __m512i x = _mm512_maskz_loadu_epi16(m, (const uint16_t *)j->q + qo + d);
      _mm512_storeu_ps(q + d, _mm512_castsi512_ps(_mm512_slli_epi32(x, 16)));
      _mm512_storeu_ps(q + d + 16, _mm512_castsi512_ps(_mm512_and_si512(x, hi)));
    }
    return;
  }
  for (int64_t d = 0; d < dp; d++) {
    int64_t src = j->bf16 ? d / 32 * 32 + (d % 32 < 16 ? 2 * (d % 32) : 2 * (d % 32 - 16) + 1) : d;
    q[d] = src < D ? dec_load1(j, j->q, qo + src * j->sq[3]) : 0.0f;
  }
}

/* Query row (b, h, i): its scores, softmax, values and output. */
static void dec_row(const dec_job_t *j, float *ws, int64_t b, int64_t h, int64_t i) {
  int64_t D = j->D, g = h / j->grp, lo, hi;
  float *q = ws, *acc = q + (D + 31) / 32 * 32, *s = acc + (j->Dv + 15) / 16 * 16;
  int64_t qo = b * j->sq[0] + h * j->sq[1] + i * j->sq[2];
  dec_load_q(j, qo, q);
  att_mask_keys(&j->mk, b, i, &lo, &hi);
  dec_scores(j, q, b, g, lo, hi, s);
  float sum = dec_softmax(s, hi - lo);
  if (sum > 0)
    dec_values(j, s, b, g, lo, hi, acc);
  dec_store(j, b, h, i, acc, sum);
}

static size_t dec_ws_floats(const dec_job_t *j) {
  return (size_t)((j->D + 31) / 32 * 32 + (j->Dv + 15) / 16 * 16 + j->mk.Skv + 16);
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
