/*
 * devices_comm.h — the comm plugins section of bp devices (devices_comm.c):
 * every comm-*.so the context found, loaded or refused with its reason.
 */
#ifndef BP_TOOL_DEVICES_COMM_H
#define BP_TOOL_DEVICES_COMM_H

#include <stdbool.h>

#include "backplane.h"
#include "json_doc.h"

/* Prints the section; explain adds the description and launcher rank. */
void bpt_print_comm_plugins(bp_context_t *ctx, bool explain);
/* The same as a JSON array of objects (the caller owns it). */
json_object *bpt_json_comm_plugins(bp_context_t *ctx);

#endif /* BP_TOOL_DEVICES_COMM_H */
