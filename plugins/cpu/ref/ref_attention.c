/*
 * ref/ref_attention.c — scalar reference scaled dot-product attention.
 *
 * out[b,h,i,:] = softmax_j(scale * q[b,h,i,:] . k[b,g,j,:] + bias + alibi)
 * v[b,g,j,:], with g = h / (Hq / Hkv) (grouped-query attention). With
 * causal, key j is masked for query i when j > i + (Skv - Sq): the mask is
 * aligned to the bottom right, so the last query sees every key, as in
 * KV-cache decoding; the sliding window, key lengths and ALiBi of ABI 1.5
 * use the same alignment (plugin-api.h). A row whose keys are all masked
 * produces zeros (not NaN). Computed in double with a max-subtracted
 * softmax; one task per query row (b, h, i).
 */
#include <math.h>
#include <stdlib.h>

#include "ref.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

int64_t cpu_ref_attention_tasks(const bp_attention_args_t *a) {
  /* Guards against a division by zero; the core checks the rest. */
  if (a->q.rank != 4 || a->k.rank != 4 || a->v.rank != 4 || a->out.rank != 4 ||
      a->k.shape[1] <= 0 || a->q.shape[1] % a->k.shape[1] != 0 ||
      (a->bias.rank != 0 && a->bias.rank != 4) ||
      (a->kv_lens.rank != 0 && a->kv_lens.rank != 1) ||
      (a->alibi_slopes.rank != 0 && a->alibi_slopes.rank != 1))
    return a->q.rank == 4 && cpu_numel(&a->q) == 0 ? 0
                                                   : BP_ERR_INVALID_ARGUMENT;
  return a->q.shape[0] * a->q.shape[1] * a->q.shape[2];
}

int64_t cpu_ref_attention_grain(const bp_attention_args_t *a) {
  return cpu_ref_grain_for(a->k.shape[2] * (a->q.shape[3] + a->v.shape[3]));
}

static int64_t off4(const bp_plugin_tensor_t *t, int64_t i0, int64_t i1,
                    int64_t i2) {
  return i0 * t->strides[0] + i1 * t->strides[1] + i2 * t->strides[2];
}

/* The keys [lo, hi) query i may see: causal and the sliding window end at
 * its aligned position i' = i + (Skv - Sq), the window starts window - 1
 * keys before it, and a key length ends it at kv_lens[b]. */
static void visible_keys(const bp_attention_args_t *a, int64_t b, int64_t i,
                         int64_t *lo, int64_t *hi) {
  int64_t skv = a->k.shape[2], at = i + (skv - a->q.shape[2]);
  int64_t end = skv, start = 0;
  if (a->causal || a->window > 0)
    end = at + 1;
  if (a->window > 0)
    start = at - a->window + 1;
  if (a->kv_lens.rank) {
    const void *pl = cpu_tensor_base(&a->kv_lens);
    int64_t len = (int64_t)cpu_load(pl, a->kv_lens.dtype,
                                    b * a->kv_lens.strides[0]);
    if (len < end)
      end = len;
  }
  *lo = start < 0 ? 0 : start;
  *hi = end > skv ? skv : end;
  if (*hi < *lo)
    *hi = *lo;
}

/* The standard ALiBi slope of head h of n (Press et al.): the geometric
 * sequence 2^(-8 (h + 1) / p) over the largest power of two p <= n, then
 * every other slope of the sequence for 2p for the remaining heads. */
static double alibi_standard_slope(int64_t h, int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n)
    p *= 2;
  if (h < p)
    return pow(2.0, -8.0 * (double)(h + 1) / (double)p);
  return pow(2.0, -4.0 * (double)(2 * (h - p) + 1) / (double)p);
}

/* Head h's ALiBi slope, or 0 without ALiBi. */
static double alibi_slope(const bp_attention_args_t *a, int64_t h) {
  if (a->alibi_slopes.rank)
    return cpu_load(cpu_tensor_base(&a->alibi_slopes), a->alibi_slopes.dtype,
                    h * a->alibi_slopes.strides[0]);
  if (a->alibi_heads > 0)
    return alibi_standard_slope(h + a->alibi_head_offset, a->alibi_heads);
  return 0.0;
}

/* scores[j - lo] = scale * q_i . k_j (+ bias, + ALiBi) for the visible
 * keys; returns their max (NaN if any score is NaN). */
static double attention_scores(const bp_attention_args_t *a, int64_t b,
                               int64_t h, int64_t g, int64_t i, int64_t lo,
                               int64_t hi, double *scores) {
  const bp_plugin_tensor_t *q = &a->q, *k = &a->k, *bias = &a->bias;
  const void *pq = cpu_tensor_base(q), *pk = cpu_tensor_base(k);
  const void *pb = bias->rank ? cpu_tensor_base(bias) : NULL;
  int64_t D = q->shape[3], qo = off4(q, b, h, i);
  int64_t at = i + (k->shape[2] - q->shape[2]);
  double slope = alibi_slope(a, h), mx = -INFINITY;
  for (int64_t j = lo; j < hi; j++) {
    int64_t ko = off4(k, b, g, j);
    double dot = 0.0;
    for (int64_t d = 0; d < D; d++)
      dot += cpu_load(pq, q->dtype, qo + d * q->strides[3]) *
             cpu_load(pk, k->dtype, ko + d * k->strides[3]);
    double sc = a->scale * dot;
    if (pb)
      sc += cpu_load(pb, bias->dtype, off4(bias, b, h, i) + j * bias->strides[3]);
    if (slope != 0.0)
      sc -= slope * (double)(at > j ? at - j : j - at);
    scores[j - lo] = sc;
    if (sc > mx || sc != sc)
      mx = mx != mx ? mx : sc;
  }
  return mx;
}

static void attention_row(const bp_attention_args_t *a, int64_t row,
                          double *scores) {
  const bp_plugin_tensor_t *v = &a->v, *o = &a->out;
  int64_t sq = a->q.shape[2], hq = a->q.shape[1];
  int64_t i = row % sq, h = (row / sq) % hq, b = row / (sq * hq);
  int64_t g = h / (hq / a->k.shape[1]);
  int64_t lo, hi, dv = v->shape[3];
  visible_keys(a, b, i, &lo, &hi);
  const void *pv = cpu_tensor_base(v);
  void *po = cpu_tensor_base(o);
  int64_t oo = off4(o, b, h, i);
  double mx = attention_scores(a, b, h, g, i, lo, hi, scores), sum = 0.0;
  /* every key masked, by position or by a -inf bias: the row is zeros */
  bool none = hi == lo || mx == -INFINITY;
  for (int64_t j = 0; j < hi - lo && !none; j++) {
    scores[j] = exp(scores[j] - mx);
    sum += scores[j];
  }
  for (int64_t d = 0; d < dv; d++) {
    double acc = 0.0;
    for (int64_t j = lo; j < hi && !none; j++)
      acc += scores[j - lo] *
             cpu_load(pv, v->dtype, off4(v, b, g, j) + d * v->strides[3]);
    cpu_store(po, o->dtype, oo + d * o->strides[3], none ? 0.0 : acc / sum);
  }
}

bp_status_t cpu_ref_attention_range(const bp_attention_args_t *a, int64_t begin,
                                    int64_t end) {
  int64_t skv = a->k.shape[2];
  double *scores = malloc((size_t)(skv > 0 ? skv : 1) * sizeof *scores);
  if (!scores)
    return BP_ERR_OUT_OF_MEMORY;
  for (int64_t r = begin; r < end; r++)
    attention_row(a, r, scores);
  free(scores);
  return BP_OK;
}
