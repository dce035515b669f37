/*
 * pool.c — the caching allocator every backend shares.
 *
 * Buffers are carved out of segments the plugin allocated. A request is
 * rounded up to 256 bytes (every backend's strictest offset alignment), the
 * best-fitting free block is split, and freed blocks merge with free
 * neighbours of the same segment. Segments are at least 2 MiB, so small
 * buffers share them. When the plugin runs out of memory the pool returns its
 * wholly free segments and tries once more before failing. Because a segment's
 * device pointer is opaque (a handle on Vulkan and OpenCL), a buffer is the
 * segment's pointer plus a byte origin, which the core adds to every offset
 * it passes down.
 *
 * Reuse is safe across streams: bp_buffer_free waits for the device's queued
 * work before the block returns to the pool.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define POOL_ALIGN 256u
#define SEGMENT_MIN (UINT64_C(2) << 20)

typedef struct pool_block {
  struct pool_segment *seg;
  uint64_t offset, size;
  bool free;
  struct pool_block *prev, *next; /* neighbours in the segment, by offset */
} pool_block_t;

typedef struct pool_segment {
  uint64_t ptr, size;
  pool_block_t *first;
  struct pool_segment *next;
} pool_segment_t;

struct bp__pool {
  pthread_mutex_t lock;
  pool_segment_t *segments;
  bp_memory_stats_t stats;
  uint64_t max_reserved; /* 0: no limit */
};

bp__pool_t *bp__pool_create(uint64_t max_reserved) {
  bp__pool_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  pthread_mutex_init(&p->lock, NULL);
  p->stats.struct_size = sizeof p->stats;
  p->max_reserved = max_reserved;
  return p;
}

static void segment_release(bp__device_t *d, bp__pool_t *p, pool_segment_t *s) {
  bp__call_mem_free(d, s->ptr);
  p->stats.reserved_bytes -= s->size;
  p->stats.segment_count--;
  free(s->first);
  free(s);
}

/* Frees every segment that holds no live block. Called with the lock. */
static void release_free_segments(bp__device_t *d, bp__pool_t *p) {
  for (pool_segment_t **sp = &p->segments; *sp;) {
    pool_segment_t *s = *sp;
    if (s->first->free && !s->first->next) {
      *sp = s->next;
      segment_release(d, p, s);
    } else {
      sp = &s->next;
    }
  }
}

void bp__pool_destroy(bp__device_t *d, bp__pool_t *p) {
  if (!p) return;
  while (p->segments) {
    pool_segment_t *s = p->segments;
    p->segments = s->next;
    for (pool_block_t *b = s->first->next; b;) {
      pool_block_t *n = b->next;
      free(b);
      b = n;
    }
    s->first->next = NULL;
    segment_release(d, p, s);
  }
  pthread_mutex_destroy(&p->lock);
  free(p);
}

static pool_block_t *best_fit(bp__pool_t *p, uint64_t size) {
  pool_block_t *best = NULL;
  for (pool_segment_t *s = p->segments; s; s = s->next)
    for (pool_block_t *b = s->first; b; b = b->next)
      if (b->free && b->size >= size && (!best || b->size < best->size)) best = b;
  return best;
}

/* Splits b so that it is exactly size bytes, the rest a free block. */
static void split(pool_block_t *b, uint64_t size) {
  if (b->size - size < POOL_ALIGN) return;
  pool_block_t *rest = calloc(1, sizeof *rest);
  if (!rest) return; /* keep the block whole: wasteful, not wrong */
  *rest = (pool_block_t){b->seg, b->offset + size, b->size - size, true, b, b->next};
  if (b->next) b->next->prev = rest;
  b->next = rest;
  b->size = size;
}

static bp_status_t new_segment(bp__device_t *d, bp__pool_t *p, uint64_t size, pool_block_t **out) {
  uint64_t seg_size = size < SEGMENT_MIN ? SEGMENT_MIN : size;
  if (p->max_reserved && p->stats.reserved_bytes + seg_size > p->max_reserved) {
    seg_size = size; /* do not round up past the limit */
    if (p->stats.reserved_bytes + seg_size > p->max_reserved)
      return bp__fail(BP_ERR_OUT_OF_MEMORY,
                      "bp_buffer_alloc: requested %llu bytes; the pool limit is %llu and %llu are reserved",
                      (unsigned long long)size, (unsigned long long)p->max_reserved,
                      (unsigned long long)p->stats.reserved_bytes);
  }
  pool_segment_t *s = calloc(1, sizeof *s);
  pool_block_t *b = calloc(1, sizeof *b);
  if (!s || !b) {
    free(s);
    free(b);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_buffer_alloc: out of host memory");
  }
  bp_status_t st = bp__call_mem_alloc(d, seg_size, &s->ptr);
  if (st != BP_OK && seg_size > size) {
    seg_size = size; /* a tight fit may still succeed */
    st = bp__call_mem_alloc(d, seg_size, &s->ptr);
  }
  if (st != BP_OK) {
    free(s);
    free(b);
    return st;
  }
  s->size = seg_size;
  *b = (pool_block_t){s, 0, seg_size, true, NULL, NULL};
  s->first = b;
  s->next = p->segments;
  p->segments = s;
  p->stats.reserved_bytes += seg_size;
  p->stats.segment_count++;
  *out = b;
  return BP_OK;
}

bp_status_t bp__pool_alloc(bp__device_t *d, uint64_t size, uint64_t *out_ptr, uint64_t *out_origin,
                           void **out_block) {
  bp__pool_t *p = d->pool;
  uint64_t rounded = (size + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
  pthread_mutex_lock(&p->lock);
  pool_block_t *b = best_fit(p, rounded);
  bool hit = b != NULL;
  bp_status_t st = BP_OK;
  if (!b) {
    st = new_segment(d, p, rounded, &b);
    if (st == BP_ERR_OUT_OF_MEMORY && p->segments) {
      /* Give the cache back and try once more before failing. */
      release_free_segments(d, p);
      bp__clear_error();
      st = new_segment(d, p, rounded, &b);
    }
  }
  if (st == BP_OK) {
    split(b, rounded);
    b->free = false;
    p->stats.in_use_bytes += b->size;
    if (p->stats.in_use_bytes > p->stats.peak_in_use_bytes) p->stats.peak_in_use_bytes = p->stats.in_use_bytes;
    p->stats.alloc_count++;
    p->stats.cache_hits += hit;
    *out_ptr = b->seg->ptr;
    *out_origin = b->offset;
    *out_block = b;
  }
  pthread_mutex_unlock(&p->lock);
  return st;
}

/* Merges b with its next neighbour, which must be free. */
static void merge_next(pool_block_t *b) {
  pool_block_t *n = b->next;
  b->size += n->size;
  b->next = n->next;
  if (n->next) n->next->prev = b;
  free(n);
}

void bp__pool_free(bp__device_t *d, void *block) {
  (void)d;
  bp__pool_t *p = d->pool;
  pool_block_t *b = block;
  pthread_mutex_lock(&p->lock);
  p->stats.in_use_bytes -= b->size;
  p->stats.free_count++;
  b->free = true;
  if (b->next && b->next->free) merge_next(b);
  if (b->prev && b->prev->free) merge_next(b->prev);
  pthread_mutex_unlock(&p->lock);
}

void bp__pool_empty_cache(bp__device_t *d) {
  pthread_mutex_lock(&d->pool->lock);
  release_free_segments(d, d->pool);
  pthread_mutex_unlock(&d->pool->lock);
}

void bp__pool_stats(bp__device_t *d, bp_memory_stats_t *out) {
  bp__pool_t *p = d->pool;
  pthread_mutex_lock(&p->lock);
  *out = p->stats;
  uint64_t free_total = 0, largest = 0;
  for (pool_segment_t *s = p->segments; s; s = s->next)
    for (pool_block_t *b = s->first; b; b = b->next)
      if (b->free) {
        free_total += b->size;
        if (b->size > largest) largest = b->size;
      }
  out->cached_bytes = free_total;
  out->largest_free_block = largest;
  out->fragmentation = free_total ? 1.0 - (double)largest / (double)free_total : 0.0;
  pthread_mutex_unlock(&p->lock);
}
