/*
 * manifest.h — plugin manifests (manifest.c, manifest_list.c): the small
 * JSON file backend-<name>.json (or layer-<name>.json) beside a plugin that
 * says what it is without running it. The rules are numbered MANIFEST-1 ...
 * MANIFEST-8 in docs/plugin-abi.md (section 15); every refusal cites one.
 * Internal to the core.
 */
#ifndef BACKPLANE_MANIFEST_H
#define BACKPLANE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#include "backplane.h"

/* The manifest format this loader reads (manifest_version). */
#define BP__MANIFEST_FORMAT 1
/* Larger files are refused unread (rule MANIFEST-2). */
#define BP__MANIFEST_MAX_BYTES 65536

/* The manifest path for a plugin file: its name with ".so" replaced by
 * ".json", in the same directory; false when it does not fit. */
bool bp__manifest_path_for(const char *plugin_path, char *out, size_t size);

/* Reads and parses the manifest at path into out (rules MANIFEST-1 to
 * MANIFEST-4: trust, size, syntax, format version); out->status and
 * out->reason say why it failed. No plugin file is touched. */
bp_status_t bp__manifest_read(const char *path, bp_manifest_info_t *out);

/* The loader's check before dlopen. No manifest beside plugin_path: BP_OK
 * with *out_present false (rule MANIFEST-8: loaded without these checks).
 * Otherwise the manifest is read and matched against the file (name,
 * library, ABI major, SHA-256 of the content: MANIFEST-1 to MANIFEST-7);
 * BP_ERR_INCOMPATIBLE with the reason, citing the rule, in reason.
 * out (optional) receives what was read. Thread-safe. */
bp_status_t bp__manifest_check(const char *plugin_path, bool *out_present, char *reason,
                               size_t reason_size, bp_manifest_info_t *out);

#endif /* BACKPLANE_MANIFEST_H */
