/*
 * memory.c — pinned host memory, which only the CUDA backend has (the
 * descriptor's host_alloc / host_free, through
 * GPU_VENDOR_DESCRIPTOR_ENTRIES). Device memory and copies are
 * plugins/gpu/memory.c.
 */
#include <stdint.h>

#include "plugins/gpu/gpu.h"

/* Page-locked host memory: the DMA engine copies it without a bounce, and
 * async copies from it really overlap. Portable so any context can use it. */
#define CU_MEMHOSTALLOC_PORTABLE 0x01

bp_status_t cuda_host_alloc(bp_plugin_device_t *device, uint64_t size, void **out_ptr) {
  *out_ptr = NULL;
  gpu_device_t *d = gpu_dev(device);
  if (!cuda_drv.cuMemHostAlloc || !cuda_drv.cuMemFreeHost) {
    gpu_host->set_error("cuda: the driver has no cuMemHostAlloc");
    return BP_ERR_UNSUPPORTED;
  }
  if (size > (uint64_t)SIZE_MAX) return gpu_oom(size, "cuMemHostAlloc:");
  bp_status_t st = gpu_legacy_begin(d, "host_alloc");
  if (st != BP_OK) return st;
  if ((st = gpu_device_enter(d)) == BP_OK) {
    CUresult r = cuda_drv.cuMemHostAlloc(out_ptr, (size_t)size, CU_MEMHOSTALLOC_PORTABLE);
    st = r == CUDA_ERROR_OUT_OF_MEMORY ? gpu_oom(size, "cuMemHostAlloc:")
                                       : gpu_check(r, "cuMemHostAlloc");
    gpu_device_leave();
  }
  gpu_legacy_end(d);
  return st;
}

void cuda_host_free(bp_plugin_device_t *device, void *ptr) {
  gpu_device_t *d = gpu_dev(device);
  if (!ptr || gpu_legacy_begin(d, "host_free") != BP_OK) return;
  if (gpu_device_enter(d) == BP_OK) {
    cuda_drv.cuMemFreeHost(ptr);
    gpu_device_leave();
  }
  gpu_legacy_end(d);
}
