/*
 * ops_elementwise.c — the rocm backend's elementwise ops, fill, copy, cast, random: the shared
 * host code of plugins/common/gpu_ops_elementwise.inc under this plugin's names.
 */
#include "plugins/rocm/rocm_plugin.h"

#define GPU(x) rocm_##x
#define GPU_NAME "rocm"

#include "plugins/common/gpu_ops_elementwise.inc"
