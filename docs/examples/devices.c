/* devices.c — list every device backplane found, best first, and every
 * plugin it refused with the reason. */
#include <backplane.h>
#include <stdio.h>

int main(void) {
  bp_context_t *ctx;
  if (bp_context_create(NULL, &ctx) != BP_OK) {
    fprintf(stderr, "backplane: %s\n", bp_last_error());
    return 1;
  }
  uint32_t n = 0;
  bp_context_device_count(ctx, &n);
  for (uint32_t r = 0; r < n; r++) {
    bp_device_entry_t e;
    bp_context_device_entry(ctx, r, &e);
    printf("%u  %-8s %-40s %6.1f GiB\n", e.rank, e.backend, e.info.name, e.info.memory_bytes / 1073741824.0);
  }
  bp_context_plugin_count(ctx, &n);
  for (uint32_t i = 0; i < n; i++) {
    bp_plugin_report_t p;
    bp_context_plugin_report(ctx, i, &p);
    if (!p.loaded) printf("refused %s: %s\n", p.path, p.reason);
  }
  bp_context_destroy(ctx);
  return 0;
}
