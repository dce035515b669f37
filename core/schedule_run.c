/*
 * schedule_run.c — running a scheduled graph (docs/runtime.md "Graph
 * scheduler"), and counting, without running it, what a launch copies.
 *
 * The recorded tensors point into the application's buffers on the graph's
 * device. Their byte ranges, overlapping ones merged, are the "regions"
 * (distinct buffers never overlap, so a region lies in one buffer). Each
 * region gets a home: the device where most of the uses of its tensors run
 * (on a tie the graph's own, else the better ranked). When the home is not the graph's device,
 * the region's working copy lives there, filled from the buffer only where
 * a call reads it; a call placed on a device that is not its region's home
 * gets a copy there for its run, filled from the working copy (or the
 * buffer) with the byte ranges its calls read and the run does not yet
 * hold, whose changed ranges go back when the run ends. At the end of the
 * launch the working copies' changed ranges go back to the buffers, so the
 * application sees its results there when bp_graph_launch returns.
 *
 * Runs are synchronous with each other: a run's stream is waited for before
 * its copies leave. Every copy goes through bp__copy_across. A plugin that
 * refuses a call when it runs (BP_ERR_UNSUPPORTED, before any work) has its
 * device struck off for that call; the data goes home, the graph is planned
 * again and the launch goes on from that call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schedule.h"

/* Copies keep the owner's alignment modulo this (as fallback's do), so a
 * plugin that needs aligned offsets sees the same alignment. */
#define KEEP_ALIGN 256u

/* A region's bytes on a device, away from the application's buffer. */
typedef struct copy {
  bp__device_t *dev; /* NULL: none yet */
  void *block;
  uint64_t ptr, origin, base; /* region offset x lives at origin + base + (x - lo) of ptr */
  bp__ivs_t valid, dirty;
} copy_t;

typedef struct seg {
  uint64_t ptr, lo, hi; /* the buffer's pool segment, and the region's bytes in it */
  uint32_t home;        /* ranked device */
  copy_t work;          /* the working copy, when home is not the owner's device */
  copy_t run;           /* the current run's copy, when the run is neither */
} seg_t;

typedef struct exec {
  bp__graph_t *g;
  bp__schedule_t *sc;
  bp__device_t *d; /* the graph's (the owners') device */
  bp__stream_t *s; /* the launching stream (NULL when dry) */
  bool dry, measure;
  seg_t *segs;
  uint32_t nseg;
  bool in_run;
  uint32_t run_rank, run_last; /* the current run's device, its last call so far */
  bp__stream_t *rs;            /* its stream */
  bp__gate_t *rgate;
} exec_t;

/* The op's arguments, rebuilt for the device it runs on. */
typedef struct local_args {
  union {
#define LOCAL_MEMBER(E, name, args_t, value, capture, tensors) args_t name;
    BP_OP_TABLE_ALL(LOCAL_MEMBER)
#undef LOCAL_MEMBER
  } u;
  bp_plugin_tensor_t *adam; /* Adam's four arrays, owned */
  bp_plugin_tensor_t *list[BP__OP_MAX_TENSORS];
  bp_plugin_tensor_t **t; /* the tensors (list, or Adam's) */
  bool *out;              /* which are written */
  bool outs[BP__OP_MAX_TENSORS];
  uint32_t n;
  bool reads_output; /* beta != 0, Adam */
} local_args_t;

static bp_status_t local_args_init(local_args_t *la, bp_op_t op, const void *args) {
  memset(la, 0, sizeof *la);
  memcpy(&la->u, args, bp__op_args_size(op));
  bp__op_strip_hints(op, &la->u);
  if (op == BP_OP_GEMM) la->reads_output = la->u.gemm.beta != 0;
  if (op == BP_OP_GEMV) la->reads_output = la->u.gemv.beta != 0;
  if (op != BP_OP_ADAM) {
    size_t off[BP__OP_MAX_TENSORS];
    la->n = (uint32_t)bp__op_tensor_offsets(op, off);
    for (uint32_t i = 0; i < la->n; i++)
      la->list[i] = (bp_plugin_tensor_t *)((char *)&la->u + off[i]);
    if (la->n) la->outs[la->n - 1] = true; /* the table lists the output last */
    la->t = la->list;
    la->out = la->outs;
    return BP_OK;
  }
  uint32_t c = la->u.adam.count;
  la->reads_output = true;
  la->adam = malloc(4 * (size_t)c * sizeof *la->adam);
  la->t = malloc(4 * (size_t)c * sizeof *la->t);
  la->out = malloc(4 * (size_t)c * sizeof *la->out);
  if (!la->adam || !la->t || !la->out)
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_graph_launch: out of host memory");
  const bp_adam_args_t *a = args;
  memcpy(la->adam, a->params, c * sizeof *la->adam);
  memcpy(la->adam + c, a->grads, c * sizeof *la->adam);
  memcpy(la->adam + 2 * c, a->exp_avg, c * sizeof *la->adam);
  memcpy(la->adam + 3 * c, a->exp_avg_sq, c * sizeof *la->adam);
  la->u.adam.params = la->adam;
  la->u.adam.grads = la->adam + c;
  la->u.adam.exp_avg = la->adam + 2 * c;
  la->u.adam.exp_avg_sq = la->adam + 3 * c;
  la->n = 4 * c;
  for (uint32_t i = 0; i < la->n; i++) {
    la->t[i] = &la->adam[i];
    la->out[i] = i / c != 1; /* params, exp_avg, exp_avg_sq change in place */
  }
  return BP_OK;
}

static void local_args_free(local_args_t *la) {
  if (la->t != la->list) free(la->t);
  if (la->out != la->outs) free(la->out);
  free(la->adam);
}

/* ---- regions ---------------------------------------------------------------- */

/* The region holding byte off of segment ptr: a binary search, the regions
 * being sorted by (ptr, lo) and disjoint. */
static seg_t *seg_find(exec_t *ex, uint64_t ptr, uint64_t off) {
  uint32_t lo = 0, hi = ex->nseg; /* the first region past (ptr, off) is in [lo, hi] */
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const seg_t *m = &ex->segs[mid];
    if (m->ptr < ptr || (m->ptr == ptr && m->lo <= off))
      lo = mid + 1;
    else
      hi = mid;
  }
  seg_t *sg = lo ? &ex->segs[lo - 1] : NULL;
  return sg && sg->ptr == ptr && off < sg->hi ? sg : NULL;
}

static int by_place(const void *a, const void *b) {
  const seg_t *x = a, *y = b;
  if (x->ptr != y->ptr) return x->ptr < y->ptr ? -1 : 1;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Calls f(ex, call, tensor's range, arg) for every tensor of calls from..count. */
static bp_status_t each_range(exec_t *ex, uint32_t from,
                              void (*f)(exec_t *, uint32_t, uint64_t, uint64_t, uint64_t, void *),
                              void *arg) {
  for (uint32_t i = from; i < bp__graph_count(ex->g); i++) {
    local_args_t la;
    bp_status_t st = local_args_init(&la, bp__graph_op(ex->g, i), bp__graph_args(ex->g, i));
    uint64_t lo, hi;
    for (uint32_t j = 0; j < la.n && st == BP_OK; j++)
      if (bp__sched_byte_range(la.t[j], &lo, &hi)) f(ex, i, la.t[j]->ptr, lo, hi, arg);
    local_args_free(&la);
    if (st != BP_OK) return st;
  }
  return BP_OK;
}

typedef struct gather {
  seg_t *v;
  uint32_t n, cap;
  bool failed;
} gather_t;

static void gather_range(exec_t *ex, uint32_t call, uint64_t ptr, uint64_t lo, uint64_t hi,
                         void *arg) {
  (void)ex, (void)call;
  gather_t *g = arg;
  if (g->n == g->cap) {
    uint32_t cap = g->cap ? 2 * g->cap : 16;
    seg_t *n = realloc(g->v, cap * sizeof *n);
    if (!n) {
      g->failed = true;
      return;
    }
    g->v = n;
    g->cap = cap;
  }
  g->v[g->n++] = (seg_t){.ptr = ptr, .lo = lo, .hi = hi};
}

typedef struct votes {
  uint32_t *v, nr;
} votes_t;

static void vote(exec_t *ex, uint32_t call, uint64_t ptr, uint64_t lo, uint64_t hi, void *arg) {
  (void)hi;
  votes_t *vt = arg;
  seg_t *sg = seg_find(ex, ptr, lo);
  vt->v[(size_t)(sg - ex->segs) * vt->nr + ex->sc->calls[call].rank]++;
}

/* The regions of calls from..count: the tensors' byte ranges in one
 * allocation, those that overlap merged (distinct buffers never overlap, so
 * a region never spans two; views of one buffer that do not overlap are
 * independent and get regions of their own). */
static bp_status_t regions(exec_t *ex, uint32_t from) {
  gather_t g = {0};
  bp_status_t st = each_range(ex, from, gather_range, &g);
  if (st == BP_OK && g.failed)
    st = bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_graph_launch: out of host memory");
  if (st != BP_OK || !g.n) {
    free(g.v);
    return st;
  }
  qsort(g.v, g.n, sizeof *g.v, by_place);
  uint32_t k = 0;
  for (uint32_t i = 1; i < g.n; i++) {
    if (g.v[i].ptr == g.v[k].ptr && g.v[i].lo < g.v[k].hi) {
      if (g.v[i].hi > g.v[k].hi) g.v[k].hi = g.v[i].hi;
    } else {
      g.v[++k] = g.v[i];
    }
  }
  ex->segs = g.v;
  ex->nseg = k + 1;
  return BP_OK;
}

/* Finds the regions of calls from..count and their homes: the device
 * where most of their tensor uses run (on a tie the graph's own, which
 * saves a copy each way, else the better ranked). */
static bp_status_t segs_build(exec_t *ex, uint32_t from) {
  uint32_t nr = ex->d->context->device_count, origin = ex->d->entry.rank;
  bp_status_t st = regions(ex, from);
  uint32_t *votes =
      st == BP_OK ? calloc((size_t)(ex->nseg ? ex->nseg : 1) * nr, sizeof *votes) : NULL;
  if (st == BP_OK && !votes)
    st = bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_graph_launch: out of host memory");
  votes_t vt = {votes, nr};
  if (st == BP_OK) st = each_range(ex, from, vote, &vt);
  bp__sched_home_t *homes = NULL;
  if (st == BP_OK && ex->dry && ex->nseg && !(homes = calloc(ex->nseg, sizeof *homes)))
    st = bp__fail(BP_ERR_OUT_OF_MEMORY, "graph scheduler: out of host memory");
  for (uint32_t k = 0; k < ex->nseg && st == BP_OK; k++) {
    const uint32_t *v = votes + (size_t)k * nr;
    uint32_t home = origin, total = 0;
    for (uint32_t r = 0; r < nr; r++) {
      total += v[r];
      if (v[r] > v[home]) home = r;
    }
    ex->segs[k].home = home;
    if (homes) homes[k] = (bp__sched_home_t){ex->segs[k].lo, ex->segs[k].hi, home, v[home], total};
  }
  free(votes);
  if (ex->dry && st == BP_OK) { /* the planner's count: what explain shows */
    free(ex->sc->homes);
    ex->sc->homes = homes;
    ex->sc->segments = ex->nseg;
  }
  return st;
}

/* ---- copies ------------------------------------------------------------------- */


static bp__device_t *ranked_device(exec_t *ex, uint32_t rank);

static bp_status_t copy_alloc(exec_t *ex, seg_t *sg, copy_t *c, uint32_t rank) {
  if (c->dev || ex->dry) {
    c->dev = c->dev ? c->dev : ex->d; /* dry: only marks it made */
    return BP_OK;
  }
  bp__device_t *dev = ranked_device(ex, rank);
  if (!dev) return bp__fail(BP_ERR_INTERNAL, "bp_graph_launch: device %u is not open", rank);
  c->base = sg->lo % KEEP_ALIGN;
  bp_status_t st = bp__pool_alloc(dev, c->base + (sg->hi - sg->lo), &c->ptr, &c->origin, &c->block);
  if (st == BP_OK) c->dev = dev;
  return st;
}

static void copy_free(exec_t *ex, copy_t *c) {
  if (c->dev && c->block && !ex->dry) bp__pool_free(c->dev, c->block);
  bp__ivs_free(&c->valid);
  bp__ivs_free(&c->dirty);
  memset(c, 0, sizeof *c);
}

/* Copies region bytes [lo, hi) from one place to another (NULL: the buffer). */
static bp_status_t transfer(exec_t *ex, seg_t *sg, copy_t *to, copy_t *from, uint64_t lo,
                            uint64_t hi) {
  if (ex->dry) return BP_OK;
  bp__buffer_t tb =
      to ? bp__range_buffer(to->dev, to->ptr, to->origin) : bp__range_buffer(ex->d, sg->ptr, 0);
  bp__buffer_t fb =
      from ? bp__range_buffer(from->dev, from->ptr, from->origin) : bp__range_buffer(ex->d, sg->ptr, 0);
  uint64_t toff = to ? to->base + (lo - sg->lo) : lo, foff = from ? from->base + (lo - sg->lo) : lo;
  if (tb.device == fb.device) /* a run on the owners' device, fed by the owner */
    return bp__call_mem_copy(tb.device, NULL, tb.ptr, tb.origin + toff, fb.ptr, fb.origin + foff,
                             hi - lo);
  return bp__copy_across(&tb, toff, &fb, foff, hi - lo);
}

/* Makes [lo, hi) of c (the region's working or run copy) hold the
 * region's current bytes, fetching what it lacks; call pays for it. */
static bp_status_t ensure(exec_t *ex, seg_t *sg, copy_t *c, uint64_t lo, uint64_t hi,
                          uint32_t call) {
  uint64_t glo, ghi;
  while (bp__ivs_first_gap(&c->valid, lo, hi, &glo, &ghi)) {
    copy_t *parent = c == &sg->run && sg->work.dev ? &sg->work : NULL;
    bp_status_t st = parent ? ensure(ex, sg, parent, glo, ghi, call) : BP_OK;
    if (st == BP_OK) st = transfer(ex, sg, c, parent, glo, ghi);
    if (st == BP_OK && !bp__ivs_add(&c->valid, glo, ghi))
      st = bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_graph_launch: out of host memory");
    if (st != BP_OK) return st;
    if (ex->dry) {
      ex->sc->calls[call].bytes_in += ghi - glo;
      if (c == &sg->work)
        ex->sc->bytes_from_owners += ghi - glo;
      else
        ex->sc->bytes_between += ghi - glo;
    }
  }
  return BP_OK;
}

/* Sends c's changed bytes to its parent (NULL: the buffer). */
static bp_status_t flush(exec_t *ex, seg_t *sg, copy_t *c, copy_t *parent, uint64_t *counted) {
  for (uint32_t k = 0; k < c->dirty.n; k++) {
    uint64_t lo = c->dirty.iv[k][0], hi = c->dirty.iv[k][1];
    bp_status_t st = transfer(ex, sg, parent, c, lo, hi);
    if (st == BP_OK && parent &&
        (!bp__ivs_add(&parent->valid, lo, hi) || !bp__ivs_add(&parent->dirty, lo, hi)))
      st = bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_graph_launch: out of host memory");
    if (st != BP_OK) return st;
    if (ex->dry) *counted += hi - lo;
  }
  return BP_OK;
}

/* ---- runs ---------------------------------------------------------------------- */

static bp__device_t *ranked_device(exec_t *ex, uint32_t rank) {
  if (rank == ex->d->entry.rank) return ex->d;
  return ex->in_run && ex->run_rank == rank && ex->rs ? ex->rs->device : NULL;
}

/* Ends the current run: waits for its stream, sends its copies' changes
 * home and frees them. */
static bp_status_t run_end(exec_t *ex) {
  if (!ex->in_run) return BP_OK;
  bp_status_t st = BP_OK;
  if (!ex->dry) st = bp__call_stream_sync(ex->rs->device, ex->rs->handle);
  uint64_t out = 0;
  for (uint32_t k = 0; k < ex->nseg; k++) {
    seg_t *sg = &ex->segs[k];
    if (!sg->run.dev) continue;
    if (st == BP_OK) st = flush(ex, sg, &sg->run, sg->work.dev ? &sg->work : NULL, &out);
    copy_free(ex, &sg->run);
  }
  if (ex->dry) {
    ex->sc->calls[ex->run_last].bytes_out += out;
    ex->sc->bytes_between += out;
  }
  if (ex->rgate) bp__gate_leave(ex->rgate);
  ex->rgate = NULL;
  ex->rs = NULL;
  ex->in_run = false;
  return st;
}

/* Starts a run on ranked device rank: the launching stream on the graph's
 * device, fallback's stream on another. */
static bp_status_t run_begin(exec_t *ex, uint32_t rank, char *why, size_t size) {
  ex->in_run = true;
  ex->run_rank = rank;
  if (ex->dry || rank == ex->d->entry.rank) {
    ex->rs = ex->s;
    return BP_OK;
  }
  bp_stream_t *tok = bp__fallback_target_stream(ex->d, rank, why, size);
  void *obj = NULL;
  if (!tok || bp__handle_enter(tok, BP__H_STREAM, "bp_graph_launch", "scheduler stream", &obj,
                               &ex->rgate) != BP_OK) {
    if (tok) snprintf(why, size, "%s", bp_last_error());
    ex->in_run = false;
    return BP_ERR_UNSUPPORTED;
  }
  ex->rs = obj;
  return BP_OK;
}

/* ---- calls --------------------------------------------------------------------- */

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Runs one op on the run's stream; on a graph's first scheduled launch it
 * is timed (waited for) and the time kept in the tuning cache, unless the
 * cache already holds one, for the cost model of later plans. */
static bp_status_t run_op(exec_t *ex, uint32_t i, bp_op_t op, const void *args, const void *orig) {
  bp__stream_t *rs = ex->rs;
  bool other = rs != ex->s;
  double t0 = now_ms();
  if (other) pthread_mutex_lock(&rs->lock);
  bp_status_t st = bp__call_op_unlocked(rs, op, args);
  if (other) pthread_mutex_unlock(&rs->lock);
  if (st != BP_OK || !ex->measure || ex->sc->calls[i].measured) return st;
  st = bp__call_stream_sync(rs->device, rs->handle);
  double ms = now_ms() - t0;
  char opname[64], bucket[16], value[BP_TUNE_VALUE_MAX];
  bp_tune_key_t key;
  bp__sched_tune_key(ex->d->context, ex->run_rank, op, orig, opname, sizeof opname, bucket,
                     sizeof bucket, &key);
  if (st == BP_OK && !bp__tune_lookup(&key, value, sizeof value)) {
    snprintf(value, sizeof value, "%.6f", ms);
    bp__tune_store(&key, value);
  }
  return st;
}

/* Places call i's tensors on the run's device and runs it. */
static bp_status_t run_call(exec_t *ex, uint32_t i) {
  bp_op_t op = bp__graph_op(ex->g, i);
  const void *args = bp__graph_args(ex->g, i);
  uint32_t rank = ex->run_rank;
  local_args_t la;
  bp_status_t st = local_args_init(&la, op, args);
  copy_t *where[BP__OP_MAX_TENSORS], **w = where;
  uint64_t los[BP__OP_MAX_TENSORS], *lo = los, his[BP__OP_MAX_TENSORS], *hi = his;
  if (st == BP_OK && la.n > BP__OP_MAX_TENSORS) { /* Adam */
    w = malloc(la.n * sizeof *w);
    lo = malloc(la.n * sizeof *lo);
    hi = malloc(la.n * sizeof *hi);
    if (!w || !lo || !hi)
      st = bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_graph_launch: out of host memory");
  }
  for (uint32_t j = 0; j < la.n && st == BP_OK; j++) {
    bp_plugin_tensor_t *t = la.t[j];
    w[j] = NULL;
    if (!bp__sched_byte_range(t, &lo[j], &hi[j])) continue;
    seg_t *sg = seg_find(ex, t->ptr, lo[j]);
    if (sg->home == rank && rank == ex->d->entry.rank) continue; /* the owner, in place */
    copy_t *c = sg->home == rank ? &sg->work : &sg->run;
    st = copy_alloc(ex, sg, c, rank);
    bool reads = !la.out[j] || la.reads_output || !bp__sched_dense(t, lo[j], hi[j]);
    if (st == BP_OK && reads) st = ensure(ex, sg, c, lo[j], hi[j], i);
    w[j] = c;
    t->offset = c->origin + c->base + (t->offset - sg->lo);
    t->ptr = c->ptr;
  }
  if (st == BP_OK && !ex->dry) st = run_op(ex, i, op, &la.u, args);
  for (uint32_t j = 0; j < la.n && st == BP_OK; j++)
    if (la.out[j] && w[j] &&
        (!bp__ivs_add(&w[j]->valid, lo[j], hi[j]) || !bp__ivs_add(&w[j]->dirty, lo[j], hi[j])))
      st = bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_graph_launch: out of host memory");
  if (w != where) free(w), free(lo), free(hi);
  local_args_free(&la);
  return st;
}

/* Sends every working copy home and frees everything the launch holds.
 * After a refusal (st BP_ERR_UNSUPPORTED) the data goes home all the same:
 * the launch goes on from the owners under a new plan. */
static bp_status_t finish(exec_t *ex, bp_status_t st) {
  bp_status_t end = run_end(ex);
  if (st == BP_OK) st = end;
  bool home = st == BP_OK || (st == BP_ERR_UNSUPPORTED && end == BP_OK);
  for (uint32_t k = 0; k < ex->nseg; k++) {
    seg_t *sg = &ex->segs[k];
    if (home && sg->work.dev) {
      bp_status_t f = flush(ex, sg, &sg->work, NULL, &ex->sc->bytes_to_owners);
      if (f != BP_OK) st = f, home = false;
    }
    copy_free(ex, &sg->run);
    copy_free(ex, &sg->work);
  }
  free(ex->segs);
  ex->segs = NULL;
  ex->nseg = 0;
  return st;
}

/* Strikes the run's device off call i after its refusal; the caller plans
 * again. */
static void strike(exec_t *ex, uint32_t i, const char *why) {
  bp__sched_call_t *c = &ex->sc->calls[i];
  c->refused_by |= 1ull << ex->run_rank;
  if (ex->run_rank == ex->d->entry.rank && !c->marked) {
    c->marked = true;
    c->why.reason = BP_FALLBACK_REFUSED;
    c->why.status = BP_ERR_UNSUPPORTED;
    snprintf(c->why.text, sizeof c->why.text, "%s", why);
  }
  bp__log(BP_LOG_INFO, BP__LOG_API, "graph: call %u (%s) refused on '%s' (%s); placing it again", i,
          bp_op_name(bp__graph_op(ex->g, i)), ex->d->context->ranked[ex->run_rank].info.name, why);
}

/* One pass from call `from`; *out_refused: the call a device refused. */
static bp_status_t pass(exec_t *ex, uint32_t from, uint32_t *out_refused) {
  bp_status_t st = segs_build(ex, from);
  if (st == BP_OK && !ex->dry)
    st = bp__call_stream_sync(ex->d, ex->s->handle); /* the inputs are written */
  for (uint32_t i = from; i < bp__graph_count(ex->g) && st == BP_OK; i++) {
    uint32_t rank = ex->sc->calls[i].rank;
    char why[512] = "";
    if (ex->in_run && ex->run_rank != rank) st = run_end(ex);
    if (st == BP_OK && !ex->in_run) st = run_begin(ex, rank, why, sizeof why);
    if (st == BP_OK) {
      ex->run_last = i;
      st = run_call(ex, i);
      if (st == BP_ERR_UNSUPPORTED) snprintf(why, sizeof why, "%s", bp_last_error());
    } else if (st == BP_ERR_UNSUPPORTED) {
      ex->run_rank = rank; /* the device that could not be opened */
    }
    if (st == BP_ERR_UNSUPPORTED) {
      strike(ex, i, why);
      *out_refused = i;
    }
  }
  return finish(ex, st);
}

bp_status_t bp__sched_execute(bp__graph_t *g, bp__stream_t *s, uint32_t start, bool dry) {
  bp__schedule_t *sc = bp__schedule_of(g);
  if (!sc) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_graph_launch: out of host memory");
  exec_t ex = {.g = g,
               .sc = sc,
               .d = bp__graph_device(g),
               .s = s,
               .dry = dry,
               .measure = !dry && !sc->measured_once};
  if (dry) {
    sc->bytes_from_owners = sc->bytes_between = sc->bytes_to_owners = 0;
    for (uint32_t i = 0; i < sc->count; i++) sc->calls[i].bytes_in = sc->calls[i].bytes_out = 0;
  }
  for (;;) {
    uint32_t refused = 0;
    bp_status_t st = pass(&ex, start, &refused);
    if (st != BP_ERR_UNSUPPORTED || dry) {
      if (st == BP_OK && !dry) sc->measured_once = true;
      return st;
    }
    /* Each refusal strikes one device off one call: this ends. */
    bp__clear_error();
    st = bp__schedule_plan(g);
    if (st != BP_OK) return st;
    start = refused;
  }
}
