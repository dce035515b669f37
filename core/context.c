/*
 * context.c — a loader instance: discovery on create, unloading on destroy,
 * and the read-only views of what was found.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "layers.h"

static void context_free(bp_context_t *ctx);

bp_status_t bp_context_create(const bp_context_options_t *options,
                              bp_context_t **out_context) {
  bp__clear_error();
  if (!out_context)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_create: out_context is NULL");
  *out_context = NULL;
  if (options && options->struct_size < offsetof(bp_context_options_t, plugin_dir) + sizeof(char *))
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_context_create: options->struct_size %u is too small",
                    options->struct_size);
  bp_context_t *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_context_create: out of memory");
  ctx->options.struct_size = sizeof ctx->options;
  if (options) {
    size_t n = options->struct_size < sizeof ctx->options ? options->struct_size
                                                           : sizeof ctx->options;
    memcpy(&ctx->options, options, n);
    ctx->options.struct_size = sizeof ctx->options;
  }
  pthread_mutex_init(&ctx->lock, NULL);
  bp_status_t st = bp__loader_scan(ctx);
  if (st == BP_OK) st = bp__rank_devices(ctx);
  if (st == BP_OK) bp__layers_load(ctx);
  ctx->options.layers = NULL; /* the caller's string: read once, above */
  if (st != BP_OK) {
    context_free(ctx);
    return st;
  }
  ctx->h = bp__handle_add(ctx, BP__H_CONTEXT, NULL);
  if (!ctx->h) {
    context_free(ctx);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_context_create: no room for another handle");
  }
  *out_context = ctx->h;
  return BP_OK;
}

void bp_context_destroy(bp_context_t *h) {
  bp_context_t *ctx = bp__handle_get(h, BP__H_CONTEXT);
  if (ctx && bp__handle_remove(h)) context_free(ctx);
}

static void context_free(bp_context_t *ctx) {
  for (;;) {
    pthread_mutex_lock(&ctx->lock);
    bp__device_t *d = ctx->open_devices;
    bp_device_t *dh = d ? d->h : NULL;
    if (d)
      bp__log(BP_LOG_WARN, BP__LOG_API, "bp_context_destroy: device '%s' still open; closing it",
              d->entry.info.name);
    pthread_mutex_unlock(&ctx->lock);
    if (!dh) break;
    bp_device_close(dh);
  }
  bp__comm_set_free(ctx); /* communicators and comm plugins (comm_loader.c) */
  for (uint32_t i = 0; i < ctx->plugin_count; i++) bp__loader_unload(&ctx->plugins[i]);
  free(ctx->plugins);
  for (uint32_t i = 0; i < ctx->scanned_count; i++) free(ctx->scanned[i]);
  free(ctx->scanned);
  for (uint32_t i = 0; i < ctx->searched_count; i++) free(ctx->searched[i]);
  free(ctx->searched);
  free(ctx->searched_present);
  free(ctx->ranked);
  free(ctx->ranked_plugin);
  bp__layers_free(ctx);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

bp_status_t bp__context_get(const bp_context_t *h, const char *fn, bp_context_t **out) {
  *out = bp__handle_get(h, BP__H_CONTEXT);
  if (!*out)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: context is %s", fn,
                    h ? "not a live context (destroyed or foreign)" : "NULL");
  return BP_OK;
}

bp_status_t bp_context_plugin_count(const bp_context_t *h, uint32_t *out_count) {
  bp__clear_error();
  if (!out_count) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_plugin_count: out_count is NULL");
  *out_count = 0;
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(h, "bp_context_plugin_count", &ctx);
  if (st == BP_OK) *out_count = ctx->plugin_count;
  return st;
}

bp_status_t bp_context_plugin_report(const bp_context_t *h, uint32_t index,
                                     bp_plugin_report_t *out_report) {
  bp__clear_error();
  if (!out_report) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_plugin_report: out_report is NULL");
  memset(out_report, 0, sizeof *out_report);
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(h, "bp_context_plugin_report", &ctx);
  if (st != BP_OK) return st;
  if (index >= ctx->plugin_count)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_context_plugin_report: index %u >= plugin count %u", index,
                    ctx->plugin_count);
  *out_report = ctx->plugins[index].report;
  return BP_OK;
}

bp_status_t bp_context_search_dir_count(const bp_context_t *h, uint32_t *out_count) {
  bp__clear_error();
  if (!out_count) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_search_dir_count: out_count is NULL");
  *out_count = 0;
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(h, "bp_context_search_dir_count", &ctx);
  if (st == BP_OK) *out_count = ctx->searched_count;
  return st;
}

bp_status_t bp_context_search_dir(const bp_context_t *h, uint32_t index, char *out_path,
                                  size_t size, bool *out_present) {
  bp__clear_error();
  if (out_present) *out_present = false;
  if (!out_path || size == 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_search_dir: out_path is NULL or size is 0");
  out_path[0] = '\0';
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(h, "bp_context_search_dir", &ctx);
  if (st != BP_OK) return st;
  if (index >= ctx->searched_count)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_search_dir: index %u out of range (%u directories)",
                    index, ctx->searched_count);
  snprintf(out_path, size, "%s", ctx->searched[index]);
  if (out_present) *out_present = ctx->searched_present[index];
  return BP_OK;
}

bp_status_t bp_context_device_count(const bp_context_t *h, uint32_t *out_count) {
  bp__clear_error();
  if (!out_count) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_device_count: out_count is NULL");
  *out_count = 0;
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(h, "bp_context_device_count", &ctx);
  if (st == BP_OK) *out_count = ctx->device_count;
  return st;
}

bp_status_t bp_context_device_entry(const bp_context_t *h, uint32_t rank,
                                    bp_device_entry_t *out_entry) {
  bp__clear_error();
  if (!out_entry) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_device_entry: out_entry is NULL");
  memset(out_entry, 0, sizeof *out_entry);
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(h, "bp_context_device_entry", &ctx);
  if (st != BP_OK) return st;
  if (rank >= ctx->device_count)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_context_device_entry: rank %u >= device count %u", rank,
                    ctx->device_count);
  *out_entry = ctx->ranked[rank];
  return BP_OK;
}
