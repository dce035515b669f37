/*
 * plugins/common/gpu_plugin.h — what the CUDA and ROCm plugin headers
 * declare alike: the op list and the entry points their shared code
 * (plugins/common/gpu_*.inc, each included by one file of each plugin
 * under its own names) and their stream.c define. Each plugin header
 * expands BP_GPU_DECLARE_ENTRY_POINTS once with its prefix, its visibility
 * attribute and its device type, after defining that type.
 */
#ifndef BACKPLANE_GPU_PLUGIN_H
#define BACKPLANE_GPU_PLUGIN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin-api.h"
#include "plugins/common/gpu_blas.h"

/* The visibility of every internal name of the GPU plugins. */
#define BP_GPU_HIDDEN __attribute__((visibility("hidden")))

/* X(P, name, args_t): every op entry point, ops_*.c (gpu_ops_*.inc); P
 * is passed through (the plugin prefix, or anything the X ignores). */
#define BP_GPU_OPS(X, P)                                                       \
  X(P, gemm, bp_gemm_args_t)                                                   \
  X(P, gemv, bp_gemv_args_t)                                                   \
  X(P, conv2d, bp_conv2d_args_t)                                               \
  X(P, pool2d, bp_pool2d_args_t)                                               \
  X(P, batch_norm, bp_batch_norm_args_t)                                       \
  X(P, layer_norm, bp_norm_args_t)                                             \
  X(P, rms_norm, bp_norm_args_t)                                               \
  X(P, softmax, bp_softmax_args_t)                                             \
  X(P, attention, bp_attention_args_t)                                         \
  X(P, adam, bp_adam_args_t)                                                   \
  X(P, unary, bp_unary_args_t)                                                 \
  X(P, binary, bp_binary_args_t)                                               \
  X(P, reduce, bp_reduce_args_t)                                               \
  X(P, fill, bp_fill_args_t)                                                   \
  X(P, copy, bp_copy_args_t)                                                   \
  X(P, cast, bp_copy_args_t)                                                   \
  X(P, random, bp_random_args_t)

/* Kernel modules, one per op family: kernels/cuda/<file>.cu and
 * kernels/hip/<file>.hip hold the same families (module.c of each plugin
 * embeds and loads them). X(ID, file). */
#define BP_GPU_MODULES(X)                                                      \
  X(ELEMENTWISE, elementwise)                                                  \
  X(REDUCE, reduce)                                                            \
  X(NORM, norm)                                                                \
  X(GEMM, gemm)                                                                \
  X(CONV, conv)                                                                \
  X(ATTENTION, attention)                                                      \
  X(ADAM, adam)                                                                \
  X(RANDOM, random)

typedef enum bp_gpu_module_id {
#define BP_GPU__MOD_ENUM(id, file) BP_GPU_MOD_##id,
  BP_GPU_MODULES(BP_GPU__MOD_ENUM)
#undef BP_GPU__MOD_ENUM
      BP_GPU_MOD_COUNT
} bp_gpu_module_id_t;

/* The fields every device of the two plugins has, first in its struct:
 * what the shared code (gpu_memory.inc, gpu_graph.inc, gpu_blas.inc) and
 * module.c use. MODULE_T: the driver's module handle type. */
#define BP_GPU_DEVICE_FIELDS(MODULE_T)                                         \
  int ordinal;                                                                 \
  uint64_t memory_limit; /* 0: none */                                         \
  uint64_t memory_used;  /* under lock */                                      \
  pthread_mutex_t lock;  /* module table and memory accounting */              \
  /* Held shared by legacy / null-stream work, exclusively by a graph         \
   * capture (gpu_graph.inc): the one must not run during the other. */      \
  pthread_rwlock_t capture_lock;                                               \
  MODULE_T modules[BP_GPU_MOD_COUNT]; /* loaded on first use */                \
  bp_gpu_blas_state_t blas; /* vendor BLAS handle and choices, under lock */

/* P_stream_t and P_event_t (one driver stream / event each) and
 * P_stream_of(s): the driver stream an op runs on, the stream's, or the
 * legacy / null stream (ordered with every blocking stream) for NULL.
 * STREAM_T and EVENT_T: the driver's handle types. */
#define BP_GPU_DECLARE_STREAM_TYPES(P, STREAM_T, EVENT_T)                      \
  typedef struct P##_stream {                                                  \
    STREAM_T s;                                                                \
    bool capturing; /* between graph_begin and graph_end */                    \
  } P##_stream_t;                                                              \
  typedef struct P##_event {                                                   \
    EVENT_T e;                                                                 \
  } P##_event_t;                                                               \
  static inline STREAM_T P##_stream_of(bp_plugin_stream_t *s) {                \
    return s ? ((P##_stream_t *)(void *)s)->s : (STREAM_T)0;                   \
  }

/* The plugin-wide declarations each plugin header makes alike, expanded
 * once with its prefix P, device type DEV and the driver's result type
 * RESULT_T (CUresult, hipError_t); all hidden. */
#define BP_GPU_DECLARE_PLUGIN(P, DEV, RESULT_T)                                \
  /* driver.c / runtime.c: the host services given to init. */                 \
  BP_GPU_HIDDEN extern const bp_host_services_t *P##_host;                     \
  /* Maps a driver result to a status and, when it is an error, sets the       \
   * message "<P>: <what>: <error name> (<description>)". The mapping is       \
   * each plugin's own. */                                                     \
  BP_GPU_HIDDEN bp_status_t P##_check(RESULT_T r, const char *what);           \
  /* Logs through the host under the plugin's name (no-op before init). */     \
  BP_GPU_HIDDEN void P##_log(bp_log_level_t level, const char *fmt, ...)       \
      __attribute__((format(printf, 2, 3)));                                   \
  /* module.c: launches kernel name of module m (loaded on first use) with     \
   * one by-value parameter block; grid and block are {x, y, z}. A             \
   * zero-sized grid is a no-op. Makes the device current itself. */           \
  BP_GPU_HIDDEN bp_status_t P##_launch(                                        \
      DEV *d, bp_plugin_stream_t *s, bp_gpu_module_id_t m, const char *name,   \
      const unsigned grid[3], const unsigned block[3], unsigned smem,          \
      void *params);                                                           \
  /* Unloads every module of d (device current). */                            \
  BP_GPU_HIDDEN void P##_modules_unload(DEV *d);                               \
  /* Blocks of `threads` to cover n items, capped for grid-stride loops. */    \
  BP_GPU_HIDDEN unsigned P##_blocks_for(int64_t n, unsigned threads);          \
  /* kernels.c: the application's custom kernels (ABI 1.1). */                 \
  BP_GPU_HIDDEN bp_status_t P##_kernel_create(                                 \
      bp_plugin_device_t *device, const bp_kernel_source_t *source,            \
      bp_plugin_kernel_t **out_kernel);                                        \
  BP_GPU_HIDDEN void P##_kernel_destroy(bp_plugin_device_t *device,            \
                                        bp_plugin_kernel_t *kernel);           \
  BP_GPU_HIDDEN bp_status_t P##_kernel_launch(                                 \
      bp_plugin_device_t *device, bp_plugin_stream_t *stream,                  \
      bp_plugin_kernel_t *kernel, const bp_launch_args_t *args);               \
  /* device.c: the device entry points of the descriptor. */                   \
  BP_GPU_HIDDEN bp_status_t P##_device_open(                                   \
      uint32_t index, const bp_plugin_device_config_t *cfg,                    \
      bp_plugin_device_t **out_device);                                        \
  BP_GPU_HIDDEN void P##_device_close(bp_plugin_device_t *device);             \
  BP_GPU_HIDDEN bp_status_t P##_device_synchronize(                            \
      bp_plugin_device_t *device);                                             \
  static inline DEV *P##_dev(bp_plugin_device_t *d) {                          \
    return (DEV *)(void *)d;                                                   \
  }                                                                            \
  /* ops_*.c (gpu_ops_*.inc) */                                                \
  BP_GPU_OPS(BP_GPU__DECLARE_OP, P)

#define BP_GPU__DECLARE_OP(P, name, args_t)                                    \
  BP_GPU_HIDDEN bp_status_t P##_op_##name(                                     \
      bp_plugin_device_t *, bp_plugin_stream_t *, const args_t *);

/* P: the prefix (cuda, rocm); H: the visibility attribute; DEV: the
 * plugin's device type. */
#define BP_GPU_DECLARE_ENTRY_POINTS(P, H, DEV)                                 \
  /* memory.c (gpu_memory.inc) */                                              \
  H bp_status_t P##_mem_alloc(bp_plugin_device_t *device, uint64_t size,       \
                              uint64_t *out_ptr);                              \
  H void P##_mem_free(bp_plugin_device_t *device, uint64_t ptr);               \
  H bp_status_t P##_mem_write(                                                 \
      bp_plugin_device_t *device, bp_plugin_stream_t *stream, uint64_t dst,    \
      uint64_t dst_offset, const void *src, uint64_t size);                    \
  H bp_status_t P##_mem_read(                                                  \
      bp_plugin_device_t *device, bp_plugin_stream_t *stream, void *dst,       \
      uint64_t src, uint64_t src_offset, uint64_t size);                       \
  H bp_status_t P##_mem_copy(                                                  \
      bp_plugin_device_t *device, bp_plugin_stream_t *stream, uint64_t dst,    \
      uint64_t dst_offset, uint64_t src, uint64_t src_offset, uint64_t size);  \
  /* stream.c */                                                               \
  H bp_status_t P##_stream_create(bp_plugin_device_t *device,                  \
                                  bp_plugin_stream_t **out_stream);            \
  H void P##_stream_destroy(bp_plugin_device_t *device,                        \
                            bp_plugin_stream_t *stream);                       \
  H bp_status_t P##_stream_synchronize(bp_plugin_device_t *device,             \
                                       bp_plugin_stream_t *stream);            \
  H bp_status_t P##_event_create(bp_plugin_device_t *device,                   \
                                 bp_plugin_event_t **out_event);               \
  H void P##_event_destroy(bp_plugin_device_t *device,                         \
                           bp_plugin_event_t *event);                          \
  H bp_status_t P##_event_record(bp_plugin_device_t *device,                   \
                                 bp_plugin_event_t *event,                     \
                                 bp_plugin_stream_t *stream);                  \
  H bp_status_t P##_stream_wait_event(bp_plugin_device_t *device,              \
                                      bp_plugin_stream_t *stream,              \
                                      bp_plugin_event_t *event);               \
  H bp_status_t P##_event_synchronize(bp_plugin_device_t *device,              \
                                      bp_plugin_event_t *event);               \
  H bp_status_t P##_event_elapsed(bp_plugin_device_t *device,                  \
                                  bp_plugin_event_t *start,                    \
                                  bp_plugin_event_t *end, double *out_ms);     \
  /* graph.c (gpu_graph.inc): native graphs by stream capture, ABI 1.2 */      \
  H bp_status_t P##_graph_begin(bp_plugin_device_t *device,                    \
                                bp_plugin_stream_t *stream);                   \
  H bp_status_t P##_graph_end(bp_plugin_device_t *device,                      \
                              bp_plugin_stream_t *stream,                      \
                              bp_plugin_graph_t **out_graph);                  \
  H bp_status_t P##_graph_launch(bp_plugin_device_t *device,                   \
                                 bp_plugin_stream_t *stream,                   \
                                 bp_plugin_graph_t *graph);                    \
  H void P##_graph_destroy(bp_plugin_device_t *device,                         \
                           bp_plugin_graph_t *graph);                          \
  /* Brackets work on the legacy / null stream: waits while a capture runs     \
   * on another thread; BP_ERR_UNSUPPORTED (message set) on the capturing      \
   * thread. what names the work for the message. */                           \
  H bp_status_t P##_legacy_begin(DEV *d, const char *what);                    \
  H void P##_legacy_end(DEV *d);                                               \
  /* True between graph_begin and graph_end on this thread. */                 \
  H bool P##_capturing_here(void);                                             \
  /* Around a potentially unsafe driver call (module load, BLAS handle)        \
   * while this thread captures: relaxed capture mode, then the previous. */   \
  H int P##_capture_relax(void);                                               \
  H void P##_capture_restore(int mode);                                        \
  /* blas.c: the vendor BLAS through dlopen, for gpu_blas.inc. True when the   \
   * library is loaded and d has a working handle (created on first use; a     \
   * failure is logged once and sticks). */                                    \
  H bool P##_blas_ready(DEV *d);                                               \
  /* Runs one mapped gemm on stream s. */                                      \
  H bp_status_t P##_blas_run(DEV *d, bp_plugin_stream_t *s,                    \
                             const bp_gpu_blas_call_t *c);                     \
  /* Device name and driver / library versions, for the tuning-cache key. */   \
  H void P##_blas_identity(DEV *d, char *dev, size_t dev_size, char *driver,   \
                           size_t driver_size);                                \
  /* Destroys d's handle and workspace (device current); closes the library    \
   * (shutdown). */                                                            \
  H void P##_blas_release(DEV *d);                                             \
  H void P##_blas_unload(void);

#endif /* BACKPLANE_GPU_PLUGIN_H */
