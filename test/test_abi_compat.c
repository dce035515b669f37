/*
 * test_abi_compat.c — a plugin built against the ABI 1.2 header (kept in
 * test/fixtures/abi-1.2/, from before the op table generated the
 * descriptor's op slots) loads and runs through today's core: its fill lands
 * in the fill slot, and ops it leaves NULL are refused as unsupported. The
 * plugin is test/fixtures/serial_plugin.c, compiled against the old header.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"

static void test_old_header_plugin_runs(void **state) {
  (void)state;
  char exe[PATH_MAX], dir[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  assert_true(n > 0);
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(dir, sizeof dir, "%s/abi-1.2-plugin", exe);
  bp_context_options_t opt = {.struct_size = sizeof opt, .plugin_dir = dir, .only_plugin_dir = true};
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(&opt, &ctx), BP_OK);
  bp_device_t *dev;
  bp_stream_t *s;
  if (bp_device_open(ctx, "serial", NULL, &dev) != BP_OK) fail_msg("open: %s", bp_last_error());
  assert_int_equal(bp_stream_create(dev, &s), BP_OK);
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(dev, 64, &b), BP_OK);
  bp_tensor_t t;
  int64_t len = 16;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, &len, NULL, &t), BP_OK);
  assert_int_equal(bp_fill(s, &t, 2.5), BP_OK);
  float v[16] = {0};
  assert_int_equal(bp_buffer_read(b, 0, v, sizeof v), BP_OK);
  for (int i = 0; i < 16; i++) assert_true(v[i] == 2.5f);
  bp_op_t others[] = {BP_OP_GEMM, BP_OP_COPY, BP_OP_RANDOM, BP_OP_CAST};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    bool sup = true;
    assert_int_equal(bp_device_supports(dev, others[i], BP_F32, &sup), BP_OK);
    assert_false(sup);
  }
  assert_int_equal(bp_unary(s, BP_UNARY_NEG, &t, &t), BP_ERR_UNSUPPORTED);
  bp_device_close(dev);
  bp_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_old_header_plugin_runs)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
