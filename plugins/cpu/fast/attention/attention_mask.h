/*
 * fast/attention/attention_mask.h — the masks of ABI 1.5 (plugin-api.h,
 * bp_attention_args_t) as the fused kernels use them: per query row a key
 * range [lo, hi) (causal, sliding window, kv_lens), and per score an
 * additive term (bias tensor, ALiBi). Same alignment and slopes as the
 * reference (ref/ref_attention.c): query i stands at key i' = i + Skv - Sq.
 * Header-only (static inline) because every kernel is compiled with its
 * own ISA flags.
 */
#ifndef BACKPLANE_CPU_FAST_ATTENTION_MASK_H
#define BACKPLANE_CPU_FAST_ATTENTION_MASK_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "plugin-api.h"

typedef struct att_mask {
  int64_t Sq, Skv, window;
  int causal;
  const int32_t *kv_lens; /* NULL: absent */
  int64_t kv_stride;
  const void *bias; /* NULL: absent; q's dtype */
  int64_t bs[4];
  const float *slopes; /* NULL: none given */
  int64_t slope_stride;
  int32_t alibi_heads, alibi_offset;
} att_mask_t;

static inline const void *att_mask_base(const bp_plugin_tensor_t *t) {
  return (const char *)(uintptr_t)t->ptr + t->offset;
}

/* Fills m from a; false when a mask tensor's dtype or rank is not what the
 * kernels read (i32 kv_lens, f32 slopes, a bias of q's dtype, rank 4). */
static inline bool att_mask_init(att_mask_t *m, const bp_attention_args_t *a) {
  *m = (att_mask_t){0};
  m->Sq = a->q.shape[2], m->Skv = a->k.shape[2];
  m->window = a->window > 0 ? a->window : 0;
  m->causal = a->causal;
  if (a->kv_lens.rank) {
    if (a->kv_lens.rank != 1 || a->kv_lens.dtype != BP_I32) return false;
    m->kv_lens = att_mask_base(&a->kv_lens), m->kv_stride = a->kv_lens.strides[0];
  }
  if (a->bias.rank) {
    if (a->bias.rank != 4 || a->bias.dtype != a->q.dtype) return false;
    m->bias = att_mask_base(&a->bias);
    for (int x = 0; x < 4; x++) m->bs[x] = a->bias.strides[x];
  }
  if (a->alibi_slopes.rank) {
    if (a->alibi_slopes.rank != 1 || a->alibi_slopes.dtype != BP_F32) return false;
    m->slopes = att_mask_base(&a->alibi_slopes), m->slope_stride = a->alibi_slopes.strides[0];
  } else if (a->alibi_heads > 0) {
    m->alibi_heads = a->alibi_heads, m->alibi_offset = a->alibi_head_offset;
  }
  return true;
}

/* Whether scores get an additive term (bias or ALiBi). */
static inline bool att_mask_additive(const att_mask_t *m) {
  return m->bias || m->slopes || m->alibi_heads > 0;
}

/* Whether the key range starts past 0 or ends before Skv for some row
 * beyond what causal alone does. */
static inline bool att_mask_ranged(const att_mask_t *m) {
  return m->window > 0 || m->kv_lens;
}

/* The keys [lo, hi) query i of batch b sees (lo <= hi, both in
 * [0, Skv]); lo and hi never decrease with i. */
static inline void att_mask_keys(const att_mask_t *m, int64_t b, int64_t i, int64_t *lo,
                                 int64_t *hi) {
  int64_t at = i + m->Skv - m->Sq, end = m->Skv, start = 0;
  if (m->causal || m->window > 0) end = at + 1;
  if (m->window > 0) start = at - m->window + 1;
  if (m->kv_lens) {
    int64_t len = m->kv_lens[b * m->kv_stride];
    if (len < end) end = len;
  }
  *lo = start < 0 ? 0 : start > m->Skv ? m->Skv : start;
  *hi = end > m->Skv ? m->Skv : end < *lo ? *lo : end;
}

/* Head h's ALiBi slope (0 without ALiBi): the tensor's, or the standard
 * geometric slope of head h + offset of alibi_heads (Press et al.), as the
 * reference computes it. */
static inline float att_mask_slope(const att_mask_t *m, int64_t h) {
  if (m->slopes) return m->slopes[h * m->slope_stride];
  if (m->alibi_heads <= 0) return 0.0f;
  int64_t n = m->alibi_heads, hh = h + m->alibi_offset, p = 1;
  while (p * 2 <= n) p *= 2;
  if (hh < p) return (float)pow(2.0, -8.0 * (double)(hh + 1) / (double)p);
  return (float)pow(2.0, -4.0 * (double)(2 * (hh - p) + 1) / (double)p);
}

#endif /* BACKPLANE_CPU_FAST_ATTENTION_MASK_H */
