/*
 * memory.c — the cuda backend's allocations and copies: the shared code of
 * plugins/common/gpu_memory.inc under this plugin's names, and pinned host
 * memory.
 *
 * Allocation uses the driver's stream-ordered pool (cuMemAllocAsync on the
 * legacy default stream) where the device has one: it recycles memory
 * without a device-wide synchronisation, and because our streams are
 * blocking, the legacy stream orders a free after all work already queued
 * on the device — the ABI's "free after the queued work". Elsewhere it
 * falls back to cuMemAlloc / cuMemFree.
 */
#include "plugins/cuda/cuda_plugin.h"

#define GPU(x) cuda_##x
#define GPU_NAME "cuda"
#define GPU_API "cu"
#define GPU_ENTER(d) cuda_ctx_enter(d)
#define GPU_LEAVE() cuda_ctx_leave()
#define GPU_MEM_INFO(f, t) cuda_drv.cuMemGetInfo(f, t)
#define GPU_ERROR_OUT_OF_MEMORY CUDA_ERROR_OUT_OF_MEMORY
#define GPU_ALLOC(d, size, p) raw_alloc(d, size, p)
#define GPU_ALLOC_NAME(d) ((d)->async_alloc ? "cuMemAllocAsync" : "cuMemAlloc")
#define GPU_FREE(d, p) raw_free(d, p)
#define GPU_HTOD(dst, src, n) cuda_drv.cuMemcpyHtoD(dst, src, (size_t)(n))
#define GPU_DTOH(dst, src, n) cuda_drv.cuMemcpyDtoH(dst, src, (size_t)(n))
#define GPU_DTOD(dst, src, n) cuda_drv.cuMemcpyDtoD(dst, src, (size_t)(n))
#define GPU_HTOD_ASYNC(dst, src, n, s)                                         \
  cuda_drv.cuMemcpyHtoDAsync(dst, src, (size_t)(n), s)
#define GPU_DTOH_ASYNC(dst, src, n, s)                                         \
  cuda_drv.cuMemcpyDtoHAsync(dst, src, (size_t)(n), s)
#define GPU_DTOD_ASYNC(dst, src, n, s)                                         \
  cuda_drv.cuMemcpyDtoDAsync(dst, src, (size_t)(n), s)
#define GPU_SYNC_NULL_STREAM() cuda_drv.cuStreamSynchronize((CUstream)0)

static CUresult raw_alloc(cuda_device_t *d, uint64_t size, uint64_t *p) {
  CUdeviceptr ptr = 0;
  CUresult r = d->async_alloc
                   ? cuda_drv.cuMemAllocAsync(&ptr, (size_t)size, (CUstream)0)
                   : cuda_drv.cuMemAlloc(&ptr, (size_t)size);
  *p = ptr;
  return r;
}

static CUresult raw_free(cuda_device_t *d, uint64_t p) {
  if (d->async_alloc)
    return cuda_drv.cuMemFreeAsync(p, (CUstream)0);
  return cuda_drv.cuMemFree(p);
}

#include "plugins/common/gpu_memory.inc"

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
