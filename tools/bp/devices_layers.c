/*
 * devices_layers.c — bp devices: the layers stacked on every device
 * (BACKPLANE_LAYERS), from bp_context_layer_report, so that an ops team
 * sees which ones are in effect and why one was refused (rule LAYER-n).
 */
#include "devices_layers.h"

#include <stdio.h>

#include "bp.h"
#include "json_doc.h"

void bpt_print_layers(bp_context_t *ctx) {
  uint32_t n = 0;
  if (bp_context_layer_count(ctx, &n) != BP_OK || n == 0) return;
  printf("\nlayers (%u, first on top):\n", n);
  for (uint32_t i = 0; i < n; i++) {
    bp_layer_report_t r;
    if (bp_context_layer_report(ctx, i, &r) != BP_OK) continue;
    if (r.loaded)
      printf("  %-12s %-8s %s\n", r.name, r.version, r.path);
    else
      printf("  %-12s REFUSED: %s\n", r.name, r.reason);
  }
}

json_object *bpt_json_layers(bp_context_t *ctx) {
  json_object *arr = json_object_new_array();
  uint32_t n = 0;
  bp_context_layer_count(ctx, &n);
  for (uint32_t i = 0; i < n; i++) {
    bp_layer_report_t r;
    if (bp_context_layer_report(ctx, i, &r) != BP_OK) continue;
    json_object *o = json_object_new_object();
    bpt_json_set(o, "name", bpt_json_str(r.name));
    bpt_json_set(o, "loaded", bpt_json_bool(r.loaded));
    bpt_json_set(o, "path", bpt_json_str(r.path));
    bpt_json_set(o, "version", bpt_json_str(r.version));
    bpt_json_set(o, "status", bpt_json_str(bp_status_name(r.status)));
    bpt_json_set(o, "reason", bpt_json_str(r.reason));
    bpt_json_push(arr, o);
  }
  return arr;
}
