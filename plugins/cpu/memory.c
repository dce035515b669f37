/*
 * memory.c — device memory of the CPU devices: host memory, 64-byte
 * aligned, handed out as the address cast to uint64_t.
 *
 * Each block carries a 64-byte header in front holding its size, so free
 * can return the bytes to the device's memory_limit budget and the pointer
 * the caller sees stays 64-byte aligned. Accounting is a lock-free
 * reserve-then-allocate on memory_used.
 *
 * Blocks of CPU_MEM_HUGE_MIN bytes and more start on a 2 MiB boundary and
 * are marked for transparent huge pages (madvise MADV_HUGEPAGE; Debian's
 * default THP mode, "madvise", gives them only to regions that ask). A
 * row-wise op over a large tensor otherwise takes a TLB miss every 4 KiB,
 * which the streaming kernels feel (docs/performance.md has the figure).
 * Where THP is off, madvise fails harmlessly and
 * the block is an ordinary one.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "plugins/cpu/fast/prepared.h"
#include "plugin.h"

#define CPU_MEM_ALIGN 64u
#define CPU_MEM_HEADER 64u
#define CPU_MEM_HUGE_MIN (4ull << 20)
#define CPU_MEM_HUGE_ALIGN (2ull << 20)

static void *host_ptr(uint64_t p, uint64_t offset) {
  return (char *)(uintptr_t)p + offset;
}

/* Reserves size bytes of the device's budget; false when it would exceed
 * the limit (available is then what is left). */
static bool budget_reserve(cpu_device_t *dev, uint64_t size,
                           uint64_t *available) {
  uint64_t used = __atomic_load_n(&dev->memory_used, __ATOMIC_RELAXED);
  for (;;) {
    if (dev->memory_limit &&
        (used > dev->memory_limit || size > dev->memory_limit - used)) {
      *available = used > dev->memory_limit ? 0 : dev->memory_limit - used;
      return false;
    }
    if (__atomic_compare_exchange_n(&dev->memory_used, &used, used + size, true,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return true;
  }
}

static void budget_release(cpu_device_t *dev, uint64_t size) {
  __atomic_fetch_sub(&dev->memory_used, size, __ATOMIC_RELAXED);
}

bp_status_t cpu_mem_alloc(bp_plugin_device_t *device, uint64_t size,
                          uint64_t *out_ptr) {
  cpu_device_t *dev = cpu_device(device);
  if (!out_ptr)
    return BP_ERR_INVALID_ARGUMENT;
  *out_ptr = 0;
  if (!dev || size == 0)
    return BP_ERR_INVALID_ARGUMENT;
  uint64_t available = 0;
  if (!budget_reserve(dev, size, &available)) {
    cpu_set_error("cpu: cannot allocate %llu bytes: the device's memory "
                  "limit leaves %llu of %llu bytes available",
                  (unsigned long long)size, (unsigned long long)available,
                  (unsigned long long)dev->memory_limit);
    return BP_ERR_OUT_OF_MEMORY;
  }
  void *block = NULL;
  bool huge = size >= CPU_MEM_HUGE_MIN;
  /* a huge block is whole huge pages, so its last bytes are on one too */
  uint64_t bytes = huge ? (size + CPU_MEM_HEADER + CPU_MEM_HUGE_ALIGN - 1) &
                              ~(CPU_MEM_HUGE_ALIGN - 1)
                        : size + CPU_MEM_HEADER;
  if (size > SIZE_MAX - CPU_MEM_HUGE_ALIGN - CPU_MEM_HEADER ||
      posix_memalign(&block, huge ? CPU_MEM_HUGE_ALIGN : CPU_MEM_ALIGN,
                     (size_t)bytes)) {
    budget_release(dev, size);
    cpu_set_error("cpu: out of host memory allocating %llu bytes",
                  (unsigned long long)size);
    return BP_ERR_OUT_OF_MEMORY;
  }
  if (huge) (void)madvise(block, (size_t)bytes, MADV_HUGEPAGE);
  memcpy(block, &size, sizeof size);
  *out_ptr = (uint64_t)(uintptr_t)((char *)block + CPU_MEM_HEADER);
  return BP_OK;
}

void cpu_mem_free(bp_plugin_device_t *device, uint64_t ptr) {
  cpu_device_t *dev = cpu_device(device);
  if (!ptr)
    return;
  cpu_prep_forget_alloc(ptr); /* constant weights' packed forms */
  char *block = (char *)(uintptr_t)ptr - CPU_MEM_HEADER;
  uint64_t size;
  memcpy(&size, block, sizeof size);
  if (dev)
    budget_release(dev, size);
  free(block);
}

/* Copies run at call time: with no queue, "ordered on the stream" and
 * "synchronous" are the same thing, and the host buffer may be reused as
 * soon as the call returns. */
bp_status_t cpu_mem_write(bp_plugin_device_t *device,
                          bp_plugin_stream_t *stream, uint64_t dst,
                          uint64_t dst_offset, const void *src, uint64_t size) {
  (void)device;
  (void)stream;
  if (size)
    memcpy(host_ptr(dst, dst_offset), src, (size_t)size);
  return BP_OK;
}

bp_status_t cpu_mem_read(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                         void *dst, uint64_t src, uint64_t src_offset,
                         uint64_t size) {
  (void)device;
  (void)stream;
  if (size)
    memcpy(dst, host_ptr(src, src_offset), (size_t)size);
  return BP_OK;
}

bp_status_t cpu_mem_copy(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                         uint64_t dst, uint64_t dst_offset, uint64_t src,
                         uint64_t src_offset, uint64_t size) {
  (void)device;
  (void)stream;
  /* memmove: the core allows a copy within one buffer. */
  if (size)
    memmove(host_ptr(dst, dst_offset), host_ptr(src, src_offset), (size_t)size);
  return BP_OK;
}
