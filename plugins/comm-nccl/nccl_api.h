/*
 * nccl_api.h — the part of NCCL's API (libnccl.so.2, NCCL 2.x) the nccl
 * and rccl comm plugins use, declared here so that they build without NCCL
 * or RCCL headers; the values are NCCL's own (nccl.h), which RCCL
 * (librccl.so.1) keeps. test/shims/nccl implements the same declarations
 * on the CPU for CI.
 */
#ifndef BP_COMM_NCCL_API_H
#define BP_COMM_NCCL_API_H

#include <stddef.h>

typedef struct ncclComm *ncclComm_t;
typedef void *cudaStream_t; /* CUstream, or hipStream_t under RCCL */
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

#endif /* BP_COMM_NCCL_API_H */
