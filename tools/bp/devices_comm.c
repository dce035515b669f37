/*
 * devices_comm.c — bp devices' comm plugins: what bp_context_comm_plugin_*
 * reports (listing them loads them: comm plugins are otherwise loaded only
 * when an application makes its first communicator).
 */
#include <stdio.h>

#include "bp.h"
#include "devices_comm.h"

void bpt_print_comm_plugins(bp_context_t *ctx, bool explain) {
  uint32_t n = 0;
  bp_context_comm_plugin_count(ctx, &n);
  printf("\ncomm plugins (%u):\n", n);
  if (n == 0) printf("  none (no comm-*.so in the plugin directories)\n");
  for (uint32_t i = 0; i < n; i++) {
    bp_comm_plugin_report_t r;
    if (bp_context_comm_plugin_report(ctx, i, &r) != BP_OK) continue;
    if (r.loaded) {
      /* the description says what memory it takes (device buffers direct or staged) */
      printf("  %-6s %s  %s\n      %s\n      %s\n", r.name, r.version, r.library, r.path, r.description);
      if (explain) {
        if (r.launched_size > 0) printf("      launched: rank %d of %d\n", r.launched_rank, r.launched_size);
        else printf("      launched: no (not started by mpirun)\n");
      }
    } else {
      printf("  %s\n      REFUSED at stage %s, %s: %s\n", r.path, bpt_stage_name(r.stage),
             bp_status_name(r.status), r.reason[0] ? r.reason : "(no reason)");
    }
  }
}

json_object *bpt_json_comm_plugins(bp_context_t *ctx) {
  json_object *arr = json_object_new_array();
  uint32_t n = 0;
  bp_context_comm_plugin_count(ctx, &n);
  for (uint32_t i = 0; i < n; i++) {
    bp_comm_plugin_report_t r;
    if (bp_context_comm_plugin_report(ctx, i, &r) != BP_OK) continue;
    json_object *o = json_object_new_object();
    bpt_json_set(o, "path", bpt_json_str(r.path));
    bpt_json_set(o, "name", bpt_json_str(r.name));
    bpt_json_set(o, "version", bpt_json_str(r.version));
    bpt_json_set(o, "loaded", bpt_json_bool(r.loaded));
    bpt_json_set(o, "stage", bpt_json_str(bpt_stage_name(r.stage)));
    bpt_json_set(o, "status", bpt_json_str(bp_status_name(r.status)));
    bpt_json_set(o, "reason", bpt_json_str(r.reason));
    bpt_json_set(o, "library", bpt_json_str(r.library));
    bpt_json_set(o, "description", bpt_json_str(r.description));
    bpt_json_set(o, "launched_rank", bpt_json_int(r.launched_rank));
    bpt_json_set(o, "launched_size", bpt_json_int(r.launched_size));
    bpt_json_push(arr, o);
  }
  return arr;
}
