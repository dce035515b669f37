/*
 * internal.h — the loader's private structures and helpers. Nothing here is
 * public; non-static internal names start with bp__.
 */
#ifndef BACKPLANE_INTERNAL_H
#define BACKPLANE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "backplane.h"
#include "plugin-api.h"

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
/* The real directory holding the code this is linked into (libbackplane.so,
 * found with dladdr), into out; false when it cannot be found (loader.c). */
bool bp__library_dir(char *out, size_t size);

/* ---- autotuning cache (tuning.c): the host services tune_lookup/store ---- */
bool bp__tune_lookup(const bp_tune_key_t *key, char *out_value, size_t size);
void bp__tune_store(const bp_tune_key_t *key, const char *value);

/* ---- handles (handles.c) ------------------------------------------------- */
typedef enum bp__handle_type {
  BP__H_CONTEXT = 1,
  BP__H_DEVICE,
  BP__H_BUFFER,
  BP__H_STREAM,
  BP__H_EVENT,
  BP__H_GRAPH,
  BP__H_KERNEL,
  BP__H_COMM /* comm.c */
} bp__handle_type_t;

/* A device's gate: public calls on the device's objects pass through it, and
 * bp_device_close shuts it and waits for them (handles.c). */
typedef struct bp__gate bp__gate_t;

/* Registers obj and returns the token the application will hold (NULL when
 * the table is full or memory is short). gate: the owning device's, or NULL. */
void *bp__handle_add(void *obj, bp__handle_type_t type, bp__gate_t *gate);
/* Makes every copy of token stale, now and forever; false when it already
 * was (another thread won the race to destroy the object). */
bool bp__handle_remove(const void *token);
/* The object behind a live token of type, else NULL. */
void *bp__handle_get(const void *token, bp__handle_type_t type);
/* The same, and only when the object belongs behind gate (its device). */
void *bp__handle_get_on(const void *token, bp__handle_type_t type, const bp__gate_t *gate);
/* Moves a live handle behind another gate (NULL: none). */
void bp__handle_set_gate(const void *token, bp__gate_t *gate);
/* Resolves token and enters its device's gate; fails with a message naming
 * fn and what when the token is NULL, stale, of another type, or its device
 * is closing. Leave with bp__gate_leave(*out_gate) (NULL is fine). */
bp_status_t bp__handle_enter(const void *token, bp__handle_type_t type, const char *fn, const char *what,
                             void **out_obj, bp__gate_t **out_gate);
void bp__gate_leave(bp__gate_t *g);
void bp__gate_scope_end(bp__gate_t **g);
bp__gate_t *bp__gate_new(void);
/* Shuts the gate of a live token's object, makes the token stale, waits for
 * the calls inside to leave and returns the object; NULL when the token is
 * not live or its gate is already closing. */
void *bp__gate_close(const void *token, bp__handle_type_t type);
/* Returns a closed gate for reuse (gates are never freed). */
void bp__gate_recycle(bp__gate_t *g);

/* Declares `type *var` resolved from token and keeps its device's gate
 * entered until the enclosing scope ends, on every return path. Returns the
 * failure from the enclosing function (which must return bp_status_t). */
#define BP__ENTER(type_t, var, token, htype, fn, what)                                  \
  bp__gate_t *var##_gate_ __attribute__((cleanup(bp__gate_scope_end))) = NULL;          \
  type_t *var = NULL;                                                                   \
  do {                                                                                  \
    void *obj_;                                                                         \
    bp_status_t enter_st_ = bp__handle_enter(token, htype, fn, what, &obj_, &var##_gate_); \
    if (enter_st_ != BP_OK) return enter_st_;                                           \
    var = obj_;                                                                         \
  } while (0)

/* The same, for functions that return nothing: a bad token is ignored, and
 * the thread's last error is left as it was. */
#define BP__ENTER_VOID(type_t, var, token, htype, fn)                                   \
  bp__gate_t *var##_gate_ __attribute__((cleanup(bp__gate_scope_end))) = NULL;          \
  type_t *var = NULL;                                                                   \
  do {                                                                                  \
    void *obj_;                                                                         \
    if (!bp__handle_get(token, htype) ||                                                \
        bp__handle_enter(token, htype, fn, "handle", &obj_, &var##_gate_) != BP_OK)     \
      return;                                                                           \
    var = obj_;                                                                         \
  } while (0)

typedef struct bp__device bp__device_t;
typedef struct bp__buffer bp__buffer_t;
typedef struct bp__stream bp__stream_t;
typedef struct bp__event bp__event_t;
typedef struct bp__graph bp__graph_t;
typedef struct bp__kernel bp__kernel_t;

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
  bp_context_t *h; /* the application's token */
  pthread_mutex_t lock;
  bp_context_options_t options;
  bp__plugin_t *plugins; /* every candidate, in search order */
  uint32_t plugin_count, plugin_capacity;
  bp_device_entry_t *ranked; /* every device, best first */
  uint32_t *ranked_plugin;   /* plugin index of each ranked entry */
  uint32_t device_count;
  bp__device_t *open_devices; /* linked through next */
  char **scanned;            /* real paths of the directories scanned */
  uint32_t scanned_count;
  char **searched;           /* every plugin directory looked in, as spelled, */
  bool *searched_present;    /* in order, once each; present: a directory */
  uint32_t searched_count;
  struct bp__layer_slot *layers; /* the layer list, loaded or refused (layers.c) */
  uint32_t layer_count;
  struct bp__comm_set *comm_set; /* comm plugins, loaded on first use (comm_loader.c) */
};

struct bp__device {
  bp_device_t *h;     /* the application's token */
  bp__gate_t *gate;   /* every call on the device's objects passes it */
  bp_context_t *context;
  const bp__plugin_t *plugin;
  const bp_plugin_descriptor_t *desc;
  bp_plugin_device_t *handle;
  bp_device_entry_t entry;
  pthread_mutex_t lock; /* guards the child lists */
  bp__buffer_t *buffers;
  bp__stream_t *streams;
  bp__event_t *events;
  bool allow_reduced_precision;
  bp__pool_t *pool;
  struct bp__host_block *host_blocks; /* from bp_host_alloc, under lock */
  bp__graph_t *graphs;                 /* live graphs, under lock */
  bp__kernel_t *kernels;               /* live kernels, under lock */
  struct bp__layer_chain *layers;      /* its layers, NULL: none (layer_chain.c) */
  struct bp__fallback *fallback;       /* NULL: fallback off (fallback.c) */
  uint32_t host_pending;               /* queued collectives not yet done (comm_queue.c) */
  bp__device_t *next;
};

struct bp__buffer {
  bp_buffer_t *h; /* the application's token */
  bp__device_t *device;
  uint64_t ptr;    /* the pool segment's device pointer */
  uint64_t origin; /* the buffer's byte offset inside the segment */
  uint64_t size;
  void *block;     /* the pool's record; NULL for imported memory */
  void *foreign;   /* imported DLPack tensor, released on free */
  bool foreign_versioned;
  /* non-zero while marked constant: an id no other buffer or earlier mark
   * of this one had (read and written atomically) */
  uint64_t const_id;
  bp__buffer_t *next, *prev;
};

struct bp__stream {
  bp_stream_t *h; /* the application's token */
  bp__device_t *device;
  bp_plugin_stream_t *handle;
  pthread_mutex_t lock; /* serialises the work queued on this stream */
  bp__graph_t *capture;  /* non-NULL while capturing (under lock) */
  /* Collectives queued on the stream (comm_queue.c): tickets handed out,
   * calls placed on the device's own stream (a native-stream collective is
   * placed before it is done; others when done), and calls done; work
   * queued after them waits until placed == tickets. The first failure
   * among them, reported by the next synchronize. */
  uint64_t host_tickets, host_placed, host_done;
  bp_status_t host_status;
  char host_why[256];
  bp__stream_t *next, *prev;
};

struct bp__event {
  bp_event_t *h; /* the application's token */
  bp__device_t *device;
  bp_plugin_event_t *handle;
  bool recorded;
  bp_status_t host_status; /* a queued collective's failure before the record */
  char host_why[256];
  bp__event_t *next, *prev;
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

/* The context behind a live token; the message names fn otherwise
 * (context.c). Contexts have no gate: destroying one while another thread
 * uses it is the application's race. */
bp_status_t bp__context_get(const bp_context_t *h, const char *fn, bp_context_t **out);

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
/* Destroys the context's communicators and unloads its comm plugins
 * (comm_loader.c; the rest of the comm code is declared in comm_internal.h). */
void bp__comm_set_free(bp_context_t *context);
/* Builds context->ranked from the loaded plugins, honouring
 * BACKPLANE_BACKENDS. */
bp_status_t bp__rank_devices(bp_context_t *context);
/* Isolated probing and its verdict cache: isolate.h. */

/* ---- validation helpers (tensor.c) ----------------------------------------- */

/* Checks that t is a well-formed tensor over a live buffer of device, with
 * every byte it may touch inside the buffer. what names it in messages. */
bp_status_t bp__tensor_check(const bp_tensor_t *t, const bp__device_t *device,
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
/* bp__buffer_writable for t's buffer: name, an op's output, is written. */
bp_status_t bp__tensor_writable(const char *op, const bp_tensor_t *t, const char *name);
/* The constant id of t's buffer (bp__buffer_t.const_id), 0 for none. */
uint64_t bp__tensor_const_id(const bp_tensor_t *t);
/* BP_ERR_INVALID_ARGUMENT when b is marked constant: what (a buffer, an
 * op's output) may not be written. */
bp_status_t bp__buffer_writable(const bp__buffer_t *b, const char *fn, const char *what);
/* Checks that two tensors have equal shapes. */
bp_status_t bp__same_shape(const bp_tensor_t *a, const bp_tensor_t *b,
                           const char *op, const char *wa, const char *wb);
/* Checks the stream, then each of the n tensors (none may be NULL). */
bp_status_t bp__check_tensors(const bp__stream_t *s, const char *op, int n,
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
bp_status_t bp__stream_check(const bp__stream_t *stream, const char *op);
/* Fails with BP_ERR_UNSUPPORTED unless the device claims op for dtype and
 * the plugin implements it, or fallback may run it on another device
 * (bp__fallback_possible): bp__call_op then decides where it runs. */
bp_status_t bp__require_op(const bp__device_t *device, bp_op_t op,
                           bp_dtype_t dtype, const char *opname);

/* Calls op `op` of the stream's plugin with args, holding the stream lock,
 * and turns a plugin failure into a message naming the plugin. */
bp_status_t bp__call_op(bp__stream_t *stream, bp_op_t op, const void *args);

/* A GEMM epilogue, checked (gemm_epilogue.c): bias is broadcast to c's
 * shape by stride 0. */
typedef struct bp__epilogue {
  bool has_bias, activate;
  bp_unary_op_t activation;
  bp_tensor_t bias;
} bp__epilogue_t;
/* Checks e (NULL: none) against output c and fills out. */
bp_status_t bp__epilogue_init(bp__stream_t *s, const char *op, const bp_gemm_epilogue_t *e,
                              const bp_tensor_t *c, bp__epilogue_t *out);
/* bp__broadcast_to for an application tensor. */
bp_status_t bp__tensor_broadcast(bp_tensor_t *x, int32_t rank, const int64_t *shape, const char *op,
                                 const char *what);
/* Validates and issues c = act(alpha a·b + beta c + bias) over rank-3 views
 * (e NULL: no epilogue; else its bias has c's rank-3 shape): fused where the
 * device claims it, else composed on the same stream. */
bp_status_t bp__gemm_dispatch(bp__stream_t *s, const char *op, double alpha, const bp_tensor_t *a,
                              const bp_tensor_t *b, double beta, const bp_tensor_t *c,
                              const bp__epilogue_t *e);

/* Memory and stream calls. stream may be NULL (device-synchronous). */
bp_status_t bp__call_mem_alloc(bp__device_t *d, uint64_t size,
                               uint64_t *out_ptr);
void bp__call_mem_free(bp__device_t *d, uint64_t ptr);
bp_status_t bp__call_mem_write(bp__device_t *d, bp__stream_t *s, uint64_t dst,
                               uint64_t off, const void *src, uint64_t size);
bp_status_t bp__call_mem_read(bp__device_t *d, bp__stream_t *s, void *dst,
                              uint64_t src, uint64_t off, uint64_t size);
bp_status_t bp__call_mem_copy(bp__device_t *d, bp__stream_t *s, uint64_t dst,
                              uint64_t doff, uint64_t src, uint64_t soff,
                              uint64_t size);
bp_status_t bp__call_device_sync(bp__device_t *d);
bp_status_t bp__call_stream_create(bp__device_t *d, bp_plugin_stream_t **out);
void bp__call_stream_destroy(bp__device_t *d, bp_plugin_stream_t *s);
bp_status_t bp__call_stream_sync(bp__device_t *d, bp_plugin_stream_t *s);
/* The vendor runtime's handle behind s (a CUstream, a hipStream_t: ABI
 * 1.5's stream_native), NULL when the backend has none. */
void *bp__call_stream_native(bp__device_t *d, bp_plugin_stream_t *s);
bool bp__plugin_has_stream_native(const bp__device_t *d);

/* Collectives queued on streams (comm_queue.c, docs/scale-out.md). Takes
 * s->lock once the collectives queued on s are placed (done, or enqueued on
 * the backend's own stream): every path that queues work on a stream, or
 * waits for it, locks the stream this way. */
void bp__stream_lock(bp__stream_t *s);
/* Waits until every collective queued on s is done, placed or not. */
void bp__stream_wait_host_done(bp__stream_t *s);
/* Waits for the collectives queued on any of d's streams (a device-wide
 * synchronous call); returns at once on a communicator's own thread. */
void bp__device_wait_host_work(bp__device_t *d);
/* The first failure of a collective queued on s since the last report, as
 * the status with its message set (and forgotten); BP_OK when none. */
bp_status_t bp__stream_take_host_error(bp__stream_t *s);
/* Copies s's unreported collective failure into e (at e's record). */
void bp__event_note_host_error(bp__event_t *e, bp__stream_t *s);

/* The plugin's lifecycle (loader.c, registry.c): statuses outside the ABI
 * read as BP_ERR_INTERNAL; probe's records are zeroed and sized first. */
bp_status_t bp__call_plugin_init(const bp_plugin_descriptor_t *x);
bp_status_t bp__call_plugin_probe(const bp_plugin_descriptor_t *x, bp_device_info_t *infos, uint32_t capacity,
                                  uint32_t *out_count);
void bp__call_plugin_shutdown(const bp_plugin_descriptor_t *x);
/* Devices: open fills d->handle (NULL on failure), close clears it. */
bp_status_t bp__call_device_open(bp__device_t *d, const bp_plugin_device_config_t *config);
void bp__call_device_close(bp__device_t *d);
/* Optional groups: whether d's plugin offers them whole. */
bool bp__plugin_has_host_memory(const bp__device_t *d);
bool bp__plugin_has_events(const bp__device_t *d);
bool bp__plugin_has_kernels(const bp__device_t *d);
bp_status_t bp__call_host_alloc(bp__device_t *d, uint64_t size, void **out_ptr);
void bp__call_host_free(bp__device_t *d, void *ptr);
bp_status_t bp__call_event_create(bp__device_t *d, bp_plugin_event_t **out_event);
void bp__call_event_destroy(bp__device_t *d, bp_plugin_event_t *e);
/* Record and wait hold s's lock while the plugin runs them. */
bp_status_t bp__call_event_record(bp__stream_t *s, bp_plugin_event_t *e);
bp_status_t bp__call_stream_wait_event(bp__stream_t *s, bp_plugin_event_t *e);
bp_status_t bp__call_event_synchronize(bp__device_t *d, bp_plugin_event_t *e);
bp_status_t bp__call_event_elapsed(bp__device_t *d, bp_plugin_event_t *start, bp_plugin_event_t *end,
                                   double *out_ms);
bp_status_t bp__call_kernel_create(bp__device_t *d, const bp_kernel_source_t *src, bp_plugin_kernel_t **out);
void bp__call_kernel_destroy(bp__device_t *d, bp_plugin_kernel_t *k);
/* Holds s's lock; refuses a stream that is capturing. */
bp_status_t bp__call_kernel_launch(bp__stream_t *s, bp_plugin_kernel_t *k, const bp_launch_args_t *args);

/* ---- memory pool (pool.c) -------------------------------------------------- */
bp__pool_t *bp__pool_create(uint64_t max_reserved);
void bp__pool_destroy(bp__device_t *d, bp__pool_t *p);
bp_status_t bp__pool_alloc(bp__device_t *d, uint64_t size, uint64_t *out_ptr,
                           uint64_t *out_origin, void **out_block);
void bp__pool_free(bp__device_t *d, void *block);
void bp__pool_empty_cache(bp__device_t *d);
void bp__pool_stats(bp__device_t *d, bp_memory_stats_t *out);

/* The NUMA node and local CPU list of the PCI device named by identity
 * ("pci:DDDD:BB:DD.F"), from hwloc; false (-1, "") when unknown (locality.c). */
bool bp__pci_locality(const char *identity, int32_t *out_numa_node, char *out_cpus, size_t cpus_size);
/* Native graphs (plugin_call.c): whether d's plugin offers them (and
 * BACKPLANE_NATIVE_GRAPHS is not 0), and the wrappers around its entries.
 * bp__call_op_unlocked runs an op with s->lock already held. */
bool bp__native_graphs(const bp__device_t *d);
bp_status_t bp__call_op_unlocked(bp__stream_t *s, bp_op_t op, const void *args);
bp_status_t bp__call_graph_begin(bp__stream_t *s);
bp_status_t bp__call_graph_end(bp__stream_t *s, bp_plugin_graph_t **out_graph);
bp_status_t bp__call_graph_launch(bp__stream_t *s, bp_plugin_graph_t *g);
void bp__call_graph_destroy(bp__device_t *d, bp_plugin_graph_t *g);
/* Releases the native graphs of d's graphs before d closes (graph.c). */
void bp__device_release_graphs(bp__device_t *d);
/* Appends an op to a capturing graph (graph.c). */
bp_status_t bp__graph_record(bp__graph_t *g, bp_op_t op, const void *args);
/* Frees a graph that never left capture. */
void bp__graph_free(bp__graph_t *g);

/* Calls an imported DLPack tensor's deleter (dlpack.c). */
void bp__dlpack_release(void *managed, bool versioned);
/* Resolves a buffer token that must belong to d (whose gate the caller has
 * entered); the message names fn and what otherwise (buffer.c). */
bp_status_t bp__buffer_on(const bp_buffer_t *bh, const bp__device_t *d, const char *fn, const char *what,
                          bp__buffer_t **out);
/* Gives a new buffer its token and links it into its device; frees it when
 * no token can be had. */
bp_status_t bp__buffer_publish(bp__buffer_t *b, bp_buffer_t **out_buffer);
/* Tells d's graphs that b is being freed: the calls that use it are marked,
 * and a launch refuses them until they are rebound (graph.c). */
void bp__graphs_forget_buffer(bp__device_t *d, const bp__buffer_t *b);
/* Copies size bytes between buffers on two different devices, synchronously
 * with both (ranges already checked; xcopy.c). */
bp_status_t bp__copy_across(bp__buffer_t *dst, uint64_t doff, bp__buffer_t *src, uint64_t soff,
                            uint64_t size);
/* A buffer record for a byte range the core did not allocate as a buffer
 * (fallback and scheduler staging): all bp__copy_across reads is the
 * device, pointer and origin (xcopy.c). */
bp__buffer_t bp__range_buffer(bp__device_t *d, uint64_t ptr, uint64_t origin);
/* Returns a buffer's memory to the pool, or to its DLPack producer. */
void bp__buffer_release_memory(bp__device_t *d, bp__buffer_t *b);

/* ---- automatic fallback (fallback.c, op_fields.c) ---------------------------- */

/* Why a device cannot run an op, as the door found it: what fallback
 * records, and the status and message the caller gets when no other device
 * can run it either. */
typedef struct bp__refusal {
  bp_fallback_reason_t reason;
  bp_dtype_t dtype;   /* the dtype refused */
  bp_status_t status; /* BP_ERR_UNSUPPORTED */
  bp_op_t op;
  uint32_t features; /* BP_FALLBACK_FEATURE: the BP_FEATURE_* bits missing */
  /* What the text is made of when it is written on demand (opname NULL:
   * text is already complete). Borrowed from the device's records. */
  const char *opname, *device, *backend;
  char text[512];     /* the refusal's message, as the caller would see it */
} bp__refusal_t;
/* The refusal's message, written into why->text on first use. */
const char *bp__refusal_text(bp__refusal_t *why);

/* An op's argument struct has at most this many tensor fields. */
#define BP__OP_MAX_TENSORS 8
/* The byte offsets of op's tensor fields inside its argument struct, in the
 * op table's order (an output is listed last); 0 fields for Adam, whose
 * tensors are in arrays. */
int bp__op_tensor_offsets(bp_op_t op, size_t out[BP__OP_MAX_TENSORS]);
size_t bp__op_args_size(bp_op_t op);
/* Clears the hints of a copy of op's args that will not run where and when
 * the call was made (fallback, graphs, groups, the scheduler): a constant
 * id (bp_conv2d_args_t.w_const_id) describes the caller's tensor at the call. */
void bp__op_strip_hints(bp_op_t op, void *args);
/* The optional parts of op (BP_FEATURE_* bits of op_features[op]) that
 * args use, and the name of one such bit for messages (op_features.c). */
uint32_t bp__op_features_used(bp_op_t op, const void *args);
const char *bp__op_feature_name(bp_op_t op, uint32_t bit);
/* Whether the plugin (descriptor x) has op's entry and the device (info)
 * claims it for dtype; and the same for every dtype the op's args put to
 * it, filling *out_why (may be NULL) when not (plugin_call.c). */
bool bp__plugin_claims(const bp_plugin_descriptor_t *x, const bp_device_info_t *info, bp_op_t op,
                       bp_dtype_t dtype);
bool bp__device_claims(const bp__device_t *d, bp_op_t op, bp_dtype_t dtype);
bool bp__plugin_claims_args(const bp_plugin_descriptor_t *x, const bp_device_info_t *info,
                            const char *backend, bp_op_t op, const void *args, bp__refusal_t *out_why);

/* Sets up fallback for a device being opened (d->fallback stays NULL when
 * enabled is false); fails only when memory is short. */
bp_status_t bp__fallback_open(bp__device_t *d, bool enabled);
/* Closes the devices fallback opened for d and frees its records; d's gate
 * is closed, so no op of d is running. */
void bp__fallback_close(bp__device_t *d);
/* Whether an op that d does not claim for dtype may still run from d:
 * fallback is on for d and another ranked device claims (op, dtype). */
bool bp__fallback_possible(const bp__device_t *d, bp_op_t op, bp_dtype_t dtype);
/* Runs op with args (built for s's device, which refused it for why) on
 * the best-ranked other device that claims it and accepts it, and returns
 * BP_OK once its result is in the args' output tensors.
 * Contract: the caller holds s->lock and s is not capturing (graph replay
 * and a scheduler may call it on a stream they own the same way). It first
 * waits for s's queued work, then works synchronously: the target device is
 * opened once per origin device (closed with it), the byte ranges of the
 * args' tensors are copied into temporary buffers from the target's pool,
 * the op runs there on a stream of its own with the tensors remapped, and
 * the outputs' ranges are copied back before it returns. A candidate that
 * refuses too (BP_ERR_UNSUPPORTED before any work, a failed open or copy-in)
 * is skipped for the next one. When none can, returns why->status with
 * why->text and what each candidate said; the outputs are then untouched.
 * Each success is counted in d's records (bp_device_fallback_stats); the
 * first of an (op, dtype, reason) is logged at info level. */
bp_status_t bp__fallback_run(bp__stream_t *s, bp_op_t op, const void *args, const bp__refusal_t *why);
/* The stream fallback runs d's ops on ranked device r with (a token; the
 * device is opened on first use, once per origin device, and closes with
 * d), for the graph scheduler; NULL with the reason in why when r cannot be
 * opened or fallback is off. */
bp_stream_t *bp__fallback_target_stream(bp__device_t *d, uint32_t r, char *why, size_t size);

/* Frees the host blocks a device still holds (host_memory.c). */
void bp__host_release_all(bp__device_t *d);

/* Destroys the kernels a closing device still owns (kernel.c). */
void bp__device_release_kernels(bp__device_t *d);
/* Frees everything a device still owns (device.c). */
void bp__device_release_children(bp__device_t *device);

#endif /* BACKPLANE_INTERNAL_H */
