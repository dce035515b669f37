/*
 * test_attention_errors.c — bp_attention's validation names the tensor that
 * is wrong (issue 28, item 4): q passed as [batch, seq, heads, head_dim]
 * blames q, not out (whose dims are the first to disagree with it); a
 * transposed out with a right q blames out; a transposed k or v is named. Every
 * refused call leaves out as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backplane.h"

enum { B = 2, H = 8, HKV = 2, D = 16, MAXN = B * 128 * H * D };

typedef struct fixture {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *q, *k, *v, *out;
} fixture_t;

static fixture_t fx;

static int setup(void **state) {
  (void)state;
  if (bp_context_create(NULL, &fx.ctx) != BP_OK ||
      bp_device_open(fx.ctx, "cpu-ref", NULL, &fx.dev) != BP_OK ||
      bp_stream_create(fx.dev, &fx.s) != BP_OK)
    return -1;
  bp_buffer_t **bufs[4] = {&fx.q, &fx.k, &fx.v, &fx.out};
  float *ones = malloc(MAXN * sizeof *ones);
  if (!ones) return -1;
  for (int i = 0; i < MAXN; i++) ones[i] = 0.25f;
  for (int i = 0; i < 4; i++)
    if (bp_buffer_alloc(fx.dev, MAXN * sizeof(float), bufs[i]) != BP_OK ||
        bp_buffer_write(*bufs[i], 0, ones, MAXN * sizeof(float)) != BP_OK)
      return -1;
  free(ones);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  bp_device_close(fx.dev);
  bp_context_destroy(fx.ctx);
  return 0;
}

static bp_tensor_t t4(bp_buffer_t *b, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
  int64_t shape[4] = {d0, d1, d2, d3};
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 4, shape, NULL, &t), BP_OK);
  return t;
}

/* The call is refused, the message names `blamed` as the tensor at fault
 * and not `innocent`, and out is untouched (still all 0.25). */
static void expect_refused(const bp_tensor_t *q, const bp_tensor_t *k, const bp_tensor_t *v,
                           const bp_tensor_t *out, const char *blamed, const char *innocent) {
  assert_int_equal(bp_attention(fx.s, q, k, v, 0.0, false, out), BP_ERR_INVALID_ARGUMENT);
  const char *msg = bp_last_error();
  printf("  %s\n", msg);
  if (!strstr(msg, blamed)) fail_msg("the message does not name %s: %s", blamed, msg);
  if (innocent && strstr(msg, innocent)) fail_msg("the message blames %s: %s", innocent, msg);
  float *got = malloc(MAXN * sizeof *got);
  assert_non_null(got);
  assert_int_equal(bp_stream_synchronize(fx.s), BP_OK);
  assert_int_equal(bp_buffer_read(fx.out, 0, got, MAXN * sizeof *got), BP_OK);
  for (int i = 0; i < MAXN; i++)
    if (got[i] != 0.25f) fail_msg("out[%d] changed to %g by a refused call", i, got[i]);
  free(got);
}

/* q as [B, S, H, D] with S a multiple of the kv heads: the first dims to
 * disagree are out's, but q is the wrong one. */
static void test_q_in_bshd_blames_q(void **state) {
  (void)state;
  enum { S = 128 };
  bp_tensor_t q = t4(fx.q, B, S, H, D), k = t4(fx.k, B, HKV, S, D), v = t4(fx.v, B, HKV, S, D);
  bp_tensor_t out = t4(fx.out, B, H, S, D);
  expect_refused(&q, &k, &v, &out, "q is [2, 128, 8, 16]", "out.shape");
}

/* The same with an odd sequence length (not a multiple of the kv heads),
 * and with out in the same wrong layout as q. */
static void test_q_in_bshd_odd_seq_blames_q(void **state) {
  (void)state;
  enum { S = 77 };
  bp_tensor_t q = t4(fx.q, B, S, H, D), k = t4(fx.k, B, HKV, S, D), v = t4(fx.v, B, HKV, S, D);
  bp_tensor_t out = t4(fx.out, B, H, S, D), out_bshd = t4(fx.out, B, S, H, D);
  expect_refused(&q, &k, &v, &out, "q is [2, 77, 8, 16]", "out.shape");
  expect_refused(&q, &k, &v, &out_bshd, "q is [2, 77, 8, 16]", "out.shape");
}

/* A right q and a transposed out: out is named. */
static void test_out_transposed_blames_out(void **state) {
  (void)state;
  enum { S = 64 };
  bp_tensor_t q = t4(fx.q, B, H, S, D), k = t4(fx.k, B, HKV, S, D), v = t4(fx.v, B, HKV, S, D);
  bp_tensor_t out = t4(fx.out, B, S, H, D);
  expect_refused(&q, &k, &v, &out, "out.shape[1]", "q is");
}

/* A transposed k, then a transposed v: its heads do not divide q's. */
static void test_kv_transposed_blames_it(void **state) {
  (void)state;
  enum { S = 48 };
  bp_tensor_t q = t4(fx.q, B, H, S, D), k = t4(fx.k, B, S, HKV, D), v = t4(fx.v, B, HKV, S, D);
  bp_tensor_t out = t4(fx.out, B, H, S, D);
  expect_refused(&q, &k, &v, &out, "k is [2, 48, 2, 16]", "out.shape");
  expect_refused(&q, &v, &k, &out, "v is [2, 48, 2, 16]", "out.shape");
}

/* The right layout runs (last: it writes out). */
static void test_right_layout_runs(void **state) {
  (void)state;
  enum { S = 24 };
  bp_tensor_t q = t4(fx.q, B, H, S, D), k = t4(fx.k, B, HKV, S, D), v = t4(fx.v, B, HKV, S, D);
  bp_tensor_t out = t4(fx.out, B, H, S, D);
  assert_int_equal(bp_attention(fx.s, &q, &k, &v, 0.0, true, &out), BP_OK);
  assert_int_equal(bp_stream_synchronize(fx.s), BP_OK);
  float got[4];
  assert_int_equal(bp_buffer_read(fx.out, 0, got, sizeof got), BP_OK);
  for (int i = 0; i < 4; i++)
    assert_true(got[i] == 0.25f); /* softmax weights sum to 1 over v = 0.25 */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_q_in_bshd_blames_q),
      cmocka_unit_test(test_q_in_bshd_odd_seq_blames_q),
      cmocka_unit_test(test_out_transposed_blames_out),
      cmocka_unit_test(test_kv_transposed_blames_it),
      cmocka_unit_test(test_right_layout_runs),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
