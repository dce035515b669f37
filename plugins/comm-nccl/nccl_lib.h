/*
 * nccl_lib.h — the internals of comm-nccl.so and comm-rccl.so: the NCCL
 * (or RCCL) entry points resolved (nccl_lib.c) and one communicator.
 */
#ifndef BP_COMM_NCCL_LIB_H
#define BP_COMM_NCCL_LIB_H

#include <pthread.h>
#include <stdbool.h>

#include "comm-api.h"
#include "gpu.h"
#include "nccl_api.h"

typedef struct nccl_lib {
  void *nccl_dl;
#define NCCL_FN_FIELD(ret, name, params) ret(*name) params;
  NCCL_FUNCTIONS(NCCL_FN_FIELD)
#undef NCCL_FN_FIELD
} nccl_lib_t;

extern nccl_lib_t nccl;
extern const bp_host_services_t *nccl_host;

/* Opens the GPU runtime (gpu.h) and VENDOR_LIBRARY_ENV's library (else
 * VENDOR_SONAME) and resolves everything; BP_ERR_UNAVAILABLE with the
 * reason otherwise. Idempotent, thread-safe. */
bp_status_t nccl_lib_open(void);

/* One communicator: NCCL's, on a stream of its own (gpu.h). */
typedef struct bp_plugin_comm {
  ncclComm_t comm;
  gpu_side_t gpu;
  int rank, size;
  bool broken, aborted;
  /* A call enqueued on the backend's stream (BP_COMM_ENQUEUE) that
   * complete has not reported yet; gpu.done marks its end. */
  bool pending;
  const char *pending_fn;
} nccl_comm_t;

/* Turns an NCCL failure of fn into a status and message; marks c broken. */
bp_status_t nccl_failed(nccl_comm_t *c, const char *fn, ncclResult_t r);
/* Waits until c's stream has run what was queued, the deadline passes
 * (aborts c: BP_ERR_TIMEOUT) or NCCL reports an error. */
bp_status_t nccl_wait(nccl_comm_t *c, uint32_t timeout_ms, const char *fn);
/* comm-api.h's complete: waits for the call enqueued on the backend's
 * stream, as nccl_wait does for the plugin's own. */
bp_status_t nccl_complete(bp_plugin_comm_t *c, uint32_t timeout_ms);

/* The calls (nccl_ops.c). */
bp_status_t nccl_all_reduce(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t nccl_all_gather(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t nccl_reduce_scatter(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t nccl_broadcast(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t nccl_reduce(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t nccl_send(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t nccl_recv(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t nccl_barrier(bp_plugin_comm_t *c, const bp_comm_args_t *a);

#endif /* BP_COMM_NCCL_LIB_H */
