/*
 * tc_ref.c — opening and closing a suite of one backend checked against
 * cpu-ref (tc_open_with_ref / tc_close_with_ref, declared in tc.h), with
 * test/skip.h's rules for a missing device. Apart from tc.c (environment,
 * conversions and comparisons), which every op suite links; the suites
 * that open their device this way link this file too (test/ops.mk's
 * OPS_TEST_COMMON).
 */
#include <stdio.h>

#include "../skip.h"
#include "tc.h"

int tc_open_with_ref(bp_context_t **ctx, const char *backend, tc_env_t *dev, tc_env_t *ref) {
  if (bp_context_create(NULL, ctx) != BP_OK) return test_skip_suite("no context");
  if (!tc_env_open(dev, *ctx, backend)) {
    char why[512];
    int rc = test_no_device(backend, tc_plugin_reason(*ctx, backend, why, sizeof why));
    bp_context_destroy(*ctx);
    return rc;
  }
  if (!tc_env_open(ref, *ctx, "cpu-ref")) {
    tc_env_close(dev);
    bp_context_destroy(*ctx);
    return 1;
  }
  return -1;
}

void tc_close_with_ref(bp_context_t *ctx, tc_env_t *dev, tc_env_t *ref) {
  tc_env_close(dev), tc_env_close(ref);
  bp_context_destroy(ctx);
}
