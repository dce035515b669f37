/*
 * fallback.h — what fallback.c and fallback_stats.c share: a device's
 * fallback state (the devices it falls back to, and the records of what
 * fell back). The core's entry points are in internal.h.
 */
#ifndef BACKPLANE_FALLBACK_H
#define BACKPLANE_FALLBACK_H

#include "internal.h"

/* One ranked device as a fallback target of an origin device. */
typedef struct bp__fallback_target {
  bool tried;            /* opening it was attempted (once) */
  bp_device_t *device;   /* opened with fallback off; NULL when it failed */
  bp_stream_t *stream;   /* where the ops run */
  char why[256];         /* why it could not be opened */
} bp__fallback_target_t;

/* One record: bp_device_fallback_stats's, and the target's rank. */
typedef struct bp__fallback_rec {
  bp_fallback_stat_t stat;
  uint32_t target_rank;
} bp__fallback_rec_t;

struct bp__fallback {
  pthread_mutex_t lock; /* guards everything below */
  bp__fallback_target_t *targets; /* one per ranked device of the context */
  uint32_t target_count;
  bp__fallback_rec_t *stats;
  uint32_t stat_count, stat_capacity;
};
typedef struct bp__fallback bp__fallback_t;

/* What one fallback copied, and how long the copies took. */
typedef struct bp__fallback_cost {
  uint64_t bytes_in, bytes_out, copy_ns;
} bp__fallback_cost_t;

uint64_t bp__fallback_now_ns(void);
/* Counts one fallback of op from d to ranked device r, refused for why;
 * logs the first of each (op, dtype, reason) at info level. */
void bp__fallback_record(bp__device_t *d, bp_op_t op, const bp__refusal_t *why, uint32_t r,
                         const bp__fallback_cost_t *cost, uint64_t total_ns);

#endif /* BACKPLANE_FALLBACK_H */
