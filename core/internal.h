/*
 * internal.h — the loader's private structures and helpers. Nothing here is
 * public; non-static internal names start with bp__.
 */
#ifndef BACKPLANE_INTERNAL_H
#define BACKPLANE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "backplane.h"

#ifndef BP_PLUGIN_INSTALL_DIR
#define BP_PLUGIN_INSTALL_DIR "/usr/local/lib/backplane"
#endif
#ifndef BP_VERSION_STRING
#define BP_VERSION_STRING "0.0.0"
#endif

#define BP__MAX_DEVICES_PER_PLUGIN 64

/* ---- errors and logging (status.c, log.c) ------------------------------- */

/* Sets the thread's message and returns status, so callers can write
 * `return bp__fail(BP_ERR_INVALID_ARGUMENT, "gemm: lda %lld < ...", ...)`. */
bp_status_t bp__fail(bp_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Clears the thread's message at the start of a public call. */
void bp__clear_error(void);
/* Appends the plugin's own message (from host set_error) after a failure. */
void bp__set_error_v(const char *fmt, va_list ap);
/* The message a plugin set during the current call, "" if none. */
const char *bp__plugin_error(void);
void bp__plugin_error_reset(void);

typedef enum bp__log_category {
  BP__LOG_LOADER = 0,
  BP__LOG_API = 1,
  BP__LOG_PLUGIN = 2,
  BP__LOG_MEMORY = 3
} bp__log_category_t;

/* Logs one line when BACKPLANE_DEBUG selects the level and category. */
void bp__log(bp_log_level_t level, bp__log_category_t cat, const char *fmt,
             ...) __attribute__((format(printf, 3, 4)));
/* The host services handed to every plugin. */
const bp_host_services_t *bp__host_services(void);
/* secure_getenv, in one place. */
const char *bp__getenv(const char *name);

/* ---- autotuning cache (tuning.c): the host services tune_lookup/store ---- */
bool bp__tune_lookup(const bp_tune_key_t *key, char *out_value, size_t size);
void bp__tune_store(const bp_tune_key_t *key, const char *value);

/* ---- handle registry (handles.c) ----------------------------------------- */
typedef enum bp__handle_type {
  BP__H_CONTEXT = 1,
  BP__H_DEVICE,
  BP__H_BUFFER,
  BP__H_STREAM,
  BP__H_EVENT,
  BP__H_GRAPH,
  BP__H_KERNEL
} bp__handle_type_t;

void bp__handle_add(const void *handle, bp__handle_type_t type);
void bp__handle_remove(const void *handle);
/* True when handle is live and of type. */
bool bp__handle_live(const void *handle, bp__handle_type_t type);

/* ---- objects -------------------------------------------------------------- */
typedef struct bp__pool bp__pool_t;

typedef struct bp__shared bp__shared_t;

typedef struct bp__plugin {
  bp_plugin_report_t report;
  bp__shared_t *shared;                  /* the process-wide copy, if loaded */
  void *dl;                              /* dlopen handle, NULL if refused */
  bp_plugin_descriptor_t desc;           /* copy, zero beyond struct_size */
  bool initialised;
  uint32_t device_count;
  bp_device_info_t infos[BP__MAX_DEVICES_PER_PLUGIN];
} bp__plugin_t;

struct bp_context {
  pthread_mutex_t lock;
  bp_context_options_t options;
  bp__plugin_t *plugins; /* every candidate, in search order */
  uint32_t plugin_count, plugin_capacity;
  bp_device_entry_t *ranked; /* every device, best first */
  uint32_t *ranked_plugin;   /* plugin index of each ranked entry */
  uint32_t device_count;
  bp_device_t *open_devices; /* linked through next */
  char **scanned;            /* real paths of the directories scanned */
  uint32_t scanned_count;
};

struct bp_device {
  bp_context_t *context;
  const bp__plugin_t *plugin;
  const bp_plugin_descriptor_t *desc;
  bp_plugin_device_t *handle;
  bp_device_entry_t entry;
  pthread_mutex_t lock; /* guards the child lists */
  bp_buffer_t *buffers;
  bp_stream_t *streams;
  bp_event_t *events;
  bool allow_reduced_precision;
  bp__pool_t *pool;
  struct bp__host_block *host_blocks; /* from bp_host_alloc, under lock */
  bp_graph_t *graphs;                 /* live graphs, under lock */
  bp_device_t *next;
};

struct bp_buffer {
  bp_device_t *device;
  uint64_t ptr;    /* the pool segment's device pointer */
  uint64_t origin; /* the buffer's byte offset inside the segment */
  uint64_t size;
  void *block;     /* the pool's record; NULL for imported memory */
  void *foreign;   /* imported DLPack tensor, released on free */
  bool foreign_versioned;
  bp_buffer_t *next, *prev;
};

struct bp_stream {
  bp_device_t *device;
  bp_plugin_stream_t *handle;
  pthread_mutex_t lock; /* serialises the work queued on this stream */
  bp_graph_t *capture;  /* non-NULL while capturing (under lock) */
  bp_stream_t *next, *prev;
};

struct bp_event {
  bp_device_t *device;
  bp_plugin_event_t *handle;
  bool recorded;
  bp_event_t *next, *prev;
};

/* ---- plugins shared by every context (registry.c) --------------------------- */
struct bp__shared {
  char real[4096]; /* real path */
  void *dl;
  bp_plugin_descriptor_t desc;
  uint32_t device_count;
  bp_device_info_t infos[BP__MAX_DEVICES_PER_PLUGIN];
  unsigned refs;
  bp__shared_t *next;
};
extern bool bp__in_isolated_child;
void bp__registry_lock(void);
void bp__registry_unlock(void);
/* Under the lock: the loaded copy of a real path, or NULL. */
bp__shared_t *bp__registry_find(const char *real);
/* Under the lock: records p's freshly initialised and probed copy. */
bp__shared_t *bp__registry_add(const char *real, bp__plugin_t *p);
/* Under the lock: lets p use s (one more reference). */
void bp__registry_share(bp__shared_t *s, bp__plugin_t *p);
/* Drops one reference; the last shuts the plugin down and unloads it. */
void bp__registry_release(bp__shared_t *s);

/* ---- loader (loader.c, ranking.c) ----------------------------------------- */

/* Scans the search path and loads every candidate into context->plugins. */
bp_status_t bp__loader_scan(bp_context_t *context);
/* Loads one file as a plugin, filling p->report; never fails the caller. */
void bp__loader_load_file(bp_context_t *context, bp__plugin_t *p,
                          const char *path);
void bp__loader_load_new(bp_context_t *context, bp__plugin_t *p,
                         const char *path);
/* Validates a descriptor copy; returns BP_OK or the refusal with reason. */
bp_status_t bp__descriptor_check(const bp_plugin_descriptor_t *d,
                                 uint32_t avail_size, char *reason,
                                 size_t reason_size,
                                 bp_plugin_stage_t *out_stage);
void bp__loader_unload(bp__plugin_t *p);
/* Builds context->ranked from the loaded plugins, honouring
 * BACKPLANE_BACKENDS. */
bp_status_t bp__rank_devices(bp_context_t *context);
/* Probes a plugin in a child process first (isolate.c); BP_OK when safe. */
bp_status_t bp__isolated_probe(const char *path, uint32_t timeout_s,
                               char *reason, size_t reason_size,
                               bp_plugin_stage_t *out_stage);

/* ---- validation helpers (tensor.c) ----------------------------------------- */

/* Checks that t is a well-formed tensor over a live buffer of device, with
 * every byte it may touch inside the buffer. what names it in messages. */
bp_status_t bp__tensor_check(const bp_tensor_t *t, const bp_device_t *device,
                             const char *op, const char *what);
/* Converts a checked tensor to the ABI form. */
void bp__tensor_to_plugin(const bp_tensor_t *t, bp_plugin_tensor_t *out);
/* Expresses x broadcast to shape (rank r) by stride 0; fails when the shapes
 * are not broadcast-compatible (NumPy rules). */
bp_status_t bp__broadcast_to(bp_plugin_tensor_t *x, int32_t rank,
                             const int64_t *shape, const char *op,
                             const char *what);
/* True when the byte ranges of two tensors may overlap in one buffer. */
bool bp__tensors_overlap(const bp_tensor_t *a, const bp_tensor_t *b);
/* Checks that two tensors have equal shapes. */
bp_status_t bp__same_shape(const bp_tensor_t *a, const bp_tensor_t *b,
                           const char *op, const char *wa, const char *wb);
/* Checks the stream, then each of the n tensors (none may be NULL). */
bp_status_t bp__check_tensors(const bp_stream_t *s, const char *op, int n,
                              const bp_tensor_t *const *ts, const char *const *names);
/* All non-NULL tensors share ts[0]'s dtype, which is a float type. */
bp_status_t bp__check_float_dtypes(const char *op, int n, const bp_tensor_t *const *ts,
                                   const char *const *names);
/* y overlaps none of ins (an identical view is allowed when in_place_ok)
 * and has no broadcast axis. */
bp_status_t bp__check_output(const char *op, const bp_tensor_t *y, const char *yname, int n,
                             const bp_tensor_t *const *ins, const char *const *names,
                             bool in_place_ok);
bool bp__same_view(const bp_tensor_t *a, const bp_tensor_t *b);
/* An axis along which t's elements share memory with others, or -1. */
int bp__self_overlap_axis(const bp_tensor_t *t);
/* Maps a possibly negative axis into [0, rank). */
bp_status_t bp__normalize_axis(const char *op, int32_t axis, int32_t rank, int32_t *out);
bool bp__dtype_valid(int dtype);
bool bp__dtype_is_float(bp_dtype_t dtype);
/* a * b with overflow detection. */
bool bp__mul_overflows(uint64_t a, uint64_t b, uint64_t *out);

/* ---- the one place that calls plugin functions (plugin_call.c) ------------- */

/* Validates the stream and returns its device; sets the error otherwise. */
bp_status_t bp__stream_check(const bp_stream_t *stream, const char *op);
/* Fails with BP_ERR_UNSUPPORTED unless the device claims op for dtype and
 * the plugin implements it. */
bp_status_t bp__require_op(const bp_device_t *device, bp_op_t op,
                           bp_dtype_t dtype, const char *opname);

/* Calls op `op` of the stream's plugin with args, holding the stream lock,
 * and turns a plugin failure into a message naming the plugin. */
bp_status_t bp__call_op(bp_stream_t *stream, bp_op_t op, const void *args);

/* Memory and stream calls. stream may be NULL (device-synchronous). */
bp_status_t bp__call_mem_alloc(bp_device_t *d, uint64_t size,
                               uint64_t *out_ptr);
void bp__call_mem_free(bp_device_t *d, uint64_t ptr);
bp_status_t bp__call_mem_write(bp_device_t *d, bp_stream_t *s, uint64_t dst,
                               uint64_t off, const void *src, uint64_t size);
bp_status_t bp__call_mem_read(bp_device_t *d, bp_stream_t *s, void *dst,
                              uint64_t src, uint64_t off, uint64_t size);
bp_status_t bp__call_mem_copy(bp_device_t *d, bp_stream_t *s, uint64_t dst,
                              uint64_t doff, uint64_t src, uint64_t soff,
                              uint64_t size);
bp_status_t bp__call_device_sync(bp_device_t *d);
bp_status_t bp__call_stream_create(bp_device_t *d, bp_plugin_stream_t **out);
void bp__call_stream_destroy(bp_device_t *d, bp_plugin_stream_t *s);
bp_status_t bp__call_stream_sync(bp_device_t *d, bp_plugin_stream_t *s);

/* ---- memory pool (pool.c) -------------------------------------------------- */
bp__pool_t *bp__pool_create(uint64_t max_reserved);
void bp__pool_destroy(bp_device_t *d, bp__pool_t *p);
bp_status_t bp__pool_alloc(bp_device_t *d, uint64_t size, uint64_t *out_ptr,
                           uint64_t *out_origin, void **out_block);
void bp__pool_free(bp_device_t *d, void *block);
void bp__pool_empty_cache(bp_device_t *d);
void bp__pool_stats(bp_device_t *d, bp_memory_stats_t *out);

/* The NUMA node and local CPU list of the PCI device named by identity
 * ("pci:DDDD:BB:DD.F"), from hwloc; false (-1, "") when unknown (locality.c). */
bool bp__pci_locality(const char *identity, int32_t *out_numa_node, char *out_cpus, size_t cpus_size);
/* Native graphs (plugin_call.c): whether d's plugin offers them (and
 * BACKPLANE_NATIVE_GRAPHS is not 0), and the wrappers around its entries.
 * bp__call_op_unlocked runs an op with s->lock already held. */
bool bp__native_graphs(const bp_device_t *d);
bp_status_t bp__call_op_unlocked(bp_stream_t *s, bp_op_t op, const void *args);
bp_status_t bp__call_graph_begin(bp_stream_t *s);
bp_status_t bp__call_graph_end(bp_stream_t *s, bp_plugin_graph_t **out_graph);
bp_status_t bp__call_graph_launch(bp_stream_t *s, bp_plugin_graph_t *g);
void bp__call_graph_destroy(bp_device_t *d, bp_plugin_graph_t *g);
/* Releases the native graphs of d's graphs before d closes (graph.c). */
void bp__device_release_graphs(bp_device_t *d);
/* Appends an op to a capturing graph (graph.c). */
bp_status_t bp__graph_record(bp_graph_t *g, bp_op_t op, const void *args);
/* Frees a graph that never left capture. */
void bp__graph_free(bp_graph_t *g);

/* Calls an imported DLPack tensor's deleter (dlpack.c). */
void bp__dlpack_release(void *managed, bool versioned);
/* Returns a buffer's memory to the pool, or to its DLPack producer. */
void bp__buffer_release_memory(bp_device_t *d, bp_buffer_t *b);

/* Frees the host blocks a device still holds (host_memory.c). */
void bp__host_release_all(bp_device_t *d);

/* Frees everything a device still owns (device.c). */
void bp__device_release_children(bp_device_t *device);

#endif /* BACKPLANE_INTERNAL_H */
