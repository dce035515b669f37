/*
 * ops_reduce.c — the rocm backend's reductions, softmax and norms by rows: the shared
 * host code of plugins/common/gpu_ops_reduce.inc under this plugin's names.
 */
#include "plugins/rocm/rocm_plugin.h"

#define GPU(x) rocm_##x
#define GPU_NAME "rocm"

#include "plugins/common/gpu_ops_reduce.inc"
