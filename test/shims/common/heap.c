/*
 * heap.c — see heap.h.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "test/shims/common/heap.h"

typedef struct block {
  uint64_t ptr, size;
  struct block *next;
} block_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block_t *blocks;
static int64_t live_blocks, live_bytes;

/* Bumped by every free: a thread's cached block is trusted only while no
 * free has happened since it was looked up. */
static uint64_t free_generation;
static _Thread_local struct {
  uint64_t ptr, size, generation;
  bool valid;
} last_hit;

static bool inside(uint64_t p, uint64_t bytes, uint64_t base, uint64_t size) {
  return p >= base && p - base <= size && bytes <= size - (p - base);
}

bool shim_heap_alloc(uint64_t size, uint64_t limit, uint64_t *out) {
  *out = 0;
  pthread_mutex_lock(&lock);
  bool over = (uint64_t)live_bytes + size > limit;
  pthread_mutex_unlock(&lock);
  if (over || size == 0)
    return false;
  block_t *b = malloc(sizeof *b);
  void *mem = aligned_alloc(256, (size + 255) & ~(uint64_t)255);
  if (!b || !mem) {
    free(b);
    free(mem);
    return false;
  }
  memset(mem, 0xA5, size);
  b->ptr = (uint64_t)(uintptr_t)mem;
  b->size = size;
  pthread_mutex_lock(&lock);
  b->next = blocks;
  blocks = b;
  live_blocks++;
  live_bytes += (int64_t)size;
  pthread_mutex_unlock(&lock);
  *out = b->ptr;
  return true;
}

bool shim_heap_free(uint64_t p, const char *fn) {
  block_t *found = NULL;
  pthread_mutex_lock(&lock);
  for (block_t **pp = &blocks; *pp; pp = &(*pp)->next)
    if ((*pp)->ptr == p) {
      found = *pp;
      *pp = found->next;
      live_blocks--;
      live_bytes -= (int64_t)found->size;
      __atomic_add_fetch(&free_generation, 1, __ATOMIC_RELEASE);
      break;
    }
  pthread_mutex_unlock(&lock);
  if (!found) {
    shim_report("%s(0x%llx): not an allocation (double free?)", fn,
                (unsigned long long)p);
    return false;
  }
  free((void *)(uintptr_t)found->ptr);
  free(found);
  return true;
}

void shim_heap_usage(int64_t *out_blocks, int64_t *out_bytes) {
  pthread_mutex_lock(&lock);
  *out_blocks = live_blocks;
  *out_bytes = live_bytes;
  pthread_mutex_unlock(&lock);
}

bool shim_mem_find(uint64_t p, uint64_t bytes, const char *what,
                   uint64_t *out_lo, uint64_t *out_hi) {
  bool ok = false;
  pthread_mutex_lock(&lock);
  for (block_t *b = blocks; b; b = b->next)
    if (inside(p, bytes, b->ptr, b->size)) {
      ok = true;
      *out_lo = b->ptr;
      *out_hi = b->ptr + b->size;
      break;
    }
  pthread_mutex_unlock(&lock);
  return ok ? true : shim_mem_valid(p, bytes, what); /* reports it */
}

bool shim_mem_valid(uint64_t p, uint64_t bytes, const char *what) {
  uint64_t gen = __atomic_load_n(&free_generation, __ATOMIC_ACQUIRE);
  if (last_hit.valid && last_hit.generation == gen &&
      inside(p, bytes, last_hit.ptr, last_hit.size))
    return true;
  bool ok = false;
  pthread_mutex_lock(&lock);
  for (block_t *b = blocks; b; b = b->next)
    if (inside(p, bytes, b->ptr, b->size)) {
      ok = true;
      last_hit.ptr = b->ptr;
      last_hit.size = b->size;
      last_hit.generation = free_generation;
      last_hit.valid = true;
      break;
    }
  pthread_mutex_unlock(&lock);
  if (!ok)
    shim_report("%s: [0x%llx, +%llu) is outside every live allocation", what,
                (unsigned long long)p, (unsigned long long)bytes);
  return ok;
}
