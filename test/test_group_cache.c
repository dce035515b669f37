/*
 * test_group_cache.c — tuning-cache helpers for test_group (see
 * test_group_cache.h).
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_group_cache.h"

void gc_use_cache(const char *dir, const char *name, char *path, size_t size) {
  snprintf(path, size, "%s/%s", dir, name);
  setenv("BACKPLANE_TUNING_CACHE", path, 1);
}

static const char *plugin_version(bp_context_t *ctx, const char *backend) {
  static bp_plugin_report_t r;
  uint32_t n = 0;
  bp_context_plugin_count(ctx, &n);
  for (uint32_t i = 0; i < n; i++)
    if (bp_context_plugin_report(ctx, i, &r) == BP_OK && !strcmp(r.name, backend)) return r.version;
  return "";
}

/* Writes a tuning cache in which every named device takes ms for every
 * calibration problem, so the shares are known in advance. */
void gc_plant_times(bp_context_t *ctx, const char *dir, const char *file, const char *const *devices, int n,
                    double ms) {
  char path[PATH_MAX];
  gc_use_cache(dir, file, path, sizeof path);
  static const char *const ops[3][2] = {
      {"group.gemm", "m256n256k256"}, {"group.attention", "b1h4s128d64"}, {"group.conv2d", "n2c16h32w32k16r3"}};
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "{\"version\": 1, \"entries\": [");
  bool first = true;
  uint32_t count = 0;
  bp_context_device_count(ctx, &count);
  for (uint32_t r = 0; r < count; r++) {
    bp_device_entry_t e;
    assert_int_equal(bp_context_device_entry(ctx, r, &e), BP_OK);
    bool named = false;
    for (int i = 0; i < n; i++) named |= !strcmp(devices[i], e.info.name);
    for (int op = 0; named && op < 3; op++) {
      fprintf(f, "%s{\"plugin\": \"%s\", \"plugin_version\": \"%s\", \"device\": \"%s\", \"driver_version\": \"%s\", "
              "\"op\": \"%s\", \"dtype\": \"f32\", \"bucket\": \"%s\", \"value\": \"%.3f\"}",
              first ? "" : ", ", e.backend, plugin_version(ctx, e.backend), e.info.name, e.info.driver_version, ops[op][0],
              ops[op][1], ms);
      first = false;
    }
  }
  fprintf(f, "]}\n");
  fclose(f);
}

char *gc_slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *buf = calloc(1, 1 << 20);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}
