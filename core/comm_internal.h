/*
 * comm_internal.h — the core's side of communicators: comm plugins
 * (comm_loader.c), the only caller of their descriptors (comm_call.c), the
 * public objects (comm.c), the call check and staging (comm_run.c,
 * comm_stage.c). Internal; nothing here is public.
 */
#ifndef BACKPLANE_COMM_INTERNAL_H
#define BACKPLANE_COMM_INTERNAL_H

#include "comm-api.h"
#include "internal.h"

/* One comm-*.so candidate of a context. */
typedef struct bp__comm_plugin {
  bp_comm_plugin_report_t report;
  void *dl;                  /* dlopen handle, NULL when refused */
  bp_comm_descriptor_t desc; /* copy, zero beyond struct_size */
  bp_comm_info_t info;       /* from probe */
  bool initialised;
} bp__comm_plugin_t;

typedef struct bp__comm bp__comm_t;
typedef struct bp__comm_job bp__comm_job_t;

/* A context's comm plugins and live communicators, under lock. */
typedef struct bp__comm_set {
  pthread_mutex_t lock;
  bp__comm_plugin_t *plugins; /* in search order */
  uint32_t count;
  bp__comm_t *comms;          /* live, linked through next */
} bp__comm_set_t;

/* The kinds of call, as the header exchange names them. */
typedef enum bp__comm_kind {
  BP__COMM_ALL_REDUCE = 1,
  BP__COMM_ALL_GATHER,
  BP__COMM_REDUCE_SCATTER,
  BP__COMM_BROADCAST,
  BP__COMM_REDUCE,
  BP__COMM_SEND,
  BP__COMM_RECV,
  BP__COMM_BARRIER
} bp__comm_kind_t;

struct bp__comm {
  bp_comm_t *h;                 /* the application's token */
  bp_context_t *context;
  const bp__comm_plugin_t *plugin;
  bp_plugin_comm_t *handle;
  bp_device_t *device_h;        /* the device's token (never reused) */
  bp_comm_memory_t memory;      /* what the plugin is handed */
  int32_t rank, size;
  uint32_t timeout_ms;
  bool check_calls;
  char path[400];               /* bp_comm_data_path: direct or staged, and why */
  pthread_mutex_t lock;         /* guards the queue and broken */
  uint64_t seq;                 /* collectives checked (the progress thread's) */
  bool broken;                  /* a timeout or transport error, under lock */
  char broken_why[256];
  /* The calls queued on the communicator, run one at a time in the order
   * they were made by its progress thread (comm_queue.c). */
  bp__comm_job_t *head, *tail;  /* under lock */
  pthread_cond_t wake;          /* a call queued, or stopping */
  pthread_t progress;
  bool progress_started, stopping;
  bp__comm_t *next;
};

/* One public call, as the public wrappers describe it to comm_run.c. */
typedef struct bp__comm_call {
  const char *fn;
  bp__comm_kind_t kind;
  bp_buffer_t *send, *recv;
  uint64_t send_offset, recv_offset;
  uint64_t count;
  bp_dtype_t dtype;
  bp_comm_reduce_op_t op;
  int32_t peer;
} bp__comm_call_t;

/* ---- comm_loader.c ---------------------------------------------------------- */
/* The context's comm set, scanning its plugin directories for comm-*.so on
 * the first call; NULL (with the error set) when memory is short. */
bp__comm_set_t *bp__comm_set(bp_context_t *ctx, const char *fn);
/* The plugin a communicator should use: options->plugin by name, else
 * BACKPLANE_COMM's order, else one taking native memory (the device's own,
 * BP_COMM_MEMORY_BIT) before one taking host memory, else the best score.
 * A plugin that takes neither is never picked. Under set->lock. */
bp_status_t bp__comm_pick(bp__comm_set_t *set, const char *name, bp_comm_memory_t native, const char *fn,
                          const bp__comm_plugin_t **out);

/* Loads the comm plugin file at path into p in this process: dlopen, the
 * descriptor's checks, init, probe; p's report says how far it got. */
void bp__comm_load_in_process(bp__comm_set_t *set, bp__comm_plugin_t *p, const char *path);
/* Runs those steps on path in a child process first (comm_isolate.c); true
 * when the child survived them and loaded the plugin, else p's report
 * holds the refusal (a crash, an exit, a timeout after timeout_s, or the
 * child's own reason) and the plugin must not be loaded here. */
bool bp__comm_probe_isolated(bp__comm_plugin_t *p, const char *path, uint32_t timeout_s);

/* ---- comm_call.c: the only caller of comm descriptor pointers --------------- */
bp_status_t bp__comm_call_init(const bp_comm_descriptor_t *x);
void bp__comm_call_shutdown(const bp_comm_descriptor_t *x);
bp_status_t bp__comm_call_probe(const bp_comm_descriptor_t *x, bp_comm_info_t *out_info);
bp_status_t bp__comm_call_create(const bp__comm_plugin_t *p, const bp_comm_config_t *config,
                                 bp_plugin_comm_t **out_comm, int32_t *out_rank, int32_t *out_size);
void bp__comm_call_destroy(const bp__comm_plugin_t *p, bp_plugin_comm_t *comm);
/* Whether c's plugin is handed the device's own memory (not host copies). */
static inline bool bp__comm_direct(const bp__comm_t *c) { return c->memory != BP_COMM_MEMORY_HOST; }
/* Runs kind on c's plugin; a failure's message names the call and plugin. */
bp_status_t bp__comm_call(bp__comm_t *c, bp__comm_kind_t kind, const bp_comm_args_t *args,
                          const char *fn);
const char *bp__comm_kind_name(bp__comm_kind_t kind);
/* Whether c's plugin takes BP_COMM_ENQUEUE (comm ABI 1.1's complete), and
 * the wait for the oldest call enqueued that way. */
bool bp__comm_can_enqueue(const bp__comm_t *c);
bp_status_t bp__comm_call_complete(bp__comm_t *c, const char *fn);

/* ---- comm_run.c, comm_queue.c, comm_stage.c -------------------------------- */
/* Validates call on comm and stream and queues it on both; a call this
 * rank rejects returns its error at once, and is still queued so that the
 * other ranks' call check fails (comm_run.c). */
bp_status_t bp__comm_run(bp_comm_t *comm, bp_stream_t *stream, const bp__comm_call_t *call);

/* One queued call: what the progress thread needs after the caller left. */
struct bp__comm_job {
  bp__comm_call_t call;
  bp__stream_t *stream;     /* NULL for a call this rank rejected */
  bp__device_t *device;     /* for the call check's scratch memory; may be NULL */
  bp__buffer_t bufs[2];     /* copies of the operands' records */
  bp__buffer_t *send, *recv; /* into bufs (the same one when send is recv) */
  bool rejected;
  uint64_t ticket;          /* its place among the stream's collectives */
  bp__comm_job_t *next;
};
/* Checks job against the other ranks and runs it: on the progress thread
 * (comm_run.c). Returns the status its stream reports. */
bp_status_t bp__comm_run_job(bp__comm_t *c, bp__comm_job_t *job);
/* Starts and stops c's progress thread (comm_queue.c); stopping waits for
 * the calls still queued. */
bp_status_t bp__comm_progress_start(bp__comm_t *c);
void bp__comm_progress_stop(bp__comm_t *c);
/* Queues job on c, and on its stream (whose lock the caller holds) unless
 * the job was rejected. */
void bp__comm_enqueue(bp__comm_t *c, bp__comm_job_t *job);
/* job's collective is on its stream's native queue, not yet done: the work
 * the application queues after it on the stream may go (comm_queue.c). */
void bp__comm_placed(bp__comm_job_t *job);

/* Host views of a call's operands, staged or converted where needed
 * (comm_stage.c). */
typedef struct bp__comm_stage {
  void *send, *recv;           /* what the plugin is handed */
  bp_comm_memory_t memory;     /* where they live (host when staged) */
  bp_dtype_t dtype;            /* what the plugin is told (f32 for a widened f16) */
  void *send_tmp, *recv_tmp;   /* owned host copies, or NULL */
} bp__comm_stage_t;

/* Elements the send and the receive side of a call cover on this rank. */
void bp__comm_extent(const bp__comm_t *c, const bp__comm_call_t *call, uint64_t *out_send,
                     uint64_t *out_recv);
/* Whether stage_in hands the plugin the device's own pointers (no copies,
 * no widening). */
bool bp__comm_stage_is_direct(const bp__comm_t *c, const bp__comm_call_t *call);
/* Fills st with host pointers for the operands (copied out of device
 * memory, widened to f32 where the plugin does not reduce the dtype). */
bp_status_t bp__comm_stage_in(bp__comm_t *c, bp__device_t *d, const bp__comm_call_t *call,
                              bp__buffer_t *send, bp__buffer_t *recv, bp__comm_stage_t *st);
/* Writes the received elements back (narrowing, copying to the device). */
bp_status_t bp__comm_stage_out(bp__comm_t *c, bp__device_t *d, const bp__comm_call_t *call,
                               bp__buffer_t *recv, const bp__comm_stage_t *st);
void bp__comm_stage_free(bp__comm_stage_t *st);

#endif /* BACKPLANE_COMM_INTERNAL_H */
