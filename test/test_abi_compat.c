/*
 * test_abi_compat.c — a plugin built against the ABI 1.2 header (kept in
 * test/fixtures/abi-1.2/, from before the op table generated the
 * descriptor's op slots) loads and runs through today's core: its fill lands
 * in the fill slot, and ops it leaves NULL are refused as unsupported. The
 * plugin is test/fixtures/serial_plugin.c, compiled against the old header.
 * Its buffers copy to and from today's devices (ABI 1.4 copies across
 * devices), and a plugin with half the 1.4 mapping pair is refused.
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

/* The directory dir beside this binary, into out. */
static void beside_exe(const char *dir, char *out, size_t size) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  assert_true(n > 0);
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(out, size, "%s/%s", exe, dir);
}

/* The ABI 1.2 plugin's buffers copy to and from devices of today's plugins
 * (bp__copy_across reads the ABI 1.4 mapping entries only where struct_size
 * covers them), synchronously and on a stream. */
static void test_old_plugin_copies_across(void **state) {
  (void)state;
  char dir[PATH_MAX];
  beside_exe("abi-1.2-plugin", dir, sizeof dir);
  bp_context_options_t opt = {.struct_size = sizeof opt, .plugin_dir = dir};
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(&opt, &ctx), BP_OK);
  bp_device_t *old, *other;
  if (bp_device_open(ctx, "serial", NULL, &old) != BP_OK) fail_msg("open serial: %s", bp_last_error());
  const char *others[] = {"opencl", "vulkan", "cpu-ref"};
  for (size_t k = 0; k < sizeof others / sizeof others[0]; k++) {
    if (bp_device_open(ctx, others[k], NULL, &other) != BP_OK) {
      print_message("SKIP: no %s device to copy with: %s\n", others[k], bp_last_error());
      continue;
    }
    bp_stream_t *s;
    bp_buffer_t *a, *b;
    assert_int_equal(bp_stream_create(other, &s), BP_OK);
    assert_int_equal(bp_buffer_alloc(old, 256, &a), BP_OK);
    assert_int_equal(bp_buffer_alloc(other, 256, &b), BP_OK);
    unsigned char in[256], out[256];
    for (int i = 0; i < 256; i++) in[i] = (unsigned char)(i * 7 + k);
    assert_int_equal(bp_buffer_write(a, 0, in, sizeof in), BP_OK);
    assert_int_equal(bp_buffer_copy(b, 0, a, 0, 200), BP_OK);
    assert_int_equal(bp_buffer_copy_async(s, a, 56, b, 0, 200), BP_OK);
    assert_int_equal(bp_stream_synchronize(s), BP_OK);
    assert_int_equal(bp_buffer_read(a, 0, out, sizeof out), BP_OK);
    assert_memory_equal(out, in, 56);
    assert_memory_equal(out + 56, in, 200);
    bp_device_close(other);
  }
  bp_device_close(old);
  bp_context_destroy(ctx);
}

/* A plugin that sets mem_map without mem_unmap is refused at load, citing
 * rule 5.1, and shows no device. */
static void test_half_map_pair_refused(void **state) {
  (void)state;
  char dir[PATH_MAX];
  beside_exe("halfmap-plugin", dir, sizeof dir);
  bp_context_options_t opt = {.struct_size = sizeof opt, .plugin_dir = dir, .only_plugin_dir = true};
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(&opt, &ctx), BP_OK);
  uint32_t n = 0, devices = 1;
  assert_int_equal(bp_context_plugin_count(ctx, &n), BP_OK);
  assert_int_equal(n, 1);
  bp_plugin_report_t r;
  assert_int_equal(bp_context_plugin_report(ctx, 0, &r), BP_OK);
  assert_false(r.loaded);
  if (!strstr(r.reason, "rule 5.1")) fail_msg("reason \"%s\" does not cite rule 5.1", r.reason);
  assert_int_equal(bp_context_device_count(ctx, &devices), BP_OK);
  assert_int_equal(devices, 0);
  bp_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_old_header_plugin_runs),
                                     cmocka_unit_test(test_old_plugin_copies_across),
                                     cmocka_unit_test(test_half_map_pair_refused)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
