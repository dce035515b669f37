/*
 * backplane.h — the whole backplane application API.
 *
 * Conventions, once for every function below:
 *  - Every fallible function returns a bp_status_t: BP_OK (0) or a negative
 *    error. bp_last_error() then returns a message for the calling thread
 *    naming the argument at fault and, where it came from a plugin, the
 *    plugin's own words.
 *  - Out-parameters come last, are named out_*, and are zeroed on entry.
 *  - Ownership: *_create / *_open / *_alloc give the caller an object it
 *    owns and must destroy / close / free; accessors borrow. Destroying NULL
 *    is a no-op. Children must be released before their parent (buffers and
 *    streams before their device, devices before their context); a parent
 *    destroyed first releases what is left and logs a warning.
 *  - Every argument is validated before any plugin sees it; a rejected call
 *    writes nothing. Handles that were destroyed are detected and rejected.
 *  - Every function is thread-safe. Work on one stream runs in order;
 *    different streams are independent.
 */
#ifndef BACKPLANE_H
#define BACKPLANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backplane_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(BP_BUILDING_LIBRARY)
#define BP_API __attribute__((visibility("default")))
#else
#define BP_API
#endif

#define BP_VERSION_MAJOR 0
#define BP_VERSION_MINOR 1
#define BP_VERSION_PATCH 0

typedef struct bp_context bp_context_t;
typedef struct bp_device bp_device_t;
typedef struct bp_buffer bp_buffer_t;
typedef struct bp_stream bp_stream_t;
typedef struct bp_event bp_event_t;
typedef struct bp_graph bp_graph_t;
typedef struct bp_kernel bp_kernel_t;

/* ---------------------------------------------------------------------------
 * Status, errors, versions.
 */

/* Returns a static English description of a status; never NULL. */
BP_API const char *bp_status_string(bp_status_t status);
/* Returns the symbolic name of a status ("BP_ERR_UNSUPPORTED"); never NULL.*/
BP_API const char *bp_status_name(bp_status_t status);
/* Returns the calling thread's message for its last failed call ("" when the
 * last call succeeded). Valid until the thread's next backplane call. */
BP_API const char *bp_last_error(void);
/* Returns the library version as "major.minor.patch". */
BP_API const char *bp_version(void);

/* Size in bytes of one element of dtype, 0 for an invalid dtype. */
BP_API size_t bp_dtype_size(bp_dtype_t dtype);
/* Short name ("f32", "bf16"), or "?" for an invalid dtype. */
BP_API const char *bp_dtype_name(bp_dtype_t dtype);
/* Parses a dtype name; BP_ERR_INVALID_ARGUMENT when unknown. */
BP_API bp_status_t bp_dtype_parse(const char *name, bp_dtype_t *out_dtype);
/* Name of an op family ("gemm"), or "?" when out of range. */
BP_API const char *bp_op_name(bp_op_t op);

/* ---------------------------------------------------------------------------
 * Logging. Lines come from the library (categories "loader", "api",
 * "memory") and from plugins ("plugin NAME"), and go to stderr unless a
 * handler is set. BACKPLANE_DEBUG (level and categories, e.g.
 * "debug,loader") sets the starting filter; the default is warn, all
 * categories. These functions are thread-safe.
 */

/* Receives one log line: its level, its category ("loader", "api",
 * "memory", or "plugin NAME" for a plugin's line) and the message without a
 * trailing newline; both strings are valid only during the call. Calls are
 * serialized (one line at a time, from whichever thread logged) and the
 * handler must not wait on another thread that may log. */
typedef void (*bp_log_handler_t)(bp_log_level_t level, const char *category,
                                 const char *message, void *user_data);
/* Shows lines of level at most level from now on, in place of the level that
 * BACKPLANE_DEBUG chose; the categories BACKPLANE_DEBUG chose still apply. */
BP_API void bp_log_set_level(bp_log_level_t level);
/* Returns the level now in force (BACKPLANE_DEBUG's or the last set). */
BP_API bp_log_level_t bp_log_get_level(void);
/* Sends every line that passes the filter to handler with user_data in
 * place of stderr; NULL restores stderr. When it returns, no call of the
 * previous handler is still running. */
BP_API void bp_log_set_handler(bp_log_handler_t handler, void *user_data);

/* ---------------------------------------------------------------------------
 * Context: one loader instance. Discovery happens in bp_context_create.
 */
typedef struct bp_context_options {
  uint32_t struct_size;  /* sizeof(bp_context_options_t) */
  /* An extra plugin directory searched after BACKPLANE_PLUGIN_PATH and the
   * build-time directory (may be NULL). */
  const char *plugin_dir;
  /* Plugins are probed in a helper process before the application loads
   * them (isolation, the default), so a plugin that crashes, exits or hangs
   * while loading or probing is refused instead of taking the application
   * down. true insists on it even when BACKPLANE_ISOLATE=0; false means the
   * default (see in_process_probe, and docs/runtime.md "Plugin isolation"). */
  bool isolate_probe;
  /* Skip BACKPLANE_PLUGIN_PATH and the build-time directory. */
  bool only_plugin_dir;
  /* Seconds an isolated probe may take (0: 10 s). */
  uint32_t probe_timeout_s;
  /* fields below: added when isolation became the default; read only when
   * struct_size covers them */
  /* Turns isolation off: plugins are loaded and probed in the application's
   * own process, as BACKPLANE_ISOLATE=0 does for callers that leave
   * isolate_probe false. */
  bool in_process_probe;
  /* fields below: added with layers; read only when struct_size covers them */
  /* The layers to stack on every device of the context, first named on
   * top ("trace,check"; copied at create). NULL: BACKPLANE_LAYERS decides;
   * "": none. See docs/runtime.md "Layers". */
  const char *layers;
} bp_context_options_t;

/* Creates a context: scans the plugin search path, loads and probes every
 * plugin, ranks the devices. options may be NULL. Refused plugins do not make
 * this fail; they are listed by bp_context_plugin_report. The caller owns the
 * context. */
BP_API bp_status_t bp_context_create(const bp_context_options_t *options,
                                     bp_context_t **out_context);
/* Closes every device still open, unloads the plugins and frees the context.
 */
BP_API void bp_context_destroy(bp_context_t *context);

/* How far loading a candidate plugin got. */
typedef enum bp_plugin_stage {
  BP_STAGE_OPEN = 0,    /* dlopen */
  BP_STAGE_SYMBOL = 1,  /* descriptor symbol lookup */
  BP_STAGE_VERSION = 2, /* magic, ABI version, struct size */
  BP_STAGE_VALIDATE = 3,/* required pointers and strings */
  BP_STAGE_INIT = 4,
  BP_STAGE_PROBE = 5,
  BP_STAGE_READY = 6
} bp_plugin_stage_t;

/* Everything known about one candidate plugin file. */
typedef struct bp_plugin_report {
  uint32_t struct_size;
  char path[1024];
  char name[64];        /* from the descriptor, "" if never read */
  char version[64];
  bool loaded;          /* true when its devices are usable */
  bp_plugin_stage_t stage; /* the stage reached (failed at, when refused) */
  bp_status_t status;   /* why it was refused, BP_OK when loaded */
  char reason[512];
  uint16_t plugin_abi_major, plugin_abi_minor; /* 0 when never read */
  uint16_t loader_abi_major, loader_abi_minor;
  uint32_t device_count;
} bp_plugin_report_t;

/* Number of candidate plugin files seen, loaded or refused. */
BP_API bp_status_t bp_context_plugin_count(const bp_context_t *context,
                                           uint32_t *out_count);
/* Copies the report of candidate index (in search order). */
BP_API bp_status_t bp_context_plugin_report(const bp_context_t *context,
                                            uint32_t index,
                                            bp_plugin_report_t *out_report);

/* The plugin directories the context searched, in search order
 * (BACKPLANE_PLUGIN_PATH's entries, the installed plugin directory,
 * options.plugin_dir), each once as spelled, absent ones included: where a
 * context that found no plugin looked. */
BP_API bp_status_t bp_context_search_dir_count(const bp_context_t *context,
                                               uint32_t *out_count);
/* Copies directory index (< bp_context_search_dir_count) into out_path
 * (size bytes, truncated to fit); *out_present (optional) says whether it
 * exists as a directory. */
BP_API bp_status_t bp_context_search_dir(const bp_context_t *context, uint32_t index,
                                         char *out_path, size_t size, bool *out_present);


/* One device in the ranked list. */
typedef struct bp_device_entry {
  uint32_t struct_size;
  uint32_t rank;          /* 0 is the best */
  char backend[64];       /* plugin name */
  uint32_t backend_index; /* device index inside its plugin */
  bp_device_info_t info;
  /* Where a PCI device hangs off (from hwloc): the NUMA node of its root
   * port and the CPUs local to it ("0-15"); -1 and "" when unknown, and for
   * devices without a PCI identity. */
  int32_t numa_node;
  char local_cpus[64];
} bp_device_entry_t;

/* Number of devices, all plugins together. */
BP_API bp_status_t bp_context_device_count(const bp_context_t *context,
                                           uint32_t *out_count);
/* Copies entry rank (0 = best) of the ranked device list. */
BP_API bp_status_t bp_context_device_entry(const bp_context_t *context,
                                           uint32_t rank,
                                           bp_device_entry_t *out_entry);

/* Points the autotuning cache at the JSON file path (copied), in place of
 * BACKPLANE_TUNING_CACHE and the default $XDG_CACHE_HOME/backplane/
 * tuning.json (~/.cache/backplane/tuning.json). NULL restores that order.
 * Plugins are loaded once per process and reach the cache through host
 * services that carry no context, so the cache is one per process: the path
 * applies to every context, and the last call wins. The file is read on the
 * next lookup or store, not here. Thread-safe. See docs/runtime.md. */
BP_API bp_status_t bp_context_set_tuning_cache(bp_context_t *context,
                                               const char *path);
/* Writes the autotuning cache's file now (merged with what is there, as a
 * store does), so that it exists even when nothing was stored. Fails when
 * the cache is in memory only, the file has a newer format, or it could not
 * be written. Thread-safe. */
BP_API bp_status_t bp_context_flush_tuning_cache(bp_context_t *context);

/* ---------------------------------------------------------------------------
 * Devices.
 */
typedef struct bp_device_config {
  uint32_t struct_size;
  uint32_t threads;          /* 0: the backend decides */
  bp_isa_level_t isa_max;    /* CPU ISA ceiling, BP_ISA_BEST by default */
  uint64_t memory_limit;     /* bytes, 0: no limit */
  bool allow_reduced_precision; /* TF32 and the like */
  uint64_t pool_max_bytes;   /* cap on memory the pool reserves, 0: none */
  uint64_t pool_initial_bytes; /* reserved up front when the device opens */
  /* fields below: added with fallback; read only when struct_size covers
   * them (a config sized before them opens as if they were zero) */
  /* Turns automatic fallback off for this device: an op it cannot run fails
   * with BP_ERR_UNSUPPORTED instead of running on another device. false
   * (zero) keeps the default, fallback on, unless BACKPLANE_FALLBACK=0
   * turns it off for the whole process (docs/runtime.md, "Fallback"). */
  bool no_fallback;
} bp_device_config_t;

/* Opens a device. selector picks it: NULL or "" for the best, "N" for rank
 * N, "backend" for that backend's best ("cpu", "vulkan"), "backend:I" for
 * device I of that backend, or an exact device name ("cpu-ref"). config may
 * be NULL. Several devices may be open at once; the same device may be
 * opened twice, giving two independent handles. The caller owns the device.
 */
BP_API bp_status_t bp_device_open(bp_context_t *context, const char *selector,
                                  const bp_device_config_t *config,
                                  bp_device_t **out_device);
/* Waits for the device's work, frees its remaining buffers and streams, and
 * closes it. */
BP_API void bp_device_close(bp_device_t *device);
/* Copies the device's ranked entry. */
BP_API bp_status_t bp_device_entry(const bp_device_t *device,
                                   bp_device_entry_t *out_entry);
/* Whether op runs natively on the device for dtype. */
BP_API bp_status_t bp_device_supports(const bp_device_t *device, bp_op_t op,
                                      bp_dtype_t dtype, bool *out_supported);
/* Waits until all streams of the device are idle. */
BP_API bp_status_t bp_device_synchronize(bp_device_t *device);

/* ---------------------------------------------------------------------------
 * Buffers: device memory with its size.
 */

/* Allocates size bytes (size > 0) on device. The caller owns the buffer.
 * BP_ERR_OUT_OF_MEMORY gives the requested and available bytes. */
BP_API bp_status_t bp_buffer_alloc(bp_device_t *device, uint64_t size,
                                   bp_buffer_t **out_buffer);
/* Frees a buffer after the work queued on its device completes. */
BP_API void bp_buffer_free(bp_buffer_t *buffer);
/* The buffer's size in bytes. */
BP_API bp_status_t bp_buffer_size(const bp_buffer_t *buffer,
                                  uint64_t *out_size);
/* Marks the buffer's contents constant, or clears the mark. While it is
 * set, every write into the buffer that the library sees is refused with
 * BP_ERR_INVALID_ARGUMENT and changes nothing (bp_buffer_write and its
 * async form, a copy into it, an op whose output lies in it), and backends
 * may keep a prepared form of the contents between calls (conv2d's
 * weights transformed and packed once: docs/runtime.md "Constant
 * buffers"). The application must not change the memory another way
 * either: through a DLPack alias, a custom kernel, or a graph captured
 * before the mark was set or rebound to the buffer (a graph's calls are
 * checked when captured). Clearing it allows writes again; setting it
 * again later starts afresh, so nothing prepared before is reused. */
BP_API bp_status_t bp_buffer_set_constant(bp_buffer_t *buffer, bool constant);
/* Whether the buffer is marked constant. */
BP_API bp_status_t bp_buffer_is_constant(const bp_buffer_t *buffer,
                                         bool *out_constant);
/* Host to buffer, synchronous: waits for the device's queued work first. */
BP_API bp_status_t bp_buffer_write(bp_buffer_t *buffer, uint64_t offset,
                                   const void *src, uint64_t size);
/* Buffer to host, synchronous: waits for the device's queued work first. */
BP_API bp_status_t bp_buffer_read(bp_buffer_t *buffer, uint64_t offset,
                                  void *dst, uint64_t size);
/* Buffer to buffer, synchronous, on one device or across two (any pair;
 * see docs/runtime.md "Several devices"). Overlapping ranges of one buffer
 * are rejected. */
BP_API bp_status_t bp_buffer_copy(bp_buffer_t *dst, uint64_t dst_offset,
                                  bp_buffer_t *src, uint64_t src_offset,
                                  uint64_t size);
/* Asynchronous copies ordered on stream; host memory must stay valid until
 * the stream is synchronised. */
BP_API bp_status_t bp_buffer_write_async(bp_stream_t *stream,
                                         bp_buffer_t *buffer, uint64_t offset,
                                         const void *src, uint64_t size);
BP_API bp_status_t bp_buffer_read_async(bp_stream_t *stream,
                                        bp_buffer_t *buffer, uint64_t offset,
                                        void *dst, uint64_t size);
/* Buffer to buffer, ordered on stream, which must belong to dst's or src's
 * device (either one). On one device the copy is queued and the call
 * returns at once. Across two devices it starts after the work queued so
 * far on both devices and is complete when the call returns, so work queued
 * on stream afterwards sees it (docs/runtime.md "Several devices").
 * Overlapping ranges of one buffer, and a capturing stream, are rejected.
 * Thread-safe. */
BP_API bp_status_t bp_buffer_copy_async(bp_stream_t *stream, bp_buffer_t *dst,
                                        uint64_t dst_offset, bp_buffer_t *src,
                                        uint64_t src_offset, uint64_t size);

/* Allocates size bytes of host memory suited to asynchronous copies with
 * device: page-locked where the backend has it (CUDA), ordinary 64-byte
 * aligned memory otherwise (the CPU, where no staging is needed). The caller
 * owns it and frees it with bp_host_free on the same device. */
BP_API bp_status_t bp_host_alloc(bp_device_t *device, uint64_t size,
                                 void **out_ptr);
/* Frees memory from bp_host_alloc; NULL is a no-op. */
BP_API void bp_host_free(bp_device_t *device, void *ptr);

/* ---------------------------------------------------------------------------
 * Tensors: a dtype, shape and strides (in elements) over a buffer and a byte
 * offset. A plain value type; it borrows the buffer.
 */
typedef struct bp_tensor {
  bp_buffer_t *buffer;
  uint64_t offset; /* bytes */
  bp_dtype_t dtype;
  int32_t rank;
  int64_t shape[BP_MAX_RANK];
  int64_t strides[BP_MAX_RANK]; /* elements; 0 broadcasts */
} bp_tensor_t;

/* Describes a tensor over buffer. strides NULL means contiguous row-major.
 * Checks rank and dtype only; bounds are checked when an op uses it. */
BP_API bp_status_t bp_tensor_init(bp_buffer_t *buffer, uint64_t offset,
                                  bp_dtype_t dtype, int32_t rank,
                                  const int64_t *shape, const int64_t *strides,
                                  bp_tensor_t *out_tensor);
/* A view with axes reordered: out axis i is in axis perm[i]. */
BP_API bp_status_t bp_tensor_permute(const bp_tensor_t *tensor,
                                     const int32_t *perm,
                                     bp_tensor_t *out_tensor);
/* A view with axes a and b swapped. */
BP_API bp_status_t bp_tensor_transpose(const bp_tensor_t *tensor, int32_t a,
                                       int32_t b, bp_tensor_t *out_tensor);
/* Number of elements (product of the shape; 1 for rank 0). */
BP_API int64_t bp_tensor_numel(const bp_tensor_t *tensor);

/* Exports t as a DLPack managed tensor (DLManagedTensorVersioned when
 * versioned, else the older DLManagedTensor) without copying. The result
 * borrows t's buffer, which must outlive it; the consumer calls its deleter.
 * BP_ERR_UNSUPPORTED for memory DLPack cannot describe (Vulkan, OpenCL). */
BP_API bp_status_t bp_tensor_to_dlpack(const bp_tensor_t *tensor,
                                       bool versioned, void **out_managed);
/* Wraps a DLPack managed tensor living in memory device can address (its
 * DLPack device and id: host memory for the CPU backend, CUDA memory for
 * CUDA, ROCm memory for ROCm) as a buffer and a tensor over it, without
 * copying. The caller owns the buffer;
 * bp_buffer_free calls the producer's deleter. */
BP_API bp_status_t bp_tensor_from_dlpack(bp_device_t *device, void *managed,
                                         bool versioned,
                                         bp_tensor_t *out_tensor,
                                         bp_buffer_t **out_buffer);

/* ---------------------------------------------------------------------------
 * Streams and events.
 */

/* Creates an in-order work queue on device. The caller owns it. */
BP_API bp_status_t bp_stream_create(bp_device_t *device,
                                    bp_stream_t **out_stream);
/* Waits for the stream's work, then destroys it. */
BP_API void bp_stream_destroy(bp_stream_t *stream);
/* Waits until everything queued on the stream has finished. */
BP_API bp_status_t bp_stream_synchronize(bp_stream_t *stream);

/* Events mark a point in a stream, for ordering and timing. */
BP_API bp_status_t bp_event_create(bp_device_t *device,
                                   bp_event_t **out_event);
BP_API void bp_event_destroy(bp_event_t *event);
BP_API bp_status_t bp_event_record(bp_event_t *event, bp_stream_t *stream);
/* Makes work queued on stream after this call wait for event. The event may
 * belong to another device: the core then waits on the host for it to
 * complete before returning (docs/runtime.md "Ordering across devices").
 * An event never recorded is no wait. */
BP_API bp_status_t bp_stream_wait_event(bp_stream_t *stream,
                                        bp_event_t *event);
BP_API bp_status_t bp_event_synchronize(bp_event_t *event);
BP_API bp_status_t bp_event_elapsed_ms(bp_event_t *start, bp_event_t *end,
                                       double *out_ms);

/* ---------------------------------------------------------------------------
 * BLAS. a, b, c, x, y are buffers with byte offsets; leading dimensions and
 * increments are in elements, as in CBLAS.
 */
typedef enum bp_layout { BP_ROW_MAJOR = 101, BP_COL_MAJOR = 102 } bp_layout_t;
typedef enum bp_transpose {
  BP_NO_TRANS = 111,
  BP_TRANS = 112
} bp_transpose_t;

/* C = alpha * op(A) · op(B) + beta * C with CBLAS semantics. dtype is that
 * of A, B and C (f16/bf16 accumulate in f32). When beta is 0, C is not read.
 */
BP_API bp_status_t bp_gemm(bp_stream_t *stream, bp_dtype_t dtype,
                           bp_layout_t layout, bp_transpose_t trans_a,
                           bp_transpose_t trans_b, int64_t m, int64_t n,
                           int64_t k, double alpha, bp_buffer_t *a,
                           uint64_t a_offset, int64_t lda, bp_buffer_t *b,
                           uint64_t b_offset, int64_t ldb, double beta,
                           bp_buffer_t *c, uint64_t c_offset, int64_t ldc);

/* batch independent GEMMs; matrix i starts stride_* elements after matrix
 * i-1 (a stride of 0 reuses one matrix for the whole batch). */
BP_API bp_status_t bp_gemm_strided_batched(
    bp_stream_t *stream, bp_dtype_t dtype, bp_layout_t layout,
    bp_transpose_t trans_a, bp_transpose_t trans_b, int64_t m, int64_t n,
    int64_t k, double alpha, bp_buffer_t *a, uint64_t a_offset, int64_t lda,
    int64_t stride_a, bp_buffer_t *b, uint64_t b_offset, int64_t ldb,
    int64_t stride_b, double beta, bp_buffer_t *c, uint64_t c_offset,
    int64_t ldc, int64_t stride_c, int64_t batch);

/* Tensor form: c = alpha * a · b + beta * c for rank-2 tensors, or rank-3
 * tensors batched over axis 0 (a batch of 1 broadcasts). Transposes are
 * views (bp_tensor_transpose). */
BP_API bp_status_t bp_matmul(bp_stream_t *stream, double alpha,
                             const bp_tensor_t *a, const bp_tensor_t *b,
                             double beta, const bp_tensor_t *c);

/* y = alpha * op(A) · x + beta * y with CBLAS semantics (incx, incy > 0). */
BP_API bp_status_t bp_gemv(bp_stream_t *stream, bp_dtype_t dtype,
                           bp_layout_t layout, bp_transpose_t trans,
                           int64_t m, int64_t n, double alpha, bp_buffer_t *a,
                           uint64_t a_offset, int64_t lda, bp_buffer_t *x,
                           uint64_t x_offset, int64_t incx, double beta,
                           bp_buffer_t *y, uint64_t y_offset, int64_t incy);

/* ---------------------------------------------------------------------------
 * DNN. Tensors in NCHW. Optional tensors are passed as NULL.
 */
typedef struct bp_conv2d_params {
  uint32_t struct_size;
  int32_t stride_h, stride_w;     /* 0 means 1 */
  int32_t pad_h, pad_w;
  int32_t dilation_h, dilation_w; /* 0 means 1 */
  int32_t groups;                 /* 0 means 1 */
} bp_conv2d_params_t;

/* y = conv2d(x, w) + bias. x [N,C,H,W], w [K,C/groups,R,S], bias [K] or NULL,
 * y [N,K,P,Q] with P = (H + 2 pad_h - dilation_h (R-1) - 1) / stride_h + 1. */
BP_API bp_status_t bp_conv2d(bp_stream_t *stream,
                             const bp_conv2d_params_t *params,
                             const bp_tensor_t *x, const bp_tensor_t *w,
                             const bp_tensor_t *bias, const bp_tensor_t *y);

typedef struct bp_pool2d_params {
  uint32_t struct_size;
  bp_pool_kind_t kind;
  int32_t kernel_h, kernel_w;
  int32_t stride_h, stride_w; /* 0 means the kernel size */
  int32_t pad_h, pad_w;       /* at most half the kernel */
  bool count_include_pad;     /* average pooling only */
} bp_pool2d_params_t;

/* Max or average pooling: x [N,C,H,W], y [N,C,P,Q]. */
BP_API bp_status_t bp_pool2d(bp_stream_t *stream,
                             const bp_pool2d_params_t *params,
                             const bp_tensor_t *x, const bp_tensor_t *y);

/* Inference batch norm over axis 1 with running mean and var, all [C]. */
BP_API bp_status_t bp_batch_norm(bp_stream_t *stream, const bp_tensor_t *x,
                                 const bp_tensor_t *mean,
                                 const bp_tensor_t *var,
                                 const bp_tensor_t *scale,
                                 const bp_tensor_t *bias, double eps,
                                 const bp_tensor_t *y);

/* Layer norm over the last axis; gamma, beta [last] or NULL. */
BP_API bp_status_t bp_layer_norm(bp_stream_t *stream, const bp_tensor_t *x,
                                 const bp_tensor_t *gamma,
                                 const bp_tensor_t *beta, double eps,
                                 const bp_tensor_t *y);

/* RMS norm over the last axis: y = x / sqrt(mean(x^2) + eps) * gamma. */
BP_API bp_status_t bp_rms_norm(bp_stream_t *stream, const bp_tensor_t *x,
                               const bp_tensor_t *gamma, double eps,
                               const bp_tensor_t *y);

/* Softmax along axis (negative counts from the end); log-softmax when log.
 */
BP_API bp_status_t bp_softmax(bp_stream_t *stream, const bp_tensor_t *x,
                              int32_t axis, bool log, const bp_tensor_t *y);

/* Scaled dot-product attention: out = softmax(q kᵀ · scale [+ causal mask])
 * v. q [B,Hq,Sq,D], k [B,Hkv,Skv,D], v [B,Hkv,Skv,Dv], out [B,Hq,Sq,Dv];
 * Hq a multiple of Hkv (grouped-query attention). scale 0 means 1/sqrt(D).
 * Causal masking is bottom-right aligned: query i sees keys
 * j <= i + Skv - Sq. */
BP_API bp_status_t bp_attention(bp_stream_t *stream, const bp_tensor_t *q,
                                const bp_tensor_t *k, const bp_tensor_t *v,
                                double scale, bool causal,
                                const bp_tensor_t *out);

typedef struct bp_adam_params {
  uint32_t struct_size;
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step; /* 1-based number of this step */
  bool adamw;   /* decoupled weight decay */
} bp_adam_params_t;

/* One fused Adam / AdamW step over count parameter tensors, updating params,
 * exp_avg and exp_avg_sq in place, with PyTorch's formula. */
BP_API bp_status_t bp_adam(bp_stream_t *stream, const bp_adam_params_t *p,
                           uint32_t count, const bp_tensor_t *params,
                           const bp_tensor_t *grads,
                           const bp_tensor_t *exp_avg,
                           const bp_tensor_t *exp_avg_sq);

/* ---------------------------------------------------------------------------
 * Elementwise and reductions.
 */

/* y = op(x); x broadcasts to y's shape. Float dtypes. */
BP_API bp_status_t bp_unary(bp_stream_t *stream, bp_unary_op_t op,
                            const bp_tensor_t *x, const bp_tensor_t *y);
/* y = a op b with NumPy broadcasting of a and b to y's shape. */
BP_API bp_status_t bp_binary(bp_stream_t *stream, bp_binary_op_t op,
                             const bp_tensor_t *a, const bp_tensor_t *b,
                             const bp_tensor_t *y);
/* Reduces x along axis into y, whose shape is x's with that axis either
 * removed or 1. argmax writes i32 or i64 indices. */
BP_API bp_status_t bp_reduce(bp_stream_t *stream, bp_reduce_op_t op,
                             const bp_tensor_t *x, int32_t axis,
                             const bp_tensor_t *y);

/* ---------------------------------------------------------------------------
 * Data movement.
 */

/* Sets every element of y to value (converted to y's dtype). */
BP_API bp_status_t bp_fill(bp_stream_t *stream, const bp_tensor_t *y,
                           double value);
/* y = x for tensors of one dtype and y's shape (x broadcasts); strides make
 * transposes and permutes. y must not overlap x. */
BP_API bp_status_t bp_copy(bp_stream_t *stream, const bp_tensor_t *x,
                           const bp_tensor_t *y);
/* y = x converted to y's dtype (round to nearest even; NaN to an integer
 * gives 0; out-of-range values saturate). */
BP_API bp_status_t bp_cast(bp_stream_t *stream, const bp_tensor_t *x,
                           const bp_tensor_t *y);
/* Fills y from the Philox 4x32-10 stream (seed, offset): uniform in [a, b)
 * or normal with mean a and standard deviation b. The numbers are the same
 * on every backend. */
BP_API bp_status_t bp_random(bp_stream_t *stream, bp_random_dist_t dist,
                             uint64_t seed, uint64_t offset, double a,
                             double b, const bp_tensor_t *y);

#ifdef __cplusplus
}
#endif

/* The rest of the API, one header per concern (each includes this one). */
#include "backplane_plugins.h"
#include "backplane_multi.h"
#include "backplane_graph.h"
#include "backplane_kernel.h"
#include "backplane_comm.h"
#include "backplane_fused.h"
#include "backplane_model.h"
#include "backplane_quant.h"

#endif /* BACKPLANE_H */
