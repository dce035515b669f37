/*
 * comm-api.h — the comm plugin ABI: collectives between processes.
 *
 * A comm plugin is a shared object named comm-<name>.so, in the same plugin
 * directories as the backends (docs/plugin-abi.md, docs/scale-out.md), that
 * exports exactly one symbol, BP_COMM_DESCRIPTOR_SYMBOL
 * ("bp_comm_descriptor"), a bp_comm_descriptor_t. It moves bytes between
 * ranks through a library the cluster already runs (Open MPI, NCCL), opened
 * with dlopen: no SDK at build time. This header, plugin-api.h (host
 * services) and backplane_types.h (status codes, dtypes, the reduce ops) are
 * all a comm plugin author needs.
 *
 * Rules, the same as plugin-api.h's (docs/plugin-abi.md has the long form):
 *  1. The descriptor starts with magic, abi_major, abi_minor, struct_size.
 *     The loader refuses a plugin whose magic is not BP_COMM_MAGIC, whose
 *     abi_major is not BP_COMM_ABI_MAJOR, or whose struct_size is smaller
 *     than BP_COMM_DESCRIPTOR_MIN_SIZE, and records why.
 *  2. A minor version appends fields only, each addition marked "fields
 *     below: ABI 1.N"; the loader reads only what struct_size covers.
 *  3. Every argument struct starts with struct_size; a plugin reads only the
 *     fields it covers. Arguments are valid only during the call.
 *  4. Entry points marked "(required)" must be non-NULL or the plugin is
 *     refused. In ABI 1.0 every entry point is required.
 *  5. The core validates every call first: the communicator is live, counts
 *     fit the buffers, the dtype and op are valid, root and peer are ranks
 *     of the communicator, and every rank made the same call (the core
 *     exchanges a header before each collective, docs/scale-out.md). f16
 *     and bf16 reach a plugin's reducing entries (all_reduce,
 *     reduce_scatter, reduce) as f32 unless info.reduce_dtypes claims them.
 *  6. Every collective and point-to-point entry returns within
 *     args->timeout_ms (0: no limit) with BP_ERR_TIMEOUT when the other
 *     ranks did not take part, never hangs; after a timeout or a transport
 *     error the communicator is broken and every later call on it fails at
 *     once with BP_ERR_UNAVAILABLE. comm_destroy must still free it.
 *  7. Calls on one communicator are serialised by the core, and made from
 *     the communicator's progress thread, not the thread that created it
 *     (a plugin keeps no per-thread state between comm_create and the
 *     calls); different communicators may be used from different threads
 *     at once.
 *  8. Plugins call back into the host only through bp_host_services_t.
 *  9. Each context that loads the plugin calls init once and shutdown once,
 *     so a process may see several init/shutdown pairs; the library the
 *     plugin opened may stay open (and initialised) until the process
 *     exits.
 * 10. A plugin whose info claims a device memory kind it can only confirm
 *     once its library is initialised (a CUDA-aware MPI) may refuse
 *     config->memory in comm_create with BP_ERR_UNSUPPORTED; the core then
 *     creates the communicator again over host memory (when the plugin
 *     claims host memory) and stages the device's buffers. A communicator
 *     made over device memory may still be handed host memory in a call
 *     (args->memory says which), e.g. f16 / bf16 widened on the host for a
 *     plugin that does not reduce them.
 */
#ifndef BACKPLANE_COMM_API_H
#define BACKPLANE_COMM_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin-api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BP_COMM_MAGIC 0x4250434du /* "BPCM" */
#define BP_COMM_ABI_MAJOR 1
#define BP_COMM_ABI_MINOR 1
#define BP_COMM_DESCRIPTOR_SYMBOL "bp_comm_descriptor"

/* Where the pointers a collective receives live. */
typedef enum bp_comm_memory {
  BP_COMM_MEMORY_HOST = 0, /* ordinary host pointers */
  BP_COMM_MEMORY_CUDA = 1, /* CUDA device pointers, stream is a CUstream */
  BP_COMM_MEMORY_ROCM = 2  /* HIP device pointers, stream is a hipStream_t */
} bp_comm_memory_t;
#define BP_COMM_MEMORY_BIT(m) (1u << (unsigned)(m))

/* What probe reports: one record per plugin (a comm plugin has no devices;
 * it serves the buffers of whichever device the application pairs it
 * with). */
typedef struct bp_comm_info {
  uint32_t struct_size;  /* set by the core before probe */
  char library[128];     /* the library and its version: "Open MPI v4.1.4" */
  uint32_t memory_kinds; /* BP_COMM_MEMORY_BIT of the memory it takes */
  uint32_t reduce_dtypes; /* BP_DTYPE_BIT of the dtypes it reduces itself */
  int32_t score_hint;    /* higher is preferred, among plugins taking the
                            device's memory */
  /* The rank and size a launcher (mpirun) gave this process, -1 when it was
   * not started by one: a communicator can then be made only from an
   * application that initialised the library itself, or by rendezvous. */
  int32_t launched_rank, launched_size;
  char description[256]; /* free text: transports, how it bootstraps */
} bp_comm_info_t;

/* How to make a communicator. */
typedef struct bp_comm_config {
  uint32_t struct_size;
  /* 0: the size and rank come from the bootstrap (the launcher's
   * environment, or the library the application already initialised). */
  int32_t size, rank;
  const char *bootstrap;  /* plugin-specific rendezvous string, may be NULL */
  uint32_t timeout_ms;    /* creating may take this long (0: no limit) */
  bp_comm_memory_t memory; /* the memory the collectives will be given */
  int32_t device_ordinal; /* the CUDA/HIP device for device memory, else -1 */
} bp_comm_config_t;

typedef struct bp_plugin_comm bp_plugin_comm_t;

/* One collective or point-to-point call. counts are in elements of dtype:
 *  all_reduce      send[count] -> recv[count] on every rank
 *  all_gather      send[count] -> recv[count * size], rank r's at r * count
 *  reduce_scatter  send[count * size] -> recv[count], rank r gets block r
 *  broadcast       root's send[count] -> recv[count] on every rank
 *  reduce          send[count] -> recv[count] on root only (recv is NULL
 *                  on the others)
 *  send, recv      send[count] to peer / recv[count] from peer
 * send == recv means in place, and only all_reduce, reduce (on root) and
 * broadcast (always: send == recv) are handed it; otherwise the core never
 * hands a plugin overlapping ranges. count may be 0: the call still takes
 * part, moving nothing. */
typedef struct bp_comm_args {
  uint32_t struct_size;
  bp_comm_memory_t memory;
  const void *send;
  void *recv;
  uint64_t count;
  bp_dtype_t dtype;
  bp_comm_reduce_op_t op; /* reducing calls only */
  int32_t peer;           /* root for broadcast and reduce, peer for p2p */
  uint32_t timeout_ms;    /* 0: no limit */
  void *stream;           /* native stream for device memory, else NULL */
  /* fields below: ABI 1.1 */
  uint32_t flags;         /* BP_COMM_ENQUEUE */
} bp_comm_args_t;

/* flags (ABI 1.1), given only to a plugin whose descriptor has complete:
 * BP_COMM_ENQUEUE: stream is the backend's own stream of the buffers'
 * device (its CUstream / hipStream_t), with the work queued before the call
 * still pending on it. Enqueue the call on that stream after that work and
 * return once it is queued, without waiting for it; the core lets the
 * application queue its later work on the stream, then calls complete
 * before it makes any other call on the communicator. */
#define BP_COMM_ENQUEUE 0x1u

typedef bp_status_t (*bp_comm_call_fn)(bp_plugin_comm_t *comm,
                                       const bp_comm_args_t *args);

typedef struct bp_comm_descriptor {
  uint32_t magic;       /* BP_COMM_MAGIC */
  uint16_t abi_major;   /* BP_COMM_ABI_MAJOR */
  uint16_t abi_minor;   /* BP_COMM_ABI_MINOR */
  uint32_t struct_size; /* sizeof(bp_comm_descriptor_t) as built */
  uint32_t reserved;
  const char *name;        /* (required) short name: "mpi", "nccl" */
  const char *version;     /* (required) plugin version string */
  const char *description; /* (optional) one line */

  /* (required) Called once after loading, before anything else. */
  bp_status_t (*init)(const bp_host_services_t *host);
  /* (required) Called once before the loader forgets the plugin. */
  void (*shutdown)(void);
  /* (required) Cheap, side-effect free: opens the library (dlopen), fills
   * info. When the library is absent returns BP_ERR_UNAVAILABLE with the
   * reason ("libmpi.so.40 not found") through set_error. */
  bp_status_t (*probe)(bp_comm_info_t *out_info);

  /* (required) Joins a communicator over config's ranks and returns this
   * process's rank and the size. Blocks until every rank joined or
   * config->timeout_ms passed (BP_ERR_TIMEOUT). */
  bp_status_t (*comm_create)(const bp_comm_config_t *config,
                             bp_plugin_comm_t **out_comm, int32_t *out_rank,
                             int32_t *out_size);
  /* (required) Frees the communicator, also a broken one; never blocks on
   * other ranks. */
  void (*comm_destroy)(bp_plugin_comm_t *comm);

  /* (required) The calls, as described at bp_comm_args_t. */
  bp_comm_call_fn all_reduce;
  bp_comm_call_fn all_gather;
  bp_comm_call_fn reduce_scatter;
  bp_comm_call_fn broadcast;
  bp_comm_call_fn reduce;
  bp_comm_call_fn send;
  bp_comm_call_fn recv;
  /* (required) Returns once every rank has entered it (args: timeout_ms,
   * stream; the rest is zero). */
  bp_comm_call_fn barrier;

  /* fields below: ABI 1.1 */
  /* (optional) Waits until the last call made with BP_COMM_ENQUEUE has
   * completed on its stream, and returns its status: BP_ERR_TIMEOUT once timeout_ms (0: no limit) passed, the
   * collective then aborted so that the stream's later work can run and
   * the communicator broken (rule 6), or the library's asynchronous error.
   * Present: the core may pass BP_COMM_ENQUEUE. */
  bp_status_t (*complete)(bp_plugin_comm_t *comm, uint32_t timeout_ms);
} bp_comm_descriptor_t;

/* The smallest descriptor the loader accepts: everything of ABI 1.0. */
#define BP_COMM_DESCRIPTOR_MIN_SIZE                                            \
  (offsetof(bp_comm_descriptor_t, barrier) + sizeof(void *))

#ifdef __cplusplus
}
#endif
#endif /* BACKPLANE_COMM_API_H */
