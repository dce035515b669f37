/*
 * ring.c — all-reduce and reduce-scatter of large messages as a ring over
 * MPI_Isend / MPI_Irecv (docs/scale-out.md, "bp comm-bench").
 *
 * Why not MPI_Iallreduce: Open MPI's non-blocking collectives (libnbc) run
 * an in-place all-reduce, or one over fewer than 4 ranks, as a binomial
 * reduce followed by a broadcast, which moves the whole message twice, one
 * direction at a time; the blocking MPI_Allreduce, which would run a ring,
 * cannot be bounded by a timeout. This is that ring, non-blocking: the
 * message is cut into one block per rank; in p - 1 reduce-scatter steps
 * each rank sends a block to its right neighbour and reduces the one that
 * arrives from its left, after which rank r holds block r reduced over all
 * ranks; for an all-reduce, p - 1 all-gather steps then pass the reduced
 * blocks around. Each rank sends and receives (p - 1) / p of the message
 * per phase, the least any algorithm can.
 *
 * Blocks are cut into segments, and a segment moves on as soon as it has
 * arrived and been reduced, so reductions overlap the transfers and the
 * steps overlap each other. A block longer than one round (ROUND_SEGMENTS
 * segments) is run as several rounds one after another, which bounds the
 * scratch memory. Op (t, j) is step t's j-th segment of the round; its tag
 * names both, since segments are sent on in the order they arrived, not in
 * j's (MPI keeps the order only among messages with one tag).
 *
 * Scratch: reduce-scatter step t receives segment j into slot (t % 2, j),
 * accumulates the send buffer's block into it, and step t + 1 sends it on
 * from there (the last reduce-scatter step reduces into recv instead).
 * Step t + 2 posts its receive into the slot only once that send is done.
 * No rank waits on another forever: the lowest op not yet done anywhere has
 * its send posted (it waits only on lower ops) and its receive postable
 * (its slot's send matched a lower receive, already done), so it completes.
 *
 * In place (send == recv), an all-gather receive overwrites a block this
 * rank still reads; it is posted only after those reads: the step-0 send
 * of the block, or the reduce-scatter step that reduced it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_lib.h"

#define ROUND_SEGMENTS 4
#define MAX_ROUNDS 64
/* Tags: RING_TAG + t x ROUND_SEGMENTS + j for op (t, j), above the tag 0 of
 * bp_comm_send / recv, and at most MPI's smallest allowed upper bound. */
#define RING_TAG 1
#define RING_TAG_MAX 32767

enum { OP_IDLE, OP_POSTED, OP_DONE };

typedef struct ring {
  mpi_comm_t *c;
  const bp_comm_args_t *a;
  MPI_Datatype type;
  size_t es;
  int p, r, rs_steps, steps;
  bool scatter, in_place;
  uint64_t base, rem;   /* all-reduce blocks: base elements, the first rem one more */
  uint64_t maxlen, seg; /* longest block; elements per segment */
  uint64_t slot_elems;  /* a scratch slot: a segment, or the block when shorter */
  int slots;            /* slots per step parity: segments per round, at most */
  uint64_t first;       /* the round's first element within each block */
  int nseg, nops;       /* segments this round; ops = steps x nseg per direction */
  int next_recv;        /* receives are posted in op order */
  MPI_Request *req;     /* nops receives, then nops sends */
  uint8_t *state;
  int *done_idx;
} ring_t;

/* Bytes per element of the dtypes the plugin reduces (mpi_datatype's). */
static size_t elem_size(bp_dtype_t dt) {
  return dt == BP_F64 || dt == BP_I64 ? 8 : dt == BP_F32 || dt == BP_I32 ? 4 : 1;
}

static int mod(int x, int p) {
  return ((x % p) + p) % p;
}

/* The blocks step t sends and receives (reduce-scatter first, so that rank
 * r ends it holding block r; then the all-gather passes block r on). */
static int send_block(const ring_t *g, int t) {
  return t < g->rs_steps ? mod(g->r - 1 - t, g->p) : mod(g->r - (t - g->rs_steps), g->p);
}
static int recv_block(const ring_t *g, int t) {
  return t < g->rs_steps ? mod(g->r - 2 - t, g->p) : mod(g->r - 1 - (t - g->rs_steps), g->p);
}

static uint64_t block_off(const ring_t *g, int b) {
  return g->scatter ? (uint64_t)b * g->a->count
                    : (uint64_t)b * g->base + ((uint64_t)b < g->rem ? (uint64_t)b : g->rem);
}
static uint64_t block_len(const ring_t *g, int b) {
  return g->scatter ? g->a->count : g->base + ((uint64_t)b < g->rem);
}

/* Segment j of block b in this round: its first element within the block
 * and its length (0 where a shorter block has run out). */
static uint64_t seg_len(const ring_t *g, int b, int j, uint64_t *out_at) {
  uint64_t at = g->first + (uint64_t)j * g->seg, len = block_len(g, b);
  *out_at = at;
  return at >= len ? 0 : len - at < g->seg ? len - at : g->seg;
}

static char *send_at(const ring_t *g, int b, uint64_t at) {
  return (char *)g->a->send + (block_off(g, b) + at) * g->es;
}
/* Where the reduced block b lands: its place in recv (reduce-scatter: recv
 * holds block r only). */
static char *recv_at(const ring_t *g, int b, uint64_t at) {
  return (char *)g->a->recv + ((g->scatter ? 0 : block_off(g, b)) + at) * g->es;
}
static char *slot(const ring_t *g, int t, int j) {
  return g->c->ring_scratch +
         ((size_t)(t % 2) * (size_t)g->slots + (size_t)j) * g->slot_elems * g->es;
}

static int recv_op(const ring_t *g, int t, int j) {
  return t * g->nseg + j;
}
static int send_op(const ring_t *g, int t, int j) {
  return g->nops + t * g->nseg + j;
}

static bp_status_t post(ring_t *g, int op, bool sending, void *buf, uint64_t n, int peer, int t,
                        int j) {
  int tag = RING_TAG + t * ROUND_SEGMENTS + j;
  pthread_mutex_lock(&mpi_lock);
  int rc = sending ? mpi.MPI_Isend(buf, (int)n, g->type, peer, tag, g->c->comm, &g->req[op])
                   : mpi.MPI_Irecv(buf, (int)n, g->type, peer, tag, g->c->comm, &g->req[op]);
  pthread_mutex_unlock(&mpi_lock);
  if (rc != MPI_SUCCESS) return mpi_failed(g->c, sending ? "MPI_Isend" : "MPI_Irecv", rc);
  g->state[op] = OP_POSTED;
  return BP_OK;
}

static bp_status_t post_send(ring_t *g, int t, int j) {
  int b = send_block(g, t);
  uint64_t at, n = seg_len(g, b, j, &at);
  void *src = t == 0 ? send_at(g, b, at) : t < g->rs_steps ? slot(g, t - 1, j) : recv_at(g, b, at);
  return post(g, send_op(g, t, j), true, src, n, mod(g->r + 1, g->p), t, j);
}

/* Whether receive (t, j) may be posted: its slot is free, or (in place)
 * the block's earlier reads are done. */
static bool recv_ready(const ring_t *g, int t, int j) {
  if (t < g->rs_steps) return t < 2 || g->state[send_op(g, t - 1, j)] == OP_DONE;
  if (!g->in_place) return true;
  int ag = t - g->rs_steps;
  return ag == 0 ? g->state[send_op(g, 0, j)] == OP_DONE
                 : g->state[recv_op(g, ag - 1, j)] == OP_DONE;
}

static bp_status_t post_recvs(ring_t *g) {
  for (; g->next_recv < g->nops; g->next_recv++) {
    int t = g->next_recv / g->nseg, j = g->next_recv % g->nseg, b = recv_block(g, t);
    if (!recv_ready(g, t, j)) break;
    uint64_t at, n = seg_len(g, b, j, &at);
    void *dst = t < g->rs_steps ? slot(g, t, j) : recv_at(g, b, at);
    bp_status_t st = post(g, g->next_recv, false, dst, n, mod(g->r - 1, g->p), t, j);
    if (st != BP_OK) return st;
  }
  return BP_OK;
}

/* Receive (t, j) arrived: reduce it (reduce-scatter), send it on. */
static bp_status_t received(ring_t *g, int t, int j) {
  const bp_comm_args_t *a = g->a;
  if (t < g->rs_steps) {
    int b = recv_block(g, t);
    uint64_t at, n = seg_len(g, b, j, &at);
    bool last = t == g->rs_steps - 1;
    char *dst = last ? recv_at(g, b, at) : slot(g, t, j);
    const char *mine = send_at(g, b, at);
    bool ok = !last         ? mpi_reduce_local(dst, mine, NULL, n, a->dtype, a->op)
              : g->in_place ? mpi_reduce_local(dst, slot(g, t, j), NULL, n, a->dtype, a->op)
                            : mpi_reduce_local(dst, mine, slot(g, t, j), n, a->dtype, a->op);
    if (!ok) {
      mpi_host->set_error("the ring cannot reduce dtype %d with op %d", (int)a->dtype, (int)a->op);
      return BP_ERR_UNSUPPORTED;
    }
  }
  return t + 1 < g->steps ? post_send(g, t + 1, j) : BP_OK;
}

/* After a failure: nothing posted may later write into memory the caller
 * gets back (receives are cancelled) or keep a request alive. */
static void abandon(ring_t *g) {
  pthread_mutex_lock(&mpi_lock);
  for (int op = 0; op < 2 * g->nops; op++) {
    if (g->state[op] != OP_POSTED) continue;
    if (op < g->nops) mpi.MPI_Cancel(&g->req[op]);
    mpi.MPI_Request_free(&g->req[op]);
  }
  pthread_mutex_unlock(&mpi_lock);
}

/* The count ops Testsome found done. Finished sends free their slots and
 * blocks first, so that the receives waiting on them are posted before the
 * reductions, and the peer's next segments need not wait for those; a
 * receive counts as done only once reduced, since an in-place all-gather
 * receive may overwrite what its reduction reads. */
static bp_status_t settle(ring_t *g, int count) {
  for (int i = 0; i < count; i++)
    if (g->done_idx[i] >= g->nops) g->state[g->done_idx[i]] = OP_DONE;
  bp_status_t st = post_recvs(g);
  for (int i = 0; i < count && st == BP_OK; i++) {
    int op = g->done_idx[i];
    if (op >= g->nops) continue;
    g->state[op] = OP_DONE;
    st = received(g, op / g->nseg, op % g->nseg);
  }
  return st == BP_OK ? post_recvs(g) : st;
}

static bp_status_t run_round(ring_t *g, double deadline_ms) {
  for (int op = 0; op < 2 * g->nops; op++) g->req[op] = mpi.request_null, g->state[op] = OP_IDLE;
  g->next_recv = 0;
  /* Receives first: a message that finds its receive posted lands in
   * place, where one that arrives first waits, part of it buffered. */
  bp_status_t st = post_recvs(g);
  for (int j = 0; j < g->nseg && st == BP_OK; j++) st = post_send(g, 0, j);
  mpi_backoff_t wait = {0};
  for (int left = 2 * g->nops; st == BP_OK && left > 0;) {
    int count = 0;
    pthread_mutex_lock(&mpi_lock);
    int rc = mpi.MPI_Testsome(2 * g->nops, g->req, &count, g->done_idx, MPI_STATUSES_IGNORE);
    pthread_mutex_unlock(&mpi_lock);
    if (rc != MPI_SUCCESS) return mpi_failed(g->c, "MPI_Testsome", rc);
    if (count == MPI_UNDEFINED || count == 0) {
      if (g->a->timeout_ms && mpi_now_ms() > deadline_ms)
        return mpi_timed_out(g->c, g->scatter ? "ring reduce-scatter" : "ring all-reduce",
                             g->a->timeout_ms);
      mpi_backoff(&wait);
      continue;
    }
    wait = (mpi_backoff_t){0}; /* moving: poll at full rate again */
    left -= count;
    st = settle(g, count);
  }
  return st;
}

/* Scratch for 2 x slots slots, kept by the communicator. */
static bp_status_t reserve_scratch(mpi_comm_t *c, size_t bytes) {
  if (c->ring_scratch_size >= bytes) return BP_OK;
  char *p = malloc(bytes ? bytes : 1);
  if (!p) {
    mpi_host->set_error("out of memory for the ring's %zu bytes of scratch", bytes);
    return BP_ERR_OUT_OF_MEMORY;
  }
  free(c->ring_scratch);
  c->ring_scratch = p;
  c->ring_scratch_size = bytes;
  return BP_OK;
}

static void geometry(ring_t *g) {
  uint64_t n = g->a->count;
  g->base = g->scatter ? n : n / (uint64_t)g->p;
  g->rem = g->scatter ? 0 : n % (uint64_t)g->p;
  g->maxlen = g->base + (g->rem > 0);
  uint64_t seg = g->c->ring_segment_bytes / g->es, cap = ROUND_SEGMENTS * MAX_ROUNDS;
  if (seg == 0) seg = 1;
  if (seg < (g->maxlen + cap - 1) / cap)
    seg = (g->maxlen + cap - 1) / cap; /* at most MAX_ROUNDS rounds */
  g->seg = seg;
  g->slot_elems = g->maxlen < seg ? (g->maxlen ? g->maxlen : 1) : seg;
  uint64_t segs = (g->maxlen + seg - 1) / seg;
  g->slots = segs < ROUND_SEGMENTS ? (segs ? (int)segs : 1) : ROUND_SEGMENTS;
}

bool mpi_ring_wanted(const mpi_comm_t *c, const bp_comm_args_t *a, uint64_t elements) {
  bool tags_fit = RING_TAG + 2 * (c->size - 1) * ROUND_SEGMENTS <= RING_TAG_MAX;
  return c->size > 1 && tags_fit && a->memory == BP_COMM_MEMORY_HOST &&
         c->ring_min_bytes != UINT64_MAX && elements * elem_size(a->dtype) >= c->ring_min_bytes;
}

bp_status_t mpi_ring(mpi_comm_t *c, const bp_comm_args_t *a, MPI_Datatype type, bool scatter) {
  ring_t g = {.c = c,
              .a = a,
              .type = type,
              .es = elem_size(a->dtype),
              .p = c->size,
              .r = c->rank,
              .rs_steps = c->size - 1,
              .scatter = scatter,
              .in_place = a->send == a->recv};
  g.steps = scatter ? g.rs_steps : 2 * g.rs_steps;
  geometry(&g);
  size_t ops = (size_t)g.steps * ROUND_SEGMENTS;
  bp_status_t st = reserve_scratch(c, 2 * (size_t)g.slots * g.slot_elems * g.es);
  g.req = st == BP_OK ? malloc(2 * ops * sizeof *g.req) : NULL;
  g.state = g.req ? malloc(2 * ops) : NULL;
  g.done_idx = g.state ? malloc(2 * ops * sizeof *g.done_idx) : NULL;
  if (st == BP_OK && !g.done_idx) {
    mpi_host->set_error("out of memory for the ring's requests");
    st = BP_ERR_OUT_OF_MEMORY;
  }
  double deadline = mpi_now_ms() + a->timeout_ms;
  for (g.first = 0; st == BP_OK && (g.first == 0 || g.first < g.maxlen);) {
    uint64_t left = g.maxlen - g.first, round = (uint64_t)ROUND_SEGMENTS * g.seg;
    uint64_t len = left < round ? left : round;
    g.nseg = len ? (int)((len + g.seg - 1) / g.seg) : 1;
    g.nops = g.steps * g.nseg;
    st = run_round(&g, deadline);
    if (st != BP_OK) {
      abandon(&g);
      c->broken = true; /* the ranks' messages no longer pair up (already so after a timeout) */
      mpi_lib_note_broken();
    }
    g.first += round;
  }
  free(g.done_idx);
  free(g.state);
  free(g.req);
  return st;
}
