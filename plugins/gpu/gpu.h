/*
 * plugins/gpu/gpu.h — internals of backend-cuda.so and backend-rocm.so,
 * which are built from one set of sources.
 *
 * The code of the .c files of plugins/gpu is written once against neutral names
 * (gpuStream_t, gpuStreamCreate, gpuMemcpyHtoDAsync, ...) and compiled
 * into each plugin with its vendor mapping header, as ggml's
 * src/ggml-cuda/vendors/hip.h does: plugins/gpu/vendors/cuda.h (CUDA driver
 * API, cuBLAS) when BP_GPU_CUDA is defined, plugins/gpu/vendors/hip.h (HIP
 * runtime, rocBLAS) when BP_GPU_HIP is. Every function keeps one real name
 * (gpu_op_gemm, gpu_mem_alloc, ...), the same in both plugins; they are
 * hidden, so the two .so files never see each other's.
 *
 * plugins/cuda/ and plugins/rocm/ keep what really differs: the driver's
 * symbol table and result-code mapping (driver.c), device open/close and
 * what a device's record says (device.c), how kernels become code (PTX
 * JIT; hiprtc and its cache) and custom kernels (kernels.c). The functions
 * they provide to the shared code are declared below under their gpu_
 * names, one definition per vendor folder. docs/plugin-guide.md lists
 * which file holds what.
 */
#ifndef BACKPLANE_GPU_H
#define BACKPLANE_GPU_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/bp_cuda_args.h"
#include "plugin-api.h"
#include "plugins/gpu/blas.h"
#include "plugins/gpu/marshal.h"

/* The visibility of every internal name of the GPU plugins. */
#define GPU_HIDDEN __attribute__((visibility("hidden")))

/* Kernel modules, one per op family: kernels/cuda/<file>.cu and
 * kernels/hip/<file>.hip hold the same families (each vendor's kernels.c
 * embeds and loads them). X(ID, file). */
#define BP_GPU_MODULES(X)                                                                          \
  X(ELEMENTWISE, elementwise)                                                                      \
  X(REDUCE, reduce)                                                                                \
  X(NORM, norm)                                                                                    \
  X(GEMM, gemm)                                                                                    \
  X(CONV, conv)                                                                                    \
  X(ATTENTION, attention)                                                                          \
  X(ADAM, adam)                                                                                    \
  X(RANDOM, random)                                                                                \
  X(MODEL, model)                                                                                  \
  X(QUANT, quant)

typedef enum bp_gpu_module_id {
#define BP_GPU__MOD_ENUM(id, file) BP_GPU_MOD_##id,
  BP_GPU_MODULES(BP_GPU__MOD_ENUM)
#undef BP_GPU__MOD_ENUM
      BP_GPU_MOD_COUNT
} bp_gpu_module_id_t;

/* Module names, "elementwise", ... (for messages and cache files). */
GPU_HIDDEN extern const char *const gpu_module_name[BP_GPU_MOD_COUNT];

#if defined(BP_GPU_CUDA)
#include "plugins/gpu/vendors/cuda.h"
#elif defined(BP_GPU_HIP)
#include "plugins/gpu/vendors/hip.h"
#else
#error "plugins/gpu: define BP_GPU_CUDA or BP_GPU_HIP (see plugin.mk)"
#endif

/* One opened device. The vendor's fields (GPU_VENDOR_DEVICE_FIELDS: the
 * CUDA context, the HIP architecture, ...) follow the shared ones. */
typedef struct gpu_device {
  int ordinal;
  uint64_t memory_limit; /* 0: none */
  uint64_t memory_used;  /* under lock */
  pthread_mutex_t lock;  /* module table, BLAS state, memory accounting */
  /* Held shared by legacy / null-stream work, exclusively by a graph
   * capture (graph.c): the one must not run during the other. */
  pthread_rwlock_t capture_lock;
  gpuModule_t modules[BP_GPU_MOD_COUNT]; /* loaded on first use */
  bp_gpu_blas_state_t blas;              /* vendor BLAS handle and choices, under lock */
  GPU_VENDOR_DEVICE_FIELDS
} gpu_device_t;

/* One driver stream / event each. */
typedef struct gpu_stream {
  gpuStream_t s;
  bool capturing; /* between graph_begin and graph_end */
  /* Scratch device memory of the ops queued on this stream (conv2d's
   * patch matrices): the core's stream lock orders its users, the stream
   * orders their kernels. Freed with the stream. */
  uint64_t work, work_size;
} gpu_stream_t;

typedef struct gpu_event {
  gpuEvent_t e;
} gpu_event_t;

/* A custom kernel of the application (ABI 1.1); owns its module. */
typedef struct gpu_kernel {
  gpuModule_t module;
  gpuFunction_t fn;
  uint32_t arg_count;
  char entry[128]; /* for messages */
} gpu_kernel_t;

static inline gpu_device_t *gpu_dev(bp_plugin_device_t *d) {
  return (gpu_device_t *)(void *)d;
}

/* The driver stream an op runs on: the stream's, or the legacy / null
 * stream (ordered with every blocking stream) for NULL. */
static inline gpuStream_t gpu_stream_of(bp_plugin_stream_t *s) {
  return s ? ((gpu_stream_t *)(void *)s)->s : (gpuStream_t)0;
}

/* Blocks of `threads` to cover n items. Kernels loop grid-stride, so a cap
 * loses nothing and keeps gridDim.x in range for any n. */
static inline unsigned gpu_blocks_for(int64_t n, unsigned threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b > 65535LL * 16) b = 65535LL * 16;
  return b < 1 ? 1u : (unsigned)b;
}

/* ---- driver.c (shared) and <vendor>/driver.c ---------------------------- */
/* The host services given to init. */
GPU_HIDDEN extern const bp_host_services_t *gpu_host;
/* Logs through the host under the plugin's name (no-op before init). */
GPU_HIDDEN void gpu_log(bp_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The host's (secure) getenv; NULL for unset or empty. */
GPU_HIDDEN const char *gpu_env(const char *name);
/* Opens the driver library (cached, thread-safe), resolves its entry
 * points and initialises it; BP_ERR_UNAVAILABLE with a reason when there
 * is none. gpu_driver_unload closes it (shutdown). */
GPU_HIDDEN bp_status_t gpu_driver_load(void);
GPU_HIDDEN void gpu_driver_unload(void);
/* Sets the load failure's reason; returns st (for the vendor's hooks). */
GPU_HIDDEN bp_status_t gpu_driver_fail(bp_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Maps a driver result to a status and, when it is an error, sets the
 * message "<plugin>: <what>: <error name> (<description>)". */
GPU_HIDDEN bp_status_t gpu_check(gpuError_t r, const char *what);
/* Vendor hooks of the load (<vendor>/driver.c): dlopen the library (path
 * into the table; NULL after gpu_driver_fail); checks before the driver's
 * init; what follows a successful init; what to close besides the library
 * at unload. */
GPU_HIDDEN void *gpu_driver_open(void);
GPU_HIDDEN bp_status_t gpu_driver_before_init(void *h);
GPU_HIDDEN void gpu_driver_after_init(void);
GPU_HIDDEN void gpu_driver_close_extra(void);
/* The status a driver result means to an application: each vendor's own
 * (the enumerations differ in values and in which codes exist). */
GPU_HIDDEN bp_status_t gpu_status_of(gpuError_t r);
/* The driver's name and description of r; NULL when unknown. */
GPU_HIDDEN const char *gpu_error_name(gpuError_t r);
GPU_HIDDEN const char *gpu_error_string(gpuError_t r);

/* ---- descriptor.c (shared) and <vendor>/device.c ------------------------ */
/* The number of devices; BP_ERR_UNAVAILABLE (message set) for none. */
GPU_HIDDEN bp_status_t gpu_device_count(int *out_count);
/* Fills one probe record, with gpu_describe_common for the shared fields. */
GPU_HIDDEN bp_status_t gpu_device_describe(int ordinal, bp_device_info_t *info);
/* The fields of a record both drivers report alike. bus: the PCI bus id
 * (NULL when unreadable), lowercased into the identity; uuid: the
 * vendor-formatted UUID ("" when unknown). why: "" when the kernels run on
 * the device, else why it claims no op. */
GPU_HIDDEN void gpu_describe_common(bp_device_info_t *info, char *bus, const char *uuid, int units,
                                    int lanes_per_unit, bool integrated, double clock_khz,
                                    double mem_khz, double bus_bits, const char *why);

/* ---- device.c (shared) and <vendor>/device.c ---------------------------- */
GPU_HIDDEN bp_status_t gpu_device_open(uint32_t index, const bp_plugin_device_config_t *cfg,
                                       bp_plugin_device_t **out_device);
GPU_HIDDEN void gpu_device_close(bp_plugin_device_t *device);
GPU_HIDDEN bp_status_t gpu_device_synchronize(bp_plugin_device_t *device);
/* Vendor: binds d (ordinal and memory_limit set; cfg may be NULL) to the
 * driver's device and reads what the ops need; on failure releases what it
 * took and sets the message. gpu_device_detach undoes it at close. */
GPU_HIDDEN bp_status_t gpu_device_attach(gpu_device_t *d, const bp_plugin_device_config_t *cfg);
GPU_HIDDEN void gpu_device_detach(gpu_device_t *d);
/* Makes d current on this thread (CUDA: pushes its context; HIP:
 * hipSetDevice); pair with gpu_device_leave (a no-op on HIP). */
GPU_HIDDEN bp_status_t gpu_device_enter(gpu_device_t *d);
GPU_HIDDEN void gpu_device_leave(void);
/* Device name and driver / BLAS library versions, for the tuning key. */
GPU_HIDDEN void gpu_device_identity(gpu_device_t *d, char *dev, size_t dev_size, char *driver,
                                    size_t driver_size, const char *blas_version);

/* ---- memory.c ----------------------------------------------------------- */
GPU_HIDDEN bp_status_t gpu_mem_alloc(bp_plugin_device_t *device, uint64_t size, uint64_t *out_ptr);
GPU_HIDDEN void gpu_mem_free(bp_plugin_device_t *device, uint64_t ptr);
GPU_HIDDEN bp_status_t gpu_mem_write(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                     uint64_t dst, uint64_t dst_offset, const void *src,
                                     uint64_t size);
GPU_HIDDEN bp_status_t gpu_mem_read(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                    void *dst, uint64_t src, uint64_t src_offset, uint64_t size);
GPU_HIDDEN bp_status_t gpu_mem_copy(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                    uint64_t dst, uint64_t dst_offset, uint64_t src,
                                    uint64_t src_offset, uint64_t size);
/* Out-of-memory message with the sizes the application needs to act. */
GPU_HIDDEN bp_status_t gpu_oom(uint64_t size, const char *why);

/* ---- stream.c ----------------------------------------------------------- */
GPU_HIDDEN bp_status_t gpu_stream_create(bp_plugin_device_t *device,
                                         bp_plugin_stream_t **out_stream);
GPU_HIDDEN void gpu_stream_destroy(bp_plugin_device_t *device, bp_plugin_stream_t *stream);
GPU_HIDDEN bp_status_t gpu_stream_synchronize(bp_plugin_device_t *device,
                                              bp_plugin_stream_t *stream);
/* The CUstream / hipStream_t behind stream (ABI 1.5); none for NULL. */
GPU_HIDDEN bp_status_t gpu_stream_native(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                         void **out_native);
GPU_HIDDEN bp_status_t gpu_event_create(bp_plugin_device_t *device, bp_plugin_event_t **out_event);
GPU_HIDDEN void gpu_event_destroy(bp_plugin_device_t *device, bp_plugin_event_t *event);
GPU_HIDDEN bp_status_t gpu_event_record(bp_plugin_device_t *device, bp_plugin_event_t *event,
                                        bp_plugin_stream_t *stream);
GPU_HIDDEN bp_status_t gpu_stream_wait_event(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                             bp_plugin_event_t *event);
GPU_HIDDEN bp_status_t gpu_event_synchronize(bp_plugin_device_t *device, bp_plugin_event_t *event);
GPU_HIDDEN bp_status_t gpu_event_elapsed(bp_plugin_device_t *device, bp_plugin_event_t *start,
                                         bp_plugin_event_t *end, double *out_ms);

/* ---- graph.c: native graphs by stream capture (ABI 1.2) ---------------- */
GPU_HIDDEN bp_status_t gpu_graph_begin(bp_plugin_device_t *device, bp_plugin_stream_t *stream);
GPU_HIDDEN bp_status_t gpu_graph_end(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                     bp_plugin_graph_t **out_graph);
GPU_HIDDEN bp_status_t gpu_graph_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                        bp_plugin_graph_t *graph);
GPU_HIDDEN void gpu_graph_destroy(bp_plugin_device_t *device, bp_plugin_graph_t *graph);
/* Brackets work on the legacy / null stream: waits while a capture runs
 * on another thread; BP_ERR_UNSUPPORTED (message set) on the capturing
 * thread. what names the work for the message. */
GPU_HIDDEN bp_status_t gpu_legacy_begin(gpu_device_t *d, const char *what);
GPU_HIDDEN void gpu_legacy_end(gpu_device_t *d);
/* True between graph_begin and graph_end on this thread. */
GPU_HIDDEN bool gpu_capturing_here(void);
/* Around a potentially unsafe driver call (module load, BLAS handle)
 * while this thread captures: relaxed capture mode, then the previous. */
GPU_HIDDEN int gpu_capture_relax(void);
GPU_HIDDEN void gpu_capture_restore(int mode);

/* ---- blas.c: the vendor BLAS through dlopen ----------------------------- */
/* True when the library is loaded and d has a working handle (created on
 * first use; a failure is logged once and sticks). */
GPU_HIDDEN bool gpu_blas_ready(gpu_device_t *d);
/* Runs one mapped gemm on stream s. */
GPU_HIDDEN bp_status_t gpu_blas_run(gpu_device_t *d, bp_plugin_stream_t *s,
                                    const bp_gpu_blas_call_t *c);
/* Device name and driver / library versions, for the tuning-cache key. */
GPU_HIDDEN void gpu_blas_identity(gpu_device_t *d, char *dev, size_t dev_size, char *driver,
                                  size_t driver_size);
/* Destroys d's handle and workspace (device current); closes the library
 * (shutdown). */
GPU_HIDDEN void gpu_blas_release(gpu_device_t *d);
GPU_HIDDEN void gpu_blas_unload(void);

/* ---- kernels.c (shared) and <vendor>/kernels.c -------------------------- */
/* Launches kernel name of module m (loaded on first use) with one by-value
 * parameter block; grid and block are {x, y, z}. A zero-sized grid is a
 * no-op. Makes the device current itself. */
GPU_HIDDEN bp_status_t gpu_launch(gpu_device_t *d, bp_plugin_stream_t *s, bp_gpu_module_id_t m,
                                  const char *name, const unsigned grid[3], const unsigned block[3],
                                  unsigned smem, void *params);
/* Unloads every module of d (device current). */
GPU_HIDDEN void gpu_modules_unload(gpu_device_t *d);
/* Vendor: loads built-in module m for d (device current, lock held). */
GPU_HIDDEN bp_status_t gpu_module_load(gpu_device_t *d, bp_gpu_module_id_t m, gpuModule_t *out);
/* Vendor: lets fn use smem bytes of dynamic shared memory, or refuses
 * (BP_ERR_UNSUPPORTED, message set) over the device's limit (device
 * current). name is for the message. */
GPU_HIDDEN bp_status_t gpu_allow_smem(gpu_device_t *d, gpuFunction_t fn, unsigned smem,
                                      const char *name);
/* Vendor: compiles a custom kernel's text (NUL-terminated; opts: the
 * application's compiler options, may be NULL) into k->module and looks up
 * k->fn by k->entry (device current); on failure leaves no module. */
GPU_HIDDEN bp_status_t gpu_kernel_compile(gpu_device_t *d, const char *text, const char *opts,
                                          gpu_kernel_t *k);
/* The application's custom kernels (ABI 1.1). */
GPU_HIDDEN bp_status_t gpu_kernel_create(bp_plugin_device_t *device,
                                         const bp_kernel_source_t *source,
                                         bp_plugin_kernel_t **out_kernel);
GPU_HIDDEN void gpu_kernel_destroy(bp_plugin_device_t *device, bp_plugin_kernel_t *kernel);
GPU_HIDDEN bp_status_t gpu_kernel_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                         bp_plugin_kernel_t *kernel, const bp_launch_args_t *args);

/* ---- stream.c: the stream's scratch memory ------------------------------ */
/* At least bytes of s's scratch memory in *out: the buffer it has, or a
 * larger one after the stream's queued work (which may still read the old
 * one) has finished. Fails (message set) during a capture, on the NULL
 * stream and when the memory is not there. */
GPU_HIDDEN bp_status_t gpu_stream_workspace(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                            uint64_t bytes, uint64_t *out);

/* ---- ops_conv_gemm.c: conv2d on the GEMM --------------------------------- */
/* Runs a as GEMMs on gpu_op_gemm (the vendor BLAS or the tensor-core
 * tiles) when its layout and the stream allow: *taken says whether it did
 * (then the status is the op's); otherwise the caller runs the direct
 * kernel. */
GPU_HIDDEN bp_status_t gpu_conv2d_as_gemm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                          const bp_conv2d_args_t *a, bool *taken);

/* ---- ops_*.c: one entry point per row of BP_OP_TABLE -------------------- */
/* gpu_op_<name>: ops_blas.c (gemm, gemv), ops_dnn.c (conv2d, pool2d,
 * batch_norm, layer_norm, rms_norm, softmax, attention, adam),
 * ops_elementwise.c (unary, binary), ops_reduce.c (reduce), ops_data.c
 * (fill, copy, cast, random). */
#define GPU__DECLARE_OP(E, name, args_t, ...)                                                      \
  GPU_HIDDEN bp_status_t gpu_op_##name(bp_plugin_device_t *device, bp_plugin_stream_t *stream,     \
                                       const args_t *a);
BP_OP_TABLE(GPU__DECLARE_OP)
/* ops_model.c: the model ops of ABI 1.5 (gather, arange, binary_scalar,
 * glu, rope). */
BP_OP_TABLE_MODEL(GPU__DECLARE_OP)
/* ops_quant.c: the quantized ops of ABI 1.5 (quantize, dequantize, qgemm,
 * qmatmul). */
BP_OP_TABLE_QUANT(GPU__DECLARE_OP)
#undef GPU__DECLARE_OP
/* ops_model.c: the model ops' rows of a device's capability table, and the
 * op_features bits the kernels run (tanh-approximate GELU). */
GPU_HIDDEN void gpu_model_claims(bp_device_info_t *info);
/* ops_quant.c: the quantized ops' rows of a device's capability table, and
 * i8 / fp8 added to fill, copy and cast. */
GPU_HIDDEN void gpu_quant_claims(bp_device_info_t *info);
/* ops_quant.c: whether a cast has an i8 or fp8 side, and its launch
 * (quant.cu's bp_cast_q; ops_data.c's gpu_op_cast hands such casts over). */
GPU_HIDDEN bool gpu_cast_is_quant(const bp_copy_args_t *a);
GPU_HIDDEN bp_status_t gpu_cast_quant(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                      const bp_copy_args_t *a);

/* ops_elementwise.c: launches a flat grid-stride kernel over n elements
 * (256 threads a block); n <= 0 is a no-op. */
GPU_HIDDEN bp_status_t gpu_launch_flat(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                       bp_gpu_module_id_t m, const char *name, int64_t n,
                                       void *params);
/* ops_reduce.c: the rows of x along axis (and the matching rows of y), and
 * a launch with one warp per row. */
GPU_HIDDEN void gpu_rows_of(const bp_plugin_tensor_t *x, const bp_plugin_tensor_t *y, int axis,
                            bpk_rows_t *r);
GPU_HIDDEN bp_status_t gpu_launch_rows(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                       bp_gpu_module_id_t m, const char *name, int64_t rows,
                                       void *params);

#endif /* BACKPLANE_GPU_H */
