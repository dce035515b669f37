/*
 * group_speed.c — how fast each member runs each split family, and the
 * shares that follow. A member's speed is the time of one fixed f32
 * problem per family (below), run the way a split runs it: on group (host)
 * memory through bp__group_run_on, so a member that must stage its slice
 * pays for the staging in its speed. Times live in the tuning cache (op
 * "group.gemm", "group.attention", "group.conv2d"; the bucket names the
 * problem) under the member's plugin, version, device and driver: a group
 * reads them when it opens, measures what is missing on the first split (or
 * bp_device_group_calibrate) and stores what it measured, so the next
 * process reuses it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "group.h"

/* One calibration problem per family: big enough that per-call overhead
 * does not dominate, small enough that a scalar reference device measures
 * it in a fraction of a second. */
static const struct calibration {
  const char *op, *bucket;
  int64_t dims[4];
} calibrations[BP_GROUP_SPLIT_COUNT] = {
    [BP_GROUP_SPLIT_GEMM] = {"group.gemm", "m256n256k256", {256, 256, 256, 0}},
    [BP_GROUP_SPLIT_ATTENTION] = {"group.attention", "b1h4s128d64", {1, 4, 128, 64}},
    [BP_GROUP_SPLIT_CONV2D] = {"group.conv2d", "n2c16h32w32k16r3", {2, 16, 32, 16}},
};

static void contiguous(bp_plugin_tensor_t *t, void *mem, int rank, const int64_t *shape) {
  memset(t, 0, sizeof *t);
  t->ptr = (uint64_t)(uintptr_t)mem;
  t->dtype = BP_F32;
  t->rank = rank;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; i--) {
    t->shape[i] = shape[i];
    t->strides[i] = stride;
    stride *= shape[i];
  }
}

static int64_t numel(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= shape[i];
  return n;
}

/* Host memory for n f32 values of a fixed, harmless pattern. */
static float *values(int64_t n) {
  float *p = aligned_alloc(64, (size_t)((n * 4 + 63) & ~63));
  for (int64_t i = 0; p && i < n; i++) p[i] = (float)((i % 13) - 6) * 0.0625f;
  return p;
}

typedef struct problem {
  bp_op_t op;
  double flops;
  float *mem[4];
  union {
    bp_gemm_args_t gemm;
    bp_attention_args_t attention;
    bp_conv2d_args_t conv2d;
  } args;
} problem_t;

static bool alloc_tensors(problem_t *p, int n, const int *ranks, const int64_t (*shapes)[4],
                          bp_plugin_tensor_t *const *t) {
  for (int i = 0; i < n; i++) {
    p->mem[i] = values(numel(ranks[i], shapes[i]));
    if (!p->mem[i]) return false;
    contiguous(t[i], p->mem[i], ranks[i], shapes[i]);
  }
  return true;
}

static double problem_flops(bp_group_split_t f) {
  const int64_t *d = calibrations[f].dims;
  if (f == BP_GROUP_SPLIT_GEMM) return 2.0 * (double)(d[0] * d[1] * d[2]);
  if (f == BP_GROUP_SPLIT_ATTENTION) return 4.0 * (double)(d[0] * d[1] * d[2] * d[2] * d[3]);
  return 2.0 * (double)(d[0] * d[3] * d[2] * d[2] * d[1] * 9);
}

/* Builds family's calibration problem over fresh host memory. */
static bool problem_make(bp_group_split_t f, problem_t *p) {
  memset(p, 0, sizeof *p);
  p->flops = problem_flops(f);
  const int64_t *d = calibrations[f].dims;
  if (f == BP_GROUP_SPLIT_GEMM) {
    bp_gemm_args_t *a = &p->args.gemm;
    const int64_t shapes[3][4] = {{1, d[0], d[2]}, {1, d[2], d[1]}, {1, d[0], d[1]}};
    p->op = BP_OP_GEMM;
    *a = (bp_gemm_args_t){.struct_size = sizeof *a, .alpha = 1.0};
    return alloc_tensors(p, 3, (const int[]){3, 3, 3}, shapes, (bp_plugin_tensor_t *const[]){&a->a, &a->b, &a->c});
  }
  if (f == BP_GROUP_SPLIT_ATTENTION) {
    bp_attention_args_t *a = &p->args.attention;
    const int64_t shapes[4][4] = {{d[0], d[1], d[2], d[3]}, {d[0], d[1], d[2], d[3]},
                                  {d[0], d[1], d[2], d[3]}, {d[0], d[1], d[2], d[3]}};
    p->op = BP_OP_ATTENTION;
    *a = (bp_attention_args_t){.struct_size = sizeof *a, .scale = 0.125};
    return alloc_tensors(p, 4, (const int[]){4, 4, 4, 4}, shapes,
                         (bp_plugin_tensor_t *const[]){&a->q, &a->k, &a->v, &a->out});
  }
  bp_conv2d_args_t *a = &p->args.conv2d;
  const int64_t shapes[3][4] = {{d[0], d[1], d[2], d[2]}, {d[3], d[1], 3, 3}, {d[0], d[3], d[2], d[2]}};
  p->op = BP_OP_CONV2D;
  *a = (bp_conv2d_args_t){.struct_size = sizeof *a, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1,
                          .dilation_h = 1, .dilation_w = 1, .groups = 1};
  return alloc_tensors(p, 3, (const int[]){4, 4, 4}, shapes, (bp_plugin_tensor_t *const[]){&a->x, &a->w, &a->y});
}

static void problem_free(problem_t *p) {
  for (int i = 0; i < 4; i++) free(p->mem[i]);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The best of a few timed runs after a warm-up (ms), 0 when the member
 * cannot run it. */
static double measure(bp__device_t *d, problem_t *p) {
  if (!bp__group_member_can(d, p->op, &p->args)) return 0;
  bp__stream_t *s = bp__group_member_stream(d);
  if (!s) return 0;
  double best = 0, spent = 0;
  bp_status_t st = bp__group_run_on(s, p->op, &p->args);
  for (int rep = 0; st == BP_OK && rep < 8 && (rep < 3 || spent < 20.0); rep++) {
    double t0 = now_ms();
    st = bp__group_run_on(s, p->op, &p->args);
    double ms = now_ms() - t0;
    spent += ms;
    if (best == 0 || ms < best) best = ms;
  }
  if (st != BP_OK)
    bp__log(BP_LOG_WARN, BP__LOG_API, "group: calibrating %s on '%s' failed (%s); it takes no share of it",
            bp_op_name(p->op), d->entry.info.name, bp_last_error());
  bp__group_member_stream_destroy(s);
  return st == BP_OK ? best : 0;
}

static void tune_key(const bp__device_t *d, bp_group_split_t f, bp_tune_key_t *k) {
  *k = (bp_tune_key_t){.struct_size = sizeof *k, .plugin = d->entry.backend, .plugin_version = d->desc->version,
                       .device = d->entry.info.name, .driver_version = d->entry.info.driver_version,
                       .op = calibrations[f].op, .dtype = "f32", .bucket = calibrations[f].bucket};
}

/* Reads member m's time from the cache; false when there is none. */
static bool from_cache(bp__group_member_t *m, bp_group_split_t f) {
  bp_tune_key_t key;
  char value[BP_TUNE_VALUE_MAX];
  tune_key(m->d, f, &key);
  if (!bp__tune_lookup(&key, value, sizeof value)) return false;
  char *end;
  double ms = strtod(value, &end);
  if (end == value || !(ms >= 0)) return false;
  m->gflops[f] = ms > 0 ? problem_flops(f) / (ms * 1e6) : 0;
  m->measured[f] = true;
  return true;
}

static bp_status_t measure_member(bp__group_member_t *m, bp_group_split_t f) {
  problem_t p;
  bool ok = problem_make(f, &p);
  double ms = ok ? measure(m->d, &p) : 0;
  problem_free(&p);
  if (!ok) return bp__fail(BP_ERR_OUT_OF_MEMORY, "group: no host memory to calibrate %s", calibrations[f].op);
  m->gflops[f] = ms > 0 ? p.flops / (ms * 1e6) : 0;
  m->measured[f] = true;
  bp_tune_key_t key;
  char value[64];
  tune_key(m->d, f, &key);
  snprintf(value, sizeof value, "%.6f", ms);
  bp__tune_store(&key, value);
  bp__log(BP_LOG_INFO, BP__LOG_API, "group: %s on '%s': %.3f ms, %.2f GFLOP/s (stored in the tuning cache)",
          calibrations[f].op, m->d->entry.info.name, ms, m->gflops[f]);
  return BP_OK;
}

bp_status_t bp__group_calibrate(bp__group_t *g, bp_group_split_t f, bp__group_measure_t mode) {
  bp_status_t st = BP_OK;
  pthread_mutex_lock(&g->lock);
  for (uint32_t i = 0; i < g->count && st == BP_OK; i++) {
    bp__group_member_t *m = &g->m[i];
    if (mode != BP__GROUP_REMEASURE && (m->measured[f] || from_cache(m, f))) continue;
    if (mode != BP__GROUP_CACHED) st = measure_member(m, f);
  }
  pthread_mutex_unlock(&g->lock);
  return st;
}

bp_status_t bp__group_calibrate_device(bp__device_t *d, bp__group_measure_t mode) {
  bp__group_member_t m;
  memset(&m, 0, sizeof m);
  m.d = d;
  bp_status_t st = BP_OK;
  for (int f = 0; f < BP_GROUP_SPLIT_COUNT && st == BP_OK; f++)
    if (mode == BP__GROUP_REMEASURE || (!from_cache(&m, (bp_group_split_t)f) && mode != BP__GROUP_CACHED))
      st = measure_member(&m, (bp_group_split_t)f);
  return st;
}

void bp__group_shares_known(bp__group_t *g, bp_group_split_t f, double *share) {
  double v[BP_GROUP_MAX_MEMBERS], total = 0;
  for (uint32_t i = 0; i < g->count; i++) v[i] = g->m[i].measured[f] ? g->m[i].gflops[f] : 0;
  /* One piece of hardware is counted once: its fastest member takes its
   * share, since members that share cores only take them from each other. */
  for (uint32_t i = 0; i < g->count && !g->split_shared; i++)
    for (uint32_t j = 0; j < g->count; j++)
      if (j != i && g->m[j].hardware == g->m[i].hardware && (v[j] > v[i] || (v[j] == v[i] && j < i))) v[i] = 0;
  for (uint32_t i = 0; i < g->count; i++) total += v[i];
  for (uint32_t i = 0; i < g->count; i++) share[i] = total > 0 ? v[i] / total : 0;
}

bp_status_t bp__group_shares(bp__group_t *g, bp_group_split_t f, double *share) {
  bp_status_t st = bp__group_calibrate(g, f, BP__GROUP_MEASURE);
  pthread_mutex_lock(&g->lock);
  bp__group_shares_known(g, f, share);
  pthread_mutex_unlock(&g->lock);
  return st;
}
