/*
 * group.h — device groups, private to core/group*.c. A group is a device
 * whose "plugin" is an in-core descriptor (group_desc.c): the door
 * (plugin_call.c) calls its entries like any plugin's, and they call the
 * members only through the door's bp__call_* wrappers.
 *
 *  group.c        opening (member list, same-hardware rule), info, close
 *  group_desc.c   the descriptor: host memory, streams, events, whole ops
 *  group_stage.c  running one op on one member (direct or staged)
 *  group_split.c  splitting GEMM, attention and conv2d across members
 *  group_speed.c  measured speeds (tuning cache, calibration) and shares
 */
#ifndef BACKPLANE_GROUP_H
#define BACKPLANE_GROUP_H

#include <stdatomic.h>

#include "internal.h"

/* Ops below this many floating-point operations run on one member. */
#define BP__GROUP_MIN_SPLIT_FLOPS (UINT64_C(1) << 26)

typedef struct bp__group_member {
  bp_device_t *h;   /* opened by the group, never handed out */
  bp__device_t *d;  /* behind h, live while the group is */
  uint32_t hardware; /* index of the first member on the same hardware */
  double gflops[BP_GROUP_SPLIT_COUNT]; /* measured, 0: not yet / cannot */
  bool measured[BP_GROUP_SPLIT_COUNT];
  atomic_uint_fast64_t ops_run, slices_run;
} bp__group_member_t;

typedef struct bp__group {
  pthread_mutex_t lock; /* guards gflops / measured (calibration) */
  uint32_t count;
  bp__group_member_t m[BP_GROUP_MAX_MEMBERS]; /* in rank order */
  bool split_shared;
  uint64_t min_split_flops;
} bp__group_t;

/* A group stream: one internal stream per member. */
typedef struct bp__group_stream {
  uint32_t count;
  bp__stream_t *s[BP_GROUP_MAX_MEMBERS];
} bp__group_stream_t;

/* The group behind a device, NULL when d is not a group. */
bp__group_t *bp__group_of(const bp__device_t *d);
/* The in-core descriptor and plugin record every group device points at. */
const bp__plugin_t *bp__group_plugin(void);
/* The union of the members' capability tables (group_desc.c). */
void bp__group_op_dtypes(const bp__group_t *g, uint32_t *out_op_dtypes);
/* The intersection of the members' op_features (group_desc.c). */
void bp__group_op_features(const bp__group_t *g, uint32_t *out_op_features);
/* Closes the members and frees g (group.c). */
void bp__group_free(bp__group_t *g);

/* An internal stream on member d (no token); NULL on failure, with the
 * error set. Destroyed with bp__group_member_stream_destroy. */
bp__stream_t *bp__group_member_stream(bp__device_t *d);
void bp__group_member_stream_destroy(bp__stream_t *s);

/* Runs op whole on member stream s and waits for it. Tensors in args are
 * group (host) memory: passed as they are to a member whose pointers are
 * host pointers, staged through member buffers otherwise (group_stage.c). */
bp_status_t bp__group_run_on(bp__stream_t *s, bp_op_t op, const void *args);
/* Whether member d claims op for the dtypes args use. */
bool bp__group_member_can(const bp__device_t *d, bp_op_t op, const void *args);
/* Runs op whole on the best member that can (group_desc.c). */
bp_status_t bp__group_run_whole(bp__group_t *g, bp__group_stream_t *gs, bp_op_t op,
                                const void *args);

/* The split entries (group_split.c): split large problems, run small ones
 * whole. */
bp_status_t bp__group_gemm(bp__group_t *g, bp__group_stream_t *gs, const bp_gemm_args_t *a);
bp_status_t bp__group_attention(bp__group_t *g, bp__group_stream_t *gs, const bp_attention_args_t *a);
bp_status_t bp__group_conv2d(bp__group_t *g, bp__group_stream_t *gs, const bp_conv2d_args_t *a);

/* Each member's fraction of family's split work, measuring speeds first
 * where they are unknown (group_speed.c). Members that cannot run it, or
 * that share hardware with a faster member (unless split_shared), get 0. */
bp_status_t bp__group_shares(bp__group_t *g, bp_group_split_t family, double *out_share);
/* Shares from the speeds known now, without measuring. */
void bp__group_shares_known(bp__group_t *g, bp_group_split_t family, double *out_share);
typedef enum bp__group_measure {
  BP__GROUP_CACHED,   /* read the tuning cache only */
  BP__GROUP_MEASURE,  /* measure what the cache does not have */
  BP__GROUP_REMEASURE /* measure every member again */
} bp__group_measure_t;
/* Fills family's speeds per mode; takes g->lock. */
bp_status_t bp__group_calibrate(bp__group_t *g, bp_group_split_t family, bp__group_measure_t mode);
/* The same for a device that is not (yet) in a group: its speeds are keyed
 * by the device alone, so any group it joins later reads them. */
bp_status_t bp__group_calibrate_device(bp__device_t *d, bp__group_measure_t mode);

#endif /* BACKPLANE_GROUP_H */
