/*
 * layer_chain.c — a device's stack of layers. Built when the device opens,
 * from the context's loaded layers, bottom (the last named, nearest the
 * plugin) to top; the device's descriptor then points at the top, so every
 * call plugin_call.c makes goes down the chain with nothing else in the
 * core aware of it. Each layer's descriptor is copied (as a plugin's is)
 * and checked before it is stacked (rule LAYER-6).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"

typedef struct chain_link {
  const bp__layer_t *layer;
  const bp_plugin_descriptor_t *instance; /* the layer's, until destroy */
  bp_plugin_descriptor_t copy;            /* what the layer above calls */
} chain_link_t;

struct bp__layer_chain {
  const bp_plugin_descriptor_t *plugin; /* the device's own descriptor */
  uint32_t count;
  chain_link_t links[];
};

/* Entries from init to the end, as an array of code pointers: a layer may
 * fill only what next has (layer-api.h rule 2). */
#define FIRST_ENTRY offsetof(bp_plugin_descriptor_t, init)
#define ENTRY_COUNT ((sizeof(bp_plugin_descriptor_t) - FIRST_ENTRY) / sizeof(void (*)(void)))

static bool adds_entries(const bp_plugin_descriptor_t *next, const bp_plugin_descriptor_t *mine,
                         size_t *out_index) {
  for (size_t i = 0; i < ENTRY_COUNT; i++) {
    void (*a)(void), (*b)(void);
    memcpy(&a, (const char *)next + FIRST_ENTRY + i * sizeof a, sizeof a);
    memcpy(&b, (const char *)mine + FIRST_ENTRY + i * sizeof b, sizeof b);
    if (!a && b) {
      *out_index = i;
      return true;
    }
  }
  return false;
}

/* Copies the layer's descriptor into link->copy and checks it; false with
 * the reason otherwise. */
static bool take_descriptor(chain_link_t *link, const bp_plugin_descriptor_t *next, char *why,
                            size_t size) {
  const bp_plugin_descriptor_t *x = link->instance;
  uint32_t n = x->struct_size < sizeof link->copy ? x->struct_size : sizeof link->copy;
  memset(&link->copy, 0, sizeof link->copy);
  memcpy(&link->copy, x, n < 12 ? 12 : n);
  bp_plugin_stage_t stage;
  if (bp__descriptor_check(&link->copy, x->struct_size, why, size, &stage) != BP_OK) return false;
  size_t at;
  if (adds_entries(next, &link->copy, &at)) {
    snprintf(why, size, "its descriptor fills entry %zu, which the layer below leaves NULL", at);
    return false;
  }
  return true;
}

static void refuse_on_device(const bp__device_t *d, const bp_layer_descriptor_t *l,
                             const char *why) {
  bp__log(BP_LOG_WARN, BP__LOG_LOADER,
          "layer '%s' refused on device '%s': %s (rule LAYER-6); the device runs "
          "without it",
          l->name, d->entry.info.name, why);
}

/* Stacks one layer over next; true when it took its place. */
static bool stack_one(bp__device_t *d, const bp__layer_t *layer, const bp_plugin_descriptor_t *next,
                      const bp_layer_device_t *ld, chain_link_t *link) {
  const bp_layer_descriptor_t *l = bp__layer_descriptor(layer);
  char why[512];
  bp_status_t st = bp__call_layer_create(l, next, ld, &link->instance);
  if (st != BP_OK) {
    snprintf(why, sizeof why, "create failed: %s%s%s", bp_status_string(st),
             bp__plugin_error()[0] ? ": " : "", bp__plugin_error());
    refuse_on_device(d, l, why);
    return false;
  }
  if (!take_descriptor(link, next, why, sizeof why)) {
    bp__call_layer_destroy(l, link->instance);
    refuse_on_device(d, l, why);
    return false;
  }
  link->layer = layer;
  return true;
}

void bp__layers_attach(bp__device_t *d) {
  bp_context_t *ctx = d->context;
  uint32_t n = 0;
  for (uint32_t i = 0; i < ctx->layer_count; i++) n += ctx->layers[i].layer != NULL;
  if (!n) return;
  bp__layer_chain_t *c = calloc(1, sizeof *c + n * sizeof c->links[0]);
  if (!c) {
    bp__log(BP_LOG_WARN, BP__LOG_LOADER,
            "out of memory stacking layers on '%s'; it runs without them", d->entry.info.name);
    return;
  }
  c->plugin = d->desc;
  const bp_plugin_descriptor_t *next = d->desc;
  bp_layer_device_t ld = {sizeof ld, d->entry.backend, d->entry.backend_index, &d->entry.info,
                          d->handle};
  for (uint32_t i = ctx->layer_count; i-- > 0;) {
    const bp__layer_t *layer = ctx->layers[i].layer;
    if (layer && stack_one(d, layer, next, &ld, &c->links[c->count]))
      next = &c->links[c->count++].copy;
  }
  d->layers = c;
  d->desc = next;
}

void bp__layers_detach(bp__device_t *d) {
  bp__layer_chain_t *c = d->layers;
  if (!c) return;
  for (uint32_t i = c->count; i-- > 0;)
    bp__call_layer_destroy(bp__layer_descriptor(c->links[i].layer), c->links[i].instance);
  d->desc = c->plugin;
  d->layers = NULL;
  free(c);
}
