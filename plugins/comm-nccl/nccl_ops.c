/*
 * nccl_ops.c — the collectives: each queued with the device current
 * (gpu_enter), either on the backend's own stream when the core hands it
 * (BP_COMM_ENQUEUE: the stream orders it after the earlier work, and
 * complete waits for it later), or on the communicator's own stream after
 * the core synchronised the backend's, then waited for against the
 * deadline (nccl_wait).
 */
#include <stddef.h>

#include "nccl_lib.h"

static ncclDataType_t nccl_type(bp_dtype_t dt) {
  switch (dt) {
  case BP_F32: return ncclFloat32;
  case BP_F16: return ncclFloat16;
  case BP_BF16: return ncclBfloat16;
  case BP_F64: return ncclFloat64;
  case BP_I32: return ncclInt32;
  case BP_I64: return ncclInt64;
  case BP_U8: return ncclUint8;
  case BP_I8: return ncclInt8;
  case BP_FP8_E4M3: case BP_FP8_E5M2: case BP_Q8_0: case BP_Q4_0: /* bytes */
  case BP_DTYPE_COUNT: break;
  }
  return ncclUint8;
}

static ncclRedOp_t nccl_op(bp_comm_reduce_op_t op) {
  switch (op) {
  case BP_COMM_SUM: return ncclSum;
  case BP_COMM_PROD: return ncclProd;
  case BP_COMM_MAX: return ncclMax;
  case BP_COMM_MIN: return ncclMin;
  case BP_COMM_AVG: return ncclAvg;
  case BP_COMM_REDUCE_COUNT: break;
  }
  return ncclSum;
}

static bool enqueued(const bp_comm_args_t *a) {
  return a->struct_size >= offsetof(bp_comm_args_t, flags) + sizeof a->flags && (a->flags & BP_COMM_ENQUEUE) &&
         a->stream;
}

static bp_status_t usable(nccl_comm_t *c, const bp_comm_args_t *a) {
  if (c->broken) {
    nccl_host->set_error("the communicator is broken by an earlier failure");
    return BP_ERR_UNAVAILABLE;
  }
  if (a->memory != VENDOR_MEMORY) {
    nccl_host->set_error(VENDOR_LIBRARY " is given " VENDOR_DEVICE " device memory only");
    return BP_ERR_UNSUPPORTED;
  }
  return BP_OK;
}

/* The stream a call runs on: the backend's own when the core asks for it
 * (comm ABI 1.1's BP_COMM_ENQUEUE), else the plugin's. */
static void *stream_for(const nccl_comm_t *c, const bp_comm_args_t *a) {
  return enqueued(a) ? a->stream : c->gpu.stream;
}

/* The queued call's result r, then the wait, with the context still
 * current (the driver's stream calls need it). A call on the backend's
 * stream is not waited for: its end is marked with the event that
 * complete (nccl_lib.c) polls. */
static bp_status_t finish(nccl_comm_t *c, ncclResult_t r, const bp_comm_args_t *a, const char *fn) {
  bp_status_t st;
  if (r != ncclSuccess && r != ncclInProgress) {
    st = nccl_failed(c, fn, r);
  } else if (enqueued(a)) {
    int e = gpu_event_record(&c->gpu, a->stream);
    c->pending = e == 0;
    c->pending_fn = fn;
    st = e == 0 ? BP_OK : BP_ERR_DEVICE_LOST;
    if (e) nccl_host->set_error("%s: recording its end on the stream failed (%s error %d)", fn, VENDOR_DEVICE, -e);
  } else {
    st = nccl_wait(c, a->timeout_ms, fn);
  }
  gpu_leave(&c->gpu);
  return st;
}

#define ENQUEUE(c, a, fn, call)                                                                    \
  do {                                                                                             \
    bp_status_t st_ = usable(c, a);                                                                \
    if (st_ != BP_OK) return st_;                                                                  \
    gpu_enter(&(c)->gpu);                                                                          \
    return finish(c, call, a, fn);                                                                 \
  } while (0)

bp_status_t nccl_all_reduce(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  ENQUEUE(c, a, "ncclAllReduce", nccl.ncclAllReduce(a->send, a->recv, a->count, nccl_type(a->dtype),
                                                    nccl_op(a->op), c->comm, stream_for(c, a)));
}

bp_status_t nccl_all_gather(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  ENQUEUE(c, a, "ncclAllGather",
          nccl.ncclAllGather(a->send, a->recv, a->count, nccl_type(a->dtype), c->comm, stream_for(c, a)));
}

bp_status_t nccl_reduce_scatter(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  ENQUEUE(c, a, "ncclReduceScatter", nccl.ncclReduceScatter(a->send, a->recv, a->count, nccl_type(a->dtype),
                                                            nccl_op(a->op), c->comm, stream_for(c, a)));
}

bp_status_t nccl_broadcast(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  ENQUEUE(c, a, "ncclBroadcast", nccl.ncclBroadcast(a->send, a->recv, a->count, nccl_type(a->dtype), a->peer,
                                                    c->comm, stream_for(c, a)));
}

bp_status_t nccl_reduce(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  ENQUEUE(c, a, "ncclReduce", nccl.ncclReduce(a->send, a->recv, a->count, nccl_type(a->dtype), nccl_op(a->op),
                                              a->peer, c->comm, stream_for(c, a)));
}

bp_status_t nccl_send(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  ENQUEUE(c, a, "ncclSend",
          nccl.ncclSend(a->send, a->count, nccl_type(a->dtype), a->peer, c->comm, stream_for(c, a)));
}

bp_status_t nccl_recv(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  ENQUEUE(c, a, "ncclRecv",
          nccl.ncclRecv(a->recv, a->count, nccl_type(a->dtype), a->peer, c->comm, stream_for(c, a)));
}

/* NCCL has no barrier: an all-reduce of one float in the scratch word
 * returns on no rank before every rank has entered it. */
bp_status_t nccl_barrier(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  bp_comm_args_t b = *a;
  b.memory = VENDOR_MEMORY;
  ENQUEUE(c, &b, "ncclAllReduce (barrier)", nccl.ncclAllReduce((void *)(uintptr_t)c->gpu.scratch,
                                                                (void *)(uintptr_t)c->gpu.scratch, 1, ncclFloat32,
                                                                ncclSum, c->comm, stream_for(c, a)));
}
