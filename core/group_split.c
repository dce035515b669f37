/*
 * group_split.c — splitting one op across a group's members: GEMM over the
 * batch, else over the larger of M and N; attention over kv heads (each
 * with its query heads), else over the batch; conv2d over the batch. Each
 * member takes a contiguous run of that axis in proportion to its share
 * (group_speed.c), as a view of the same group memory, so the slices write
 * disjoint elements and need no merge. The members run at once, one thread
 * each (the caller's thread runs the first slice), because a member's op
 * may run in the calling thread (the CPU plugin does).
 */
#include <stdio.h>
#include <string.h>

#include "group.h"

typedef struct job {
  bp__group_member_t *member;
  bp__stream_t *s;
  bp_op_t op;
  union {
    bp_gemm_args_t gemm;
    bp_attention_args_t attention;
    bp_conv2d_args_t conv2d;
  } args;
  bp_status_t st;
  char msg[1024];
  pthread_t thread;
  bool threaded;
} job_t;

static void *job_run(void *p) {
  job_t *j = p;
  j->st = bp__group_run_on(j->s, j->op, &j->args);
  if (j->st != BP_OK) snprintf(j->msg, sizeof j->msg, "%s", bp_last_error());
  else atomic_fetch_add(&j->member->slices_run, 1);
  return NULL;
}

/* Runs the jobs at once and returns the first failure, with its message. */
static bp_status_t run_jobs(job_t *jobs, int n) {
  for (int i = 1; i < n; i++) jobs[i].threaded = pthread_create(&jobs[i].thread, NULL, job_run, &jobs[i]) == 0;
  job_run(&jobs[0]);
  for (int i = 1; i < n; i++) {
    if (jobs[i].threaded) pthread_join(jobs[i].thread, NULL);
    else job_run(&jobs[i]); /* no thread to be had: run it here */
  }
  for (int i = 0; i < n; i++)
    if (jobs[i].st != BP_OK) return bp__fail(jobs[i].st, "%s", jobs[i].msg);
  return BP_OK;
}

/* Narrows axis of t to [start, start + count). */
static void narrow(bp_plugin_tensor_t *t, int axis, int64_t start, int64_t count) {
  t->offset = (uint64_t)((int64_t)t->offset + start * t->strides[axis] * (int64_t)bp_dtype_size(t->dtype));
  t->shape[axis] = count;
}

/* The members that take part and how many of units each takes (0: none):
 * proportional to shares, rounded so they add up to units. Returns how
 * many members take part (< 2: do not split). */
static int plan(bp__group_t *g, bp_group_split_t family, bp_op_t op, const void *args, int64_t units,
                int64_t *count) {
  double share[BP_GROUP_MAX_MEMBERS], total = 0;
  if (bp__group_shares(g, family, share) != BP_OK) {
    bp__clear_error();
    return 0;
  }
  for (uint32_t i = 0; i < g->count; i++) {
    if (share[i] > 0 && !bp__group_member_can(g->m[i].d, op, args)) share[i] = 0;
    total += share[i];
  }
  if (total <= 0) return 0;
  int parts = 0;
  double cum = 0;
  int64_t given = 0;
  for (uint32_t i = 0; i < g->count; i++) {
    cum += share[i] / total;
    int64_t upto = i + 1 == g->count ? units : (int64_t)(cum * (double)units + 0.5);
    if (upto > units) upto = units;
    count[i] = upto - given;
    given = upto;
    parts += count[i] > 0;
  }
  return parts;
}

/* Builds one job per member with a non-empty slice; slice() narrows the
 * member's copy of args to [start, start + count) of the split axis. */
static bp_status_t split_run(bp__group_t *g, bp__group_stream_t *gs, bp_op_t op, const void *args, size_t size,
                             const int64_t *count, void (*slice)(void *, int64_t, int64_t, int), int axis) {
  job_t jobs[BP_GROUP_MAX_MEMBERS];
  int n = 0;
  int64_t start = 0;
  for (uint32_t i = 0; i < g->count; i++) {
    if (count[i] <= 0) continue;
    job_t *j = &jobs[n++];
    memset(j, 0, sizeof *j);
    j->member = &g->m[i];
    j->s = gs->s[i];
    j->op = op;
    memcpy(&j->args, args, size);
    slice(&j->args, start, count[i], axis);
    start += count[i];
  }
  return run_jobs(jobs, n);
}

/* ---- GEMM: c[batch, m, n] ------------------------------------------------ */

enum { GEMM_BATCH, GEMM_M, GEMM_N };

static void gemm_slice(void *p, int64_t start, int64_t count, int axis) {
  bp_gemm_args_t *a = p;
  if (axis == GEMM_BATCH) {
    narrow(&a->a, 0, start, count), narrow(&a->b, 0, start, count), narrow(&a->c, 0, start, count);
  } else if (axis == GEMM_M) {
    narrow(&a->a, 1, start, count), narrow(&a->c, 1, start, count);
  } else {
    narrow(&a->b, 2, start, count), narrow(&a->c, 2, start, count);
  }
  /* The bias epilogue has c's shape: its slice is c's. */
  if (a->bias.rank) narrow(&a->bias, axis == GEMM_BATCH ? 0 : axis == GEMM_M ? 1 : 2, start, count);
}

bp_status_t bp__group_gemm(bp__group_t *g, bp__group_stream_t *gs, const bp_gemm_args_t *a) {
  int64_t batch = a->c.shape[0], m = a->c.shape[1], n = a->c.shape[2], k = a->a.shape[2];
  double flops = 2.0 * (double)batch * (double)m * (double)n * (double)k;
  if (flops < (double)g->min_split_flops) return bp__group_run_whole(g, gs, BP_OP_GEMM, a);
  int axis = batch >= (int64_t)g->count ? GEMM_BATCH : m >= n ? GEMM_M : GEMM_N;
  int64_t units = axis == GEMM_BATCH ? batch : axis == GEMM_M ? m : n;
  int64_t count[BP_GROUP_MAX_MEMBERS];
  if (plan(g, BP_GROUP_SPLIT_GEMM, BP_OP_GEMM, a, units, count) < 2)
    return bp__group_run_whole(g, gs, BP_OP_GEMM, a);
  return split_run(g, gs, BP_OP_GEMM, a, sizeof *a, count, gemm_slice, axis);
}

/* ---- attention: q [B, Hq, Sq, D], k / v [B, Hkv, Skv, *] ---------------- */

static void attention_slice(void *p, int64_t start, int64_t count, int axis) {
  bp_attention_args_t *a = p;
  if (axis == 0) {
    narrow(&a->q, 0, start, count), narrow(&a->k, 0, start, count);
    narrow(&a->v, 0, start, count), narrow(&a->out, 0, start, count);
    if (a->kv_lens.rank) narrow(&a->kv_lens, 0, start, count);
    if (a->bias.rank) narrow(&a->bias, 0, start, count);
    return;
  }
  /* Query head h uses kv head h / (Hq / Hkv): a run of kv heads takes the
   * run of query heads that use them. */
  int64_t per = a->q.shape[1] / a->k.shape[1];
  narrow(&a->k, 1, start, count), narrow(&a->v, 1, start, count);
  narrow(&a->q, 1, start * per, count * per), narrow(&a->out, 1, start * per, count * per);
  /* The masks that differ by head keep each head's own. */
  if (a->bias.rank) narrow(&a->bias, 1, start * per, count * per);
  if (a->alibi_slopes.rank) narrow(&a->alibi_slopes, 0, start * per, count * per);
  a->alibi_head_offset += (int32_t)(start * per);
}

bp_status_t bp__group_attention(bp__group_t *g, bp__group_stream_t *gs, const bp_attention_args_t *a) {
  int64_t B = a->q.shape[0], hq = a->q.shape[1], hkv = a->k.shape[1], sq = a->q.shape[2], skv = a->k.shape[2];
  double flops = 2.0 * (double)B * (double)hq * (double)sq * (double)skv * (double)(a->q.shape[3] + a->v.shape[3]);
  if (flops < (double)g->min_split_flops || hkv == 0 || (hkv < 2 && B < 2))
    return bp__group_run_whole(g, gs, BP_OP_ATTENTION, a);
  int axis = hkv >= 2 ? 1 : 0;
  int64_t count[BP_GROUP_MAX_MEMBERS];
  if (plan(g, BP_GROUP_SPLIT_ATTENTION, BP_OP_ATTENTION, a, axis ? hkv : B, count) < 2)
    return bp__group_run_whole(g, gs, BP_OP_ATTENTION, a);
  return split_run(g, gs, BP_OP_ATTENTION, a, sizeof *a, count, attention_slice, axis);
}

/* ---- conv2d: x [N, C, H, W], y [N, K, P, Q] ------------------------------ */

static void conv2d_slice(void *p, int64_t start, int64_t count, int axis) {
  bp_conv2d_args_t *a = p;
  (void)axis;
  narrow(&a->x, 0, start, count), narrow(&a->y, 0, start, count);
}

bp_status_t bp__group_conv2d(bp__group_t *g, bp__group_stream_t *gs, const bp_conv2d_args_t *a) {
  const bp_plugin_tensor_t *y = &a->y, *w = &a->w;
  double flops = 2.0 * (double)y->shape[0] * (double)y->shape[1] * (double)y->shape[2] * (double)y->shape[3] *
                 (double)w->shape[1] * (double)w->shape[2] * (double)w->shape[3];
  if (flops < (double)g->min_split_flops || y->shape[0] < 2) return bp__group_run_whole(g, gs, BP_OP_CONV2D, a);
  int64_t count[BP_GROUP_MAX_MEMBERS];
  if (plan(g, BP_GROUP_SPLIT_CONV2D, BP_OP_CONV2D, a, y->shape[0], count) < 2)
    return bp__group_run_whole(g, gs, BP_OP_CONV2D, a);
  return split_run(g, gs, BP_OP_CONV2D, a, sizeof *a, count, conv2d_slice, 0);
}
