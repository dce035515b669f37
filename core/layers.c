/*
 * layers.c — loading layers and stacking them per device.
 *
 * A layer (layer-api.h) is found by name in the plugin directories the
 * context searched (layer-<name>.so, first directory wins), checked by the
 * plugins' trust and manifest rules, opened once per process and
 * initialised once. For each device opened, the loaded layers of its
 * context are stacked from the last named (nearest the plugin) to the first
 * (the device's descriptor): BACKPLANE_LAYERS=trace,check makes trace see a
 * call first. A layer that cannot be loaded, or cannot sit on a device, is
 * refused with a rule-numbered reason (LAYER-1 ... LAYER-7,
 * docs/plugin-abi.md section 16) and the device works without it. Every
 * call into a layer goes through plugin_call.c.
 */
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "layers.h"
#include "manifest.h"
#include "trust.h"

/* One layer library, loaded once per process (never unloaded, as plugins). */
struct bp__layer {
  char real[PATH_MAX];
  bp_layer_descriptor_t desc; /* copy, zero beyond struct_size */
  bp_status_t init_status;    /* of the one init */
  char init_reason[256];
  bp__layer_t *next;
};

static pthread_mutex_t layers_lock = PTHREAD_MUTEX_INITIALIZER;
static bp__layer_t *loaded_layers;

#define REASON(r, ...) snprintf((r)->reason, sizeof(r)->reason, __VA_ARGS__)

static bool layer_name_ok(const char *n, size_t len) {
  if (len == 0 || len >= 64) return false;
  for (size_t i = 0; i < len; i++)
    if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '_' ||
          n[i] == '-'))
      return false;
  return true;
}

/* The first layer-<name>.so in the directories the context searched. */
static bool find_layer(const bp_context_t *ctx, const char *name, char *out, size_t size) {
  for (uint32_t i = 0; i < ctx->searched_count; i++) {
    struct stat st;
    if (!ctx->searched_present[i]) continue;
    snprintf(out, size, "%s/layer-%s.so", ctx->searched[i], name);
    if (lstat(out, &st) == 0) return true;
  }
  return false;
}

/* The descriptor symbol's size from the ELF symbol table (as loader.c
 * does for plugins), so a short symbol is never read past its end. */
static uint32_t symbol_size(void *addr) {
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (!dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
    return sizeof(bp_layer_descriptor_t);
  return sym->st_size > UINT32_MAX ? UINT32_MAX : (uint32_t)sym->st_size;
}

static bp_status_t check_descriptor(const bp_layer_descriptor_t *d, uint32_t avail,
                                    const char *name, bp_layer_report_t *r) {
  if (avail < 12 || d->magic != BP_LAYER_MAGIC)
    return REASON(r, "wrong magic: not a backplane layer (rule LAYER-4)"), BP_ERR_INCOMPATIBLE;
  if (d->abi_major != BP_LAYER_ABI_MAJOR)
    return REASON(r, "layer ABI %u.%u, this loader speaks %d.x (rule LAYER-4)", d->abi_major,
                  d->abi_minor, BP_LAYER_ABI_MAJOR),
           BP_ERR_INCOMPATIBLE;
  if (d->struct_size < BP_LAYER_DESCRIPTOR_MIN_SIZE || d->struct_size > avail)
    return REASON(r, "descriptor struct_size %u outside [%zu, %u] (rule LAYER-4)", d->struct_size,
                  (size_t)BP_LAYER_DESCRIPTOR_MIN_SIZE, avail),
           BP_ERR_INCOMPATIBLE;
  if (!d->name || strcmp(d->name, name) || !d->version)
    return REASON(r, "descriptor name is not '%s' or version is NULL (rule LAYER-4)", name),
           BP_ERR_INCOMPATIBLE;
  if (!d->init || !d->create || !d->destroy)
    return REASON(r, "a required entry (init, create, destroy) is NULL (rule LAYER-4)"),
           BP_ERR_INCOMPATIBLE;
  return BP_OK;
}

/* Under layers_lock: opens, checks and initialises the file, or finds the
 * copy this process already has. */
static bp__layer_t *open_layer(const char *path, const char *name, bp_layer_report_t *r) {
  char real[PATH_MAX];
  if (!realpath(path, real)) return REASON(r, "cannot resolve %s (rule LAYER-1)", path), NULL;
  for (bp__layer_t *l = loaded_layers; l; l = l->next)
    if (!strcmp(l->real, real)) return l;
  void *dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
  if (!dl) return REASON(r, "dlopen failed: %s (rule LAYER-3)", dlerror()), NULL;
  void *sym = dlsym(dl, BP_LAYER_DESCRIPTOR_SYMBOL);
  if (!sym) return REASON(r, "no '%s' symbol (rule LAYER-3)", BP_LAYER_DESCRIPTOR_SYMBOL), NULL;
  bp__layer_t *l = calloc(1, sizeof *l);
  if (!l) return REASON(r, "out of memory"), NULL;
  uint32_t avail = symbol_size(sym);
  memcpy(&l->desc, sym, avail < 12 ? avail : 12);
  uint32_t n = avail < 12 ? 0 : l->desc.struct_size;
  memcpy(&l->desc, sym, n > avail ? avail : n > sizeof l->desc ? sizeof l->desc : n);
  l->init_status = check_descriptor(&l->desc, avail, name, r);
  if (l->init_status != BP_OK) {
    free(l); /* the mapping stays: never dlclose (docs/plugin-abi.md) */
    return NULL;
  }
  l->init_status = bp__call_layer_init(&l->desc);
  snprintf(l->init_reason, sizeof l->init_reason, "%s", bp__plugin_error());
  snprintf(l->real, sizeof l->real, "%s", real);
  l->next = loaded_layers;
  loaded_layers = l;
  return l;
}

/* Fills slot for one name of the list. */
static void load_one(bp_context_t *ctx, bp__layer_slot_t *slot) {
  bp_layer_report_t *r = &slot->report;
  char path[PATH_MAX], why[512];
  if (!find_layer(ctx, r->name, path, sizeof path)) {
    REASON(r, "no layer-%s.so in the plugin directories searched (rule LAYER-1)", r->name);
    return;
  }
  snprintf(r->path, sizeof r->path, "%s", path);
  bool present;
  if (bp__trust_check_file(path, why, sizeof why) != BP_OK ||
      bp__manifest_check(path, &present, why, sizeof why, NULL) != BP_OK) {
    REASON(r, "%s (rule LAYER-2)", why);
    return;
  }
  pthread_mutex_lock(&layers_lock);
  bp__layer_t *l = open_layer(path, r->name, r);
  pthread_mutex_unlock(&layers_lock);
  if (!l) return;
  if (l->init_status != BP_OK) {
    REASON(r, "init failed: %s%s%s (rule LAYER-5)", bp_status_string(l->init_status),
           l->init_reason[0] ? ": " : "", l->init_reason);
    return;
  }
  snprintf(r->version, sizeof r->version, "%s", l->desc.version);
  r->loaded = true;
  r->status = BP_OK;
  slot->layer = l;
}

/* Appends the layer named by list[0, len) unless it is already listed. */
static void add_name(bp_context_t *ctx, const char *name, size_t len) {
  bp__layer_slot_t *n = realloc(ctx->layers, (ctx->layer_count + 1) * sizeof *n);
  if (!n) return;
  ctx->layers = n;
  bp__layer_slot_t *slot = &n[ctx->layer_count++];
  memset(slot, 0, sizeof *slot);
  bp_layer_report_t *r = &slot->report;
  r->struct_size = sizeof *r;
  r->status = BP_ERR_NOT_FOUND;
  snprintf(r->name, sizeof r->name, "%.*s", (int)(len < 63 ? len : 63), name);
  if (!layer_name_ok(name, len)) {
    r->status = BP_ERR_INVALID_ARGUMENT;
    REASON(r, "'%.*s' is not a layer name: a short [a-z0-9_-] word (rule LAYER-1)",
           (int)(len < 64 ? len : 64), name);
    return;
  }
  for (bp__layer_slot_t *q = ctx->layers; q < slot; q++)
    if (!strcmp(q->report.name, r->name)) {
      r->status = BP_ERR_INVALID_ARGUMENT;
      REASON(r, "listed twice: the first place counts (rule LAYER-7)");
      return;
    }
  load_one(ctx, slot);
  if (!r->loaded) {
    if (r->status == BP_ERR_NOT_FOUND && r->path[0]) r->status = BP_ERR_INCOMPATIBLE;
    bp__log(BP_LOG_WARN, BP__LOG_LOADER, "refusing layer '%s': %s; devices run without it", r->name,
            r->reason);
  } else {
    bp__log(BP_LOG_INFO, BP__LOG_LOADER, "loaded layer '%s' %s from %s", r->name, r->version,
            r->path);
  }
}

void bp__layers_load(bp_context_t *ctx) {
  const char *list = ctx->options.layers ? ctx->options.layers : bp__getenv("BACKPLANE_LAYERS");
  if (!list) return;
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    const char *s = p;
    size_t l = len;
    while (l && (*s == ' ' || *s == '\t')) s++, l--;
    while (l && (s[l - 1] == ' ' || s[l - 1] == '\t')) l--;
    if (l) add_name(ctx, s, l);
    p += len + (p[len] == ',');
  }
}

void bp__layers_free(bp_context_t *ctx) {
  free(ctx->layers);
  ctx->layers = NULL;
  ctx->layer_count = 0;
}

const bp_layer_descriptor_t *bp__layer_descriptor(const bp__layer_t *l) {
  return &l->desc;
}

/* ---- the public view --------------------------------------------------------*/

bp_status_t bp_context_layer_count(const bp_context_t *h, uint32_t *out_count) {
  bp__clear_error();
  if (!out_count)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_layer_count: out_count is NULL");
  *out_count = 0;
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(h, "bp_context_layer_count", &ctx);
  if (st == BP_OK) *out_count = ctx->layer_count;
  return st;
}

bp_status_t bp_context_layer_report(const bp_context_t *h, uint32_t index,
                                    bp_layer_report_t *out_report) {
  bp__clear_error();
  if (!out_report)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_layer_report: out_report is NULL");
  memset(out_report, 0, sizeof *out_report);
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(h, "bp_context_layer_report", &ctx);
  if (st != BP_OK) return st;
  if (index >= ctx->layer_count)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_layer_report: index %u >= layer count %u",
                    index, ctx->layer_count);
  *out_report = ctx->layers[index].report;
  return BP_OK;
}

bp_status_t bp_context_layer_summary(const bp_context_t *h, const char *name, char *out,
                                     size_t size, size_t *out_len) {
  bp__clear_error();
  if (out_len) *out_len = 0;
  if (!name || !out || !size || !out_len)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_context_layer_summary: name, out, size or out_len is NULL/0");
  out[0] = '\0';
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(h, "bp_context_layer_summary", &ctx);
  if (st != BP_OK) return st;
  for (uint32_t i = 0; i < ctx->layer_count; i++) {
    const bp__layer_slot_t *s = &ctx->layers[i];
    if (strcmp(s->report.name, name)) continue;
    if (!s->layer)
      return bp__fail(BP_ERR_UNAVAILABLE, "bp_context_layer_summary: layer '%s' was refused: %s",
                      name, s->report.reason);
    st = bp__call_layer_summary(&s->layer->desc, out, size, out_len);
    if (st == BP_OK) return st;
    return bp__fail(st, "bp_context_layer_summary: layer '%s': %s", name,
                    st == BP_ERR_UNSUPPORTED ? "it keeps no summary" : bp__plugin_error());
  }
  return bp__fail(BP_ERR_NOT_FOUND, "bp_context_layer_summary: no layer '%s' in this context",
                  name);
}
