/*
 * schedule_ivs.c — small helpers of the graph scheduler's executor: sets of
 * byte intervals (which bytes of a region a copy holds, which it changed)
 * and the byte range of a tensor.
 */
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

bool bp__ivs_add(bp__ivs_t *s, uint64_t lo, uint64_t hi) {
  if (lo >= hi) return true;
  /* Absorb every interval that touches [lo, hi), then insert the union. */
  uint32_t i = 0;
  while (i < s->n && s->iv[i][1] < lo) i++;
  uint32_t j = i;
  while (j < s->n && s->iv[j][0] <= hi) {
    if (s->iv[j][0] < lo) lo = s->iv[j][0];
    if (s->iv[j][1] > hi) hi = s->iv[j][1];
    j++;
  }
  if (j == i) { /* nothing absorbed: make room at i */
    if (s->n == s->cap) {
      uint32_t cap = s->cap ? 2 * s->cap : 8;
      uint64_t(*n)[2] = realloc(s->iv, cap * sizeof *n);
      if (!n) return false;
      s->iv = n;
      s->cap = cap;
    }
    memmove(&s->iv[i + 1], &s->iv[i], (s->n - i) * sizeof *s->iv);
    s->n++;
  } else if (j > i + 1) {
    memmove(&s->iv[i + 1], &s->iv[j], (s->n - j) * sizeof *s->iv);
    s->n -= j - i - 1;
  }
  s->iv[i][0] = lo;
  s->iv[i][1] = hi;
  return true;
}

bool bp__ivs_first_gap(const bp__ivs_t *s, uint64_t lo, uint64_t hi, uint64_t *glo, uint64_t *ghi) {
  for (uint32_t i = 0; i < s->n && lo < hi; i++) {
    if (s->iv[i][1] <= lo) continue;
    if (s->iv[i][0] > lo) break;
    lo = s->iv[i][1]; /* covered up to here */
  }
  if (lo >= hi) return false;
  *glo = lo;
  *ghi = hi;
  for (uint32_t i = 0; i < s->n; i++)
    if (s->iv[i][0] > lo && s->iv[i][0] < *ghi) {
      *ghi = s->iv[i][0];
      break;
    }
  return true;
}

void bp__ivs_free(bp__ivs_t *s) {
  free(s->iv);
  memset(s, 0, sizeof *s);
}

bool bp__sched_byte_range(const bp_plugin_tensor_t *t, uint64_t *lo, uint64_t *hi) {
  if (!t->ptr || t->rank < 0) return false;
  int64_t es = (int64_t)bp_dtype_size(t->dtype), below = 0, above = 0;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return false;
    int64_t span = (t->shape[i] - 1) * t->strides[i];
    if (span < 0)
      below += span;
    else
      above += span;
  }
  *lo = t->offset + (uint64_t)(below * es);
  *hi = t->offset + (uint64_t)(above * es + es);
  return true;
}

bool bp__sched_dense(const bp_plugin_tensor_t *t, uint64_t lo, uint64_t hi) {
  uint64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= (uint64_t)t->shape[i];
  return hi - lo == n * bp_dtype_size(t->dtype);
}
