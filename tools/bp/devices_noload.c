/*
 * devices_noload.c — bp devices --no-load: what is installed, read from the
 * manifests beside the plugins (bp_manifest_list). Nothing is dlopened,
 * probed or hashed, so it is instant and safe on a machine where a plugin
 * would hang or crash; a manifest that fails to parse is listed with its
 * reason. Whether each plugin still matches its manifest is what loading
 * (or `bp conformance`) checks.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bp.h"
#include "devices_noload.h"
#include "json_doc.h"

/* bp's own plugin directory, as bpt_context_open passes it. */
static void own_plugin_dir(char *out, size_t size) {
  char exe[PATH_MAX];
  out[0] = '\0';
  if (bpt_exe_dir(exe, sizeof exe)) snprintf(out, size, "%s/../plugins", exe);
}

static json_object *list_json(const char *list) {
  json_object *arr = json_object_new_array();
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ",");
    char word[256];
    snprintf(word, sizeof word, "%.*s", (int)(n < 255 ? n : 255), p);
    bpt_json_push(arr, bpt_json_str(word));
    p += n + (p[n] == ',');
  }
  return arr;
}

static json_object *manifest_json(const bp_manifest_info_t *m) {
  json_object *o = json_object_new_object();
  bpt_json_set(o, "manifest", bpt_json_str(m->path));
  bpt_json_set(o, "library", bpt_json_str(m->plugin_path[0] ? m->plugin_path : m->library));
  bpt_json_set(o, "ok", bpt_json_bool(m->status == BP_OK));
  if (m->status != BP_OK) {
    bpt_json_set(o, "reason", bpt_json_str(m->reason));
    return o;
  }
  char abi[32];
  snprintf(abi, sizeof abi, "%u.%u", m->abi_major, m->abi_minor);
  bpt_json_set(o, "name", bpt_json_str(m->name));
  bpt_json_set(o, "version", bpt_json_str(m->version));
  bpt_json_set(o, "abi", bpt_json_str(abi));
  bpt_json_set(o, "kinds", list_json(m->kinds));
  bpt_json_set(o, "dlopens", list_json(m->dlopens));
  bpt_json_set(o, "sha256", bpt_json_str(m->sha256));
  return o;
}

static bool print_json(const bp_manifest_info_t *all, uint32_t n) {
  json_object *root = json_object_new_object(), *arr = json_object_new_array();
  bpt_json_set(root, "loaded", bpt_json_bool(false));
  for (uint32_t i = 0; i < n; i++) bpt_json_push(arr, manifest_json(&all[i]));
  bpt_json_set(root, "manifests", arr);
  static const char *const broken[] = {"manifests", NULL};
  return bpt_json_write_path("devices", "-", root, broken);
}

static void print_table(const bp_manifest_info_t *all, uint32_t n) {
  printf("installed (from manifests; nothing loaded): %u\n", n);
  printf("  %-12s %-10s %-5s %-40s %s\n", "NAME", "VERSION", "ABI", "KINDS", "LIBRARY");
  for (uint32_t i = 0; i < n; i++) {
    const bp_manifest_info_t *m = &all[i];
    if (m->status != BP_OK) {
      printf("  %-12s %s\n", "(bad)", m->reason);
      continue;
    }
    char abi[32];
    snprintf(abi, sizeof abi, "%u.%u", m->abi_major, m->abi_minor);
    const char *kind = !strncmp(m->library, "layer-", 6) ? "(layer)" : m->kinds[0] ? m->kinds : "-";
    printf("  %-12s %-10s %-5s %-40s %s\n", m->name, m->version, abi, kind,
           m->plugin_path[0] ? m->plugin_path : m->library);
    if (m->dlopens[0]) printf("  %-12s dlopens: %s\n", "", m->dlopens);
  }
  if (!n) printf("  none: no backend-*.json or layer-*.json in the plugin directories\n");
}

int bpt_devices_no_load(bool json) {
  char dir[PATH_MAX + 16];
  own_plugin_dir(dir, sizeof dir);
  uint32_t n = 0, got = 0;
  if (bp_manifest_list(dir[0] ? dir : NULL, NULL, 0, &n) != BP_OK) {
    fprintf(stderr, "bp devices: %s\n", bp_last_error());
    return BPT_EXIT_FAIL;
  }
  bp_manifest_info_t *all = calloc(n ? n : 1, sizeof *all);
  if (!all || bp_manifest_list(dir[0] ? dir : NULL, all, n, &got) != BP_OK) {
    fprintf(stderr, "bp devices: %s\n", all ? bp_last_error() : "out of memory");
    free(all);
    return BPT_EXIT_FAIL;
  }
  n = got < n ? got : n; /* a manifest removed between the two calls */
  int rc = BPT_EXIT_OK;
  if (json)
    rc = print_json(all, n) ? BPT_EXIT_OK : BPT_EXIT_FAIL;
  else
    print_table(all, n);
  free(all);
  return rc;
}
