/*
 * backplane_comm.h — communicators: collectives between processes, part of
 * the public API (included by backplane.h; include backplane.h).
 */
#ifndef BACKPLANE_COMM_H
#define BACKPLANE_COMM_H

#include "backplane.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * it fails at once with BP_ERR_UNAVAILABLE. Calls are asynchronous: each
 * checks its arguments (returning their error at once), is queued on stream
 * and returns; it runs after the work queued on stream before it, and work
 * queued on stream after it (and device-wide synchronous calls) waits for
 * it. A failure after the call returned (mismatch, timeout, dead rank) is
 * returned by the stream's next bp_stream_synchronize, and by
 * bp_event_synchronize of an event recorded after the call. Calls on one
 * communicator run one at a time in the order they were made, from any
 * thread and any of its device's streams. Buffers on devices without host
 * memory are staged through host memory unless the plugin takes the
 * device's own (bp_comm_data_path). Counts are in elements of dtype; every
 * dtype works, f16 and bf16 reduce in f32.
 */
typedef struct bp_comm bp_comm_t;

/* The dtypes collectives take (BP_DTYPE_BIT mask); any other is refused
 * with BP_ERR_UNSUPPORTED. */
#define BP_COMM_DTYPES (BP_DTYPES_FLOAT | BP_DTYPES_INT)

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
/* Frees the communicator (not collective). It first waits for the calls
 * still queued on it, each bounded by the communicator's timeout; after
 * that it never waits on other ranks. */
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
/* How comm's calls reach its plugin, in words, valid while comm lives:
 * "direct: ..." when the plugin is handed the buffers' own memory (a device
 * whose memory is host memory; CUDA device pointers to NCCL or to a
 * CUDA-aware MPI), "staged through host memory: <why>" otherwise. "" for a
 * handle that is not a live communicator. */
BP_API const char *bp_comm_data_path(const bp_comm_t *comm);

#ifdef __cplusplus
}
#endif
#endif /* BACKPLANE_COMM_H */
