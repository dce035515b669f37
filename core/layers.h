/*
 * layers.h — layers inside the core (layers.c loads them per context,
 * layer_chain.c stacks them per device; plugin_call.c makes every call into
 * them). Internal to libbackplane; the ABI is layer-api.h.
 */
#ifndef BACKPLANE_LAYERS_H
#define BACKPLANE_LAYERS_H

#include "internal.h"
#include "layer-api.h"

typedef struct bp__layer bp__layer_t;
typedef struct bp__layer_chain bp__layer_chain_t;

/* One name of the context's layer list, loaded (layer set) or refused. */
typedef struct bp__layer_slot {
  bp_layer_report_t report;
  bp__layer_t *layer;
} bp__layer_slot_t;

/* Loads the layers named by options.layers, else BACKPLANE_LAYERS, into
 * ctx->layers (after the plugin scan: they are looked for in the directories
 * it searched). A layer that fails is recorded with its reason. */
void bp__layers_load(bp_context_t *ctx);
void bp__layers_free(bp_context_t *ctx);
/* The descriptor of a loaded layer. */
const bp_layer_descriptor_t *bp__layer_descriptor(const bp__layer_t *l);

/* Stacks the context's loaded layers on an opened device: d->desc becomes
 * the top of the chain. A layer that cannot sit on the device is left out
 * with a warning (rule LAYER-6). */
void bp__layers_attach(bp__device_t *d);
/* After the device closed: destroys its layer instances, top first, and
 * points d->desc back at the plugin's descriptor. No-op without layers. */
void bp__layers_detach(bp__device_t *d);

/* The calls into layers (plugin_call.c, the one door). */
bp_status_t bp__call_layer_init(const bp_layer_descriptor_t *l);
bp_status_t bp__call_layer_create(const bp_layer_descriptor_t *l, const bp_plugin_descriptor_t *next,
                                  const bp_layer_device_t *device, const bp_plugin_descriptor_t **out_desc);
void bp__call_layer_destroy(const bp_layer_descriptor_t *l, const bp_plugin_descriptor_t *desc);
/* BP_ERR_UNSUPPORTED when the layer has no summary entry. */
bp_status_t bp__call_layer_summary(const bp_layer_descriptor_t *l, char *out, size_t size, size_t *out_len);

#endif /* BACKPLANE_LAYERS_H */
