/*
 * passthrough.c — layer-passthrough.so: every op the plugin has goes
 * through this layer and straight on to the next, unchanged. It measures
 * what a layer costs by itself (`bp bench --layers`, docs/performance.md)
 * and is the smallest complete layer to start a new one from.
 */
#include "plugins/layers/common/layer_common.h"

bp_status_t lc_op_hook(lc_instance_t *in, bp_op_t op, bp_plugin_stream_t *s, const void *args) {
  return lc_call_next(in, op, s, args);
}

static const lc_layer_t passthrough = {.wrap_ops = true};

static bp_status_t pt_init(const bp_host_services_t *host) {
  (void)host;
  return BP_OK;
}

static bp_status_t pt_create(const bp_plugin_descriptor_t *next, const bp_layer_device_t *device,
                             const bp_plugin_descriptor_t **out_desc) {
  return lc_create(&passthrough, next, device, out_desc);
}

static void pt_destroy(const bp_plugin_descriptor_t *desc) {
  lc_destroy(&passthrough, desc);
}

BP_PLUGIN_EXPORT const bp_layer_descriptor_t bp_layer_descriptor = {
    .magic = BP_LAYER_MAGIC,
    .abi_major = BP_LAYER_ABI_MAJOR,
    .abi_minor = BP_LAYER_ABI_MINOR,
    .struct_size = sizeof(bp_layer_descriptor_t),
    .name = "passthrough",
    .version = "0.1.0",
    .description = "every op through one call and on, unchanged: a layer's own cost",
    .init = pt_init,
    .create = pt_create,
    .destroy = pt_destroy,
};
