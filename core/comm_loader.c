/*
 * comm_loader.c — comm plugins (comm-*.so, comm-api.h): found in the
 * directories the context searched for backends (BACKPLANE_PLUGIN_PATH,
 * beside the library, the configured directory, the application's), in the
 * same order, judged by the same trust rules (trust.c), loaded on the first
 * call that needs them rather than at bp_context_create: opening an MPI
 * library costs start-up time that applications without communicators
 * should not pay. Every candidate gets a report saying how far it got and
 * why it stopped. Selection: the plugin named by the caller, else the first
 * loaded one in BACKPLANE_COMM's order, else the best score hint.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"
#include "isolate.h"
#include "trust.h"

#define REASON(p, ...) snprintf((p)->report.reason, sizeof (p)->report.reason, __VA_ARGS__)

static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;

static void refuse(bp__comm_plugin_t *p, bp_status_t status) {
  p->report.status = status;
  p->report.loaded = false;
  if (bp__in_isolated_child) return; /* the parent reports it */
  bp__log(status == BP_ERR_UNAVAILABLE ? BP_LOG_INFO : BP_LOG_WARN, BP__LOG_LOADER,
          "refusing comm plugin %s: %s; skipping it", p->report.path, p->report.reason);
}

static bool descriptor_ok(bp__comm_plugin_t *p, const bp_comm_descriptor_t *d) {
  p->report.stage = BP_STAGE_VERSION;
  if (d->magic != BP_COMM_MAGIC) {
    REASON(p, "bad magic 0x%08x (expected 0x%08x): not a comm plugin descriptor", d->magic, BP_COMM_MAGIC);
    return false;
  }
  if (d->abi_major != BP_COMM_ABI_MAJOR) {
    REASON(p, "comm ABI %u.%u, this loader speaks %u.%u: incompatible major version", d->abi_major,
           d->abi_minor, BP_COMM_ABI_MAJOR, BP_COMM_ABI_MINOR);
    return false;
  }
  if (d->struct_size < BP_COMM_DESCRIPTOR_MIN_SIZE) {
    REASON(p, "descriptor struct_size %u is smaller than the %zu bytes of comm ABI 1.0", d->struct_size,
           (size_t)BP_COMM_DESCRIPTOR_MIN_SIZE);
    return false;
  }
  p->report.stage = BP_STAGE_VALIDATE;
  if (!d->name || !d->name[0] || !d->version) {
    REASON(p, "descriptor has no %s", !d->version ? "version" : "name");
    return false;
  }
  const void *required[] = {d->init, d->shutdown, d->probe, d->comm_create, d->comm_destroy,
                            d->all_reduce, d->all_gather, d->reduce_scatter, d->broadcast,
                            d->reduce, d->send, d->recv, d->barrier};
  static const char *const names[] = {"init", "shutdown", "probe", "comm_create", "comm_destroy",
                                      "all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                      "reduce", "send", "recv", "barrier"};
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
    if (!required[i]) {
      REASON(p, "required entry point '%s' of the comm descriptor is NULL (comm-api.h rule 4)", names[i]);
      return false;
    }
  return true;
}

/* Copies the descriptor: at most struct_size bytes, at most ours. */
static bool read_descriptor(bp__comm_plugin_t *p) {
  p->report.stage = BP_STAGE_SYMBOL;
  void *sym = dlsym(p->dl, BP_COMM_DESCRIPTOR_SYMBOL);
  if (!sym) {
    REASON(p, "no '%s' symbol: not a comm plugin", BP_COMM_DESCRIPTOR_SYMBOL);
    return false;
  }
  const bp_comm_descriptor_t *d = sym;
  uint32_t n = d->struct_size < sizeof p->desc ? d->struct_size : (uint32_t)sizeof p->desc;
  memset(&p->desc, 0, sizeof p->desc);
  memcpy(&p->desc, sym, n < 12 ? 12 : n);
  if (!descriptor_ok(p, &p->desc)) return false;
  snprintf(p->report.name, sizeof p->report.name, "%s", p->desc.name);
  snprintf(p->report.version, sizeof p->report.version, "%s", p->desc.version);
  return true;
}

static bool duplicate(const bp__comm_set_t *set, bp__comm_plugin_t *p) {
  for (const bp__comm_plugin_t *q = set->plugins; q < p; q++)
    if (q->report.loaded && !strcmp(q->report.name, p->report.name)) {
      REASON(p, "duplicate of comm plugin '%s' already loaded from %s", p->report.name, q->report.path);
      return true;
    }
  return false;
}

static bool init_and_probe(bp__comm_plugin_t *p) {
  p->report.stage = BP_STAGE_INIT;
  bp_status_t st = bp__comm_call_init(&p->desc);
  if (st != BP_OK) {
    REASON(p, "init failed: %s", bp__plugin_error()[0] ? bp__plugin_error() : bp_status_string(st));
    refuse(p, st);
    return false;
  }
  p->initialised = true;
  p->report.stage = BP_STAGE_PROBE;
  st = bp__comm_call_probe(&p->desc, &p->info);
  if (st != BP_OK) {
    REASON(p, "probe: %s", bp__plugin_error()[0] ? bp__plugin_error() : bp_status_string(st));
    refuse(p, st);
    return false;
  }
  snprintf(p->report.library, sizeof p->report.library, "%s", p->info.library);
  snprintf(p->report.description, sizeof p->report.description, "%s", p->info.description);
  p->report.launched_rank = p->info.launched_rank;
  p->report.launched_size = p->info.launched_size;
  return true;
}

static void unload(bp__comm_plugin_t *p) {
  /* Never dlclose (docs/plugin-abi.md, "Unloading"): threads a library
   * such as Open MPI started would run on unmapped code. */
  if (p->initialised) bp__comm_call_shutdown(&p->desc);
  p->initialised = false;
  p->dl = NULL;
}

/* Trusted files are probed in a child first (comm_isolate.c) when the
 * context isolates probes, then loaded here. */
static void load(bp_context_t *ctx, bp__comm_set_t *set, bp__comm_plugin_t *p, const char *path) {
  bp_status_t st = bp__trust_check_file(path, p->report.reason, sizeof p->report.reason);
  if (st != BP_OK) {
    refuse(p, st);
    return;
  }
  if (bp__isolation_wanted(&ctx->options) &&
      !bp__comm_probe_isolated(p, path, bp__probe_timeout_s(&ctx->options))) {
    refuse(p, p->report.status);
    return;
  }
  bp__comm_load_in_process(set, p, path);
}

void bp__comm_load_in_process(bp__comm_set_t *set, bp__comm_plugin_t *p, const char *path) {
  p->report.stage = BP_STAGE_OPEN;
  dlerror();
  p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!p->dl) {
    const char *e = dlerror();
    REASON(p, "dlopen failed: %s", e ? e : "unknown error");
    refuse(p, BP_ERR_INCOMPATIBLE);
    return;
  }
  if (!read_descriptor(p) || duplicate(set, p)) {
    refuse(p, BP_ERR_INCOMPATIBLE);
    p->dl = NULL;
    return;
  }
  if (!init_and_probe(p)) {
    unload(p);
    return;
  }
  p->report.stage = BP_STAGE_READY;
  p->report.status = BP_OK;
  p->report.loaded = true;
  bp__log(BP_LOG_INFO, BP__LOG_LOADER, "loaded comm plugin '%s' %s from %s (%s)", p->report.name,
          p->report.version, path, p->report.library);
}

static bp__comm_plugin_t *new_candidate(bp__comm_set_t *set, const char *path) {
  bp__comm_plugin_t *n = realloc(set->plugins, (set->count + 1) * sizeof *n);
  if (!n) return NULL;
  set->plugins = n;
  bp__comm_plugin_t *p = &n[set->count++];
  memset(p, 0, sizeof *p);
  p->report.struct_size = sizeof p->report;
  p->report.launched_rank = p->report.launched_size = -1;
  p->info.struct_size = sizeof p->info;
  snprintf(p->report.path, sizeof p->report.path, "%s", path);
  return p;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan_dir(bp_context_t *ctx, bp__comm_set_t *set, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  char *names[256];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 256)
    if (fnmatch("comm-*.so", e->d_name, 0) == 0 && (names[n] = strdup(e->d_name))) n++;
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], compare_names);
  char dir_reason[sizeof set->plugins->report.reason];
  bool dir_unsafe = n > 0 && bp__trust_check_dir(dir, dir_reason, sizeof dir_reason) != BP_OK;
  for (int i = 0; i < n; i++) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    free(names[i]);
    bp__comm_plugin_t *p = new_candidate(set, path);
    if (!p) continue;
    if (dir_unsafe) {
      REASON(p, "%s", dir_reason);
      refuse(p, BP_ERR_INCOMPATIBLE);
    } else {
      load(ctx, set, p, path);
    }
  }
}

/* The context's directories, each real directory once, in search order. */
static void scan_context_dirs(bp_context_t *ctx, bp__comm_set_t *set) {
  char **seen = calloc(ctx->searched_count + 1, sizeof *seen);
  if (!seen) return;
  uint32_t nseen = 0;
  for (uint32_t i = 0; i < ctx->searched_count; i++) {
    char real[PATH_MAX];
    if (!ctx->searched_present[i] || !realpath(ctx->searched[i], real)) continue;
    bool dup = false;
    for (uint32_t j = 0; j < nseen && !dup; j++) dup = !strcmp(seen[j], real);
    if (dup || !(seen[nseen] = strdup(real))) continue;
    nseen++;
    scan_dir(ctx, set, ctx->searched[i]);
  }
  for (uint32_t j = 0; j < nseen; j++) free(seen[j]);
  free(seen);
}

bp__comm_set_t *bp__comm_set(bp_context_t *ctx, const char *fn) {
  pthread_mutex_lock(&create_lock);
  bp__comm_set_t *set = ctx->comm_set;
  if (!set && (set = calloc(1, sizeof *set))) {
    pthread_mutex_init(&set->lock, NULL);
    scan_context_dirs(ctx, set);
    ctx->comm_set = set;
  }
  pthread_mutex_unlock(&create_lock);
  if (!set) bp__fail(BP_ERR_OUT_OF_MEMORY, "%s: out of memory loading the comm plugins", fn);
  return set;
}

/* Position of name in BACKPLANE_COMM ("nccl,mpi"), or -1; *excluded when
 * it is listed as "-name". */
static int env_position(const char *name, bool *excluded) {
  *excluded = false;
  const char *env = bp__getenv("BACKPLANE_COMM");
  if (!env) return -1;
  int pos = 0;
  for (const char *s = env; *s; pos++) {
    size_t len = strcspn(s, ",");
    bool minus = s[0] == '-';
    const char *w = s + minus;
    size_t wl = len - minus;
    if (wl == strlen(name) && !strncmp(w, name, wl)) {
      if (minus) *excluded = true;
      return minus ? -1 : pos;
    }
    s += len + (s[len] == ',');
  }
  return -1;
}

static bool better(const bp__comm_plugin_t *a, const bp__comm_plugin_t *b, bp_comm_memory_t native) {
  bool xa, xb;
  int pa = env_position(a->report.name, &xa), pb = env_position(b->report.name, &xb);
  if ((pa >= 0) != (pb >= 0)) return pa >= 0;
  if (pa >= 0 && pa != pb) return pa < pb;
  bool na = a->info.memory_kinds & BP_COMM_MEMORY_BIT(native), nb = b->info.memory_kinds & BP_COMM_MEMORY_BIT(native);
  if (na != nb) return na;
  return a->info.score_hint > b->info.score_hint;
}

bp_status_t bp__comm_pick(bp__comm_set_t *set, const char *name, bp_comm_memory_t native, const char *fn,
                          const bp__comm_plugin_t **out) {
  *out = NULL;
  uint32_t usable = BP_COMM_MEMORY_BIT(native) | BP_COMM_MEMORY_BIT(BP_COMM_MEMORY_HOST);
  for (uint32_t i = 0; i < set->count; i++) {
    const bp__comm_plugin_t *p = &set->plugins[i];
    bool excluded;
    env_position(p->report.name, &excluded);
    if (name && strcmp(name, p->report.name)) continue;
    if (name && !p->report.loaded)
      return bp__fail(BP_ERR_UNAVAILABLE, "%s: comm plugin '%s' (%s) was refused: %s", fn, name,
                      p->report.path, p->report.reason);
    if (name && !(p->info.memory_kinds & usable))
      return bp__fail(BP_ERR_UNSUPPORTED, "%s: comm plugin '%s' takes neither this device's memory nor host "
                      "memory", fn, name);
    if (!p->report.loaded || (!name && excluded) || !(p->info.memory_kinds & usable)) continue;
    if (!*out || better(p, *out, native)) *out = p;
  }
  if (*out) return BP_OK;
  if (name) return bp__fail(BP_ERR_NOT_FOUND, "%s: no comm plugin named '%s' (comm-%s.so) in the plugin "
                            "directories (bp devices lists them)", fn, name, name);
  for (uint32_t i = 0; i < set->count; i++) /* loaded, but for other memory */
    if (set->plugins[i].report.loaded && !(set->plugins[i].info.memory_kinds & usable))
      return bp__fail(BP_ERR_UNSUPPORTED, "%s: comm plugin '%s' takes neither this device's memory nor host "
                      "memory, and no other comm plugin is usable", fn, set->plugins[i].report.name);
  for (uint32_t i = 0; i < set->count; i++) /* say why the likeliest one failed */
    if (!set->plugins[i].report.loaded)
      return bp__fail(BP_ERR_UNAVAILABLE, "%s: no usable comm plugin: %s: %s", fn, set->plugins[i].report.path,
                      set->plugins[i].report.reason);
  return bp__fail(BP_ERR_NOT_FOUND, "%s: no comm plugin (comm-*.so) in the plugin directories%s", fn,
                  bp__getenv("BACKPLANE_COMM") ? " allowed by BACKPLANE_COMM" : "");
}

void bp__comm_set_free(bp_context_t *ctx) {
  bp__comm_set_t *set = ctx->comm_set;
  if (!set) return;
  for (;;) { /* communicators the application left open */
    pthread_mutex_lock(&set->lock);
    bp_comm_t *h = set->comms ? set->comms->h : NULL;
    pthread_mutex_unlock(&set->lock);
    if (!h) break;
    bp__log(BP_LOG_WARN, BP__LOG_API, "bp_context_destroy: a communicator is still open; destroying it");
    bp_comm_destroy(h);
  }
  for (uint32_t i = 0; i < set->count; i++) unload(&set->plugins[i]);
  free(set->plugins);
  pthread_mutex_destroy(&set->lock);
  free(set);
  ctx->comm_set = NULL;
}

bp_status_t bp_context_comm_plugin_count(bp_context_t *h, uint32_t *out_count) {
  bp__clear_error();
  if (!out_count) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_comm_plugin_count: out_count is NULL");
  *out_count = 0;
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(h, "bp_context_comm_plugin_count", &ctx);
  if (st != BP_OK) return st;
  bp__comm_set_t *set = bp__comm_set(ctx, "bp_context_comm_plugin_count");
  if (!set) return BP_ERR_OUT_OF_MEMORY;
  *out_count = set->count;
  return BP_OK;
}

bp_status_t bp_context_comm_plugin_report(bp_context_t *h, uint32_t index, bp_comm_plugin_report_t *out) {
  bp__clear_error();
  if (!out) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_comm_plugin_report: out_report is NULL");
  memset(out, 0, sizeof *out);
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(h, "bp_context_comm_plugin_report", &ctx);
  if (st != BP_OK) return st;
  bp__comm_set_t *set = bp__comm_set(ctx, "bp_context_comm_plugin_report");
  if (!set) return BP_ERR_OUT_OF_MEMORY;
  if (index >= set->count)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_comm_plugin_report: index %u >= count %u", index,
                    set->count);
  *out = set->plugins[index].report;
  return BP_OK;
}
