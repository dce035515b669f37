/*
 * plugins/gpu/vendors/hip.h — the neutral names of the .c files of plugins/gpu mapped
 * onto the HIP runtime and rocBLAS, for backend-rocm.so (included by
 * plugins/gpu/gpu.h when BP_GPU_HIP is defined). Its twin for the CUDA
 * driver API and cuBLAS is vendors/cuda.h; ggml's
 * src/ggml-cuda/vendors/hip.h is the model. Only names and argument shapes
 * are mapped here: what differs in behaviour lives in plugins/rocm
 * under real names.
 *
 * The runtime is reached through the function table rocm_rt (dlsym'd by
 * plugins/gpu/driver.c from HIP_RUNTIME_ENTRY_POINTS; hiprtc by
 * plugins/rocm/driver.c); rocBLAS through gpu_blas_lib (plugins/gpu/blas.c,
 * from ROCBLAS_ENTRY_POINTS). HIP has no context stack: entering a device
 * is hipSetDevice, and HIP's copy prototypes take non-const sources and
 * void * device addresses (hence the casts; sources are only read).
 */
#ifndef BACKPLANE_GPU_VENDORS_HIP_H
#define BACKPLANE_GPU_VENDORS_HIP_H

#include "plugins/rocm/hip_runtime.h"
#include "plugins/rocm/rocblas_api.h"

#define GPU_PLUGIN_NAME "rocm"
#define GPU_PLUGIN_VERSION "0.1.0"
#define GPU_PLUGIN_DESCRIPTION "AMD GPUs through the HIP runtime (HIP kernels, hiprtc)"
#define GPU_API "hip"         /* the prefix of API names in messages */
#define GPU_MODULE_EXT ".hip" /* of a built-in module, in messages */
#define GPU_LAUNCH_NAME "hipModuleLaunchKernel"

#define GPU_VENDOR_DEVICE_FIELDS                                                                   \
  char arch[64]; /* gcnArchName, e.g. "gfx90a:sramecc+:xnack-" */                                  \
  int smem_max;  /* shared memory per block */

/* No pinned host memory (host_alloc) yet. */
#define GPU_VENDOR_DESCRIPTOR_ENTRIES

/* ---- types -------------------------------------------------------------- */
typedef hipError_t gpuError_t;
typedef hipStream_t gpuStream_t;
typedef hipEvent_t gpuEvent_t;
typedef hipModule_t gpuModule_t;
typedef hipFunction_t gpuFunction_t;
typedef hipGraph_t gpuGraph_t;
typedef hipGraphExec_t gpuGraphExec_t;
#define gpuSuccess hipSuccess
#define gpuErrorOutOfMemory hipErrorOutOfMemory
#define gpuUnknownErrorName "hipErrorUnknown"

/* ---- the runtime library (plugins/gpu/driver.c) ------------------------- */
GPU_HIDDEN extern hip_runtime_t rocm_rt;
#define GPU_DRIVER_TABLE rocm_rt
#define GPU_DRIVER_ENTRY_POINTS(X) HIP_RUNTIME_ENTRY_POINTS(X)
#define GPU_DRIVER_OPTIONAL_ENTRY_POINTS(X) HIP_RUNTIME_OPTIONAL_ENTRY_POINTS(X)
#define GPU_DRIVER_WHAT "runtime"
#define GPU_DRIVER_VENDOR "ROCm"
#define GPU_DRIVER_TOO_OLD "ROCm too old (5.0 or newer is needed)"
#define gpuInit() rocm_rt.hipInit(0)

/* The gcnArchName of device ordinal into out ("" when unreadable);
 * plugins/rocm/driver.c. */
GPU_HIDDEN void rocm_arch_name(int ordinal, char *out, size_t cap);

/* ---- devices ------------------------------------------------------------ */
#define gpuDeviceSynchronize() rocm_rt.hipDeviceSynchronize()
#define GPU_DEVICE_SYNCHRONIZE_NAME "hipDeviceSynchronize"

/* ---- memory ------------------------------------------------------------- */
static inline void *hip_ptr(uint64_t p) {
  return (void *)(uintptr_t)p;
}

/* hipMalloc / hipFree. hipFree waits for the device's queued work before
 * it frees, which is the ABI's "free after the queued work". */
static inline hipError_t hip_malloc_u64(uint64_t *p, size_t n) {
  void *ptr = NULL;
  hipError_t r = rocm_rt.hipMalloc(&ptr, n);
  *p = (uint64_t)(uintptr_t)ptr;
  return r;
}
#define gpuMemGetInfo(free_b, total_b) rocm_rt.hipMemGetInfo(free_b, total_b)
#define gpuMallocName(d) ((void)(d), "hipMalloc")
#define gpuMalloc(d, p, n) ((void)(d), hip_malloc_u64(p, n))
#define gpuFree(d, p) ((void)(d), rocm_rt.hipFree(hip_ptr(p)))
#define gpuMallocPlain(p, n) hip_malloc_u64(p, n)
#define gpuFreePlain(p) rocm_rt.hipFree(hip_ptr(p))
#define gpuMemcpyHtoD(dst, src, n) rocm_rt.hipMemcpyHtoD(hip_ptr(dst), (void *)(uintptr_t)(src), n)
#define gpuMemcpyDtoH(dst, src, n) rocm_rt.hipMemcpyDtoH(dst, hip_ptr(src), n)
#define gpuMemcpyDtoD(dst, src, n) rocm_rt.hipMemcpyDtoD(hip_ptr(dst), hip_ptr(src), n)
#define gpuMemcpyHtoDAsync(dst, src, n, s)                                                         \
  rocm_rt.hipMemcpyHtoDAsync(hip_ptr(dst), (void *)(uintptr_t)(src), n, s)
#define gpuMemcpyDtoHAsync(dst, src, n, s) rocm_rt.hipMemcpyDtoHAsync(dst, hip_ptr(src), n, s)
#define gpuMemcpyDtoDAsync(dst, src, n, s)                                                         \
  rocm_rt.hipMemcpyDtoDAsync(hip_ptr(dst), hip_ptr(src), n, s)

/* ---- streams and events (hipStreamCreate makes blocking streams) -------- */
#define gpuStreamCreate(ps) rocm_rt.hipStreamCreate(ps)
#define gpuStreamDestroy(s) rocm_rt.hipStreamDestroy(s)
#define gpuStreamSynchronize(s) rocm_rt.hipStreamSynchronize(s)
#define gpuEventCreate(pe) rocm_rt.hipEventCreate(pe)
#define gpuEventDestroy(e) rocm_rt.hipEventDestroy(e)
#define gpuEventRecord(e, s) rocm_rt.hipEventRecord(e, s)
#define gpuStreamWaitEvent(s, e) rocm_rt.hipStreamWaitEvent(s, e, 0)
#define gpuEventSynchronize(e) rocm_rt.hipEventSynchronize(e)
#define gpuEventElapsedTime(ms, a, b) rocm_rt.hipEventElapsedTime(ms, a, b)

/* ---- graphs ------------------------------------------------------------- */
#define gpuHaveGraphs()                                                                            \
  (rocm_rt.hipStreamBeginCapture && rocm_rt.hipStreamEndCapture &&                                 \
   (rocm_rt.hipGraphInstantiateWithFlags || rocm_rt.hipGraphInstantiate) &&                        \
   rocm_rt.hipGraphLaunch && rocm_rt.hipGraphExecDestroy && rocm_rt.hipGraphDestroy)
#define gpuStreamBeginCaptureThreadLocal(s)                                                        \
  rocm_rt.hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal)
#define gpuStreamEndCapture(s, pg) rocm_rt.hipStreamEndCapture(s, pg)
#define gpuGraphLaunch(e, s) rocm_rt.hipGraphLaunch(e, s)
#define gpuGraphExecDestroy(e) rocm_rt.hipGraphExecDestroy(e)
#define gpuGraphDestroy(g) rocm_rt.hipGraphDestroy(g)
#define gpuStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define gpuThreadExchangeStreamCaptureMode(m)                                                      \
  (rocm_rt.hipThreadExchangeStreamCaptureMode ? rocm_rt.hipThreadExchangeStreamCaptureMode(m)      \
                                              : hipSuccess)

static inline hipError_t gpuGraphInstantiate(hipGraphExec_t *e, hipGraph_t g, char *log, size_t n) {
  if (rocm_rt.hipGraphInstantiateWithFlags) return rocm_rt.hipGraphInstantiateWithFlags(e, g, 0);
  return rocm_rt.hipGraphInstantiate(e, g, NULL, log, n);
}

/* ---- modules and launches ----------------------------------------------- */
#define GPU_KERNEL_FORMAT BP_KERNEL_HIP /* what custom kernels are written in */
#define GPU_KERNEL_FORMAT_NAME "HIP source"
#define gpuModuleGetFunction(pf, mod, name) rocm_rt.hipModuleGetFunction(pf, mod, name)
#define gpuModuleUnload(mod) rocm_rt.hipModuleUnload(mod)
/* One by-value parameter block for built-in kernels: the runtime copies it
 * into the kernel argument segment using the code object's metadata. */
#define gpuModuleLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, params)                          \
  rocm_rt.hipModuleLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, params, NULL)

/* ---- the vendor BLAS: rocBLAS (plugins/gpu/blas.c) ---------------------- */
typedef rocblas_status gpublasStatus_t;
typedef rocblas_handle gpublasHandle_t;
#define GPUBLAS_STATUS_SUCCESS rocblas_status_success
#define GPUBLAS_OP_N rocblas_operation_none
#define GPUBLAS_OP_T rocblas_operation_transpose
#define GPU_BLAS_NAME "rocBLAS"
#define GPU_BLAS_CHOICE_ENV "BACKPLANE_ROCM_BLAS" /* 0 own, 1 vendor */
/* conv2d: 0 the direct kernel, 1 GEMMs wherever the layout allows, unset by size */
#define GPU_CONV_CHOICE_ENV "BACKPLANE_ROCM_CONV"
/* conv2d: the most scratch memory (bytes) its patch matrices take per stream */
#define GPU_CONV_SCRATCH_ENV "BACKPLANE_ROCM_CONV_SCRATCH"
#define GPU_BLAS_LIBRARY_ENV "BACKPLANE_ROCBLAS"  /* the file to open */
#define GPU_BLAS_LIBRARY_NAMES                                                                     \
  { "librocblas.so.4", "librocblas.so.3", "librocblas.so.0" }
#define GPU_BLAS_LIBRARY_MISSING "librocblas.so.4/.3/.0 not found"
#define GPU_BLAS_ENTRY_POINTS(X) ROCBLAS_ENTRY_POINTS(X)
#define GPU_BLAS_OPTIONAL_ENTRY_POINTS(X) ROCBLAS_OPTIONAL_ENTRY_POINTS(X)
#define GPU_BLAS_CREATE_NAME "rocblas_create_handle"
/* The workspace is set once, when the handle is made (32 MiB). */
#define GPU_BLAS_WORKSPACE_PER_CALL 0
#define gpublasWorkspaceSize(d) ((void)(d), (size_t)32 << 20)
#define gpublasCreate(ph) gpu_blas_lib.rocblas_create_handle(ph)
#define gpublasDestroy(h) gpu_blas_lib.rocblas_destroy_handle(h)
#define gpublasSetStream(h, s) gpu_blas_lib.rocblas_set_stream(h, s)
#define gpublasHaveSetWorkspace() (gpu_blas_lib.rocblas_set_workspace != NULL)
#define gpublasSetWorkspace(h, p, n) gpu_blas_lib.rocblas_set_workspace(h, p, n)
#define gpublasSgemmStridedBatched gpu_blas_lib.rocblas_sgemm_strided_batched
#define gpublasDgemmStridedBatched gpu_blas_lib.rocblas_dgemm_strided_batched
/* The library's version once loaded: rocBLAS tells it per library. */
#define gpublasLibraryVersion(buf, n)                                                              \
  do {                                                                                             \
    if (gpu_blas_lib.rocblas_get_version_string(buf, n) != rocblas_status_success)                 \
      snprintf(buf, n, "unknown");                                                                 \
  } while (0)
#define gpublasHandleVersion(h, buf, n) ((void)(h), (void)(buf), (void)(n))
/* f16 / bf16 storage, f32 compute; C is both input and output. */
#define gpublasGemmStridedBatchedHalf(h, ta, tb, c, alpha, beta)                                   \
  gpu_blas_lib.rocblas_gemm_strided_batched_ex(                                                    \
      h, ta, tb, (c)->m, (c)->n, (c)->k, alpha, (const void *)(uintptr_t)(c)->a,                   \
      (c)->dtype == BP_F16 ? rocblas_datatype_f16_r : rocblas_datatype_bf16_r, (c)->lda,           \
      (c)->stride_a, (const void *)(uintptr_t)(c)->b,                                              \
      (c)->dtype == BP_F16 ? rocblas_datatype_f16_r : rocblas_datatype_bf16_r, (c)->ldb,           \
      (c)->stride_b, beta, (void *)(uintptr_t)(c)->c,                                              \
      (c)->dtype == BP_F16 ? rocblas_datatype_f16_r : rocblas_datatype_bf16_r, (c)->ldc,           \
      (c)->stride_c, (void *)(uintptr_t)(c)->c,                                                    \
      (c)->dtype == BP_F16 ? rocblas_datatype_f16_r : rocblas_datatype_bf16_r, (c)->ldc,           \
      (c)->stride_c, (c)->batch, rocblas_datatype_f32_r, rocblas_gemm_algo_standard, 0, 0)

/* ---- ROCm only (plugins/rocm/kernels.c) --------------------------------- */
/* Loads a code object for d (device current, caller serialises per
 * device): from the on-disk cache when one for this source, options,
 * architecture and runtime loads, else compiled through hiprtc (and
 * cached). name labels messages and the cache file; opts (NULL for none)
 * are extra hiprtc options, whitespace-separated. app: the source is the
 * application's, so a compile error is BP_ERR_INVALID_ARGUMENT rather than
 * BP_ERR_INTERNAL. The caller owns *out (hipModuleUnload). */
struct gpu_device;
GPU_HIDDEN bp_status_t rocm_code_object_load(struct gpu_device *d, const char *src,
                                             const char *name, const char *opts, bool app,
                                             hipModule_t *out);

#endif /* BACKPLANE_GPU_VENDORS_HIP_H */
