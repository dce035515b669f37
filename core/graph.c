/*
 * graph.c — capture a sequence of ops on a stream and replay it.
 *
 * While a stream captures, every op is validated as usual but, instead of
 * reaching the plugin, its argument struct is copied into the graph. A launch
 * replays the copies in order on any stream of the same device. Rebinding
 * swaps one buffer for another in every recorded call (the new buffer must be
 * at least as large), so one graph serves new inputs and outputs without
 * being captured again.
 *
 * The recorded calls stay the source of truth. A backend with native graphs
 * (ABI 1.2: CUDA graphs, a reused Vulkan command buffer) gets them replayed
 * once between graph_begin and graph_end on the launching stream, and later
 * launches run what it built. A rebind drops the native graph (the next
 * launch builds a new one); a backend that cannot record some op makes the
 * graph fall back to replaying op by op for good.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "schedule.h"

/* One recorded call: the op and a copy of its argument struct. */
typedef struct graph_call {
  bp_op_t op;
  union {
#define CALL_ARGS_MEMBER(E, name, args_t, value, capture, tensors) args_t name;
    BP_OP_TABLE_ALL(CALL_ARGS_MEMBER)
#undef CALL_ARGS_MEMBER
  } u;
  bp_plugin_tensor_t *adam_tensors; /* owned copy of Adam's four arrays */
} graph_call_t;

/* A recorded tensor whose buffer was freed: the graph refuses to launch
 * until it is rebound, from the freed buffer's (stale) token. */
typedef struct dangling {
  uint32_t call, tensor;  /* which call, and which of its tensors */
  const bp_buffer_t *was; /* the freed buffer's token */
  uint64_t origin, size;  /* the freed buffer's place in its segment */
} dangling_t;

struct bp__graph {
  bp_graph_t *h;  /* the application's token, once capture ends */
  bp__device_t *device;
  graph_call_t *calls;
  uint32_t count, capacity;
  bp_status_t capture_error; /* the first failure while capturing */
  bp_plugin_graph_t *native; /* the backend's graph; NULL until built */
  bool native_refused;       /* the backend could not record it: replay */
  bool last_native;          /* the last launch ran the native graph */
  bp__graph_t *next;          /* in the device's list of live graphs */
  dangling_t *dangling;      /* tensors over freed buffers, under lock */
  uint32_t dangling_count, dangling_capacity;
  bool dangling_lost;        /* memory ran out while marking: never launch */
  pthread_mutex_t lock;      /* one launch or rebind at a time */
  struct bp__schedule *sched; /* calls placed across devices; NULL: none (schedule.c) */
};


/* Lists the tensor fields of a recorded call (the table's tensors column),
 * for rebinding. An ARRAYS op lists none here: its arrays are walked apart. */
#define UNPAREN(...) __VA_ARGS__
#define COUNT_(_1, _2, _3, _4, _5, _6, _7, _8, n, ...) n
#define COUNT(...) COUNT_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define EACH_1(F, n, a) F(n, a)
#define EACH_2(F, n, a, ...) F(n, a) EACH_1(F, n, __VA_ARGS__)
#define EACH_3(F, n, a, ...) F(n, a) EACH_2(F, n, __VA_ARGS__)
#define EACH_4(F, n, a, ...) F(n, a) EACH_3(F, n, __VA_ARGS__)
#define EACH_5(F, n, a, ...) F(n, a) EACH_4(F, n, __VA_ARGS__)
#define EACH_6(F, n, a, ...) F(n, a) EACH_5(F, n, __VA_ARGS__)
#define EACH_7(F, n, a, ...) F(n, a) EACH_6(F, n, __VA_ARGS__)
#define EACH_8(F, n, a, ...) F(n, a) EACH_7(F, n, __VA_ARGS__)
#define EACH_N(F, n, k, ...) EACH_##k(F, n, __VA_ARGS__)
#define EACH_K(F, n, k, ...) EACH_N(F, n, k, __VA_ARGS__)
#define EACH(F, n, ...) EACH_K(F, n, COUNT(__VA_ARGS__), __VA_ARGS__)
#define EACH_LISTED(F, n, list) EACH(F, n, UNPAREN list)
#define ADD_FIELD(n, field) t[k++] = &c->u.n.field;
#define CAPTURE_VALUE(n, list) EACH_LISTED(ADD_FIELD, n, list)
#define CAPTURE_ARRAYS(n, list)

static int call_tensors(graph_call_t *c, bp_plugin_tensor_t **t) {
  int k = 0;
  switch (c->op) {
#define CALL_TENSORS(E, name, args_t, value, capture, tensors)                  \
  case BP_OP_##E: CAPTURE_##capture(name, tensors) break;
    BP_OP_TABLE_ALL(CALL_TENSORS)
#undef CALL_TENSORS
  case BP_OP_COUNT: break;
  }
  return k;
}

/* The j-th tensor of a recorded call (Adam's four arrays included), NULL
 * past the last. */
static bp_plugin_tensor_t *call_tensor(graph_call_t *c, uint32_t j) {
  if (c->op == BP_OP_ADAM) return j < 4 * c->u.adam.count ? &c->adam_tensors[j] : NULL;
  bp_plugin_tensor_t *t[8];
  int n = call_tensors(c, t);
  return j < (uint32_t)n ? t[j] : NULL;
}

static bool tensor_in(const bp_plugin_tensor_t *t, uint64_t ptr, uint64_t origin, uint64_t size) {
  return t->ptr == ptr && t->offset >= origin && t->offset < origin + size;
}

static bool is_dangling(const bp__graph_t *g, uint32_t call, uint32_t tensor) {
  for (uint32_t i = 0; i < g->dangling_count; i++)
    if (g->dangling[i].call == call && g->dangling[i].tensor == tensor) return true;
  return false;
}

/* Under g->lock (or during capture, the stream's): marks the tensors of g
 * that lie in b. A graph that cannot grow its list keeps its first entries
 * and is refused at launch all the same. */
static void forget_buffer(bp__graph_t *g, const bp__buffer_t *b) {
  for (uint32_t i = 0; i < g->count; i++) {
    bp_plugin_tensor_t *t;
    for (uint32_t j = 0; (t = call_tensor(&g->calls[i], j)); j++) {
      if (!tensor_in(t, b->ptr, b->origin, b->size) || is_dangling(g, i, j)) continue;
      if (g->dangling_count == g->dangling_capacity) {
        uint32_t cap = g->dangling_capacity ? 2 * g->dangling_capacity : 8;
        dangling_t *n = realloc(g->dangling, cap * sizeof *n);
        if (!n) {
          g->dangling_lost = true;
          continue;
        }
        g->dangling = n;
        g->dangling_capacity = cap;
      }
      g->dangling[g->dangling_count++] = (dangling_t){i, j, b->h, b->origin, b->size};
    }
  }
}

void bp__graphs_forget_buffer(bp__device_t *d, const bp__buffer_t *b) {
  pthread_mutex_lock(&d->lock);
  for (bp__graph_t *g = d->graphs; g; g = g->next) {
    pthread_mutex_lock(&g->lock);
    forget_buffer(g, b);
    pthread_mutex_unlock(&g->lock);
  }
  for (bp__stream_t *s = d->streams; s; s = s->next) {
    pthread_mutex_lock(&s->lock);
    if (s->capture) forget_buffer(s->capture, b);
    pthread_mutex_unlock(&s->lock);
  }
  pthread_mutex_unlock(&d->lock);
}

bp_status_t bp__graph_record(bp__graph_t *g, bp_op_t op, const void *args) {
  if (g->count == g->capacity) {
    uint32_t cap = g->capacity ? 2 * g->capacity : 16;
    graph_call_t *n = realloc(g->calls, cap * sizeof *n);
    if (!n) return g->capture_error = bp__fail(BP_ERR_OUT_OF_MEMORY, "capture: out of host memory");
    g->calls = n;
    g->capacity = cap;
  }
  graph_call_t *c = &g->calls[g->count];
  memset(c, 0, sizeof *c);
  c->op = op;
  memcpy(&c->u, args, bp__op_args_size(op));
  bp__op_strip_hints(op, &c->u);
  if (op == BP_OP_ADAM) { /* the arrays live only during the call: copy them */
    uint32_t n = c->u.adam.count;
    c->adam_tensors = malloc(4 * (size_t)n * sizeof *c->adam_tensors);
    if (!c->adam_tensors) return g->capture_error = bp__fail(BP_ERR_OUT_OF_MEMORY, "capture: out of host memory");
    memcpy(c->adam_tensors, c->u.adam.params, n * sizeof *c->adam_tensors);
    memcpy(c->adam_tensors + n, c->u.adam.grads, n * sizeof *c->adam_tensors);
    memcpy(c->adam_tensors + 2 * n, c->u.adam.exp_avg, n * sizeof *c->adam_tensors);
    memcpy(c->adam_tensors + 3 * n, c->u.adam.exp_avg_sq, n * sizeof *c->adam_tensors);
    c->u.adam.params = c->adam_tensors;
    c->u.adam.grads = c->adam_tensors + n;
    c->u.adam.exp_avg = c->adam_tensors + 2 * n;
    c->u.adam.exp_avg_sq = c->adam_tensors + 3 * n;
  }
  g->count++;
  return BP_OK;
}

bp_status_t bp_stream_begin_capture(bp_stream_t *sh) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_stream_begin_capture", "stream");
  bp__graph_t *g = calloc(1, sizeof *g);
  if (!g) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_stream_begin_capture: out of memory");
  g->device = s->device;
  pthread_mutex_init(&g->lock, NULL);
  pthread_mutex_lock(&s->lock);
  if (s->capture) {
    pthread_mutex_unlock(&s->lock);
    free(g);
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_stream_begin_capture: the stream is already capturing");
  }
  s->capture = g;
  pthread_mutex_unlock(&s->lock);
  return BP_OK;
}

void bp__graph_free(bp__graph_t *g) {
  bp__schedule_free(g->sched);
  for (uint32_t i = 0; i < g->count; i++) free(g->calls[i].adam_tensors);
  free(g->calls);
  free(g->dangling);
  pthread_mutex_destroy(&g->lock);
  free(g);
}

/* Adds g to, or takes it off, its device's list of live graphs. */
static void device_track(bp__graph_t *g, bool add) {
  bp__device_t *d = g->device;
  pthread_mutex_lock(&d->lock);
  if (add) {
    g->next = d->graphs;
    d->graphs = g;
  } else {
    for (bp__graph_t **pp = &d->graphs; *pp; pp = &(*pp)->next)
      if (*pp == g) {
        *pp = g->next;
        break;
      }
  }
  pthread_mutex_unlock(&d->lock);
}

void bp__device_release_graphs(bp__device_t *d) {
  pthread_mutex_lock(&d->lock);
  for (bp__graph_t *g = d->graphs; g; g = g->next) {
    bp__call_graph_destroy(d, g->native);
    g->native = NULL;
    g->device = NULL; /* launches and rebinds now fail; destroy only frees */
    bp__handle_set_gate(g->h, NULL);
  }
  d->graphs = NULL;
  pthread_mutex_unlock(&d->lock);
}

static void drop_native(bp__graph_t *g) {
  if (!g->native) return;
  bp__call_graph_destroy(g->device, g->native);
  g->native = NULL;
}

void bp_graph_destroy(bp_graph_t *gh) {
  BP__ENTER_VOID(bp__graph_t, g, gh, BP__H_GRAPH, "bp_graph_destroy");
  if (!bp__handle_remove(gh)) return;
  if (g->device) {
    drop_native(g);
    device_track(g, false);
  }
  bp__graph_free(g);
}

bp_status_t bp_stream_end_capture(bp_stream_t *sh, bp_graph_t **out_graph) {
  bp__clear_error();
  if (!out_graph) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_stream_end_capture: out_graph is NULL");
  *out_graph = NULL;
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_stream_end_capture", "stream");
  pthread_mutex_lock(&s->lock);
  bp__graph_t *g = s->capture;
  s->capture = NULL;
  pthread_mutex_unlock(&s->lock);
  if (!g) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_stream_end_capture: the stream is not capturing");
  bp_status_t st = g->capture_error;
  if (st == BP_OK && g->sched && (st = bp__schedule_plan(g)) != BP_OK) {
    bp__graph_free(g);
    return st; /* with the planner's message */
  }
  if (st == BP_OK && !(g->h = bp__handle_add(g, BP__H_GRAPH, s->device->gate))) st = BP_ERR_OUT_OF_MEMORY;
  if (st != BP_OK) {
    bp__graph_free(g);
    return bp__fail(st, "bp_stream_end_capture: %s", st == BP_ERR_OUT_OF_MEMORY ? "out of memory while capturing"
                                                                               : "an op failed while capturing");
  }
  device_track(g, true);
  *out_graph = g->h;
  return BP_OK;
}

/* Resolves a graph token for a call on device d (whose gate is entered). */
static bp_status_t graph_on(const bp_graph_t *gh, const bp__device_t *d, const char *fn, bp__graph_t **out) {
  *out = bp__handle_get_on(gh, BP__H_GRAPH, d->gate);
  if (*out) return BP_OK;
  const bp__graph_t *other = bp__handle_get(gh, BP__H_GRAPH);
  return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: graph is %s", fn,
                  !gh      ? "NULL"
                  : !other ? "not a live graph (destroyed or foreign)"
                  : "on another device than the stream (or its device was closed)");
}

/* Records g's calls into a native graph on s (whose lock the caller holds).
 * Any failure leaves the graph replaying op by op: a native graph is an
 * optimisation, never a reason for a launch to fail. */
static void build_native(bp__graph_t *g, bp__stream_t *s) {
  if (bp__call_graph_begin(s) != BP_OK) {
    g->native_refused = true;
    bp__log(BP_LOG_INFO, BP__LOG_API, "graph of %u ops replays op by op: %s", g->count, bp_last_error());
    bp__clear_error();
    return;
  }
  bp_status_t st = BP_OK;
  uint32_t i = 0;
  for (; i < g->count && st == BP_OK; i++) st = bp__call_op_unlocked(s, g->calls[i].op, &g->calls[i].u);
  char why[256];
  snprintf(why, sizeof why, "%s", st == BP_OK ? "" : bp_last_error());
  bp_plugin_graph_t *native = NULL;
  bp_status_t end = bp__call_graph_end(s, &native);
  if (st == BP_OK && end == BP_OK && native) {
    g->native = native;
    return;
  }
  bp__call_graph_destroy(g->device, native);
  g->native_refused = true;
  bp__log(BP_LOG_INFO, BP__LOG_API, "graph of %u ops replays op by op: the backend could not record %s: %s",
          g->count, st != BP_OK ? bp_op_name(g->calls[i - 1].op) : "it",
          st != BP_OK ? why : end != BP_OK ? bp_last_error() : "no graph returned");
  bp__clear_error();
}

static bp_status_t launch_locked(bp__graph_t *g, bp__stream_t *s) {
  if (g->dangling_lost)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_graph_launch: the graph uses a freed buffer; capture it again");
  if (g->dangling_count) {
    const dangling_t *x = &g->dangling[0];
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_graph_launch: call %u (%s) uses a buffer that was freed (%u such tensors); rebind it with "
                    "bp_graph_rebind or capture again",
                    x->call, bp_op_name(g->calls[x->call].op), g->dangling_count);
  }
  if (bp__schedule_active(g)) { /* calls placed across devices, run op by op */
    g->last_native = false;
    return bp__schedule_launch(g, s, 0);
  }
  if (!g->native && !g->native_refused && g->count && bp__native_graphs(g->device)) build_native(g, s);
  g->last_native = g->native != NULL;
  if (g->native) return bp__call_graph_launch(s, g->native);
  bp_status_t st = BP_OK;
  uint32_t i = 0;
  for (; i < g->count && st == BP_OK; i++) st = bp__call_op_unlocked(s, g->calls[i].op, &g->calls[i].u);
  /* A plugin may refuse a call only when it runs (a shape limit): with
   * fallback on, the scheduler places it elsewhere and runs the rest. */
  if (st == BP_ERR_UNSUPPORTED) st = bp__schedule_refused(g, s, i - 1, st);
  return st;
}

bp_status_t bp_graph_launch(bp_graph_t *gh, bp_stream_t *sh) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_graph_launch", "stream");
  bp__graph_t *g;
  bp_status_t st = graph_on(gh, s->device, "bp_graph_launch", &g);
  if (st != BP_OK) return st;
  pthread_mutex_lock(&g->lock);
  bp__stream_lock(s); /* after the collectives queued on it */
  if (s->capture) st = bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_graph_launch: the stream is capturing");
  else st = launch_locked(g, s);
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_unlock(&g->lock);
  return st;
}

uint32_t bp_graph_size(const bp_graph_t *gh) {
  const bp__graph_t *g = bp__handle_get(gh, BP__H_GRAPH);
  return g ? g->count : 0;
}

bool bp_graph_is_native(const bp_graph_t *gh) {
  const bp__graph_t *g = bp__handle_get(gh, BP__H_GRAPH);
  return g && g->last_native;
}

/* Moves a tensor from one buffer's range to another's. */
static void move_tensor(bp_plugin_tensor_t *t, uint64_t from_origin, const bp__buffer_t *to) {
  t->offset = t->offset - from_origin + to->origin;
  t->ptr = to->ptr;
}

/* Under g->lock: moves every live tensor in from's range to to. */
static void rebind_live(bp__graph_t *g, const bp__buffer_t *from, const bp__buffer_t *to) {
  for (uint32_t i = 0; i < g->count; i++) {
    bp_plugin_tensor_t *t;
    for (uint32_t j = 0; (t = call_tensor(&g->calls[i], j)); j++)
      if (tensor_in(t, from->ptr, from->origin, from->size) && !is_dangling(g, i, j))
        move_tensor(t, from->origin, to);
  }
}

/* Under g->lock: moves the tensors that lay in the freed buffer `was` to
 * to; false when the graph used no such buffer. */
static bool rebind_freed(bp__graph_t *g, const bp_buffer_t *was, const bp__buffer_t *to, const char *fn,
                         bp_status_t *out_st) {
  bool found = false;
  *out_st = BP_OK;
  for (uint32_t i = 0; i < g->dangling_count;) {
    dangling_t *x = &g->dangling[i];
    if (x->was != was) {
      i++;
      continue;
    }
    if (to->size < x->size) {
      *out_st = bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: the new buffer (%llu bytes) is smaller than the old (%llu)",
                         fn, (unsigned long long)to->size, (unsigned long long)x->size);
      return true;
    }
    move_tensor(call_tensor(&g->calls[x->call], x->tensor), x->origin, to);
    *x = g->dangling[--g->dangling_count];
    found = true;
  }
  return found;
}

bp_status_t bp_graph_rebind(bp_graph_t *gh, bp_buffer_t *fromh, bp_buffer_t *toh) {
  bp__clear_error();
  const char *fn = "bp_graph_rebind";
  BP__ENTER(bp__graph_t, g, gh, BP__H_GRAPH, fn, "graph");
  if (!g->device) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: the graph's device was closed", fn);
  bp__buffer_t *to;
  bp_status_t st = bp__buffer_on(toh, g->device, fn, "to", &to);
  if (st != BP_OK) return st;
  bp__buffer_t *from = bp__handle_get_on(fromh, BP__H_BUFFER, g->device->gate);
  if (from && to->size < from->size)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: the new buffer (%llu bytes) is smaller than the old (%llu)", fn,
                    (unsigned long long)to->size, (unsigned long long)from->size);
  pthread_mutex_lock(&g->lock);
  drop_native(g); /* it holds the old buffers' addresses */
  if (from) rebind_live(g, from, to);
  else if (!rebind_freed(g, fromh, to, fn, &st))
    st = bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: from is %s", fn,
                  !fromh ? "NULL"
                  : bp__handle_get(fromh, BP__H_BUFFER) ? "on another device than the graph"
                  : "neither a live buffer nor a freed buffer this graph used");
  pthread_mutex_unlock(&g->lock);
  return st;
}

/* ---- lent to the scheduler (schedule.h) ----------------------------------- */

uint32_t bp__graph_count(const bp__graph_t *g) { return g->count; }
bp_op_t bp__graph_op(const bp__graph_t *g, uint32_t i) { return g->calls[i].op; }
const void *bp__graph_args(const bp__graph_t *g, uint32_t i) { return &g->calls[i].u; }
bp__device_t *bp__graph_device(const bp__graph_t *g) { return g->device; }
struct bp__schedule **bp__graph_schedule(bp__graph_t *g) { return &g->sched; }
void bp__graph_lock(bp__graph_t *g) { pthread_mutex_lock(&g->lock); }
void bp__graph_unlock(bp__graph_t *g) { pthread_mutex_unlock(&g->lock); }
