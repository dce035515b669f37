/*
 * ops_blas.c — the cuda backend's gemm and gemv: the shared
 * host code of plugins/common/gpu_ops_blas.inc under this plugin's names.
 */
#include "plugins/cuda/cuda_plugin.h"

#define GPU(x) cuda_##x
#define GPU_NAME "cuda"
#define GPU_PLUGIN_VERSION CUDA_PLUGIN_VERSION
#define GPU_BLAS_ENV "BACKPLANE_CUDA_BLAS"
#define GPU_BLAS_VENDOR "cuBLAS"

#include "plugins/common/gpu_ops_blas.inc"
