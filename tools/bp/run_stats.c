/*
 * run_stats.c — bp run --stats: the run goes through the stats layer
 * (plugins/layers/stats) and its counters are printed per device and op:
 * calls, failures, time inside the plugin and bytes the op's tensors span.
 * The reference device the run compares against is counted too.
 */
#include <stdlib.h>
#include <string.h>

#include "bp.h"
#include "json_doc.h"
#include "run_stats.h"

void bpt_enable_stats_layer(void) {
  const char *now = getenv("BACKPLANE_LAYERS");
  char list[1024];
  if (now && now[0])
    snprintf(list, sizeof list, "stats,%s", now);
  else
    snprintf(list, sizeof list, "stats");
  setenv("BACKPLANE_LAYERS", list, 1);
  setenv("BACKPLANE_STATS_AT_EXIT", "0", 1);
}

static void print_rows(json_object *ops, FILE *f) {
  fprintf(f, "\nstats layer: %-8s %-16s %-11s %8s %7s %11s %13s\n", "backend", "device", "op",
          "calls", "failed", "time ms", "bytes");
  size_t n = json_object_array_length(ops);
  for (size_t i = 0; i < n; i++) {
    json_object *o = json_object_array_get_idx(ops, i);
    const char *backend = bpt_json_get_str(o, "backend"), *device = bpt_json_get_str(o, "device");
    fprintf(f, "             %-8s %-16.16s %-11s %8.0f %7.0f %11.3f %13.0f\n",
            backend ? backend : "?", device ? device : "?",
            bpt_json_get_str(o, "op") ? bpt_json_get_str(o, "op") : "?",
            bpt_json_get_num(o, "calls", 0), bpt_json_get_num(o, "failed", 0),
            bpt_json_get_num(o, "ns", 0) / 1e6, bpt_json_get_num(o, "bytes", 0));
  }
}

void bpt_print_run_stats(bp_context_t *ctx, FILE *f) {
  size_t len = 0;
  char probe[1];
  bp_status_t st = bp_context_layer_summary(ctx, "stats", probe, sizeof probe, &len);
  char *text = st == BP_OK ? malloc(len + 1) : NULL;
  if (text) st = bp_context_layer_summary(ctx, "stats", text, len + 1, &len);
  json_object *doc = text && st == BP_OK ? bpt_json_parse(text) : NULL;
  json_object *ops = NULL;
  if (doc && json_object_object_get_ex(doc, "ops", &ops) &&
      json_object_is_type(ops, json_type_array))
    print_rows(ops, f);
  else
    fprintf(f, "\nstats layer: not available: %s\n",
            st == BP_OK ? "unreadable summary" : bp_last_error());
  json_object_put(doc);
  free(text);
}
