/*
 * cuda_plugin.h — internals shared by the files of backend-cuda.so.
 *
 * The usual plugin file set (docs/plugin-guide.md): descriptor.c
 * (descriptor, init, probe), device.c (open/close on the primary context),
 * memory.c (allocation, copies), stream.c (streams, events), and the ops in
 * ops_*.c, one per kernel family (argument marshalling into the parameter
 * blocks of kernels/cuda/bp_cuda_args.h). CUDA-specific: driver.c (dlopen
 * and dlsym of libcuda.so.1, CUresult -> bp_status_t), module.c (embedded
 * PTX, kernel lookup and launch), kernels.c (custom PTX kernels of the
 * application). Shared with the ROCm backend: plugins/common/gpu_marshal.h
 * (tensor views) and gpu_kernel_args.h (custom-kernel parameters).
 */
#ifndef BACKPLANE_CUDA_PLUGIN_H
#define BACKPLANE_CUDA_PLUGIN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/cuda/bp_cuda_args.h"
#include "plugin-api.h"
#include "plugins/common/gpu_blas.h"
#include "plugins/common/gpu_plugin.h"
#include "plugins/common/gpu_marshal.h"
#include "plugins/cuda/cuda_driver.h"

#define CUDA_HIDDEN __attribute__((visibility("hidden")))
#define CUDA_PLUGIN_NAME "cuda"
#define CUDA_PLUGIN_VERSION "0.1.0"

/* The PTX targets compute_80: older GPUs are listed but claim no ops. */
#define CUDA_MIN_CC_MAJOR 8

/* Kernel modules, one per file kernels/cuda/<name>.cu (see module.c). */
#define CUDA_MODULES(X)                                                        \
  X(ELEMENTWISE, elementwise)                                                  \
  X(REDUCE, reduce)                                                            \
  X(NORM, norm)                                                                \
  X(GEMM, gemm)                                                                \
  X(CONV, conv)                                                                \
  X(ATTENTION, attention)                                                      \
  X(ADAM, adam)                                                                \
  X(RANDOM, random)

typedef enum cuda_module_id {
#define CUDA__MOD_ENUM(id, file) CUDA_MOD_##id,
  CUDA_MODULES(CUDA__MOD_ENUM)
#undef CUDA__MOD_ENUM
      CUDA_MOD_COUNT
} cuda_module_id_t;

/* One opened device. The primary context is retained while it is open. */
typedef struct cuda_device {
  int ordinal;
  CUdevice dev;
  CUcontext ctx;
  int cc_major, cc_minor;
  int smem_optin;        /* max dynamic shared memory per block, opt-in */
  bool async_alloc;      /* cuMemAllocAsync usable on this device */
  uint64_t memory_limit; /* 0: none */
  uint64_t memory_used;  /* under lock */
  bool allow_tf32;
  pthread_mutex_t lock;  /* module cache and memory accounting */
  /* Held shared by legacy-stream work, exclusively by a graph capture
   * (graph.c): the one must not run during the other. */
  pthread_rwlock_t capture_lock;
  CUmodule modules[CUDA_MOD_COUNT];
  bp_gpu_blas_state_t blas; /* cuBLAS handle and choices, under lock */
} cuda_device_t;

typedef struct cuda_stream {
  CUstream s;
  bool capturing; /* between graph_begin and graph_end */
} cuda_stream_t;

typedef struct cuda_event {
  CUevent e;
} cuda_event_t;

/* ---- driver.c ------------------------------------------------------------ */
/* The process-wide driver table (valid after a successful cuda_driver_load).
 */
CUDA_HIDDEN extern cuda_driver_t cuda_drv;
CUDA_HIDDEN extern const bp_host_services_t *cuda_host;
/* Opens libcuda.so.1 (or $BACKPLANE_CUDA_DRIVER), resolves every entry
 * point and calls cuInit once. BP_ERR_UNAVAILABLE with a reason otherwise.
 * Thread-safe; the result is cached. */
CUDA_HIDDEN bp_status_t cuda_driver_load(void);
/* Closes the driver handle (at shutdown). */
CUDA_HIDDEN void cuda_driver_unload(void);
/* Maps a CUresult to a status and, when it is an error, sets the message
 * "<what>: <CUDA_ERROR_NAME> (<description>)". */
CUDA_HIDDEN bp_status_t cuda_check(CUresult r, const char *what);
CUDA_HIDDEN void cuda_log(bp_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- device.c ------------------------------------------------------------ */
/* Makes the device's context current on this thread; pair with
 * cuda_ctx_leave. Returns the status of the push. */
CUDA_HIDDEN bp_status_t cuda_ctx_enter(cuda_device_t *d);
CUDA_HIDDEN void cuda_ctx_leave(void);
/* The CUstream an op runs on: the stream's, or the legacy default stream
 * (ordered with every blocking stream) for NULL. */
static inline CUstream cuda_stream_of(bp_plugin_stream_t *s) {
  return s ? ((cuda_stream_t *)(void *)s)->s : (CUstream)0;
}

/* ---- shared entry points: memory.c, stream.c, graph.c, blas.c ---------- */
BP_GPU_DECLARE_ENTRY_POINTS(cuda, CUDA_HIDDEN, cuda_device_t)

/* ---- module.c ------------------------------------------------------------ */
/* Looks up kernel name in module m, loading the module on first use. */
CUDA_HIDDEN bp_status_t cuda_kernel_get(cuda_device_t *d, cuda_module_id_t m,
                                        const char *name, CUfunction *out_fn);
/* Launches kernel name of module m with one by-value parameter block
 * (params, of size bytes); grid and block are {x, y, z}. A zero-sized grid
 * is a no-op. Enters and leaves the context itself. */
CUDA_HIDDEN bp_status_t cuda_launch(cuda_device_t *d, bp_plugin_stream_t *s,
                                    cuda_module_id_t m, const char *name,
                                    const unsigned grid[3],
                                    const unsigned block[3], unsigned smem,
                                    void *params);
/* The driver version (cuDriverGetVersion form) the embedded PTX's ISA
 * version needs, from its ".version" line; 0 when unknown. */
CUDA_HIDDEN int cuda_ptx_required_driver(int *out_isa_major,
                                         int *out_isa_minor);
/* Opts fn in to smem bytes of dynamic shared memory when that is over the
 * 48 KiB default; BP_ERR_UNSUPPORTED over the device's limit (context
 * current). name is for the message. */
CUDA_HIDDEN bp_status_t cuda_allow_smem(cuda_device_t *d, CUfunction fn,
                                        unsigned smem, const char *name);
/* Unloads every module of d (context must be current). */
CUDA_HIDDEN void cuda_modules_unload(cuda_device_t *d);
/* Blocks of `threads` to cover n items, capped for grid-stride loops. */
CUDA_HIDDEN unsigned cuda_blocks_for(int64_t n, unsigned threads);

/* ---- tensor views: plugins/common/gpu_marshal.h (shared with ROCm) ----- */

/* ---- kernels.c: custom PTX kernels (ABI 1.1) ---------------------------- */
CUDA_HIDDEN bp_status_t cuda_kernel_create(bp_plugin_device_t *device,
                                           const bp_kernel_source_t *source,
                                           bp_plugin_kernel_t **out_kernel);
CUDA_HIDDEN void cuda_kernel_destroy(bp_plugin_device_t *device,
                                     bp_plugin_kernel_t *kernel);
CUDA_HIDDEN bp_status_t cuda_kernel_launch(bp_plugin_device_t *device,
                                           bp_plugin_stream_t *stream,
                                           bp_plugin_kernel_t *kernel,
                                           const bp_launch_args_t *args);

/* ---- ops ----------------------------------------------------------------- */
#define CUDA_OPS(X) BP_GPU_OPS(X)

#define CUDA__DECLARE_OP(name, args_t)                                         \
  CUDA_HIDDEN bp_status_t cuda_op_##name(bp_plugin_device_t *,                 \
                                         bp_plugin_stream_t *, const args_t *);
CUDA_OPS(CUDA__DECLARE_OP)
#undef CUDA__DECLARE_OP

/* Device entry points (device.c, memory.c) used by the descriptor. */
CUDA_HIDDEN bp_status_t cuda_device_open(uint32_t index,
                                         const bp_plugin_device_config_t *cfg,
                                         bp_plugin_device_t **out_device);
CUDA_HIDDEN void cuda_device_close(bp_plugin_device_t *device);
CUDA_HIDDEN bp_status_t cuda_device_synchronize(bp_plugin_device_t *device);
CUDA_HIDDEN bp_status_t cuda_host_alloc(bp_plugin_device_t *device, uint64_t size, void **out_ptr);
CUDA_HIDDEN void cuda_host_free(bp_plugin_device_t *device, void *ptr);

static inline cuda_device_t *cuda_dev(bp_plugin_device_t *d) {
  return (cuda_device_t *)(void *)d;
}

#endif /* BACKPLANE_CUDA_PLUGIN_H */
