/*
 * mpi_ops.c — the collectives, each started as MPI's non-blocking form and
 * polled against the caller's deadline (mpi_wait.c): a rank that never
 * arrives costs the others the timeout, never a hang. Large all-reduces and
 * reduce-scatters run as the plugin's own ring over non-blocking
 * point-to-point calls instead (ring.c says why).
 */
#include <limits.h>

#include "mpi_lib.h"

MPI_Datatype mpi_datatype(bp_dtype_t dt, bool reduce) {
  switch (dt) {
  case BP_F32: return mpi.t_float;
  case BP_F64: return mpi.t_double;
  case BP_I32: return mpi.t_int32;
  case BP_I64: return mpi.t_int64;
  case BP_U8: return mpi.t_uint8;
  case BP_F16: case BP_BF16: return reduce ? NULL : mpi.t_uint16; /* moved as 16-bit words */
  case BP_I8: case BP_FP8_E4M3: case BP_FP8_E5M2: case BP_Q8_0: case BP_Q4_0: /* quantized: not moved */
  case BP_DTYPE_COUNT: break;
  }
  return NULL;
}

static MPI_Op mpi_op(bp_comm_reduce_op_t op) {
  switch (op) {
  case BP_COMM_SUM: case BP_COMM_AVG: return mpi.op_sum; /* AVG divides after */
  case BP_COMM_PROD: return mpi.op_prod;
  case BP_COMM_MAX: return mpi.op_max;
  case BP_COMM_MIN: return mpi.op_min;
  case BP_COMM_REDUCE_COUNT: break;
  }
  return NULL;
}

/* Checks what every call needs; *out_type is its MPI datatype. */
static bp_status_t prepare(mpi_comm_t *c, const bp_comm_args_t *a, bool reduce, uint64_t scale,
                           MPI_Datatype *out_type) {
  if (c->broken) {
    mpi_host->set_error("the communicator is broken by an earlier failure");
    return BP_ERR_UNAVAILABLE;
  }
  if (a->memory != BP_COMM_MEMORY_HOST && a->memory != c->memory) {
    mpi_host->set_error("this communicator was made for %s memory, not memory kind %d",
                        c->memory == BP_COMM_MEMORY_CUDA ? "CUDA" : "host", (int)a->memory);
    return BP_ERR_UNSUPPORTED;
  }
  if (a->count > INT_MAX / (scale ? scale : 1)) {
    mpi_host->set_error("%llu elements exceed MPI's int count; split the call", (unsigned long long)a->count);
    return BP_ERR_UNSUPPORTED;
  }
  if (!(*out_type = mpi_datatype(a->dtype, reduce)) || (reduce && !mpi_op(a->op))) {
    mpi_host->set_error("MPI does not reduce %s with op %d here", reduce ? "this dtype" : "", (int)a->op);
    return BP_ERR_UNSUPPORTED;
  }
  return BP_OK;
}

/* rc from starting req, then the wait. */
static bp_status_t finish(mpi_comm_t *c, int rc, MPI_Request *req, const bp_comm_args_t *a, const char *fn) {
  if (rc != MPI_SUCCESS) return mpi_failed(c, fn, rc);
  return mpi_wait(c, req, a->timeout_ms, fn);
}

/* AVG: the sum divided by the number of ranks, in place. */
static void divide(void *buf, uint64_t n, bp_dtype_t dt, int size) {
  for (uint64_t i = 0; i < n; i++) switch (dt) {
    case BP_F32: ((float *)buf)[i] /= (float)size; break;
    case BP_F64: ((double *)buf)[i] /= size; break;
    case BP_I32: ((int32_t *)buf)[i] /= size; break;
    case BP_I64: ((int64_t *)buf)[i] /= size; break;
    case BP_U8: ((uint8_t *)buf)[i] = (uint8_t)(((uint8_t *)buf)[i] / size); break;
    default: break;
    }
}

bp_status_t mpi_all_reduce(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  MPI_Datatype t;
  bp_status_t st = prepare(c, a, true, 1, &t);
  if (st != BP_OK) return st;
  if (mpi_ring_wanted(c, a, a->count)) {
    st = mpi_ring(c, a, t, false);
  } else {
    MPI_Request req;
    const void *send = a->send == a->recv ? MPI_IN_PLACE : a->send;
    pthread_mutex_lock(&mpi_lock);
    int rc = mpi.MPI_Iallreduce(send, a->recv, (int)a->count, t, mpi_op(a->op), c->comm, &req);
    pthread_mutex_unlock(&mpi_lock);
    st = finish(c, rc, &req, a, "MPI_Iallreduce");
  }
  if (st == BP_OK && a->op == BP_COMM_AVG) divide(a->recv, a->count, a->dtype, c->size);
  return st;
}

bp_status_t mpi_all_gather(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  MPI_Datatype t;
  bp_status_t st = prepare(c, a, false, (uint64_t)c->size, &t);
  if (st != BP_OK) return st;
  MPI_Request req;
  pthread_mutex_lock(&mpi_lock);
  int rc = mpi.MPI_Iallgather(a->send, (int)a->count, t, a->recv, (int)a->count, t, c->comm, &req);
  pthread_mutex_unlock(&mpi_lock);
  return finish(c, rc, &req, a, "MPI_Iallgather");
}

bp_status_t mpi_reduce_scatter(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  MPI_Datatype t;
  bp_status_t st = prepare(c, a, true, (uint64_t)c->size, &t);
  if (st != BP_OK) return st;
  if (mpi_ring_wanted(c, a, a->count * (uint64_t)c->size)) {
    st = mpi_ring(c, a, t, true);
  } else {
    MPI_Request req;
    pthread_mutex_lock(&mpi_lock);
    int rc = mpi.MPI_Ireduce_scatter_block(a->send, a->recv, (int)a->count, t, mpi_op(a->op), c->comm, &req);
    pthread_mutex_unlock(&mpi_lock);
    st = finish(c, rc, &req, a, "MPI_Ireduce_scatter_block");
  }
  if (st == BP_OK && a->op == BP_COMM_AVG) divide(a->recv, a->count, a->dtype, c->size);
  return st;
}

bp_status_t mpi_broadcast(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  MPI_Datatype t;
  bp_status_t st = prepare(c, a, false, 1, &t);
  if (st != BP_OK) return st;
  MPI_Request req;
  pthread_mutex_lock(&mpi_lock);
  int rc = mpi.MPI_Ibcast(a->recv, (int)a->count, t, a->peer, c->comm, &req);
  pthread_mutex_unlock(&mpi_lock);
  return finish(c, rc, &req, a, "MPI_Ibcast");
}

bp_status_t mpi_reduce(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  MPI_Datatype t;
  bp_status_t st = prepare(c, a, true, 1, &t);
  if (st != BP_OK) return st;
  MPI_Request req;
  bool root = c->rank == a->peer;
  const void *send = root && a->send == a->recv ? MPI_IN_PLACE : a->send;
  pthread_mutex_lock(&mpi_lock);
  int rc = mpi.MPI_Ireduce(send, root ? a->recv : NULL, (int)a->count, t, mpi_op(a->op), a->peer, c->comm, &req);
  pthread_mutex_unlock(&mpi_lock);
  st = finish(c, rc, &req, a, "MPI_Ireduce");
  if (st == BP_OK && root && a->op == BP_COMM_AVG) divide(a->recv, a->count, a->dtype, c->size);
  return st;
}

/* Point-to-point requests can be cancelled: a timed-out one is, and the
 * communicator is still marked broken (the pair's order is lost). */
static bp_status_t p2p(mpi_comm_t *c, const bp_comm_args_t *a, bool sending) {
  MPI_Datatype t;
  bp_status_t st = prepare(c, a, false, 1, &t);
  if (st != BP_OK) return st;
  MPI_Request req;
  pthread_mutex_lock(&mpi_lock);
  int rc = sending ? mpi.MPI_Isend(a->send, (int)a->count, t, a->peer, 0, c->comm, &req)
                   : mpi.MPI_Irecv(a->recv, (int)a->count, t, a->peer, 0, c->comm, &req);
  pthread_mutex_unlock(&mpi_lock);
  st = finish(c, rc, &req, a, sending ? "MPI_Isend" : "MPI_Irecv");
  if (st == BP_ERR_TIMEOUT) {
    pthread_mutex_lock(&mpi_lock);
    if (mpi.MPI_Cancel(&req) == MPI_SUCCESS) mpi.MPI_Request_free(&req);
    pthread_mutex_unlock(&mpi_lock);
  }
  return st;
}

bp_status_t mpi_send(bp_plugin_comm_t *c, const bp_comm_args_t *a) { return p2p(c, a, true); }
bp_status_t mpi_recv(bp_plugin_comm_t *c, const bp_comm_args_t *a) { return p2p(c, a, false); }

bp_status_t mpi_barrier(bp_plugin_comm_t *c, const bp_comm_args_t *a) {
  if (c->broken) {
    mpi_host->set_error("the communicator is broken by an earlier failure");
    return BP_ERR_UNAVAILABLE;
  }
  MPI_Request req;
  pthread_mutex_lock(&mpi_lock);
  int rc = mpi.MPI_Ibarrier(c->comm, &req);
  pthread_mutex_unlock(&mpi_lock);
  return finish(c, rc, &req, a, "MPI_Ibarrier");
}
