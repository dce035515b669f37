/*
 * bench_unfused.c — the unfused attention anchor of bp bench: the same
 * non-causal attention as three dispatches on the same device (batched
 * S = Q·Kᵀ·scale, row softmax of S, O = S·V), timed like the fused op, so
 * the ratio says what fusing buys on that device. For a causal case the
 * chain runs without the mask (a fourth, masking dispatch would only add
 * time), so its ratio understates what fusing buys.
 */
#include <math.h>

#include "bench.h"
#include "bp.h"

#define UNFUSED_MAX_SCORES (256ll << 20) /* bytes of the score matrix */

typedef struct unfused {
  bp_stream_t *s;
  bp_buffer_t *q, *k, *v, *p, *o;
  int64_t bh, sq, d;
} unfused_t;

static bp_status_t run(unfused_t *u) {
  int64_t bh = u->bh, S = u->sq, D = u->d;
  bp_status_t st = bp_gemm_strided_batched(u->s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_TRANS, S, S,
                                           D, 1.0 / sqrt((double)D), u->q, 0, D, S * D, u->k, 0, D,
                                           S * D, 0.0, u->p, 0, S, S * S, bh);
  bp_tensor_t p;
  int64_t shape[2] = {bh * S, S};
  if (st == BP_OK) st = bp_tensor_init(u->p, 0, BP_F32, 2, shape, NULL, &p);
  if (st == BP_OK) st = bp_softmax(u->s, &p, -1, false, &p);
  if (st == BP_OK)
    st = bp_gemm_strided_batched(u->s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, S, D, S, 1.0,
                                 u->p, 0, S, S * S, u->v, 0, D, S * D, 0.0, u->o, 0, D, S * D, bh);
  return st;
}

/* Best time of one unfused attention in ms after a warm-up (at least
 * t->min_reps runs and t->min_seconds, at most t->max_reps); -1 when it
 * cannot run here. */
double bench_unfused_attention_ms(bp_device_t *dev, const bpt_case_t *c, const bench_timing_t *t) {
  if (c->op != BPT_ATTENTION || c->dtype != BP_F32) return -1;
  unfused_t u = {.bh = c->batch * c->heads, .sq = c->seq, .d = c->dim};
  uint64_t qkv = (uint64_t)(u.bh * u.sq * u.d) * 4, scores = (uint64_t)(u.bh * u.sq * u.sq) * 4;
  if (scores > (uint64_t)UNFUSED_MAX_SCORES) return -1;
  double best = -1;
  bp_buffer_t **bufs[5] = {&u.q, &u.k, &u.v, &u.p, &u.o};
  bp_status_t st = bp_stream_create(dev, &u.s);
  for (int i = 0; i < 5 && st == BP_OK; i++)
    st = bp_buffer_alloc(dev, i == 3 ? scores : qkv, bufs[i]);
  for (int i = 0; i < 3 && st == BP_OK; i++) {
    bp_tensor_t x;
    int64_t n = u.bh * u.sq * u.d;
    st = bp_tensor_init(*bufs[i], 0, BP_F32, 1, &n, NULL, &x);
    if (st == BP_OK) st = bp_fill(u.s, &x, 0.01 * (i + 1));
  }
  if (st == BP_OK) st = run(&u); /* warm-up: pipelines, tuning */
  if (st == BP_OK) st = bp_stream_synchronize(u.s);
  double t0 = bpt_now();
  for (int r = 0; st == BP_OK && r < t->max_reps; r++) {
    double t1 = bpt_now();
    st = run(&u);
    if (st == BP_OK) st = bp_stream_synchronize(u.s);
    double ms = (bpt_now() - t1) * 1e3;
    if (st == BP_OK && (best < 0 || ms < best)) best = ms;
    if (r + 1 >= t->min_reps && bpt_now() - t0 >= t->min_seconds) break;
  }
  for (int i = 0; i < 5; i++) bp_buffer_free(*bufs[i]);
  bp_stream_destroy(u.s);
  return st == BP_OK ? best : -1;
}
