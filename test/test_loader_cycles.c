/*
 * test_loader_cycles.c — safe unload: opening and closing a context 1,000
 * times, with work on the CPU device and refused plugins alongside, leaves
 * no file descriptor open and maps nothing more than the first cycle did.
 * Plugins stay mapped once loaded (never dlclosed: docs/plugin-abi.md,
 * "Unloading"), and a refused one is never mapped in this process at all.
 */
#include "test_loader_util.h"

static int count_fds(void) {
  char path[64];
  int n = 0;
  for (int fd = 0; fd < 4096; fd++) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    n += access(path, F_OK) == 0;
  }
  return n;
}

/* Number of lines of /proc/self/maps that mention needle. */
static int mapped(const char *needle) {
  FILE *f = fopen("/proc/self/maps", "r");
  assert_non_null(f);
  char line[PATH_MAX + 256];
  int n = 0;
  while (fgets(line, sizeof line, f)) n += strstr(line, needle) != NULL;
  fclose(f);
  return n;
}

/* One cycle: open, use the CPU device (a stream, a buffer, an op), close.
 * Every other cycle leaves the device, buffer and stream for the context to
 * release. */
static void cycle(const char *dir, int i) {
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  bp_device_t *dev = NULL;
  assert_int_equal(bp_device_open(ctx, "cpu", NULL, &dev), BP_OK);
  bp_buffer_t *b = NULL;
  assert_int_equal(bp_buffer_alloc(dev, 256, &b), BP_OK);
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(dev, &s), BP_OK);
  int64_t shape[1] = {64};
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, shape, NULL, &t), BP_OK);
  assert_int_equal(bp_fill(s, &t, (double)i), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  float v = -1;
  assert_int_equal(bp_buffer_read(b, 63 * sizeof(float), &v, sizeof v), BP_OK);
  assert_true(v == (float)i);
  /* The detector below sees a plugin while one is loaded. */
  assert_true(mapped("/backend-cpu.so") > 0);
  if (i % 2 == 0) {
    bp_stream_destroy(s);
    bp_buffer_free(b);
    bp_device_close(dev);
  }
  bp_context_destroy(ctx);
}

static void test_thousand_cycles(void **state) {
  (void)state;
  char dir[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  tl_add_cpu(dir);
  tl_add(dir, "good", "good");
  tl_add(dir, "magic", "magic");
  tl_add(dir, "probeerr", "probeerr");
  tl_add(dir, "initfail", "initfail");
  tl_add(dir, "text", "text");
  /* The first cycle may load libraries that stay (libm, libstdc++ of a
   * driver); count from after it. */
  cycle(dir, 0);
  int fds = count_fds();
  int maps = mapped("/backend-");
  /* Only the two that load are mapped; the helper refused the others. */
  assert_true(mapped("/backend-cpu.so") > 0);
  assert_true(mapped("/backend-good.so") > 0);
  assert_int_equal(mapped("/backend-magic.so") + mapped("/backend-probeerr.so") +
                       mapped("/backend-initfail.so") + mapped("/backend-text.so"),
                   0);
  for (int i = 1; i <= 1000; i++) {
    cycle(dir, i);
    if (i % 100 == 0) {
      assert_int_equal(count_fds(), fds);
      assert_int_equal(mapped("/backend-"), maps);
    }
  }
  assert_int_equal(count_fds(), fds);
  assert_int_equal(mapped("/backend-"), maps);
  tl_rmtree(dir);
}

/* The same with isolation asked for explicitly: no helper left behind. */
static void test_isolated_cycles(void **state) {
  (void)state;
  char dir[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  tl_add_cpu(dir);
  tl_add(dir, "magic", "magic");
  int fds = -1;
  for (int i = 0; i < 50; i++) {
    bp_context_t *ctx = tl_open_dir(dir, true, 0);
    tl_expect_loaded(ctx, "backend-cpu.so");
    bp_context_destroy(ctx);
    if (i == 0) fds = count_fds();
  }
  assert_int_equal(count_fds(), fds);
  assert_int_equal(mapped("/backend-magic.so"), 0);
  errno = 0;
  assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
  assert_int_equal(errno, ECHILD);
  tl_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thousand_cycles),
      cmocka_unit_test(test_isolated_cycles),
  };
  return cmocka_run_group_tests(tests, tl_setup, NULL);
}
