/*
 * device.c — opening devices by selector, closing them with everything they
 * still own, and capability queries.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "layers.h"

static void device_free(bp__device_t *d);

/* Resolves a selector to a rank; see bp_device_open for the grammar. */
static uint32_t refused_count(const bp_context_t *ctx) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < ctx->plugin_count; i++) n += !ctx->plugins[i].report.loaded;
  return n;
}

/* Why selector sel (its backend part: blen bytes) matched no device: the
 * refusal of a plugin named like that backend, as `bp devices` shows it;
 * else the directories searched. Written into why (size bytes). */
static void why_no_device(const bp_context_t *ctx, const char *sel, size_t blen, char *why,
                          size_t size) {
  static const char *const stages[] = {"open", "symbol", "version", "validate", "init", "probe", "ready"};
  char file[96];
  snprintf(file, sizeof file, "backend-%.*s.so", (int)(blen < 64 ? blen : 64), sel ? sel : "");
  for (uint32_t i = 0; blen && i < ctx->plugin_count; i++) {
    const bp_plugin_report_t *r = &ctx->plugins[i].report;
    const char *base = strrchr(r->path, '/');
    base = base ? base + 1 : r->path;
    bool named = (strlen(r->name) == blen && !strncmp(r->name, sel, blen)) || !strcmp(base, file);
    if (!named) continue;
    if (!r->loaded) {
      snprintf(why, size, ": plugin %s was refused at stage %s: %s", r->path,
               (unsigned)r->stage < sizeof stages / sizeof *stages ? stages[r->stage] : "?",
               r->reason[0] ? r->reason : bp_status_string(r->status));
      return;
    }
    snprintf(why, size, ": plugin %s has %u device(s)", r->path, r->device_count);
    return;
  }
  size_t len = (size_t)snprintf(why, size, "%s%.*s%s; searched ", blen ? ": no plugin '" : "",
                                (int)blen, blen ? sel : "", blen ? "' was found" : "");
  if (ctx->searched_count == 0 && len < size) snprintf(why + len, size - len, "no directory");
  for (uint32_t i = 0; i < ctx->searched_count && len < size; i++)
    len += (size_t)snprintf(why + len, size - len, "%s%s%s", i ? ", " : "", ctx->searched[i],
                            ctx->searched_present[i] ? "" : " (absent)");
}

static bp_status_t resolve_selector(const bp_context_t *ctx, const char *sel,
                                    uint32_t *out_rank) {
  char why[768];
  const char *colon0 = sel ? strchr(sel, ':') : NULL;
  size_t blen0 = !sel ? 0 : colon0 ? (size_t)(colon0 - sel) : strlen(sel);
  if (sel && sel[0] >= '0' && sel[0] <= '9') blen0 = 0; /* a rank names no backend */
  if (ctx->device_count == 0) {
    why_no_device(ctx, sel, blen0, why, sizeof why);
    return bp__fail(BP_ERR_UNAVAILABLE, "bp_device_open: no devices (%u plugin(s) loaded, %u refused)%s",
                    ctx->plugin_count - refused_count(ctx), refused_count(ctx), why);
  }
  if (!sel || !sel[0]) {
    *out_rank = 0;
    return BP_OK;
  }
  char *end;
  unsigned long n = strtoul(sel, &end, 10);
  if (sel[0] >= '0' && sel[0] <= '9' && *end == '\0') {
    if (n >= ctx->device_count)
      return bp__fail(BP_ERR_NOT_FOUND, "bp_device_open: rank %lu out of range (%u devices)",
                      n, ctx->device_count);
    *out_rank = (uint32_t)n;
    return BP_OK;
  }
  for (uint32_t r = 0; r < ctx->device_count; r++) /* exact device name */
    if (!strcmp(ctx->ranked[r].info.name, sel)) {
      *out_rank = r;
      return BP_OK;
    }
  const char *colon = strchr(sel, ':');
  size_t blen = colon ? (size_t)(colon - sel) : strlen(sel);
  long index = -1;
  if (colon) {
    index = strtol(colon + 1, &end, 10);
    if (*end || index < 0)
      return bp__fail(BP_ERR_INVALID_ARGUMENT,
                      "bp_device_open: selector '%s': expected backend:INDEX", sel);
  }
  for (uint32_t r = 0; r < ctx->device_count; r++) {
    const bp_device_entry_t *e = &ctx->ranked[r];
    if (strlen(e->backend) == blen && !strncmp(e->backend, sel, blen) &&
        (index < 0 || e->backend_index == (uint32_t)index)) {
      *out_rank = r;
      return BP_OK;
    }
  }
  why_no_device(ctx, sel, blen, why, sizeof why);
  return bp__fail(BP_ERR_NOT_FOUND, "bp_device_open: no device matches selector '%s'%s", sel, why);
}

static void config_to_plugin(const bp_device_config_t *c,
                             bp_plugin_device_config_t *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  if (!c) return;
  out->threads = c->threads;
  out->isa_max = c->isa_max;
  out->memory_limit = c->memory_limit;
  out->allow_reduced_precision = c->allow_reduced_precision;
}

/* The smallest config accepted: every field before the first appended one. */
#define CONFIG_MIN_SIZE offsetof(bp_device_config_t, no_fallback)
/* Whether config c (checked) is large enough to hold field. */
#define CONFIG_HAS(c, field) \
  ((c)->struct_size >= offsetof(bp_device_config_t, field) + sizeof((c)->field))

static bp_status_t check_config(const bp_device_config_t *c) {
  if (!c) return BP_OK;
  if (c->struct_size < CONFIG_MIN_SIZE)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_device_open: config->struct_size %u < %zu", c->struct_size, CONFIG_MIN_SIZE);
  if ((unsigned)c->isa_max > BP_ISA_AVX512)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_open: config->isa_max %d is not a bp_isa_level_t",
                    (int)c->isa_max);
  if (c->threads > 4096)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_open: config->threads %u is absurd (max 4096)",
                    c->threads);
  return BP_OK;
}

/* Fallback is on unless the config or BACKPLANE_FALLBACK=0 turns it off. */
static bool fallback_wanted(const bp_device_config_t *c) {
  if (c && CONFIG_HAS(c, no_fallback) && c->no_fallback) return false;
  const char *env = bp__getenv("BACKPLANE_FALLBACK");
  return !(env && strcmp(env, "0") == 0);
}

/* Warms the pool: one segment of the requested size, kept cached. */
static void reserve_initial(bp__device_t *d, uint64_t bytes) {
  uint64_t ptr, origin;
  void *block;
  if (bp__pool_alloc(d, bytes, &ptr, &origin, &block) == BP_OK) bp__pool_free(d, block);
  bp__clear_error();
}

bp_status_t bp_device_open(bp_context_t *ctxh, const char *selector,
                           const bp_device_config_t *config, bp_device_t **out_device) {
  bp__clear_error();
  if (!out_device) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_open: out_device is NULL");
  *out_device = NULL;
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(ctxh, "bp_device_open", &ctx);
  if (st != BP_OK) return st;
  uint32_t rank = 0;
  st = check_config(config);
  if (st == BP_OK) st = resolve_selector(ctx, selector, &rank);
  if (st != BP_OK) return st;
  bp__device_t *d = calloc(1, sizeof *d);
  if (!d) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_device_open: out of memory");
  d->context = ctx;
  d->plugin = &ctx->plugins[ctx->ranked_plugin[rank]];
  d->desc = &d->plugin->desc;
  d->entry = ctx->ranked[rank];
  d->allow_reduced_precision = config && config->allow_reduced_precision;
  pthread_mutex_init(&d->lock, NULL);
  d->pool = bp__pool_create(config ? config->pool_max_bytes : 0);
  d->gate = bp__gate_new();
  if (!d->pool || !d->gate) {
    device_free(d);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_device_open: out of memory");
  }
  st = bp__fallback_open(d, fallback_wanted(config));
  if (st != BP_OK) {
    device_free(d);
    return st;
  }
  bp_plugin_device_config_t pc;
  config_to_plugin(config, &pc);
  st = bp__call_device_open(d, &pc);
  if (st != BP_OK) {
    device_free(d);
    return st;
  }
  bp__layers_attach(d); /* d->desc: the top of its layers, if any */
  d->h = bp__handle_add(d, BP__H_DEVICE, d->gate);
  if (!d->h) {
    bp__pool_destroy(d, d->pool);
    d->pool = NULL;
    bp__call_device_close(d);
    device_free(d);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_device_open: no room for another handle");
  }
  pthread_mutex_lock(&ctx->lock);
  d->next = ctx->open_devices;
  ctx->open_devices = d;
  pthread_mutex_unlock(&ctx->lock);
  *out_device = d->h;
  if (config && config->pool_initial_bytes) reserve_initial(d, config->pool_initial_bytes);
  return BP_OK;
}

/* Frees the device record, its gate and its (empty) pool. */
static void device_free(bp__device_t *d) {
  bp__layers_detach(d); /* the plugin device is closed, or was never opened */
  bp__fallback_close(d);
  if (d->pool) bp__pool_destroy(d, d->pool);
  bp__gate_recycle(d->gate);
  pthread_mutex_destroy(&d->lock);
  free(d);
}

void bp_device_close(bp_device_t *h) {
  /* Shuts the gate: calls already inside finish, later ones are refused
   * with BP_ERR_UNAVAILABLE, and no child handle of d resolves any more. */
  bp__device_t *d = bp__gate_close(h, BP__H_DEVICE);
  if (!d) return;
  bp__fallback_close(d); /* the devices fallback opened for d close with it */
  bp__call_device_sync(d);
  bp__device_release_graphs(d);
  bp__device_release_children(d);
  bp__host_release_all(d);
  bp__pool_destroy(d, d->pool);
  d->pool = NULL;
  bp__call_device_close(d);
  bp_context_t *ctx = d->context;
  pthread_mutex_lock(&ctx->lock);
  for (bp__device_t **pp = &ctx->open_devices; *pp; pp = &(*pp)->next)
    if (*pp == d) {
      *pp = d->next;
      break;
    }
  pthread_mutex_unlock(&ctx->lock);
  device_free(d);
}

bp_status_t bp_device_entry(const bp_device_t *h, bp_device_entry_t *out_entry) {
  bp__clear_error();
  if (!out_entry) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_entry: out_entry is NULL");
  memset(out_entry, 0, sizeof *out_entry);
  BP__ENTER(bp__device_t, d, h, BP__H_DEVICE, "bp_device_entry", "device");
  *out_entry = d->entry;
  return BP_OK;
}

bp_status_t bp_device_supports(const bp_device_t *h, bp_op_t op, bp_dtype_t dtype,
                               bool *out_supported) {
  bp__clear_error();
  if (!out_supported) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_supports: out_supported is NULL");
  *out_supported = false;
  BP__ENTER(bp__device_t, d, h, BP__H_DEVICE, "bp_device_supports", "device");
  if ((unsigned)op >= BP_OP_COUNT)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_supports: op %d out of range", (int)op);
  if (!bp__dtype_valid(dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_supports: dtype %d invalid", (int)dtype);
  *out_supported = bp__device_claims(d, op, dtype); /* natively: fallback aside */
  return BP_OK;
}

bp_status_t bp_device_synchronize(bp_device_t *h) {
  bp__clear_error();
  BP__ENTER(bp__device_t, d, h, BP__H_DEVICE, "bp_device_synchronize", "device");
  return bp__call_device_sync(d);
}

bp_status_t bp_device_memory_stats(bp_device_t *h, bp_memory_stats_t *out_stats) {
  bp__clear_error();
  if (!out_stats) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_memory_stats: out_stats is NULL");
  memset(out_stats, 0, sizeof *out_stats);
  BP__ENTER(bp__device_t, d, h, BP__H_DEVICE, "bp_device_memory_stats", "device");
  bp__pool_stats(d, out_stats);
  return BP_OK;
}

bp_status_t bp_device_empty_cache(bp_device_t *h) {
  bp__clear_error();
  BP__ENTER(bp__device_t, d, h, BP__H_DEVICE, "bp_device_empty_cache", "device");
  bp__pool_empty_cache(d);
  return BP_OK;
}
