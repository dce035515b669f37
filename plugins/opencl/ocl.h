/*
 * ocl.h — internals shared by the files of backend-opencl.so.
 *
 * The plugin reaches OpenCL only through the function table `ocl_api`, filled
 * by dlopen("libOpenCL.so.1") at probe/open time (driver.c), so the plugin has
 * no link-time dependency on the ICD loader. Device pointers handed to the
 * core are the cl_mem handle itself, widened to 64 bits; byte offsets travel
 * separately and every kernel takes (buffer, byte offset) pairs.
 *
 * Files (the set every plugin folder shares, docs/plugin-guide.md):
 * descriptor.c (the exported descriptor, init, shutdown, probe), driver.c
 * (dlopen, the ocl_api table, error names), device.c (enumeration, device
 * records, capability table, open, close), memory.c (buffers, transfers),
 * stream.c (queues, events), graph.c (native graphs: command buffers),
 * kernels.c (custom kernels) with kernels_program.c (program build and
 * binary cache), and the ops by family: ops_blas.c with ops_blas_tune.c
 * (the tiled-gemm tuner), ops_dnn.c, ops_elementwise.c, ops_reduce.c,
 * ops_data.c, and ops_common.c (argument marshalling, enqueue, layouts).
 *
 * Threading: one device mutex guards the program cache and the
 * set-args-then-enqueue sequence of shared cl_kernel objects, because calls
 * on different streams may arrive concurrently and cl_kernel argument state
 * is not thread-safe.
 */
#ifndef BACKPLANE_OCL_H
#define BACKPLANE_OCL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin-api.h"

#define OCL_NAME "opencl"
#define OCL_VERSION "0.1.0"

/* ---- the OpenCL entry points we use (driver.c) -------------------------- */
#define OCL_API_FUNCS(X)                                                                           \
  X(clGetPlatformIDs)                                                                              \
  X(clGetPlatformInfo)                                                                             \
  X(clGetDeviceIDs)                                                                                \
  X(clGetDeviceInfo)                                                                               \
  X(clCreateContext)                                                                               \
  X(clReleaseContext)                                                                              \
  X(clCreateCommandQueue)                                                                          \
  X(clReleaseCommandQueue)                                                                         \
  X(clFinish)                                                                                      \
  X(clFlush)                                                                                       \
  X(clCreateBuffer)                                                                                \
  X(clReleaseMemObject)                                                                            \
  X(clEnqueueWriteBuffer)                                                                          \
  X(clEnqueueReadBuffer)                                                                           \
  X(clEnqueueCopyBuffer)                                                                           \
  X(clEnqueueMapBuffer)                                                                            \
  X(clEnqueueUnmapMemObject)                                                                       \
  X(clCreateProgramWithSource)                                                                     \
  X(clCreateProgramWithBinary)                                                                     \
  X(clBuildProgram)                                                                                \
  X(clGetProgramInfo)                                                                              \
  X(clGetProgramBuildInfo)                                                                         \
  X(clReleaseProgram)                                                                              \
  X(clCreateKernel)                                                                                \
  X(clReleaseKernel)                                                                               \
  X(clSetKernelArg)                                                                                \
  X(clEnqueueNDRangeKernel)                                                                        \
  X(clGetKernelWorkGroupInfo)                                                                      \
  X(clGetKernelInfo)                                                                               \
  X(clEnqueueMarkerWithWaitList)                                                                   \
  X(clEnqueueBarrierWithWaitList)                                                                  \
  X(clWaitForEvents)                                                                               \
  X(clReleaseEvent)                                                                                \
  X(clGetEventProfilingInfo)                                                                       \
  X(clGetEventInfo)                                                                                \
  X(clCreateSubBuffer)                                                                             \
  X(clGetMemObjectInfo)                                                                            \
  X(clRetainMemObject)                                                                             \
  X(clGetExtensionFunctionAddressForPlatform)

typedef struct ocl_api {
#define OCL__FIELD(fn) __typeof__(&fn) fn;
  OCL_API_FUNCS(OCL__FIELD)
#undef OCL__FIELD
} ocl_api_t;

extern ocl_api_t ocl_api;
extern const bp_host_services_t *ocl_host;

/* Opens libOpenCL.so.1 once and fills ocl_api; BP_ERR_UNAVAILABLE (with the
 * message set through the host) when the ICD loader is missing. Thread-safe.*/
bp_status_t ocl_api_load(void);
/* At shutdown: keeps the library and table (see driver.c for why). */
void ocl_api_unload(void);
/* Short English name of a cl_int error code ("CL_OUT_OF_RESOURCES"). */
const char *ocl_err_name(cl_int err);
/* Maps a cl_int to a status and reports "what: CL_ERROR" through the host. */
bp_status_t ocl_fail(cl_int err, const char *what);

#define OCL_LOG(level, ...)                                                                        \
  do {                                                                                             \
    if (ocl_host && ocl_host->log) ocl_host->log(level, OCL_NAME, __VA_ARGS__);                    \
  } while (0)

/* ---- devices (device.c) -------------------------------------------------- */
typedef struct ocl_caps {
  char name[128], vendor[64], driver[64], platform[128], version[128];
  cl_device_type type;
  bool fp16, fp64, pci_bus_info;
  bool command_buffer, command_buffer_simultaneous; /* cl_khr_command_buffer */
  bool int_dot; /* cl_khr_integer_dot_product with signed 4x8-bit inputs */
  uint64_t global_mem, local_mem;
  uint32_t compute_units;
  size_t max_wg;
  cl_uint mem_align_bits;
} ocl_caps_t;

typedef struct ocl_program ocl_program_t;
typedef struct ocl_stream ocl_stream_t;

typedef struct ocl_gemm_cfg {
  int tile_m, tile_n, tile_k; /* work-group tile */
  int wpt_m, wpt_n;           /* per-item register tile */
  int vec;                    /* vector width of the local-tile loads */
  int unroll_k;
  int use_local; /* 0: stream panels; 1: local-memory tiles (GPUs);
                    2: K blocks of tile_k split by barriers (CPU caches) */
} ocl_gemm_cfg_t;

typedef struct ocl_device {
  cl_platform_id platform;
  cl_device_id id;
  cl_context ctx;
  cl_command_queue queue; /* the device's own queue for stream NULL */
  ocl_caps_t caps;
  pthread_mutex_t lock; /* programs, streams list, kernel args */
  ocl_program_t *programs;
  ocl_stream_t *streams;
  bool gemm_tuned[BP_DTYPE_COUNT];
  ocl_gemm_cfg_t gemm_cfg[BP_DTYPE_COUNT];
} ocl_device_t;

struct ocl_stream {
  cl_command_queue queue;
  ocl_stream_t *next;
};

typedef struct ocl_event {
  cl_event ev;
} ocl_event_t;

/* Devices probe and device_open look at, at most. */
#define OCL_MAX_DEVICES 64
/* Enumerates every device of every platform in a fixed order; fills at most
 * capacity ids (and their platforms) and the total count. */
bp_status_t ocl_enumerate(cl_platform_id *out_plats, cl_device_id *out_ids, uint32_t capacity,
                          uint32_t *out_count);
/* Reads the capabilities of one device. */
void ocl_caps_read(cl_platform_id plat, cl_device_id dev, ocl_caps_t *out);
/* Fills the record probe returns for one device (device.c). */
void ocl_device_describe(cl_platform_id plat, cl_device_id dev, bp_device_info_t *info);
/* Descriptor entry points (device.c, memory.c, stream.c). */
bp_status_t ocl_device_open(uint32_t index, const bp_plugin_device_config_t *config,
                            bp_plugin_device_t **out_device);
void ocl_device_close(bp_plugin_device_t *device);
bp_status_t ocl_device_synchronize(bp_plugin_device_t *device);
bp_status_t ocl_mem_alloc(bp_plugin_device_t *device, uint64_t size, uint64_t *out_ptr);
void ocl_mem_free(bp_plugin_device_t *device, uint64_t ptr);
bp_status_t ocl_mem_write(bp_plugin_device_t *device, bp_plugin_stream_t *stream, uint64_t dst,
                          uint64_t dst_offset, const void *src, uint64_t size);
bp_status_t ocl_mem_read(bp_plugin_device_t *device, bp_plugin_stream_t *stream, void *dst,
                         uint64_t src, uint64_t src_offset, uint64_t size);
bp_status_t ocl_mem_copy(bp_plugin_device_t *device, bp_plugin_stream_t *stream, uint64_t dst,
                         uint64_t dst_offset, uint64_t src, uint64_t src_offset, uint64_t size);
bp_status_t ocl_mem_map(bp_plugin_device_t *device, uint64_t ptr, uint64_t offset, uint64_t size,
                        uint32_t flags, void **out_host);
bp_status_t ocl_mem_unmap(bp_plugin_device_t *device, uint64_t ptr, void *host);
bp_status_t ocl_stream_create(bp_plugin_device_t *device, bp_plugin_stream_t **out_stream);
void ocl_stream_destroy(bp_plugin_device_t *device, bp_plugin_stream_t *stream);
bp_status_t ocl_stream_synchronize(bp_plugin_device_t *device, bp_plugin_stream_t *stream);
bp_status_t ocl_event_create(bp_plugin_device_t *device, bp_plugin_event_t **out_event);
void ocl_event_destroy(bp_plugin_device_t *device, bp_plugin_event_t *event);
bp_status_t ocl_event_record(bp_plugin_device_t *device, bp_plugin_event_t *event,
                             bp_plugin_stream_t *stream);
bp_status_t ocl_stream_wait_event(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                  bp_plugin_event_t *event);
bp_status_t ocl_event_synchronize(bp_plugin_device_t *device, bp_plugin_event_t *event);
bp_status_t ocl_event_elapsed(bp_plugin_device_t *device, bp_plugin_event_t *start,
                              bp_plugin_event_t *end, double *out_ms);

/* The queue work for stream goes to (the device queue for NULL). */
cl_command_queue ocl_queue(ocl_device_t *d, bp_plugin_stream_t *stream);
/* Waits for every stream and the device queue. */
bp_status_t ocl_device_finish(ocl_device_t *d);

/* ---- native graphs (graph.c, ABI 1.2) ------------------------------------ */
typedef struct ocl_graph ocl_graph_t;
/* The graph this thread is recording for queue q, or NULL. */
ocl_graph_t *ocl_graph_recording(cl_command_queue q);
/* Appends a kernel launch (with the arguments set on k now) to g. */
cl_int ocl_graph_record_kernel(ocl_graph_t *g, cl_kernel k, cl_uint dims, const size_t *gws,
                               const size_t *lws);
/* While q records a graph, keeps m alive for the graph's lifetime. */
void ocl_graph_keep(cl_command_queue q, cl_mem m);
/* While this thread records a graph, replaces *inout_kernel by a new kernel
 * `name` of prog that the graph owns, so the command recorded with it keeps
 * its arguments (graph.c says why); otherwise leaves it alone. */
bp_status_t ocl_graph_own_kernel(cl_program prog, const char *name, cl_kernel *inout_kernel);
/* Suspends (true) and resumes (false) this thread's recording, for work that
 * must run now and not go into the graph (the GEMM tuner). */
void ocl_graph_pause(bool pause);
bp_status_t ocl_graph_begin(bp_plugin_device_t *device, bp_plugin_stream_t *stream);
bp_status_t ocl_graph_end(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          bp_plugin_graph_t **out_graph);
bp_status_t ocl_graph_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                             bp_plugin_graph_t *graph);
void ocl_graph_destroy(bp_plugin_device_t *device, bp_plugin_graph_t *graph);

/* ---- programs and kernels (kernels_program.c, kernels.c) ---------------- */
/* Kernel source families, one file each under kernels/opencl/. */
typedef enum ocl_family {
  OCL_FAM_DATA = 0, /* fill, copy, cast */
  OCL_FAM_ELEMENTWISE,
  OCL_FAM_GEMM,
  OCL_FAM_REDUCE,
  OCL_FAM_SOFTMAX,
  OCL_FAM_NORM,
  OCL_FAM_ATTENTION,
  OCL_FAM_CONV,
  OCL_FAM_POOL,
  OCL_FAM_BATCH_NORM,
  OCL_FAM_ADAM,
  OCL_FAM_RANDOM,
  OCL_FAM_MODEL, /* gather, arange, binary_scalar, glu, rope (ocl_model.h) */
  OCL_FAM_QUANT, /* quantize, dequantize, qgemm, qmatmul, i8/fp8 casts (ocl_quant.h) */
  OCL_FAM_COUNT
} ocl_family_t;

/* Returns the kernel `name` of family built with `options` (cached in memory
 * and, as a program binary, on disk). Caller holds d->lock. The kernel is
 * borrowed from the device, or from the graph this thread is recording. */
bp_status_t ocl_kernel_get(ocl_device_t *d, ocl_family_t fam, const char *options, const char *name,
                           cl_kernel *out_kernel);
/* Builds an application's OpenCL C source (NUL-terminated) through the same
 * binary cache; a build failure is BP_ERR_INVALID_ARGUMENT with the log.
 * Caller holds d->lock. */
bp_status_t ocl_program_build_user(ocl_device_t *d, const char *name, const char *src,
                                   const char *options, cl_program *out);
/* Custom kernels (kernels.c, ABI 1.1). */
bp_status_t ocl_kernel_create(bp_plugin_device_t *device, const bp_kernel_source_t *src,
                              bp_plugin_kernel_t **out_kernel);
void ocl_kernel_destroy(bp_plugin_device_t *device, bp_plugin_kernel_t *kernel);
bp_status_t ocl_kernel_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                              bp_plugin_kernel_t *kernel, const bp_launch_args_t *args);
/* Releases every cached program and kernel of the device. */
void ocl_programs_release(ocl_device_t *d);
/* Milliseconds spent in clBuildProgram by this process (for the warm-run
 * target), and how many builds came from source. */
double ocl_compile_ms(unsigned *out_source_builds);
/* Directory for plugin caches ($XDG_CACHE_HOME/backplane or
 * ~/.cache/backplane), created on demand; false when none can be made. */
bool ocl_cache_dir(char *out, size_t cap);
/* The embedded text of kernels/opencl/<file>, NULL when not built in. */
const char *ocl_source(const char *file);
/* FNV-1a 64 over bytes, chained from h. */
uint64_t ocl_hash(uint64_t h, const void *p, size_t n);

/* ---- launching and layouts (ops_common.c) ------------------------------- */
typedef struct ocl_args {
  cl_kernel k;
  cl_uint n;
  cl_int err;
} ocl_args_t;

void ocl_arg(ocl_args_t *a, size_t size, const void *value);
#define OCL_ARG(a, v) ocl_arg((a), sizeof(v), &(v))
/* Adds (cl_mem, byte offset) for a device pointer. */
void ocl_arg_buf(ocl_args_t *a, uint64_t ptr, uint64_t offset);
/* Enqueues k over gws (work-group lws, or NULL) on q. */
bp_status_t ocl_enqueue(cl_command_queue q, ocl_args_t *a, cl_uint dims, const size_t *gws,
                        const size_t *lws);
/* Enqueues a 1-D grid-stride kernel over n items on the stream's queue. */
bp_status_t ocl_launch_flat(ocl_device_t *d, bp_plugin_stream_t *stream, ocl_args_t *a, int64_t n);
/* Work-group size of the line kernels (reduce, softmax, norms). */
#define OCL_ROW_WG 64
/* Enqueues a line kernel over nrows lines: a work-group of OCL_ROW_WG items
 * per line, or (per_item) one work-item per line. */
bp_status_t ocl_launch_rows(ocl_device_t *d, bp_plugin_stream_t *stream, ocl_args_t *a,
                            int64_t nrows, bool per_item);
/* Build options selecting dtype dt ("-DDT_F32 ..."), with the device's
 * extensions. */
void ocl_dtype_options(const ocl_device_t *d, bp_dtype_t dt, char *out, size_t cap);
size_t ocl_dtype_size(bp_dtype_t dt);
/* Adds a scalar in the compute type of dt (double for f64, else float). */
void ocl_arg_scalar(ocl_args_t *a, bp_dtype_t dt, double v);
/* Rounds n up to a multiple of m. */
static inline size_t ocl_round_up(size_t n, size_t m) {
  return (n + m - 1) / m * m;
}
/* Adds a tensor's first four strides as a long4 (rank-4 ops). */
void ocl_arg_strides4(ocl_args_t *a, const bp_plugin_tensor_t *t);
static inline cl_mem ocl_mem(uint64_t ptr) {
  return (cl_mem)(uintptr_t)ptr;
}

/* Tensors collapsed for elementwise kernels: up to BP_MAX_RANK dims with
 * unit dims dropped and mergeable neighbours merged. Kernels receive shape
 * and strides as long8 vectors. */
typedef struct ocl_layout {
  int rank;
  int64_t numel;
  cl_long shape[8];
  cl_long strides[4][8]; /* up to four tensors */
} ocl_layout_t;
/* Collapses the shape of y with the strides of ntensors tensors. */
void ocl_layout_make(const bp_plugin_tensor_t *const *t, int ntensors, const int64_t *shape,
                     int rank, ocl_layout_t *out);

/* Lines of x along axis (and the matching lines of y): the other dims of
 * both, collapsed; numel is the number of lines. */
void ocl_rows_make(const bp_plugin_tensor_t *x, const bp_plugin_tensor_t *y, int axis,
                   ocl_layout_t *out);
/* Adds BP_ROW_ARGS (kernels/opencl/common.cl) for rows l of length len. */
void ocl_arg_rows(ocl_args_t *a, const ocl_layout_t *l, int64_t len, int64_t sxl, int64_t syl);

/* ---- ops (ops_*.c): one entry point per line of BP_OP_TABLE ------------- */
#define OCL__DECL(E, op, args_t, ...)                                                              \
  bp_status_t ocl_op_##op(bp_plugin_device_t *, bp_plugin_stream_t *, const args_t *);
BP_OP_TABLE(OCL__DECL)
#undef OCL__DECL

/* ---- gemm (ops_blas.c, ops_blas_tune.c) --------------------------------- */
/* Build options of a tiled-gemm configuration. */
void ocl_gemm_cfg_options(const ocl_device_t *d, bp_dtype_t dt, const ocl_gemm_cfg_t *c, char *out,
                          size_t cap);
/* Enqueues pack + tiled kernel for g with configuration cfg. Caller holds
 * d->lock. */
bp_status_t ocl_gemm_tiled(ocl_device_t *d, cl_command_queue q, const ocl_gemm_cfg_t *cfg,
                           const bp_gemm_args_t *g);
/* One launch of gemm.cl's gemm_tiled over panels already packed (ops_blas.c
 * packs for gemm; conv2d and attention pack their own operands). C's batch
 * index bi + boff lands at ((bi + boff) / nb1) * csb + ((bi + boff) % nb1) *
 * csb1; tri and tri_off as gemm.cl says (0: plain). Caller holds d->lock. */
typedef struct ocl_tiled_run {
  cl_mem pa, pb;
  int64_t mp, np, kp, sab, sbb; /* padded sizes; panel batch strides */
  int64_t m, n, batch;
  const bp_plugin_tensor_t *c; /* its ptr, offset and dtype */
  int64_t c_off;               /* elements added to c's offset */
  int64_t csb, csm, csn, nb1, csb1, boff;
  int tri;
  int64_t tri_off;
  /* ldb 0: pb holds packed panels. Otherwise pb is B itself, rows of ldb
   * elements from element bofs (n >= tile_n, kp rows exactly; gemm.cl),
   * in c's dtype (f32, f64, or bf16 widened as loaded). */
  int64_t ldb, bofs;
  double alpha, beta;
  /* The epilogue (gemm.cl): bias over [batch, m, n] by strides or NULL, and
   * the activation when activate. */
  const bp_plugin_tensor_t *bias;
  bool activate;
  int32_t activation;
} ocl_tiled_run_t;
/* Adds gemm.cl's GEMM_EPI_ARGS: bias (NULL: none; c's buffer stands in)
 * and the activation when activate. */
void ocl_arg_epilogue(ocl_args_t *a, const bp_plugin_tensor_t *c, const bp_plugin_tensor_t *bias,
                      bool activate, int32_t activation);
bp_status_t ocl_gemm_run(ocl_device_t *d, cl_command_queue q, const ocl_gemm_cfg_t *cfg,
                         const ocl_tiled_run_t *r);
/* The k padding gemm_tiled needs with cfg. */
int64_t ocl_gemm_kstep(const ocl_gemm_cfg_t *cfg);
/* The matrix-vector product (ops_blas_mv.c): a GEMM with one row of C, a
 * gemv; BP_ERR_UNSUPPORTED when the layout does not suit its kernels.
 * Caller holds d->lock. */
bp_status_t ocl_gemm_mv(ocl_device_t *d, cl_command_queue q, const bp_gemm_args_t *g);
bp_status_t ocl_gemv_mv(ocl_device_t *d, cl_command_queue q, const bp_gemv_args_t *g);
/* conv2d through gemm_tiled, x read in place (1x1) or as im2col panels
 * (ops_conv_gemm.c), and attention as
 * Q Kt, softmax, P V through it (ops_attention_gemm.c); BP_ERR_UNSUPPORTED
 * when the shape is better served by the direct kernels. Caller holds
 * d->lock. */
bp_status_t ocl_conv2d_gemm(ocl_device_t *d, cl_command_queue q, const bp_conv2d_args_t *args);
/* Depthwise conv2d (one input channel per group) on conv2d_dw
 * (ops_conv_dw.c); BP_ERR_UNSUPPORTED for any other layer. */
bp_status_t ocl_conv2d_depthwise(ocl_device_t *d, cl_command_queue q,
                                 const bp_conv2d_args_t *args);
bp_status_t ocl_attention_gemm(ocl_device_t *d, cl_command_queue q, const bp_attention_args_t *args);
/* Flash attention for CPU drivers (ops_attention_flash.c): one kernel over
 * the visible keys, no score matrix; BP_ERR_UNSUPPORTED on other devices
 * or shapes. Caller holds d->lock. */
bp_status_t ocl_attention_flash(ocl_device_t *d, cl_command_queue q,
                                const bp_attention_args_t *args);
/* attention.cl's att_pack (ops_attention_gemm.c): t's (b, h, x, p) elements
 * of heads bh0 .. bh0 + nb - 1 (query head h reads head h / grp of t) into
 * dst[bi][(x / pwid) * kp + p][x % pwid], x along axis sx_axis of t and p
 * along sp_axis, zero padded to kp x xp; keys at or past lens (NULL: none)
 * along x (lens_axis 1) or p (2) pack as zeros. */
bp_status_t ocl_att_pack(ocl_device_t *d, cl_command_queue q, const char *opts,
                         const bp_plugin_tensor_t *t, int sx_axis, int sp_axis, int64_t grp,
                         int64_t hq, int64_t bh0, int64_t nb, int64_t rows_p, int64_t cols_x,
                         cl_mem dst, int64_t kp, int64_t xp, int64_t pwid,
                         const bp_plugin_tensor_t *lens, int lens_axis);
/* Adds attention.cl's ATT_MASK_ARGS for args' masks (ops_attention_gemm.c). */
void ocl_arg_att_mask(ocl_args_t *a, const bp_attention_args_t *args);
/* A scratch buffer of size bytes, released by the caller once enqueued (a
 * graph being recorded on q keeps it). */
cl_mem ocl_scratch(ocl_device_t *d, cl_command_queue q, size_t size, bp_status_t *out_st);
/* The device's tiled-gemm configuration for dt: from the tuning cache file,
 * or measured now (once per device and dtype). Caller holds d->lock. */
bp_status_t ocl_gemm_config(ocl_device_t *d, bp_dtype_t dt, const ocl_gemm_cfg_t **out_cfg);

/* Fills the capability table of a device from what the ops implement
 * (device.c). */
void ocl_op_dtypes(const ocl_caps_t *caps, uint32_t *op_dtypes);

#endif /* BACKPLANE_OCL_H */
