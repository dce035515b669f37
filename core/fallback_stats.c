/*
 * fallback_stats.c — the records of what fell back from a device: one per
 * (op, dtype, reason, target), with counts and copy costs, read by
 * bp_device_fallback_stats; the first fallback of each (op, dtype, reason)
 * is logged at info level, so a fallback is never silent and never floods
 * the log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fallback.h"

static const char *reason_word(bp_fallback_reason_t r) {
  switch (r) {
  case BP_FALLBACK_DTYPE: return "dtype not claimed";
  case BP_FALLBACK_NO_ENTRY: return "op not implemented";
  case BP_FALLBACK_REFUSED: return "refused by the plugin";
  case BP_FALLBACK_FEATURE: return "feature not claimed";
  }
  return "?";
}

/* The record for (op, dtype, reason, r), appended when new; NULL when
 * memory is short. *out_first_of_kind: no record of (op, dtype, reason)
 * existed before. Under fb->lock. */
static bp__fallback_rec_t *find_or_add(bp__fallback_t *fb, bp_op_t op, const bp__refusal_t *why, uint32_t r,
                                       bool *out_first_of_kind) {
  *out_first_of_kind = true;
  for (uint32_t i = 0; i < fb->stat_count; i++) {
    bp__fallback_rec_t *x = &fb->stats[i];
    if (x->stat.op != op || x->stat.dtype != why->dtype || x->stat.reason != why->reason) continue;
    *out_first_of_kind = false;
    if (x->target_rank == r) return x;
  }
  if (fb->stat_count == fb->stat_capacity) {
    uint32_t cap = fb->stat_capacity ? 2 * fb->stat_capacity : 8;
    bp__fallback_rec_t *n = realloc(fb->stats, cap * sizeof *n);
    if (!n) return NULL;
    fb->stats = n;
    fb->stat_capacity = cap;
  }
  bp__fallback_rec_t *x = &fb->stats[fb->stat_count++];
  memset(x, 0, sizeof *x);
  x->stat.struct_size = sizeof x->stat;
  x->stat.op = op;
  x->stat.dtype = why->dtype;
  x->stat.reason = why->reason;
  x->target_rank = r;
  return x;
}

void bp__fallback_record(bp__device_t *d, bp_op_t op, const bp__refusal_t *why, uint32_t r,
                         const bp__fallback_cost_t *cost, uint64_t total_ns) {
  bp__fallback_t *fb = d->fallback;
  const bp_device_entry_t *to = &d->context->ranked[r];
  bool first = false;
  bp__refusal_t w; /* a copy whose text is written, once per new record */
  pthread_mutex_lock(&fb->lock);
  bp__fallback_rec_t *x = find_or_add(fb, op, why, r, &first);
  if (first || (x && x->stat.count == 0)) {
    w = *why;
    bp__refusal_text(&w);
  }
  if (x && x->stat.count == 0) {
    snprintf(x->stat.reason_text, sizeof x->stat.reason_text, "%s", w.text);
    snprintf(x->stat.target, sizeof x->stat.target, "%s", to->info.name);
    snprintf(x->stat.target_backend, sizeof x->stat.target_backend, "%s", to->backend);
  }
  if (x) {
    x->stat.count++;
    x->stat.bytes_in += cost->bytes_in;
    x->stat.bytes_out += cost->bytes_out;
    x->stat.copy_ns += cost->copy_ns;
    x->stat.total_ns += total_ns;
  }
  pthread_mutex_unlock(&fb->lock);
  if (first)
    bp__log(BP_LOG_INFO, BP__LOG_API,
            "fallback: %s %s cannot run on device '%s' (%s): %s (%s); it runs on device '%s' (%s), "
            "inputs copied there and results back (logged once per op, dtype and reason; "
            "bp_device_fallback_stats counts them)",
            bp_op_name(op), bp_dtype_name(why->dtype), d->entry.info.name, d->entry.backend,
            reason_word(why->reason), w.text, to->info.name, to->backend);
}

bp_status_t bp_device_fallback_stats(bp_device_t *h, bp_fallback_stat_t *out_stats, uint32_t capacity,
                                     uint32_t *out_count) {
  bp__clear_error();
  const char *fn = "bp_device_fallback_stats";
  if (!out_count) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: out_count is NULL", fn);
  *out_count = 0;
  if (capacity && !out_stats)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: out_stats is NULL and capacity is %u", fn, capacity);
  /* Records are written at the caller's size; the first version is the least. */
  size_t size = capacity ? out_stats[0].struct_size : sizeof(bp_fallback_stat_t);
  if (capacity && size < sizeof(bp_fallback_stat_t))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: out_stats[0].struct_size %zu < %zu", fn, size,
                    sizeof(bp_fallback_stat_t));
  if (size > sizeof(bp_fallback_stat_t)) size = sizeof(bp_fallback_stat_t);
  size_t stride = capacity ? out_stats[0].struct_size : 0;
  BP__ENTER(bp__device_t, d, h, BP__H_DEVICE, fn, "device");
  bp__fallback_t *fb = d->fallback;
  if (!fb) return BP_OK; /* fallback off: nothing ever falls back */
  pthread_mutex_lock(&fb->lock);
  for (uint32_t i = 0; i < fb->stat_count && i < capacity; i++) {
    bp_fallback_stat_t *o = (bp_fallback_stat_t *)((char *)out_stats + i * stride);
    memset(o, 0, stride);
    memcpy(o, &fb->stats[i].stat, size);
    o->struct_size = (uint32_t)stride;
  }
  *out_count = fb->stat_count;
  pthread_mutex_unlock(&fb->lock);
  return BP_OK;
}
