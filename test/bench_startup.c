/*
 * bench_startup.c — start-up time: bp_context_create through the first
 * device entry, in a fresh process each time (nothing warm but the page
 * cache and, when it is on, the probe verdict cache). Prints milliseconds.
 * test/bench_startup.sh runs it under each isolation and cache setting and
 * keeps the best of several runs; docs/performance.md has the figures.
 */
#include <stdio.h>
#include <time.h>

#include "backplane.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int main(void) {
  double t0 = now_ms();
  bp_context_t *ctx = NULL;
  if (bp_context_create(NULL, &ctx) != BP_OK) {
    fprintf(stderr, "bench_startup: %s\n", bp_last_error());
    return 1;
  }
  uint32_t n = 0;
  bp_device_entry_t e;
  if (bp_context_device_count(ctx, &n) != BP_OK || n == 0 ||
      bp_context_device_entry(ctx, 0, &e) != BP_OK)
    return 1;
  double t1 = now_ms();
  printf("%.2f %u\n", t1 - t0, n);
  bp_context_destroy(ctx);
  return 0;
}
