/*
 * test_ops_attention.c — scaled dot-product attention: plain and causal,
 * seq_q != seq_kv (bottom-right aligned mask; rows with every key masked
 * give zeros), grouped-query attention, explicit and default scale,
 * D != Dv, [B,S,H,D]-stored tensors viewed as [B,H,S,D], large scores and
 * empty shapes, on every float dtype the device claims, against
 * test/common/ref.c.
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

#include "ref.h"
#include "tc.h"

typedef struct attn_case {
  int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
  double scale; /* 0: 1/sqrt(D) */
  double range; /* inputs in [-range, range] */
} attn_case_t;

static const attn_case_t attn_cases[] = {
    {1, 1, 1, 1, 1, 1, 1, 0, 1},      {2, 4, 4, 7, 7, 13, 13, 0, 1},
    {1, 4, 2, 5, 13, 8, 7, 0, 1},     /* GQA, Sq < Skv */
    {1, 2, 1, 13, 5, 8, 8, 0, 1},     /* Sq > Skv: 8 rows fully masked */
    {1, 6, 2, 31, 31, 16, 16, 0.3, 1}, /* GQA 3:1, explicit scale */
    {2, 2, 2, 3, 127, 4, 5, 0, 1},    /* long kv, decode-like */
    {1, 1, 1, 7, 7, 16, 16, 0, 4},    /* scores in the hundreds */
    {0, 2, 1, 3, 3, 4, 4, 0, 1},      /* B = 0 */
    {1, 2, 1, 0, 5, 4, 4, 0, 1},      /* Sq = 0 */
    /* sizes the fast kernels block: long kv, head dims 64 / 128 */
    {1, 4, 2, 33, 300, 64, 64, 0, 1}, {1, 2, 2, 128, 128, 128, 128, 0, 1},
};

/* Strides of a [B,H,S,D] view over [B,S,H,D] storage. */
static void bshd_strides(const int64_t *s, int64_t *st) {
  st[3] = 1;
  st[1] = s[3];
  st[2] = s[1] * s[3];
  st[0] = s[2] * s[1] * s[3];
}

static void attn_one(tc_env_t *e, bp_dtype_t dt, const attn_case_t *c, bool causal,
                     int variant, tc_rng_t *rng) {
  int64_t qs[4] = {c->B, c->Hq, c->Sq, c->D}, ks[4] = {c->B, c->Hkv, c->Skv, c->D};
  int64_t vs[4] = {c->B, c->Hkv, c->Skv, c->Dv}, os[4] = {c->B, c->Hq, c->Sq, c->Dv};
  int64_t nq = tc_numel(4, qs), nk = tc_numel(4, ks), nv = tc_numel(4, vs), no = tc_numel(4, os);
  double *q = malloc(sizeof(double) * (size_t)(nq + 1)), *k = malloc(sizeof(double) * (size_t)(nk + 1));
  double *v = malloc(sizeof(double) * (size_t)(nv + 1)), *ref = malloc(sizeof(double) * (size_t)(no + 1));
  tc_rng_fill(rng, dt, -c->range, c->range, q, nq);
  tc_rng_fill(rng, dt, -c->range, c->range, k, nk);
  tc_rng_fill(rng, dt, -1, 1, v, nv);
  tc_tensor_t Q, K, V, O;
  if (variant < 0) { /* unpadded, offset 0: [B,H,S,D] (-1) or [B,S,H,D] (-2) */
    int64_t st[4];
    const int64_t *shapes[4] = {qs, ks, vs, os};
    tc_tensor_t *views[4] = {&Q, &K, &V, &O};
    const double *vals[4] = {q, k, v, NULL};
    for (int x = 0; x < 4; x++) {
      if (variant == -1) *views[x] = tc_tensor(e, dt, 4, shapes[x], TC_CONTIG, vals[x]);
      else bshd_strides(shapes[x], st), *views[x] = tc_tensor_strided(e, dt, 4, shapes[x], st, 0, vals[x]);
    }
  } else if (variant % 2) { /* [B,S,H,D] storage, as transformer code keeps it */
    int64_t st[4];
    bshd_strides(qs, st);
    Q = tc_tensor_strided(e, dt, 4, qs, st, 1, q);
    bshd_strides(ks, st);
    K = tc_tensor_strided(e, dt, 4, ks, st, 0, k);
    bshd_strides(vs, st);
    V = tc_tensor_strided(e, dt, 4, vs, st, 2, v);
    bshd_strides(os, st);
    O = tc_tensor_strided(e, dt, 4, os, st, 3, NULL);
  } else {
    Q = tc_tensor(e, dt, 4, qs, TC_STRIDED, q);
    K = tc_tensor(e, dt, 4, ks, (tc_layout_t)(variant / 2 % TC_LAYOUT_COUNT), k);
    V = tc_tensor(e, dt, 4, vs, TC_CONTIG, v);
    O = tc_tensor(e, dt, 4, os, TC_STRIDED, NULL);
  }
  bp_status_t st = bp_attention(e->s, &Q.t, &K.t, &V.t, c->scale, causal, &O.t);
  char what[200];
  snprintf(what, sizeof what, "attention%s B%lld Hq%lld Hkv%lld Sq%lld Skv%lld D%lld Dv%lld scale %g v%d",
           causal ? " causal" : "", (long long)c->B, (long long)c->Hq, (long long)c->Hkv,
           (long long)c->Sq, (long long)c->Skv, (long long)c->D, (long long)c->Dv, c->scale,
           variant);
  if (tc_expect_status(e, st, BP_OK, "%s", what)) {
    double *y = tc_download(&O);
    double scale = c->scale > 0 ? c->scale : 1 / sqrt((double)c->D);
    ref_attention(c->B, c->Hq, c->Hkv, c->Sq, c->Skv, c->D, c->Dv, scale, causal, q, k, v, ref);
    tc_expect_close(e, dt, y, ref, no, (double)(c->Skv > c->D ? c->Skv : c->D), "%s", what);
    /* fully masked rows are exactly zero */
    for (int64_t i = 0; causal && i < no; i++) {
      int64_t row = (i / c->Dv) % (c->Sq ? c->Sq : 1);
      if (row + c->Skv - c->Sq < 0 && y[i] != 0) {
        print_error("FAIL [%s %s] %s: fully masked row %lld gives %g, not 0\n", e->name,
                    bp_dtype_name(dt), what, (long long)row, y[i]);
        tc_failures++;
        break;
      }
    }
    if (tc_outside_changed(&O))
      print_error("FAIL [%s] %s wrote outside out\n", e->name, what), tc_failures++;
    free(y);
  }
  tc_tensor_free(&Q), tc_tensor_free(&K), tc_tensor_free(&V), tc_tensor_free(&O);
  free(q), free(k), free(v), free(ref);
}

static void test_attention(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 71);
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_ATTENTION, dt))
        continue;
      int v = 0;
      for (size_t c = 0; c < sizeof attn_cases / sizeof *attn_cases; c++)
        for (int causal = 0; causal < 2; causal++, v++)
          attn_one(&su->env[d], dt, &attn_cases[c], causal, v, &rng);
    }
  TC_END();
}

/* With one key, causal attention copies v for the rows that see it. With
 * Sq = Skv + 2, the first two rows see nothing and must be exactly 0. */
/* Head dims 64 and 128 in f16 / bf16 with unpadded views: what CUDA's
 * tensor-core kernel takes (tiles of 128 query rows and 32 / 64 keys, so
 * the sizes here end mid-tile; GQA, Sq != Skv, rows that see no key). */
static const attn_case_t mma_cases[] = {
    {2, 4, 2, 100, 130, 64, 64, 0, 1}, {1, 2, 2, 130, 100, 128, 128, 0.3, 1},
    {1, 4, 1, 1, 77, 64, 64, 0, 1},    {1, 2, 1, 129, 300, 128, 128, 0, 2},
};

static void test_attention_16bit_unpadded(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 73);
  const bp_dtype_t dts[2] = {BP_F16, BP_BF16};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 2; t++) {
      if (!tc_supports(&su->env[d], BP_OP_ATTENTION, dts[t]))
        continue;
      for (size_t c = 0; c < sizeof mma_cases / sizeof *mma_cases; c++)
        for (int causal = 0; causal < 2; causal++)
          attn_one(&su->env[d], dts[t], &mma_cases[c], causal, -1 - (int)((c + causal) % 2), &rng);
    }
  TC_END();
}

static void test_attention_masked_rows(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const int64_t qs[4] = {1, 1, 3, 2}, ks[4] = {1, 1, 1, 2}, os[4] = {1, 1, 3, 2};
  const double q[6] = {1, 2, 3, 4, 5, 6}, k[2] = {0.5, -0.5}, v[2] = {0.25, -0.75};
  const double ref[6] = {0, 0, 0, 0, 0.25, -0.75};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_ATTENTION, dt))
        continue;
      tc_tensor_t Q = tc_tensor(e, dt, 4, qs, TC_CONTIG, q), K = tc_tensor(e, dt, 4, ks, TC_CONTIG, k);
      tc_tensor_t V = tc_tensor(e, dt, 4, ks, TC_CONTIG, v), O = tc_tensor(e, dt, 4, os, TC_CONTIG, NULL);
      if (tc_expect_status(e, bp_attention(e->s, &Q.t, &K.t, &V.t, 0, true, &O.t), BP_OK,
                           "attention masked rows")) {
        double *y = tc_download(&O);
        tc_expect_exact(e, dt, y, ref, 6, "causal attention, Sq 3 > Skv 1");
        free(y);
      }
      tc_tensor_free(&Q), tc_tensor_free(&K), tc_tensor_free(&V), tc_tensor_free(&O);
    }
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attention),
      cmocka_unit_test(test_attention_16bit_unpadded),
      cmocka_unit_test(test_attention_masked_rows),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
