/*
 * nn_harness.c — see nn_harness.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "nn_harness.h"
#include "test_group_cache.h"

bool nn_open_rank(bp_context_t *ctx, uint32_t rank, tc_env_t *e, bp_device_entry_t *entry) {
  char sel[16];
  snprintf(sel, sizeof sel, "%u", rank);
  if (!tc_env_open(e, ctx, sel)) {
    print_error("FAIL device %u is listed but does not open\n", rank);
    tc_failures++;
    return false;
  }
  assert_int_equal(bp_device_entry(e->dev, entry), BP_OK);
  return true;
}

void nn_group_open(bp_context_t *ctx, char *dir, tc_env_t *g) {
  bp_device_group_options_t o = {.struct_size = sizeof o,
                                 .allow_shared_hardware = true,
                                 .split_shared_hardware = true,
                                 .min_split_flops = 1};
  *g = (tc_env_t){.ctx = ctx};
  assert_non_null(mkdtemp(dir));
  const char *const devs[2] = {"cpu", "cpu-ref"};
  gc_plant_times(ctx, dir, "equal.json", devs, 2, 10.0);
  assert_int_equal(bp_device_group_open(ctx, "cpu,cpu-ref", &o, &g->dev), BP_OK);
  assert_int_equal(bp_stream_create(g->dev, &g->s), BP_OK);
  snprintf(g->name, sizeof g->name, "group cpu,cpu-ref");
}

void nn_group_close(tc_env_t *g, const char *dir) {
  for (uint32_t i = 0; i < 2; i++) {
    bp_device_group_member_t m;
    assert_int_equal(bp_device_group_info(g->dev, i, &m), BP_OK);
    tc_expect_status(g, m.slices_run > 0 ? BP_OK : BP_ERR_INTERNAL, BP_OK, "member %s ran a slice",
                     m.entry.info.name);
  }
  bp_stream_destroy(g->s);
  bp_device_close(g->dev);
  unsetenv("BACKPLANE_TUNING_CACHE");
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}
