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
 * plugins/common/gpu_marshal.h (tensor views) and gpu_kernel_args.h.
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

#define ROCM_HIDDEN __attribute__((visibility("hidden")))
#define ROCM_PLUGIN_NAME "rocm"
#define ROCM_PLUGIN_VERSION "0.1.0"

/* Kernel modules, one per file kernels/hip/<name>.hip (see module.c). */
#define ROCM_MODULES(X)                                                        \
  X(ELEMENTWISE, elementwise)                                                  \
  X(REDUCE, reduce)                                                            \
  X(NORM, norm)                                                                \
  X(GEMM, gemm)                                                                \
  X(CONV, conv)                                                                \
  X(ATTENTION, attention)                                                      \
  X(ADAM, adam)                                                                \
  X(RANDOM, random)

typedef enum rocm_module_id {
#define ROCM__MOD_ENUM(id, file) ROCM_MOD_##id,
  ROCM_MODULES(ROCM__MOD_ENUM)
#undef ROCM__MOD_ENUM
      ROCM_MOD_COUNT
} rocm_module_id_t;

/* One opened device. HIP has no context stack: every entry point makes the
 * device current on its thread with hipSetDevice. */
typedef struct rocm_device {
  int ordinal;
  char arch[64];         /* gcnArchName, e.g. "gfx90a:sramecc+:xnack-" */
  int smem_max;          /* shared memory per block */
  uint64_t memory_limit; /* 0: none */
  uint64_t memory_used;  /* under lock */
  pthread_mutex_t lock;  /* module table and memory accounting */
  /* Held shared by null-stream work, exclusively by a graph capture
   * (graph.c): the one must not run during the other. */
  pthread_rwlock_t capture_lock;
  hipModule_t modules[ROCM_MOD_COUNT];
  bp_gpu_blas_state_t blas; /* rocBLAS handle and choices, under lock */
} rocm_device_t;

typedef struct rocm_stream {
  hipStream_t s;
  bool capturing; /* between graph_begin and graph_end */
} rocm_stream_t;

typedef struct rocm_event {
  hipEvent_t e;
} rocm_event_t;

/* ---- runtime.c ----------------------------------------------------------- */
ROCM_HIDDEN extern hip_runtime_t rocm_rt;
ROCM_HIDDEN extern const bp_host_services_t *rocm_host;
/* Opens libamdhip64.so (or $BACKPLANE_HIP_RUNTIME), resolves every entry
 * point, calls hipInit once and looks for hiprtc (or $BACKPLANE_HIPRTC).
 * BP_ERR_UNAVAILABLE with a reason when there is no runtime; a missing
 * hiprtc is not an error here (rocm_rt.hiprtcCompileProgram stays NULL and
 * rocm_rt.rtc_reason says why). Thread-safe; the result is cached. */
ROCM_HIDDEN bp_status_t rocm_runtime_load(void);
ROCM_HIDDEN void rocm_runtime_unload(void);
/* Maps a hipError_t to a status and, when it is an error, sets the message
 * "rocm: <what>: <hipErrorName> (<description>)". */
ROCM_HIDDEN bp_status_t rocm_check(hipError_t r, const char *what);
ROCM_HIDDEN void rocm_log(bp_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The gcnArchName of device ordinal into out ("" when unreadable). */
ROCM_HIDDEN void rocm_arch_name(int ordinal, char *out, size_t cap);

/* ---- device.c ------------------------------------------------------------ */
/* Makes d current on this thread (hipSetDevice). */
ROCM_HIDDEN bp_status_t rocm_enter(rocm_device_t *d);
/* The hipStream_t an op runs on: the stream's, or the null stream. */
static inline hipStream_t rocm_stream_of(bp_plugin_stream_t *s) {
  return s ? ((rocm_stream_t *)(void *)s)->s : (hipStream_t)0;
}

/* ---- shared entry points: memory.c, stream.c, graph.c, blas.c ---------- */
BP_GPU_DECLARE_ENTRY_POINTS(rocm, ROCM_HIDDEN, rocm_device_t)

/* ---- module.c ------------------------------------------------------------ */
/* Launches kernel name of module m (compiled through hiprtc or read from
 * the code-object cache on first use) with one by-value parameter block.
 * A zero-sized grid is a no-op. */
ROCM_HIDDEN bp_status_t rocm_launch(rocm_device_t *d, bp_plugin_stream_t *s,
                                    rocm_module_id_t m, const char *name,
                                    const unsigned grid[3],
                                    const unsigned block[3], unsigned smem,
                                    void *params);
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
/* Unloads every module of d (device current). */
ROCM_HIDDEN void rocm_modules_unload(rocm_device_t *d);
/* Blocks of `threads` to cover n items, capped for grid-stride loops. */
ROCM_HIDDEN unsigned rocm_blocks_for(int64_t n, unsigned threads);

/* ---- tensor views: plugins/common/gpu_marshal.h (shared with CUDA) ----- */

/* ---- kernels.c: custom HIP kernels (ABI 1.1) ----------------------------- */
ROCM_HIDDEN bp_status_t rocm_kernel_create(bp_plugin_device_t *device,
                                           const bp_kernel_source_t *source,
                                           bp_plugin_kernel_t **out_kernel);
ROCM_HIDDEN void rocm_kernel_destroy(bp_plugin_device_t *device,
                                     bp_plugin_kernel_t *kernel);
ROCM_HIDDEN bp_status_t rocm_kernel_launch(bp_plugin_device_t *device,
                                           bp_plugin_stream_t *stream,
                                           bp_plugin_kernel_t *kernel,
                                           const bp_launch_args_t *args);

/* ---- ops ----------------------------------------------------------------- */
#define ROCM_OPS(X) BP_GPU_OPS(X)

#define ROCM__DECLARE_OP(name, args_t)                                         \
  ROCM_HIDDEN bp_status_t rocm_op_##name(bp_plugin_device_t *,                 \
                                         bp_plugin_stream_t *, const args_t *);
ROCM_OPS(ROCM__DECLARE_OP)
#undef ROCM__DECLARE_OP

/* Device entry points (device.c, memory.c, stream.c). */
ROCM_HIDDEN bp_status_t rocm_device_open(uint32_t index,
                                         const bp_plugin_device_config_t *cfg,
                                         bp_plugin_device_t **out_device);
ROCM_HIDDEN void rocm_device_close(bp_plugin_device_t *device);
ROCM_HIDDEN bp_status_t rocm_device_synchronize(bp_plugin_device_t *device);
static inline rocm_device_t *rocm_dev(bp_plugin_device_t *d) {
  return (rocm_device_t *)(void *)d;
}

#endif /* BACKPLANE_ROCM_PLUGIN_H */
