/*
 * xcopy.c — copies between buffers on two different devices. Where one side
 * keeps its memory in host pointers (BP_DEVICE_FLAG_HOST_MEMORY) the other
 * side's plugin reads or writes it directly; otherwise the bytes go through a
 * host staging buffer, chunk by chunk. Every chunk either completes or the
 * copy fails with the plugin's message: a copy is never silently partial.
 */
#include <stdlib.h>

#include "internal.h"

/* Bytes staged per chunk: large enough that per-call overhead vanishes,
 * small enough to stay in the last-level cache of a server CPU. */
#define STAGE_CHUNK (UINT64_C(4) << 20)

static bool host_memory(const bp__device_t *d) {
  return (d->entry.info.flags & BP_DEVICE_FLAG_HOST_MEMORY) != 0;
}

/* The host address of byte off of b, for a device whose pointers are host
 * pointers. */
static void *host_address(const bp__buffer_t *b, uint64_t off) {
  return (void *)(uintptr_t)(b->ptr + b->origin + off);
}

bp_status_t bp__copy_across(bp__buffer_t *dst, uint64_t doff, bp__buffer_t *src, uint64_t soff,
                            uint64_t size) {
  if (size == 0) return BP_OK;
  if (host_memory(src->device)) {
    /* The source plugin may still have work queued that writes src. */
    bp_status_t st = bp__call_device_sync(src->device);
    if (st != BP_OK) return st;
    return bp__call_mem_write(dst->device, NULL, dst->ptr, dst->origin + doff, host_address(src, soff), size);
  }
  if (host_memory(dst->device)) {
    bp_status_t st = bp__call_device_sync(dst->device);
    if (st != BP_OK) return st;
    return bp__call_mem_read(src->device, NULL, host_address(dst, doff), src->ptr, src->origin + soff, size);
  }
  uint64_t chunk = size < STAGE_CHUNK ? size : STAGE_CHUNK;
  void *stage = aligned_alloc(64, (chunk + 63) & ~UINT64_C(63));
  if (!stage) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_buffer_copy: no host memory for a %llu-byte staging buffer",
                              (unsigned long long)chunk);
  bp_status_t st = BP_OK;
  for (uint64_t done = 0; done < size && st == BP_OK; done += chunk) {
    uint64_t n = size - done < chunk ? size - done : chunk;
    st = bp__call_mem_read(src->device, NULL, stage, src->ptr, src->origin + soff + done, n);
    if (st == BP_OK) st = bp__call_mem_write(dst->device, NULL, dst->ptr, dst->origin + doff + done, stage, n);
  }
  free(stage);
  return st;
}
