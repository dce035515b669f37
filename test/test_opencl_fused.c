/*
 * test_opencl_fused.c — the OpenCL paths of the GEMM epilogue and the
 * attention masks that the shared suites (test_gemm_epilogue,
 * test_attention_mask) do not reach with their small, strided cases: the
 * skinny kernels (gemm_skinny_n with B's rows contiguous, gemm_skinny_k with
 * x Wt), the batched tiled GEMM with a per-batch bias, and attention on the
 * tuned GEMM (Sq >= 16, Skv >= 64) with every mask, next to the fused
 * decode kernel. Each runs on the OpenCL device and on cpu-ref with the
 * same inputs, in f32 and bf16, and must agree; then a captured graph
 * replays a linear layer and a masked attention natively and must give the
 * same answer again.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "skip.h"
#include "tc.h"

static tc_env_t cl, ref; /* the OpenCL device and cpu-ref */
static bp_context_t *ctx;

/* ---- GEMM epilogue ------------------------------------------------------- */

typedef struct lin_case {
  int64_t batch, m, n, k;
  bool b_transposed; /* b [k, n] a view of a stored [n, k] (x Wt) */
  int bias;          /* 1 [n], 2 [m, 1], 3 [batch, m, n] */
  bp_unary_op_t act;
  double beta;
  const char *path;
} lin_case_t;

static const lin_case_t lin_cases[] = {
    {1, 3, 200, 300, false, 1, BP_UNARY_GELU, 1, "skinny_n"},
    {2, 5, 96, 160, false, 3, BP_UNARY_TANH, 0.5, "skinny_n batched"},
    {1, 4, 70, 256, true, 1, BP_UNARY_SILU, 1, "skinny_k"},
    {2, 70, 90, 64, false, 3, BP_UNARY_SIGMOID, 0.5, "tiled batched"},
    {1, 96, 80, 72, true, 2, BP_UNARY_RELU, 0, "tiled"},
};

typedef struct lin_data {
  tc_tensor_t a, b, c, bias;
} lin_data_t;

static void lin_make(tc_env_t *e, bp_dtype_t dt, const lin_case_t *c, const double *const v[4],
                     lin_data_t *out) {
  int64_t as[3] = {c->batch, c->m, c->k}, bs[2] = {c->k, c->n}, cs[3] = {c->batch, c->m, c->n};
  int64_t bias_s[3] = {c->batch, c->m, c->n};
  int br = c->bias == 1 ? 1 : c->bias == 2 ? 2 : 3;
  if (c->bias == 1) bias_s[0] = c->n;
  if (c->bias == 2) bias_s[0] = c->m, bias_s[1] = 1;
  out->a = tc_tensor(e, dt, 3, as, TC_CONTIG, v[0]);
  out->b = tc_tensor(e, dt, 2, bs, c->b_transposed ? TC_PERMUTED : TC_CONTIG, v[1]);
  out->c = tc_tensor(e, dt, 3, cs, TC_CONTIG, v[2]);
  out->bias = tc_tensor(e, dt, br, bias_s, TC_CONTIG, v[3]);
}

static void lin_free(lin_data_t *d) {
  tc_tensor_free(&d->a), tc_tensor_free(&d->b), tc_tensor_free(&d->c), tc_tensor_free(&d->bias);
}

/* c after the case's matmul_ex on e (NULL when the call failed). */
static double *lin_run(tc_env_t *e, bp_dtype_t dt, const lin_case_t *c, const double *const v[4]) {
  lin_data_t d;
  lin_make(e, dt, c, v, &d);
  bp_gemm_epilogue_t ep = {sizeof ep, &d.bias.t, true, c->act};
  bp_status_t st = bp_matmul_ex(e->s, 0.75, &d.a.t, &d.b.t, c->beta, &d.c.t, &ep);
  double *y = tc_expect_status(e, st, BP_OK, "%s matmul_ex", c->path) ? tc_download(&d.c) : NULL;
  lin_free(&d);
  return y;
}

static void lin_values(const lin_case_t *c, bp_dtype_t dt, tc_rng_t *rng, double *v[4]) {
  int64_t n[4] = {c->batch * c->m * c->k, c->k * c->n, c->batch * c->m * c->n,
                  c->batch * c->m * c->n};
  for (int i = 0; i < 4; i++) {
    v[i] = malloc(sizeof(double) * (size_t)n[i]);
    tc_rng_fill(rng, dt, -1, 1, v[i], n[i]);
  }
}

static void test_epilogue_paths(void **state) {
  (void)state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 2828);
  const bp_dtype_t dts[2] = {BP_F32, BP_BF16};
  for (int t = 0; t < 2; t++)
    for (size_t i = 0; i < sizeof lin_cases / sizeof *lin_cases; i++) {
      const lin_case_t *c = &lin_cases[i];
      double *v[4];
      lin_values(c, dts[t], &rng, v);
      double *y = lin_run(&cl, dts[t], c, (const double *const *)v);
      double *r = lin_run(&ref, dts[t], c, (const double *const *)v);
      if (y && r)
        tc_expect_close(&cl, dts[t], y, r, c->batch * c->m * c->n, (double)c->k, "%s %s", c->path,
                        bp_dtype_name(dts[t]));
      free(y), free(r);
      for (int j = 0; j < 4; j++) free(v[j]);
    }
  TC_END();
}

/* ---- attention masks ------------------------------------------------------ */

/* B is 2 in every case: the key lengths and the masked bias row name two
 * batch entries. */
typedef struct att_case {
  int64_t B, Hq, Hkv, Sq, Skv, D;
  bool causal;
  int window;
  int lens;  /* 0 none; 1 {Skv, Skv / 2 + 3}; 2 {0, Skv - 9} */
  int bias;  /* 0 none; 1 [Sq, Skv]; 2 [B, Hq, Sq, Skv] with a -inf row */
  int alibi; /* 0 none; 1 standard slopes; 2 slopes tensor */
  const char *path;
} att_case_t;

static const att_case_t att_cases[] = {
    {2, 4, 2, 24, 80, 16, true, 0, 1, 0, 0, "gemm causal lens"},
    {2, 4, 2, 40, 96, 16, false, 20, 0, 2, 1, "gemm window bias alibi"},
    {2, 4, 4, 33, 70, 8, false, 0, 2, 1, 2, "gemm lens 0 bias slopes"},
    {2, 4, 2, 18, 64, 16, true, 7, 1, 2, 1, "gemm all masks"},
    {2, 4, 2, 1, 80, 16, false, 30, 1, 1, 1, "decode window lens bias alibi"},
    {2, 8, 2, 4, 90, 16, true, 0, 2, 2, 2, "decode causal lens 0 bias slopes"},
};

typedef struct att_data {
  tc_tensor_t q, k, v, out, lens, bias, slopes;
} att_data_t;

/* The inputs of case c: q, k, v, bias values and (for -inf) the head and
 * row of the bias that masks a whole row. */
typedef struct att_values {
  double *q, *k, *v, *bias, *slopes;
  double lens[2];
  int64_t bias_shape[4];
  int bias_rank;
} att_values_t;

static void att_values(const att_case_t *c, bp_dtype_t dt, tc_rng_t *rng, att_values_t *w) {
  int64_t nq = c->B * c->Hq * c->Sq * c->D, nk = c->B * c->Hkv * c->Skv * c->D;
  w->q = malloc(sizeof(double) * (size_t)nq);
  w->k = malloc(sizeof(double) * (size_t)nk);
  w->v = malloc(sizeof(double) * (size_t)nk);
  tc_rng_fill(rng, dt, -1, 1, w->q, nq);
  tc_rng_fill(rng, dt, -1, 1, w->k, nk);
  tc_rng_fill(rng, dt, -1, 1, w->v, nk);
  w->lens[0] = c->lens == 1 ? (double)c->Skv : 0;
  w->lens[1] = c->lens == 1 ? (double)(c->Skv / 2 + 3) : (double)(c->Skv - 9);
  int64_t full[4] = {c->B, c->Hq, c->Sq, c->Skv};
  w->bias_rank = c->bias == 1 ? 2 : 4;
  /* a [Sq, Skv] bias is the last two of the full shape's four */
  memcpy(w->bias_shape, c->bias == 1 ? full + 2 : full, sizeof(int64_t) * (size_t)w->bias_rank);
  int64_t nb = tc_numel(w->bias_rank, w->bias_shape);
  w->bias = malloc(sizeof(double) * (size_t)nb);
  tc_rng_fill(rng, dt, -2, 2, w->bias, nb);
  if (c->bias == 2) /* batch 1, head 1, row Sq - 1: every key -inf */
    for (int64_t j = 0; j < c->Skv; j++)
      w->bias[((1 * c->Hq + 1) * c->Sq + c->Sq - 1) * c->Skv + j] = -INFINITY;
  w->slopes = malloc(sizeof(double) * (size_t)c->Hq);
  for (int64_t h = 0; h < c->Hq; h++) w->slopes[h] = 0.05 + 0.11 * (double)h;
}

static void att_values_free(att_values_t *w) {
  free(w->q), free(w->k), free(w->v), free(w->bias), free(w->slopes);
}

static void att_make(tc_env_t *e, bp_dtype_t dt, const att_case_t *c, const att_values_t *w,
                     att_data_t *d) {
  int64_t qs[4] = {c->B, c->Hq, c->Sq, c->D}, ks[4] = {c->B, c->Hkv, c->Skv, c->D};
  int64_t two[1] = {2}, hq[1] = {c->Hq};
  d->q = tc_tensor(e, dt, 4, qs, TC_CONTIG, w->q);
  d->k = tc_tensor(e, dt, 4, ks, TC_CONTIG, w->k);
  d->v = tc_tensor(e, dt, 4, ks, TC_CONTIG, w->v);
  d->out = tc_tensor(e, dt, 4, qs, TC_CONTIG, NULL);
  d->lens = tc_tensor(e, BP_I32, 1, two, TC_CONTIG, w->lens);
  d->bias = tc_tensor(e, dt, w->bias_rank, w->bias_shape, TC_CONTIG, w->bias);
  d->slopes = tc_tensor(e, BP_F32, 1, hq, TC_CONTIG, w->slopes);
}

static void att_free(att_data_t *d) {
  tc_tensor_free(&d->q), tc_tensor_free(&d->k), tc_tensor_free(&d->v), tc_tensor_free(&d->out);
  tc_tensor_free(&d->lens), tc_tensor_free(&d->bias), tc_tensor_free(&d->slopes);
}

static bp_attention_options_t att_options(const att_case_t *c, att_data_t *d) {
  bp_attention_options_t o = {.struct_size = sizeof o,
                              .causal = c->causal,
                              .window = c->window,
                              .kv_lens = c->lens ? &d->lens.t : NULL,
                              .bias = c->bias ? &d->bias.t : NULL,
                              .alibi = c->alibi == 1,
                              .alibi_slopes = c->alibi == 2 ? &d->slopes.t : NULL};
  return o;
}

static double *att_run(tc_env_t *e, bp_dtype_t dt, const att_case_t *c, const att_values_t *w) {
  att_data_t d;
  att_make(e, dt, c, w, &d);
  bp_attention_options_t o = att_options(c, &d);
  bp_status_t st = bp_attention_ex(e->s, &d.q.t, &d.k.t, &d.v.t, &o, &d.out.t);
  double *y =
      tc_expect_status(e, st, BP_OK, "%s attention_ex", c->path) ? tc_download(&d.out) : NULL;
  att_free(&d);
  return y;
}

/* Rows of y that must be exactly zero: batch 0 with length 0, and the row
 * the bias masks; counts the others. */
static void att_zero_rows(const att_case_t *c, const double *y) {
  int64_t n = c->Sq * c->D;
  for (int64_t h = 0; c->lens == 2 && h < c->Hq; h++)
    for (int64_t i = 0; i < n; i++)
      if (y[h * n + i] != 0.0) {
        print_error("FAIL %s: batch 0 (length 0) head %lld not zero\n", c->path, (long long)h);
        tc_failures++;
        return;
      }
  for (int64_t i = 0; c->bias == 2 && i < c->D; i++)
    if (y[((1 * c->Hq + 1) * c->Sq + c->Sq - 1) * c->D + i] != 0.0) {
      print_error("FAIL %s: the row the bias masks is not zero\n", c->path);
      tc_failures++;
      return;
    }
}

static void test_mask_paths(void **state) {
  (void)state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 2829);
  const bp_dtype_t dts[2] = {BP_F32, BP_BF16};
  for (int t = 0; t < 2; t++)
    for (size_t i = 0; i < sizeof att_cases / sizeof *att_cases; i++) {
      const att_case_t *c = &att_cases[i];
      att_values_t w;
      att_values(c, dts[t], &rng, &w);
      double *y = att_run(&cl, dts[t], c, &w), *r = att_run(&ref, dts[t], c, &w);
      if (y && r) {
        tc_expect_close(&cl, dts[t], y, r, c->B * c->Hq * c->Sq * c->D, (double)c->D, "%s %s",
                        c->path, bp_dtype_name(dts[t]));
        att_zero_rows(c, y);
      }
      free(y), free(r);
      att_values_free(&w);
    }
  TC_END();
}

/* ---- native graphs with the new kernel arguments ------------------------- */

/* A linear layer and a masked attention captured on OpenCL, replayed
 * twice: both must match the eager cpu-ref results each time. */
static void test_graph_replay(void **state) {
  (void)state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 2830);
  const lin_case_t *lc = &lin_cases[3];
  const att_case_t *ac = &att_cases[3];
  double *v[4];
  att_values_t w;
  lin_values(lc, BP_F32, &rng, v);
  att_values(ac, BP_F32, &rng, &w);
  double *lref = lin_run(&ref, BP_F32, lc, (const double *const *)v);
  double *aref = att_run(&ref, BP_F32, ac, &w);
  lin_data_t ld;
  att_data_t ad;
  lin_make(&cl, BP_F32, lc, (const double *const *)v, &ld);
  att_make(&cl, BP_F32, ac, &w, &ad);
  bp_gemm_epilogue_t ep = {sizeof ep, &ld.bias.t, true, lc->act};
  bp_attention_options_t o = att_options(ac, &ad);
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_begin_capture(cl.s), BP_OK);
  bp_status_t st1 = bp_matmul_ex(cl.s, 0.75, &ld.a.t, &ld.b.t, 0, &ld.c.t, &ep);
  bp_status_t st2 = bp_attention_ex(cl.s, &ad.q.t, &ad.k.t, &ad.v.t, &o, &ad.out.t);
  assert_int_equal(bp_stream_end_capture(cl.s, &g), BP_OK);
  tc_expect_status(&cl, st1, BP_OK, "captured matmul_ex");
  tc_expect_status(&cl, st2, BP_OK, "captured attention_ex");
  /* beta 0 in the capture: c's initial values do not matter */
  lin_case_t c0 = *lc;
  c0.beta = 0;
  double *lref0 = lin_run(&ref, BP_F32, &c0, (const double *const *)v);
  for (int run = 0; run < 2 && lref && aref && lref0; run++) {
    tc_expect_status(&cl, bp_graph_launch(g, cl.s), BP_OK, "graph launch %d", run);
    /* PoCL records command buffers (built at the first launch) */
    if (strstr(cl.name, "pthread") && !bp_graph_is_native(g)) {
      print_error("FAIL: the graph on %s is not native\n", cl.name);
      tc_failures++;
    }
    double *ly = tc_download(&ld.c), *ay = tc_download(&ad.out);
    tc_expect_close(&cl, BP_F32, ly, lref0, lc->batch * lc->m * lc->n, (double)lc->k,
                    "replayed linear layer, run %d", run);
    tc_expect_close(&cl, BP_F32, ay, aref, ac->B * ac->Hq * ac->Sq * ac->D, (double)ac->D,
                    "replayed masked attention, run %d", run);
    free(ly), free(ay);
  }
  bp_graph_destroy(g);
  lin_free(&ld), att_free(&ad);
  free(lref), free(lref0), free(aref);
  for (int j = 0; j < 4; j++) free(v[j]);
  att_values_free(&w);
  TC_END();
}

int main(void) {
  int rc = tc_open_with_ref(&ctx, "opencl", &cl, &ref);
  if (rc >= 0) return rc;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_epilogue_paths),
      cmocka_unit_test(test_mask_paths),
      cmocka_unit_test(test_graph_replay),
  };
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  tc_close_with_ref(ctx, &cl, &ref);
  return rc;
}
