/*
 * backplane_plugins.h — plugin manifests and layers, part of the public API
 * (included by backplane.h; include backplane.h).
 */
#ifndef BACKPLANE_PLUGINS_H
#define BACKPLANE_PLUGINS_H

#include "backplane.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Plugin manifests: backend-<name>.json beside a plugin says what it is
 * without running it (format and rules MANIFEST-1 to MANIFEST-8 in
 * docs/plugin-abi.md section 15). The loader checks a plugin's manifest
 * before dlopen and refuses a mismatch; a plugin without one loads, with a
 * note in the log.
 */
typedef struct bp_manifest_info {
  uint32_t struct_size;   /* sizeof(bp_manifest_info_t) */
  char path[1024];        /* the manifest file */
  char plugin_path[1024]; /* the plugin file beside it ("" if not looked at) */
  uint32_t format;        /* manifest_version */
  char name[64];
  char version[64];
  uint16_t abi_major, abi_minor;
  char library[256];      /* the plugin's file name */
  char kinds[256];        /* device kinds it reports, comma-separated */
  char dlopens[1024];     /* libraries it will dlopen, comma-separated */
  char sha256[65];        /* of the plugin file, 64 hex digits */
  bp_status_t status;     /* BP_OK, or why the manifest was refused */
  char reason[512];       /* the refusal, citing its rule */
} bp_manifest_info_t;

/* Reads the manifest at manifest_path (rules MANIFEST-1 to MANIFEST-4) into
 * *out without touching the plugin. Returns out->status. Thread-safe. */
BP_API bp_status_t bp_manifest_read(const char *manifest_path, bp_manifest_info_t *out);
/* Checks plugin_path against the manifest beside it as the loader does
 * before dlopen (name, library, ABI major, SHA-256 of the content).
 * BP_ERR_NOT_FOUND when there is no manifest; BP_ERR_INCOMPATIBLE with the
 * rule in out->reason (and the thread's message) on a mismatch. */
BP_API bp_status_t bp_manifest_verify(const char *plugin_path, bp_manifest_info_t *out);
/* Lists the manifests in the plugin search path (BACKPLANE_PLUGIN_PATH,
 * backplane/ beside the library, the installed plugin directory, then
 * plugin_dir when not NULL), in search order, without loading or hashing
 * anything: backend-*.json and layer-*.json, each directory once. Writes at
 * most capacity records to out (may be NULL when capacity is 0); *out_count
 * receives how many exist. A manifest that fails to parse is listed with
 * its status and reason. Thread-safe. */
BP_API bp_status_t bp_manifest_list(const char *plugin_dir, bp_manifest_info_t *out,
                                    uint32_t capacity, uint32_t *out_count);

/* ---------------------------------------------------------------------------
 * Layers: interposers between the core and a plugin (layer-<name>.so in the
 * plugin directories; the ABI is layer-api.h), stacked on every device of a
 * context in the order options.layers or BACKPLANE_LAYERS names them. A
 * layer that cannot be loaded is refused with a reason citing rule LAYER-n
 * (docs/plugin-abi.md section 16); devices work without it.
 */
typedef struct bp_layer_report {
  uint32_t struct_size;
  char name[64];     /* as listed */
  char path[1024];   /* the file found, "" if none */
  char version[64];  /* from its descriptor, "" if never read */
  bool loaded;       /* stacked on the context's devices */
  bp_status_t status;/* BP_OK, or why it was refused */
  char reason[512];
} bp_layer_report_t;

/* Number of layers the context was asked for, loaded or refused. */
BP_API bp_status_t bp_context_layer_count(const bp_context_t *context, uint32_t *out_count);
/* Copies the report of layer index (in the order listed). */
BP_API bp_status_t bp_context_layer_report(const bp_context_t *context, uint32_t index,
                                           bp_layer_report_t *out_report);
/* Writes what the loaded layer name has gathered so far (the stats layer's
 * counters, the check layer's findings) as one JSON object into out (size
 * bytes, NUL-terminated, truncated to fit); *out_len receives the full
 * length. BP_ERR_UNSUPPORTED for a layer that keeps no summary. Thread-safe. */
BP_API bp_status_t bp_context_layer_summary(const bp_context_t *context, const char *name, char *out,
                                            size_t size, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif /* BACKPLANE_PLUGINS_H */
