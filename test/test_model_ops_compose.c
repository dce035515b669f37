/*
 * test_model_ops_compose.c — the core composites of the model ops on every
 * device (model_ops_harness.h): bp_tensor_narrow views (splitting a
 * packed QKV row), bp_concat (three parts, strided, along a middle axis)
 * and bp_kv_append (a decode loop appending one token at a time, then a
 * chunk); graph capture and replay of a decoder-like sequence using the
 * new ops (embedding gather, RoPE in place, SwiGLU, a scalar multiply, a
 * KV append and a concat) against the same calls run eagerly; and the
 * argument errors of every new call, each with nothing written.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_ops_harness.h"

/* ---- narrow and concat -------------------------------------------------- */

static void c_concat(tc_env_t *e, bp_dtype_t dt) {
  const int64_t s0[3] = {3, 2, 5}, s1[3] = {3, 4, 5}, s2[3] = {3, 1, 5}, ys[3] = {3, 7, 5};
  tc_tensor_t in[3] = {mo_rand(e, dt, 3, s0, TC_CONTIG, -9, 9, 1),
                       mo_rand(e, dt, 3, s1, TC_STRIDED, -9, 9, 2),
                       mo_rand(e, dt, 3, s2, TC_PERMUTED, -9, 9, 3)};
  tc_tensor_t y = tc_tensor(e, dt, 3, ys, TC_STRIDED, NULL);
  bp_tensor_t views[3] = {in[0].t, in[1].t, in[2].t};
  if (tc_expect_status(e, bp_concat(e->s, 3, views, 1, &y.t), BP_OK, "concat %s",
                       bp_dtype_name(dt))) {
    double *v[3] = {tc_values(&in[0]), tc_values(&in[1]), tc_values(&in[2])};
    double *got = tc_download(&y), want[105];
    const int64_t at[3] = {0, 2, 6}, len[3] = {2, 4, 1};
    for (int i = 0; i < 3; i++)
      for (int k = 0; k < 3; k++)
        for (int64_t j = 0; j < len[k]; j++)
          for (int c = 0; c < 5; c++)
            want[(i * 7 + at[k] + j) * 5 + c] = v[k][(i * len[k] + j) * 5 + c];
    tc_expect_exact(e, dt, got, want, 105, "concat %s", bp_dtype_name(dt));
    /* splitting it back: narrow views are the parts */
    for (int k = 0; k < 3; k++) {
      bp_tensor_t part;
      tc_expect_status(e, bp_tensor_narrow(&y.t, -2, at[k], len[k], &part), BP_OK, "narrow part %d",
                       k);
      tc_tensor_t back = tc_tensor(e, dt, 3, k == 0 ? s0 : k == 1 ? s1 : s2, TC_CONTIG, NULL);
      if (tc_expect_status(e, bp_copy(e->s, &part, &back.t), BP_OK, "copy of narrowed part %d",
                           k)) {
        double *b = tc_download(&back);
        tc_expect_exact(e, dt, b, v[k], back.numel, "narrowed part %d %s", k, bp_dtype_name(dt));
        free(b);
      }
      tc_tensor_free(&back);
    }
    for (int k = 0; k < 3; k++) free(v[k]);
    free(got);
  }
  for (int k = 0; k < 3; k++) tc_tensor_free(&in[k]);
  tc_tensor_free(&y);
}

/* ---- KV append ---------------------------------------------------------- */

static void c_kv_append(tc_env_t *e, bp_dtype_t dt) {
  /* cache [batch 2, kv heads 3, max seq 9, head dim 4], seq axis 2 */
  const int64_t cs[4] = {2, 3, 9, 4}, one[4] = {2, 3, 1, 4}, chunk[4] = {2, 3, 4, 4};
  tc_tensor_t cache = tc_tensor(e, dt, 4, cs, TC_CONTIG, NULL);
  tc_expect_status(e, bp_fill(e->s, &cache.t, 0.0), BP_OK, "zero cache");
  double want[216] = {0};
  for (int64_t pos = 0; pos < 9;) {
    bool tok = pos < 3;
    tc_tensor_t f =
        mo_rand(e, dt, 4, tok ? one : chunk, tok ? TC_PERMUTED : TC_STRIDED, -3, 3, 60 + pos);
    if (!tc_expect_status(e, bp_kv_append(e->s, &cache.t, &f.t, -2, pos), BP_OK,
                          "kv_append at %lld", (long long)pos)) {
      tc_tensor_free(&f);
      break;
    }
    double *fv = tc_values(&f);
    int64_t n = f.t.shape[2];
    for (int b = 0; b < 2; b++)
      for (int h = 0; h < 3; h++)
        for (int64_t s = 0; s < n; s++)
          for (int d = 0; d < 4; d++)
            want[((b * 3 + h) * 9 + pos + s) * 4 + d] = fv[((b * 3 + h) * n + s) * 4 + d];
    free(fv);
    tc_tensor_free(&f);
    pos += n;
    if (pos == 7) pos = 5; /* overwrite: the chunk at 3 reaches 7, then 5..8 */
    if (pos == 9) break;
  }
  double *got = tc_download(&cache);
  tc_expect_exact(e, dt, got, want, 216, "kv cache %s", bp_dtype_name(dt));
  free(got);
  tc_tensor_free(&cache);
}

/* ---- graph capture and replay ------------------------------------------- */

typedef struct seq {
  tc_tensor_t table, ids, h, gate, kv, cat;
} seq_t;

static bp_status_t seq_run(tc_env_t *e, seq_t *q) {
  bp_tensor_t up, g, cat[2];
  bp_status_t st = bp_gather(e->s, &q->table.t, &q->ids.t, 0, &q->h.t);
  bp_tensor_t x4 = q->h.t; /* [1, 6, 2, 8]: tokens, heads, head_dim */
  x4.rank = 4, x4.shape[0] = 1, x4.shape[1] = 6, x4.shape[2] = 2, x4.shape[3] = 8;
  x4.strides[3] = 1, x4.strides[2] = 8, x4.strides[1] = 16, x4.strides[0] = 96;
  if (!st) st = bp_rope(e->s, BP_ROPE_HALF, 8, 10000.0, 3, NULL, &x4, &x4);
  if (!st) st = bp_tensor_narrow(&q->h.t, 1, 0, 8, &g);
  if (!st) st = bp_tensor_narrow(&q->h.t, 1, 8, 8, &up);
  if (!st) st = bp_glu(e->s, BP_GLU_SWIGLU, &g, &up, &q->gate.t);
  if (!st) st = bp_binary_scalar(e->s, BP_BINARY_MUL, &q->gate.t, 0.5, &q->gate.t);
  if (!st) st = bp_kv_append(e->s, &q->kv.t, &q->gate.t, 0, 2);
  cat[0] = q->gate.t, cat[1] = q->h.t;
  if (!st) st = bp_concat(e->s, 2, cat, 1, &q->cat.t);
  return st;
}

static void seq_make(tc_env_t *e, bp_dtype_t dt, seq_t *q) {
  const int64_t ts[2] = {13, 16}, is[1] = {6}, hs[2] = {6, 16}, gs[2] = {6, 8}, ks[2] = {10, 8},
                cs[2] = {6, 24};
  const double ids[6] = {3, 12, 0, 7, 7, 1};
  q->table = mo_rand(e, dt, 2, ts, TC_CONTIG, -1, 1, 70);
  q->ids = tc_tensor(e, BP_I32, 1, is, TC_CONTIG, ids);
  q->h = tc_tensor(e, dt, 2, hs, TC_CONTIG, NULL);
  q->gate = tc_tensor(e, dt, 2, gs, TC_CONTIG, NULL);
  q->kv = tc_tensor(e, dt, 2, ks, TC_CONTIG, NULL);
  q->cat = tc_tensor(e, dt, 2, cs, TC_CONTIG, NULL);
  bp_fill(e->s, &q->kv.t, 0.0);
}

static void seq_free(seq_t *q) {
  tc_tensor_t *all[6] = {&q->table, &q->ids, &q->h, &q->gate, &q->kv, &q->cat};
  for (int i = 0; i < 6; i++) tc_tensor_free(all[i]);
}

static void c_graph(tc_env_t *e, bp_dtype_t dt) {
  const bp_op_t ops[] = {BP_OP_GATHER, BP_OP_ROPE, BP_OP_GLU, BP_OP_BINARY_SCALAR, BP_OP_COPY};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!tc_supports(e, ops[i], dt)) {
      printf("  graph %s: not claimed (%s)\n", bp_dtype_name(dt), bp_op_name(ops[i]));
      return;
    }
  seq_t eager, cap;
  seq_make(e, dt, &eager), seq_make(e, dt, &cap);
  tc_expect_status(e, seq_run(e, &eager), BP_OK, "eager sequence");
  bp_graph_t *g = NULL;
  tc_expect_status(e, bp_stream_begin_capture(e->s), BP_OK, "begin capture");
  bp_status_t st = seq_run(e, &cap);
  tc_expect_status(e, bp_stream_end_capture(e->s, &g), BP_OK, "end capture");
  if (tc_expect_status(e, st, BP_OK, "captured sequence") && g) {
    double *before = tc_download(&cap.cat);
    tc_expect_status(e, tc_bytes_changed(&cap.cat) ? BP_ERR_INTERNAL : BP_OK, BP_OK,
                     "capture ran nothing");
    free(before);
    for (int rep = 0; rep < 2; rep++) {
      tc_expect_status(e, bp_graph_launch(g, e->s), BP_OK, "graph launch %d", rep);
      tc_expect_status(e, bp_stream_synchronize(e->s), BP_OK, "sync");
      tc_tensor_t *pairs[2][2] = {{&eager.cat, &cap.cat}, {&eager.kv, &cap.kv}};
      for (int k = 0; k < 2; k++) {
        double *a = tc_download(pairs[k][0]), *b = tc_download(pairs[k][1]);
        tc_expect_exact(e, dt, b, a, pairs[k][0]->numel, "graph replay %d vs eager (%s) %s", rep,
                        k ? "kv" : "concat", bp_dtype_name(dt));
        free(a), free(b);
      }
    }
    printf("  graph %s: %u ops, %s\n", bp_dtype_name(dt), bp_graph_size(g),
           bp_graph_is_native(g) ? "native" : "replayed");
  }
  if (g) bp_graph_destroy(g);
  seq_free(&eager), seq_free(&cap);
}

int main(void) {
  static const mo_case_t cases[] = {
      {"concat + narrow", BP_OP_COPY, true, c_concat},
      {"kv_append", BP_OP_COPY, true, c_kv_append},
      {"graph of model ops", BP_OP_GATHER, false, c_graph},
  };
  return mo_run("model ops (composites, graphs)", cases, (int)(sizeof cases / sizeof cases[0]));
}
