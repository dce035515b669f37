/*
 * test_loader_ranking.c — device ranking (kind, then score hint, then
 * memory, then discovery order) and BACKPLANE_BACKENDS (order and -name
 * exclusion), with fake plugins of each kind next to the real CPU plugin.
 */
#include "test_loader_util.h"

static char g_dir[PATH_MAX];

static int setup(void **state) {
  tl_setup(state);
  tl_mkdtemp(g_dir, sizeof g_dir);
  tl_add(g_dir, "fake-dgpu", "fake-dgpu");
  tl_add(g_dir, "fake-dgpu-hi", "fake-dgpu-hi");
  tl_add(g_dir, "fake-dgpu-mem", "fake-dgpu-mem");
  tl_add(g_dir, "fake-igpu", "fake-igpu");
  tl_add(g_dir, "fake-two", "fake-two");
  tl_add_cpu(g_dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tl_rmtree(g_dir);
  unsetenv("BACKPLANE_BACKENDS");
  return 0;
}

typedef struct ranked {
  uint32_t n;
  bp_device_entry_t e[64];
} ranked_t;

static bp_context_t *open_ranked(const char *backends, ranked_t *out) {
  if (backends)
    setenv("BACKPLANE_BACKENDS", backends, 1);
  else
    unsetenv("BACKPLANE_BACKENDS");
  bp_context_t *ctx = tl_open_dir(g_dir, false, 0);
  assert_int_equal(bp_context_device_count(ctx, &out->n), BP_OK);
  assert_true(out->n <= 64);
  for (uint32_t i = 0; i < out->n; i++) {
    assert_int_equal(bp_context_device_entry(ctx, i, &out->e[i]), BP_OK);
    assert_int_equal(out->e[i].rank, i);
  }
  return ctx;
}

static int first_of(const ranked_t *r, const char *backend) {
  for (uint32_t i = 0; i < r->n; i++)
    if (!strcmp(r->e[i].backend, backend)) return (int)i;
  return -1;
}

static int last_of(const ranked_t *r, const char *backend) {
  int last = -1;
  for (uint32_t i = 0; i < r->n; i++)
    if (!strcmp(r->e[i].backend, backend)) last = (int)i;
  return last;
}

static void test_default_order(void **state) {
  (void)state;
  ranked_t r;
  bp_context_t *ctx = open_ranked(NULL, &r);
  assert_true(r.n >= 7);
  /* Discrete GPUs by score, then memory; then the integrated GPU. */
  assert_string_equal(r.e[0].backend, "fake-dgpu-hi");
  assert_string_equal(r.e[1].backend, "fake-dgpu-mem");
  assert_string_equal(r.e[2].backend, "fake-dgpu");
  assert_string_equal(r.e[3].backend, "fake-igpu");
  /* The CPU plugin's devices next, kind "other" last, by memory. */
  int cpu_first = first_of(&r, "cpu"), cpu_last = last_of(&r, "cpu");
  assert_int_equal(cpu_first, 4);
  assert_int_equal(cpu_last, (int)r.n - 3);
  assert_string_equal(r.e[r.n - 2].backend, "fake-two");
  assert_int_equal(r.e[r.n - 2].backend_index, 0);
  assert_string_equal(r.e[r.n - 1].backend, "fake-two");
  assert_int_equal(r.e[r.n - 1].backend_index, 1);
  for (uint32_t i = 1; i < r.n; i++)
    assert_true(r.e[i - 1].info.kind <= r.e[i].info.kind);
  /* The best device is rank 0. */
  bp_device_t *dev = NULL;
  assert_int_equal(bp_device_open(ctx, NULL, NULL, &dev), BP_OK);
  bp_device_entry_t e;
  assert_int_equal(bp_device_entry(dev, &e), BP_OK);
  assert_string_equal(e.backend, "fake-dgpu-hi");
  bp_device_close(dev);
  /* "backend:I" picks a device inside a plugin. */
  assert_int_equal(bp_device_open(ctx, "fake-two:1", NULL, &dev), BP_OK);
  assert_int_equal(bp_device_entry(dev, &e), BP_OK);
  assert_string_equal(e.backend, "fake-two");
  assert_int_equal(e.backend_index, 1);
  bp_device_close(dev);
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
}

/* Named backends come first, in the variable's order; the rest keep their
 * ranking after them. */
static void test_backends_reorder(void **state) {
  (void)state;
  ranked_t r;
  bp_context_t *ctx = open_ranked("cpu,fake-igpu", &r);
  int cpu_last = last_of(&r, "cpu");
  assert_int_equal(first_of(&r, "cpu"), 0);
  assert_int_equal(first_of(&r, "fake-igpu"), cpu_last + 1);
  assert_string_equal(r.e[cpu_last + 2].backend, "fake-dgpu-hi");
  assert_string_equal(r.e[cpu_last + 3].backend, "fake-dgpu-mem");
  assert_string_equal(r.e[cpu_last + 4].backend, "fake-dgpu");
  assert_string_equal(r.e[r.n - 1].backend, "fake-two");
  bp_device_t *dev = NULL;
  assert_int_equal(bp_device_open(ctx, NULL, NULL, &dev), BP_OK);
  bp_device_entry_t e;
  assert_int_equal(bp_device_entry(dev, &e), BP_OK);
  assert_string_equal(e.backend, "cpu");
  bp_device_close(dev);
  bp_context_destroy(ctx);
}

/* "-name" hides a backend's devices; it stays loaded, and says why. */
static void test_backends_exclude(void **state) {
  (void)state;
  ranked_t r;
  bp_context_t *ctx = open_ranked("-fake-dgpu-hi, fake-two ,-fake-igpu,nosuch", &r);
  assert_int_equal(first_of(&r, "fake-dgpu-hi"), -1);
  assert_int_equal(first_of(&r, "fake-igpu"), -1);
  assert_int_equal(first_of(&r, "fake-two"), 0);
  assert_int_equal(last_of(&r, "fake-two"), 1);
  assert_string_equal(r.e[2].backend, "fake-dgpu-mem");
  assert_string_equal(r.e[3].backend, "fake-dgpu");
  bp_plugin_report_t rep;
  assert_true(tl_find(ctx, "backend-fake-dgpu-hi.so", &rep));
  assert_true(rep.loaded);
  assert_non_null(strstr(rep.reason, "hidden by BACKPLANE_BACKENDS"));
  bp_device_t *dev = NULL;
  assert_true(bp_device_open(ctx, "fake-dgpu-hi", NULL, &dev) < 0);
  assert_null(dev);
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
}

/* Hiding every backend leaves no device, and no crash. */
static void test_backends_exclude_all(void **state) {
  (void)state;
  ranked_t r;
  bp_context_t *ctx = open_ranked(
      "-cpu,-fake-dgpu,-fake-dgpu-hi,-fake-dgpu-mem,-fake-igpu,-fake-two", &r);
  assert_int_equal(r.n, 0);
  bp_device_t *dev = NULL;
  assert_true(bp_device_open(ctx, NULL, NULL, &dev) < 0);
  assert_null(dev);
  bp_context_destroy(ctx);
}

/* Junk in the variable is ignored, never a crash. */
static void test_backends_junk(void **state) {
  (void)state;
  static const char *const junk[] = {"", ",,,", "-", "- ,-,", "   ",
                                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,cpu"};
  for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
    ranked_t r;
    bp_context_t *ctx = open_ranked(junk[i], &r);
    assert_true(r.n >= 7);
    if (i + 1 < sizeof junk / sizeof *junk)
      assert_string_equal(r.e[0].backend, "fake-dgpu-hi");
    else
      assert_string_equal(r.e[0].backend, "cpu");
    bp_context_destroy(ctx);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_order),
      cmocka_unit_test(test_backends_reorder),
      cmocka_unit_test(test_backends_exclude),
      cmocka_unit_test(test_backends_exclude_all),
      cmocka_unit_test(test_backends_junk),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
