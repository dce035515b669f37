/*
 * devices_layers.h — the layers part of bp devices (devices_layers.c).
 */
#ifndef BP_TOOL_DEVICES_LAYERS_H
#define BP_TOOL_DEVICES_LAYERS_H

#include <json-c/json.h>

#include "backplane.h"

/* Prints the layers the context was asked for (BACKPLANE_LAYERS), each
 * loaded with its version and path, or refused with its reason; nothing
 * when none was asked for. */
void bpt_print_layers(bp_context_t *ctx);
/* The same as a JSON array (empty when none was asked for). */
json_object *bpt_json_layers(bp_context_t *ctx);

#endif /* BP_TOOL_DEVICES_LAYERS_H */
