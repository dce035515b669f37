/*
 * comm.c — communicators (bp_comm_*, docs/scale-out.md): creating one over
 * a comm plugin for a device, its accessors, and the public collective
 * calls, each of which describes itself as a bp__comm_call_t and hands it to
 * comm_run.c. A communicator carries no device gate: it outlives nothing
 * but its plugin, and every call on it enters the gate of the stream it is
 * given, whose device must be the communicator's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

#define DEFAULT_TIMEOUT_MS 60000u

static uint32_t timeout_from(const bp_comm_options_t *o) {
  if (o && o->timeout_ms) return o->timeout_ms;
  const char *env = bp__getenv("BACKPLANE_COMM_TIMEOUT_MS");
  char *end;
  unsigned long v = env ? strtoul(env, &end, 10) : 0;
  if (env && (*end || v == 0 || v > UINT32_MAX)) {
    bp__log(BP_LOG_WARN, BP__LOG_API, "BACKPLANE_COMM_TIMEOUT_MS='%s' is not a positive number of "
            "milliseconds; using %u", env, DEFAULT_TIMEOUT_MS);
    v = 0;
  }
  return v ? (uint32_t)v : DEFAULT_TIMEOUT_MS;
}

static bp_status_t check_options(const bp_comm_options_t *o) {
  if (!o) return BP_OK;
  if (o->struct_size < offsetof(bp_comm_options_t, no_call_check) + sizeof(bool))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_comm_create: options->struct_size %u is smaller than "
                    "bp_comm_options_t (%zu)", o->struct_size, sizeof *o);
  if (o->size < 0 || (o->size > 0 && (o->rank < 0 || o->rank >= o->size)))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_comm_create: options rank %d, size %d: need size 0 "
                    "(from the launcher) or 0 <= rank < size", o->rank, o->size);
  return BP_OK;
}

/* The device's own memory kind, from the DLPack device type its plugin
 * reports (kDLCUDA 2, kDLROCM 10); host for everything else. */
static bp_comm_memory_t native_memory(const bp__device_t *d) {
  if (d->entry.info.flags & BP_DEVICE_FLAG_HOST_MEMORY) return BP_COMM_MEMORY_HOST;
  if (d->entry.info.dlpack_device_type == 2) return BP_COMM_MEMORY_CUDA;
  if (d->entry.info.dlpack_device_type == 10) return BP_COMM_MEMORY_ROCM;
  return BP_COMM_MEMORY_HOST;
}

/* The memory the plugin will be handed for d's buffers: the device's own
 * when the plugin takes it (NCCL and CUDA memory), else host memory,
 * staged by comm_stage.c when the device's is not host memory. */
static bp_comm_memory_t memory_for(const bp__device_t *d, const bp__comm_plugin_t *p) {
  bp_comm_memory_t native = native_memory(d);
  return p->info.memory_kinds & BP_COMM_MEMORY_BIT(native) ? native : BP_COMM_MEMORY_HOST;
}

static bp_status_t join_once(bp__comm_t *c, const bp_comm_options_t *o, bp__device_t *d) {
  bp_comm_config_t cfg = {.struct_size = sizeof cfg,
                          .size = o ? o->size : 0,
                          .rank = o ? o->rank : 0,
                          .bootstrap = o ? o->bootstrap : NULL,
                          .timeout_ms = c->timeout_ms,
                          .memory = c->memory,
                          .device_ordinal = (int32_t)d->entry.backend_index};
  bp_status_t st = bp__comm_call_create(c->plugin, &cfg, &c->handle, &c->rank, &c->size);
  if (st != BP_OK) return st;
  if (c->size < 1 || c->rank < 0 || c->rank >= c->size) {
    bp__comm_call_destroy(c->plugin, c->handle);
    c->handle = NULL;
    return bp__fail(BP_ERR_INTERNAL, "bp_comm_create: comm plugin '%s' gave rank %d of %d",
                    c->plugin->report.name, c->rank, c->size);
  }
  return BP_OK;
}

static const char *memory_name(bp_comm_memory_t m) {
  return m == BP_COMM_MEMORY_CUDA ? "CUDA" : m == BP_COMM_MEMORY_ROCM ? "ROCm" : "host";
}

/* Joins over the device's own memory where the plugin claims it; a plugin
 * that finds only once initialised that it cannot take it (an MPI that is
 * not CUDA-aware) refuses with BP_ERR_UNSUPPORTED (comm-api.h rule 10), and
 * the communicator is made over host memory, staged. c->path says which. */
static bp_status_t join(bp__comm_t *c, const bp_comm_options_t *o, bp__device_t *d) {
  bp_comm_memory_t native = native_memory(d);
  bp_status_t st = join_once(c, o, d);
  bool host_ok = c->plugin->info.memory_kinds & BP_COMM_MEMORY_BIT(BP_COMM_MEMORY_HOST);
  char why[300] = "";
  if (st == BP_ERR_UNSUPPORTED && c->memory != BP_COMM_MEMORY_HOST && host_ok) {
    const char *said = bp_last_error(), *fn = "bp_comm_create: ";
    snprintf(why, sizeof why, "%s", strncmp(said, fn, strlen(fn)) ? said : said + strlen(fn));
    bp__log(BP_LOG_INFO, BP__LOG_API, "%s; staging through host memory instead", why);
    c->memory = BP_COMM_MEMORY_HOST;
    bp__clear_error();
    st = join_once(c, o, d);
  }
  if (st != BP_OK) return st;
  if (native == BP_COMM_MEMORY_HOST)
    snprintf(c->path, sizeof c->path, "direct: the device's memory is host memory");
  else if (c->memory == native)
    snprintf(c->path, sizeof c->path, "direct: %s device pointers handed to comm plugin '%s'%s",
             memory_name(native), c->plugin->report.name,
             bp__comm_can_enqueue(c) && bp__plugin_has_stream_native(d)
                 ? ", the calls enqueued on the backend's own streams" : "");
  else if (why[0])
    snprintf(c->path, sizeof c->path, "staged through host memory: %s", why);
  else
    snprintf(c->path, sizeof c->path, "staged through host memory: comm plugin '%s' does not take %s memory",
             c->plugin->report.name, memory_name(native));
  return BP_OK;
}

bp_status_t bp_comm_create(bp_device_t *device, const bp_comm_options_t *o, bp_comm_t **out_comm) {
  bp__clear_error();
  if (!out_comm) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_comm_create: out_comm is NULL");
  *out_comm = NULL;
  BP__ENTER(bp__device_t, d, device, BP__H_DEVICE, "bp_comm_create", "device");
  bp_status_t st = check_options(o);
  if (st != BP_OK) return st;
  bp__comm_set_t *set = bp__comm_set(d->context, "bp_comm_create");
  if (!set) return BP_ERR_OUT_OF_MEMORY;
  bp__comm_t *c = calloc(1, sizeof *c);
  if (!c) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_comm_create: out of memory");
  pthread_mutex_lock(&set->lock);
  st = bp__comm_pick(set, o ? o->plugin : NULL, native_memory(d), "bp_comm_create", &c->plugin);
  pthread_mutex_unlock(&set->lock);
  c->context = d->context;
  c->device_h = device;
  c->memory = c->plugin ? memory_for(d, c->plugin) : BP_COMM_MEMORY_HOST;
  c->timeout_ms = timeout_from(o);
  c->check_calls = !(o && o->no_call_check);
  pthread_mutex_init(&c->lock, NULL);
  if (st == BP_OK) st = join(c, o, d);
  if (st == BP_OK && (st = bp__comm_progress_start(c)) != BP_OK) bp__comm_call_destroy(c->plugin, c->handle);
  if (st == BP_OK && !(c->h = bp__handle_add(c, BP__H_COMM, NULL))) {
    bp__comm_progress_stop(c);
    bp__comm_call_destroy(c->plugin, c->handle);
    st = bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_comm_create: no handle left for the communicator");
  }
  if (st != BP_OK) {
    pthread_mutex_destroy(&c->lock);
    free(c);
    return st;
  }
  pthread_mutex_lock(&set->lock);
  c->next = set->comms;
  set->comms = c;
  pthread_mutex_unlock(&set->lock);
  bp__log(BP_LOG_INFO, BP__LOG_API, "bp_comm_create: rank %d of %d over comm plugin '%s'", c->rank, c->size,
          c->plugin->report.name);
  *out_comm = c->h;
  return BP_OK;
}

void bp_comm_destroy(bp_comm_t *comm) {
  bp__comm_t *c = bp__handle_get(comm, BP__H_COMM);
  if (!c || !bp__handle_remove(comm)) return;
  bp__comm_set_t *set = c->context->comm_set;
  pthread_mutex_lock(&set->lock);
  for (bp__comm_t **pp = &set->comms; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  pthread_mutex_unlock(&set->lock);
  bp__comm_progress_stop(c); /* after the calls still queued on it */
  bp__comm_call_destroy(c->plugin, c->handle);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

static bp_status_t comm_get(const bp_comm_t *comm, const char *fn, bp__comm_t **out) {
  *out = bp__handle_get(comm, BP__H_COMM);
  if (*out) return BP_OK;
  return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: comm is %s", fn,
                  comm ? "not a live communicator (destroyed or foreign)" : "NULL");
}

bp_status_t bp_comm_rank(const bp_comm_t *comm, int32_t *out_rank) {
  bp__clear_error();
  if (!out_rank) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_comm_rank: out_rank is NULL");
  *out_rank = 0;
  bp__comm_t *c;
  bp_status_t st = comm_get(comm, "bp_comm_rank", &c);
  if (st == BP_OK) *out_rank = c->rank;
  return st;
}

bp_status_t bp_comm_size(const bp_comm_t *comm, int32_t *out_size) {
  bp__clear_error();
  if (!out_size) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_comm_size: out_size is NULL");
  *out_size = 0;
  bp__comm_t *c;
  bp_status_t st = comm_get(comm, "bp_comm_size", &c);
  if (st == BP_OK) *out_size = c->size;
  return st;
}

const char *bp_comm_plugin_name(const bp_comm_t *comm) {
  bp__comm_t *c = bp__handle_get(comm, BP__H_COMM);
  return c ? c->plugin->report.name : "";
}

const char *bp_comm_data_path(const bp_comm_t *comm) {
  bp__comm_t *c = bp__handle_get(comm, BP__H_COMM);
  return c ? c->path : "";
}

bp_status_t bp_comm_all_reduce(bp_comm_t *comm, bp_stream_t *stream, bp_buffer_t *send, uint64_t send_offset,
                               bp_buffer_t *recv, uint64_t recv_offset, uint64_t count, bp_dtype_t dtype,
                               bp_comm_reduce_op_t op) {
  bp__comm_call_t call = {"bp_comm_all_reduce", BP__COMM_ALL_REDUCE, send, recv, send_offset, recv_offset,
                          count, dtype, op, 0};
  return bp__comm_run(comm, stream, &call);
}

bp_status_t bp_comm_all_gather(bp_comm_t *comm, bp_stream_t *stream, bp_buffer_t *send, uint64_t send_offset,
                               bp_buffer_t *recv, uint64_t recv_offset, uint64_t count, bp_dtype_t dtype) {
  bp__comm_call_t call = {"bp_comm_all_gather", BP__COMM_ALL_GATHER, send, recv, send_offset, recv_offset,
                          count, dtype, BP_COMM_SUM, 0};
  return bp__comm_run(comm, stream, &call);
}

bp_status_t bp_comm_reduce_scatter(bp_comm_t *comm, bp_stream_t *stream, bp_buffer_t *send,
                                   uint64_t send_offset, bp_buffer_t *recv, uint64_t recv_offset,
                                   uint64_t count, bp_dtype_t dtype, bp_comm_reduce_op_t op) {
  bp__comm_call_t call = {"bp_comm_reduce_scatter", BP__COMM_REDUCE_SCATTER, send, recv, send_offset,
                          recv_offset, count, dtype, op, 0};
  return bp__comm_run(comm, stream, &call);
}

bp_status_t bp_comm_broadcast(bp_comm_t *comm, bp_stream_t *stream, bp_buffer_t *buffer, uint64_t offset,
                              uint64_t count, bp_dtype_t dtype, int32_t root) {
  bp__comm_call_t call = {"bp_comm_broadcast", BP__COMM_BROADCAST, buffer, buffer, offset, offset,
                          count, dtype, BP_COMM_SUM, root};
  return bp__comm_run(comm, stream, &call);
}

bp_status_t bp_comm_reduce(bp_comm_t *comm, bp_stream_t *stream, bp_buffer_t *send, uint64_t send_offset,
                           bp_buffer_t *recv, uint64_t recv_offset, uint64_t count, bp_dtype_t dtype,
                           bp_comm_reduce_op_t op, int32_t root) {
  bp__comm_call_t call = {"bp_comm_reduce", BP__COMM_REDUCE, send, recv, send_offset, recv_offset,
                          count, dtype, op, root};
  return bp__comm_run(comm, stream, &call);
}

bp_status_t bp_comm_send(bp_comm_t *comm, bp_stream_t *stream, bp_buffer_t *buffer, uint64_t offset,
                         uint64_t count, bp_dtype_t dtype, int32_t peer) {
  bp__comm_call_t call = {"bp_comm_send", BP__COMM_SEND, buffer, NULL, offset, 0,
                          count, dtype, BP_COMM_SUM, peer};
  return bp__comm_run(comm, stream, &call);
}

bp_status_t bp_comm_recv(bp_comm_t *comm, bp_stream_t *stream, bp_buffer_t *buffer, uint64_t offset,
                         uint64_t count, bp_dtype_t dtype, int32_t peer) {
  bp__comm_call_t call = {"bp_comm_recv", BP__COMM_RECV, NULL, buffer, 0, offset,
                          count, dtype, BP_COMM_SUM, peer};
  return bp__comm_run(comm, stream, &call);
}

bp_status_t bp_comm_barrier(bp_comm_t *comm, bp_stream_t *stream) {
  bp__comm_call_t call = {"bp_comm_barrier", BP__COMM_BARRIER, NULL, NULL, 0, 0, 0, BP_U8, BP_COMM_SUM, 0};
  return bp__comm_run(comm, stream, &call);
}
