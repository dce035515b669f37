/*
 * test_model_ops_composed.c — binary with a scalar on a device that runs
 * bp_binary but has no BP_OP_BINARY_SCALAR (the "partial2" test plugin of
 * test/fixtures/partial_plugin.c, an older plugin's shape): the core runs
 * it as bp_binary with a one-element tensor on that device itself (no
 * fallback), both operand orders, with the scalar rounded to the dtype;
 * while the stream captures a graph the composed form is refused with a
 * message saying why, and nothing is written.
 */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"

static bp_context_t *ctx;

static int setup(void **state) {
  (void)state;
  char exe[PATH_MAX], path[2 * PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(path, sizeof path, "%s/partial-plugin:%s/../plugins", exe, exe);
  setenv("BACKPLANE_PLUGIN_PATH", path, 1);
  setenv("BACKPLANE_BACKENDS", "partial2,cpu,-partial,-opencl,-vulkan,-cuda,-rocm", 1);
  bp_context_options_t opt = {.struct_size = sizeof opt, .in_process_probe = true};
  return bp_context_create(&opt, &ctx) == BP_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  bp_context_destroy(ctx);
  return 0;
}

static void test_composed_on_partial2(void **state) {
  (void)state;
  bp_device_config_t native = {.struct_size = sizeof native, .no_fallback = true};
  bp_device_t *dev;
  bp_stream_t *s;
  assert_int_equal(bp_device_open(ctx, "partial2", &native, &dev), BP_OK);
  assert_int_equal(bp_stream_create(dev, &s), BP_OK);
  bool claims = true;
  assert_int_equal(bp_device_supports(dev, BP_OP_BINARY_SCALAR, BP_F32, &claims), BP_OK);
  assert_false(claims); /* else this test would not reach the composition */
  enum { N = 37 };
  float a[N], y[N];
  for (int i = 0; i < N; i++) a[i] = 0.25f * (float)i - 3.0f;
  int64_t shape[1] = {N};
  bp_buffer_t *ba, *by;
  bp_tensor_t ta, ty;
  assert_int_equal(bp_buffer_alloc(dev, sizeof a, &ba), BP_OK);
  assert_int_equal(bp_buffer_alloc(dev, sizeof y, &by), BP_OK);
  assert_int_equal(bp_buffer_write(ba, 0, a, sizeof a), BP_OK);
  assert_int_equal(bp_tensor_init(ba, 0, BP_F32, 1, shape, NULL, &ta), BP_OK);
  assert_int_equal(bp_tensor_init(by, 0, BP_F32, 1, shape, NULL, &ty), BP_OK);
  const double sc = 0.1; /* rounded to f32 first */
  const bp_binary_op_t ops[3] = {BP_BINARY_ADD, BP_BINARY_SUB, BP_BINARY_MUL};
  for (int k = 0; k < 3; k++)
    for (int first = 0; first < 2; first++) {
      bp_status_t st = first ? bp_binary_scalar_first(s, ops[k], sc, &ta, &ty)
                             : bp_binary_scalar(s, ops[k], &ta, sc, &ty);
      if (st != BP_OK) fail_msg("op %d first %d: %s", ops[k], first, bp_last_error());
      assert_int_equal(bp_buffer_read(by, 0, y, sizeof y), BP_OK);
      float f = (float)sc;
      for (int i = 0; i < N; i++) {
        float l = first ? f : a[i], r = first ? a[i] : f;
        float want = ops[k] == BP_BINARY_ADD ? l + r : ops[k] == BP_BINARY_SUB ? l - r : l * r;
        if (y[i] != want)
          fail_msg("op %d first %d element %d: %g, want %g", ops[k], first, i, y[i], want);
      }
    }
  /* under capture: refused, nothing recorded or written */
  float before[N];
  assert_int_equal(bp_buffer_read(by, 0, before, sizeof before), BP_OK);
  assert_int_equal(bp_stream_begin_capture(s), BP_OK);
  assert_int_equal(bp_binary_scalar(s, BP_BINARY_ADD, &ta, 1.0, &ty), BP_ERR_UNSUPPORTED);
  assert_non_null(strstr(bp_last_error(), "cannot be captured"));
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_end_capture(s, &g), BP_OK);
  assert_int_equal(bp_graph_size(g), 0);
  bp_graph_destroy(g);
  assert_int_equal(bp_buffer_read(by, 0, y, sizeof y), BP_OK);
  assert_memory_equal(y, before, sizeof y);
  bp_buffer_free(ba);
  bp_buffer_free(by);
  bp_stream_destroy(s);
  bp_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_composed_on_partial2)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
