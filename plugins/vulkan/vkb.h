/*
 * vkb.h — internals shared by the files of backend-vulkan.so.
 *
 * The plugin opens libvulkan.so.1 with dlopen (driver.c) and resolves every
 * entry point through vkGetInstanceProcAddr / vkGetDeviceProcAddr into the
 * tables below. Tensors reach shaders through buffer device addresses: each
 * dispatch writes a small parameter block (addresses, shapes, strides) into
 * host-visible memory and pushes its address as the only push constant, so
 * no descriptor sets are needed and any byte offset works.
 *
 * Files (the set every plugin folder shares, docs/plugin-guide.md):
 * descriptor.c (the exported descriptor, init, shutdown, probe), driver.c
 * (dlopen, instance), device.c (device records, capability table, open,
 * close), memory.c (suballocator, copies), stream.c (command batches, events), graph.c (native
 * graphs), kernels.c (custom kernels) with kernels_glsl.c (GLSL at run time) and kernels_pipeline.c
 * (embedded SPIR-V, pipeline cache, dispatch), and the ops by family: ops_blas.c, ops_dnn.c,
 * ops_elementwise.c, ops_reduce.c, ops_data.c, their texel-buffer paths for CPU implementations
 * (ops_blas_texel.c, ops_dnn_texel.c) and ops_common.c (shared helpers).
 */
#ifndef BACKPLANE_VKB_H
#define BACKPLANE_VKB_H

#define VK_NO_PROTOTYPES
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "plugin-api.h"

#define VKB_HIDDEN __attribute__((visibility("hidden")))
#define VKB_MAX_DEVICES 16
#define VKB_MAX_QUEUES 8

/* ---- entry points (driver.c) ------------------------------------------- */
#define VKB_INSTANCE_FNS(X)                                                                        \
  X(vkDestroyInstance)                                                                             \
  X(vkEnumeratePhysicalDevices)                                                                    \
  X(vkGetPhysicalDeviceProperties)                                                                 \
  X(vkGetPhysicalDeviceProperties2)                                                                \
  X(vkGetPhysicalDeviceFeatures2)                                                                  \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                                      \
  X(vkGetPhysicalDeviceMemoryProperties)                                                           \
  X(vkGetPhysicalDeviceFormatProperties)                                                           \
  X(vkEnumerateDeviceExtensionProperties)                                                          \
  X(vkCreateDevice)                                                                                \
  X(vkGetDeviceProcAddr)

#define VKB_DEVICE_FNS(X)                                                                          \
  X(vkDestroyDevice)                                                                               \
  X(vkGetDeviceQueue)                                                                              \
  X(vkQueueSubmit)                                                                                 \
  X(vkDeviceWaitIdle)                                                                              \
  X(vkQueueWaitIdle)                                                                               \
  X(vkAllocateMemory)                                                                              \
  X(vkFreeMemory)                                                                                  \
  X(vkMapMemory)                                                                                   \
  X(vkCreateBuffer)                                                                                \
  X(vkDestroyBuffer)                                                                               \
  X(vkGetBufferMemoryRequirements)                                                                 \
  X(vkBindBufferMemory)                                                                            \
  X(vkGetBufferDeviceAddress)                                                                      \
  X(vkCreateShaderModule)                                                                          \
  X(vkDestroyShaderModule)                                                                         \
  X(vkCreatePipelineLayout)                                                                        \
  X(vkDestroyPipelineLayout)                                                                       \
  X(vkCreateComputePipelines)                                                                      \
  X(vkDestroyPipeline)                                                                             \
  X(vkCreatePipelineCache)                                                                         \
  X(vkDestroyPipelineCache)                                                                        \
  X(vkGetPipelineCacheData)                                                                        \
  X(vkCreateCommandPool)                                                                           \
  X(vkDestroyCommandPool)                                                                          \
  X(vkAllocateCommandBuffers)                                                                      \
  X(vkResetCommandBuffer)                                                                          \
  X(vkBeginCommandBuffer)                                                                          \
  X(vkEndCommandBuffer)                                                                            \
  X(vkCmdBindPipeline)                                                                             \
  X(vkCmdPushConstants)                                                                            \
  X(vkCmdDispatch)                                                                                 \
  X(vkCmdPipelineBarrier)                                                                          \
  X(vkCmdCopyBuffer)                                                                               \
  X(vkCmdWriteTimestamp)                                                                           \
  X(vkCmdResetQueryPool)                                                                           \
  X(vkCreateQueryPool)                                                                             \
  X(vkDestroyQueryPool)                                                                            \
  X(vkGetQueryPoolResults)                                                                         \
  X(vkCreateSemaphore)                                                                             \
  X(vkDestroySemaphore)                                                                            \
  X(vkWaitSemaphores)                                                                              \
  X(vkCreateBufferView)                                                                            \
  X(vkDestroyBufferView)                                                                           \
  X(vkCreateDescriptorSetLayout)                                                                   \
  X(vkDestroyDescriptorSetLayout)                                                                  \
  X(vkGetSemaphoreCounterValue)

#define VKB__FN_FIELD(name) PFN_##name name;
typedef struct vkb_ifn {
  VKB_INSTANCE_FNS(VKB__FN_FIELD)
} vkb_ifn_t;
typedef struct vkb_dfn {
  VKB_DEVICE_FNS(VKB__FN_FIELD)
} vkb_dfn_t;
#undef VKB__FN_FIELD

/* The process-wide Vulkan state: loader handle and one instance, created
 * on first probe and kept until shutdown. */
typedef struct vkb_global {
  void *lib;
  VkInstance instance;
  vkb_ifn_t fn;
  uint32_t phys_count;
  VkPhysicalDevice phys[VKB_MAX_DEVICES];
} vkb_global_t;

extern VKB_HIDDEN const bp_host_services_t *vkb_host;
/* Loads the loader and creates the instance once; BP_ERR_UNAVAILABLE with a
 * message when there is no loader or no instance. Thread-safe. */
VKB_HIDDEN bp_status_t vkb_global_get(vkb_global_t **out_global);
VKB_HIDDEN void vkb_global_release(void);
VKB_HIDDEN void vkb_log(bp_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sets the host error message and returns status. */
VKB_HIDDEN bp_status_t vkb_fail(bp_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Maps a VkResult to a status, with a message naming what failed. */
VKB_HIDDEN bp_status_t vkb_check(VkResult r, const char *what);

/* ---- capabilities (device.c) ------------------------------------------- */
typedef struct vkb_caps {
  bool usable; /* bufferDeviceAddress, timeline semaphores, int64 */
  bool storage8, storage16, float64;
  /* VK_KHR_shader_integer_dot_product: OpSDot in quantgemm.comp */
  bool int_dot;
  /* VK_KHR_push_descriptor and rgba32f storage texel buffers: the texel
   * GEMM path (gemmtex.comp) for CPU implementations */
  bool texel;
  /* r16ui storage texel buffers: bf16 conv2d reads x in place (_convx) */
  bool texel_r16;
  uint32_t max_texels; /* maxTexelBufferElements */
  uint32_t subgroup_size, shared_bytes, max_invocations;
  uint32_t max_groups[3];
} vkb_caps_t;

/* Physical devices with a compute queue: the devices probe lists and
 * device_open numbers. */
VKB_HIDDEN uint32_t vkb_device_count(vkb_global_t *g);
/* Fills the record probe returns for the index-th of them. */
VKB_HIDDEN void vkb_device_describe(vkb_global_t *g, uint32_t index, bp_device_info_t *info);
/* The descriptor's device entry points. */
VKB_HIDDEN bp_status_t vkb_device_open(uint32_t index, const bp_plugin_device_config_t *config,
                                       bp_plugin_device_t **out_device);
VKB_HIDDEN void vkb_device_close(bp_plugin_device_t *device);
VKB_HIDDEN bp_status_t vkb_device_synchronize(bp_plugin_device_t *device);

/* Fills the op/dtype table with what this plugin implements on caps. */
VKB_HIDDEN void vkb_claims(const vkb_caps_t *caps, uint32_t op_dtypes[BP_OP_TABLE_SIZE]);

/* ---- memory (memory.c) -------------------------------------------------- */
typedef struct vkb_free_range vkb_free_range_t;
typedef struct vkb_block {
  VkDeviceMemory mem;
  VkBuffer buf;
  VkDeviceAddress addr;
  uint8_t *map; /* NULL when not host-visible */
  uint64_t size, used;
  vkb_free_range_t *free; /* sorted by offset, coalesced */
  struct vkb_block *next;
} vkb_block_t;

typedef struct vkb_heap {
  uint32_t type_index;
  bool host_visible;
  vkb_block_t *blocks;
} vkb_heap_t;

/* One allocation; the plugin's 64-bit device pointer is its address. */
typedef struct vkb_alloc {
  vkb_block_t *block;
  uint64_t offset, size;
  VkDeviceAddress addr;
  uint8_t *map; /* host view, NULL when not host-visible */
  bool host;    /* from the host heap (staging, parameters) */
} vkb_alloc_t;

typedef struct vkb_stream vkb_stream_t;
typedef struct vkb_pipeline vkb_pipeline_t;

typedef struct vkb_device {
  vkb_global_t *g;
  VkPhysicalDevice phys;
  VkDevice dev;
  vkb_dfn_t fn;
  vkb_caps_t caps;
  uint32_t queue_family, queue_count;
  VkQueue queues[VKB_MAX_QUEUES];
  pthread_mutex_t queue_lock[VKB_MAX_QUEUES];
  uint32_t next_queue;
  float timestamp_period;
  bool software; /* a CPU implementation such as lavapipe */
  pthread_mutex_t mem_lock;
  vkb_heap_t heap_dev, heap_host;
  uint64_t memory_limit, memory_used;
  VkPipelineLayout layout;
  /* Kernels that read storage texel buffers: one push-descriptor set of
   * VKB_MAX_VIEWS texel-buffer bindings plus the parameter address. */
  VkDescriptorSetLayout tex_set;
  VkPipelineLayout tex_layout;
  PFN_vkCmdPushDescriptorSetKHR push_descriptors; /* NULL without */
  /* the tuning cache key: device name, driver version */
  char tune_device[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE], tune_driver[32];
  int gemm_tile; /* index of the tuned gemmtex tile; -1 until tuned */
  VkPipelineCache cache;
  pthread_mutex_t pipe_lock;
  vkb_pipeline_t *pipelines;
  vkb_stream_t *default_stream;
  pthread_mutex_t stream_lock;
  vkb_stream_t *streams; /* every stream, for device_synchronize */
} vkb_device_t;

VKB_HIDDEN bp_status_t vkb_heaps_init(vkb_device_t *d);
VKB_HIDDEN void vkb_heaps_destroy(vkb_device_t *d);
/* Suballocates size bytes (aligned to 256) from the device or host heap. */
VKB_HIDDEN bp_status_t vkb_alloc(vkb_device_t *d, bool host, uint64_t size,
                                 vkb_alloc_t **out_alloc);
VKB_HIDDEN void vkb_free(vkb_device_t *d, vkb_alloc_t *a);
/* The descriptor's memory entry points. */
VKB_HIDDEN bp_status_t vkb_mem_alloc(bp_plugin_device_t *device, uint64_t size, uint64_t *out_ptr);
VKB_HIDDEN void vkb_mem_free(bp_plugin_device_t *device, uint64_t ptr);
VKB_HIDDEN bp_status_t vkb_mem_write(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                     uint64_t dst, uint64_t dst_offset, const void *src,
                                     uint64_t size);
VKB_HIDDEN bp_status_t vkb_mem_read(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                    void *dst, uint64_t src, uint64_t src_offset, uint64_t size);
VKB_HIDDEN bp_status_t vkb_mem_copy(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                    uint64_t dst, uint64_t dst_offset, uint64_t src,
                                    uint64_t src_offset, uint64_t size);
VKB_HIDDEN bp_status_t vkb_mem_map(bp_plugin_device_t *device, uint64_t ptr, uint64_t offset,
                                   uint64_t size, uint32_t flags, void **out_host);
VKB_HIDDEN bp_status_t vkb_mem_unmap(bp_plugin_device_t *device, uint64_t ptr, void *host);
static inline vkb_alloc_t *vkb_ptr(uint64_t p) {
  return (vkb_alloc_t *)(uintptr_t)p;
}

/* ---- streams (stream.c) ------------------------------------------------- */
/* One submission: its command buffer, the timeline value it signals and the
 * allocations (staging, parameters) freed once it completes. */
typedef struct vkb_batch {
  VkCommandBuffer cb; /* VK_NULL_HANDLE for a graph launch (not reused) */
  uint64_t value;
  vkb_alloc_t **rel;
  uint32_t nrel;
  VkBufferView *views;
  uint32_t nviews;
} vkb_batch_t;

typedef struct vkb_graph vkb_graph_t;

struct vkb_stream {
  vkb_device_t *d;
  pthread_mutex_t lock;
  uint32_t queue;
  VkCommandPool pool;
  VkSemaphore timeline;
  uint64_t submitted;  /* last value a submission will signal */
  VkCommandBuffer cur; /* recording, or VK_NULL_HANDLE */
  uint32_t cur_cmds;
  struct vkb_batch *inflight; /* submitted, oldest first */
  uint32_t ninflight, capinflight;
  VkCommandBuffer *spare; /* completed command buffers, for reuse */
  uint32_t nspare, capspare;
  vkb_alloc_t *chunk; /* parameter chunk being filled */
  uint64_t chunk_used;
  vkb_alloc_t **releases; /* freed when the current batch completes */
  uint32_t nrel, caprel;
  VkBufferView *views; /* destroyed when the current batch completes */
  uint32_t nviews, capviews;
  vkb_graph_t *capture; /* recording a native graph (graph.c), or NULL */
  VkSemaphore wait_sem[8];
  uint64_t wait_val[8];
  uint32_t nwait;
  struct vkb_stream *next;
};

VKB_HIDDEN bp_status_t vkb_stream_new(vkb_device_t *d, vkb_stream_t **out_stream);
VKB_HIDDEN void vkb_stream_free(vkb_stream_t *s);
/* Returns the command buffer being recorded, starting one if needed, after
 * a barrier that orders it behind everything recorded before. Call with
 * s->lock held. */
VKB_HIDDEN bp_status_t vkb_stream_cmd(vkb_stream_t *s, VkCommandBuffer *out_cb);
/* Counts a recorded command; submits the batch when it is large. */
VKB_HIDDEN bp_status_t vkb_stream_recorded(vkb_stream_t *s);
/* Submits what is recorded (if anything). Call with s->lock held. */
VKB_HIDDEN bp_status_t vkb_stream_flush(vkb_stream_t *s);
/* Submits and waits for everything on s. Call with s->lock held. */
VKB_HIDDEN bp_status_t vkb_stream_wait(vkb_stream_t *s);
/* Frees a when the current batch completes (or, while a graph is being
 * recorded, when the graph is destroyed). */
VKB_HIDDEN bp_status_t vkb_stream_release(vkb_stream_t *s, vkb_alloc_t *a);
/* Destroys v like vkb_stream_release frees allocations. */
VKB_HIDDEN bp_status_t vkb_stream_release_view(vkb_stream_t *s, VkBufferView v);
/* Submits cb (a recorded graph) on s after everything already recorded on
 * s, signalling s's timeline and also (sem, value), after sem reaches
 * value - 1. Call with s->lock held. */
VKB_HIDDEN bp_status_t vkb_stream_submit_graph(vkb_stream_t *s, VkCommandBuffer cb, VkSemaphore sem,
                                               uint64_t value);
/* Copies size bytes of params into the stream's parameter memory, valid
 * until the current batch completes; returns its device address. */
VKB_HIDDEN bp_status_t vkb_stream_params(vkb_stream_t *s, const void *data, uint32_t size,
                                         VkDeviceAddress *out_addr);
/* The stream to use for a call: s, or the device's default stream. */
VKB_HIDDEN vkb_stream_t *vkb_stream_or_default(vkb_device_t *d, bp_plugin_stream_t *s);

/* The descriptor's stream and event entry points. */
VKB_HIDDEN bp_status_t vkb_stream_create(bp_plugin_device_t *device,
                                         bp_plugin_stream_t **out_stream);
VKB_HIDDEN void vkb_stream_destroy(bp_plugin_device_t *device, bp_plugin_stream_t *stream);
VKB_HIDDEN bp_status_t vkb_stream_synchronize(bp_plugin_device_t *device,
                                              bp_plugin_stream_t *stream);
VKB_HIDDEN bp_status_t vkb_event_create(bp_plugin_device_t *device, bp_plugin_event_t **out_event);
VKB_HIDDEN void vkb_event_destroy(bp_plugin_device_t *device, bp_plugin_event_t *event);
VKB_HIDDEN bp_status_t vkb_event_record(bp_plugin_device_t *device, bp_plugin_event_t *event,
                                        bp_plugin_stream_t *stream);
VKB_HIDDEN bp_status_t vkb_stream_wait_event(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                             bp_plugin_event_t *event);
VKB_HIDDEN bp_status_t vkb_event_synchronize(bp_plugin_device_t *device, bp_plugin_event_t *event);
VKB_HIDDEN bp_status_t vkb_event_elapsed(bp_plugin_device_t *device, bp_plugin_event_t *start,
                                         bp_plugin_event_t *end, double *out_ms);

/* ---- native graphs (graph.c) ------------------------------------------- */
/* A recorded command buffer with everything it uses (parameter memory,
 * scratch, texel views), launched by resubmission. */
struct vkb_graph {
  VkCommandPool pool;
  VkCommandBuffer cb;
  VkSemaphore done; /* timeline: reaches launches when all completed */
  uint64_t launches;
  uint32_t queues_used; /* bit i: launched on queue i, idled before freeing */
  uint32_t cmds;
  bp_status_t failed; /* the first failure while recording */
  vkb_alloc_t **keep;
  uint32_t nkeep;
  VkBufferView *views;
  uint32_t nviews;
  /* the stream's own release lists, set aside while recording */
  vkb_alloc_t *saved_chunk;
  uint64_t saved_chunk_used;
  vkb_alloc_t **saved_rel;
  uint32_t saved_nrel, saved_caprel;
  VkBufferView *saved_views;
  uint32_t saved_nviews, saved_capviews;
};
VKB_HIDDEN bp_status_t vkb_graph_begin(bp_plugin_device_t *device, bp_plugin_stream_t *stream);
VKB_HIDDEN bp_status_t vkb_graph_end(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                     bp_plugin_graph_t **out_graph);
VKB_HIDDEN bp_status_t vkb_graph_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                        bp_plugin_graph_t *graph);
VKB_HIDDEN void vkb_graph_destroy(bp_plugin_device_t *device, bp_plugin_graph_t *graph);

/* ---- built-in kernels (kernels_pipeline.c) ------------------------------ */
#define VKB_MAX_SPEC 8
#define VKB_MAX_VIEWS 4
VKB_HIDDEN bp_status_t vkb_pipelines_init(vkb_device_t *d);
VKB_HIDDEN void vkb_pipelines_destroy(vkb_device_t *d);
/* True when the kernel variant is embedded in this build. */
VKB_HIDDEN bool vkb_kernel_present(const char *name);
/* Records one dispatch of kernel name (a variant such as "eltwise_f32")
 * with specialization constants spec[0..nspec) (constant_id 0..), the
 * parameter block params and groups[3] workgroups. Call with s->lock held.
 */
VKB_HIDDEN bp_status_t vkb_dispatch(vkb_stream_t *s, const char *name, const uint32_t *spec,
                                    uint32_t nspec, const void *params, uint32_t psize, uint32_t gx,
                                    uint32_t gy, uint32_t gz);
/* vkb_dispatch for kernels that also read or write storage texel buffers:
 * views[i] is bound to set 0, binding i (pushed into the command buffer).
 */
VKB_HIDDEN bp_status_t vkb_dispatch_views(vkb_stream_t *s, const char *name, const uint32_t *spec,
                                          uint32_t nspec, const void *params, uint32_t psize,
                                          const VkBufferView *views, uint32_t nviews, uint32_t gx,
                                          uint32_t gy, uint32_t gz);

/* ---- op helpers (ops_common.c, ops_reduce.c, ops_elementwise.c) -------- */
/* An index space over `rank` dims walked by linear index, with the strides
 * of up to three tensors. Adjacent dims that are contiguous in every tensor
 * are merged, so a contiguous tensor becomes rank 1 and the kernels' index
 * loop stays short. Layout matches the kernels' parameter blocks. */
typedef struct vkb_nd {
  int32_t n, rank;
  int32_t shape[BP_MAX_RANK];
  int32_t strides[4][BP_MAX_RANK];
} vkb_nd_t;

/* Builds the index space of shape over tensors t[0..count); fails with
 * BP_ERR_UNSUPPORTED when an element count or offset exceeds int32, or a
 * stride is negative. */
VKB_HIDDEN bp_status_t vkb_nd_make(vkb_nd_t *nd, const bp_plugin_tensor_t *shape,
                                   const bp_plugin_tensor_t *const *t, int count, const char *op);

/* Workgroups for n items, 256 per group, capped: kernels loop over the rest.
 */
VKB_HIDDEN uint32_t vkb_groups_1d(vkb_device_t *d, int64_t n, uint32_t per_group);

/* Name used in kernel variants ("f32", "bf16"); NULL when no kernel has it.
 */
VKB_HIDDEN const char *vkb_dtype_tag(bp_dtype_t dt);
VKB_HIDDEN size_t vkb_dtype_size(bp_dtype_t dt);
/* The bit pattern of value stored as dt (one rounding, to nearest even;
 * integers: NaN 0, saturating). */
VKB_HIDDEN uint64_t vkb_dtype_bits(bp_dtype_t dt, double value);

/* Checks that a tensor's element offsets fit int32 for the kernels. */
VKB_HIDDEN bool vkb_fits_i32(const bp_plugin_tensor_t *t);

/* Locks the stream (or the default one), runs the recording, unlocks. */
#define VKB_ON_STREAM(dev, stream, s, body)                                                        \
  vkb_device_t *d_ = (vkb_device_t *)(dev);                                                        \
  vkb_stream_t *s = vkb_stream_or_default(d_, (stream));                                           \
  pthread_mutex_lock(&s->lock);                                                                    \
  bp_status_t st_ = (body);                                                                        \
  pthread_mutex_unlock(&s->lock);                                                                  \
  return st_;

/* The row space of rows.glsl (ops_reduce.c), shared by reduce, softmax and
 * the norms; matches rows.glsl's parameter block. */
typedef struct vkb_rows_params {
  uint64_t x, y, g, b;
  int32_t rows, len, rank, op;
  int32_t sx_axis, sy_axis, flags, pad;
  float eps, pad2;
  int32_t shape[BP_MAX_RANK], sx[BP_MAX_RANK], sy[BP_MAX_RANK];
} vkb_rows_params_t;

/* Fills p with the row space of x along axis: every dim of x but axis, with
 * x's and y's strides (collapsed where contiguous). BP_ERR_UNSUPPORTED when
 * offsets exceed int32. */
VKB_HIDDEN bp_status_t vkb_rows_make(vkb_rows_params_t *p, const bp_plugin_tensor_t *x,
                                     const bp_plugin_tensor_t *y, int axis, const char *op);
/* Records <family>_<dt> over p's rows, one workgroup per row. */
VKB_HIDDEN bp_status_t vkb_rows_dispatch(vkb_stream_t *s, const char *family, bp_dtype_t dt,
                                         const vkb_rows_params_t *p);
/* Records an elementwise kernel (eltwise_<dt> with op, or a cast_<s>_<d>
 * variant) over y = op(a[, b]) (ops_elementwise.c). */
VKB_HIDDEN bp_status_t vkb_eltwise_record(vkb_stream_t *s, const char *kernel, int op,
                                          const bp_plugin_tensor_t *y, const bp_plugin_tensor_t *a,
                                          const bp_plugin_tensor_t *b);

/* ---- ops (ops_*.c): one entry point per line of BP_OP_TABLE ------------- */
#define VKB__DECLARE_OP(E, name, args_t, ...)                                                      \
  VKB_HIDDEN bp_status_t vkb_op_##name(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,        \
                                       const args_t *a);
BP_OP_TABLE(VKB__DECLARE_OP)
#undef VKB__DECLARE_OP

/* ---- custom kernels (kernels.c) ---------------------------------------- */
VKB_HIDDEN bp_status_t vkb_kernel_create(bp_plugin_device_t *device,
                                         const bp_kernel_source_t *source,
                                         bp_plugin_kernel_t **out_kernel);
VKB_HIDDEN void vkb_kernel_destroy(bp_plugin_device_t *device, bp_plugin_kernel_t *kernel);
VKB_HIDDEN bp_status_t vkb_kernel_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                         bp_plugin_kernel_t *kernel, const bp_launch_args_t *args);

/* Compiles GLSL compute source to SPIR-V words (malloc'd; the caller
 * frees them) through libshaderc or glslc (kernels_glsl.c); options are
 * "-DNAME[=VALUE]", "-O", "-O0". BP_ERR_UNAVAILABLE when neither exists,
 * BP_ERR_INVALID_ARGUMENT with the compiler's log on a compile error. */
VKB_HIDDEN bp_status_t vkb_glsl_compile(const bp_kernel_source_t *source, uint32_t **out_words,
                                        size_t *out_count);

/* ---- texel-buffer kernels for CPU implementations (ops_blas_texel.c) -- */
/* The texel-buffer GEMM: packs A and B into f32 panels and runs
 * gemmtex.comp with the tile tuned for the device. Returns
 * BP_ERR_UNSUPPORTED, with nothing recorded, when the device or the sizes
 * do not allow it. Call with s->lock held. */
VKB_HIDDEN bp_status_t vkb_gemm_texel(vkb_stream_t *s, const bp_gemm_args_t *g);
/* GEMM with at most 16 rows of C on CPU implementations (ops_blas_skinny.c,
 * gemv.comp); BP_ERR_UNSUPPORTED where it does not apply. */
VKB_HIDDEN bp_status_t vkb_gemm_skinny(vkb_stream_t *s, const bp_gemm_args_t *g);
/* The GEMM epilogue of ABI 1.5 as the GEMM kernels take it: the bias's
 * address and element strides over (batch, m, n) (has_bias 0: none) and
 * the activation, a bp_unary_op_t code or -1 (a specialization constant of
 * gemm.comp, gemv.comp and gemmtex.comp). */
typedef struct vkb_epilogue {
  uint64_t bias;
  int32_t has_bias, sxb, sxm, sxn;
  uint32_t act;
} vkb_epilogue_t;
VKB_HIDDEN void vkb_gemm_epilogue(const bp_gemm_args_t *g, vkb_epilogue_t *out);
/* Whether the texel kernels should run on d (a CPU implementation with
 * texel buffers, unless BACKPLANE_VK_GEMM_TEXEL says otherwise). */
VKB_HIDDEN bool vkb_texel_wanted(vkb_device_t *d);

/* A register tile of gemmtex.comp. */
typedef struct vkb_texel_tile {
  const char *name;
  uint32_t tm, tn, wx, wy; /* tile per invocation, invocations along n, m */
} vkb_texel_tile_t;
/* The device's tuned tile (measured on first use, then cached). */
VKB_HIDDEN const vkb_texel_tile_t *vkb_texel_tile(vkb_device_t *d);

/* Matches gemmtex.comp's parameter block. */
typedef struct vkb_texel_params {
  uint64_t c;
  int32_t m, n, kp, beta_zero;
  int32_t scb, scm, scn, pab, pbb;
  float alpha, beta;
  int32_t bg, causal, skp;
  int32_t amod, has_bias, sbias, kshift;
  uint64_t bias;
  int32_t use_view, vshift; /* C through an r32f view at binding 2 */
  int32_t sbb, sbn;         /* bias[b * sbb + i * sbias + j * sbn] */
  /* gemmtex_score only: the attention masks (gemmtex.comp) */
  uint64_t kv_len, slopes;
  int32_t slope_stride, alibi_heads, alibi_head0, window;
  int32_t bias_dt, bias_shift;
  /* gemmtex_<dt>_<tile>_conv only: B read in place (gemmtex.comp) */
  int32_t cq, cs, cr, cdx, cdy, csc, shy, swx, xshift;
  /* row gm of batch b scaled by f32 rscale[b * rs_b + gm] (0: none) */
  uint64_t rscale;
  int32_t rs_b;
} vkb_texel_params_t;

/* New device scratch of size bytes with an rgba32f view of it. */
VKB_HIDDEN bp_status_t vkb_texel_scratch(vkb_device_t *d, uint64_t bytes, vkb_alloc_t **out_alloc,
                                         VkBufferView *out_view);
/* Records gemmpack.comp into the view: nb batches of tensor t from its
 * element elem_off on, as [nb][xp / pw][kp][pw] f32, element (b, p, x) from
 * t + b*sb + p*sp + x*sx (elements), zero for p >= rows_k or x >= cols_x.
 * f32 sources are read through an r32f texel view where one fits. */
VKB_HIDDEN bp_status_t vkb_texel_pack(vkb_stream_t *s, VkBufferView view,
                                      const bp_plugin_tensor_t *t, int64_t elem_off, int64_t nb,
                                      int64_t rows_k, int64_t kp, int64_t cols_x, int64_t xp,
                                      int64_t sb, int64_t sp, int64_t sx, uint32_t pw);
/* An r32f view of t's allocation from the 16-byte boundary at or below
 * element elem_off to the allocation's end; *out_shift is that element's
 * index in it. BP_ERR_UNSUPPORTED for other dtypes or views too large.
 * The caller releases the view (vkb_stream_release_view). */
VKB_HIDDEN bp_status_t vkb_texel_src_view(vkb_stream_t *s, const bp_plugin_tensor_t *t,
                                          int64_t elem_off, VkBufferView *out_view,
                                          int32_t *out_shift);
/* r32f views (vkb_texel_src_view) of t[0..n)'s buffers, each tensor's
 * element 0 at shift[i]; all or none: false, no view left, when one does
 * not fit. */
VKB_HIDDEN bool vkb_texel_src_views(vkb_stream_t *s, const bp_plugin_tensor_t *const *t, int n,
                                    VkBufferView *v, int32_t *shift);
/* Releases views of vkb_texel_src_views once what is recorded completes. */
VKB_HIDDEN void vkb_texel_views_release(vkb_stream_t *s, VkBufferView *v, int n);
/* Releases scratch and views once what is recorded so far completes. */
VKB_HIDDEN void vkb_texel_release(vkb_stream_t *s, vkb_alloc_t **allocs, VkBufferView *views,
                                  int count);

/* Attention through the texel kernels (ops_dnn_texel.c): two gemmtex
 * products and attnsoftmax.comp over scores kept in scratch panels.
 * BP_ERR_UNSUPPORTED, nothing recorded, when it does not apply. */
VKB_HIDDEN bp_status_t vkb_attention_texel(vkb_stream_t *s, const bp_attention_args_t *a);
/* Attention in one kernel over packed Q, K, V (ops_dnn_flash.c), tried
 * first by vkb_attention_texel; BP_ERR_UNSUPPORTED, nothing recorded, when
 * it does not apply (Dv past its tiles, panels past the texel limits). */
VKB_HIDDEN bp_status_t vkb_attention_flash(vkb_stream_t *s, const bp_attention_args_t *a);
/* Whether a's struct holds the masks of ABI 1.5 (ops_dnn.c). */
VKB_HIDDEN bool vkb_attention_has_masks(const bp_attention_args_t *a);
/* Records gemmtex into an f32 C (from element c_off of t on) through an
 * r32f view of it where one fits (use_view: vectorised stores on lavapipe,
 * where stores through its address are per-lane loops), else through the
 * address p->c. views[2] is replaced by the view; views[0..1] are A, B
 * (ops_dnn_texel.c). */
VKB_HIDDEN bp_status_t vkb_texel_gemm_into(vkb_stream_t *s, const char *name,
                                           vkb_texel_params_t *p, VkBufferView *views,
                                           const bp_plugin_tensor_t *t, int64_t c_off, uint32_t gx,
                                           uint32_t gy, uint32_t gz);
/* conv2d as an implicit GEMM through the texel kernels (ops_dnn_conv.c):
 * the weights packed once as A panels, then per image gemmtex's _conv
 * variant reads B in place from the image (or its zero-padded copy), or
 * (BACKPLANE_VK_CONV_IMPLICIT=0, other dtypes' kernels missing) from the
 * im2col panels convpack.comp writes; groups as the batch, the bias in the
 * epilogue. BP_ERR_UNSUPPORTED, nothing recorded, when it does not apply. */
VKB_HIDDEN bp_status_t vkb_conv2d_texel(vkb_stream_t *s, const bp_conv2d_args_t *a);

/* Device address of element 0 of a tensor. */
static inline uint64_t vkb_tensor_addr(const bp_plugin_tensor_t *t) {
  return vkb_ptr(t->ptr)->addr + t->offset;
}

#endif /* BACKPLANE_VKB_H */
