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

/* ---------------------------------------------------------------------------
 * Plugin manifests: backend-<name>.json beside a plugin says what it is
 * without running it (format and rules MANIFEST-1 to MANIFEST-8 in
 * docs/plugin-abi.md section 15). The loader checks a plugin's manifest
 * before dlopen and refuses a mismatch; a plugin without one loads, with a
 * note in the log.
 */
typedef struct bp_manifest_info {
  uint32_t struct_size;   /* sizeof(bp_manifest_info_t) */
  char path[1024];        /* the manifest file */
  char plugin_path[1024]; /* the plugin file beside it ("" if not looked at) */
  uint32_t format;        /* manifest_version */
  char name[64];
  char version[64];
  uint16_t abi_major, abi_minor;
  char library[256];      /* the plugin's file name */
  char kinds[256];        /* device kinds it reports, comma-separated */
  char dlopens[1024];     /* libraries it will dlopen, comma-separated */
  char sha256[65];        /* of the plugin file, 64 hex digits */
  bp_status_t status;     /* BP_OK, or why the manifest was refused */
  char reason[512];       /* the refusal, citing its rule */
} bp_manifest_info_t;

/* Reads the manifest at manifest_path (rules MANIFEST-1 to MANIFEST-4) into
 * *out without touching the plugin. Returns out->status. Thread-safe. */
BP_API bp_status_t bp_manifest_read(const char *manifest_path, bp_manifest_info_t *out);
/* Checks plugin_path against the manifest beside it as the loader does
 * before dlopen (name, library, ABI major, SHA-256 of the content).
 * BP_ERR_NOT_FOUND when there is no manifest; BP_ERR_INCOMPATIBLE with the
 * rule in out->reason (and the thread's message) on a mismatch. */
BP_API bp_status_t bp_manifest_verify(const char *plugin_path, bp_manifest_info_t *out);
/* Lists the manifests in the plugin search path (BACKPLANE_PLUGIN_PATH,
 * backplane/ beside the library, the installed plugin directory, then
 * plugin_dir when not NULL), in search order, without loading or hashing
 * anything: backend-*.json and layer-*.json, each directory once. Writes at
 * most capacity records to out (may be NULL when capacity is 0); *out_count
 * receives how many exist. A manifest that fails to parse is listed with
 * its status and reason. Thread-safe. */
BP_API bp_status_t bp_manifest_list(const char *plugin_dir, bp_manifest_info_t *out,
                                    uint32_t capacity, uint32_t *out_count);

/* ---------------------------------------------------------------------------
 * Layers: interposers between the core and a plugin (layer-<name>.so in the
 * plugin directories; the ABI is layer-api.h), stacked on every device of a
 * context in the order options.layers or BACKPLANE_LAYERS names them. A
 * layer that cannot be loaded is refused with a reason citing rule LAYER-n
 * (docs/plugin-abi.md section 16); devices work without it.
 */
typedef struct bp_layer_report {
  uint32_t struct_size;
  char name[64];     /* as listed */
  char path[1024];   /* the file found, "" if none */
  char version[64];  /* from its descriptor, "" if never read */
  bool loaded;       /* stacked on the context's devices */
  bp_status_t status;/* BP_OK, or why it was refused */
  char reason[512];
} bp_layer_report_t;

/* Number of layers the context was asked for, loaded or refused. */
BP_API bp_status_t bp_context_layer_count(const bp_context_t *context, uint32_t *out_count);
/* Copies the report of layer index (in the order listed). */
BP_API bp_status_t bp_context_layer_report(const bp_context_t *context, uint32_t index,
                                           bp_layer_report_t *out_report);
/* Writes what the loaded layer name has gathered so far (the stats layer's
 * counters, the check layer's findings) as one JSON object into out (size
 * bytes, NUL-terminated, truncated to fit); *out_len receives the full
 * length. BP_ERR_UNSUPPORTED for a layer that keeps no summary. Thread-safe. */
BP_API bp_status_t bp_context_layer_summary(const bp_context_t *context, const char *name, char *out,
                                            size_t size, size_t *out_len);

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
 * Device groups: several devices opened as one bp_device_t that every call
 * accepts (buffers, streams, events, ops, graphs). Group buffers live in
 * host memory; large GEMM (over M or N), strided batched GEMM (over the
 * batch), attention (over kv heads) and conv2d (over the batch) are split
 * across the members in proportion to each member's measured speed; every
 * other op, and small ones, run whole on the best member that can. Work on
 * a group is synchronous: each call returns when its result is in place.
 * See docs/runtime.md "Device groups".
 */

/* The op families a group splits; the index into the speed and share
 * arrays of bp_device_group_member_t. */
typedef enum bp_group_split {
  BP_GROUP_SPLIT_GEMM = 0,      /* gemm, strided batched gemm */
  BP_GROUP_SPLIT_ATTENTION = 1, /* attention, over kv heads */
  BP_GROUP_SPLIT_CONV2D = 2,    /* conv2d, over the batch */
  BP_GROUP_SPLIT_COUNT
} bp_group_split_t;

#define BP_GROUP_MAX_MEMBERS 8

typedef struct bp_device_group_options {
  uint32_t struct_size; /* sizeof(bp_device_group_options_t) */
  /* Accept members that are the same hardware (equal non-empty identity,
   * or both running on the host CPU: kind CPU or SOFTWARE). Refused
   * otherwise. */
  bool allow_shared_hardware;
  /* With allow_shared_hardware: split work among members that share
   * hardware as if they did not. Off, the hardware is counted once: of the
   * members on one piece of hardware only the fastest takes a share. */
  bool split_shared_hardware;
  /* Ops of fewer floating-point operations run whole on the best member
   * (0: the default, 2^26). */
  uint64_t min_split_flops;
  /* Each member is opened with this config (may be NULL). */
  const bp_device_config_t *member_config;
} bp_device_group_options_t;

/* Opens members ("cpu,opencl": comma-separated bp_device_open selectors,
 * at least two, at most BP_GROUP_MAX_MEMBERS; or "all": the best device of
 * each piece of hardware, every device with allow_shared_hardware) as one
 * device. opts may be NULL (defaults). A refused list (an empty or unknown
 * entry, one member, members on the same hardware) leaves nothing open.
 * The caller owns the group and closes it with bp_device_close, which
 * closes the members. Thread-safe. */
BP_API bp_status_t bp_device_group_open(bp_context_t *context, const char *members,
                                        const bp_device_group_options_t *opts,
                                        bp_device_t **out_device);

/* One member as the group sees it. */
typedef struct bp_device_group_member {
  uint32_t struct_size;
  bp_device_entry_t entry; /* the member's ranked entry */
  /* Members with equal values are the same hardware. */
  uint32_t hardware;
  /* Measured speed per split family in GFLOP/s (0: not measured yet, or
   * the member cannot run the family). */
  double gflops[BP_GROUP_SPLIT_COUNT];
  /* The fraction of a split op of each family this member takes (the
   * members' shares add up to 1 once measured; 0 before). */
  double share[BP_GROUP_SPLIT_COUNT];
  uint64_t ops_run;    /* whole ops this member ran for the group */
  uint64_t slices_run; /* slices of split ops it ran */
} bp_device_group_member_t;

/* The number of members of a group; fails for a device that is not one. */
BP_API bp_status_t bp_device_group_size(const bp_device_t *group, uint32_t *out_count);
/* Member index (in rank order, 0 the best) as the group sees it. Reads the
 * speeds measured so far; bp_device_group_calibrate measures the rest. */
BP_API bp_status_t bp_device_group_info(const bp_device_t *group, uint32_t index,
                                        bp_device_group_member_t *out_member);
/* Reads each member's speed for each split family from the tuning cache,
 * measuring (a short run, stored in the cache) where it has none; with
 * remeasure, measures every one again. Ops do the same on their first
 * split, so calling this is needed only to read the shares early. On a
 * device that is not a group it does the same for that device, so groups
 * opened later (in any process using the cache) find its speeds; bp tune
 * does that. */
BP_API bp_status_t bp_device_group_calibrate(bp_device_t *group, bool remeasure);

/* The caching memory pool's figures for one device handle. */
typedef struct bp_memory_stats {
  uint32_t struct_size;
  uint64_t in_use_bytes;       /* in live buffers (rounded to 256 bytes) */
  uint64_t reserved_bytes;     /* held from the backend, in use or cached */
  uint64_t cached_bytes;       /* reserved but free */
  uint64_t peak_in_use_bytes;
  uint64_t largest_free_block;
  uint64_t alloc_count, free_count;
  uint64_t cache_hits;         /* allocations served without the backend */
  uint64_t segment_count;      /* backend allocations held */
  double fragmentation;        /* 1 - largest free block / cached bytes */
} bp_memory_stats_t;

/* Copies the device's memory pool statistics. */
BP_API bp_status_t bp_device_memory_stats(bp_device_t *device,
                                          bp_memory_stats_t *out_stats);
/* Returns every cached, wholly free block of memory to the backend. */
BP_API bp_status_t bp_device_empty_cache(bp_device_t *device);

/* Why an op fell back to another device. */
typedef enum bp_fallback_reason {
  BP_FALLBACK_DTYPE = 0,    /* the device does not claim the op for the dtype */
  BP_FALLBACK_NO_ENTRY = 1, /* the plugin has no entry point for the op */
  BP_FALLBACK_REFUSED = 2   /* the plugin returned BP_ERR_UNSUPPORTED (a shape
                             * limit, an offset) before doing any work */
} bp_fallback_reason_t;

/* One (op, dtype, reason, target) that fell back from a device, with what
 * it cost. Versioned: fields are only ever appended, and the library writes
 * each record at the size the caller's header knows (out_stats[0]'s
 * struct_size), so an older caller's array keeps its layout. */
typedef struct bp_fallback_stat {
  uint32_t struct_size;     /* sizeof(bp_fallback_stat_t) */
  bp_op_t op;
  bp_dtype_t dtype;         /* the dtype the op was refused for */
  bp_fallback_reason_t reason;
  char reason_text[256];    /* the refusal's words, from the first time */
  char target[128];         /* the device name it ran on ("cpu") */
  char target_backend[64];  /* that device's plugin */
  uint64_t count;           /* calls that ran there */
  uint64_t bytes_in;        /* copied to the target, all calls together */
  uint64_t bytes_out;       /* copied back */
  uint64_t copy_ns;         /* spent copying, both ways */
  uint64_t total_ns;        /* spent in the fallback, copies and op included */
} bp_fallback_stat_t;

/* Lists every op that fell back from device to another device since it
 * opened: one record per (op, dtype, reason, target), in the order they
 * first happened. The caller sets out_stats[0].struct_size to
 * sizeof(bp_fallback_stat_t); at most capacity records are written, each of
 * that size and with struct_size set, and *out_count receives how many
 * exist (call with capacity 0 and out_stats NULL to size the array).
 * Thread-safe; the records are copies the caller owns. */
BP_API bp_status_t bp_device_fallback_stats(bp_device_t *device,
                                            bp_fallback_stat_t *out_stats,
                                            uint32_t capacity,
                                            uint32_t *out_count);

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
 * Graphs: record the ops issued on a stream, replay them many times.
 */

/* Starts recording: ops issued on the stream are validated and recorded
 * instead of run, until bp_stream_end_capture. Copies on a capturing stream
 * are rejected. */
BP_API bp_status_t bp_stream_begin_capture(bp_stream_t *stream);
/* Stops recording and returns the graph, which the caller owns. */
BP_API bp_status_t bp_stream_end_capture(bp_stream_t *stream,
                                         bp_graph_t **out_graph);
/* Queues the recorded ops, in order, on stream (same device). */
BP_API bp_status_t bp_graph_launch(bp_graph_t *graph, bp_stream_t *stream);
/* Points every recorded use of buffer `from` at buffer `to` (same device, at
 * least as large), so one graph serves new inputs and outputs. */
BP_API bp_status_t bp_graph_rebind(bp_graph_t *graph, bp_buffer_t *from,
                                   bp_buffer_t *to);
/* Number of recorded ops (0 for an invalid graph). */
BP_API uint32_t bp_graph_size(const bp_graph_t *graph);
/* Whether the last launch ran the backend's native graph (CUDA graph, reused
 * Vulkan command buffer) rather than replaying the ops one by one. */
BP_API bool bp_graph_is_native(const bp_graph_t *graph);
BP_API void bp_graph_destroy(bp_graph_t *graph);

/* Graph scheduler (docs/runtime.md "Graph scheduler"). A graph captured on
 * a device with fallback on may record ops its device cannot run; such a
 * graph is split into runs per device by support and cost, with the copies
 * between them inserted, and bp_graph_launch on it returns once the
 * results are in the application's buffers. A graph whose ops all run on
 * its device is not scheduled and runs as before. */

/* Why a call runs where it does. */
typedef enum bp_graph_place_reason {
  BP_GRAPH_PLACE_HERE = 0,        /* on the graph's device */
  BP_GRAPH_PLACE_UNSUPPORTED = 1, /* the graph's device does not claim it */
  BP_GRAPH_PLACE_REFUSED = 2,     /* the graph's device's plugin refused it when it ran */
  BP_GRAPH_PLACE_COST = 3         /* the graph's device could run it; the cost model chose this one */
} bp_graph_place_reason_t;

/* Where one recorded call runs, and the copies made for it. */
typedef struct bp_graph_placement {
  uint32_t struct_size;   /* sizeof(bp_graph_placement_t) */
  bp_op_t op;
  uint32_t device_rank;   /* in the context's ranking */
  char device[128];       /* that device's name */
  bp_graph_place_reason_t reason;
  char why[512];          /* the refusal's words, or the cost comparison */
  double estimate_ms;     /* the cost model's figure for it there */
  bool measured;          /* estimate_ms came from the tuning cache */
  uint64_t bytes_in;      /* copied so that it can run, per launch */
  uint64_t bytes_out;     /* copied off its device when its run ends */
} bp_graph_placement_t;

/* The whole plan of a graph. */
typedef struct bp_graph_schedule_info {
  uint32_t struct_size;       /* sizeof(bp_graph_schedule_info_t) */
  bool scheduled;             /* some call runs off the graph's device */
  uint32_t calls, runs, devices;
  uint32_t regions;           /* byte ranges of the buffers that the calls touch */
  uint64_t bytes_from_owners; /* into working copies on other devices, per launch */
  uint64_t bytes_between;     /* between runs, per launch */
  uint64_t bytes_to_owners;   /* working copies back to the buffers, per launch */
} bp_graph_schedule_info_t;

/* Copies the placement of recorded call `call` (0-based) into *out (whose
 * struct_size the caller sets). Thread-safe. */
BP_API bp_status_t bp_graph_placement(const bp_graph_t *graph, uint32_t call,
                                      bp_graph_placement_t *out);
/* Copies the graph's plan figures into *out (struct_size set by the
 * caller). Thread-safe. */
BP_API bp_status_t bp_graph_schedule(const bp_graph_t *graph,
                                     bp_graph_schedule_info_t *out);
/* Writes the placement as text, one line per call and a summary (the form
 * docs/runtime.md "Graph scheduler" describes), NUL-terminated and cut to
 * size; *out_len (may be NULL) receives the full length. Thread-safe. */
BP_API bp_status_t bp_graph_explain(const bp_graph_t *graph, char *buf,
                                    size_t size, size_t *out_len);

/* ---------------------------------------------------------------------------
 * Custom kernels, in the form the device's backend takes (see
 * bp_kernel_format_t in plugin-api.h and docs/custom-kernels.md).
 */

/* One launch argument: a buffer (with a byte offset) or a scalar. */
typedef struct bp_kernel_arg {
  bp_kernel_arg_kind_t kind;
  bp_buffer_t *buffer; /* BP_ARG_BUFFER */
  uint64_t offset;     /* BP_ARG_BUFFER: bytes into the buffer */
  union {
    int32_t i32; uint32_t u32; int64_t i64; uint64_t u64; float f32; double f64;
  } value;
} bp_kernel_arg_t;

/* Compiles or loads a kernel for device. signature lists the kinds of the
 * arg_count arguments every launch must pass. The caller owns the kernel.
 * BP_ERR_UNSUPPORTED when the device takes no kernels of this format. */
BP_API bp_status_t bp_kernel_create(bp_device_t *device,
                                    bp_kernel_format_t format,
                                    const void *code, uint64_t code_size,
                                    const char *entry, const char *options,
                                    uint32_t arg_count,
                                    const bp_kernel_arg_kind_t *signature,
                                    bp_kernel_t **out_kernel);
/* Launches grid[0..2] blocks of block[0..2] invocations on stream; args are
 * checked against the signature (kinds, live buffers of the stream's device,
 * offsets inside them). */
BP_API bp_status_t bp_kernel_launch(bp_stream_t *stream, bp_kernel_t *kernel,
                                    const uint32_t grid[3],
                                    const uint32_t block[3],
                                    uint32_t shared_bytes, uint32_t arg_count,
                                    const bp_kernel_arg_t *args);
BP_API void bp_kernel_destroy(bp_kernel_t *kernel);

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

/* ---------------------------------------------------------------------------
 * Communicators: collectives between processes, one device per rank, through
 * a comm plugin (comm-mpi.so, ...) found in the plugin directories on first
 * use. See docs/scale-out.md for launching, ordering and failures. Every call
 * below is collective (every rank must make it, in the same order, with the
 * same count, dtype, op and root) except send and recv, which pair up. The
 * core exchanges a small header before each call, so a rank that made a
 * different call gets BP_ERR_INVALID_ARGUMENT on every rank, and a rank that
 * never arrives (dead, hung, partitioned) gets BP_ERR_TIMEOUT on the others
 * after the timeout; the communicator is then broken and every later call on
 * it fails at once with BP_ERR_UNAVAILABLE. Calls wait for the work queued on
 * stream, then run and return when the data has arrived (buffers on
 * devices without host memory are staged through host memory). Counts are
 * in elements of dtype; every dtype works, f16 and bf16 reduce in f32. A
 * communicator is used by one thread at a time (calls on it are serialised).
 */
typedef struct bp_comm bp_comm_t;

typedef struct bp_comm_options {
  uint32_t struct_size; /* sizeof(bp_comm_options_t) */
  /* The comm plugin by name ("mpi"); NULL: the first loaded one in
   * BACKPLANE_COMM's order ("nccl,mpi"), else the best for the device. */
  const char *plugin;
  /* 0: the size and this rank come from the launcher (mpirun) or from the
   * MPI the application already initialised. */
  int32_t size, rank;
  const char *bootstrap; /* the plugin's rendezvous string, may be NULL */
  /* Milliseconds a call may wait for the other ranks; 0:
   * BACKPLANE_COMM_TIMEOUT_MS, else 60000. */
  uint32_t timeout_ms;
  /* Skip the header exchange that catches mismatched calls (a rank that
   * never arrives still times out). */
  bool no_call_check;
} bp_comm_options_t;

/* What the context knows about one comm plugin file. */
typedef struct bp_comm_plugin_report {
  uint32_t struct_size;
  char path[1024];
  char name[64];      /* from the descriptor, "" if never read */
  char version[64];
  bool loaded;        /* true when communicators can be made with it */
  bp_plugin_stage_t stage;
  bp_status_t status; /* why it was refused, BP_OK when loaded */
  char reason[512];
  char library[128];  /* the library it drives: "Open MPI v4.1.4" */
  int32_t launched_rank, launched_size; /* from the launcher, -1: none */
  char description[256];
} bp_comm_plugin_report_t;

/* Number of comm-*.so files seen in the context's plugin directories
 * (loading them on the first call), loaded or refused. */
BP_API bp_status_t bp_context_comm_plugin_count(bp_context_t *context,
                                                uint32_t *out_count);
/* Copies the report of comm plugin index (in search order). */
BP_API bp_status_t bp_context_comm_plugin_report(bp_context_t *context,
                                                 uint32_t index,
                                                 bp_comm_plugin_report_t *out_report);

/* Joins a communicator whose rank uses device (its buffers and streams);
 * blocks until every rank has joined or the timeout passed. options may be
 * NULL. The caller owns the communicator. */
BP_API bp_status_t bp_comm_create(bp_device_t *device,
                                  const bp_comm_options_t *options,
                                  bp_comm_t **out_comm);
/* Frees the communicator (not collective; never waits on other ranks). */
BP_API void bp_comm_destroy(bp_comm_t *comm);
/* This process's rank, and the number of ranks. */
BP_API bp_status_t bp_comm_rank(const bp_comm_t *comm, int32_t *out_rank);
BP_API bp_status_t bp_comm_size(const bp_comm_t *comm, int32_t *out_size);

/* recv[i] = op over ranks of send[i], i < count, on every rank. send and
 * recv may be the same range (in place); otherwise they must not overlap. */
BP_API bp_status_t bp_comm_all_reduce(bp_comm_t *comm, bp_stream_t *stream,
                                      bp_buffer_t *send, uint64_t send_offset,
                                      bp_buffer_t *recv, uint64_t recv_offset,
                                      uint64_t count, bp_dtype_t dtype,
                                      bp_comm_reduce_op_t op);
/* recv[r * count + i] = rank r's send[i]: recv holds count * size elements. */
BP_API bp_status_t bp_comm_all_gather(bp_comm_t *comm, bp_stream_t *stream,
                                      bp_buffer_t *send, uint64_t send_offset,
                                      bp_buffer_t *recv, uint64_t recv_offset,
                                      uint64_t count, bp_dtype_t dtype);
/* recv[i] = op over ranks of send[rank * count + i]: send holds
 * count * size elements, recv count. */
BP_API bp_status_t bp_comm_reduce_scatter(bp_comm_t *comm, bp_stream_t *stream,
                                          bp_buffer_t *send, uint64_t send_offset,
                                          bp_buffer_t *recv, uint64_t recv_offset,
                                          uint64_t count, bp_dtype_t dtype,
                                          bp_comm_reduce_op_t op);
/* buffer[i] = root's buffer[i] on every rank (in place). */
BP_API bp_status_t bp_comm_broadcast(bp_comm_t *comm, bp_stream_t *stream,
                                     bp_buffer_t *buffer, uint64_t offset,
                                     uint64_t count, bp_dtype_t dtype,
                                     int32_t root);
/* On root, recv[i] = op over ranks of send[i]; recv may be NULL elsewhere
 * and is not written there. */
BP_API bp_status_t bp_comm_reduce(bp_comm_t *comm, bp_stream_t *stream,
                                  bp_buffer_t *send, uint64_t send_offset,
                                  bp_buffer_t *recv, uint64_t recv_offset,
                                  uint64_t count, bp_dtype_t dtype,
                                  bp_comm_reduce_op_t op, int32_t root);
/* Sends count elements to peer, which calls bp_comm_recv with the same
 * count and dtype; returns when the data has left. */
BP_API bp_status_t bp_comm_send(bp_comm_t *comm, bp_stream_t *stream,
                                bp_buffer_t *buffer, uint64_t offset,
                                uint64_t count, bp_dtype_t dtype, int32_t peer);
/* Receives count elements from peer into buffer. */
BP_API bp_status_t bp_comm_recv(bp_comm_t *comm, bp_stream_t *stream,
                                bp_buffer_t *buffer, uint64_t offset,
                                uint64_t count, bp_dtype_t dtype, int32_t peer);
/* Returns once every rank has called it (after stream's queued work). */
BP_API bp_status_t bp_comm_barrier(bp_comm_t *comm, bp_stream_t *stream);
/* The name of the comm plugin behind comm ("mpi"), valid while it lives. */
BP_API const char *bp_comm_plugin_name(const bp_comm_t *comm);

#ifdef __cplusplus
}
#endif
#endif /* BACKPLANE_H */
