/*
 * cuda_driver.h — the slice of the CUDA driver API backend-cuda.so uses,
 * declared here so that no CUDA header or library is needed to build it.
 *
 * Values and signatures are copied from the driver API's cuda.h (they are
 * part of NVIDIA's stable driver ABI). Every entry point is reached through
 * a function pointer resolved with dlsym from libcuda.so.1 at probe time;
 * CUDA_DRIVER_ENTRY_POINTS lists them with the exact symbol each is read
 * from: the _v2 names where the driver has them, as cuda.h maps them.
 * The test shim (test/shims/cuda) implements exactly this list.
 */
#ifndef BACKPLANE_CUDA_DRIVER_H
#define BACKPLANE_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;
typedef void (*CUhostFn)(void *user_data);
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;

/* CUresult values the plugin treats specially. */
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_DEINITIALIZED 4
#define CUDA_ERROR_STUB_LIBRARY 34
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_ERROR_NO_BINARY_FOR_GPU 209
#define CUDA_ERROR_INVALID_PTX 218
#define CUDA_ERROR_UNSUPPORTED_PTX_VERSION 222
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_ILLEGAL_ADDRESS 700
#define CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES 701
#define CUDA_ERROR_LAUNCH_TIMEOUT 702
#define CUDA_ERROR_LAUNCH_FAILED 719
#define CUDA_ERROR_NOT_SUPPORTED 801
#define CUDA_ERROR_SYSTEM_DRIVER_MISMATCH 803
#define CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
#define CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901
#define CUDA_ERROR_STREAM_CAPTURE_IMPLICIT 906
#define CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD 908
#define CUDA_ERROR_UNKNOWN 999

/* CUdevice_attribute values. */
#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define CU_DEVICE_ATTRIBUTE_CLOCK_RATE 13
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_INTEGRATED 18
#define CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE 36
#define CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH 37
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED 115

/* CUfunction_attribute, CUjit_option, stream and event flags. */
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_JIT_INFO_LOG_BUFFER 3
#define CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES 4
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define CU_STREAM_DEFAULT 0x0u
#define CU_EVENT_DEFAULT 0x0u

/* CUstreamCaptureMode (an enum: int in the ABI). */
#define CU_STREAM_CAPTURE_MODE_GLOBAL 0
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1
#define CU_STREAM_CAPTURE_MODE_RELAXED 2

/* X(field, symbol, return/params...) — required entry points. A field is
 * named after the API function without its version suffix. */
#define CUDA_DRIVER_ENTRY_POINTS(X)                                            \
  X(cuGetErrorName, "cuGetErrorName", (CUresult, const char **))               \
  X(cuGetErrorString, "cuGetErrorString", (CUresult, const char **))           \
  X(cuInit, "cuInit", (unsigned))                                              \
  X(cuDriverGetVersion, "cuDriverGetVersion", (int *))                         \
  X(cuDeviceGetCount, "cuDeviceGetCount", (int *))                             \
  X(cuDeviceGet, "cuDeviceGet", (CUdevice *, int))                             \
  X(cuDeviceGetName, "cuDeviceGetName", (char *, int, CUdevice))               \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *, int, CUdevice))      \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", (size_t *, CUdevice))             \
  X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", (char *, int, CUdevice))       \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",                      \
    (CUcontext *, CUdevice))                                                   \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice))     \
  X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", (CUcontext))                      \
  X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", (CUcontext *))                      \
  X(cuCtxSynchronize, "cuCtxSynchronize", (void))                              \
  X(cuMemGetInfo, "cuMemGetInfo_v2", (size_t *, size_t *))                     \
  X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))                      \
  X(cuMemFree, "cuMemFree_v2", (CUdeviceptr))                                  \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr, const void *, size_t))      \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void *, CUdeviceptr, size_t))            \
  X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", (CUdeviceptr, CUdeviceptr, size_t))       \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                                 \
    (CUdeviceptr, const void *, size_t, CUstream))                             \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",                                 \
    (void *, CUdeviceptr, size_t, CUstream))                                   \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2",                                 \
    (CUdeviceptr, CUdeviceptr, size_t, CUstream))                              \
  X(cuStreamCreate, "cuStreamCreate", (CUstream *, unsigned))                  \
  X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream))                         \
  X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream))                    \
  X(cuStreamWaitEvent, "cuStreamWaitEvent", (CUstream, CUevent, unsigned))     \
  X(cuEventCreate, "cuEventCreate", (CUevent *, unsigned))                     \
  X(cuEventDestroy, "cuEventDestroy_v2", (CUevent))                            \
  X(cuEventRecord, "cuEventRecord", (CUevent, CUstream))                       \
  X(cuEventSynchronize, "cuEventSynchronize", (CUevent))                       \
  X(cuEventElapsedTime, "cuEventElapsedTime", (float *, CUevent, CUevent))     \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx",                                  \
    (CUmodule *, const void *, unsigned, int *, void **))                      \
  X(cuModuleUnload, "cuModuleUnload", (CUmodule))                              \
  X(cuModuleGetFunction, "cuModuleGetFunction",                                \
    (CUfunction *, CUmodule, const char *))                                    \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", (CUfunction, int, int))          \
  X(cuLaunchKernel, "cuLaunchKernel",                                          \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,   \
     unsigned, CUstream, void **, void **))

/* Optional entry points: NULL when the driver predates them.
 * cuMemAllocAsync / cuMemFreeAsync: CUDA 11.2 stream-ordered allocator. */
#define CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(X)                                   \
  X(cuDeviceGetUuid, "cuDeviceGetUuid_v2", (CUuuid *, CUdevice))               \
  X(cuMemAllocAsync, "cuMemAllocAsync", (CUdeviceptr *, size_t, CUstream))     \
  X(cuMemFreeAsync, "cuMemFreeAsync", (CUdeviceptr, CUstream))               \
  X(cuMemHostAlloc, "cuMemHostAlloc", (void **, size_t, unsigned))             \
  X(cuMemFreeHost, "cuMemFreeHost", (void *))                                 \
  CUDA_DRIVER_GRAPH_ENTRY_POINTS(X)

/* Stream capture and graphs (native graphs, ABI 1.2): every one of them is
 * needed, else graphs replay in the core. cuStreamBeginCapture is the _v2
 * with a mode (cuda.h maps the plain name to it since 10.1);
 * cuGraphInstantiateWithFlags (11.4+, what cuda.h 12+ calls
 * cuGraphInstantiate) is preferred, cuGraphInstantiate_v2 (11.0's
 * signature, with an error log) is the fallback. */
#define CUDA_DRIVER_GRAPH_ENTRY_POINTS(X)                                      \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", (CUstream, int))          \
  X(cuStreamEndCapture, "cuStreamEndCapture", (CUstream, CUgraph *))           \
  X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode",    \
    (int *))                                                                   \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",                \
    (CUgraphExec *, CUgraph, unsigned long long))                              \
  X(cuGraphInstantiate, "cuGraphInstantiate_v2",                               \
    (CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t))                   \
  X(cuGraphLaunch, "cuGraphLaunch", (CUgraphExec, CUstream))                   \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec))                   \
  X(cuGraphDestroy, "cuGraphDestroy", (CUgraph))

/* The resolved driver: one per process, filled by gpu_driver_load
 * (plugins/gpu/driver.c, with plugins/cuda/driver.c). */
typedef struct cuda_driver {
  void *handle; /* dlopen handle */
  int version;  /* cuDriverGetVersion: 1000 * major + 10 * minor */
  char path[256];
#define CUDA__FIELD(field, sym, params) CUresult (*field) params;
  CUDA_DRIVER_ENTRY_POINTS(CUDA__FIELD)
  CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(CUDA__FIELD)
#undef CUDA__FIELD
} cuda_driver_t;

#endif /* BACKPLANE_CUDA_DRIVER_H */
