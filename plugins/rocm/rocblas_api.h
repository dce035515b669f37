/*
 * rocblas_api.h — the slice of rocBLAS backend-rocm.so uses, declared here
 * so that no ROCm header or library is needed to build it (like
 * hip_runtime.h). Values and signatures follow rocBLAS 3 and 4 (ROCm 5 and
 * 6; rocblas_int is 32-bit, rocblas_stride 64-bit, enums int). rocBLAS is
 * optional: the plugin opens it with dlopen when it is installed and runs
 * its own kernels otherwise. The test shim (test/shims/rocblas) implements
 * exactly this list.
 */
#ifndef BACKPLANE_ROCBLAS_API_H
#define BACKPLANE_ROCBLAS_API_H

#include <stddef.h>
#include <stdint.h>

#include "plugins/rocm/hip_runtime.h"

typedef int rocblas_status;
typedef struct _rocblas_handle *rocblas_handle;
#define rocblas_status_success 0
#define rocblas_operation_none 111
#define rocblas_operation_transpose 112
#define rocblas_datatype_f16_r 150
#define rocblas_datatype_f32_r 151
#define rocblas_datatype_f64_r 152
#define rocblas_datatype_bf16_r 168
#define rocblas_gemm_algo_standard 0

/* X(field, symbol, params) — every one required. */
#define ROCBLAS_ENTRY_POINTS(X)                                                \
  X(rocblas_create_handle, "rocblas_create_handle", (rocblas_handle *))        \
  X(rocblas_destroy_handle, "rocblas_destroy_handle", (rocblas_handle))        \
  X(rocblas_set_stream, "rocblas_set_stream", (rocblas_handle, hipStream_t))   \
  X(rocblas_get_version_string, "rocblas_get_version_string",                  \
    (char *, size_t))                                                          \
  X(rocblas_sgemm_strided_batched, "rocblas_sgemm_strided_batched",            \
    (rocblas_handle, int, int, int, int, int, const float *, const float *,    \
     int, int64_t, const float *, int, int64_t, const float *, float *, int,   \
     int64_t, int))                                                            \
  X(rocblas_dgemm_strided_batched, "rocblas_dgemm_strided_batched",            \
    (rocblas_handle, int, int, int, int, int, const double *, const double *,  \
     int, int64_t, const double *, int, int64_t, const double *, double *,     \
     int, int64_t, int))                                                       \
  X(rocblas_gemm_strided_batched_ex, "rocblas_gemm_strided_batched_ex",        \
    (rocblas_handle, int, int, int, int, int, const void *, const void *, int, \
     int, int64_t, const void *, int, int, int64_t, const void *,              \
     const void *, int, int, int64_t, void *, int, int, int64_t, int, int,     \
     int, int32_t, uint32_t))

/* Optional: a workspace the plugin owns, so that no gemm inside a graph
 * capture has to allocate one. */
#define ROCBLAS_OPTIONAL_ENTRY_POINTS(X)                                       \
  X(rocblas_set_workspace, "rocblas_set_workspace",                            \
    (rocblas_handle, void *, size_t))

#endif /* BACKPLANE_ROCBLAS_API_H */
