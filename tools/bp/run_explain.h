/*
 * run_explain.h — `bp run --explain`: where each op ran, from the device's
 * fallback records (bp_device_fallback_stats).
 */
#ifndef BP_TOOL_RUN_EXPLAIN_H
#define BP_TOOL_RUN_EXPLAIN_H

#include <stdio.h>

#include "backplane.h"
#include "json_doc.h"

/* Prints every op that fell back from dev (op, dtype, reason, target,
 * calls, bytes and time), or that none did. */
void bpt_print_fallback(bp_device_t *dev, FILE *f);
/* The same records as a JSON array (the caller owns it). */
json_object *bpt_json_fallback(bp_device_t *dev);

#endif /* BP_TOOL_RUN_EXPLAIN_H */
