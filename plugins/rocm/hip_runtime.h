/*
 * hip_runtime.h — the slice of the HIP runtime and hiprtc APIs that
 * backend-rocm.so uses, declared here so that no ROCm header or library is
 * needed to build it.
 *
 * Values and signatures follow AMD's hip_runtime_api.h and hiprtc.h (ROCm 5
 * and 6 agree on every value used here; the attribute numbers were checked
 * against ROCm 5.2's headers and ROCm 6's list). Every entry point is reached
 * through a function pointer resolved with dlsym at probe time; the X-macro
 * lists give the exact symbol each is read from. The test shim
 * (test/shims/hip) implements exactly these lists.
 */
#ifndef BACKPLANE_HIP_RUNTIME_H
#define BACKPLANE_HIP_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

typedef int hipError_t;
typedef int hipDevice_t;
typedef void *hipDeviceptr_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipGraph *hipGraph_t;
typedef struct hipGraphExec *hipGraphExec_t;
typedef struct hipGraphNode *hipGraphNode_t;
typedef struct hipUUID_t {
  char bytes[16];
} hipUUID;

/* hipError_t values the plugin treats specially (CUDA's numbers). */
#define hipSuccess 0
#define hipErrorInvalidValue 1
#define hipErrorOutOfMemory 2
#define hipErrorNotInitialized 3
#define hipErrorDeinitialized 4
#define hipErrorInsufficientDriver 35
#define hipErrorInvalidDeviceFunction 98
#define hipErrorNoDevice 100
#define hipErrorInvalidDevice 101
#define hipErrorInvalidImage 200
#define hipErrorInvalidContext 201
#define hipErrorNoBinaryForGpu 209
#define hipErrorInvalidKernelFile 218
#define hipErrorSharedObjectInitFailed 303
#define hipErrorInvalidHandle 400
#define hipErrorNotFound 500
#define hipErrorNotReady 600
#define hipErrorIllegalAddress 700
#define hipErrorLaunchOutOfResources 701
#define hipErrorLaunchTimeOut 702
#define hipErrorLaunchFailure 719
#define hipErrorNotSupported 801
#define hipErrorStreamCaptureUnsupported 900
#define hipErrorStreamCaptureInvalidated 901
#define hipErrorStreamCaptureImplicit 906
#define hipErrorStreamCaptureWrongThread 908
#define hipErrorUnknown 999

/* hipDeviceAttribute_t values (the ROCm 5.0+ numbering). */
#define hipDeviceAttributeClockRate 5
#define hipDeviceAttributeIntegrated 16
#define hipDeviceAttributeMaxThreadsPerBlock 56
#define hipDeviceAttributeMemoryBusWidth 59
#define hipDeviceAttributeMemoryClockRate 60
#define hipDeviceAttributeMultiprocessorCount 63
#define hipDeviceAttributeMaxSharedMemoryPerBlock 74
#define hipDeviceAttributeWarpSize 87

#define hipStreamDefault 0x0u
#define hipEventDefault 0x0u
/* hipStreamCaptureMode (an enum: int in the ABI). */
#define hipStreamCaptureModeGlobal 0
#define hipStreamCaptureModeThreadLocal 1
#define hipStreamCaptureModeRelaxed 2

/* hipDeviceProp_t is read only for gcnArchName, which has no attribute.
 * Its layout differs by symbol: hipGetDevicePropertiesR0600 (ROCm 6) fills
 * the struct below; the plain hipGetDeviceProperties fills the ROCm 5
 * layout, where gcnArchName sits at byte 396 (checked with ROCm 5.2's
 * header). Both are declared up to gcnArchName; the plugin passes a buffer
 * larger than either whole struct. */
#define HIP_PROPS_BUFFER_BYTES 8192
#define HIP_PROPS_R0000_ARCH_OFFSET 396
typedef struct hip_props_r0600_prefix {
  char name[256];
  hipUUID uuid;
  char luid[8];
  unsigned luidDeviceNodeMask;
  size_t totalGlobalMem, sharedMemPerBlock;
  int regsPerBlock, warpSize;
  size_t memPitch;
  int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate;
  size_t totalConstMem;
  int major, minor;
  size_t textureAlignment, texturePitchAlignment;
  int deviceOverlap, multiProcessorCount, kernelExecTimeoutEnabled,
      integrated, canMapHostMemory, computeMode;
  int maxTexture1D, maxTexture1DMipmap, maxTexture1DLinear;
  int texture_and_surface_limits[37]; /* maxTexture2D .. maxSurfaceCubemapLayered */
  size_t surfaceAlignment;
  int concurrent_to_localL1[16];      /* concurrentKernels .. localL1CacheSupported */
  size_t sharedMemPerMultiprocessor;
  int regs_to_cooperative[12];        /* regsPerMultiprocessor .. cooperativeMultiDeviceLaunch */
  size_t sharedMemPerBlockOptin;
  int pageable_to_window[4];          /* ..UsesHostPageTables .. accessPolicyMaxWindowSize */
  size_t reservedSharedMemPerBlock;
  int register_to_unified_fp[13];     /* hostRegisterSupported .. unifiedFunctionPointers */
  int reserved[63];
  int hipReserved[32];
  char gcnArchName[256];
} hip_props_r0600_prefix_t;

/* hiprtc. */
typedef int hiprtcResult;
typedef struct _hiprtcProgram *hiprtcProgram;
#define HIPRTC_SUCCESS 0
#define HIPRTC_ERROR_OUT_OF_MEMORY 1
#define HIPRTC_ERROR_COMPILATION 6

/* X(field, symbol, params) — required HIP runtime entry points. */
#define HIP_RUNTIME_ENTRY_POINTS(X)                                            \
  X(hipGetErrorName, "hipGetErrorName", const char *, (hipError_t))            \
  X(hipGetErrorString, "hipGetErrorString", const char *, (hipError_t))        \
  X(hipInit, "hipInit", hipError_t, (unsigned))                                \
  X(hipDriverGetVersion, "hipDriverGetVersion", hipError_t, (int *))           \
  X(hipRuntimeGetVersion, "hipRuntimeGetVersion", hipError_t, (int *))         \
  X(hipGetDeviceCount, "hipGetDeviceCount", hipError_t, (int *))               \
  X(hipDeviceGetAttribute, "hipDeviceGetAttribute", hipError_t,                \
    (int *, int, int))                                                         \
  X(hipDeviceGetName, "hipDeviceGetName", hipError_t, (char *, int, int))      \
  X(hipDeviceGetPCIBusId, "hipDeviceGetPCIBusId", hipError_t,                  \
    (char *, int, int))                                                        \
  X(hipDeviceTotalMem, "hipDeviceTotalMem", hipError_t, (size_t *, int))       \
  X(hipGetDeviceProperties, "hipGetDeviceProperties", hipError_t,              \
    (void *, int))                                                             \
  X(hipSetDevice, "hipSetDevice", hipError_t, (int))                           \
  X(hipDeviceSynchronize, "hipDeviceSynchronize", hipError_t, (void))          \
  X(hipMemGetInfo, "hipMemGetInfo", hipError_t, (size_t *, size_t *))          \
  X(hipMalloc, "hipMalloc", hipError_t, (void **, size_t))                     \
  X(hipFree, "hipFree", hipError_t, (void *))                                  \
  X(hipMemcpyHtoD, "hipMemcpyHtoD", hipError_t,                                \
    (hipDeviceptr_t, void *, size_t))                                          \
  X(hipMemcpyDtoH, "hipMemcpyDtoH", hipError_t,                                \
    (void *, hipDeviceptr_t, size_t))                                          \
  X(hipMemcpyDtoD, "hipMemcpyDtoD", hipError_t,                                \
    (hipDeviceptr_t, hipDeviceptr_t, size_t))                                  \
  X(hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync", hipError_t,                      \
    (hipDeviceptr_t, void *, size_t, hipStream_t))                             \
  X(hipMemcpyDtoHAsync, "hipMemcpyDtoHAsync", hipError_t,                      \
    (void *, hipDeviceptr_t, size_t, hipStream_t))                             \
  X(hipMemcpyDtoDAsync, "hipMemcpyDtoDAsync", hipError_t,                      \
    (hipDeviceptr_t, hipDeviceptr_t, size_t, hipStream_t))                     \
  X(hipStreamCreate, "hipStreamCreate", hipError_t, (hipStream_t *))           \
  X(hipStreamDestroy, "hipStreamDestroy", hipError_t, (hipStream_t))           \
  X(hipStreamSynchronize, "hipStreamSynchronize", hipError_t, (hipStream_t))   \
  X(hipStreamWaitEvent, "hipStreamWaitEvent", hipError_t,                      \
    (hipStream_t, hipEvent_t, unsigned))                                       \
  X(hipEventCreate, "hipEventCreate", hipError_t, (hipEvent_t *))              \
  X(hipEventDestroy, "hipEventDestroy", hipError_t, (hipEvent_t))              \
  X(hipEventRecord, "hipEventRecord", hipError_t, (hipEvent_t, hipStream_t))   \
  X(hipEventSynchronize, "hipEventSynchronize", hipError_t, (hipEvent_t))      \
  X(hipEventElapsedTime, "hipEventElapsedTime", hipError_t,                    \
    (float *, hipEvent_t, hipEvent_t))                                         \
  X(hipModuleLoadData, "hipModuleLoadData", hipError_t,                        \
    (hipModule_t *, const void *))                                             \
  X(hipModuleUnload, "hipModuleUnload", hipError_t, (hipModule_t))             \
  X(hipModuleGetFunction, "hipModuleGetFunction", hipError_t,                  \
    (hipFunction_t *, hipModule_t, const char *))                              \
  X(hipModuleLaunchKernel, "hipModuleLaunchKernel", hipError_t,                \
    (hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned,          \
     unsigned, unsigned, hipStream_t, void **, void **))

/* Optional: NULL where the runtime predates them. hipGetDevicePropertiesR0600
 * is ROCm 6's (see above); hipDeviceGetUuid came with ROCm 5.2. */
#define HIP_RUNTIME_OPTIONAL_ENTRY_POINTS(X)                                   \
  X(hipGetDevicePropertiesR0600, "hipGetDevicePropertiesR0600", hipError_t,    \
    (void *, int))                                                             \
  X(hipDeviceGetUuid, "hipDeviceGetUuid", hipError_t, (hipUUID *, int))      \
  HIP_RUNTIME_GRAPH_ENTRY_POINTS(X)

/* Stream capture and graphs (native graphs, ABI 1.2; ROCm 5.3+ for the
 * modes and hipThreadExchangeStreamCaptureMode): all needed, else graphs
 * replay in the core. hipGraphInstantiateWithFlags is preferred, the
 * original hipGraphInstantiate (with an error log) the fallback. */
#define HIP_RUNTIME_GRAPH_ENTRY_POINTS(X)                                      \
  X(hipStreamBeginCapture, "hipStreamBeginCapture", hipError_t,                \
    (hipStream_t, int))                                                        \
  X(hipStreamEndCapture, "hipStreamEndCapture", hipError_t,                    \
    (hipStream_t, hipGraph_t *))                                               \
  X(hipThreadExchangeStreamCaptureMode, "hipThreadExchangeStreamCaptureMode",  \
    hipError_t, (int *))                                                       \
  X(hipGraphInstantiateWithFlags, "hipGraphInstantiateWithFlags", hipError_t,  \
    (hipGraphExec_t *, hipGraph_t, unsigned long long))                        \
  X(hipGraphInstantiate, "hipGraphInstantiate", hipError_t,                    \
    (hipGraphExec_t *, hipGraph_t, hipGraphNode_t *, char *, size_t))          \
  X(hipGraphLaunch, "hipGraphLaunch", hipError_t, (hipGraphExec_t, hipStream_t)) \
  X(hipGraphExecDestroy, "hipGraphExecDestroy", hipError_t, (hipGraphExec_t))  \
  X(hipGraphDestroy, "hipGraphDestroy", hipError_t, (hipGraph_t))

/* X(field, symbol, params) — hiprtc, from libhiprtc.so or (ROCm 5.2 and
 * older) from libamdhip64.so itself. */
#define HIPRTC_ENTRY_POINTS(X)                                                 \
  X(hiprtcGetErrorString, "hiprtcGetErrorString", const char *,                \
    (hiprtcResult))                                                            \
  X(hiprtcCreateProgram, "hiprtcCreateProgram", hiprtcResult,                  \
    (hiprtcProgram *, const char *, const char *, int, const char *const *,    \
     const char *const *))                                                     \
  X(hiprtcCompileProgram, "hiprtcCompileProgram", hiprtcResult,                \
    (hiprtcProgram, int, const char *const *))                                 \
  X(hiprtcGetProgramLogSize, "hiprtcGetProgramLogSize", hiprtcResult,          \
    (hiprtcProgram, size_t *))                                                 \
  X(hiprtcGetProgramLog, "hiprtcGetProgramLog", hiprtcResult,                  \
    (hiprtcProgram, char *))                                                   \
  X(hiprtcGetCodeSize, "hiprtcGetCodeSize", hiprtcResult,                      \
    (hiprtcProgram, size_t *))                                                 \
  X(hiprtcGetCode, "hiprtcGetCode", hiprtcResult, (hiprtcProgram, char *))     \
  X(hiprtcDestroyProgram, "hiprtcDestroyProgram", hiprtcResult,                \
    (hiprtcProgram *))

/* The resolved runtime: one per process, filled by gpu_driver_load
 * (plugins/gpu/driver.c, with plugins/rocm/driver.c). */
typedef struct hip_runtime {
  void *handle, *rtc_handle; /* rtc_handle may equal handle */
  int driver_version, runtime_version;
  char path[256], rtc_path[256];
  char rtc_reason[256]; /* why hiprtc is missing, when it is */
#define HIP__FIELD(field, sym, ret, params) ret(*field) params;
  HIP_RUNTIME_ENTRY_POINTS(HIP__FIELD)
  HIP_RUNTIME_OPTIONAL_ENTRY_POINTS(HIP__FIELD)
  HIPRTC_ENTRY_POINTS(HIP__FIELD)
#undef HIP__FIELD
} hip_runtime_t;

#endif /* BACKPLANE_HIP_RUNTIME_H */
