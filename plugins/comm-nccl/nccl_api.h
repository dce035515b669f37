/*
 * nccl_api.h — the part of NCCL's API (libnccl.so.2, NCCL 2.x) and of the
 * CUDA driver API the nccl comm plugin uses, declared here so that it
 * builds without NCCL or CUDA headers; the values are NCCL's own (nccl.h).
 * test/shims/nccl implements the same declarations on the CPU for CI.
 */
#ifndef BP_COMM_NCCL_API_H
#define BP_COMM_NCCL_API_H

#include <stddef.h>

typedef struct ncclComm *ncclComm_t;
typedef void *cudaStream_t; /* the same handle as the driver's CUstream */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7
} ncclResult_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9
} ncclDataType_t;

#define NCCL_FUNCTIONS(X)                                                                          \
  X(ncclResult_t, ncclGetVersion, (int *version))                                                 \
  X(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * id))                                           \
  X(ncclResult_t, ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank))   \
  X(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))                                             \
  X(ncclResult_t, ncclCommAbort, (ncclComm_t comm))                                               \
  X(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t * err))                   \
  X(const char *, ncclGetErrorString, (ncclResult_t result))                                      \
  X(ncclResult_t, ncclAllReduce, (const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op, \
                                  ncclComm_t c, cudaStream_t st))                                  \
  X(ncclResult_t, ncclAllGather, (const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t c, \
                                  cudaStream_t st))                                                \
  X(ncclResult_t, ncclReduceScatter, (const void *s, void *r, size_t n, ncclDataType_t t,          \
                                      ncclRedOp_t op, ncclComm_t c, cudaStream_t st))              \
  X(ncclResult_t, ncclBroadcast, (const void *s, void *r, size_t n, ncclDataType_t t, int root,    \
                                  ncclComm_t c, cudaStream_t st))                                  \
  X(ncclResult_t, ncclReduce, (const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op, \
                               int root, ncclComm_t c, cudaStream_t st))                           \
  X(ncclResult_t, ncclSend, (const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t c,    \
                             cudaStream_t st))                                                     \
  X(ncclResult_t, ncclRecv, (void *r, size_t n, ncclDataType_t t, int peer, ncclComm_t c,          \
                             cudaStream_t st))

/* The CUDA driver calls: a context for the device, a stream of our own,
 * and polling it (CUDA_ERROR_NOT_READY 600 while work is pending). */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600
/* (field, exported symbol, parameters): the symbols the CUDA backend uses
 * too (plugins/cuda/cuda_driver.h), _v2 where the driver has one. */
#define CUDA_FUNCTIONS(X)                                                                          \
  X(cuInit, "cuInit", (unsigned flags))                                                           \
  X(cuDeviceGetCount, "cuDeviceGetCount", (int *count))                                           \
  X(cuDeviceGet, "cuDeviceGet", (CUdevice * dev, int ordinal))                                    \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext * ctx, CUdevice dev))        \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice dev))                    \
  X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", (CUcontext ctx))                                     \
  X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", (CUcontext * ctx))                                     \
  X(cuStreamCreate, "cuStreamCreate", (cudaStream_t * s, unsigned flags))                         \
  X(cuStreamDestroy, "cuStreamDestroy_v2", (cudaStream_t s))                                      \
  X(cuStreamQuery, "cuStreamQuery", (cudaStream_t s))                                             \
  X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr * p, size_t size))                                  \
  X(cuMemFree, "cuMemFree_v2", (CUdeviceptr p))

#endif /* BP_COMM_NCCL_API_H */
