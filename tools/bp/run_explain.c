/*
 * run_explain.c — `bp run --explain`: after the run, the ops the device
 * could not run itself and where the core ran them instead (automatic
 * fallback, docs/runtime.md "Fallback"), with what the copies cost.
 */
#include <stdlib.h>
#include <string.h>

#include "bp.h"
#include "run_explain.h"

static const char *reason_name(bp_fallback_reason_t r) {
  switch (r) {
  case BP_FALLBACK_DTYPE: return "dtype";
  case BP_FALLBACK_NO_ENTRY: return "no-entry";
  case BP_FALLBACK_REFUSED: return "refused";
  case BP_FALLBACK_FEATURE: return "feature";
  }
  return "?";
}

/* The device's records, malloc'd (*out_n of them); NULL when there are none
 * or they cannot be read. */
static bp_fallback_stat_t *records(bp_device_t *dev, uint32_t *out_n) {
  uint32_t n = 0, got = 0;
  *out_n = 0;
  if (bp_device_fallback_stats(dev, NULL, 0, &n) != BP_OK || n == 0) return NULL;
  bp_fallback_stat_t *st = calloc(n, sizeof *st);
  if (!st) return NULL;
  st[0].struct_size = sizeof *st;
  if (bp_device_fallback_stats(dev, st, n, &got) != BP_OK) {
    free(st);
    return NULL;
  }
  *out_n = got < n ? got : n;
  return st;
}

void bpt_print_fallback(bp_device_t *dev, FILE *f) {
  uint32_t n;
  bp_fallback_stat_t *st = records(dev, &n);
  bp_device_entry_t e = {0};
  bp_device_entry(dev, &e);
  if (!st) {
    fprintf(f, "\nfallback: none; every op ran on %s\n", e.info.name);
    return;
  }
  fprintf(f, "\nfallback: %u op(s) that %s could not run ran elsewhere\n", n, e.info.name);
  fprintf(f, "  %-10s %-5s %-9s %-20s %7s %12s %12s %9s %9s\n", "op", "dtype", "reason", "ran on", "calls",
          "bytes in", "bytes out", "copy ms", "total ms");
  for (uint32_t i = 0; i < n; i++) {
    const bp_fallback_stat_t *s = &st[i];
    char on[160];
    snprintf(on, sizeof on, "%s (%s)", s->target, s->target_backend);
    fprintf(f, "  %-10s %-5s %-9s %-20s %7llu %12llu %12llu %9.3f %9.3f\n", bp_op_name(s->op),
            bp_dtype_name(s->dtype), reason_name(s->reason), on, (unsigned long long)s->count,
            (unsigned long long)s->bytes_in, (unsigned long long)s->bytes_out, s->copy_ns / 1e6,
            s->total_ns / 1e6);
    fprintf(f, "    why: %s\n", s->reason_text);
  }
  free(st);
}

json_object *bpt_json_fallback(bp_device_t *dev) {
  uint32_t n;
  bp_fallback_stat_t *st = records(dev, &n);
  json_object *arr = json_object_new_array();
  for (uint32_t i = 0; st && i < n; i++) {
    const bp_fallback_stat_t *s = &st[i];
    json_object *o = json_object_new_object();
    bpt_json_set(o, "op", bpt_json_str(bp_op_name(s->op)));
    bpt_json_set(o, "dtype", bpt_json_str(bp_dtype_name(s->dtype)));
    bpt_json_set(o, "reason", bpt_json_str(reason_name(s->reason)));
    bpt_json_set(o, "why", bpt_json_str(s->reason_text));
    bpt_json_set(o, "target", bpt_json_str(s->target));
    bpt_json_set(o, "target_backend", bpt_json_str(s->target_backend));
    bpt_json_set(o, "calls", bpt_json_int((int64_t)s->count));
    bpt_json_set(o, "bytes_in", bpt_json_int((int64_t)s->bytes_in));
    bpt_json_set(o, "bytes_out", bpt_json_int((int64_t)s->bytes_out));
    bpt_json_set(o, "copy_ms", bpt_json_num(s->copy_ns / 1e6, "%.6g"));
    bpt_json_set(o, "total_ms", bpt_json_num(s->total_ns / 1e6, "%.6g"));
    bpt_json_push(arr, o);
  }
  free(st);
  return arr;
}
