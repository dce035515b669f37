/*
 * test_env.h — a context, one device (by selector) and a stream, opened
 * and closed with cmocka assertions: the setup the quantized-op tests
 * share (test_quant.c, test_qmatmul_fast.c). Include after <cmocka.h>.
 */
#ifndef BP_TEST_ENV_H
#define BP_TEST_ENV_H

#include "core/backplane.h"

typedef struct env {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
} env_t;

static inline env_t open_env(const char *name) {
  env_t e = {0};
  assert_int_equal(bp_context_create(NULL, &e.ctx), BP_OK);
  assert_int_equal(bp_device_open(e.ctx, name, NULL, &e.dev), BP_OK);
  assert_int_equal(bp_stream_create(e.dev, &e.s), BP_OK);
  return e;
}

static inline void close_env(env_t *e) {
  bp_stream_destroy(e->s);
  bp_device_close(e->dev);
  bp_context_destroy(e->ctx);
}

#endif /* BP_TEST_ENV_H */
