/*
 * ref/ref_attention.c — scalar reference scaled dot-product attention.
 *
 * out[b,h,i,:] = softmax_j(scale * q[b,h,i,:] . k[b,g,j,:]) v[b,g,j,:], with
 * g = h / (Hq / Hkv) (grouped-query attention). With causal, key j is masked
 * for query i when j > i + (Skv - Sq): the mask is aligned to the bottom
 * right, so the last query sees every key, as in KV-cache decoding. A row
 * whose keys are all masked produces zeros (not NaN). Computed in double with
 * a max-subtracted softmax; one task per query row (b, h, i).
 */
#include <math.h>
#include <stdlib.h>

#include "ref.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

int64_t cpu_ref_attention_tasks(const bp_attention_args_t *a) {
  /* Guards against a division by zero; the core checks the rest. */
  if (a->q.rank != 4 || a->k.rank != 4 || a->v.rank != 4 || a->out.rank != 4 ||
      a->k.shape[1] <= 0 || a->q.shape[1] % a->k.shape[1] != 0)
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

/* Number of keys query i may see (keys [0, limit) ), clamped to [0, Skv]. */
static int64_t visible_keys(const bp_attention_args_t *a, int64_t i) {
  int64_t skv = a->k.shape[2];
  if (!a->causal)
    return skv;
  int64_t limit = i + (skv - a->q.shape[2]) + 1;
  return limit < 0 ? 0 : (limit > skv ? skv : limit);
}

/* scores[j] = scale * q_i . k_j for the visible keys; returns their max
 * (NaN if any score is NaN). */
static double attention_scores(const bp_attention_args_t *a, int64_t b,
                               int64_t h, int64_t g, int64_t i, int64_t nk,
                               double *scores) {
  const bp_plugin_tensor_t *q = &a->q, *k = &a->k;
  const void *pq = cpu_tensor_base(q), *pk = cpu_tensor_base(k);
  int64_t D = q->shape[3], qo = off4(q, b, h, i);
  double mx = -INFINITY;
  for (int64_t j = 0; j < nk; j++) {
    int64_t ko = off4(k, b, g, j);
    double dot = 0.0;
    for (int64_t d = 0; d < D; d++)
      dot += cpu_load(pq, q->dtype, qo + d * q->strides[3]) *
             cpu_load(pk, k->dtype, ko + d * k->strides[3]);
    scores[j] = a->scale * dot;
    if (scores[j] > mx || scores[j] != scores[j])
      mx = mx != mx ? mx : scores[j];
  }
  return mx;
}

static void attention_row(const bp_attention_args_t *a, int64_t row,
                          double *scores) {
  const bp_plugin_tensor_t *v = &a->v, *o = &a->out;
  int64_t sq = a->q.shape[2], hq = a->q.shape[1];
  int64_t i = row % sq, h = (row / sq) % hq, b = row / (sq * hq);
  int64_t g = h / (hq / a->k.shape[1]);
  int64_t nk = visible_keys(a, i), dv = v->shape[3];
  const void *pv = cpu_tensor_base(v);
  void *po = cpu_tensor_base(o);
  int64_t oo = off4(o, b, h, i);
  double mx = attention_scores(a, b, h, g, i, nk, scores), sum = 0.0;
  for (int64_t j = 0; j < nk; j++) {
    scores[j] = exp(scores[j] - mx);
    sum += scores[j];
  }
  for (int64_t d = 0; d < dv; d++) {
    double acc = 0.0;
    for (int64_t j = 0; j < nk; j++)
      acc += scores[j] *
             cpu_load(pv, v->dtype, off4(v, b, g, j) + d * v->strides[3]);
    /* nk == 0: every key masked, the row is defined as zeros. */
    cpu_store(po, o->dtype, oo + d * o->strides[3], nk ? acc / sum : 0.0);
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
