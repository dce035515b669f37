/*
 * ops_dnn.c — the cuda backend's conv2d, pool, norms, attention, Adam: the shared
 * host code of plugins/common/gpu_ops_dnn.inc under this plugin's names.
 */
#include "plugins/cuda/cuda_plugin.h"

#define GPU(x) cuda_##x
#define GPU_NAME "cuda"

#include "plugins/common/gpu_ops_dnn.inc"
