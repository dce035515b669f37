/*
 * plugins/gpu/memory.c — device allocations and host/device copies of the
 * CUDA and ROCm backends.
 *
 * Sizes are remembered per pointer so that a configured memory_limit can be
 * enforced and a free of an unknown pointer is caught. Allocation, frees and
 * synchronous (NULL-stream) copies are legacy-stream work: they hold the
 * device's capture lock shared (graph.c) so they never run inside another
 * thread's graph capture, and are refused on the capturing thread. Copies
 * with a stream are the driver's async copies on it.
 *
 * CUDA allocates from the driver's stream-ordered pool (cuMemAllocAsync on
 * the legacy default stream) where the device has one: it recycles memory
 * without a device-wide synchronisation, and because our streams are
 * blocking, the legacy stream orders a free after all work already queued
 * on the device — the ABI's "free after the queued work". Elsewhere it
 * falls back to cuMemAlloc / cuMemFree. HIP uses hipMalloc / hipFree, and
 * hipFree waits for the device's queued work itself (vendors/NAME.h map
 * gpuMalloc / gpuFree). Pinned host memory is CUDA's alone
 * (plugins/cuda/memory.c).
 */
#include <stdio.h>
#include <stdlib.h>

#include "plugins/gpu/gpu.h"

typedef struct alloc_node {
  uint64_t ptr, size;
  struct alloc_node *next;
} alloc_node_t;

/* One table for the process: device pointers are unique across devices
 * and contexts (unified virtual addressing), so the key needs no device. */
#define ALLOC_BUCKETS 1024
static alloc_node_t *alloc_table[ALLOC_BUCKETS];
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned bucket_of(uint64_t p) {
  return (unsigned)((p >> 8) * 0x9e3779b97f4a7c15ull >> 54) % ALLOC_BUCKETS;
}

static bool table_add(uint64_t p, uint64_t size) {
  alloc_node_t *n = malloc(sizeof *n);
  if (!n) return false;
  n->ptr = p;
  n->size = size;
  pthread_mutex_lock(&alloc_lock);
  n->next = alloc_table[bucket_of(p)];
  alloc_table[bucket_of(p)] = n;
  pthread_mutex_unlock(&alloc_lock);
  return true;
}

/* Removes p; returns its size, 0 when unknown. */
static uint64_t table_remove(uint64_t p) {
  uint64_t size = 0;
  pthread_mutex_lock(&alloc_lock);
  for (alloc_node_t **pp = &alloc_table[bucket_of(p)]; *pp; pp = &(*pp)->next) {
    if ((*pp)->ptr == p) {
      alloc_node_t *n = *pp;
      *pp = n->next;
      size = n->size;
      free(n);
      break;
    }
  }
  pthread_mutex_unlock(&alloc_lock);
  return size;
}

/* Out-of-memory message with the sizes the application needs to act. */
bp_status_t gpu_oom(uint64_t size, const char *why) {
  size_t free_b = 0, total_b = 0;
  gpuMemGetInfo(&free_b, &total_b);
  gpu_host->set_error(GPU_PLUGIN_NAME ": out of memory: %s %llu bytes requested, "
                                      "%llu bytes free of %llu",
                      why, (unsigned long long)size, (unsigned long long)free_b,
                      (unsigned long long)total_b);
  return BP_ERR_OUT_OF_MEMORY;
}

/* Reserves size bytes of the configured limit; false when over it. */
static bool reserve(gpu_device_t *d, uint64_t size) {
  bool ok = true;
  pthread_mutex_lock(&d->lock);
  if (d->memory_limit && d->memory_used + size > d->memory_limit)
    ok = false;
  else
    d->memory_used += size;
  pthread_mutex_unlock(&d->lock);
  return ok;
}

static void unreserve(gpu_device_t *d, uint64_t size) {
  pthread_mutex_lock(&d->lock);
  d->memory_used -= size <= d->memory_used ? size : d->memory_used;
  pthread_mutex_unlock(&d->lock);
}

bp_status_t gpu_mem_alloc(bp_plugin_device_t *device, uint64_t size, uint64_t *out_ptr) {
  *out_ptr = 0;
  gpu_device_t *d = gpu_dev(device);
  if (size > (uint64_t)SIZE_MAX) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": allocation of %llu bytes exceeds size_t",
                        (unsigned long long)size);
    return BP_ERR_OUT_OF_MEMORY;
  }
  bp_status_t st = gpu_legacy_begin(d, "mem_alloc");
  if (st != BP_OK) return st;
  if ((st = gpu_device_enter(d)) != BP_OK) {
    gpu_legacy_end(d);
    return st;
  }
  uint64_t p = 0;
  if (!reserve(d, size)) {
    st = gpu_oom(size, "memory_limit reached;");
    goto out;
  }
  const char *fn = gpuMallocName(d);
  gpuError_t r = gpuMalloc(d, &p, (size_t)size);
  if (r == gpuErrorOutOfMemory) {
    char why[64];
    snprintf(why, sizeof why, "%s:", fn);
    st = gpu_oom(size, why);
  } else {
    st = gpu_check(r, fn);
  }
  if (st == BP_OK && !table_add(p, size)) {
    gpuFree(d, p);
    gpu_host->set_error(GPU_PLUGIN_NAME ": no host memory to track an allocation");
    st = BP_ERR_OUT_OF_MEMORY;
  }
  if (st != BP_OK)
    unreserve(d, size);
  else
    *out_ptr = p;
out:
  gpu_device_leave();
  gpu_legacy_end(d);
  return st;
}

void gpu_mem_free(bp_plugin_device_t *device, uint64_t ptr) {
  gpu_device_t *d = gpu_dev(device);
  if (!ptr) return;
  if (gpu_legacy_begin(d, "mem_free") != BP_OK) {
    gpu_log(BP_LOG_WARN,
            "mem_free of 0x%llx during a graph capture on "
            "this thread: leaked",
            (unsigned long long)ptr);
    return;
  }
  uint64_t size = table_remove(ptr);
  if (!size) {
    gpu_log(BP_LOG_WARN, "mem_free of unknown pointer 0x%llx ignored", (unsigned long long)ptr);
    gpu_legacy_end(d);
    return;
  }
  unreserve(d, size);
  if (gpu_device_enter(d) == BP_OK) {
    gpuError_t r = gpuFree(d, ptr);
    if (r != 0)
      gpu_log(BP_LOG_WARN, "freeing 0x%llx failed with error %d", (unsigned long long)ptr, r);
    gpu_device_leave();
  }
  gpu_legacy_end(d);
}

/* Synchronous copies run on the legacy / null stream: ordered after the
 * work of every (blocking) stream of the device, as the ABI asks for a
 * NULL stream. A device-to-device copy may return early, so it is waited
 * for. */
bp_status_t gpu_mem_write(bp_plugin_device_t *device, bp_plugin_stream_t *stream, uint64_t dst,
                          uint64_t dst_offset, const void *src, uint64_t size) {
  gpu_device_t *d = gpu_dev(device);
  bp_status_t st = stream ? BP_OK : gpu_legacy_begin(d, "a synchronous copy");
  if (st != BP_OK) return st;
  if ((st = gpu_device_enter(d)) != BP_OK) goto out;
  if (stream)
    st = gpu_check(gpuMemcpyHtoDAsync(dst + dst_offset, src, (size_t)size, gpu_stream_of(stream)),
                   GPU_API "MemcpyHtoDAsync");
  else
    st = gpu_check(gpuMemcpyHtoD(dst + dst_offset, src, (size_t)size), GPU_API "MemcpyHtoD");
  gpu_device_leave();
out:
  if (!stream) gpu_legacy_end(d);
  return st;
}

bp_status_t gpu_mem_read(bp_plugin_device_t *device, bp_plugin_stream_t *stream, void *dst,
                         uint64_t src, uint64_t src_offset, uint64_t size) {
  gpu_device_t *d = gpu_dev(device);
  bp_status_t st = stream ? BP_OK : gpu_legacy_begin(d, "a synchronous copy");
  if (st != BP_OK) return st;
  if ((st = gpu_device_enter(d)) != BP_OK) goto out;
  if (stream)
    st = gpu_check(gpuMemcpyDtoHAsync(dst, src + src_offset, (size_t)size, gpu_stream_of(stream)),
                   GPU_API "MemcpyDtoHAsync");
  else
    st = gpu_check(gpuMemcpyDtoH(dst, src + src_offset, (size_t)size), GPU_API "MemcpyDtoH");
  gpu_device_leave();
out:
  if (!stream) gpu_legacy_end(d);
  return st;
}

bp_status_t gpu_mem_copy(bp_plugin_device_t *device, bp_plugin_stream_t *stream, uint64_t dst,
                         uint64_t dst_offset, uint64_t src, uint64_t src_offset, uint64_t size) {
  gpu_device_t *d = gpu_dev(device);
  bp_status_t st = stream ? BP_OK : gpu_legacy_begin(d, "a synchronous copy");
  if (st != BP_OK) return st;
  if ((st = gpu_device_enter(d)) != BP_OK) goto out;
  if (stream) {
    st = gpu_check(
        gpuMemcpyDtoDAsync(dst + dst_offset, src + src_offset, (size_t)size, gpu_stream_of(stream)),
        GPU_API "MemcpyDtoDAsync");
  } else {
    st = gpu_check(gpuMemcpyDtoD(dst + dst_offset, src + src_offset, (size_t)size),
                   GPU_API "MemcpyDtoD");
    if (st == BP_OK)
      st = gpu_check(gpuStreamSynchronize((gpuStream_t)0), GPU_API "StreamSynchronize");
  }
  gpu_device_leave();
out:
  if (!stream) gpu_legacy_end(d);
  return st;
}
