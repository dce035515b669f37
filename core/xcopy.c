/*
 * xcopy.c — copies between buffers on two different devices, in the cheapest
 * way the two backends allow (docs/runtime.md, "Copies between devices"):
 *
 *  1. one side keeps its memory in host pointers (BP_DEVICE_FLAG_HOST_MEMORY):
 *     the other side's plugin reads or writes it directly;
 *  2. one side can map its memory into the host (mem_map, ABI 1.4: PoCL,
 *     lavapipe): the other side reads or writes the mapping directly;
 *  3. otherwise the bytes are staged through host memory in chunks, the read
 *     of one chunk overlapping the write of the one before (xcopy_stage.c).
 *
 * Every path is synchronous with both devices: the work queued on either
 * before the call is done before a byte moves, and the copy is complete when
 * the call returns. Every step either completes or the copy fails with the
 * plugin's message: a copy is never silently partial.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xcopy.h"

static bool host_memory(const bp__device_t *d) {
  return (d->entry.info.flags & BP_DEVICE_FLAG_HOST_MEMORY) != 0;
}

/* The host address of byte off of b, for a device whose pointers are host
 * pointers. */
static void *host_address(const bp__buffer_t *b, uint64_t off) {
  return (void *)(uintptr_t)(b->ptr + b->origin + off);
}

/* Copies through a host-memory side: no intermediate copy at all. */
static bp_status_t copy_host_side(bp__buffer_t *dst, uint64_t doff, bp__buffer_t *src,
                                  uint64_t soff, uint64_t size) {
  if (host_memory(src->device)) {
    /* The source plugin may still have work queued that writes src. */
    bp_status_t st = bp__call_device_sync(src->device);
    if (st != BP_OK) return st;
    return bp__call_mem_write(dst->device, NULL, dst->ptr, dst->origin + doff,
                              host_address(src, soff), size);
  }
  bp_status_t st = bp__call_device_sync(dst->device);
  if (st != BP_OK) return st;
  return bp__call_mem_read(src->device, NULL, host_address(dst, doff), src->ptr, src->origin + soff,
                           size);
}

/* Maps size bytes of b at off for the host after the device's queued work;
 * BP_ERR_UNSUPPORTED (no message) when b's plugin or memory cannot. */
static bp_status_t map_range(bp__buffer_t *b, uint64_t off, uint64_t size, uint32_t flags,
                             void **out_host) {
  *out_host = NULL;
  if (!bp__plugin_has_mem_map(b->device)) return BP_ERR_UNSUPPORTED;
  bp_status_t st = bp__call_device_sync(b->device);
  if (st != BP_OK) return st;
  return bp__call_mem_map(b->device, b->ptr, b->origin + off, size, flags, out_host);
}

/* Unmaps, keeping the first failure of the copy as the one reported. */
static bp_status_t unmap_range(bp__buffer_t *b, void *host, bp_status_t st) {
  bp_status_t un = bp__call_mem_unmap(b->device, b->ptr, host);
  return st != BP_OK ? st : un;
}

/* Copies through a mapping of either side; BP_ERR_UNSUPPORTED when neither
 * side can map its range. */
static bp_status_t copy_mapped(bp__buffer_t *dst, uint64_t doff, bp__buffer_t *src, uint64_t soff,
                               uint64_t size) {
  void *host;
  bp_status_t st = map_range(src, soff, size, BP_MAP_READ, &host);
  if (st == BP_OK) {
    st = bp__call_mem_write(dst->device, NULL, dst->ptr, dst->origin + doff, host, size);
    return unmap_range(src, host, st);
  }
  if (st != BP_ERR_UNSUPPORTED) return st;
  st = map_range(dst, doff, size, BP_MAP_WRITE, &host);
  if (st != BP_OK) return st;
  st = bp__call_mem_read(src->device, NULL, host, src->ptr, src->origin + soff, size);
  return unmap_range(dst, host, st);
}

bp_status_t bp__copy_across(bp__buffer_t *dst, uint64_t doff, bp__buffer_t *src, uint64_t soff,
                            uint64_t size) {
  if (size == 0) return BP_OK;
  if (host_memory(src->device) || host_memory(dst->device))
    return copy_host_side(dst, doff, src, soff, size);
  bp_status_t st = copy_mapped(dst, doff, src, soff, size);
  if (st != BP_ERR_UNSUPPORTED) return st;
  return bp__copy_staged(dst, doff, src, soff, size);
}

bp__buffer_t bp__range_buffer(bp__device_t *d, uint64_t ptr, uint64_t origin) {
  bp__buffer_t b;
  memset(&b, 0, sizeof b);
  b.device = d;
  b.ptr = ptr;
  b.origin = origin;
  return b;
}
