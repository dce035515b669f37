/*
 * memory.c — the rocm backend's allocations and copies: the shared code of
 * plugins/common/gpu_memory.inc under this plugin's names.
 *
 * hipMalloc / hipFree. hipFree waits for the device's queued work before it
 * frees, which is the ABI's "free after the queued work". HIP's copy
 * prototypes take non-const sources; they are only read.
 */
#include "plugins/rocm/rocm_plugin.h"

#define GPU(x) rocm_##x
#define GPU_NAME "rocm"
#define GPU_API "hip"
#define GPU_ENTER(d) rocm_enter(d)
#define GPU_LEAVE() ((void)0) /* HIP keeps the device current */
#define GPU_MEM_INFO(f, t) rocm_rt.hipMemGetInfo(f, t)
#define GPU_ERROR_OUT_OF_MEMORY hipErrorOutOfMemory
#define GPU_ALLOC(d, size, p) raw_alloc(size, p)
#define GPU_ALLOC_NAME(d) "hipMalloc"
#define GPU_FREE(d, p) rocm_rt.hipFree(hptr(p))
#define GPU_HTOD(dst, src, n)                                                  \
  rocm_rt.hipMemcpyHtoD(hptr(dst), (void *)(uintptr_t)(src), (size_t)(n))
#define GPU_DTOH(dst, src, n)                                                  \
  rocm_rt.hipMemcpyDtoH(dst, hptr(src), (size_t)(n))
#define GPU_DTOD(dst, src, n)                                                  \
  rocm_rt.hipMemcpyDtoD(hptr(dst), hptr(src), (size_t)(n))
#define GPU_HTOD_ASYNC(dst, src, n, s)                                         \
  rocm_rt.hipMemcpyHtoDAsync(hptr(dst), (void *)(uintptr_t)(src),             \
                             (size_t)(n), s)
#define GPU_DTOH_ASYNC(dst, src, n, s)                                         \
  rocm_rt.hipMemcpyDtoHAsync(dst, hptr(src), (size_t)(n), s)
#define GPU_DTOD_ASYNC(dst, src, n, s)                                         \
  rocm_rt.hipMemcpyDtoDAsync(hptr(dst), hptr(src), (size_t)(n), s)
#define GPU_SYNC_NULL_STREAM() rocm_rt.hipStreamSynchronize((hipStream_t)0)

static void *hptr(uint64_t p) {
  return (void *)(uintptr_t)p;
}

static hipError_t raw_alloc(uint64_t size, uint64_t *p) {
  void *ptr = NULL;
  hipError_t r = rocm_rt.hipMalloc(&ptr, (size_t)size);
  *p = (uint64_t)(uintptr_t)ptr;
  return r;
}

#include "plugins/common/gpu_memory.inc"
