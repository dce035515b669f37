/*
 * schedule.h — the graph scheduler (docs/runtime.md "Graph scheduler"):
 * what graph.c and the door call, what graph.c lends the scheduler, and
 * what the scheduler's files (schedule.c, schedule_plan.c, schedule_run.c,
 * schedule_ivs.c, schedule_explain.c) share. Internal to libbackplane.
 *
 * A graph captured on a device with fallback on may hold calls its device
 * cannot run: they are recorded, marked with the refusal, and the graph is
 * then "scheduled": its calls are placed on devices by support and cost
 * (schedule_plan.c) and a launch runs them in runs per device, copying the
 * byte ranges each run needs (schedule_run.c). A graph with no such call
 * never reaches this code past bp__schedule_active.
 */
#ifndef BACKPLANE_SCHEDULE_H
#define BACKPLANE_SCHEDULE_H

#include "internal.h"

/* ---- lent by graph.c: the recorded calls, read under the graph's lock --- */
uint32_t bp__graph_count(const bp__graph_t *g);
bp_op_t bp__graph_op(const bp__graph_t *g, uint32_t i);
const void *bp__graph_args(const bp__graph_t *g, uint32_t i);
bp__device_t *bp__graph_device(const bp__graph_t *g);
struct bp__schedule **bp__graph_schedule(bp__graph_t *g);
void bp__graph_lock(bp__graph_t *g);
void bp__graph_unlock(bp__graph_t *g);

/* ---- called by the door, graph.c --------------------------------------- */

/* While capturing on a device with fallback on: records a call the device
 * refused (why) and marks it, when another ranked device claims it;
 * otherwise fails as a capture always has. The caller holds the stream's
 * lock. */
bp_status_t bp__schedule_record_elsewhere(bp__graph_t *g, bp_op_t op, const void *args,
                                          const bp__refusal_t *why);
/* At the end of capture: places the calls of a graph that has marked ones.
 * Fails when some call has no device that claims it. */
bp_status_t bp__schedule_plan(bp__graph_t *g);
/* Whether g is scheduled (some call is placed off its device). */
bool bp__schedule_active(const bp__graph_t *g);
/* Runs scheduled g from call `start` on s (whose lock, and g's, the caller
 * holds), synchronously: the results are in the application's buffers when
 * it returns. */
bp_status_t bp__schedule_launch(bp__graph_t *g, bp__stream_t *s, uint32_t start);
/* A call of an unscheduled graph, replayed in place, was refused by its
 * plugin (BP_ERR_UNSUPPORTED, before any work): calls before it ran. With
 * fallback on, marks it, schedules the graph and runs the rest; otherwise
 * returns st. */
bp_status_t bp__schedule_refused(bp__graph_t *g, bp__stream_t *s, uint32_t call, bp_status_t st);
void bp__schedule_free(struct bp__schedule *sc);
/* The first dtype op's args put to a device (what a refusal names). */
bp_dtype_t bp__sched_dtype(bp_op_t op, const void *args);

/* ---- shared by the scheduler's files ------------------------------------ */

/* Unknown device figures: what the static estimate assumes. */
#define BP__SCHED_DEFAULT_GFLOPS 10.0
#define BP__SCHED_DEFAULT_GBS 10.0
/* What switching devices between two calls costs besides the bytes (a
 * stream synchronisation and the copies' set-up), in ms. */
#define BP__SCHED_SWITCH_MS 0.05
/* At most this many ranked devices take part (refusal masks are 64-bit). */
#define BP__SCHED_MAX_DEVICES 64

typedef enum bp__place_reason {
  BP__PLACE_HERE = 0,        /* the graph's device runs it */
  BP__PLACE_UNSUPPORTED = 1, /* the graph's device does not claim it */
  BP__PLACE_REFUSED = 2,     /* the graph's device's plugin refused it */
  BP__PLACE_COST = 3         /* the graph's device could; the cost model chose another */
} bp__place_reason_t;

/* What the scheduler knows of one call. */
typedef struct bp__sched_call {
  bool marked;         /* refused by the graph's device (at capture or launch) */
  bp__refusal_t why;   /* why, when marked */
  uint64_t refused_by; /* ranks whose plugin refused it at a launch */
  uint32_t rank;       /* placed on this ranked device */
  bp__place_reason_t reason;
  double est_ms;      /* the cost model's figure for it there */
  bool measured;      /* est_ms came from the tuning cache */
  double here_ms;     /* its figure on the graph's device (0: cannot) */
  uint64_t bytes_in;  /* copied for it before it runs */
  uint64_t bytes_out; /* copied off its device after it (end of its run) */
} bp__sched_call_t;

/* Where one region's working copy lives (from the planner's count). */
typedef struct bp__sched_home {
  uint64_t lo, hi;       /* the region: bytes of one allocation */
  uint32_t home;         /* ranked device */
  uint32_t users, total; /* tensor uses on that device, and on all */
} bp__sched_home_t;

struct bp__schedule {
  bp__sched_call_t *calls;
  bp__sched_home_t *homes; /* one per region, in address order */
  uint32_t count, capacity;
  bool active;            /* some call is placed off the graph's device */
  bool measured_once;     /* the first launch timed the calls */
  uint32_t runs, devices; /* runs per device, devices used */
  uint32_t segments;      /* regions the graph touches (schedule_run.c) */
  uint64_t bytes_from_owners, bytes_between, bytes_to_owners;
};
typedef struct bp__schedule bp__schedule_t;

/* The schedule of g, grown to cover every recorded call; NULL when memory
 * is short. */
bp__schedule_t *bp__schedule_of(bp__graph_t *g);

/* Whether ranked device r claims op with args. */
bool bp__sched_claims(const bp_context_t *ctx, uint32_t r, bp_op_t op, const void *args);
/* The cost model: the estimated time (ms) of op with args on ranked device
 * r, from the tuning cache when it holds a measurement (*out_measured) and
 * the static estimate otherwise. */
double bp__sched_cost_ms(const bp_context_t *ctx, uint32_t r, bp_op_t op, const void *args,
                         bool *out_measured);
/* The tuning-cache key of op with args on ranked device r (bucket and op
 * name are written into the caller's buffers). */
void bp__sched_tune_key(const bp_context_t *ctx, uint32_t r, bp_op_t op, const void *args,
                        char *opname, size_t opsize, char *bucket, size_t bsize,
                        bp_tune_key_t *out);
/* Bytes an op's tensors span, all together. */
uint64_t bp__sched_bytes(bp_op_t op, const void *args);

/* Runs the executor over g from start (dry: only count the copies into the
 * schedule's figures); the caller holds g's lock (and s's, when not dry). */
bp_status_t bp__sched_execute(bp__graph_t *g, bp__stream_t *s, uint32_t start, bool dry);

/* ---- interval sets (schedule_ivs.c): sorted, disjoint [lo, hi) ---------- */
typedef struct bp__ivs {
  uint64_t (*iv)[2];
  uint32_t n, cap;
} bp__ivs_t;
/* Adds [lo, hi); false when memory is short. */
bool bp__ivs_add(bp__ivs_t *s, uint64_t lo, uint64_t hi);
/* The first stretch of [lo, hi) not in s, as [*glo, *ghi); false when s
 * covers [lo, hi). */
bool bp__ivs_first_gap(const bp__ivs_t *s, uint64_t lo, uint64_t hi, uint64_t *glo, uint64_t *ghi);
void bp__ivs_free(bp__ivs_t *s);

/* The bytes [*lo, *hi) of its allocation a tensor may touch; false when it
 * touches none. Whether every byte in it is an element. */
bool bp__sched_byte_range(const bp_plugin_tensor_t *t, uint64_t *lo, uint64_t *hi);
bool bp__sched_dense(const bp_plugin_tensor_t *t, uint64_t lo, uint64_t hi);

#endif /* BACKPLANE_SCHEDULE_H */
