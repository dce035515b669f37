/*
 * manifest_list.c — the public manifest calls: read one, verify a plugin
 * against its manifest, and list what is installed in the search path from
 * the manifests alone (`bp devices --no-load`), which loads nothing.
 */
#include <dirent.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "manifest.h"

bp_status_t bp_manifest_read(const char *manifest_path, bp_manifest_info_t *out) {
  bp__clear_error();
  if (!out) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_manifest_read: out is NULL");
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  if (!manifest_path || !manifest_path[0])
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_manifest_read: manifest_path is NULL or empty");
  bp_status_t st = bp__manifest_read(manifest_path, out);
  return st == BP_OK ? st : bp__fail(st, "bp_manifest_read: %s", out->reason);
}

bp_status_t bp_manifest_verify(const char *plugin_path, bp_manifest_info_t *out) {
  bp__clear_error();
  if (!out) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_manifest_verify: out is NULL");
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  if (!plugin_path || !plugin_path[0])
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_manifest_verify: plugin_path is NULL or empty");
  bool present;
  char reason[512];
  bp_status_t st = bp__manifest_check(plugin_path, &present, reason, sizeof reason, out);
  if (!present) {
    out->status = BP_ERR_NOT_FOUND;
    return bp__fail(BP_ERR_NOT_FOUND, "bp_manifest_verify: %s", out->reason);
  }
  return st == BP_OK ? st : bp__fail(st, "bp_manifest_verify: %s", reason);
}

/* ---- listing ----------------------------------------------------------------*/

typedef struct lister {
  bp_manifest_info_t *out;
  uint32_t capacity, count;
  char **seen; /* real paths of the directories listed */
  uint32_t seen_count;
} lister_t;

static bool first_visit(lister_t *l, const char *dir) {
  char real[PATH_MAX];
  if (!realpath(dir, real)) return false;
  for (uint32_t i = 0; i < l->seen_count; i++)
    if (!strcmp(l->seen[i], real)) return false;
  char **n = realloc(l->seen, (l->seen_count + 1) * sizeof *n);
  if (!n) return false;
  l->seen = n;
  return (n[l->seen_count] = strdup(real)) && ++l->seen_count;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_manifest_name(const char *name) {
  return !fnmatch("backend-*.json", name, 0) || !fnmatch("layer-*.json", name, 0);
}

static void add_entry(lister_t *l, const char *dir, const char *name) {
  uint32_t i = l->count++;
  if (i >= l->capacity) return;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  bp_manifest_info_t *m = &l->out[i];
  bp__manifest_read(path, m);
  if (m->library[0] && !strchr(m->library, '/'))
    snprintf(m->plugin_path, sizeof m->plugin_path, "%s/%s", dir, m->library);
}

static void list_dir(lister_t *l, const char *dir) {
  if (!first_visit(l, dir)) return;
  DIR *d = opendir(dir);
  if (!d) return;
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (!is_manifest_name(e->d_name)) continue;
    if (n == cap) {
      char **nn = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *nn);
      if (!nn) break;
      names = nn;
    }
    if (!(names[n] = strdup(e->d_name))) break;
    n++;
  }
  closedir(d);
  if (n > 1) qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    add_entry(l, dir, names[i]);
    free(names[i]);
  }
  free(names);
}

static void list_path(lister_t *l, const char *list) {
  char *copy = strdup(list), *save = NULL;
  if (!copy) return;
  for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
    if (dir[0]) list_dir(l, dir);
  free(copy);
}

bp_status_t bp_manifest_list(const char *plugin_dir, bp_manifest_info_t *out, uint32_t capacity,
                             uint32_t *out_count) {
  bp__clear_error();
  if (!out_count) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_manifest_list: out_count is NULL");
  *out_count = 0;
  if (capacity && !out)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_manifest_list: out is NULL with capacity %u",
                    capacity);
  lister_t l = {.out = out, .capacity = capacity};
  const char *env = bp__getenv("BACKPLANE_PLUGIN_PATH");
  if (env) list_path(&l, env);
  char libdir[PATH_MAX], beside[PATH_MAX + 16];
  if (bp__library_dir(libdir, sizeof libdir)) {
    snprintf(beside, sizeof beside, "%s/backplane", libdir);
    list_dir(&l, beside);
  }
  list_dir(&l, BP_PLUGIN_INSTALL_DIR);
  if (plugin_dir) list_dir(&l, plugin_dir);
  for (uint32_t i = 0; i < l.seen_count; i++) free(l.seen[i]);
  free(l.seen);
  *out_count = l.count;
  return BP_OK;
}
