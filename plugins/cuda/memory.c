/*
 * memory.c — device allocations and host/device copies.
 *
 * Allocation uses the driver's stream-ordered pool (cuMemAllocAsync on the
 * legacy default stream) where the device has one: it recycles memory
 * without a device-wide synchronisation, and because our streams are
 * blocking, the legacy stream orders a free after all work already queued
 * on the device — the ABI's "free after the queued work". Elsewhere it
 * falls back to cuMemAlloc / cuMemFree. Sizes are remembered per pointer so
 * that a configured memory_limit can be enforced and a free of an unknown
 * pointer is caught.
 */
#include <stdio.h>
#include <stdlib.h>

#include "plugins/cuda/cuda_plugin.h"

typedef struct alloc_node {
  uint64_t ptr, size;
  struct alloc_node *next;
} alloc_node_t;

/* One table for the process: device pointers are unique across contexts
 * (unified virtual addressing), so the key needs no device. */
#define ALLOC_BUCKETS 1024
static alloc_node_t *alloc_table[ALLOC_BUCKETS];
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned bucket_of(uint64_t p) {
  return (unsigned)((p >> 8) * 0x9e3779b97f4a7c15ull >> 54) % ALLOC_BUCKETS;
}

static bool table_add(uint64_t p, uint64_t size) {
  alloc_node_t *n = malloc(sizeof *n);
  if (!n)
    return false;
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
  for (alloc_node_t **pp = &alloc_table[bucket_of(p)]; *pp;
       pp = &(*pp)->next) {
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
static bp_status_t oom(uint64_t size, const char *why) {
  size_t free_b = 0, total_b = 0;
  cuda_drv.cuMemGetInfo(&free_b, &total_b);
  cuda_host->set_error("cuda: out of memory: %s %llu bytes requested, "
                       "%llu bytes free of %llu",
                       why, (unsigned long long)size,
                       (unsigned long long)free_b,
                       (unsigned long long)total_b);
  return BP_ERR_OUT_OF_MEMORY;
}

/* Reserves size bytes of the configured limit; false when over it. */
static bool reserve(cuda_device_t *d, uint64_t size) {
  bool ok = true;
  pthread_mutex_lock(&d->lock);
  if (d->memory_limit && d->memory_used + size > d->memory_limit)
    ok = false;
  else
    d->memory_used += size;
  pthread_mutex_unlock(&d->lock);
  return ok;
}

static void unreserve(cuda_device_t *d, uint64_t size) {
  pthread_mutex_lock(&d->lock);
  d->memory_used -= size <= d->memory_used ? size : d->memory_used;
  pthread_mutex_unlock(&d->lock);
}

static CUresult raw_alloc(cuda_device_t *d, uint64_t size, CUdeviceptr *p) {
  if (d->async_alloc)
    return cuda_drv.cuMemAllocAsync(p, (size_t)size, (CUstream)0);
  return cuda_drv.cuMemAlloc(p, (size_t)size);
}

static CUresult raw_free(cuda_device_t *d, CUdeviceptr p) {
  if (d->async_alloc)
    return cuda_drv.cuMemFreeAsync(p, (CUstream)0);
  return cuda_drv.cuMemFree(p);
}

bp_status_t cuda_mem_alloc(bp_plugin_device_t *device, uint64_t size,
                           uint64_t *out_ptr) {
  *out_ptr = 0;
  cuda_device_t *d = cuda_dev(device);
  if (size > (uint64_t)SIZE_MAX) {
    cuda_host->set_error("cuda: allocation of %llu bytes exceeds size_t",
                         (unsigned long long)size);
    return BP_ERR_OUT_OF_MEMORY;
  }
  bp_status_t st = cuda_legacy_begin(d, "mem_alloc");
  if (st != BP_OK)
    return st;
  if ((st = cuda_ctx_enter(d)) != BP_OK) {
    cuda_legacy_end(d);
    return st;
  }
  CUdeviceptr p = 0;
  if (!reserve(d, size)) {
    st = oom(size, "memory_limit reached;");
    goto out;
  }
  CUresult r = raw_alloc(d, size, &p);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    st = oom(size, d->async_alloc ? "cuMemAllocAsync:" : "cuMemAlloc:");
  } else {
    st = cuda_check(r, d->async_alloc ? "cuMemAllocAsync" : "cuMemAlloc");
  }
  if (st == BP_OK && !table_add(p, size)) {
    raw_free(d, p);
    cuda_host->set_error("cuda: no host memory to track an allocation");
    st = BP_ERR_OUT_OF_MEMORY;
  }
  if (st != BP_OK)
    unreserve(d, size);
  else
    *out_ptr = p;
out:
  cuda_ctx_leave();
  cuda_legacy_end(d);
  return st;
}

void cuda_mem_free(bp_plugin_device_t *device, uint64_t ptr) {
  cuda_device_t *d = cuda_dev(device);
  if (!ptr)
    return;
  if (cuda_legacy_begin(d, "mem_free") != BP_OK) {
    cuda_log(BP_LOG_WARN, "mem_free of 0x%llx during a graph capture on "
             "this thread: leaked", (unsigned long long)ptr);
    return;
  }
  uint64_t size = table_remove(ptr);
  if (!size) {
    cuda_log(BP_LOG_WARN, "mem_free of unknown pointer 0x%llx ignored",
             (unsigned long long)ptr);
    cuda_legacy_end(d);
    return;
  }
  unreserve(d, size);
  if (cuda_ctx_enter(d) == BP_OK) {
    CUresult r = raw_free(d, ptr);
    if (r != CUDA_SUCCESS)
      cuda_log(BP_LOG_WARN, "freeing 0x%llx failed with CUresult %d",
               (unsigned long long)ptr, r);
    cuda_ctx_leave();
  }
  cuda_legacy_end(d);
}

/* Synchronous copies run on the legacy default stream: ordered after the
 * work of every (blocking) stream of the context, as the ABI asks for a
 * NULL stream. A device-to-device copy may return early, so it is waited
 * for. */
bp_status_t cuda_mem_write(bp_plugin_device_t *device,
                           bp_plugin_stream_t *stream, uint64_t dst,
                           uint64_t dst_offset, const void *src,
                           uint64_t size) {
  cuda_device_t *d = cuda_dev(device);
  bp_status_t st = stream ? BP_OK : cuda_legacy_begin(d, "a synchronous copy");
  if (st != BP_OK)
    return st;
  if ((st = cuda_ctx_enter(d)) != BP_OK)
    goto out;
  if (stream)
    st = cuda_check(cuda_drv.cuMemcpyHtoDAsync(dst + dst_offset, src,
                                               (size_t)size,
                                               cuda_stream_of(stream)),
                    "cuMemcpyHtoDAsync");
  else
    st = cuda_check(cuda_drv.cuMemcpyHtoD(dst + dst_offset, src, (size_t)size),
                    "cuMemcpyHtoD");
  cuda_ctx_leave();
out:
  if (!stream)
    cuda_legacy_end(d);
  return st;
}

bp_status_t cuda_mem_read(bp_plugin_device_t *device,
                          bp_plugin_stream_t *stream, void *dst, uint64_t src,
                          uint64_t src_offset, uint64_t size) {
  cuda_device_t *d = cuda_dev(device);
  bp_status_t st = stream ? BP_OK : cuda_legacy_begin(d, "a synchronous copy");
  if (st != BP_OK)
    return st;
  if ((st = cuda_ctx_enter(d)) != BP_OK)
    goto out;
  if (stream)
    st = cuda_check(cuda_drv.cuMemcpyDtoHAsync(dst, src + src_offset,
                                               (size_t)size,
                                               cuda_stream_of(stream)),
                    "cuMemcpyDtoHAsync");
  else
    st = cuda_check(cuda_drv.cuMemcpyDtoH(dst, src + src_offset, (size_t)size),
                    "cuMemcpyDtoH");
  cuda_ctx_leave();
out:
  if (!stream)
    cuda_legacy_end(d);
  return st;
}

bp_status_t cuda_mem_copy(bp_plugin_device_t *device,
                          bp_plugin_stream_t *stream, uint64_t dst,
                          uint64_t dst_offset, uint64_t src,
                          uint64_t src_offset, uint64_t size) {
  cuda_device_t *d = cuda_dev(device);
  bp_status_t st = stream ? BP_OK : cuda_legacy_begin(d, "a synchronous copy");
  if (st != BP_OK)
    return st;
  if ((st = cuda_ctx_enter(d)) != BP_OK)
    goto out;
  if (stream) {
    st = cuda_check(cuda_drv.cuMemcpyDtoDAsync(dst + dst_offset,
                                               src + src_offset, (size_t)size,
                                               cuda_stream_of(stream)),
                    "cuMemcpyDtoDAsync");
  } else {
    st = cuda_check(cuda_drv.cuMemcpyDtoD(dst + dst_offset, src + src_offset,
                                          (size_t)size),
                    "cuMemcpyDtoD");
    if (st == BP_OK)
      st = cuda_check(cuda_drv.cuStreamSynchronize((CUstream)0),
                      "cuStreamSynchronize");
  }
  cuda_ctx_leave();
out:
  if (!stream)
    cuda_legacy_end(d);
  return st;
}

/* Page-locked host memory: the DMA engine copies it without a bounce, and
 * async copies from it really overlap. Portable so any context can use it. */
#define CU_MEMHOSTALLOC_PORTABLE 0x01

bp_status_t cuda_host_alloc(bp_plugin_device_t *device, uint64_t size, void **out_ptr) {
  *out_ptr = NULL;
  cuda_device_t *d = cuda_dev(device);
  if (!cuda_drv.cuMemHostAlloc || !cuda_drv.cuMemFreeHost) {
    cuda_host->set_error("cuda: the driver has no cuMemHostAlloc");
    return BP_ERR_UNSUPPORTED;
  }
  if (size > (uint64_t)SIZE_MAX) return oom(size, "cuMemHostAlloc:");
  bp_status_t st = cuda_legacy_begin(d, "host_alloc");
  if (st != BP_OK) return st;
  if ((st = cuda_ctx_enter(d)) == BP_OK) {
    CUresult r = cuda_drv.cuMemHostAlloc(out_ptr, (size_t)size, CU_MEMHOSTALLOC_PORTABLE);
    st = r == CUDA_ERROR_OUT_OF_MEMORY ? oom(size, "cuMemHostAlloc:") : cuda_check(r, "cuMemHostAlloc");
    cuda_ctx_leave();
  }
  cuda_legacy_end(d);
  return st;
}

void cuda_host_free(bp_plugin_device_t *device, void *ptr) {
  cuda_device_t *d = cuda_dev(device);
  if (!ptr || cuda_legacy_begin(d, "host_free") != BP_OK) return;
  if (cuda_ctx_enter(d) == BP_OK) {
    cuda_drv.cuMemFreeHost(ptr);
    cuda_ctx_leave();
  }
  cuda_legacy_end(d);
}
