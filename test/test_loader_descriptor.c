/*
 * test_loader_descriptor.c — plugins that load but whose descriptor, init or
 * probe is wrong: magic, ABI major, struct size, strings, required pointers,
 * init and probe failures, duplicates. Also what must load: a descriptor from
 * a future minor version, and optional ops left NULL.
 * None of these variants crashes or hangs, so they are loaded in-process.
 */
#include "test_loader_util.h"
#include "plugin-api.h" /* the plugin ABI: descriptors, versions */

static void test_tiny_symbol(void **state) {
  (void)state;
  tl_refusal_case("tinysym", "tinysym", BP_STAGE_VERSION, BP_ERR_INCOMPATIBLE,
                  "descriptor symbol is 8 bytes", "too small");
}

static void test_wrong_magic(void **state) {
  (void)state;
  tl_refusal_case("magic", "magic", BP_STAGE_VERSION, BP_ERR_INCOMPATIBLE,
                  "wrong magic 0xdeadbeef", NULL);
}

static void check_abi_report(const char *variant, uint16_t want_major, const char *word) {
  char dir[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, variant, variant);
  tl_add_cpu(dir);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  char file[64];
  snprintf(file, sizeof file, "backend-%s.so", variant);
  tl_expect_refused(ctx, file, BP_STAGE_VERSION, BP_ERR_INCOMPATIBLE, word,
                    "than the loader's");
  bp_plugin_report_t r;
  assert_true(tl_find(ctx, file, &r));
  /* The report carries both sides' versions. */
  assert_int_equal(r.plugin_abi_major, want_major);
  assert_int_equal(r.plugin_abi_minor, BP_PLUGIN_ABI_MINOR);
  assert_int_equal(r.loader_abi_major, BP_PLUGIN_ABI_MAJOR);
  assert_int_equal(r.loader_abi_minor, BP_PLUGIN_ABI_MINOR);
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

static void test_abi_too_new(void **state) {
  (void)state;
  check_abi_report("abinew", BP_PLUGIN_ABI_MAJOR + 1, "newer");
}

static void test_abi_too_old(void **state) {
  (void)state;
  check_abi_report("abiold", BP_PLUGIN_ABI_MAJOR - 1, "older");
}

static void test_struct_too_small(void **state) {
  (void)state;
  tl_refusal_case("small", "small", BP_STAGE_VERSION, BP_ERR_INCOMPATIBLE,
                  "struct_size", "too small");
}

static void test_struct_larger_than_symbol(void **state) {
  (void)state;
  tl_refusal_case("sizelie", "sizelie", BP_STAGE_VERSION, BP_ERR_INCOMPATIBLE,
                  "struct_size", "larger than the symbol");
}

/* A future minor version: a larger descriptor whose extra fields the loader
 * ignores. It loads, and its device works. */
static void test_struct_larger_than_known(void **state) {
  (void)state;
  char dir[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "large", "large");
  tl_add_cpu(dir);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  tl_expect_loaded(ctx, "backend-large.so");
  bp_device_t *dev = NULL;
  assert_int_equal(bp_device_open(ctx, "large", NULL, &dev), BP_OK);
  bp_buffer_t *b = NULL;
  assert_int_equal(bp_buffer_alloc(dev, 16, &b), BP_OK);
  const char msg[16] = "future minor ok";
  char back[16] = {0};
  assert_int_equal(bp_buffer_write(b, 0, msg, sizeof msg), BP_OK);
  assert_int_equal(bp_buffer_read(b, 0, back, sizeof back), BP_OK);
  assert_memory_equal(msg, back, sizeof msg);
  bp_buffer_free(b);
  bp_device_close(dev);
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

static void test_null_name(void **state) {
  (void)state;
  tl_refusal_case("nullname", "nullname", BP_STAGE_VALIDATE, BP_ERR_INCOMPATIBLE,
                  "descriptor name", NULL);
}

static void test_bad_name(void **state) {
  (void)state;
  tl_refusal_case("badname", "badname", BP_STAGE_VALIDATE, BP_ERR_INCOMPATIBLE,
                  "descriptor name", NULL);
}

static void test_null_version(void **state) {
  (void)state;
  tl_refusal_case("nullversion", "nullversion", BP_STAGE_VALIDATE,
                  BP_ERR_INCOMPATIBLE, "version string", NULL);
}

static void test_null_required_function(void **state) {
  (void)state;
  tl_refusal_case("nullfn", "nullfn", BP_STAGE_VALIDATE, BP_ERR_INCOMPATIBLE,
                  "required function 'mem_alloc' is NULL", NULL);
}

static void test_init_fails(void **state) {
  (void)state;
  tl_refusal_case("initfail", "initfail", BP_STAGE_INIT, BP_ERR_UNAVAILABLE,
                  "init failed", "broken plugin refuses to initialise");
}

static void test_probe_error(void **state) {
  (void)state;
  tl_refusal_case("probeerr", "probeerr", BP_STAGE_PROBE, BP_ERR_UNAVAILABLE,
                  "libbroken-driver.so.1 not found", NULL);
}

static void test_probe_no_device(void **state) {
  (void)state;
  tl_refusal_case("probenone", "probenone", BP_STAGE_PROBE, BP_ERR_UNAVAILABLE,
                  "no devices", NULL);
}

/* Two files with one descriptor name: the first in path order wins, the
 * second is refused and names the first. */
static void test_duplicate_name(void **state) {
  (void)state;
  char dir[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "dup-a", "dup-a");
  tl_add(dir, "dup-b", "dup-b");
  tl_add_cpu(dir);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  tl_expect_loaded(ctx, "backend-dup-a.so");
  tl_expect_refused(ctx, "backend-dup-b.so", BP_STAGE_VALIDATE, BP_ERR_INCOMPATIBLE,
                    "duplicate of plugin 'dup'", "/backend-dup-a.so");
  uint32_t n = 0;
  assert_int_equal(bp_context_device_count(ctx, &n), BP_OK);
  uint32_t dups = 0;
  for (uint32_t i = 0; i < n; i++) {
    bp_device_entry_t e;
    assert_int_equal(bp_context_device_entry(ctx, i, &e), BP_OK);
    dups += !strcmp(e.backend, "dup");
  }
  assert_int_equal(dups, 1);
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

/* A plugin named like the CPU one, found after it, is a duplicate: the real
 * CPU plugin keeps its place. */
static void test_duplicate_of_cpu(void **state) {
  (void)state;
  char dir[PATH_MAX], f[PATH_MAX + 32];
  tl_mkdtemp(dir, sizeof dir);
  tl_add_cpu(dir);
  /* Same descriptor name as the CPU plugin, and sorts after it. */
  snprintf(f, sizeof f, "%s/backend-cpu.so", dir);
  char target[PATH_MAX + 32];
  snprintf(target, sizeof target, "%s/backend-cpu2.so", dir);
  tl_copy_file(f, target, 0755);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  tl_expect_refused(ctx, "backend-cpu2.so", BP_STAGE_VALIDATE, BP_ERR_INCOMPATIBLE,
                    "duplicate of plugin 'cpu'", "/backend-cpu.so");
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

/* Optional ops left NULL: the core answers "unsupported" and never calls
 * them, even when the device's capability table claims the op. */
static void test_null_optional_ops(void **state) {
  (void)state;
  char dir[PATH_MAX];
  tl_mkdtemp(dir, sizeof dir);
  tl_add(dir, "claimsfill", "claimsfill");
  tl_add(dir, "good", "good");
  tl_add_cpu(dir);
  bp_context_t *ctx = tl_open_dir(dir, false, 0);
  const char *const names[] = {"claimsfill", "good"};
  for (int i = 0; i < 2; i++) {
    tl_expect_loaded(ctx, i ? "backend-good.so" : "backend-claimsfill.so");
    bp_device_t *dev = NULL;
    /* The plugin's own answer for a NULL entry; fallback would run it on cpu. */
    bp_device_config_t native = {.struct_size = sizeof native, .no_fallback = true};
    assert_int_equal(bp_device_open(ctx, names[i], &native, &dev), BP_OK);
    bp_buffer_t *b = NULL;
    assert_int_equal(bp_buffer_alloc(dev, 192, &b), BP_OK);
    float sentinel[16];
    for (int j = 0; j < 16; j++) sentinel[j] = (float)j;
    assert_int_equal(bp_buffer_write(b, 0, sentinel, sizeof sentinel), BP_OK);
    bp_stream_t *s = NULL;
    assert_int_equal(bp_stream_create(dev, &s), BP_OK);
    int64_t shape[1] = {16};
    bp_tensor_t t;
    assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, shape, NULL, &t), BP_OK);
    assert_int_equal(bp_fill(s, &t, 7.0), BP_ERR_UNSUPPORTED);
    assert_true(bp_last_error()[0] != '\0');
    assert_int_equal(bp_unary(s, BP_UNARY_NEG, &t, &t), BP_ERR_UNSUPPORTED);
    assert_int_equal(bp_gemm(s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, 4, 4, 4,
                             1.0, b, 0, 4, b, 64, 4, 0.0, b, 128, 4),
                     BP_ERR_UNSUPPORTED);
    bool supported = true;
    assert_int_equal(bp_device_supports(dev, BP_OP_UNARY, BP_F32, &supported), BP_OK);
    assert_false(supported);
    float back[16];
    assert_int_equal(bp_buffer_read(b, 0, back, sizeof back), BP_OK);
    assert_memory_equal(back, sentinel, sizeof back);
    bp_stream_destroy(s);
    bp_buffer_free(b);
    bp_device_close(dev);
  }
  tl_cpu_works(ctx);
  bp_context_destroy(ctx);
  tl_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tiny_symbol),
      cmocka_unit_test(test_wrong_magic),
      cmocka_unit_test(test_abi_too_new),
      cmocka_unit_test(test_abi_too_old),
      cmocka_unit_test(test_struct_too_small),
      cmocka_unit_test(test_struct_larger_than_symbol),
      cmocka_unit_test(test_struct_larger_than_known),
      cmocka_unit_test(test_null_name),
      cmocka_unit_test(test_bad_name),
      cmocka_unit_test(test_null_version),
      cmocka_unit_test(test_null_required_function),
      cmocka_unit_test(test_init_fails),
      cmocka_unit_test(test_probe_error),
      cmocka_unit_test(test_probe_no_device),
      cmocka_unit_test(test_duplicate_name),
      cmocka_unit_test(test_duplicate_of_cpu),
      cmocka_unit_test(test_null_optional_ops),
  };
  return cmocka_run_group_tests(tests, tl_setup, NULL);
}
