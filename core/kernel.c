/*
 * kernel.c — custom kernels: validation of the source, the signature and
 * every launch's arguments, then the plugin's kernel entry points.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct bp_kernel {
  bp_device_t *device;
  bp_plugin_kernel_t *handle;
  uint32_t arg_count;
  bp_kernel_arg_kind_t *signature;
};

#define MAX_ARGS 64

static bool kernels_supported(const bp_device_t *d) {
  const bp_plugin_descriptor_t *x = d->desc;
  return x->struct_size >= offsetof(bp_plugin_descriptor_t, kernel_launch) + sizeof(void *) &&
         x->kernel_create && x->kernel_destroy && x->kernel_launch;
}

bp_status_t bp_kernel_create(bp_device_t *d, bp_kernel_format_t format, const void *code, uint64_t code_size,
                             const char *entry, const char *options, uint32_t arg_count,
                             const bp_kernel_arg_kind_t *signature, bp_kernel_t **out_kernel) {
  bp__clear_error();
  const char *fn = "bp_kernel_create";
  if (!out_kernel) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: out_kernel is NULL", fn);
  *out_kernel = NULL;
  if (!bp__handle_live(d, BP__H_DEVICE))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: device is %s", fn, d ? "not a live device" : "NULL");
  if ((unsigned)format > BP_KERNEL_C_SHARED_OBJECT)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: format %d is not a bp_kernel_format_t", fn, (int)format);
  if (!code || code_size == 0) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: code is empty", fn);
  if (!entry || !entry[0]) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: entry name is missing", fn);
  if (arg_count > MAX_ARGS || (arg_count && !signature))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                    arg_count > MAX_ARGS ? "more than 64 arguments" : "signature is NULL");
  for (uint32_t i = 0; i < arg_count; i++)
    if ((unsigned)signature[i] > BP_ARG_F64)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: signature[%u] = %d is not an argument kind", fn, i,
                      (int)signature[i]);
  if (!kernels_supported(d) || !(d->entry.info.kernel_formats & BP_KERNEL_FORMAT_BIT(format)))
    return bp__fail(BP_ERR_UNSUPPORTED, "%s: device '%s' (%s) takes no kernels of format %d", fn,
                    d->entry.info.name, d->entry.backend, (int)format);
  bp_kernel_t *k = calloc(1, sizeof *k);
  if (k) k->signature = calloc(arg_count ? arg_count : 1, sizeof *k->signature);
  if (!k || !k->signature) {
    if (k) free(k);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  }
  if (arg_count) memcpy(k->signature, signature, arg_count * sizeof *signature);
  k->arg_count = arg_count;
  k->device = d;
  bp_kernel_source_t src = {sizeof src, format, code, code_size, entry, options, arg_count, k->signature};
  bp__plugin_error_reset();
  bp_status_t st = d->desc->kernel_create(d->handle, &src, &k->handle);
  if (st != BP_OK || !k->handle) {
    if (st == BP_OK) st = BP_ERR_INTERNAL;
    bp__fail(st, "%s: plugin '%s': %s", fn, d->entry.backend,
             bp__plugin_error()[0] ? bp__plugin_error() : bp_status_string(st));
    free(k->signature);
    free(k);
    return st;
  }
  bp__handle_add(k, BP__H_KERNEL);
  *out_kernel = k;
  return BP_OK;
}

void bp_kernel_destroy(bp_kernel_t *k) {
  if (!k || !bp__handle_live(k, BP__H_KERNEL)) return;
  bp__handle_remove(k);
  bp__call_device_sync(k->device);
  k->device->desc->kernel_destroy(k->device->handle, k->handle);
  free(k->signature);
  free(k);
}

/* Checks one argument against the signature and converts it. */
static bp_status_t convert_arg(const bp_kernel_t *k, const bp_stream_t *s, uint32_t i, const bp_kernel_arg_t *a,
                               bp_plugin_kernel_arg_t *out) {
  const char *fn = "bp_kernel_launch";
  if (a->kind != k->signature[i])
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: args[%u] has kind %d; the signature says %d", fn, i,
                    (int)a->kind, (int)k->signature[i]);
  memset(out, 0, sizeof *out);
  out->kind = a->kind;
  if (a->kind != BP_ARG_BUFFER) {
    memcpy(&out->value, &a->value, sizeof a->value);
    return BP_OK;
  }
  if (!bp__handle_live(a->buffer, BP__H_BUFFER))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: args[%u].buffer is not a live buffer", fn, i);
  if (a->buffer->device != s->device)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: args[%u].buffer belongs to another device", fn, i);
  if (a->offset >= a->buffer->size)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: args[%u].offset %llu is outside the %llu-byte buffer", fn, i,
                    (unsigned long long)a->offset, (unsigned long long)a->buffer->size);
  out->value.buffer.ptr = a->buffer->ptr;
  out->value.buffer.offset = a->buffer->origin + a->offset;
  return BP_OK;
}

bp_status_t bp_kernel_launch(bp_stream_t *s, bp_kernel_t *k, const uint32_t grid[3], const uint32_t block[3],
                             uint32_t shared_bytes, uint32_t arg_count, const bp_kernel_arg_t *args) {
  bp__clear_error();
  const char *fn = "bp_kernel_launch";
  bp_status_t st = bp__stream_check(s, fn);
  if (st != BP_OK) return st;
  if (!bp__handle_live(k, BP__H_KERNEL))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: kernel is %s", fn, k ? "not a live kernel" : "NULL");
  if (k->device != s->device) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: kernel and stream are on different devices", fn);
  if (!grid || !block) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: grid or block is NULL", fn);
  for (int i = 0; i < 3; i++)
    if (!grid[i] || !block[i])
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: grid and block dimensions must be >= 1", fn);
  if (arg_count != k->arg_count)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %u arguments given, the signature has %u", fn, arg_count,
                    k->arg_count);
  if (arg_count && !args) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: args is NULL", fn);
  if (s->capture) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: custom kernels cannot be captured yet", fn);
  bp_plugin_kernel_arg_t pa[MAX_ARGS];
  for (uint32_t i = 0; i < arg_count; i++)
    if ((st = convert_arg(k, s, i, &args[i], &pa[i]))) return st;
  bp_launch_args_t la = {sizeof la, {grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, shared_bytes,
                         arg_count, pa};
  bp_device_t *d = s->device;
  pthread_mutex_lock(&s->lock);
  bp__plugin_error_reset();
  st = d->desc->kernel_launch(d->handle, s->handle, k->handle, &la);
  pthread_mutex_unlock(&s->lock);
  if (st != BP_OK)
    return bp__fail(st, "%s: plugin '%s': %s", fn, d->entry.backend,
                    bp__plugin_error()[0] ? bp__plugin_error() : bp_status_string(st));
  return BP_OK;
}
