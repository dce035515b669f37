/*
 * ops_blas.c — the rocm backend's gemm and gemv: the shared
 * host code of plugins/common/gpu_ops_blas.inc under this plugin's names.
 */
#include "plugins/rocm/rocm_plugin.h"

#define GPU(x) rocm_##x
#define GPU_NAME "rocm"
#define GPU_PLUGIN_VERSION ROCM_PLUGIN_VERSION
#define GPU_BLAS_ENV "BACKPLANE_ROCM_BLAS"
#define GPU_BLAS_VENDOR "rocBLAS"

#include "plugins/common/gpu_ops_blas.inc"
