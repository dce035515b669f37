/*
 * ops_dnn.c — the rocm backend's conv2d, pool, norms, attention, Adam: the shared
 * host code of plugins/common/gpu_ops_dnn.inc under this plugin's names.
 */
#include "plugins/rocm/rocm_plugin.h"

#define GPU(x) rocm_##x
#define GPU_NAME "rocm"

#include "plugins/common/gpu_ops_dnn.inc"
