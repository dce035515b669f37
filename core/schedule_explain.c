/*
 * schedule_explain.c — the graph scheduler's report: bp_graph_placement,
 * bp_graph_schedule and bp_graph_explain (docs/runtime.md "Graph
 * scheduler"). The copy figures are the planner's count of what one launch
 * copies (schedule_run.c's dry pass), so they say what a launch does
 * without running it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "schedule.h"

static const char *const reason_words[] = {
    [BP__PLACE_HERE] = "here",
    [BP__PLACE_UNSUPPORTED] = "unsupported here",
    [BP__PLACE_REFUSED] = "refused here",
    [BP__PLACE_COST] = "cheaper there",
};

/* Resolves graph for a report; the caller leaves *gate. */
static bp_status_t graph_open(const bp_graph_t *gh, const char *fn, bp__graph_t **out,
                              bp__gate_t **gate) {
  void *obj;
  bp_status_t st = bp__handle_enter(gh, BP__H_GRAPH, fn, "graph", &obj, gate);
  if (st != BP_OK) return st;
  *out = obj;
  if (bp__graph_device(*out)) return BP_OK;
  bp__gate_leave(*gate);
  *gate = NULL;
  return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: the graph's device was closed", fn);
}

/* Fills *p for call i of g (g's lock held). */
static void placement_of(bp__graph_t *g, uint32_t i, bp_graph_placement_t *p) {
  bp__device_t *d = bp__graph_device(g);
  const bp_context_t *ctx = d->context;
  bp_op_t op = bp__graph_op(g, i);
  memset(p, 0, sizeof *p);
  p->struct_size = sizeof *p;
  p->op = op;
  bp__schedule_t *sc = *bp__graph_schedule(g);
  if (!sc || !sc->active) { /* every call runs on the graph's device */
    p->device_rank = d->entry.rank;
    snprintf(p->device, sizeof p->device, "%s", d->entry.info.name);
    p->estimate_ms = bp__sched_cost_ms(ctx, d->entry.rank, op, bp__graph_args(g, i), &p->measured);
    snprintf(p->why, sizeof p->why, "the graph is not scheduled: its device runs every call");
    return;
  }
  const bp__sched_call_t *c = &sc->calls[i];
  p->device_rank = c->rank;
  snprintf(p->device, sizeof p->device, "%s", ctx->ranked[c->rank].info.name);
  p->reason = (bp_graph_place_reason_t)c->reason;
  p->estimate_ms = c->est_ms;
  p->measured = c->measured;
  p->bytes_in = c->bytes_in;
  p->bytes_out = c->bytes_out;
  if (c->marked)
    snprintf(p->why, sizeof p->why, "%s", c->why.text);
  else if (c->reason == BP__PLACE_COST)
    snprintf(p->why, sizeof p->why, "%.4f ms there against %.4f ms on '%s', copies counted",
             c->est_ms, c->here_ms, d->entry.info.name);
  else
    snprintf(p->why, sizeof p->why, "the graph's device runs it");
}

bp_status_t bp_graph_placement(const bp_graph_t *gh, uint32_t call, bp_graph_placement_t *out) {
  bp__clear_error();
  const char *fn = "bp_graph_placement";
  if (!out || out->struct_size != sizeof *out)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: out is NULL or its struct_size is not sizeof(bp_graph_placement_t)", fn);
  bp__graph_t *g;
  bp__gate_t *gate = NULL;
  bp_status_t st = graph_open(gh, fn, &g, &gate);
  if (st != BP_OK) return st;
  bp__graph_lock(g);
  uint32_t n = bp__graph_count(g);
  if (call >= n)
    st = bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: call %u is past the graph's %u calls", fn, call, n);
  else
    placement_of(g, call, out);
  bp__graph_unlock(g);
  bp__gate_leave(gate);
  return st;
}

/* Fills *out for g (g's lock held). */
static void info_of(bp__graph_t *g, bp_graph_schedule_info_t *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->calls = bp__graph_count(g);
  const bp__schedule_t *sc = *bp__graph_schedule(g);
  if (!sc || !sc->active) {
    out->runs = out->devices = out->calls ? 1 : 0;
    return;
  }
  out->scheduled = true;
  out->runs = sc->runs;
  out->devices = sc->devices;
  out->regions = sc->segments;
  out->bytes_from_owners = sc->bytes_from_owners;
  out->bytes_between = sc->bytes_between;
  out->bytes_to_owners = sc->bytes_to_owners;
}

bp_status_t bp_graph_schedule(const bp_graph_t *gh, bp_graph_schedule_info_t *out) {
  bp__clear_error();
  const char *fn = "bp_graph_schedule";
  if (!out || out->struct_size != sizeof *out)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: out is NULL or its struct_size is not sizeof(bp_graph_schedule_info_t)",
                    fn);
  bp__graph_t *g;
  bp__gate_t *gate = NULL;
  bp_status_t st = graph_open(gh, fn, &g, &gate);
  if (st != BP_OK) return st;
  bp__graph_lock(g);
  info_of(g, out);
  bp__graph_unlock(g);
  bp__gate_leave(gate);
  return BP_OK;
}

/* Text written into a caller's buffer, cut to size, its full length kept. */
typedef struct text {
  char *buf;
  size_t size, len;
} text_t;

static void put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_t *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *at = t->buf && t->len < t->size ? t->buf + t->len : NULL;
  int n = vsnprintf(at, at ? t->size - t->len : 0, fmt, ap);
  va_end(ap);
  if (n > 0) t->len += (size_t)n;
}

static void explain_calls(bp__graph_t *g, text_t *t) {
  for (uint32_t i = 0; i < bp__graph_count(g); i++) {
    bp_graph_placement_t p;
    placement_of(g, i, &p);
    put(t, "  #%-3u %-11s -> %-12s %-16s est %.4f ms (%s)", i, bp_op_name(p.op), p.device,
        reason_words[p.reason], p.estimate_ms, p.measured ? "measured" : "static");
    if (p.bytes_in) put(t, ", copies in %llu B", (unsigned long long)p.bytes_in);
    if (p.bytes_out) put(t, ", out %llu B at its run's end", (unsigned long long)p.bytes_out);
    put(t, "\n");
    if (p.reason != BP_GRAPH_PLACE_HERE) put(t, "        why: %s\n", p.why);
  }
}

bp_status_t bp_graph_explain(const bp_graph_t *gh, char *buf, size_t size, size_t *out_len) {
  bp__clear_error();
  const char *fn = "bp_graph_explain";
  if (out_len) *out_len = 0;
  if (!buf && size)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: buf is NULL and size is not 0", fn);
  bp__graph_t *g;
  bp__gate_t *gate = NULL;
  bp_status_t st = graph_open(gh, fn, &g, &gate);
  if (st != BP_OK) return st;
  text_t t = {buf, size, 0};
  if (buf && size) buf[0] = '\0';
  bp__graph_lock(g);
  bp__device_t *d = bp__graph_device(g);
  bp_graph_schedule_info_t info;
  info_of(g, &info);
  put(&t, "graph of %u calls captured on '%s' (rank %u, fallback %s): ", info.calls,
      d->entry.info.name, d->entry.rank, d->fallback ? "on" : "off");
  if (info.scheduled)
    put(&t, "scheduled over %u devices in %u runs\n", info.devices, info.runs);
  else
    put(&t, "not scheduled, every call runs on its device\n");
  explain_calls(g, &t);
  const bp__schedule_t *sc = *bp__graph_schedule(g);
  for (uint32_t k = 0; info.scheduled && k < sc->segments; k++) {
    const bp__sched_home_t *h = &sc->homes[k];
    put(&t, "  region %u: %llu B, working copy on %s (%u of %u uses)\n", k,
        (unsigned long long)(h->hi - h->lo), d->context->ranked[h->home].info.name, h->users,
        h->total);
  }
  if (info.scheduled)
    put(&t,
        "copies per launch: %llu B into working copies, %llu B between runs, %llu B back to the "
        "buffers "
        "(%u regions)\n",
        (unsigned long long)info.bytes_from_owners, (unsigned long long)info.bytes_between,
        (unsigned long long)info.bytes_to_owners, info.regions);
  bp__graph_unlock(g);
  bp__gate_leave(gate);
  if (out_len) *out_len = t.len;
  return BP_OK;
}
