/*
 * kernel.c — custom kernels: validation of the source, the signature and
 * every launch's arguments, then the plugin's kernel entry points.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

struct bp__kernel {
  bp_kernel_t *h; /* the application's token */
  bp__device_t *device;
  bp__kernel_t *next, *prev; /* in the device's list, under its lock */
  bp_plugin_kernel_t *handle;
  uint32_t arg_count;
  bp_kernel_arg_kind_t *signature;
};

#define MAX_ARGS 64

static void kernel_release(bp__kernel_t *k);

bp_status_t bp_kernel_create(bp_device_t *dh, bp_kernel_format_t format, const void *code, uint64_t code_size,
                             const char *entry, const char *options, uint32_t arg_count,
                             const bp_kernel_arg_kind_t *signature, bp_kernel_t **out_kernel) {
  bp__clear_error();
  const char *fn = "bp_kernel_create";
  if (!out_kernel) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: out_kernel is NULL", fn);
  *out_kernel = NULL;
  BP__ENTER(bp__device_t, d, dh, BP__H_DEVICE, fn, "device");
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
  if (!bp__plugin_has_kernels(d) || !(d->entry.info.kernel_formats & BP_KERNEL_FORMAT_BIT(format)))
    return bp__fail(BP_ERR_UNSUPPORTED, "%s: device '%s' (%s) takes no kernels of format %d", fn,
                    d->entry.info.name, d->entry.backend, (int)format);
  bp__kernel_t *k = calloc(1, sizeof *k);
  if (k) k->signature = calloc(arg_count ? arg_count : 1, sizeof *k->signature);
  if (!k || !k->signature) {
    if (k) free(k);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  }
  if (arg_count) memcpy(k->signature, signature, arg_count * sizeof *signature);
  k->arg_count = arg_count;
  k->device = d;
  bp_kernel_source_t src = {sizeof src, format, code, code_size, entry, options, arg_count, k->signature};
  bp_status_t st = bp__call_kernel_create(d, &src, &k->handle);
  if (st != BP_OK) {
    free(k->signature);
    free(k);
    return st;
  }
  k->h = bp__handle_add(k, BP__H_KERNEL, d->gate);
  if (!k->h) {
    kernel_release(k);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "%s: no room for another handle", fn);
  }
  pthread_mutex_lock(&d->lock);
  k->next = d->kernels;
  if (d->kernels) d->kernels->prev = k;
  d->kernels = k;
  pthread_mutex_unlock(&d->lock);
  *out_kernel = k->h;
  return BP_OK;
}

static void kernel_release(bp__kernel_t *k) {
  bp__call_kernel_destroy(k->device, k->handle);
  free(k->signature);
  free(k);
}

void bp_kernel_destroy(bp_kernel_t *kh) {
  BP__ENTER_VOID(bp__kernel_t, k, kh, BP__H_KERNEL, "bp_kernel_destroy");
  if (!bp__handle_remove(kh)) return;
  bp__device_t *d = k->device;
  bp__call_device_sync(d);
  pthread_mutex_lock(&d->lock);
  if (k->prev) k->prev->next = k->next; else d->kernels = k->next;
  if (k->next) k->next->prev = k->prev;
  pthread_mutex_unlock(&d->lock);
  kernel_release(k);
}

void bp__device_release_kernels(bp__device_t *d) {
  while (d->kernels) {
    bp__kernel_t *k = d->kernels;
    d->kernels = k->next;
    bp__handle_remove(k->h);
    kernel_release(k);
  }
}

/* Checks one argument against the signature and converts it. */
static bp_status_t convert_arg(const bp__kernel_t *k, const bp__stream_t *s, uint32_t i, const bp_kernel_arg_t *a,
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
  char what[32];
  snprintf(what, sizeof what, "args[%u].buffer", i);
  bp__buffer_t *b;
  bp_status_t st = bp__buffer_on(a->buffer, s->device, fn, what, &b);
  if (st != BP_OK) return st;
  if (a->offset >= b->size)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: args[%u].offset %llu is outside the %llu-byte buffer", fn, i,
                    (unsigned long long)a->offset, (unsigned long long)b->size);
  out->value.buffer.ptr = b->ptr;
  out->value.buffer.offset = b->origin + a->offset;
  return BP_OK;
}

bp_status_t bp_kernel_launch(bp_stream_t *sh, bp_kernel_t *kh, const uint32_t grid[3], const uint32_t block[3],
                             uint32_t shared_bytes, uint32_t arg_count, const bp_kernel_arg_t *args) {
  bp__clear_error();
  const char *fn = "bp_kernel_launch";
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, fn, "stream");
  bp_status_t st;
  bp__kernel_t *k = bp__handle_get_on(kh, BP__H_KERNEL, s->device->gate);
  if (!k)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: kernel is %s", fn,
                    !kh ? "NULL"
                    : bp__handle_get(kh, BP__H_KERNEL) ? "on a different device than the stream"
                                                       : "not a live kernel");
  if (!grid || !block) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: grid or block is NULL", fn);
  for (int i = 0; i < 3; i++)
    if (!grid[i] || !block[i])
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: grid and block dimensions must be >= 1", fn);
  if (arg_count != k->arg_count)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %u arguments given, the signature has %u", fn, arg_count,
                    k->arg_count);
  if (arg_count && !args) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: args is NULL", fn);
  bp_plugin_kernel_arg_t pa[MAX_ARGS];
  for (uint32_t i = 0; i < arg_count; i++)
    if ((st = convert_arg(k, s, i, &args[i], &pa[i]))) return st;
  bp_launch_args_t la = {sizeof la, {grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, shared_bytes,
                         arg_count, pa};
  return bp__call_kernel_launch(s, k->handle, &la);
}
