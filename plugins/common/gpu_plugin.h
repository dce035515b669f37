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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin-api.h"
#include "plugins/common/gpu_blas.h"

/* X(name, args_t): every op entry point, ops_*.c (gpu_ops_*.inc). */
#define BP_GPU_OPS(X)                                                          \
  X(gemm, bp_gemm_args_t)                                                      \
  X(gemv, bp_gemv_args_t)                                                      \
  X(conv2d, bp_conv2d_args_t)                                                  \
  X(pool2d, bp_pool2d_args_t)                                                  \
  X(batch_norm, bp_batch_norm_args_t)                                          \
  X(layer_norm, bp_norm_args_t)                                                \
  X(rms_norm, bp_norm_args_t)                                                  \
  X(softmax, bp_softmax_args_t)                                                \
  X(attention, bp_attention_args_t)                                            \
  X(adam, bp_adam_args_t)                                                      \
  X(unary, bp_unary_args_t)                                                    \
  X(binary, bp_binary_args_t)                                                  \
  X(reduce, bp_reduce_args_t)                                                  \
  X(fill, bp_fill_args_t)                                                      \
  X(copy, bp_copy_args_t)                                                      \
  X(cast, bp_copy_args_t)                                                      \
  X(random, bp_random_args_t)

/* P: the prefix (cuda, rocm); H: the visibility attribute; DEV: the
 * plugin's device type. */
#define BP_GPU_DECLARE_ENTRY_POINTS(P, H, DEV)                                 \
  /* memory.c (gpu_memory.inc) */                                             \
  H bp_status_t P##_mem_alloc(bp_plugin_device_t *device, uint64_t size,       \
                              uint64_t *out_ptr);                              \
  H void P##_mem_free(bp_plugin_device_t *device, uint64_t ptr);               \
  H bp_status_t P##_mem_write(bp_plugin_device_t *device,                      \
                              bp_plugin_stream_t *stream, uint64_t dst,        \
                              uint64_t dst_offset, const void *src,            \
                              uint64_t size);                                  \
  H bp_status_t P##_mem_read(bp_plugin_device_t *device,                       \
                             bp_plugin_stream_t *stream, void *dst,            \
                             uint64_t src, uint64_t src_offset,                \
                             uint64_t size);                                   \
  H bp_status_t P##_mem_copy(bp_plugin_device_t *device,                       \
                             bp_plugin_stream_t *stream, uint64_t dst,         \
                             uint64_t dst_offset, uint64_t src,                \
                             uint64_t src_offset, uint64_t size);              \
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
  /* graph.c (gpu_graph.inc): native graphs by stream capture, ABI 1.2 */     \
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
  /* Brackets work on the legacy / null stream: waits while a capture runs   \
   * on another thread; BP_ERR_UNSUPPORTED (message set) on the capturing   \
   * thread. what names the work for the message. */                          \
  H bp_status_t P##_legacy_begin(DEV *d, const char *what);                    \
  H void P##_legacy_end(DEV *d);                                               \
  /* True between graph_begin and graph_end on this thread. */                 \
  H bool P##_capturing_here(void);                                             \
  /* Around a potentially unsafe driver call (module load, BLAS handle)       \
   * while this thread captures: relaxed capture mode, then the previous. */  \
  H int P##_capture_relax(void);                                               \
  H void P##_capture_restore(int mode);                                        \
  /* blas.c: the vendor BLAS through dlopen, for gpu_blas.inc. True when the  \
   * library is loaded and d has a working handle (created on first use; a   \
   * failure is logged once and sticks). */                                    \
  H bool P##_blas_ready(DEV *d);                                               \
  /* Runs one mapped gemm on stream s. */                                      \
  H bp_status_t P##_blas_run(DEV *d, bp_plugin_stream_t *s,                    \
                             const bp_gpu_blas_call_t *c);                     \
  /* Device name and driver / library versions, for the tuning-cache key. */  \
  H void P##_blas_identity(DEV *d, char *dev, size_t dev_size, char *driver,   \
                           size_t driver_size);                                \
  /* Destroys d's handle and workspace (device current); closes the library   \
   * (shutdown). */                                                            \
  H void P##_blas_release(DEV *d);                                             \
  H void P##_blas_unload(void);

#endif /* BACKPLANE_GPU_PLUGIN_H */
