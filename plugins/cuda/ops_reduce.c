/*
 * ops_reduce.c — the cuda backend's reductions, softmax and norms by rows: the shared
 * host code of plugins/common/gpu_ops_reduce.inc under this plugin's names.
 */
#include "plugins/cuda/cuda_plugin.h"

#define GPU(x) cuda_##x
#define GPU_NAME "cuda"

#include "plugins/common/gpu_ops_reduce.inc"
