/*
 * test_matmul_nd.c — bp_matmul with NumPy matmul shapes on "cpu" and
 * "cpu-ref" against a double reference: batch dimensions of any number
 * that broadcast between a and b (merged into one strided batch where the
 * strides allow, a loop of GEMMs where they do not), rank-1 operands, a
 * transposed view, grouped-query attention's scores through matmul (k
 * broadcast over each kv head's query heads), an epilogue over N-d, every
 * float dtype; and the errors: batches that do not broadcast, inner
 * dimensions that do not chain, a c of the wrong shape, rank 0.
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

#include "tc.h"

typedef struct nd_case {
  int ra, rb;
  int64_t as[6], bs[6];
  bool b_transposed; /* b stored as [..., n, k], passed as a view */
} nd_case_t;

static const nd_case_t nd_cases[] = {
    {4, 2, {2, 3, 4, 5}, {5, 6}, false},             /* one strided batch */
    {4, 3, {2, 1, 4, 5}, {3, 5, 6}, false},          /* both broadcast: a loop */
    {5, 5, {2, 2, 3, 4, 5}, {2, 2, 1, 5, 7}, false}, /* GQA: k over 3 query heads */
    {1, 3, {5}, {3, 5, 6}, false},                   /* a one row */
    {3, 1, {3, 4, 5}, {5}, false},                   /* b one column */
    {1, 1, {5}, {5}, false},                         /* a dot product: c rank 0 */
    {4, 4, {2, 1, 3, 4}, {1, 5, 4, 2}, true},        /* broadcast + transposed b */
    {3, 2, {1, 7, 9}, {9, 3}, false},                /* batch of 1 */
    {6, 3, {2, 1, 2, 1, 3, 4}, {3, 4, 5}, false},    /* rank 6 */
    {3, 3, {0, 4, 5}, {1, 5, 6}, false},             /* empty batch */
};

/* The result's shape (rank returned), NumPy's rules. */
static int nd_result(const nd_case_t *c, int64_t *out, int64_t *m, int64_t *n, int64_t *k) {
  int na = c->ra > 1 ? c->ra - 2 : 0, nb = c->rb > 1 ? c->rb - 2 : 0, nbt = na > nb ? na : nb,
      r = 0;
  for (int i = 0; i < nbt; i++) {
    int ia = i - (nbt - na), ib = i - (nbt - nb);
    int64_t da = ia >= 0 ? c->as[ia] : 1, db = ib >= 0 ? c->bs[ib] : 1;
    out[r++] = da == 1 ? db : da;
  }
  *m = c->ra > 1 ? c->as[c->ra - 2] : 1;
  *k = c->as[c->ra - 1];
  *n = c->rb > 1 ? c->bs[c->rb - 1] : 1;
  if (c->ra > 1) out[r++] = *m;
  if (c->rb > 1) out[r++] = *n;
  return r;
}

/* Index of a batch element (over the result's batch shape) in x's batch. */
static int64_t batch_index(const int64_t *bshape, int nbt, int64_t lin, const int64_t *xs, int nx) {
  if (nx <= 0) return 0;
  return tc_bcast_index(nbt, bshape, lin, nx, xs);
}

static void nd_reference(const nd_case_t *c, const double *a, const double *b, double *out) {
  int64_t rs[8], m, n, k;
  int rr = nd_result(c, rs, &m, &n, &k);
  int nbt = rr - (c->ra > 1) - (c->rb > 1);
  int64_t batches = tc_numel(nbt, rs);
  for (int64_t t = 0; t < batches; t++) {
    int64_t ai = batch_index(rs, nbt, t, c->as, c->ra - 2),
            bi = batch_index(rs, nbt, t, c->bs, c->rb - 2);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int64_t p = 0; p < k; p++) acc += a[(ai * m + i) * k + p] * b[(bi * k + p) * n + j];
        out[(t * m + i) * n + j] = acc;
      }
  }
}

static void nd_one(tc_env_t *e, bp_dtype_t dt, const nd_case_t *c, tc_rng_t *rng) {
  int64_t rs[8], m, n, k;
  int rr = nd_result(c, rs, &m, &n, &k);
  int64_t na = tc_numel(c->ra, c->as), nb = tc_numel(c->rb, c->bs), nc = tc_numel(rr, rs);
  double *a = malloc(sizeof(double) * (size_t)(na + 1)),
         *b = malloc(sizeof(double) * (size_t)(nb + 1));
  double *ref = malloc(sizeof(double) * (size_t)(nc + 1));
  tc_rng_fill(rng, dt, -1, 1, a, na);
  tc_rng_fill(rng, dt, -1, 1, b, nb);
  tc_tensor_t A = tc_tensor(e, dt, c->ra, c->as, TC_STRIDED, a);
  tc_tensor_t B;
  if (c->b_transposed) {
    /* b's last two axes stored swapped: a [.., n, k] tensor viewed as [.., k, n] */
    int64_t st[6], s;
    st[c->rb - 2] = 1, s = c->bs[c->rb - 2];
    st[c->rb - 1] = s, s *= c->bs[c->rb - 1];
    for (int i = c->rb - 3; i >= 0; i--) st[i] = s, s *= c->bs[i];
    B = tc_tensor_strided(e, dt, c->rb, c->bs, st, 0, b);
  } else {
    B = tc_tensor(e, dt, c->rb, c->bs, TC_PERMUTED, b);
  }
  tc_tensor_t C = tc_tensor(e, dt, rr, rs, TC_STRIDED, NULL);
  char what[200];
  snprintf(what, sizeof what, "matmul a rank %d [%lld..] b rank %d [%lld..]%s -> rank %d", c->ra,
           (long long)c->as[0], c->rb, (long long)c->bs[0],
           c->b_transposed ? " (b transposed)" : "", rr);
  bp_status_t st = bp_matmul(e->s, 1.0, &A.t, &B.t, 0.0, &C.t);
  if (tc_expect_status(e, st, BP_OK, "%s", what)) {
    double *y = tc_download(&C);
    nd_reference(c, a, b, ref);
    if (nc) tc_expect_close(e, dt, y, ref, nc, (double)k, "%s", what);
    if (tc_outside_changed(&C))
      print_error("FAIL [%s] %s wrote outside c\n", e->name, what), tc_failures++;
    free(y);
  }
  tc_tensor_free(&A), tc_tensor_free(&B), tc_tensor_free(&C);
  free(a), free(b), free(ref);
}

static void test_matmul_nd(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 2803);
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_GEMM, dt)) continue;
      for (size_t i = 0; i < sizeof nd_cases / sizeof *nd_cases; i++)
        nd_one(&su->env[d], dt, &nd_cases[i], &rng);
    }
  TC_END();
}

/* An epilogue over a batch that needs the loop: bias [n] and relu. */
static void test_matmul_nd_epilogue(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  for (int d = 0; d < su->count; d++) {
    tc_env_t *e = &su->env[d];
    int64_t as[4] = {2, 1, 3, 4}, bs[3] = {3, 4, 5}, cs[4] = {2, 3, 3, 5}, ns[1] = {5};
    double a[24], b[60], bias[5], ref[90];
    for (int i = 0; i < 24; i++) a[i] = (i % 5) * 0.25 - 0.5;
    for (int i = 0; i < 60; i++) b[i] = (i % 7) * 0.25 - 0.75;
    for (int i = 0; i < 5; i++) bias[i] = i * 0.5 - 1;
    tc_tensor_t A = tc_tensor(e, BP_F32, 4, as, TC_CONTIG, a),
                B = tc_tensor(e, BP_F32, 3, bs, TC_CONTIG, b);
    tc_tensor_t C = tc_tensor(e, BP_F32, 4, cs, TC_STRIDED, NULL),
                Bias = tc_tensor(e, BP_F32, 1, ns, TC_CONTIG, bias);
    bp_gemm_epilogue_t ep = {sizeof ep, &Bias.t, true, BP_UNARY_RELU};
    if (tc_expect_status(e, bp_matmul_ex(e->s, 1, &A.t, &B.t, 0, &C.t, &ep), BP_OK,
                         "N-d epilogue")) {
      for (int64_t x = 0; x < 2; x++)
        for (int64_t h = 0; h < 3; h++)
          for (int64_t i = 0; i < 3; i++)
            for (int64_t j = 0; j < 5; j++) {
              double acc = bias[j];
              for (int64_t p = 0; p < 4; p++)
                acc += a[(x * 3 + i) * 4 + p] * b[(h * 4 + p) * 5 + j];
              ref[((x * 3 + h) * 3 + i) * 5 + j] = acc > 0 ? acc : 0;
            }
      double *y = tc_download(&C);
      tc_expect_close(e, BP_F32, y, ref, 90, 4, "N-d epilogue bias relu");
      free(y);
    }
    tc_tensor_free(&A), tc_tensor_free(&B), tc_tensor_free(&C), tc_tensor_free(&Bias);
  }
  TC_END();
}

static void test_matmul_nd_errors(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_env_t *e = &su->env[0];
  int64_t a1[4] = {2, 3, 4, 5}, b1[3] = {4, 5, 6}, c1[4] = {2, 3, 4, 6};
  int64_t b2[2] = {6, 6}, c3[4] = {2, 3, 4, 7}, c4[3] = {3, 4, 6};
  tc_tensor_t A = tc_tensor(e, BP_F32, 4, a1, TC_CONTIG, NULL),
              B = tc_tensor(e, BP_F32, 3, b1, TC_CONTIG, NULL);
  tc_tensor_t B2 = tc_tensor(e, BP_F32, 2, b2, TC_CONTIG, NULL),
              C = tc_tensor(e, BP_F32, 4, c1, TC_CONTIG, NULL);
  tc_tensor_t C3 = tc_tensor(e, BP_F32, 4, c3, TC_CONTIG, NULL),
              C4 = tc_tensor(e, BP_F32, 3, c4, TC_CONTIG, NULL);
  tc_expect_reject(e, bp_matmul(e->s, 1, &A.t, &B.t, 0, &C.t), BP_ERR_INVALID_ARGUMENT, "broadcast",
                   "batch 3 against 4");
  tc_expect_reject(e, bp_matmul(e->s, 1, &A.t, &B2.t, 0, &C.t), BP_ERR_INVALID_ARGUMENT, "chain",
                   "k 5 against 6");
  int64_t b5[2] = {5, 6};
  tc_tensor_t B5 = tc_tensor(e, BP_F32, 2, b5, TC_CONTIG, NULL);
  tc_expect_reject(e, bp_matmul(e->s, 1, &A.t, &B5.t, 0, &C3.t), BP_ERR_INVALID_ARGUMENT, "c",
                   "c [2,3,4,7]");
  tc_expect_reject(e, bp_matmul(e->s, 1, &A.t, &B5.t, 0, &C4.t), BP_ERR_INVALID_ARGUMENT, "c",
                   "c missing a dim");
  bp_tensor_t scalar = A.t;
  scalar.rank = 0;
  tc_expect_reject(e, bp_matmul(e->s, 1, &scalar, &B5.t, 0, &C.t), BP_ERR_INVALID_ARGUMENT, "rank",
                   "a of rank 0");
  if (tc_bytes_changed(&C) || tc_bytes_changed(&C3) || tc_bytes_changed(&C4))
    print_error("FAIL a rejected call wrote c\n"), tc_failures++;
  tc_tensor_free(&A), tc_tensor_free(&B), tc_tensor_free(&B2), tc_tensor_free(&B5);
  tc_tensor_free(&C), tc_tensor_free(&C3), tc_tensor_free(&C4);
  TC_END();
}

/* An empty c whose batch dimensions do not merge (a and b broadcast on
 * different axes) and count 2^42 outer slices: done at once. (It once
 * ran a loop of empty GEMMs over them, which the fuzzer found as a hang.) */
static void test_matmul_nd_empty_huge_batch(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  for (int d = 0; d < su->count; d++) {
    tc_env_t *e = &su->env[d];
    int64_t big = (int64_t)1 << 30;
    int64_t as[5] = {big, 1, 4096, 0, 5}, bs[5] = {1, 4096, 1, 5, 6}, cs[5] = {big, 4096, 4096, 0, 6};
    bp_buffer_t *buf = NULL;
    bp_tensor_t a, b, c;
    assert_int_equal(bp_buffer_alloc(e->dev, (uint64_t)1 << 20, &buf), BP_OK);
    assert_int_equal(bp_tensor_init(buf, 0, BP_F32, 5, as, NULL, &a), BP_OK);
    assert_int_equal(bp_tensor_init(buf, 0, BP_F32, 5, bs, NULL, &b), BP_OK);
    assert_int_equal(bp_tensor_init(buf, 0, BP_F32, 5, cs, NULL, &c), BP_OK);
    bp_status_t st = bp_matmul(e->s, 1, &a, &b, 0, &c);
    tc_checks++;
    if (st != BP_OK || bp_stream_synchronize(e->s) != BP_OK)
      print_error("FAIL %s: empty c over 2^42 batch slices: %s (%s)\n", e->name, bp_status_name(st),
                  bp_last_error()),
          tc_failures++;
    bp_buffer_free(buf);
  }
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_nd),
      cmocka_unit_test(test_matmul_nd_epilogue),
      cmocka_unit_test(test_matmul_nd_errors),
      cmocka_unit_test(test_matmul_nd_empty_huge_batch),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
