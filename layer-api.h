/*
 * layer-api.h — the backplane layer ABI: interposers between the core and a
 * plugin (trace, stats, check), stacked by name like the Vulkan loader's.
 *
 * A layer is a shared object named layer-<name>.so, found in the plugin
 * directories, that exports exactly one symbol, BP_LAYER_DESCRIPTOR_SYMBOL
 * ("bp_layer_descriptor"), a bp_layer_descriptor_t. For each device opened
 * with the layer enabled (BACKPLANE_LAYERS=trace,check or
 * bp_context_options_t.layers) the core calls create with the next
 * descriptor down the chain (the plugin's, or the next layer's) and the
 * device's plugin handle; the layer returns its own bp_plugin_descriptor_t
 * of the same shape, in which any entry may wrap next's. The device then
 * calls the top of the chain. Rules (docs/plugin-abi.md section 16, LAYER-n):
 *  1. The header (magic, abi_major, abi_minor, struct_size) follows the
 *     plugin descriptor's rules; a newer minor appends fields only.
 *  2. The descriptor create returns keeps NULL every entry that is NULL in
 *     next (an absent op stays "unsupported") and may leave any other entry
 *     equal to next's: a layer pays only for what it wraps.
 *  3. Handles (device, stream, event, kernel, graph) pass through a layer
 *     unchanged: every call a layer receives carries the plugin's own device
 *     handle, which is how a layer finds its per-device state (the device
 *     given to create).
 *  4. A layer never calls the host's public API; it calls next's entries and
 *     the host services, as a plugin does.
 *  5. Layers pass the plugins' trust and manifest rules (layer-<name>.json).
 */
#ifndef BACKPLANE_LAYER_API_H
#define BACKPLANE_LAYER_API_H

#include "plugin-api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BP_LAYER_MAGIC 0x42504c59u /* "BPLY" */
#define BP_LAYER_ABI_MAJOR 1
#define BP_LAYER_ABI_MINOR 0
#define BP_LAYER_DESCRIPTOR_SYMBOL "bp_layer_descriptor"

/* The device a layer instance sits on. Valid until destroy returns. */
typedef struct bp_layer_device {
  uint32_t struct_size;
  const char *backend;           /* the plugin's name: "cpu" */
  uint32_t backend_index;        /* device index inside the plugin */
  const bp_device_info_t *info;  /* the device's record */
  bp_plugin_device_t *device;    /* the plugin's handle every call carries */
} bp_layer_device_t;

typedef struct bp_layer_descriptor {
  uint32_t magic;       /* BP_LAYER_MAGIC */
  uint16_t abi_major;   /* BP_LAYER_ABI_MAJOR */
  uint16_t abi_minor;   /* BP_LAYER_ABI_MINOR */
  uint32_t struct_size; /* sizeof(bp_layer_descriptor_t) as built */
  uint32_t reserved;
  const char *name;        /* (required) "trace": the file is layer-trace.so */
  const char *version;     /* (required) */
  const char *description; /* (optional) one line */
  /* (required) Called once per process, before any create. The host
   * services stay valid for the life of the process. */
  bp_status_t (*init)(const bp_host_services_t *host);
  /* (required) Builds the layer over next for one device; *out_desc stays
   * valid until destroy. Thread-safe (devices open concurrently). */
  bp_status_t (*create)(const bp_plugin_descriptor_t *next, const bp_layer_device_t *device,
                        const bp_plugin_descriptor_t **out_desc);
  /* (required) Called after the device closed: nothing calls desc again. */
  void (*destroy)(const bp_plugin_descriptor_t *desc);
  /* (optional) Writes the layer's findings so far (stats' counters,
   * check's reports) as one JSON object, NUL-terminated, into out (size
   * bytes); *out_len receives the full length, which may exceed size - 1
   * (then out holds a truncated prefix). Thread-safe. */
  bp_status_t (*summary)(char *out, size_t size, size_t *out_len);
} bp_layer_descriptor_t;

/* The smallest layer descriptor the loader accepts. */
#define BP_LAYER_DESCRIPTOR_MIN_SIZE                                           \
  (offsetof(bp_layer_descriptor_t, destroy) + sizeof(void *))

#ifdef __cplusplus
}
#endif
#endif /* BACKPLANE_LAYER_API_H */
