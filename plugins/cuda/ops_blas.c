/*
 * ops_blas.c — the cuda backend's gemm and gemv: the shared
 * host code of plugins/common/gpu_ops_blas.inc under this plugin's names.
 */
#include "plugins/cuda/cuda_plugin.h"

#define GPU(x) cuda_##x
#define GPU_UP(x) CUDA_##x
#define GPU_NAME "cuda"

#include "plugins/common/gpu_ops_blas.inc"
