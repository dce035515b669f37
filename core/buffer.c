/*
 * buffer.c — device memory with its size, and synchronous / asynchronous
 * copies. Every range is checked against the buffer before a plugin sees it.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bp_status_t check_buffer(const bp_buffer_t *b, const char *fn,
                                const char *what) {
  if (!bp__handle_live(b, BP__H_BUFFER))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s is %s", fn, what,
                    b ? "not a live buffer (freed or foreign)" : "NULL");
  return BP_OK;
}

/* offset + size must fit in the buffer, without overflow. */
static bp_status_t check_range(const bp_buffer_t *b, uint64_t offset,
                               uint64_t size, const char *fn, const char *what) {
  if (offset > b->size || size > b->size - offset)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: %s range [%llu, +%llu) is outside its %llu bytes", fn,
                    what, (unsigned long long)offset, (unsigned long long)size,
                    (unsigned long long)b->size);
  return BP_OK;
}

bp_status_t bp_buffer_alloc(bp_device_t *d, uint64_t size, bp_buffer_t **out_buffer) {
  bp__clear_error();
  if (!out_buffer) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_buffer_alloc: out_buffer is NULL");
  *out_buffer = NULL;
  if (!bp__handle_live(d, BP__H_DEVICE))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_buffer_alloc: device is %s",
                    d ? "not a live device" : "NULL");
  if (size == 0) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_buffer_alloc: size is 0");
  if (size > (UINT64_C(1) << 56))
    return bp__fail(BP_ERR_OUT_OF_MEMORY,
                    "bp_buffer_alloc: requested %llu bytes, more than any device has (%llu)",
                    (unsigned long long)size, (unsigned long long)d->entry.info.memory_bytes);
  bp_buffer_t *b = calloc(1, sizeof *b);
  if (!b) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_buffer_alloc: out of host memory");
  bp_status_t st = bp__pool_alloc(d, size, &b->ptr, &b->origin, &b->block);
  if (st != BP_OK) {
    free(b);
    return st;
  }
  b->device = d;
  b->size = size;
  pthread_mutex_lock(&d->lock);
  b->next = d->buffers;
  if (d->buffers) d->buffers->prev = b;
  d->buffers = b;
  pthread_mutex_unlock(&d->lock);
  bp__handle_add(b, BP__H_BUFFER);
  *out_buffer = b;
  return BP_OK;
}

void bp__buffer_release_memory(bp_device_t *d, bp_buffer_t *b) {
  if (b->foreign) bp__dlpack_release(b->foreign, b->foreign_versioned);
  else bp__pool_free(d, b->block);
}

void bp_buffer_free(bp_buffer_t *b) {
  if (!b || !bp__handle_live(b, BP__H_BUFFER)) return;
  bp__handle_remove(b);
  bp_device_t *d = b->device;
  /* Work queued on any stream may still read the buffer. */
  bp__call_device_sync(d);
  pthread_mutex_lock(&d->lock);
  if (b->prev) b->prev->next = b->next; else d->buffers = b->next;
  if (b->next) b->next->prev = b->prev;
  pthread_mutex_unlock(&d->lock);
  bp__buffer_release_memory(d, b);
  free(b);
}

bp_status_t bp_buffer_size(const bp_buffer_t *b, uint64_t *out_size) {
  bp__clear_error();
  if (!out_size) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_buffer_size: out_size is NULL");
  *out_size = 0;
  bp_status_t st = check_buffer(b, "bp_buffer_size", "buffer");
  if (st == BP_OK) *out_size = b->size;
  return st;
}

static bp_status_t check_host_copy(const bp_buffer_t *b, uint64_t offset,
                                   const void *host, uint64_t size, const char *fn) {
  bp_status_t st = check_buffer(b, fn, "buffer");
  if (st != BP_OK) return st;
  if (!host && size) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: host pointer is NULL", fn);
  return check_range(b, offset, size, fn, "buffer");
}

bp_status_t bp_buffer_write(bp_buffer_t *b, uint64_t offset, const void *src, uint64_t size) {
  bp__clear_error();
  bp_status_t st = check_host_copy(b, offset, src, size, "bp_buffer_write");
  if (st != BP_OK || size == 0) return st;
  return bp__call_mem_write(b->device, NULL, b->ptr, b->origin + offset, src, size);
}

bp_status_t bp_buffer_read(bp_buffer_t *b, uint64_t offset, void *dst, uint64_t size) {
  bp__clear_error();
  bp_status_t st = check_host_copy(b, offset, dst, size, "bp_buffer_read");
  if (st != BP_OK || size == 0) return st;
  return bp__call_mem_read(b->device, NULL, dst, b->ptr, b->origin + offset, size);
}

bp_status_t bp_buffer_copy(bp_buffer_t *dst, uint64_t dst_offset, bp_buffer_t *src,
                           uint64_t src_offset, uint64_t size) {
  bp__clear_error();
  const char *fn = "bp_buffer_copy";
  bp_status_t st = check_buffer(dst, fn, "dst");
  if (st == BP_OK) st = check_buffer(src, fn, "src");
  if (st == BP_OK) st = check_range(dst, dst_offset, size, fn, "dst");
  if (st == BP_OK) st = check_range(src, src_offset, size, fn, "src");
  if (st != BP_OK) return st;
  if (dst->device != src->device)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: dst and src are on different devices", fn);
  if (dst == src && dst_offset < src_offset + size && src_offset < dst_offset + size)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: source and destination ranges overlap", fn);
  if (size == 0) return BP_OK;
  return bp__call_mem_copy(dst->device, NULL, dst->ptr, dst->origin + dst_offset, src->ptr,
                           src->origin + src_offset, size);
}

static bp_status_t check_async(const bp_stream_t *s, const bp_buffer_t *b, uint64_t offset,
                               const void *host, uint64_t size, const char *fn) {
  bp_status_t st = bp__stream_check(s, fn);
  if (st == BP_OK) st = check_host_copy(b, offset, host, size, fn);
  if (st == BP_OK && b->device != s->device)
    st = bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: buffer belongs to another device than the stream", fn);
  if (st == BP_OK && s->capture)
    st = bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: copies cannot be captured into a graph", fn);
  return st;
}

bp_status_t bp_buffer_write_async(bp_stream_t *s, bp_buffer_t *b, uint64_t offset,
                                  const void *src, uint64_t size) {
  bp__clear_error();
  bp_status_t st = check_async(s, b, offset, src, size, "bp_buffer_write_async");
  if (st != BP_OK || size == 0) return st;
  return bp__call_mem_write(b->device, s, b->ptr, b->origin + offset, src, size);
}

bp_status_t bp_buffer_read_async(bp_stream_t *s, bp_buffer_t *b, uint64_t offset,
                                 void *dst, uint64_t size) {
  bp__clear_error();
  bp_status_t st = check_async(s, b, offset, dst, size, "bp_buffer_read_async");
  if (st != BP_OK || size == 0) return st;
  return bp__call_mem_read(b->device, s, dst, b->ptr, b->origin + offset, size);
}
