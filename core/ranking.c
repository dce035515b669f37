/*
 * ranking.c — ordering every device of every loaded plugin, best first.
 *
 * Rules, in order:
 *   1. BACKPLANE_BACKENDS: backends it names come first, in its order;
 *      "-name" hides that backend's devices; unnamed backends follow.
 *   2. Device kind: discrete GPU, integrated GPU, CPU, software, other.
 *   3. The plugin's score hint, higher first (reference devices use 0).
 *   4. Memory, larger first.
 *   5. Discovery order (search path order, then the plugin's device index).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_PREFS 32

typedef struct prefs {
  char order[MAX_PREFS][64];
  int n_order;
  char hidden[MAX_PREFS][64];
  int n_hidden;
} prefs_t;

static void parse_prefs(prefs_t *pr) {
  memset(pr, 0, sizeof *pr);
  const char *spec = bp__getenv("BACKPLANE_BACKENDS");
  while (spec && *spec) {
    size_t len = strcspn(spec, ", ");
    bool hide = len > 0 && spec[0] == '-';
    const char *name = hide ? spec + 1 : spec;
    size_t nlen = hide ? len - 1 : len;
    if (nlen > 0 && nlen < 64) {
      if (hide && pr->n_hidden < MAX_PREFS)
        memcpy(pr->hidden[pr->n_hidden++], name, nlen);
      else if (!hide && pr->n_order < MAX_PREFS)
        memcpy(pr->order[pr->n_order++], name, nlen);
    }
    spec += len;
    while (*spec == ',' || *spec == ' ') spec++;
  }
}

static int pref_index(const prefs_t *pr, const char *name) {
  for (int i = 0; i < pr->n_order; i++)
    if (!strcmp(pr->order[i], name)) return i;
  return pr->n_order;
}

static bool is_hidden(const prefs_t *pr, const char *name) {
  for (int i = 0; i < pr->n_hidden; i++)
    if (!strcmp(pr->hidden[i], name)) return true;
  return false;
}

typedef struct candidate {
  int pref;
  uint32_t plugin, index, seq;
  const bp_device_info_t *info;
} candidate_t;

static int compare_candidates(const void *pa, const void *pb) {
  const candidate_t *a = pa, *b = pb;
  if (a->pref != b->pref) return a->pref < b->pref ? -1 : 1;
  if (a->info->kind != b->info->kind) return a->info->kind < b->info->kind ? -1 : 1;
  if (a->info->score_hint != b->info->score_hint)
    return a->info->score_hint > b->info->score_hint ? -1 : 1;
  if (a->info->memory_bytes != b->info->memory_bytes)
    return a->info->memory_bytes > b->info->memory_bytes ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

bp_status_t bp__rank_devices(bp_context_t *ctx) {
  prefs_t pr;
  parse_prefs(&pr);
  uint32_t total = 0;
  for (uint32_t i = 0; i < ctx->plugin_count; i++)
    if (ctx->plugins[i].report.loaded) total += ctx->plugins[i].device_count;
  candidate_t *c = calloc(total ? total : 1, sizeof *c);
  ctx->ranked = calloc(total ? total : 1, sizeof *ctx->ranked);
  ctx->ranked_plugin = calloc(total ? total : 1, sizeof *ctx->ranked_plugin);
  if (!c || !ctx->ranked || !ctx->ranked_plugin) {
    free(c);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "context: cannot allocate device list");
  }
  uint32_t n = 0;
  for (uint32_t i = 0; i < ctx->plugin_count; i++) {
    bp__plugin_t *p = &ctx->plugins[i];
    if (!p->report.loaded) continue;
    if (is_hidden(&pr, p->report.name)) {
      bp__log(BP_LOG_INFO, BP__LOG_LOADER,
              "plugin '%s': devices hidden by BACKPLANE_BACKENDS", p->report.name);
      snprintf(p->report.reason, sizeof p->report.reason,
               "loaded; devices hidden by BACKPLANE_BACKENDS");
      continue;
    }
    for (uint32_t d = 0; d < p->device_count; d++, n++)
      c[n] = (candidate_t){pref_index(&pr, p->report.name), i, d, n, &p->infos[d]};
  }
  qsort(c, n, sizeof *c, compare_candidates);
  for (uint32_t r = 0; r < n; r++) {
    bp_device_entry_t *e = &ctx->ranked[r];
    e->struct_size = sizeof *e;
    e->rank = r;
    snprintf(e->backend, sizeof e->backend, "%s", ctx->plugins[c[r].plugin].report.name);
    e->backend_index = c[r].index;
    e->info = *c[r].info;
    bp__pci_locality(e->info.identity, &e->numa_node, e->local_cpus, sizeof e->local_cpus);
    ctx->ranked_plugin[r] = c[r].plugin;
  }
  ctx->device_count = n;
  free(c);
  return BP_OK;
}
