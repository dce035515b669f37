/*
 * plugin-api.h — the whole backplane plugin ABI.
 *
 * A backend is a shared object named backend-<name>.so that exports exactly
 * one symbol, BP_PLUGIN_DESCRIPTOR_SYMBOL ("bp_plugin_descriptor"), a
 * bp_plugin_descriptor_t. This header and backplane_types.h, which it
 * includes (status codes, dtypes, the op table, device records: the types
 * the application API shares), are all a plugin author needs; they depend on
 * nothing but <stdbool.h>, <stddef.h> and <stdint.h>.
 *
 * Version rules (see docs/plugin-abi.md for the long form):
 *  1. The descriptor starts with magic, abi_major, abi_minor, struct_size.
 *     The loader refuses a plugin whose magic differs, whose abi_major is not
 *     BP_PLUGIN_ABI_MAJOR, or whose struct_size is smaller than
 *     BP_PLUGIN_DESCRIPTOR_MIN_SIZE.
 *  2. A minor version only appends fields at the end of a struct; each
 *     addition is marked "fields below: ABI 1.N". The loader reads only what
 *     struct_size covers and treats anything beyond as absent (NULL / 0).
 *  3. Every argument struct passed to an op starts with struct_size, so an op
 *     can gain parameters without a new entry point. A plugin must read only
 *     the fields the struct_size it receives covers. The args struct and
 *     anything it points to are valid only during the call: a plugin that
 *     queues work copies what it needs (device pointers stay valid until the
 *     buffer is freed, and the core synchronises before freeing).
 *  4. Entry points marked "(required)" must be non-NULL; the loader refuses
 *     the plugin otherwise. Entry points marked "(optional)" may be NULL,
 *     which means "not supported here": the core reports BP_ERR_UNSUPPORTED
 *     and never calls a NULL pointer.
 *  5. The core validates every call before a plugin sees it: handles are
 *     live and of this device, dtypes are ones the device claims in its
 *     capability table, shapes are consistent and every byte an op may touch
 *     lies inside its allocation. Plugins may rely on that.
 *  6. Threading: the core serialises calls on one stream; calls on different
 *     streams or devices may arrive concurrently from different threads.
 *  7. Plugins call back into the host only through bp_host_services_t.
 */
#ifndef BACKPLANE_PLUGIN_API_H
#define BACKPLANE_PLUGIN_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BP_PLUGIN_MAGIC 0x4250504cu /* "BPPL" */
#define BP_PLUGIN_ABI_MAJOR 1
#define BP_PLUGIN_ABI_MINOR 6
#define BP_PLUGIN_DESCRIPTOR_SYMBOL "bp_plugin_descriptor"

#if defined(_WIN32)
#define BP_PLUGIN_EXPORT __declspec(dllexport)
#else
#define BP_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#include "backplane_types.h"

/* ---------------------------------------------------------------------------
 * Host services: the only way a plugin calls back into the host. Passed to
 * init; valid until shutdown returns.
 */
/* bp_log_level_t lives in backplane_types.h (the public API sets it too). */

/* The key of one autotuning cache entry (ABI 1.1). Every field is a
 * NUL-terminated string of at most BP_TUNE_FIELD_MAX - 1 bytes (may be "",
 * never NULL); a lookup matches only an entry whose every field is equal, so
 * results measured under another plugin or driver version are never used.
 * bucket names the shape class the plugin tunes for ("m1024n1024k1024",
 * "s512d64"); its meaning is the plugin's own. */
typedef struct bp_tune_key {
  uint32_t struct_size;       /* sizeof(bp_tune_key_t) */
  const char *plugin;         /* descriptor name: "cpu" */
  const char *plugin_version; /* descriptor version */
  const char *device;         /* device name as in bp_device_info_t */
  const char *driver_version; /* as in bp_device_info_t */
  const char *op;             /* "gemm", or a plugin's own kernel name */
  const char *dtype;          /* "f32" */
  const char *bucket;
} bp_tune_key_t;
#define BP_TUNE_FIELD_MAX 256 /* bytes per key field, NUL included */
#define BP_TUNE_VALUE_MAX 1024 /* bytes per value, NUL included */

typedef struct bp_host_services {
  uint32_t struct_size;
  uint16_t abi_major, abi_minor; /* the loader's ABI version */
  const char *host_version;      /* the loader's version string */
  /* Writes one log line under the plugin's name. Thread-safe. */
  void (*log)(bp_log_level_t level, const char *plugin, const char *fmt, ...)
      __attribute__((format(printf, 3, 4)));
  /* Environment lookup that ignores the environment in setuid programs. */
  const char *(*getenv)(const char *name);
  /* Sets the calling thread's error message for the status about to be
   * returned; the core shows it to the application. Thread-safe. */
  void (*set_error)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
  /* fields below: ABI 1.1 */
  /* Autotuning cache (see bp_tune_key_t and docs/runtime.md). Copies the
   * value stored under key into out_value (NUL-terminated) and returns true;
   * false when there is no entry for exactly this key or the value does not
   * fit in size bytes. Thread-safe. (optional: a 1.0 host leaves it NULL) */
  bool (*tune_lookup)(const bp_tune_key_t *key, char *out_value, size_t size);
  /* Remembers value under key, replacing an entry with the same key, and
   * writes it to the cache file (atomically, merged with what other
   * processes wrote). A failure to write is logged, never reported to the
   * caller: the value stays known to this process. Thread-safe.
   * (optional: a 1.0 host leaves it NULL) */
  void (*tune_store)(const bp_tune_key_t *key, const char *value);
} bp_host_services_t;


typedef struct bp_plugin_device_config {
  uint32_t struct_size;
  uint32_t threads;       /* 0: the plugin decides */
  bp_isa_level_t isa_max; /* CPU ISA ceiling */
  uint64_t memory_limit;  /* 0: none */
  uint32_t allow_reduced_precision; /* TF32 and the like */
} bp_plugin_device_config_t;

/* ---------------------------------------------------------------------------
 * Tensors cross the ABI as plain descriptors. ptr is the opaque 64-bit value
 * the plugin's alloc returned; offset is in bytes; strides are in elements
 * and may be 0 (broadcast) or negative only where an op says so.
 */
typedef struct bp_plugin_tensor {
  uint64_t ptr;
  uint64_t offset;
  bp_dtype_t dtype;
  int32_t rank;
  int64_t shape[BP_MAX_RANK];
  int64_t strides[BP_MAX_RANK];
} bp_plugin_tensor_t;

/* Opaque handles owned by the plugin. */
typedef struct bp_plugin_device bp_plugin_device_t;
typedef struct bp_plugin_stream bp_plugin_stream_t;
typedef struct bp_plugin_event bp_plugin_event_t;

/* ---------------------------------------------------------------------------
 * Op argument structs. Each starts with struct_size. The core has already
 * normalised them as documented: shapes agree, broadcasting is expressed by
 * stride 0, views are expressed by strides.
 */

/* C[b] = alpha * A[b] · B[b] + beta * C[b] for b in [0, batch).
 * a: rank 3 [batch, m, k]; b: rank 3 [batch, k, n]; c: rank 3 [batch, m, n].
 * Transposes and layouts are already folded into strides. When beta == 0, C
 * is not read (NaN in C does not propagate). a and b share a dtype; c has the
 * same dtype (f16/bf16 accumulate in f32). */
typedef struct bp_gemm_args {
  uint32_t struct_size;
  uint32_t flags; /* BP_GEMM_FLAG_* */
  double alpha, beta;
  bp_plugin_tensor_t a, b, c;
  /* fields below: ABI 1.5 */
  /* The epilogue: C = act(alpha A·B + beta C + bias). bias has c's shape
   * [batch, m, n] by strides (0 where it broadcasts: a [n] bias has strides
   * {0, 0, s}), c's dtype, or rank 0 (absent:
   * BP_FEATURE_GEMM_BIAS). act is the bp_unary_op_t activation, applied
   * when flags has BP_GEMM_FLAG_ACTIVATION (BP_FEATURE_GEMM_ACT); both are
   * applied to the f32 (f64) accumulator before C is rounded to its
   * dtype. */
  int32_t activation;
  uint32_t reserved;
  bp_plugin_tensor_t bias;
} bp_gemm_args_t;
#define BP_GEMM_FLAG_ALLOW_TF32 0x1u
#define BP_GEMM_FLAG_ACTIVATION 0x2u /* ABI 1.5: apply args.activation */

/* y = alpha * A · x + beta * y. a: [m, n]; x: [n]; y: [m]. */
typedef struct bp_gemv_args {
  uint32_t struct_size;
  uint32_t flags;
  double alpha, beta;
  bp_plugin_tensor_t a, x, y;
} bp_gemv_args_t;

/* NCHW conv2d forward. x: [N, C, H, W]; w: [K, C/groups, R, S];
 * bias: [K] or rank 0 (absent); y: [N, K, P, Q]. */
typedef struct bp_conv2d_args {
  uint32_t struct_size;
  int32_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
  bp_plugin_tensor_t x, w, bias, y;
  /* fields below: ABI 1.6 */
  /* Non-zero while w's buffer is marked constant (bp_buffer_set_constant):
   * an id the core never gives other contents, so a plugin may key a
   * prepared form of w (packed, transformed) on it, with w's address,
   * shape, strides and dtype, and reuse it while the id comes back. Zero:
   * w may change before the next call. A hint: a plugin may ignore it. */
  uint64_t w_const_id;
} bp_conv2d_args_t;

/* x: [N, C, H, W]; y: [N, C, P, Q]. Padding counts as -inf for max; for
 * average it is excluded from the divisor unless count_include_pad. */
typedef struct bp_pool2d_args {
  uint32_t struct_size;
  bp_pool_kind_t kind;
  int32_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  int32_t count_include_pad;
  bp_plugin_tensor_t x, y;
} bp_pool2d_args_t;

/* Inference batch norm over channel axis 1:
 * y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c].
 * x, y: [N, C, ...]; mean, var, scale, bias: [C]. */
typedef struct bp_batch_norm_args {
  uint32_t struct_size;
  double eps;
  bp_plugin_tensor_t x, mean, var, scale, bias, y;
} bp_batch_norm_args_t;

/* Layer norm and RMS norm over the last axis of x (rank >= 1).
 * gamma and beta are [last] or rank 0 (absent). For RMS norm beta is absent.
 */
typedef struct bp_norm_args {
  uint32_t struct_size;
  double eps;
  bp_plugin_tensor_t x, gamma, beta, y;
} bp_norm_args_t;

/* Softmax (log_softmax when log != 0) along axis of x; y has x's shape. */
typedef struct bp_softmax_args {
  uint32_t struct_size;
  int32_t axis;
  int32_t log;
  bp_plugin_tensor_t x, y;
} bp_softmax_args_t;

/* Scaled dot-product attention.
 * q: [B, Hq, Sq, D]; k: [B, Hkv, Skv, D]; v: [B, Hkv, Skv, Dv];
 * out: [B, Hq, Sq, Dv]; Hq is a multiple of Hkv (query head h uses kv head
 * h / (Hq / Hkv)). causal masks key j for query i when
 * j > i + (Skv - Sq) (bottom-right aligned, as in KV-cache decoding); a
 * query row with every key masked produces zeros. */
typedef struct bp_attention_args {
  uint32_t struct_size;
  int32_t causal;
  double scale;
  bp_plugin_tensor_t q, k, v, out;
  /* fields below: ABI 1.5 */
  /* Masks beyond causal, each with its BP_FEATURE_ATTENTION_* bit; every
   * one uses the same bottom-right alignment: query i stands at key
   * position i' = i + (Skv - Sq).
   *  - kv_lens: i32 [B] (rank 0: absent): keys j >= kv_lens[b] are masked
   *    (padding; a length <= 0 masks the whole row).
   *  - window > 0: query i sees keys j with i' - window < j <= i' (a
   *    sliding window, causal by definition; window 1 sees key i' only).
   *  - bias: added to the scaled scores, [B, Hq, Sq, Skv] by strides (0
   *    where it broadcasts), q's dtype, rank 0: absent; -inf masks.
   *  - ALiBi: -slope_h * |i' - j| is added (flash-attention's form), with
   *    slope_h = alibi_slopes[h] (f32 [Hq], stride 0 allowed)
   *    or, when alibi_heads > 0, the standard geometric slope of head
   *    h + alibi_head_offset of a model with alibi_heads heads (the offset
   *    lets a call over a run of heads keep each head's slope).
   * A query row whose keys are all masked (or whose every score is -inf)
   * produces zeros. */
  int32_t window;
  int32_t alibi_heads;
  int32_t alibi_head_offset;
  uint32_t reserved;
  bp_plugin_tensor_t kv_lens, bias, alibi_slopes;
} bp_attention_args_t;

/* Fused Adam / AdamW step over count tensors (PyTorch's formula). All four
 * arrays have count entries; param, m and v are updated in place. */
typedef struct bp_adam_args {
  uint32_t struct_size;
  int32_t adamw; /* decoupled weight decay */
  int64_t step;  /* 1-based step number after this update */
  double lr, beta1, beta2, eps, weight_decay;
  uint32_t count;
  const bp_plugin_tensor_t *params, *grads, *exp_avg, *exp_avg_sq;
} bp_adam_args_t;

/* y = op(x); x and y have the same shape (x may broadcast by stride 0). */
typedef struct bp_unary_args {
  uint32_t struct_size;
  bp_unary_op_t op;
  bp_plugin_tensor_t x, y;
} bp_unary_args_t;

/* y = a op b; all three have y's shape, broadcasting by stride 0. */
typedef struct bp_binary_args {
  uint32_t struct_size;
  bp_binary_op_t op;
  bp_plugin_tensor_t a, b, y;
} bp_binary_args_t;

/* Reduction along axis. y has x's rank with shape 1 on axis. */
typedef struct bp_reduce_args {
  uint32_t struct_size;
  bp_reduce_op_t op;
  int32_t axis;
  bp_plugin_tensor_t x, y;
} bp_reduce_args_t;

/* y[...] = value, converted to y's dtype. */
typedef struct bp_fill_args {
  uint32_t struct_size;
  double value;
  bp_plugin_tensor_t y;
} bp_fill_args_t;

/* y = x elementwise over y's shape; for copy the dtypes agree, for cast they
 * differ (every conversion rounds to nearest, ties to even, float to integer
 * included; NaN to integer is 0; out of range saturates).
 */
typedef struct bp_copy_args {
  uint32_t struct_size;
  bp_plugin_tensor_t x, y;
  /* fields below: ABI 1.5 */
  /* cast only: BP_CAST_* bits (backplane_types.h). BP_CAST_SATURATE
   * (an fp8 y; BP_FEATURE_CAST_SATURATE): values beyond y's largest finite
   * value, infinities included, become that value with their sign, instead
   * of the OCP non-saturating NaN (e4m3) or infinity (e5m2). */
  uint32_t cast_flags;
  uint32_t reserved;
} bp_copy_args_t;

/* Philox 4x32-10 random fill; see docs/ops.md for the exact stream, which
 * every backend reproduces bit for bit. */
typedef struct bp_random_args {
  uint32_t struct_size;
  bp_random_dist_t dist;
  uint64_t seed, offset;
  double a, b;
  bp_plugin_tensor_t y;
} bp_random_args_t;

#include "plugin-api-1.5.h"

/* ---------------------------------------------------------------------------
 * Custom kernels (ABI 1.1): what a launch hands the plugin. The formats and
 * argument kinds are in backplane_types.h (the application names them too).
 */
typedef struct bp_plugin_kernel_arg {
  bp_kernel_arg_kind_t kind;
  uint32_t reserved;
  union {
    struct { uint64_t ptr, offset; } buffer;
    int32_t i32; uint32_t u32; int64_t i64; uint64_t u64; float f32; double f64;
  } value;
} bp_plugin_kernel_arg_t;

typedef struct bp_kernel_source {
  uint32_t struct_size;
  bp_kernel_format_t format;
  const void *code;   /* source text, SPIR-V or PTX bytes, or a .so path */
  uint64_t code_size; /* bytes (text need not be NUL-terminated) */
  const char *entry;  /* kernel or function name */
  const char *options;/* compiler options, may be NULL */
  uint32_t arg_count;
  const bp_kernel_arg_kind_t *signature; /* arg_count kinds */
} bp_kernel_source_t;

/* The CPU convention for BP_KERNEL_C_SHARED_OBJECT: the function is called
 * once per block as fn(const bp_cpu_kernel_index_t *, arg0, arg1, ...) with
 * buffers as pointers (offset applied) and scalars by value, blocks spread
 * over the CPU's threads. */
typedef struct bp_cpu_kernel_index {
  uint32_t block[3], grid[3], block_dim[3];
} bp_cpu_kernel_index_t;

typedef struct bp_launch_args {
  uint32_t struct_size;
  uint32_t grid[3], block[3];
  uint32_t shared_bytes;
  uint32_t arg_count;
  const bp_plugin_kernel_arg_t *args;
} bp_launch_args_t;

typedef struct bp_plugin_kernel bp_plugin_kernel_t;
typedef struct bp_plugin_graph bp_plugin_graph_t;

/* ---------------------------------------------------------------------------
 * The descriptor.
 */
typedef struct bp_plugin_descriptor {
  uint32_t magic;        /* BP_PLUGIN_MAGIC */
  uint16_t abi_major;    /* BP_PLUGIN_ABI_MAJOR */
  uint16_t abi_minor;    /* BP_PLUGIN_ABI_MINOR */
  uint32_t struct_size;  /* sizeof(bp_plugin_descriptor_t) as built */
  uint32_t reserved;
  const char *name;        /* (required) short name: "cpu", "vulkan" */
  const char *version;     /* (required) plugin version string */
  const char *description; /* (optional) one line */

  /* --- lifetime ---------------------------------------------------------*/
  /* (required) Called once after loading, before anything else. */
  bp_status_t (*init)(const bp_host_services_t *host);
  /* (required) Called once before unloading. */
  void (*shutdown)(void);
  /* (required) Cheap and side-effect free: fills at most capacity records
   * and the number of devices present. When the driver is absent returns
   * BP_ERR_UNAVAILABLE with a reason through set_error. */
  bp_status_t (*probe)(bp_device_info_t *out_infos, uint32_t capacity,
                       uint32_t *out_count);

  /* --- devices ----------------------------------------------------------*/
  /* (required) */
  bp_status_t (*device_open)(uint32_t index,
                             const bp_plugin_device_config_t *config,
                             bp_plugin_device_t **out_device);
  /* (required) Waits for all work, frees everything the device owns. */
  void (*device_close)(bp_plugin_device_t *device);
  /* (required) Waits until all streams of the device are idle. */
  bp_status_t (*device_synchronize)(bp_plugin_device_t *device);

  /* --- memory -----------------------------------------------------------*/
  /* (required) Allocates size bytes (size > 0) aligned to at least 64. */
  bp_status_t (*mem_alloc)(bp_plugin_device_t *device, uint64_t size,
                           uint64_t *out_ptr);
  /* (required) */
  void (*mem_free)(bp_plugin_device_t *device, uint64_t ptr);
  /* (required) Copies. stream NULL means synchronous with respect to the
   * whole device; otherwise ordered on the stream, and the host memory must
   * stay valid until the stream reaches the copy. */
  bp_status_t (*mem_write)(bp_plugin_device_t *device,
                           bp_plugin_stream_t *stream, uint64_t dst,
                           uint64_t dst_offset, const void *src,
                           uint64_t size);
  bp_status_t (*mem_read)(bp_plugin_device_t *device,
                          bp_plugin_stream_t *stream, void *dst, uint64_t src,
                          uint64_t src_offset, uint64_t size);
  bp_status_t (*mem_copy)(bp_plugin_device_t *device,
                          bp_plugin_stream_t *stream, uint64_t dst,
                          uint64_t dst_offset, uint64_t src,
                          uint64_t src_offset, uint64_t size);

  /* --- streams ----------------------------------------------------------*/
  /* (required) */
  bp_status_t (*stream_create)(bp_plugin_device_t *device,
                               bp_plugin_stream_t **out_stream);
  void (*stream_destroy)(bp_plugin_device_t *device,
                         bp_plugin_stream_t *stream);
  bp_status_t (*stream_synchronize)(bp_plugin_device_t *device,
                                    bp_plugin_stream_t *stream);

  /* --- events (optional as a group) -------------------------------------*/
  bp_status_t (*event_create)(bp_plugin_device_t *device,
                              bp_plugin_event_t **out_event);
  void (*event_destroy)(bp_plugin_device_t *device, bp_plugin_event_t *event);
  bp_status_t (*event_record)(bp_plugin_device_t *device,
                              bp_plugin_event_t *event,
                              bp_plugin_stream_t *stream);
  bp_status_t (*stream_wait_event)(bp_plugin_device_t *device,
                                   bp_plugin_stream_t *stream,
                                   bp_plugin_event_t *event);
  bp_status_t (*event_synchronize)(bp_plugin_device_t *device,
                                   bp_plugin_event_t *event);
  /* Milliseconds between two recorded events. */
  bp_status_t (*event_elapsed)(bp_plugin_device_t *device,
                               bp_plugin_event_t *start,
                               bp_plugin_event_t *end, double *out_ms);

  /* --- ops (each optional): one slot per line of BP_OP_TABLE, in its
   * order, e.g. bp_status_t (*gemm)(bp_plugin_device_t *, bp_plugin_stream_t
   * *, const bp_gemm_args_t *); */
#define BP__OP_SLOT(E, name, args_t, value, capture, tensors)                  \
  bp_status_t (*name)(bp_plugin_device_t *, bp_plugin_stream_t *,             \
                      const args_t *);
  BP_OP_TABLE(BP__OP_SLOT)
#undef BP__OP_SLOT

  /* fields below: ABI 1.1 */
  /* --- custom kernels (optional as a group) ------------------------------*/
  /* Compiles or loads a kernel; the core has checked the format is one the
   * device lists in kernel_formats and that the signature is sane. */
  bp_status_t (*kernel_create)(bp_plugin_device_t *device,
                               const bp_kernel_source_t *source,
                               bp_plugin_kernel_t **out_kernel);
  void (*kernel_destroy)(bp_plugin_device_t *device,
                         bp_plugin_kernel_t *kernel);
  /* Launches over grid x block; args match the signature given at create. */
  bp_status_t (*kernel_launch)(bp_plugin_device_t *device,
                               bp_plugin_stream_t *stream,
                               bp_plugin_kernel_t *kernel,
                               const bp_launch_args_t *args);

  /* --- page-locked host memory (optional as a pair) -----------------------*/
  /* Host memory the device can copy from and to asynchronously (CUDA's
   * cuMemHostAlloc). Absent: the core hands out ordinary aligned memory. */
  bp_status_t (*host_alloc)(bp_plugin_device_t *device, uint64_t size,
                            void **out_ptr);
  void (*host_free)(bp_plugin_device_t *device, void *ptr);

  /* fields below: ABI 1.2 */
  /* --- native graphs (optional as a group) -------------------------------
   * The core records graphs itself (bp_stream_begin_capture) and can always
   * replay them through the op entry points above. A backend with a cheaper
   * way to repeat work (CUDA graphs, a reused Vulkan command buffer) offers
   * it here. To build one, the core calls graph_begin on a stream, replays
   * the recorded ops on that stream through the ordinary op entry points,
   * and calls graph_end. Between the two the plugin records and must not
   * run anything: ops may keep device pointers and must copy what else they
   * need. An op that cannot be recorded returns BP_ERR_UNSUPPORTED; the core
   * then calls graph_end, destroys what it returns (may be NULL) and keeps
   * replaying that graph op by op. Rebinding a graph's buffers destroys the
   * native graph; the next launch builds a new one. */
  bp_status_t (*graph_begin)(bp_plugin_device_t *device,
                             bp_plugin_stream_t *stream);
  bp_status_t (*graph_end)(bp_plugin_device_t *device,
                           bp_plugin_stream_t *stream,
                           bp_plugin_graph_t **out_graph);
  /* Runs the whole graph on any stream of the device, in stream order. The
   * core never launches one graph from two threads at once. */
  bp_status_t (*graph_launch)(bp_plugin_device_t *device,
                              bp_plugin_stream_t *stream,
                              bp_plugin_graph_t *graph);
  /* May be called while launches are still in flight: the plugin waits for
   * them (or defers the release) before freeing anything they use. */
  void (*graph_destroy)(bp_plugin_device_t *device, bp_plugin_graph_t *graph);

  /* fields below: ABI 1.4 */
  /* --- host mapping of device memory (optional as a pair) ----------------
   * Gives the host a pointer to bytes [offset, offset + size) of the
   * allocation ptr, where the host can reach that memory (PoCL, lavapipe,
   * unified memory), so that a copy between this device and another needs
   * no staging: the other device's mem_read / mem_write goes straight to or
   * from the mapping. flags: BP_MAP_READ, the host will read the bytes (they
   * must be current); BP_MAP_WRITE, the host will overwrite them all (the
   * plugin need not fetch them first). The core maps only after
   * device_synchronize, queues no work that touches the range while it is
   * mapped, and calls mem_unmap with the pointer it got before it does;
   * after mem_unmap the device sees what the host wrote. An allocation that
   * cannot be mapped (device-local memory of a discrete GPU) returns
   * BP_ERR_UNSUPPORTED, and the core stages the copy instead. */
  bp_status_t (*mem_map)(bp_plugin_device_t *device, uint64_t ptr,
                         uint64_t offset, uint64_t size, uint32_t flags,
                         void **out_host);
  bp_status_t (*mem_unmap)(bp_plugin_device_t *device, uint64_t ptr,
                           void *host);

  /* fields below: ABI 1.5 */
  /* --- ops of BP_OP_TABLE_1_5 (each optional), in its order ------------- */
#define BP__OP_SLOT(E, name, args_t, value, capture, tensors)                  \
  bp_status_t (*name)(bp_plugin_device_t *, bp_plugin_stream_t *,             \
                      const args_t *);
  BP_OP_TABLE_1_5(BP__OP_SLOT)
#undef BP__OP_SLOT
  /* (optional) The vendor runtime's own handle behind stream (ABI 1.5): a
   * CUstream for a CUDA device, a hipStream_t for a ROCm one, valid until
   * the stream is destroyed. Another library that enqueues work on it (a
   * comm plugin's NCCL collective, docs/scale-out.md) is ordered with the
   * backend's work on the stream. BP_ERR_UNSUPPORTED (or NULL): none. */
  bp_status_t (*stream_native)(bp_plugin_device_t *device,
                               bp_plugin_stream_t *stream, void **out_native);
} bp_plugin_descriptor_t;

/* mem_map flags (ABI 1.4). */
#define BP_MAP_READ 0x1u
#define BP_MAP_WRITE 0x2u

/* The smallest descriptor the loader accepts: everything through the ops of
 * ABI 1.0. */
#define BP_PLUGIN_DESCRIPTOR_MIN_SIZE                                          \
  (offsetof(bp_plugin_descriptor_t, random) + sizeof(void *))

#ifdef __cplusplus
}
#endif
#endif /* BACKPLANE_PLUGIN_API_H */
