/*
 * rocm_plugin.h — internals shared by the files of backend-rocm.so.
 *
 * The usual plugin file set (docs/plugin-guide.md), the same as the CUDA
 * backend's: descriptor.c (descriptor, init, probe), device.c (open/close),
 * memory.c (allocation, copies), stream.c (streams, events), and the ops in
 * ops_*.c, one per kernel family (marshalling into the parameter blocks of
 * kernels/cuda/bp_cuda_args.h, which the HIP kernels share). ROCm-specific:
 * runtime.c (dlopen and dlsym of libamdhip64.so and hiprtc, hipError_t ->
 * bp_status_t), module.c (embedded HIP sources, hiprtc, the code-object
 * cache, launches), kernels.c (custom HIP kernels of the application,
 * through the same hiprtc path and cache). Shared with the CUDA backend:
 * plugins/common/gpu_plugin.h (the declarations both plugin headers make,
 * expanded here with rocm_), gpu_marshal.h (tensor views) and
 * gpu_kernel_args.h; descriptor.c and runtime.c bind gpu_descriptor.inc
 * and gpu_loader.inc.
 */
#ifndef BACKPLANE_ROCM_PLUGIN_H
#define BACKPLANE_ROCM_PLUGIN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/cuda/bp_cuda_args.h"
#include "plugin-api.h"
#include "plugins/common/gpu_blas.h"
#include "plugins/common/gpu_plugin.h"
#include "plugins/common/gpu_marshal.h"
#include "plugins/rocm/hip_runtime.h"

#define ROCM_HIDDEN BP_GPU_HIDDEN
#define ROCM_PLUGIN_NAME "rocm"
#define ROCM_PLUGIN_VERSION "0.1.0"

/* One opened device. HIP has no context stack: every entry point makes the
 * device current on its thread with hipSetDevice. */
typedef struct rocm_device {
  BP_GPU_DEVICE_FIELDS(hipModule_t)
  char arch[64]; /* gcnArchName, e.g. "gfx90a:sramecc+:xnack-" */
  int smem_max;  /* shared memory per block */
} rocm_device_t;

BP_GPU_DECLARE_STREAM_TYPES(rocm, hipStream_t, hipEvent_t)

/* ---- runtime.c ----------------------------------------------------------- */
ROCM_HIDDEN extern hip_runtime_t rocm_rt;
/* Opens libamdhip64.so (or $BACKPLANE_HIP_RUNTIME), resolves every entry
 * point, calls hipInit once and looks for hiprtc (or $BACKPLANE_HIPRTC).
 * BP_ERR_UNAVAILABLE with a reason when there is no runtime; a missing
 * hiprtc is not an error here (rocm_rt.hiprtcCompileProgram stays NULL and
 * rocm_rt.rtc_reason says why). Thread-safe; the result is cached. */
ROCM_HIDDEN bp_status_t rocm_runtime_load(void);
ROCM_HIDDEN void rocm_runtime_unload(void);
/* The gcnArchName of device ordinal into out ("" when unreadable). */
ROCM_HIDDEN void rocm_arch_name(int ordinal, char *out, size_t cap);

/* ---- device.c ------------------------------------------------------------ */
/* Makes d current on this thread (hipSetDevice). */
ROCM_HIDDEN bp_status_t rocm_enter(rocm_device_t *d);

/* ---- shared declarations (plugins/common/gpu_plugin.h) ------------------ */
/* runtime.c, module.c, kernels.c, device.c, ops_*.c */
BP_GPU_DECLARE_PLUGIN(rocm, rocm_device_t, hipError_t)
/* memory.c, stream.c, graph.c, blas.c */
BP_GPU_DECLARE_ENTRY_POINTS(rocm, ROCM_HIDDEN, rocm_device_t)

/* ---- module.c ------------------------------------------------------------ */
/* Loads a code object for d (device current, caller serialises per
 * device): from the on-disk cache when one for this source, options,
 * architecture and runtime loads, else compiled through hiprtc (and
 * cached). name labels messages and the cache file; opts (NULL for none)
 * are extra hiprtc options, whitespace-separated. app: the source is the
 * application's, so a compile error is BP_ERR_INVALID_ARGUMENT rather than
 * BP_ERR_INTERNAL. The caller owns *out (hipModuleUnload). */
ROCM_HIDDEN bp_status_t rocm_code_object_load(rocm_device_t *d,
                                              const char *src,
                                              const char *name,
                                              const char *opts, bool app,
                                              hipModule_t *out);

#endif /* BACKPLANE_ROCM_PLUGIN_H */
