/*
 * plugins/gpu/vendors/cuda.h — the neutral names of the .c files of plugins/gpu mapped
 * onto the CUDA driver API and cuBLAS, for backend-cuda.so (included by
 * plugins/gpu/gpu.h when BP_GPU_CUDA is defined). Its twin for HIP and
 * rocBLAS is vendors/hip.h; ggml's src/ggml-cuda/vendors/hip.h is the
 * model. Only names and argument shapes are mapped here: what differs in
 * behaviour lives in plugins/cuda under real names.
 *
 * The driver is reached through the function table cuda_drv (dlsym'd by
 * plugins/gpu/driver.c from CUDA_DRIVER_ENTRY_POINTS); cuBLAS through
 * gpu_blas_lib (plugins/gpu/blas.c, from CUBLAS_ENTRY_POINTS).
 */
#ifndef BACKPLANE_GPU_VENDORS_CUDA_H
#define BACKPLANE_GPU_VENDORS_CUDA_H

#include "plugins/cuda/cublas_api.h"
#include "plugins/cuda/cuda_driver.h"

#define GPU_PLUGIN_NAME "cuda"
#define GPU_PLUGIN_VERSION "0.1.0"
#define GPU_PLUGIN_DESCRIPTION "NVIDIA GPUs through the CUDA driver API (PTX kernels)"
#define GPU_API "cu"          /* the prefix of API names in messages */
#define GPU_MODULE_EXT ".ptx" /* of a built-in module, in messages */
#define GPU_LAUNCH_NAME "cuLaunchKernel"

/* The PTX targets compute_80: older GPUs are listed but claim no ops. */
#define CUDA_MIN_CC_MAJOR 8

/* The primary context is retained while a device is open. */
#define GPU_VENDOR_DEVICE_FIELDS                                                                   \
  CUdevice dev;                                                                                    \
  CUcontext ctx;                                                                                   \
  int cc_major, cc_minor;                                                                          \
  int smem_optin;   /* max dynamic shared memory per block, opt-in */                              \
  bool async_alloc; /* cuMemAllocAsync usable on this device */                                    \
  bool allow_tf32;

/* Descriptor entries only this vendor has: pinned host memory. */
#define GPU_VENDOR_DESCRIPTOR_ENTRIES .host_alloc = cuda_host_alloc, .host_free = cuda_host_free,

/* ---- types -------------------------------------------------------------- */
typedef CUresult gpuError_t;
typedef CUstream gpuStream_t;
typedef CUevent gpuEvent_t;
typedef CUmodule gpuModule_t;
typedef CUfunction gpuFunction_t;
typedef CUgraph gpuGraph_t;
typedef CUgraphExec gpuGraphExec_t;
#define gpuSuccess CUDA_SUCCESS
#define gpuErrorOutOfMemory CUDA_ERROR_OUT_OF_MEMORY
#define gpuUnknownErrorName "CUDA_ERROR_UNKNOWN"

/* ---- the driver library (plugins/gpu/driver.c) -------------------------- */
GPU_HIDDEN extern cuda_driver_t cuda_drv;
#define GPU_DRIVER_TABLE cuda_drv
#define GPU_DRIVER_ENTRY_POINTS(X) CUDA_DRIVER_ENTRY_POINTS(X)
#define GPU_DRIVER_OPTIONAL_ENTRY_POINTS(X) CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(X)
#define GPU_DRIVER_WHAT "driver"
#define GPU_DRIVER_VENDOR "CUDA"
#define GPU_DRIVER_TOO_OLD "driver too old"
#define gpuInit() cuda_drv.cuInit(0)

/* ---- devices ------------------------------------------------------------ */
#define gpuDeviceSynchronize() cuda_drv.cuCtxSynchronize()
#define GPU_DEVICE_SYNCHRONIZE_NAME "cuCtxSynchronize"

/* ---- memory ------------------------------------------------------------- */
#define gpuMemGetInfo(free_b, total_b) cuda_drv.cuMemGetInfo(free_b, total_b)
/* Allocation on the stream-ordered pool (cuMemAllocAsync on the legacy
 * stream) where the device has one, see plugins/gpu/memory.c. */
#define gpuMallocName(d) ((d)->async_alloc ? "cuMemAllocAsync" : "cuMemAlloc")
#define gpuMalloc(d, p, n)                                                                         \
  ((d)->async_alloc ? cuda_drv.cuMemAllocAsync(p, n, (CUstream)0) : cuda_drv.cuMemAlloc(p, n))
#define gpuFree(d, p)                                                                              \
  ((d)->async_alloc ? cuda_drv.cuMemFreeAsync(p, (CUstream)0) : cuda_drv.cuMemFree(p))
/* Plain (not stream-ordered) allocation, for library workspaces. */
#define gpuMallocPlain(p, n) cuda_drv.cuMemAlloc(p, n)
#define gpuFreePlain(p) cuda_drv.cuMemFree(p)
#define gpuMemcpyHtoD(dst, src, n) cuda_drv.cuMemcpyHtoD(dst, src, n)
#define gpuMemcpyDtoH(dst, src, n) cuda_drv.cuMemcpyDtoH(dst, src, n)
#define gpuMemcpyDtoD(dst, src, n) cuda_drv.cuMemcpyDtoD(dst, src, n)
#define gpuMemcpyHtoDAsync(dst, src, n, s) cuda_drv.cuMemcpyHtoDAsync(dst, src, n, s)
#define gpuMemcpyDtoHAsync(dst, src, n, s) cuda_drv.cuMemcpyDtoHAsync(dst, src, n, s)
#define gpuMemcpyDtoDAsync(dst, src, n, s) cuda_drv.cuMemcpyDtoDAsync(dst, src, n, s)

/* ---- streams and events (blocking streams: see plugins/gpu/stream.c) ---- */
#define gpuStreamCreate(ps) cuda_drv.cuStreamCreate(ps, CU_STREAM_DEFAULT)
#define gpuStreamDestroy(s) cuda_drv.cuStreamDestroy(s)
#define gpuStreamSynchronize(s) cuda_drv.cuStreamSynchronize(s)
#define gpuEventCreate(pe) cuda_drv.cuEventCreate(pe, CU_EVENT_DEFAULT)
#define gpuEventDestroy(e) cuda_drv.cuEventDestroy(e)
#define gpuEventRecord(e, s) cuda_drv.cuEventRecord(e, s)
#define gpuStreamWaitEvent(s, e) cuda_drv.cuStreamWaitEvent(s, e, 0)
#define gpuEventSynchronize(e) cuda_drv.cuEventSynchronize(e)
#define gpuEventElapsedTime(ms, a, b) cuda_drv.cuEventElapsedTime(ms, a, b)

/* ---- graphs ------------------------------------------------------------- */
#define gpuHaveGraphs()                                                                            \
  (cuda_drv.cuStreamBeginCapture && cuda_drv.cuStreamEndCapture &&                                 \
   (cuda_drv.cuGraphInstantiateWithFlags || cuda_drv.cuGraphInstantiate) &&                        \
   cuda_drv.cuGraphLaunch && cuda_drv.cuGraphExecDestroy && cuda_drv.cuGraphDestroy)
#define gpuStreamBeginCaptureThreadLocal(s)                                                        \
  cuda_drv.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
#define gpuStreamEndCapture(s, pg) cuda_drv.cuStreamEndCapture(s, pg)
#define gpuGraphLaunch(e, s) cuda_drv.cuGraphLaunch(e, s)
#define gpuGraphExecDestroy(e) cuda_drv.cuGraphExecDestroy(e)
#define gpuGraphDestroy(g) cuda_drv.cuGraphDestroy(g)
#define gpuStreamCaptureModeRelaxed CU_STREAM_CAPTURE_MODE_RELAXED
#define gpuThreadExchangeStreamCaptureMode(m)                                                      \
  (cuda_drv.cuThreadExchangeStreamCaptureMode ? cuda_drv.cuThreadExchangeStreamCaptureMode(m)      \
                                              : CUDA_SUCCESS)

/* cuGraphInstantiateWithFlags came with 11.4; before it, the _v2 of 11.0
 * (whose error log is kept for the message). */
static inline CUresult gpuGraphInstantiate(CUgraphExec *e, CUgraph g, char *log, size_t n) {
  if (cuda_drv.cuGraphInstantiateWithFlags && cuda_drv.version >= 11040)
    return cuda_drv.cuGraphInstantiateWithFlags(e, g, 0);
  if (!cuda_drv.cuGraphInstantiate) return CUDA_ERROR_NOT_SUPPORTED;
  return cuda_drv.cuGraphInstantiate(e, g, NULL, log, n);
}

/* ---- modules and launches ----------------------------------------------- */
#define GPU_KERNEL_FORMAT BP_KERNEL_PTX /* what custom kernels are written in */
#define GPU_KERNEL_FORMAT_NAME "PTX"
#define gpuModuleGetFunction(pf, mod, name) cuda_drv.cuModuleGetFunction(pf, mod, name)
#define gpuModuleUnload(mod) cuda_drv.cuModuleUnload(mod)
#define gpuModuleLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, params)                          \
  cuda_drv.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, params, NULL)

/* ---- the vendor BLAS: cuBLAS (plugins/gpu/blas.c) ----------------------- */
typedef cublasStatus_t gpublasStatus_t;
typedef cublasHandle_t gpublasHandle_t;
#define GPUBLAS_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define GPUBLAS_OP_N CUBLAS_OP_N
#define GPUBLAS_OP_T CUBLAS_OP_T
#define GPU_BLAS_NAME "cuBLAS"
#define GPU_BLAS_CHOICE_ENV "BACKPLANE_CUDA_BLAS" /* 0 own, 1 vendor */
/* conv2d: 0 the direct kernel, 1 GEMMs wherever the layout allows, unset by size */
#define GPU_CONV_CHOICE_ENV "BACKPLANE_CUDA_CONV"
/* conv2d: the most scratch memory (bytes) its patch matrices take per stream */
#define GPU_CONV_SCRATCH_ENV "BACKPLANE_CUDA_CONV_SCRATCH"
#define GPU_BLAS_LIBRARY_ENV "BACKPLANE_CUBLAS"   /* the file to open */
#define GPU_BLAS_LIBRARY_NAMES                                                                     \
  { "libcublas.so.13", "libcublas.so.12", "libcublas.so.11" }
#define GPU_BLAS_LIBRARY_MISSING "libcublas.so.13/.12/.11 not found"
#define GPU_BLAS_ENTRY_POINTS(X) CUBLAS_ENTRY_POINTS(X)
#define GPU_BLAS_OPTIONAL_ENTRY_POINTS(X) CUBLAS_OPTIONAL_ENTRY_POINTS(X)
#define GPU_BLAS_CREATE_NAME "cublasCreate"
/* cublasSetStream resets the workspace, so it is set again on every call;
 * 4 MiB, 32 MiB from sm_90 (NVIDIA's recommendation). */
#define GPU_BLAS_WORKSPACE_PER_CALL 1
#define gpublasWorkspaceSize(d) ((size_t)((d)->cc_major >= 9 ? 32 : 4) << 20)
#define gpublasCreate(ph) gpu_blas_lib.cublasCreate(ph)
#define gpublasDestroy(h) gpu_blas_lib.cublasDestroy(h)
#define gpublasSetStream(h, s) gpu_blas_lib.cublasSetStream(h, s)
#define gpublasHaveSetWorkspace() (gpu_blas_lib.cublasSetWorkspace != NULL)
#define gpublasSetWorkspace(h, p, n) gpu_blas_lib.cublasSetWorkspace(h, p, n)
#define gpublasSgemmStridedBatched gpu_blas_lib.cublasSgemmStridedBatched
#define gpublasDgemmStridedBatched gpu_blas_lib.cublasDgemmStridedBatched
/* The library's version once loaded: cuBLAS tells it per handle. */
#define gpublasLibraryVersion(buf, n) snprintf(buf, n, "0")
#define gpublasHandleVersion(h, buf, n)                                                            \
  do {                                                                                             \
    int v_ = 0;                                                                                    \
    if (gpu_blas_lib.cublasGetVersion(h, &v_) == CUBLAS_STATUS_SUCCESS)                            \
      snprintf(buf, n, "%d", v_);                                                                  \
  } while (0)
/* f16 / bf16 storage, f32 accumulation (alpha and beta in f32). */
#define gpublasGemmStridedBatchedHalf(h, ta, tb, c, alpha, beta)                                   \
  gpu_blas_lib.cublasGemmStridedBatchedEx(                                                         \
      h, ta, tb, (c)->m, (c)->n, (c)->k, alpha, (const void *)(uintptr_t)(c)->a,                   \
      (c)->dtype == BP_F16 ? CUDA_R_16F : CUDA_R_16BF, (c)->lda, (c)->stride_a,                    \
      (const void *)(uintptr_t)(c)->b, (c)->dtype == BP_F16 ? CUDA_R_16F : CUDA_R_16BF, (c)->ldb,  \
      (c)->stride_b, beta, (void *)(uintptr_t)(c)->c,                                              \
      (c)->dtype == BP_F16 ? CUDA_R_16F : CUDA_R_16BF, (c)->ldc, (c)->stride_c, (c)->batch,        \
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)

/* ---- CUDA only (plugins/cuda/) ------------------------------------------ */
/* kernels.c: the driver version (cuDriverGetVersion form) the embedded
 * PTX's ISA version needs, from its ".version" line; 0 when unknown. */
GPU_HIDDEN int cuda_ptx_required_driver(int *out_isa_major, int *out_isa_minor);
/* memory.c: page-locked host memory (descriptor host_alloc / host_free). */
GPU_HIDDEN bp_status_t cuda_host_alloc(bp_plugin_device_t *device, uint64_t size, void **out_ptr);
GPU_HIDDEN void cuda_host_free(bp_plugin_device_t *device, void *ptr);

#endif /* BACKPLANE_GPU_VENDORS_CUDA_H */
