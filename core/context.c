/*
 * context.c — a loader instance: discovery on create, unloading on destroy,
 * and the read-only views of what was found.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
  if (st != BP_OK) {
    bp_context_destroy(ctx);
    return st;
  }
  bp__handle_add(ctx, BP__H_CONTEXT);
  *out_context = ctx;
  return BP_OK;
}

void bp_context_destroy(bp_context_t *ctx) {
  if (!ctx) return;
  bp__handle_remove(ctx);
  while (ctx->open_devices) {
    bp__log(BP_LOG_WARN, BP__LOG_API,
            "bp_context_destroy: device '%s' still open; closing it",
            ctx->open_devices->entry.info.name);
    bp_device_close(ctx->open_devices);
  }
  for (uint32_t i = 0; i < ctx->plugin_count; i++) bp__loader_unload(&ctx->plugins[i]);
  free(ctx->plugins);
  for (uint32_t i = 0; i < ctx->scanned_count; i++) free(ctx->scanned[i]);
  free(ctx->scanned);
  free(ctx->ranked);
  free(ctx->ranked_plugin);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

static bp_status_t check_context(const bp_context_t *ctx, const char *fn) {
  if (!bp__handle_live(ctx, BP__H_CONTEXT))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: context is %s", fn,
                    ctx ? "not a live context" : "NULL");
  return BP_OK;
}

bp_status_t bp_context_plugin_count(const bp_context_t *ctx, uint32_t *out_count) {
  bp__clear_error();
  if (!out_count) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_plugin_count: out_count is NULL");
  *out_count = 0;
  bp_status_t st = check_context(ctx, "bp_context_plugin_count");
  if (st == BP_OK) *out_count = ctx->plugin_count;
  return st;
}

bp_status_t bp_context_plugin_report(const bp_context_t *ctx, uint32_t index,
                                     bp_plugin_report_t *out_report) {
  bp__clear_error();
  if (!out_report) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_plugin_report: out_report is NULL");
  memset(out_report, 0, sizeof *out_report);
  bp_status_t st = check_context(ctx, "bp_context_plugin_report");
  if (st != BP_OK) return st;
  if (index >= ctx->plugin_count)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_context_plugin_report: index %u >= plugin count %u", index,
                    ctx->plugin_count);
  *out_report = ctx->plugins[index].report;
  return BP_OK;
}

bp_status_t bp_context_device_count(const bp_context_t *ctx, uint32_t *out_count) {
  bp__clear_error();
  if (!out_count) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_device_count: out_count is NULL");
  *out_count = 0;
  bp_status_t st = check_context(ctx, "bp_context_device_count");
  if (st == BP_OK) *out_count = ctx->device_count;
  return st;
}

bp_status_t bp_context_device_entry(const bp_context_t *ctx, uint32_t rank,
                                    bp_device_entry_t *out_entry) {
  bp__clear_error();
  if (!out_entry) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_context_device_entry: out_entry is NULL");
  memset(out_entry, 0, sizeof *out_entry);
  bp_status_t st = check_context(ctx, "bp_context_device_entry");
  if (st != BP_OK) return st;
  if (rank >= ctx->device_count)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_context_device_entry: rank %u >= device count %u", rank,
                    ctx->device_count);
  *out_entry = ctx->ranked[rank];
  return BP_OK;
}
