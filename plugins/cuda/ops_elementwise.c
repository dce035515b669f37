/*
 * ops_elementwise.c — the cuda backend's elementwise ops, fill, copy, cast, random: the shared
 * host code of plugins/common/gpu_ops_elementwise.inc under this plugin's names.
 */
#include "plugins/cuda/cuda_plugin.h"

#define GPU(x) cuda_##x
#define GPU_NAME "cuda"

#include "plugins/common/gpu_ops_elementwise.inc"
