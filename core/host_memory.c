/*
 * host_memory.c — host memory for asynchronous copies (bp_host_alloc).
 *
 * A backend with page-locked memory (CUDA) provides host_alloc/host_free;
 * otherwise the core hands out ordinary 64-byte aligned memory, which is
 * what the CPU backend needs. Each block is recorded on its device so a
 * pointer from another device, or one freed twice, is refused instead of
 * reaching the wrong allocator, and so closing the device frees what is left.
 */
#include <stdlib.h>

#include "internal.h"

typedef struct bp__host_block {
  void *ptr;
  bool from_plugin;
  struct bp__host_block *next;
} host_block_t;

bp_status_t bp_host_alloc(bp_device_t *dh, uint64_t size, void **out_ptr) {
  bp__clear_error();
  if (!out_ptr) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_host_alloc: out_ptr is NULL");
  *out_ptr = NULL;
  BP__ENTER(bp__device_t, d, dh, BP__H_DEVICE, "bp_host_alloc", "device");
  if (size == 0 || size > (UINT64_C(1) << 48))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_host_alloc: size %llu not in [1, 2^48]", (unsigned long long)size);
  host_block_t *b = calloc(1, sizeof *b);
  if (!b) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_host_alloc: out of host memory");
  b->from_plugin = bp__plugin_has_host_memory(d);
  if (b->from_plugin) {
    bp_status_t st = bp__call_host_alloc(d, size, &b->ptr);
    if (st != BP_OK) {
      free(b);
      return st;
    }
  } else if (!(b->ptr = aligned_alloc(64, (size_t)((size + 63) / 64 * 64)))) {
    free(b);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_host_alloc: cannot allocate %llu bytes of host memory",
                    (unsigned long long)size);
  }
  pthread_mutex_lock(&d->lock);
  b->next = d->host_blocks;
  d->host_blocks = b;
  pthread_mutex_unlock(&d->lock);
  *out_ptr = b->ptr;
  return BP_OK;
}

static void release(bp__device_t *d, host_block_t *b) {
  if (b->from_plugin) bp__call_host_free(d, b->ptr);
  else free(b->ptr);
  free(b);
}

void bp_host_free(bp_device_t *dh, void *ptr) {
  if (!ptr) return;
  BP__ENTER_VOID(bp__device_t, d, dh, BP__H_DEVICE, "bp_host_free");
  host_block_t *found = NULL;
  pthread_mutex_lock(&d->lock);
  for (host_block_t **pp = &d->host_blocks; *pp; pp = &(*pp)->next)
    if ((*pp)->ptr == ptr) {
      found = *pp;
      *pp = found->next;
      break;
    }
  pthread_mutex_unlock(&d->lock);
  if (!found) {
    bp__log(BP_LOG_WARN, BP__LOG_API, "bp_host_free: %p was not allocated on this device; ignored", ptr);
    return;
  }
  bp__call_device_sync(d); /* an asynchronous copy may still read it */
  release(d, found);
}

void bp__host_release_all(bp__device_t *d) {
  while (d->host_blocks) {
    host_block_t *b = d->host_blocks;
    d->host_blocks = b->next;
    release(d, b);
  }
}
