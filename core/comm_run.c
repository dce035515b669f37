/*
 * comm_run.c — one communicator call from start to end: validation and
 * queueing on the caller's thread; the call check, ordering with the
 * stream, staging and the plugin call on the communicator's progress thread
 * (comm_queue.c).
 *
 * The call check (docs/scale-out.md, "Failures"): before a collective every
 * rank contributes a small header (call kind, count, dtype, op, root, the
 * communicator's call number, and whether its own arguments were rejected)
 * to an all_gather; before send and recv the pair swap headers. Every rank
 * then compares the same headers, so a mismatched call (another count,
 * dtype, op, root, or another call altogether) fails on every rank with the
 * same message before any data moves, and the communicator stays usable. A
 * rank that never arrives makes the exchange time out on the others: that
 * is the one wait a dead or unreachable rank can cause, and it is bounded by
 * the communicator's timeout. A call one rank rejects (a buffer too small,
 * an unknown dtype) still takes part in the exchange, so the others fail at
 * once instead of waiting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

#define HEADER_MAGIC 0x42504844u /* "BPHD" */

typedef struct header {
  uint32_t magic;
  uint32_t kind;
  uint64_t seq;
  uint64_t count;
  int32_t dtype, op, peer, rank;
  int32_t rejected;
  uint32_t reserved;
} header_t;

static bool reducing(bp__comm_kind_t k) {
  return k == BP__COMM_ALL_REDUCE || k == BP__COMM_REDUCE_SCATTER || k == BP__COMM_REDUCE;
}

static bool rooted(bp__comm_kind_t k) { return k == BP__COMM_BROADCAST || k == BP__COMM_REDUCE; }
static bool p2p(bp__comm_kind_t k) { return k == BP__COMM_SEND || k == BP__COMM_RECV; }

static const char *const reduce_names[BP_COMM_REDUCE_COUNT] = {"sum", "prod", "max", "min", "avg"};

static bp_status_t check_range(const bp__comm_call_t *call, const bp__buffer_t *b, uint64_t off, uint64_t n,
                               const char *what) {
  uint64_t bytes;
  if (bp__mul_overflows(n, bp_dtype_size(call->dtype), &bytes) || off > b->size || bytes > b->size - off)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s: %llu elements of %s at offset %llu do not fit in its "
                    "%llu bytes", call->fn, what, (unsigned long long)n, bp_dtype_name(call->dtype),
                    (unsigned long long)off, (unsigned long long)b->size);
  return BP_OK;
}

static bp_status_t check_scalars(const bp__comm_t *c, const bp__comm_call_t *call) {
  if (!bp__dtype_valid(call->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: dtype %d is not a bp_dtype_t", call->fn, (int)call->dtype);
  /* Counts are in elements and reductions need arithmetic the comm
   * libraries have: the int8, fp8 and block-quantized dtypes are not taken
   * (a block dtype's element has no size of its own). */
  if (!(BP_DTYPE_BIT(call->dtype) & BP_COMM_DTYPES))
    return bp__fail(BP_ERR_UNSUPPORTED, "%s: collectives do not take dtype %s (they take f32, f16, bf16, f64, i32, "
                    "i64 and u8)", call->fn, bp_dtype_name(call->dtype));
  if (reducing(call->kind) && (unsigned)call->op >= BP_COMM_REDUCE_COUNT)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: op %d is not a bp_comm_reduce_op_t", call->fn, (int)call->op);
  if ((rooted(call->kind) || p2p(call->kind)) && (call->peer < 0 || call->peer >= c->size))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s %d is not a rank of this communicator (size %d)", call->fn,
                    p2p(call->kind) ? "peer" : "root", call->peer, c->size);
  if (p2p(call->kind) && call->peer == c->rank)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: peer %d is this rank itself", call->fn, call->peer);
  uint64_t all;
  if (bp__mul_overflows(call->count, (uint64_t)c->size, &all) ||
      bp__mul_overflows(all, bp_dtype_size(call->dtype) ? bp_dtype_size(call->dtype) : 1, &all))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: count %llu times %d ranks overflows", call->fn,
                    (unsigned long long)call->count, c->size);
  return BP_OK;
}

/* Resolves the call's buffers on d and checks every byte it touches. */
static bp_status_t check_buffers(const bp__comm_t *c, bp__device_t *d, const bp__comm_call_t *call,
                                 bp__buffer_t **out_send, bp__buffer_t **out_recv) {
  uint64_t ns, nr;
  bp__comm_extent(c, call, &ns, &nr);
  bool needs_send = call->kind != BP__COMM_RECV && call->kind != BP__COMM_BARRIER;
  bool needs_recv = nr > 0 || (call->kind != BP__COMM_SEND && call->kind != BP__COMM_BARRIER &&
                               call->kind != BP__COMM_REDUCE);
  const char *sname = call->kind == BP__COMM_BROADCAST || p2p(call->kind) ? "buffer" : "send";
  const char *rname = call->kind == BP__COMM_RECV ? "buffer" : "recv";
  bp_status_t st = BP_OK;
  if (needs_send && (st = bp__buffer_on(call->send, d, call->fn, sname, out_send)) == BP_OK)
    st = check_range(call, *out_send, call->send_offset, ns, sname);
  if (st == BP_OK && needs_recv && (st = bp__buffer_on(call->recv, d, call->fn, rname, out_recv)) == BP_OK)
    st = check_range(call, *out_recv, call->recv_offset, nr, rname);
  if (st != BP_OK || !*out_send || *out_send != *out_recv || call->kind == BP__COMM_BROADCAST) return st;
  size_t es = bp_dtype_size(call->dtype);
  uint64_t so = call->send_offset, ro = call->recv_offset, self = (uint64_t)c->rank * call->count * es;
  bool exact = (call->kind == BP__COMM_ALL_REDUCE || call->kind == BP__COMM_REDUCE) && so == ro;
  bool nccl_in_place = (call->kind == BP__COMM_ALL_GATHER && so == ro + self) ||
                       (call->kind == BP__COMM_REDUCE_SCATTER && ro == so + self);
  bool apart = so >= ro + nr * es || ro >= so + ns * es;
  if (!exact && !nccl_in_place && !apart && ns && nr)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: send and recv overlap in one buffer without being the "
                    "in-place form (docs/scale-out.md)", call->fn);
  return BP_OK;
}

/* Everything a rank checks on its own; the message stays set on failure. */
static bp_status_t check_local(const bp__comm_t *c, bp__device_t *d, const bp__comm_call_t *call,
                               bp__buffer_t **out_send, bp__buffer_t **out_recv) {
  if (d->h != c->device_h)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: stream is on device '%s', not on the communicator's device",
                    call->fn, d->entry.info.name);
  bp_status_t st = check_scalars(c, call);
  return st == BP_OK ? check_buffers(c, d, call, out_send, out_recv) : st;
}

static void describe(const header_t *h, char *out, size_t size) {
  bp__comm_kind_t k = (bp__comm_kind_t)h->kind;
  int n = snprintf(out, size, "%s(count %llu, %s", bp__comm_kind_name(k), (unsigned long long)h->count,
                   bp_dtype_name((bp_dtype_t)h->dtype));
  if (n > 0 && (size_t)n < size && reducing(k) && (unsigned)h->op < BP_COMM_REDUCE_COUNT)
    n += snprintf(out + n, size - (size_t)n, ", %s", reduce_names[h->op]);
  if (n > 0 && (size_t)n < size && (rooted(k) || p2p(k)))
    n += snprintf(out + n, size - (size_t)n, ", %s %d", p2p(k) ? "peer" : "root", h->peer);
  if (n > 0 && (size_t)n < size) snprintf(out + n, size - (size_t)n, ")");
}

static bool same_call(const header_t *a, const header_t *b) {
  if (a->magic != HEADER_MAGIC || b->magic != HEADER_MAGIC) return false;
  if (a->kind != b->kind || a->seq != b->seq || a->count != b->count || a->dtype != b->dtype) return false;
  if (reducing((bp__comm_kind_t)a->kind) && a->op != b->op) return false;
  return !rooted((bp__comm_kind_t)a->kind) || a->peer == b->peer;
}

static bp_status_t mismatch(const char *fn, const header_t *a, const header_t *b) {
  char da[128], db[128];
  describe(a, da, sizeof da);
  describe(b, db, sizeof db);
  return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: mismatched call: rank %d made %s as call %llu, rank %d made %s "
                  "as call %llu; nothing was transferred", fn, a->rank, da, (unsigned long long)a->seq,
                  b->rank, db, (unsigned long long)b->seq);
}

/* One transfer of headers (kind: all_gather, send or recv of one header),
 * through host memory, or through a scratch allocation on d for a plugin
 * that takes only device memory (NCCL). */
static bp_status_t move_headers(bp__comm_t *c, bp__device_t *d, bp__comm_kind_t kind, const header_t *send,
                                header_t *recv, int32_t peer, const char *fn) {
  uint64_t nsend = send ? sizeof *send : 0, nrecv = !recv ? 0 : kind == BP__COMM_ALL_GATHER
                                                    ? (uint64_t)c->size * sizeof *recv : sizeof *recv;
  bp_comm_args_t a = {.struct_size = sizeof a, .memory = BP_COMM_MEMORY_HOST, .send = send, .recv = recv,
                      .count = sizeof(header_t), .dtype = BP_U8, .peer = peer, .timeout_ms = c->timeout_ms};
  if (c->plugin->info.memory_kinds & BP_COMM_MEMORY_BIT(BP_COMM_MEMORY_HOST)) return bp__comm_call(c, kind, &a, fn);
  if (!d)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: no valid stream to stage the call check through", fn);
  /* From the device's pool: after the first call, a cached block. */
  uint64_t seg = 0, origin = 0;
  void *block = NULL;
  bp_status_t st = bp__pool_alloc(d, nsend + nrecv, &seg, &origin, &block);
  if (st == BP_OK && nsend) st = bp__call_mem_write(d, NULL, seg, origin, send, nsend);
  a.memory = c->memory;
  a.send = nsend ? (void *)(uintptr_t)(seg + origin) : NULL;
  a.recv = nrecv ? (void *)(uintptr_t)(seg + origin + nsend) : NULL;
  if (st == BP_OK) st = bp__comm_call(c, kind, &a, fn);
  if (st == BP_OK && nrecv) st = bp__call_mem_read(d, NULL, recv, seg, origin + nsend, nrecv);
  if (block) bp__pool_free(d, block);
  return st;
}

static bp_status_t exchange_collective(bp__comm_t *c, bp__device_t *d, const bp__comm_call_t *call,
                                       const header_t *mine) {
  header_t *all = calloc((size_t)c->size, sizeof *all);
  if (!all) return bp__fail(BP_ERR_OUT_OF_MEMORY, "%s: out of memory for the call check", call->fn);
  bp_status_t st = move_headers(c, d, BP__COMM_ALL_GATHER, mine, all, 0, call->fn);
  for (int32_t r = 0; st == BP_OK && r < c->size; r++) {
    if (all[r].rejected) {
      st = bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: rank %d rejected its part of the call (its own error says "
                    "why); nothing was transferred", call->fn, r);
    } else if (!same_call(&all[0], &all[r])) {
      st = mismatch(call->fn, &all[0], &all[r]);
    }
  }
  free(all);
  return st;
}

static bp_status_t exchange_p2p(bp__comm_t *c, bp__device_t *d, const bp__comm_call_t *call, const header_t *mine) {
  header_t theirs = {0};
  bool sender = call->kind == BP__COMM_SEND;
  bp_status_t st = sender ? move_headers(c, d, BP__COMM_SEND, mine, NULL, call->peer, call->fn)
                          : move_headers(c, d, BP__COMM_RECV, NULL, &theirs, call->peer, call->fn);
  if (st == BP_OK)
    st = sender ? move_headers(c, d, BP__COMM_RECV, NULL, &theirs, call->peer, call->fn)
                : move_headers(c, d, BP__COMM_SEND, mine, NULL, call->peer, call->fn);
  if (st != BP_OK) return st;
  if (theirs.rejected)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: rank %d rejected its part of the call; nothing was "
                    "transferred", call->fn, call->peer);
  bool paired = theirs.magic == HEADER_MAGIC && theirs.kind != mine->kind && p2p((bp__comm_kind_t)theirs.kind) &&
                theirs.peer == c->rank && theirs.count == mine->count && theirs.dtype == mine->dtype;
  return paired ? BP_OK : mismatch(call->fn, mine, &theirs);
}

static bp_status_t check_call(bp__comm_t *c, bp__device_t *d, const bp__comm_call_t *call, bool rejected) {
  header_t mine = {.magic = HEADER_MAGIC, .kind = (uint32_t)call->kind, .count = call->count,
                   .dtype = (int32_t)call->dtype, .op = (int32_t)call->op, .peer = call->peer,
                   .rank = c->rank, .rejected = rejected};
  if (p2p(call->kind)) return exchange_p2p(c, d, call, &mine);
  mine.seq = c->seq++;
  return exchange_collective(c, d, call, &mine);
}

/* The call on the backend's own stream (comm ABI 1.1's BP_COMM_ENQUEUE):
 * enqueued after the stream's earlier work, placed so that the work queued
 * after it goes, then waited for (its failure is known only then). Under
 * the stream's lock, so no other work reaches the stream in between. */
static bp_status_t enqueue_native(bp__comm_t *c, bp__comm_job_t *job, void *native, bp_comm_args_t *a) {
  a->stream = native;
  a->flags = BP_COMM_ENQUEUE;
  bp_status_t st = bp__comm_call(c, job->call.kind, a, job->call.fn);
  bp__comm_placed(job); /* failed or not, nothing more is queued for it */
  pthread_mutex_unlock(&job->stream->lock);
  return st == BP_OK ? bp__comm_call_complete(c, job->call.fn) : st;
}

static void args_for(const bp__comm_t *c, const bp__comm_call_t *call, const bp__comm_stage_t *stage,
                     bp_comm_args_t *out) {
  *out = (bp_comm_args_t){.struct_size = sizeof *out, .memory = stage->memory, .send = stage->send,
                          .recv = stage->recv, .count = call->count, .dtype = stage->dtype, .op = call->op,
                          .peer = call->peer, .timeout_ms = c->timeout_ms};
}

/* Moves the data: on the backend's own stream when plugin and backend can
 * (device memory handed as it is), else after waiting on the host for the
 * work queued on the stream before the call. The stream's lock keeps the
 * plugin from seeing the synchronize race an op; nothing queued after the
 * call reaches the stream meanwhile (bp__stream_lock waits until the call
 * is placed). */
static bp_status_t execute(bp__comm_t *c, bp__comm_job_t *job) {
  bp__stream_t *s = job->stream;
  const bp__comm_call_t *call = &job->call;
  bp__device_t *d = s->device;
  bp__comm_stage_t stage;
  bp_comm_args_t a;
  bool exchanged = call->kind == BP__COMM_BARRIER && c->check_calls; /* the exchange was the barrier */
  if (!exchanged && bp__comm_can_enqueue(c) && bp__comm_stage_is_direct(c, call)) {
    bp_status_t st = bp__comm_stage_in(c, d, call, job->send, job->recv, &stage); /* pointers only */
    if (st != BP_OK) return st;
    args_for(c, call, &stage, &a);
    bp__comm_stage_free(&stage);
    pthread_mutex_lock(&s->lock);
    void *native = bp__call_stream_native(d, s->handle);
    if (native) return enqueue_native(c, job, native, &a);
    pthread_mutex_unlock(&s->lock);
  }
  pthread_mutex_lock(&s->lock);
  bp_status_t st = bp__call_stream_sync(d, s->handle);
  pthread_mutex_unlock(&s->lock);
  if (st != BP_OK || exchanged) return st;
  st = bp__comm_stage_in(c, d, call, job->send, job->recv, &stage);
  args_for(c, call, &stage, &a);
  if (st == BP_OK) st = bp__comm_call(c, call->kind, &a, call->fn);
  if (st == BP_OK) st = bp__comm_stage_out(c, d, call, job->recv, &stage);
  bp__comm_stage_free(&stage);
  return st;
}

static void mark_broken(bp__comm_t *c, bp_status_t st) {
  if (st != BP_ERR_TIMEOUT && st != BP_ERR_UNAVAILABLE && st != BP_ERR_DEVICE_LOST) return;
  pthread_mutex_lock(&c->lock);
  if (!c->broken) snprintf(c->broken_why, sizeof c->broken_why, "%s", bp_last_error());
  c->broken = true;
  pthread_mutex_unlock(&c->lock);
}

static bp_status_t check_broken(bp__comm_t *c, const char *fn) {
  pthread_mutex_lock(&c->lock);
  bool broken = c->broken;
  char why[sizeof c->broken_why];
  memcpy(why, c->broken_why, sizeof why);
  pthread_mutex_unlock(&c->lock);
  if (!broken) return BP_OK;
  return bp__fail(BP_ERR_UNAVAILABLE, "%s: the communicator is broken by an earlier failure (%s); destroy it",
                  fn, why);
}

bp_status_t bp__comm_run_job(bp__comm_t *c, bp__comm_job_t *job) {
  bp_status_t st = check_broken(c, job->call.fn);
  if (st != BP_OK) return st;
  if (c->check_calls) st = check_call(c, job->device, &job->call, job->rejected);
  mark_broken(c, st);
  if (st != BP_OK || job->rejected) return st; /* a rejected call's caller has its own error */
  st = execute(c, job);
  mark_broken(c, st);
  return st;
}

/* The job for a call: its operands' records copied (the progress thread
 * runs after the caller has left the stream's gate), send and recv still
 * one record when they are one buffer. */
static bp__comm_job_t *job_for(const bp__comm_call_t *call, bp__buffer_t *send, bp__buffer_t *recv) {
  bp__comm_job_t *job = calloc(1, sizeof *job);
  if (!job) return NULL;
  job->call = *call;
  if (send) job->bufs[0] = *send, job->send = &job->bufs[0];
  if (recv && recv == send) job->recv = job->send;
  else if (recv) job->bufs[1] = *recv, job->recv = &job->bufs[1];
  return job;
}

/* Queues an accepted call on c and s, under s's lock so the call takes its
 * place in the stream's order; a capturing stream refuses it. */
static bp_status_t enqueue_on_stream(bp__comm_t *c, bp__stream_t *s, bp__comm_job_t *job) {
  pthread_mutex_lock(&s->lock);
  if (s->capture) {
    pthread_mutex_unlock(&s->lock);
    return bp__fail(BP_ERR_UNSUPPORTED, "%s: the stream is capturing a graph; collectives cannot be captured",
                    job->call.fn);
  }
  job->stream = s;
  job->device = s->device;
  bp__comm_enqueue(c, job);
  pthread_mutex_unlock(&s->lock);
  return BP_OK;
}

/* A call this rank rejected still takes part in the call check, so that
 * the other ranks fail at once instead of waiting for it. */
static void enqueue_rejected(bp__comm_t *c, bp__stream_t *s, const bp__comm_call_t *call) {
  bp__comm_job_t *job = c->check_calls ? job_for(call, NULL, NULL) : NULL;
  if (!job) return;
  job->rejected = true;
  job->device = s ? s->device : NULL;
  bp__comm_enqueue(c, job);
}

bp_status_t bp__comm_run(bp_comm_t *comm, bp_stream_t *stream, const bp__comm_call_t *call) {
  bp__clear_error();
  bp__comm_t *c = bp__handle_get(comm, BP__H_COMM);
  if (!c)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: comm is %s", call->fn,
                    comm ? "not a live communicator (destroyed or foreign)" : "NULL");
  bp_status_t st = check_broken(c, call->fn);
  if (st != BP_OK) return st;
  void *obj = NULL;
  bp__gate_t *gate = NULL;
  bp__buffer_t *send = NULL, *recv = NULL;
  st = bp__handle_enter(stream, BP__H_STREAM, call->fn, "stream", &obj, &gate);
  bp__stream_t *s = obj;
  if (st == BP_OK) st = check_local(c, s->device, call, &send, &recv);
  bp__comm_job_t *job = NULL;
  if (st == BP_OK && !(job = job_for(call, send, recv)))
    st = bp__fail(BP_ERR_OUT_OF_MEMORY, "%s: out of memory for the queued call", call->fn);
  if (st == BP_OK && (st = enqueue_on_stream(c, s, job)) != BP_OK) free(job);
  if (st != BP_OK) {
    char why[512];
    snprintf(why, sizeof why, "%s", bp_last_error());
    enqueue_rejected(c, s, call);
    st = bp__fail(st, "%s", why);
  }
  bp__gate_leave(gate);
  return st;
}
