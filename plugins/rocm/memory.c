/*
 * memory.c — device allocations and host/device copies.
 *
 * hipMalloc / hipFree. hipFree waits for the device's queued work before it
 * frees, which is the ABI's "free after the queued work". Sizes are
 * remembered per pointer so that a configured memory_limit can be enforced
 * and a free of an unknown pointer is caught.
 */
#include <stdio.h>
#include <stdlib.h>

#include "plugins/rocm/rocm_plugin.h"

typedef struct alloc_node {
  uint64_t ptr, size;
  struct alloc_node *next;
} alloc_node_t;

/* One table for the process: device pointers are unique across devices
 * (HIP's unified virtual addressing), so the key needs no device. */
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
  rocm_rt.hipMemGetInfo(&free_b, &total_b);
  rocm_host->set_error("rocm: out of memory: %s %llu bytes requested, "
                       "%llu bytes free of %llu",
                       why, (unsigned long long)size,
                       (unsigned long long)free_b,
                       (unsigned long long)total_b);
  return BP_ERR_OUT_OF_MEMORY;
}

/* Reserves size bytes of the configured limit; false when over it. */
static bool reserve(rocm_device_t *d, uint64_t size) {
  bool ok = true;
  pthread_mutex_lock(&d->lock);
  if (d->memory_limit && d->memory_used + size > d->memory_limit)
    ok = false;
  else
    d->memory_used += size;
  pthread_mutex_unlock(&d->lock);
  return ok;
}

static void unreserve(rocm_device_t *d, uint64_t size) {
  pthread_mutex_lock(&d->lock);
  d->memory_used -= size <= d->memory_used ? size : d->memory_used;
  pthread_mutex_unlock(&d->lock);
}

static bp_status_t mem_alloc_now(bp_plugin_device_t *device, uint64_t size,
                           uint64_t *out_ptr) {
  *out_ptr = 0;
  rocm_device_t *d = rocm_dev(device);
  if (size > (uint64_t)SIZE_MAX) {
    rocm_host->set_error("rocm: allocation of %llu bytes exceeds size_t",
                         (unsigned long long)size);
    return BP_ERR_OUT_OF_MEMORY;
  }
  bp_status_t st = rocm_enter(d);
  if (st != BP_OK)
    return st;
  if (!reserve(d, size))
    return oom(size, "memory_limit reached;");
  void *p = NULL;
  hipError_t r = rocm_rt.hipMalloc(&p, (size_t)size);
  if (r == hipErrorOutOfMemory)
    st = oom(size, "hipMalloc:");
  else
    st = rocm_check(r, "hipMalloc");
  if (st == BP_OK && !table_add((uint64_t)(uintptr_t)p, size)) {
    rocm_rt.hipFree(p);
    rocm_host->set_error("rocm: no host memory to track an allocation");
    st = BP_ERR_OUT_OF_MEMORY;
  }
  if (st != BP_OK)
    unreserve(d, size);
  else
    *out_ptr = (uint64_t)(uintptr_t)p;
  return st;
}

static void mem_free_now(bp_plugin_device_t *device, uint64_t ptr) {
  rocm_device_t *d = rocm_dev(device);
  if (!ptr)
    return;
  uint64_t size = table_remove(ptr);
  if (!size) {
    rocm_log(BP_LOG_WARN, "mem_free of unknown pointer 0x%llx ignored",
             (unsigned long long)ptr);
    return;
  }
  unreserve(d, size);
  if (rocm_enter(d) != BP_OK)
    return;
  hipError_t r = rocm_rt.hipFree((void *)(uintptr_t)ptr);
  if (r != hipSuccess)
    rocm_log(BP_LOG_WARN, "freeing 0x%llx failed with hipError_t %d",
             (unsigned long long)ptr, r);
}

static hipDeviceptr_t dptr(uint64_t p, uint64_t offset) {
  return (hipDeviceptr_t)(uintptr_t)(p + offset);
}

/* Synchronous copies run on the null stream: ordered after the work of
 * every blocking stream of the device, as the ABI asks for a NULL stream.
 * The hipMemcpy*-without-Async calls return when the copy is done. */
static bp_status_t mem_write_now(bp_plugin_device_t *device,
                           bp_plugin_stream_t *stream, uint64_t dst,
                           uint64_t dst_offset, const void *src,
                           uint64_t size) {
  bp_status_t st = rocm_enter(rocm_dev(device));
  if (st != BP_OK)
    return st;
  /* HIP's prototypes take a non-const source; it is only read. */
  void *host = (void *)(uintptr_t)src;
  if (stream)
    return rocm_check(rocm_rt.hipMemcpyHtoDAsync(dptr(dst, dst_offset), host,
                                                 (size_t)size,
                                                 rocm_stream_of(stream)),
                      "hipMemcpyHtoDAsync");
  return rocm_check(
      rocm_rt.hipMemcpyHtoD(dptr(dst, dst_offset), host, (size_t)size),
      "hipMemcpyHtoD");
}

static bp_status_t mem_read_now(bp_plugin_device_t *device,
                          bp_plugin_stream_t *stream, void *dst, uint64_t src,
                          uint64_t src_offset, uint64_t size) {
  bp_status_t st = rocm_enter(rocm_dev(device));
  if (st != BP_OK)
    return st;
  if (stream)
    return rocm_check(rocm_rt.hipMemcpyDtoHAsync(dst, dptr(src, src_offset),
                                                 (size_t)size,
                                                 rocm_stream_of(stream)),
                      "hipMemcpyDtoHAsync");
  return rocm_check(
      rocm_rt.hipMemcpyDtoH(dst, dptr(src, src_offset), (size_t)size),
      "hipMemcpyDtoH");
}

static bp_status_t mem_copy_now(bp_plugin_device_t *device,
                          bp_plugin_stream_t *stream, uint64_t dst,
                          uint64_t dst_offset, uint64_t src,
                          uint64_t src_offset, uint64_t size) {
  bp_status_t st = rocm_enter(rocm_dev(device));
  if (st != BP_OK)
    return st;
  if (stream)
    return rocm_check(rocm_rt.hipMemcpyDtoDAsync(dptr(dst, dst_offset),
                                                 dptr(src, src_offset),
                                                 (size_t)size,
                                                 rocm_stream_of(stream)),
                      "hipMemcpyDtoDAsync");
  st = rocm_check(rocm_rt.hipMemcpyDtoD(dptr(dst, dst_offset),
                                        dptr(src, src_offset), (size_t)size),
                  "hipMemcpyDtoD");
  /* A device-to-device copy may return before it is done. */
  if (st == BP_OK)
    st = rocm_check(rocm_rt.hipStreamSynchronize((hipStream_t)0),
                    "hipStreamSynchronize");
  return st;
}

/* The entry points: null-stream work (allocation, hipFree's wait, the
 * synchronous copies) must not run while a blocking stream captures. */
bp_status_t rocm_mem_alloc(bp_plugin_device_t *device, uint64_t size,
                           uint64_t *out_ptr) {
  *out_ptr = 0;
  rocm_device_t *d = rocm_dev(device);
  bp_status_t st = rocm_legacy_begin(d, "mem_alloc");
  if (st != BP_OK)
    return st;
  st = mem_alloc_now(device, size, out_ptr);
  rocm_legacy_end(d);
  return st;
}

void rocm_mem_free(bp_plugin_device_t *device, uint64_t ptr) {
  rocm_device_t *d = rocm_dev(device);
  if (!ptr)
    return;
  if (rocm_legacy_begin(d, "mem_free") != BP_OK) {
    rocm_log(BP_LOG_WARN, "mem_free of 0x%llx during a graph capture on "
             "this thread: leaked", (unsigned long long)ptr);
    return;
  }
  mem_free_now(device, ptr);
  rocm_legacy_end(d);
}

bp_status_t rocm_mem_write(bp_plugin_device_t *device,
                           bp_plugin_stream_t *stream, uint64_t dst,
                           uint64_t dst_offset, const void *src,
                           uint64_t size) {
  rocm_device_t *d = rocm_dev(device);
  if (stream)
    return mem_write_now(device, stream, dst, dst_offset, src, size);
  bp_status_t st = rocm_legacy_begin(d, "a synchronous copy");
  if (st != BP_OK)
    return st;
  st = mem_write_now(device, stream, dst, dst_offset, src, size);
  rocm_legacy_end(d);
  return st;
}

bp_status_t rocm_mem_read(bp_plugin_device_t *device,
                          bp_plugin_stream_t *stream, void *dst, uint64_t src,
                          uint64_t src_offset, uint64_t size) {
  rocm_device_t *d = rocm_dev(device);
  if (stream)
    return mem_read_now(device, stream, dst, src, src_offset, size);
  bp_status_t st = rocm_legacy_begin(d, "a synchronous copy");
  if (st != BP_OK)
    return st;
  st = mem_read_now(device, stream, dst, src, src_offset, size);
  rocm_legacy_end(d);
  return st;
}

bp_status_t rocm_mem_copy(bp_plugin_device_t *device,
                          bp_plugin_stream_t *stream, uint64_t dst,
                          uint64_t dst_offset, uint64_t src,
                          uint64_t src_offset, uint64_t size) {
  rocm_device_t *d = rocm_dev(device);
  if (stream)
    return mem_copy_now(device, stream, dst, dst_offset, src, src_offset, size);
  bp_status_t st = rocm_legacy_begin(d, "a synchronous copy");
  if (st != BP_OK)
    return st;
  st = mem_copy_now(device, stream, dst, dst_offset, src, src_offset, size);
  rocm_legacy_end(d);
  return st;
}
