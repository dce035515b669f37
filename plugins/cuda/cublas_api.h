/*
 * cublas_api.h — the slice of cuBLAS backend-cuda.so uses, declared here so
 * that no CUDA header or library is needed to build it (like
 * cuda_driver.h). Values and signatures are those of cuBLAS 11 to 13's
 * cublas_api.h and library_types.h (stable across them). cuBLAS is
 * optional: the plugin opens it with dlopen when it is installed and runs
 * its own kernels otherwise. The test shim (test/shims/cublas) implements
 * exactly this list.
 */
#ifndef BACKPLANE_CUBLAS_API_H
#define BACKPLANE_CUBLAS_API_H

#include <stddef.h>
#include <stdint.h>

#include "plugins/cuda/cuda_driver.h"

typedef int cublasStatus_t;
typedef struct cublasContext *cublasHandle_t;
#define CUBLAS_STATUS_SUCCESS 0
#define CUBLAS_OP_N 0
#define CUBLAS_OP_T 1
#define CUDA_R_32F 0
#define CUDA_R_64F 1
#define CUDA_R_16F 2
#define CUDA_R_16BF 14
#define CUBLAS_COMPUTE_32F 68
#define CUBLAS_GEMM_DEFAULT (-1)

/* X(field, symbol, params) — every one required. cudaStream_t is the
 * driver's CUstream. */
#define CUBLAS_ENTRY_POINTS(X)                                                 \
  X(cublasCreate, "cublasCreate_v2", (cublasHandle_t *))                       \
  X(cublasDestroy, "cublasDestroy_v2", (cublasHandle_t))                       \
  X(cublasGetVersion, "cublasGetVersion_v2", (cublasHandle_t, int *))          \
  X(cublasSetStream, "cublasSetStream_v2", (cublasHandle_t, CUstream))         \
  X(cublasSgemmStridedBatched, "cublasSgemmStridedBatched",                    \
    (cublasHandle_t, int, int, int, int, int, const float *, const float *,    \
     int, long long, const float *, int, long long, const float *, float *,    \
     int, long long, int))                                                     \
  X(cublasDgemmStridedBatched, "cublasDgemmStridedBatched",                    \
    (cublasHandle_t, int, int, int, int, int, const double *, const double *,  \
     int, long long, const double *, int, long long, const double *,           \
     double *, int, long long, int))                                           \
  X(cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx",                  \
    (cublasHandle_t, int, int, int, int, int, const void *, const void *, int, \
     int, long long, const void *, int, int, long long, const void *, void *,  \
     int, int, long long, int, int, int))

/* Optional (cuBLAS 11.4+): a workspace the plugin owns, so that no gemm
 * inside a graph capture has to allocate one. */
#define CUBLAS_OPTIONAL_ENTRY_POINTS(X)                                        \
  X(cublasSetWorkspace, "cublasSetWorkspace_v2",                               \
    (cublasHandle_t, void *, size_t))

#endif /* BACKPLANE_CUBLAS_API_H */
