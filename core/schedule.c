/*
 * schedule.c — the graph scheduler's entry points (docs/runtime.md "Graph
 * scheduler"): marking, at capture, a call the graph's device refuses;
 * planning at the end of capture; launching; and taking over a graph whose
 * plugin refused a call only when it ran. Placement is schedule_plan.c's,
 * running schedule_run.c's, the report schedule_explain.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

bp__schedule_t *bp__schedule_of(bp__graph_t *g) {
  bp__schedule_t **slot = bp__graph_schedule(g);
  if (!*slot && !(*slot = calloc(1, sizeof **slot))) return NULL;
  bp__schedule_t *sc = *slot;
  uint32_t need = bp__graph_count(g);
  if (need > sc->capacity) {
    uint32_t cap = sc->capacity ? sc->capacity : 16;
    while (cap < need) cap *= 2;
    bp__sched_call_t *n = realloc(sc->calls, cap * sizeof *n);
    if (!n) return NULL;
    memset(n + sc->capacity, 0, (cap - sc->capacity) * sizeof *n);
    sc->calls = n;
    sc->capacity = cap;
  }
  if (need > sc->count) sc->count = need;
  return sc;
}

void bp__schedule_free(bp__schedule_t *sc) {
  if (!sc) return;
  free(sc->calls);
  free(sc->homes);
  free(sc);
}

bool bp__sched_claims(const bp_context_t *ctx, uint32_t r, bp_op_t op, const void *args) {
  const bp_plugin_descriptor_t *x = &ctx->plugins[ctx->ranked_plugin[r]].desc;
  return bp__plugin_claims_args(x, &ctx->ranked[r].info, ctx->ranked[r].backend, op, args, NULL);
}

/* Whether a ranked device other than d claims op with args (and d is one
 * the planner's 64-bit device masks can name). */
static bool elsewhere(const bp__device_t *d, bp_op_t op, const void *args) {
  const bp_context_t *ctx = d->context;
  if (d->entry.rank >= BP__SCHED_MAX_DEVICES) return false;
  for (uint32_t r = 0; r < ctx->device_count && r < BP__SCHED_MAX_DEVICES; r++)
    if (r != d->entry.rank && bp__sched_claims(ctx, r, op, args)) return true;
  return false;
}

bp_status_t bp__schedule_record_elsewhere(bp__graph_t *g, bp_op_t op, const void *args,
                                          const bp__refusal_t *why) {
  bp__device_t *d = bp__graph_device(g);
  if (!d->fallback)
    return bp__fail(why->status,
                    "%s; an op captured into a graph does not fall back to another device "
                    "when fallback is off",
                    why->text);
  if (!elsewhere(d, op, args))
    return bp__fail(why->status,
                    "%s (and no other device claims it, so the graph scheduler cannot place it)",
                    why->text);
  bp_status_t st = bp__graph_record(g, op, args);
  if (st != BP_OK) return st;
  bp__schedule_t *sc = bp__schedule_of(g);
  if (!sc) return bp__fail(BP_ERR_OUT_OF_MEMORY, "capture: out of host memory");
  bp__sched_call_t *c = &sc->calls[bp__graph_count(g) - 1];
  c->marked = true;
  c->why = *why;
  bp__log(BP_LOG_DEBUG, BP__LOG_API, "capture: call %u (%s) recorded for another device: %s",
          bp__graph_count(g) - 1, bp_op_name(op), why->text);
  return BP_OK;
}

bool bp__schedule_active(const bp__graph_t *g) {
  bp__schedule_t *const *slot = bp__graph_schedule((bp__graph_t *)g);
  return *slot && (*slot)->active;
}

bp_status_t bp__schedule_launch(bp__graph_t *g, bp__stream_t *s, uint32_t start) {
  return bp__sched_execute(g, s, start, false);
}

bp_status_t bp__schedule_refused(bp__graph_t *g, bp__stream_t *s, uint32_t call, bp_status_t st) {
  bp__device_t *d = bp__graph_device(g);
  if (!d->fallback || !elsewhere(d, bp__graph_op(g, call), bp__graph_args(g, call))) return st;
  bp__schedule_t *sc = bp__schedule_of(g);
  if (!sc) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_graph_launch: out of host memory");
  bp__sched_call_t *c = &sc->calls[call];
  c->marked = true;
  c->why.reason = BP_FALLBACK_REFUSED;
  c->why.status = st;
  c->why.dtype = bp__sched_dtype(bp__graph_op(g, call), bp__graph_args(g, call));
  snprintf(c->why.text, sizeof c->why.text, "%s", bp_last_error());
  bp__log(BP_LOG_INFO, BP__LOG_API,
          "graph: call %u (%s) refused by '%s' (%s); the graph is scheduled across "
          "devices from now on",
          call, bp_op_name(bp__graph_op(g, call)), d->entry.info.name, c->why.text);
  bp__clear_error();
  st = bp__schedule_plan(g);
  if (st != BP_OK) return st;
  return bp__sched_execute(g, s, call, false);
}
