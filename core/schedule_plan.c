/*
 * schedule_plan.c — where each call of a scheduled graph runs
 * (docs/runtime.md "Graph scheduler").
 *
 * Candidates: the ranked devices that claim the call (its op for its
 * dtypes), less those whose plugin refused it at a launch; the graph's own
 * device only when it claims the call and has not refused it.
 *
 * Cost model, per call and candidate: the time the tuning cache holds for
 * (device, "sched.<op>", dtype, size bucket) when the scheduler measured one
 * (schedule_run.c times each call of a scheduled graph's first launch), else
 * the static estimate flops / peak_gflops + bytes / bandwidth_gbs from the
 * device's info (BP__SCHED_DEFAULT_* when the plugin reports 0). Moving
 * from one device to another between two calls costs BP__SCHED_SWITCH_MS
 * plus the second call's bytes over the slower of the two bandwidths; the
 * graph starts and ends on its own device (the buffers live there).
 *
 * Partition: the placement with the least total cost over the whole
 * sequence (a shortest path through calls x devices, so a cheap op between
 * two calls elsewhere is not sent back and forth for nothing). Runs are
 * the maximal stretches on one device.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

static int64_t numel(const bp_plugin_tensor_t *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

/* The op's tensors (Adam: the first parameter's four only stand for them
 * all in the flop count, below). */
static int tensors(bp_op_t op, const void *args, const bp_plugin_tensor_t **out) {
  size_t off[BP__OP_MAX_TENSORS];
  int k = bp__op_tensor_offsets(op, off);
  for (int i = 0; i < k; i++) out[i] = (const bp_plugin_tensor_t *)((const char *)args + off[i]);
  return k;
}

/* Floating-point operations, roughly: what the static estimate divides by
 * the device's peak. */
static double flops(bp_op_t op, const void *args) {
  const bp_plugin_tensor_t *t[BP__OP_MAX_TENSORS];
  int k = tensors(op, args, t);
  switch (op) {
  case BP_OP_GEMM:
    return 2.0 * (double)numel(t[2]) * (double)t[0]->shape[t[0]->rank - 1];
  case BP_OP_GEMV:
    return 2.0 * (double)numel(t[0]);
  case BP_OP_CONV2D: {
    const bp_conv2d_args_t *a = args;
    return 2.0 * (double)numel(&a->y) * (double)(a->w.shape[1] * a->w.shape[2] * a->w.shape[3]);
  }
  case BP_OP_ATTENTION: {
    const bp_attention_args_t *a = args;
    return 4.0 * (double)numel(&a->q) * (double)a->k.shape[a->k.rank - 2];
  }
  case BP_OP_ADAM: {
    const bp_adam_args_t *a = args;
    double n = 0;
    for (uint32_t i = 0; i < a->count; i++) n += (double)numel(&a->params[i]);
    return 16.0 * n;
  }
  default:
    break;
  }
  double most = 0; /* elementwise, norms, reductions: a few per element */
  for (int i = 0; i < k; i++) most = fmax(most, (double)numel(t[i]));
  return 4.0 * most;
}

uint64_t bp__sched_bytes(bp_op_t op, const void *args) {
  uint64_t sum = 0, lo, hi;
  if (op == BP_OP_ADAM) {
    const bp_adam_args_t *a = args;
    for (uint32_t i = 0; i < a->count; i++) {
      const bp_plugin_tensor_t *four[4] = {&a->params[i], &a->grads[i], &a->exp_avg[i],
                                           &a->exp_avg_sq[i]};
      for (int j = 0; j < 4; j++)
        if (bp__sched_byte_range(four[j], &lo, &hi)) sum += hi - lo;
    }
    return sum;
  }
  const bp_plugin_tensor_t *t[BP__OP_MAX_TENSORS];
  int k = tensors(op, args, t);
  for (int i = 0; i < k; i++)
    if (bp__sched_byte_range(t[i], &lo, &hi)) sum += hi - lo;
  return sum;
}

bp_dtype_t bp__sched_dtype(bp_op_t op, const void *args) {
  if (op == BP_OP_ADAM)
    return ((const bp_adam_args_t *)args)->count ? ((const bp_adam_args_t *)args)->params[0].dtype
                                                 : BP_F32;
  const bp_plugin_tensor_t *t[BP__OP_MAX_TENSORS];
  return tensors(op, args, t) ? t[0]->dtype : BP_F32;
}

void bp__sched_tune_key(const bp_context_t *ctx, uint32_t r, bp_op_t op, const void *args,
                        char *opname, size_t opsize, char *bucket, size_t bsize,
                        bp_tune_key_t *out) {
  const bp_device_entry_t *e = &ctx->ranked[r];
  uint64_t bytes = bp__sched_bytes(op, args);
  unsigned lg = 0;
  while (lg < 63 && (2ull << lg) <= bytes) lg++;
  snprintf(opname, opsize, "sched.%s", bp_op_name(op));
  snprintf(bucket, bsize, "b%u", bytes ? lg : 0); /* bytes in [2^b, 2^(b+1)) */
  *out = (bp_tune_key_t){.struct_size = sizeof *out,
                         .plugin = e->backend,
                         .plugin_version = ctx->plugins[ctx->ranked_plugin[r]].desc.version,
                         .device = e->info.name,
                         .driver_version = e->info.driver_version,
                         .op = opname,
                         .dtype = bp_dtype_name(bp__sched_dtype(op, args)),
                         .bucket = bucket};
}

static double gbs(const bp_device_info_t *i) {
  return i->bandwidth_gbs > 0 ? i->bandwidth_gbs : BP__SCHED_DEFAULT_GBS;
}

double bp__sched_cost_ms(const bp_context_t *ctx, uint32_t r, bp_op_t op, const void *args,
                         bool *out_measured) {
  char opname[64], bucket[16], value[BP_TUNE_VALUE_MAX];
  bp_tune_key_t key;
  bp__sched_tune_key(ctx, r, op, args, opname, sizeof opname, bucket, sizeof bucket, &key);
  *out_measured = false;
  if (bp__tune_lookup(&key, value, sizeof value)) {
    char *end;
    double ms = strtod(value, &end);
    if (end != value && ms >= 0 && isfinite(ms)) {
      *out_measured = true;
      return ms;
    }
  }
  const bp_device_info_t *i = &ctx->ranked[r].info;
  double peak = i->peak_gflops > 0 ? i->peak_gflops : BP__SCHED_DEFAULT_GFLOPS;
  return flops(op, args) / (peak * 1e6) + (double)bp__sched_bytes(op, args) / (gbs(i) * 1e6);
}

/* The cost of moving from device a to device b before call i runs. */
static double switch_ms(const bp_context_t *ctx, uint32_t a, uint32_t b, uint64_t bytes) {
  if (a == b) return 0;
  double bw = fmin(gbs(&ctx->ranked[a].info), gbs(&ctx->ranked[b].info));
  return BP__SCHED_SWITCH_MS + (double)bytes / (bw * 1e6);
}

/* The planner's tables: cost[i * nr + r] of the best placement of calls
 * 0..i with call i on r (DBL_MAX: r cannot run it), and from[] its
 * predecessor's device. */
typedef struct plan {
  uint32_t n, nr, origin;
  double *cost, *own;
  uint32_t *from;
  bool *measured;
} plan_t;

static bool candidate(const bp_context_t *ctx, const bp__sched_call_t *c, uint32_t r,
                      uint32_t origin, bp_op_t op, const void *args) {
  if (c->refused_by & (1ull << r)) return false;
  if (r == origin && c->marked) return false;
  return bp__sched_claims(ctx, r, op, args);
}

/* Fills the tables for call i; false when no device can run it. */
static bool plan_call(bp__graph_t *g, const bp__schedule_t *sc, plan_t *p, uint32_t i) {
  const bp_context_t *ctx = bp__graph_device(g)->context;
  bp_op_t op = bp__graph_op(g, i);
  const void *args = bp__graph_args(g, i);
  uint64_t bytes = bp__sched_bytes(op, args);
  bool any = false;
  for (uint32_t r = 0; r < p->nr; r++) {
    double *cell = &p->cost[i * p->nr + r];
    *cell = DBL_MAX;
    if (!candidate(ctx, &sc->calls[i], r, p->origin, op, args)) continue;
    double own = bp__sched_cost_ms(ctx, r, op, args, &p->measured[i * p->nr + r]);
    p->own[i * p->nr + r] = own;
    for (uint32_t q = 0; q < p->nr; q++) {
      double before = i == 0 ? (q == p->origin ? 0 : DBL_MAX) : p->cost[(i - 1) * p->nr + q];
      if (before == DBL_MAX) continue;
      double total = before + switch_ms(ctx, q, r, bytes) + own;
      if (total < *cell) {
        *cell = total;
        p->from[i * p->nr + r] = q;
      }
    }
    any = any || *cell != DBL_MAX;
  }
  return any;
}

/* Walks the tables back from the cheapest end into the schedule. */
static void plan_apply(bp__graph_t *g, bp__schedule_t *sc, const plan_t *p) {
  const bp_context_t *ctx = bp__graph_device(g)->context;
  uint32_t n = p->n, best = p->origin;
  double best_cost = DBL_MAX;
  uint64_t last_bytes = bp__sched_bytes(bp__graph_op(g, n - 1), bp__graph_args(g, n - 1));
  for (uint32_t r = 0; r < p->nr; r++) {
    double c = p->cost[(n - 1) * p->nr + r];
    if (c != DBL_MAX && c + switch_ms(ctx, r, p->origin, last_bytes) < best_cost) {
      best_cost = c + switch_ms(ctx, r, p->origin, last_bytes);
      best = r;
    }
  }
  sc->active = false;
  for (uint32_t i = n; i-- > 0;) {
    bp__sched_call_t *c = &sc->calls[i];
    c->rank = best;
    c->est_ms = p->own[i * p->nr + best];
    c->measured = p->measured[i * p->nr + best];
    double here = p->cost[i * p->nr + p->origin] != DBL_MAX ? p->own[i * p->nr + p->origin] : 0;
    c->here_ms = here;
    c->reason = best != p->origin ? BP__PLACE_COST : BP__PLACE_HERE;
    if (c->marked)
      c->reason = c->why.reason == BP_FALLBACK_REFUSED ? BP__PLACE_REFUSED : BP__PLACE_UNSUPPORTED;
    if (best != p->origin) sc->active = true;
    best = p->from[i * p->nr + best];
  }
}

static void count_runs(bp__schedule_t *sc, uint32_t n) {
  uint64_t used = 0;
  sc->runs = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (i == 0 || sc->calls[i].rank != sc->calls[i - 1].rank) sc->runs++;
    used |= 1ull << sc->calls[i].rank;
  }
  sc->devices = (uint32_t)__builtin_popcountll(used);
}

/* Names why call i can run nowhere. */
static bp_status_t nowhere(bp__graph_t *g, const bp__schedule_t *sc, uint32_t i) {
  const bp__sched_call_t *c = &sc->calls[i];
  return bp__fail(BP_ERR_UNSUPPORTED, "graph scheduler: call %u (%s) can run on no device: %s%s", i,
                  bp_op_name(bp__graph_op(g, i)),
                  c->marked ? c->why.text : "every device that claims it refused it",
                  c->refused_by ? " (and each other device that claims it refused it when it ran)"
                                : "");
}

bp_status_t bp__schedule_plan(bp__graph_t *g) {
  bp__schedule_t *sc = bp__schedule_of(g);
  bp__device_t *d = bp__graph_device(g);
  uint32_t n = bp__graph_count(g), nr = d->context->device_count;
  if (!sc) return bp__fail(BP_ERR_OUT_OF_MEMORY, "graph scheduler: out of host memory");
  if (n == 0) return BP_OK;
  if (nr > BP__SCHED_MAX_DEVICES) nr = BP__SCHED_MAX_DEVICES;
  plan_t p = {.n = n, .nr = nr, .origin = d->entry.rank};
  size_t cells = (size_t)n * nr;
  p.cost = malloc(cells * sizeof *p.cost);
  p.own = calloc(cells, sizeof *p.own);
  p.from = calloc(cells, sizeof *p.from);
  p.measured = calloc(cells, sizeof *p.measured);
  bp_status_t st = BP_OK;
  if (!p.cost || !p.own || !p.from || !p.measured)
    st = bp__fail(BP_ERR_OUT_OF_MEMORY, "graph scheduler: out of host memory");
  for (uint32_t i = 0; i < n && st == BP_OK; i++)
    if (!plan_call(g, sc, &p, i)) st = nowhere(g, sc, i);
  if (st == BP_OK) {
    plan_apply(g, sc, &p);
    count_runs(sc, n);
    st = bp__sched_execute(g, NULL, 0, true); /* counts the copies a launch makes */
  }
  free(p.cost);
  free(p.own);
  free(p.from);
  free(p.measured);
  return st;
}
