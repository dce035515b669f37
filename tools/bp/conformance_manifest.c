/*
 * conformance_manifest.c — bp conformance's manifest check: the manifest
 * beside the plugin passes the loader's rules (bp_manifest_verify: trust,
 * format, name, library, ABI major, content hash), and says what the
 * descriptor says (name, version, ABI major and minor), which the loader
 * cannot check without running the plugin.
 */
#include <string.h>

#include "bp.h"
#include "conformance.h"
#include "plugin-api.h"

void cf_check_manifest(cf_child_t *c, const bp_plugin_descriptor_t *d) {
  cf_begin(c, "abi", "manifest matches the plugin");
  bp_manifest_info_t m;
  bp_status_t st = bp_manifest_verify(c->plugin_path, &m);
  if (st == BP_ERR_NOT_FOUND) {
    cf_end(c, CF_SKIP, "no manifest: the loader loads it unchecked (rule MANIFEST-8)");
    return;
  }
  if (st != BP_OK) {
    cf_end(c, CF_FAIL, "%s", m.reason);
    return;
  }
  bool same = !strcmp(m.name, d->name) && !strcmp(m.version, d->version) &&
              m.abi_major == d->abi_major && m.abi_minor == d->abi_minor;
  cf_end(c, same ? CF_PASS : CF_FAIL, "manifest '%s' %s ABI %u.%u, descriptor '%s' %s ABI %u.%u",
         m.name, m.version, m.abi_major, m.abi_minor, d->name, d->version, d->abi_major,
         d->abi_minor);
}
