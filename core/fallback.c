/*
 * fallback.c — running an op that a device cannot run on the next ranked
 * device that can (docs/runtime.md, "Fallback").
 *
 * The one door (plugin_call.c) decides that an op is refused: the device
 * does not claim it, its plugin has no entry for it, or the plugin returned
 * BP_ERR_UNSUPPORTED before doing any work. It then calls
 * bp__fallback_run, which works synchronously with the caller: the origin
 * stream's queued work is waited for, the byte ranges of the op's tensors
 * are copied into temporary buffers on the target (from the target's pool),
 * the op runs there with its tensors remapped, and the outputs' ranges come
 * back. Target devices are opened on first use, once per origin device, and
 * close with it; the records of what fell back are in fallback_stats.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fallback.h"

/* Temporary ranges keep the origin's alignment modulo this, so a plugin
 * that needs aligned offsets for a dtype (or a vector width) sees the same
 * alignment as on the origin. */
#define KEEP_ALIGN 256u

uint64_t bp__fallback_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bp_status_t bp__fallback_open(bp__device_t *d, bool enabled) {
  d->fallback = NULL;
  if (!enabled) return BP_OK;
  bp__fallback_t *fb = calloc(1, sizeof *fb);
  uint32_t n = d->context->device_count;
  bp__fallback_target_t *t = calloc(n ? n : 1, sizeof *t);
  if (!fb || !t) {
    free(fb);
    free(t);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_device_open: out of memory");
  }
  pthread_mutex_init(&fb->lock, NULL);
  fb->targets = t;
  fb->target_count = n;
  d->fallback = fb;
  return BP_OK;
}

void bp__fallback_close(bp__device_t *d) {
  bp__fallback_t *fb = d->fallback;
  if (!fb) return;
  d->fallback = NULL;
  for (uint32_t r = 0; r < fb->target_count; r++) {
    /* Stale tokens are ignored: a context being destroyed may have closed
     * the target first. */
    if (fb->targets[r].stream) bp_stream_destroy(fb->targets[r].stream);
    if (fb->targets[r].device) bp_device_close(fb->targets[r].device);
  }
  free(fb->targets);
  free(fb->stats);
  pthread_mutex_destroy(&fb->lock);
  free(fb);
}

/* The descriptor and record of ranked device r of ctx. */
static const bp_plugin_descriptor_t *ranked_desc(const bp_context_t *ctx, uint32_t r) {
  return &ctx->plugins[ctx->ranked_plugin[r]].desc;
}

bool bp__fallback_possible(const bp__device_t *d, bp_op_t op, bp_dtype_t dtype) {
  if (!d->fallback) return false;
  const bp_context_t *ctx = d->context;
  for (uint32_t r = 0; r < ctx->device_count; r++)
    if (r != d->entry.rank && bp__plugin_claims(ranked_desc(ctx, r), &ctx->ranked[r].info, op, dtype))
      return true;
  return false;
}

/* Moves a target device to the end of its context's open list, so that a
 * context destroyed with devices open closes the origin first (which
 * closes its targets) and warns only about devices the application opened. */
static void to_tail(bp_context_t *ctx, bp_device_t *h) {
  bp__device_t *t = bp__handle_get(h, BP__H_DEVICE), **pp;
  if (!t) return;
  pthread_mutex_lock(&ctx->lock);
  for (pp = &ctx->open_devices; *pp && *pp != t; pp = &(*pp)->next) {
  }
  if (*pp) {
    *pp = t->next;
    while (*pp) pp = &(*pp)->next;
    *pp = t;
    t->next = NULL;
  }
  pthread_mutex_unlock(&ctx->lock);
}

/* Opens ranked device r for d's fallback, once: a device with fallback off
 * (targets never fall back themselves; d walks the ranking) and a stream.
 * Under fb->lock. False, with the reason in the target's record, when it
 * cannot be opened. */
static bool target_open(bp__device_t *d, uint32_t r) {
  bp__fallback_target_t *t = &d->fallback->targets[r];
  if (t->tried) return t->stream != NULL;
  t->tried = true;
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .no_fallback = true,
                            .allow_reduced_precision = d->allow_reduced_precision};
  char sel[16];
  snprintf(sel, sizeof sel, "%u", r);
  bp_status_t st = bp_device_open(d->context->h, sel, &cfg, &t->device);
  if (st == BP_OK) st = bp_stream_create(t->device, &t->stream);
  if (st == BP_OK) {
    to_tail(d->context, t->device);
    return true;
  }
  snprintf(t->why, sizeof t->why, "cannot be opened: %s", bp_last_error());
  bp__log(BP_LOG_WARN, BP__LOG_API, "fallback: device '%s' %s; ops of '%s' will not fall back to it",
          d->context->ranked[r].info.name, t->why, d->entry.info.name);
  if (t->device) bp_device_close(t->device);
  t->device = NULL;
  return false;
}

bp_stream_t *bp__fallback_target_stream(bp__device_t *d, uint32_t r, char *why, size_t size) {
  bp__fallback_t *fb = d->fallback;
  if (!fb || r >= fb->target_count || r == d->entry.rank) {
    snprintf(why, size, "is not a fallback target of '%s'", d->entry.info.name);
    return NULL;
  }
  pthread_mutex_lock(&fb->lock);
  bp_stream_t *s = target_open(d, r) ? fb->targets[r].stream : NULL;
  if (!s) snprintf(why, size, "%s", fb->targets[r].why);
  pthread_mutex_unlock(&fb->lock);
  return s;
}


/* The bytes [*lo, *hi) of its allocation that t may touch; false when it
 * touches none (absent, or no elements). */
static bool byte_range(const bp_plugin_tensor_t *t, uint64_t *lo, uint64_t *hi) {
  if (!t->ptr) return false;
  int64_t es = (int64_t)bp_dtype_size(t->dtype), below = 0, above = 0;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return false;
    int64_t span = (t->shape[i] - 1) * t->strides[i];
    if (span < 0) below += span; else above += span;
  }
  *lo = t->offset + (uint64_t)(below * es);
  *hi = t->offset + (uint64_t)(above * es + es);
  return true;
}

/* Whether every byte of t's range is one of its elements, so that writing
 * it whole needs nothing from the origin. */
static bool dense(const bp_plugin_tensor_t *t, uint64_t lo, uint64_t hi) {
  uint64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= (uint64_t)t->shape[i];
  return hi - lo == n * bp_dtype_size(t->dtype);
}

/* Whether the op reads its output before writing it. */
static bool reads_output(bp_op_t op, const void *args) {
  if (op == BP_OP_GEMM) return ((const bp_gemm_args_t *)args)->beta != 0;
  if (op == BP_OP_GEMV) return ((const bp_gemv_args_t *)args)->beta != 0;
  return op == BP_OP_ADAM; /* updates in place */
}

/* One tensor of the op while it runs on the target. */
typedef struct staged {
  bp_plugin_tensor_t *t;   /* the remapped tensor in the target's args */
  uint64_t origin_ptr, lo; /* its bytes on the origin: [lo, lo + len) of origin_ptr */
  uint64_t len, base;      /* on the target: [base, base + len) of the block */
  uint64_t ptr, origin;    /* the target block's pointer and origin */
  void *block;
  bool out;
} staged_t;

/* The op's arguments, rebuilt for the target. */
typedef struct local_args {
  union {
#define LOCAL_MEMBER(E, name, args_t, value, capture, tensors) args_t name;
    BP_OP_TABLE_ALL(LOCAL_MEMBER)
#undef LOCAL_MEMBER
  } u;
  bp_plugin_tensor_t *adam; /* Adam's four arrays, owned */
  staged_t *staged;         /* inline, or owned for Adam */
  staged_t inline_staged[BP__OP_MAX_TENSORS];
  uint32_t count;
} local_args_t;

/* Copies args into la and lists the tensors to stage; Adam's arrays are
 * copied so they can be remapped. */
static bp_status_t local_args_init(local_args_t *la, bp_op_t op, const void *args) {
  la->adam = NULL;
  la->staged = NULL;
  la->count = 0;
  memset(la->inline_staged, 0, sizeof la->inline_staged);
  memcpy(&la->u, args, bp__op_args_size(op));
  bp__op_strip_hints(op, &la->u);
  bp_plugin_tensor_t *list[BP__OP_MAX_TENSORS];
  bool outs[BP__OP_MAX_TENSORS] = {false};
  uint32_t n = 0;
  if (op == BP_OP_ADAM) {
    uint32_t c = la->u.adam.count;
    la->adam = malloc(4 * (size_t)c * sizeof *la->adam);
    if (!la->adam) return bp__fail(BP_ERR_OUT_OF_MEMORY, "fallback: out of host memory");
    const bp_adam_args_t *a = args;
    memcpy(la->adam, a->params, c * sizeof *la->adam);
    memcpy(la->adam + c, a->grads, c * sizeof *la->adam);
    memcpy(la->adam + 2 * c, a->exp_avg, c * sizeof *la->adam);
    memcpy(la->adam + 3 * c, a->exp_avg_sq, c * sizeof *la->adam);
    la->u.adam.params = la->adam;
    la->u.adam.grads = la->adam + c;
    la->u.adam.exp_avg = la->adam + 2 * c;
    la->u.adam.exp_avg_sq = la->adam + 3 * c;
    n = 4 * c;
  } else {
    size_t off[BP__OP_MAX_TENSORS];
    n = (uint32_t)bp__op_tensor_offsets(op, off);
    for (uint32_t i = 0; i < n; i++) list[i] = (bp_plugin_tensor_t *)((char *)&la->u + off[i]);
    if (n) outs[n - 1] = true; /* the table lists the output last */
  }
  la->staged = op == BP_OP_ADAM ? calloc(n ? n : 1, sizeof *la->staged) : la->inline_staged;
  if (!la->staged) return bp__fail(BP_ERR_OUT_OF_MEMORY, "fallback: out of host memory");
  for (uint32_t i = 0; i < n; i++) {
    staged_t *g = &la->staged[la->count];
    g->t = op == BP_OP_ADAM ? &la->adam[i] : list[i];
    uint64_t hi;
    if (!byte_range(g->t, &g->lo, &hi)) continue;
    g->origin_ptr = g->t->ptr;
    g->len = hi - g->lo;
    /* Adam: params, exp_avg and exp_avg_sq are updated in place. */
    g->out = op == BP_OP_ADAM ? (i / la->u.adam.count) != 1 : outs[i];
    la->count++;
  }
  return BP_OK;
}

static void local_args_free(bp__device_t *td, local_args_t *la) {
  for (uint32_t i = 0; i < la->count; i++)
    if (la->staged[i].block) bp__pool_free(td, la->staged[i].block);
  if (la->staged != la->inline_staged) free(la->staged);
  free(la->adam);
}

/* Allocates each tensor's range on the target, copies in what the op reads
 * (inputs; an output it reads or does not cover whole), and remaps. */
static bp_status_t stage_in(bp__device_t *d, bp__device_t *td, bp_op_t op, const void *args,
                            local_args_t *la, bp__fallback_cost_t *cost) {
  bool read_out = reads_output(op, args);
  for (uint32_t i = 0; i < la->count; i++) {
    staged_t *g = &la->staged[i];
    g->base = g->lo % KEEP_ALIGN;
    bp_status_t st = bp__pool_alloc(td, g->base + g->len, &g->ptr, &g->origin, &g->block);
    if (st != BP_OK) return st;
    if (!g->out || read_out || !dense(g->t, g->lo, g->lo + g->len)) {
      bp__buffer_t to = bp__range_buffer(td, g->ptr, g->origin), from = bp__range_buffer(d, g->origin_ptr, 0);
      uint64_t t0 = bp__fallback_now_ns();
      st = bp__copy_across(&to, g->base, &from, g->lo, g->len);
      cost->copy_ns += bp__fallback_now_ns() - t0;
      if (st != BP_OK) return st;
      cost->bytes_in += g->len;
    }
    g->t->offset = g->origin + g->base + (g->t->offset - g->lo);
    g->t->ptr = g->ptr;
  }
  return BP_OK;
}

static bp_status_t stage_out(bp__device_t *d, bp__device_t *td, local_args_t *la, bp__fallback_cost_t *cost) {
  for (uint32_t i = 0; i < la->count; i++) {
    staged_t *g = &la->staged[i];
    if (!g->out) continue;
    bp__buffer_t to = bp__range_buffer(d, g->origin_ptr, 0), from = bp__range_buffer(td, g->ptr, g->origin);
    uint64_t t0 = bp__fallback_now_ns();
    bp_status_t st = bp__copy_across(&to, g->lo, &from, g->base, g->len);
    cost->copy_ns += bp__fallback_now_ns() - t0;
    if (st != BP_OK) return st;
    cost->bytes_out += g->len;
  }
  return BP_OK;
}

/* Runs op on target stream ts. *out_wrote says whether the origin's outputs
 * were touched (then a failure is final: no other candidate is tried). */
static bp_status_t run_on(bp__device_t *d, bp__stream_t *ts, bp_op_t op, const void *args,
                          bp__fallback_cost_t *cost, bool *out_wrote) {
  bp__device_t *td = ts->device;
  local_args_t la;
  *out_wrote = false;
  bp_status_t st = local_args_init(&la, op, args);
  if (st == BP_OK) st = stage_in(d, td, op, args, &la, cost);
  if (st == BP_OK) st = bp__call_op(ts, op, &la.u);
  if (st == BP_OK) st = bp__call_stream_sync(td, ts->handle);
  if (st == BP_OK) {
    *out_wrote = true;
    st = stage_out(d, td, &la, cost);
  }
  local_args_free(td, &la);
  return st;
}

/* Appends "; NAME: WHAT" to the notes on why the candidates failed. */
static void note(char *notes, size_t size, const char *name, const char *what) {
  size_t len = strlen(notes);
  if (len < size) snprintf(notes + len, size - len, "%s%s: %s", len ? "; " : "", name, what);
}

/* Tries ranked device r; BP_ERR_UNSUPPORTED (with a note) when it cannot
 * run the op and the next may. */
static bp_status_t try_target(bp__stream_t *s, uint32_t r, bp_op_t op, const void *args,
                              bp__fallback_cost_t *cost, char *notes, size_t notes_size) {
  bp__device_t *d = s->device;
  bp__fallback_t *fb = d->fallback;
  const char *name = d->context->ranked[r].info.name;
  pthread_mutex_lock(&fb->lock);
  bool open = target_open(d, r);
  bp_stream_t *tsh = fb->targets[r].stream;
  if (!open) note(notes, notes_size, name, fb->targets[r].why);
  pthread_mutex_unlock(&fb->lock);
  if (!open) return BP_ERR_UNSUPPORTED;
  void *obj;
  bp__gate_t *gate = NULL;
  bp_status_t st = bp__handle_enter(tsh, BP__H_STREAM, "fallback", "target stream", &obj, &gate);
  bool wrote = false;
  if (st == BP_OK) st = run_on(d, obj, op, args, cost, &wrote);
  bp__gate_leave(gate);
  if (st == BP_OK || wrote) return st;
  note(notes, notes_size, name, bp_last_error());
  bp__log(BP_LOG_DEBUG, BP__LOG_API, "fallback: %s from '%s' could not run on '%s' (%s); trying the next device",
          bp_op_name(op), d->entry.info.name, name, bp_last_error());
  return BP_ERR_UNSUPPORTED;
}

bp_status_t bp__fallback_run(bp__stream_t *s, bp_op_t op, const void *args, const bp__refusal_t *why) {
  bp__device_t *d = s->device;
  const bp_context_t *ctx = d->context;
  uint64_t t0 = bp__fallback_now_ns();
  /* The op reads what earlier work on s writes. */
  bp_status_t st = bp__call_stream_sync(d, s->handle);
  if (st != BP_OK) return st;
  char notes[512] = "";
  for (uint32_t r = 0; r < ctx->device_count; r++) {
    if (r == d->entry.rank) continue;
    if (!bp__plugin_claims_args(ranked_desc(ctx, r), &ctx->ranked[r].info, ctx->ranked[r].backend, op, args,
                                NULL))
      continue;
    bp__fallback_cost_t cost = {0, 0, 0};
    st = try_target(s, r, op, args, &cost, notes, sizeof notes);
    if (st == BP_ERR_UNSUPPORTED) continue;
    if (st != BP_OK) return st;
    bp__clear_error();
    bp__fallback_record(d, op, why, r, &cost, bp__fallback_now_ns() - t0);
    return BP_OK;
  }
  bp__refusal_t w = *why; /* its text, written now */
  if (!notes[0]) return bp__fail(w.status, "%s", bp__refusal_text(&w));
  return bp__fail(w.status, "%s (fallback found no other device that runs it: %s)", bp__refusal_text(&w),
                  notes);
}
