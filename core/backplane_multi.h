/*
 * backplane_multi.h — several devices as one: device groups and the
 * automatic-fallback report, part of the public API (included by
 * backplane.h; include backplane.h). Copies and ordering across devices are
 * the ordinary buffer and event calls (docs/runtime.md "Several devices").
 */
#ifndef BACKPLANE_MULTI_H
#define BACKPLANE_MULTI_H

#include "backplane.h"

#ifdef __cplusplus
extern "C" {
#endif

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
  BP_FALLBACK_REFUSED = 2,  /* the plugin returned BP_ERR_UNSUPPORTED (a shape
                             * limit, an offset) before doing any work */
  BP_FALLBACK_FEATURE = 3   /* the call uses an optional part of the op (a
                             * mask, an epilogue) the device does not claim */
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

#ifdef __cplusplus
}
#endif
#endif /* BACKPLANE_MULTI_H */
