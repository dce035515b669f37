/*
 * test_model_ops_errors.c — every argument of the model ops (ABI 1.5) and
 * their composites checked by the core: a bad call returns
 * BP_ERR_INVALID_ARGUMENT with a message naming the argument, and writes
 * nothing (the outputs' bytes are compared with what was uploaded). On
 * "cpu" and "cpu-ref" (the checks are the core's, the same for every
 * device).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tc.h"

#define INV BP_ERR_INVALID_ARGUMENT
/* The call is rejected naming `needle`, and y keeps every byte. */
#define REJECT(e, y, call, needle)                                                                 \
  do {                                                                                             \
    tc_expect_reject(e, (call), INV, needle, "%s", #call);                                         \
    tc_expect_status(e, tc_bytes_changed(y) ? BP_ERR_INTERNAL : BP_OK, BP_OK,                      \
                     "%s wrote its output", #call);                                                \
  } while (0)

static tc_tensor_t vals(tc_env_t *e, bp_dtype_t dt, int rank, const int64_t *s) {
  double v[512];
  for (int i = 0; i < 512; i++) v[i] = (i % 7) - 2;
  return tc_tensor(e, dt, rank, s, TC_CONTIG, v);
}

static void gather_errors(tc_env_t *e) {
  const int64_t ts[2] = {5, 4}, is[1] = {3}, ys[2] = {3, 4}, bad[2] = {3, 5};
  tc_tensor_t t = vals(e, BP_F32, 2, ts), i = vals(e, BP_I32, 1, is), f = vals(e, BP_F32, 1, is);
  tc_tensor_t y = vals(e, BP_F32, 2, ys), yb = vals(e, BP_F32, 2, bad), yh = vals(e, BP_F16, 2, ys);
  REJECT(e, &y, bp_gather(e->s, &t.t, &i.t, 2, &y.t), "axis");
  REJECT(e, &y, bp_gather(e->s, &t.t, &i.t, -3, &y.t), "axis");
  REJECT(e, &y, bp_gather(e->s, &t.t, &f.t, 0, &y.t), "indices");
  REJECT(e, &yb, bp_gather(e->s, &t.t, &i.t, 0, &yb.t), "y.shape");
  REJECT(e, &yh, bp_gather(e->s, &t.t, &i.t, 0, &yh.t), "dtype");
  REJECT(e, &y, bp_gather(e->s, &t.t, NULL, 0, &y.t), "indices");
  bp_tensor_t over; /* y a view of table itself */
  bp_tensor_narrow(&t.t, 1, 0, 3, &over);
  REJECT(e, &t, bp_gather(e->s, &t.t, &i.t, 1, &over), "overlaps");
  tc_tensor_free(&t), tc_tensor_free(&i), tc_tensor_free(&f);
  tc_tensor_free(&y), tc_tensor_free(&yb), tc_tensor_free(&yh);
}

static void scalar_glu_arange_errors(tc_env_t *e) {
  const int64_t s[2] = {3, 4}, o[2] = {4, 3};
  tc_tensor_t a = vals(e, BP_F32, 2, s), y = vals(e, BP_F32, 2, s), yo = vals(e, BP_F32, 2, o);
  tc_tensor_t yi = vals(e, BP_I32, 2, s);
  REJECT(e, &y, bp_binary_scalar(e->s, BP_BINARY_COUNT, &a.t, 2.0, &y.t), "op");
  REJECT(e, &yo, bp_binary_scalar(e->s, BP_BINARY_ADD, &a.t, 2.0, &yo.t), "a");
  REJECT(e, &yi, bp_binary_scalar_first(e->s, BP_BINARY_ADD, 2.0, &a.t, &yi.t), "y");
  REJECT(e, &y, bp_glu(e->s, BP_GLU_COUNT, &a.t, &a.t, &y.t), "kind");
  REJECT(e, &yo, bp_glu(e->s, BP_GLU_SWIGLU, &a.t, &a.t, &yo.t), "gate");
  REJECT(e, &y, bp_glu(e->s, BP_GLU_SWIGLU, &a.t, NULL, &y.t), "up");
  REJECT(e, &y, bp_arange(e->s, NAN, 1.0, &y.t), "finite");
  REJECT(e, &y, bp_arange(e->s, 0.0, INFINITY, &y.t), "finite");
  tc_tensor_free(&a), tc_tensor_free(&y), tc_tensor_free(&yo), tc_tensor_free(&yi);
}

static void rope_errors(tc_env_t *e) {
  const int64_t xs[4] = {1, 3, 2, 8}, x3[3] = {3, 2, 8}, ps[1] = {4}, pf[1] = {3};
  tc_tensor_t x = vals(e, BP_F32, 4, xs), y = vals(e, BP_F32, 4, xs), r3 = vals(e, BP_F32, 3, x3);
  tc_tensor_t p4 = vals(e, BP_I32, 1, ps), pfl = vals(e, BP_F32, 1, pf);
  REJECT(e, &y, bp_rope(e->s, BP_ROPE_HALF, 7, 1e4, 0, NULL, &x.t, &y.t), "rotary_dim");
  REJECT(e, &y, bp_rope(e->s, BP_ROPE_HALF, 10, 1e4, 0, NULL, &x.t, &y.t), "rotary_dim");
  REJECT(e, &y, bp_rope(e->s, BP_ROPE_HALF, 0, 1e4, 0, NULL, &x.t, &y.t), "rotary_dim");
  REJECT(e, &y, bp_rope(e->s, BP_ROPE_MODE_COUNT, 8, 1e4, 0, NULL, &x.t, &y.t), "mode");
  REJECT(e, &y, bp_rope(e->s, BP_ROPE_HALF, 8, -1.0, 0, NULL, &x.t, &y.t), "theta_base");
  REJECT(e, &r3, bp_rope(e->s, BP_ROPE_HALF, 8, 1e4, 0, NULL, &r3.t, &r3.t), "rank");
  REJECT(e, &y, bp_rope(e->s, BP_ROPE_HALF, 8, 1e4, 0, &p4.t, &x.t, &y.t), "positions");
  REJECT(e, &y, bp_rope(e->s, BP_ROPE_HALF, 8, 1e4, 0, &pfl.t, &x.t, &y.t), "positions");
  tc_tensor_free(&x), tc_tensor_free(&y), tc_tensor_free(&r3), tc_tensor_free(&p4),
      tc_tensor_free(&pfl);
}

static void compose_errors(tc_env_t *e) {
  const int64_t cs[3] = {2, 6, 4}, fs[3] = {2, 2, 4}, fb[3] = {2, 2, 3}, ys[3] = {2, 4, 4};
  tc_tensor_t cache = vals(e, BP_F32, 3, cs), fresh = vals(e, BP_F32, 3, fs),
              wrong = vals(e, BP_F32, 3, fb);
  tc_tensor_t half = vals(e, BP_F16, 3, fs), y = vals(e, BP_F32, 3, ys);
  REJECT(e, &cache, bp_kv_append(e->s, &cache.t, &fresh.t, 1, 5), "position 5");
  REJECT(e, &cache, bp_kv_append(e->s, &cache.t, &fresh.t, 1, -1), "cache length 6");
  REJECT(e, &cache, bp_kv_append(e->s, &cache.t, &wrong.t, 1, 0), "fresh.shape");
  REJECT(e, &cache, bp_kv_append(e->s, &cache.t, &half.t, 1, 0), "fresh");
  REJECT(e, &cache, bp_kv_append(e->s, &cache.t, &fresh.t, 3, 0), "axis");
  bp_tensor_t parts[2] = {fresh.t, wrong.t};
  REJECT(e, &y, bp_concat(e->s, 2, parts, 1, &y.t), "inputs[1]");
  parts[1] = fresh.t;
  REJECT(e, &y, bp_concat(e->s, 2, parts, 2, &y.t), "inputs[0]");
  REJECT(e, &y, bp_concat(e->s, 0, parts, 1, &y.t), "count");
  parts[1] = half.t;
  REJECT(e, &y, bp_concat(e->s, 2, parts, 1, &y.t), "inputs[1]");
  bp_tensor_t v;
  tc_expect_reject(e, bp_tensor_narrow(&cache.t, 1, 4, 3, &v), INV, "length",
                   "narrow past the end");
  tc_expect_reject(e, bp_tensor_narrow(&cache.t, 3, 0, 1, &v), INV, "axis", "narrow bad axis");
  tc_expect_reject(e, bp_tensor_narrow(&cache.t, 1, -1, 1, &v), INV, "start",
                   "narrow negative start");
  tc_tensor_free(&cache), tc_tensor_free(&fresh), tc_tensor_free(&wrong), tc_tensor_free(&half);
  tc_tensor_free(&y);
}

static void test_errors(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  for (int d = 0; d < su->count; d++) {
    gather_errors(&su->env[d]);
    scalar_glu_arange_errors(&su->env[d]);
    rope_errors(&su->env[d]);
    compose_errors(&su->env[d]);
  }
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_errors)};
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
