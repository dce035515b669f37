/*
 * buffer.c — device memory with its size, and synchronous / asynchronous
 * copies. Every range is checked against the buffer before a plugin sees it.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* offset + size must fit in the buffer, without overflow. */
static bp_status_t check_range(const bp__buffer_t *b, uint64_t offset,
                               uint64_t size, const char *fn, const char *what) {
  if (offset > b->size || size > b->size - offset)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: %s range [%llu, +%llu) is outside its %llu bytes", fn,
                    what, (unsigned long long)offset, (unsigned long long)size,
                    (unsigned long long)b->size);
  return BP_OK;
}

bp_status_t bp_buffer_alloc(bp_device_t *dh, uint64_t size, bp_buffer_t **out_buffer) {
  bp__clear_error();
  if (!out_buffer) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_buffer_alloc: out_buffer is NULL");
  *out_buffer = NULL;
  BP__ENTER(bp__device_t, d, dh, BP__H_DEVICE, "bp_buffer_alloc", "device");
  if (size == 0) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_buffer_alloc: size is 0");
  if (size > (UINT64_C(1) << 56))
    return bp__fail(BP_ERR_OUT_OF_MEMORY,
                    "bp_buffer_alloc: requested %llu bytes, more than any device has (%llu)",
                    (unsigned long long)size, (unsigned long long)d->entry.info.memory_bytes);
  bp__buffer_t *b = calloc(1, sizeof *b);
  if (!b) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_buffer_alloc: out of host memory");
  bp_status_t st = bp__pool_alloc(d, size, &b->ptr, &b->origin, &b->block);
  if (st != BP_OK) {
    free(b);
    return st;
  }
  b->device = d;
  b->size = size;
  return bp__buffer_publish(b, out_buffer);
}

bp_status_t bp__buffer_on(const bp_buffer_t *bh, const bp__device_t *d, const char *fn, const char *what,
                          bp__buffer_t **out) {
  *out = bp__handle_get_on(bh, BP__H_BUFFER, d->gate);
  if (*out) return BP_OK;
  if (bp__handle_get(bh, BP__H_BUFFER))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s is not on device '%s': the operands are on different devices",
                    fn, what, d->entry.info.name);
  return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s is %s", fn, what,
                  bh ? "not a live buffer (freed or foreign)" : "NULL");
}

bp_status_t bp__buffer_publish(bp__buffer_t *b, bp_buffer_t **out_buffer) {
  bp__device_t *d = b->device;
  b->h = bp__handle_add(b, BP__H_BUFFER, d->gate);
  if (!b->h) { /* imported memory stays its producer's */
    if (!b->foreign) bp__pool_free(d, b->block);
    free(b);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_buffer_alloc: no room for another handle");
  }
  pthread_mutex_lock(&d->lock);
  b->next = d->buffers;
  if (d->buffers) d->buffers->prev = b;
  d->buffers = b;
  pthread_mutex_unlock(&d->lock);
  *out_buffer = b->h;
  return BP_OK;
}

void bp__buffer_release_memory(bp__device_t *d, bp__buffer_t *b) {
  if (b->foreign) bp__dlpack_release(b->foreign, b->foreign_versioned);
  else bp__pool_free(d, b->block);
}

void bp_buffer_free(bp_buffer_t *bh) {
  BP__ENTER_VOID(bp__buffer_t, b, bh, BP__H_BUFFER, "bp_buffer_free");
  if (!bp__handle_remove(bh)) return;
  bp__device_t *d = b->device;
  /* Work queued on any stream may still read the buffer. */
  bp__call_device_sync(d);
  bp__graphs_forget_buffer(d, b);
  pthread_mutex_lock(&d->lock);
  if (b->prev) b->prev->next = b->next; else d->buffers = b->next;
  if (b->next) b->next->prev = b->prev;
  pthread_mutex_unlock(&d->lock);
  bp__buffer_release_memory(d, b);
  free(b);
}

bp_status_t bp_buffer_size(const bp_buffer_t *bh, uint64_t *out_size) {
  bp__clear_error();
  if (!out_size) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_buffer_size: out_size is NULL");
  *out_size = 0;
  BP__ENTER(bp__buffer_t, b, bh, BP__H_BUFFER, "bp_buffer_size", "buffer");
  *out_size = b->size;
  return BP_OK;
}

static bp_status_t check_host_copy(const bp__buffer_t *b, uint64_t offset,
                                   const void *host, uint64_t size, const char *fn) {
  if (!host && size) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: host pointer is NULL", fn);
  return check_range(b, offset, size, fn, "buffer");
}

/* ---- constant buffers -------------------------------------------------------*/

bp_status_t bp__buffer_writable(const bp__buffer_t *b, const char *fn, const char *what) {
  if (!__atomic_load_n(&b->const_id, __ATOMIC_ACQUIRE)) return BP_OK;
  return bp__fail(BP_ERR_INVALID_ARGUMENT,
                  "%s: %s is in a buffer marked constant (bp_buffer_set_constant); clear the mark "
                  "before writing it", fn, what);
}

bp_status_t bp_buffer_set_constant(bp_buffer_t *bh, bool constant) {
  bp__clear_error();
  BP__ENTER(bp__buffer_t, b, bh, BP__H_BUFFER, "bp_buffer_set_constant", "buffer");
  /* ids are never reused, so a backend's prepared copy of an earlier
   * mark's contents never matches a later one */
  static uint64_t last_id;
  if (!constant)
    __atomic_store_n(&b->const_id, 0, __ATOMIC_RELEASE);
  else if (!__atomic_load_n(&b->const_id, __ATOMIC_ACQUIRE))
    __atomic_store_n(&b->const_id, __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED),
                     __ATOMIC_RELEASE);
  return BP_OK;
}

bp_status_t bp_buffer_is_constant(const bp_buffer_t *bh, bool *out_constant) {
  bp__clear_error();
  if (!out_constant)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_buffer_is_constant: out_constant is NULL");
  *out_constant = false;
  BP__ENTER(bp__buffer_t, b, bh, BP__H_BUFFER, "bp_buffer_is_constant", "buffer");
  *out_constant = __atomic_load_n(&b->const_id, __ATOMIC_ACQUIRE) != 0;
  return BP_OK;
}

bp_status_t bp_buffer_write(bp_buffer_t *bh, uint64_t offset, const void *src, uint64_t size) {
  bp__clear_error();
  BP__ENTER(bp__buffer_t, b, bh, BP__H_BUFFER, "bp_buffer_write", "buffer");
  bp_status_t st = bp__buffer_writable(b, "bp_buffer_write", "the destination");
  if (st == BP_OK) st = check_host_copy(b, offset, src, size, "bp_buffer_write");
  if (st != BP_OK || size == 0) return st;
  return bp__call_mem_write(b->device, NULL, b->ptr, b->origin + offset, src, size);
}

bp_status_t bp_buffer_read(bp_buffer_t *bh, uint64_t offset, void *dst, uint64_t size) {
  bp__clear_error();
  BP__ENTER(bp__buffer_t, b, bh, BP__H_BUFFER, "bp_buffer_read", "buffer");
  bp_status_t st = check_host_copy(b, offset, dst, size, "bp_buffer_read");
  if (st != BP_OK || size == 0) return st;
  return bp__call_mem_read(b->device, NULL, dst, b->ptr, b->origin + offset, size);
}

bp_status_t bp_buffer_copy(bp_buffer_t *dsth, uint64_t dst_offset, bp_buffer_t *srch,
                           uint64_t src_offset, uint64_t size) {
  bp__clear_error();
  const char *fn = "bp_buffer_copy";
  BP__ENTER(bp__buffer_t, dst, dsth, BP__H_BUFFER, fn, "dst");
  BP__ENTER(bp__buffer_t, src, srch, BP__H_BUFFER, fn, "src");
  bp_status_t st = bp__buffer_writable(dst, fn, "dst");
  if (st == BP_OK) st = check_range(dst, dst_offset, size, fn, "dst");
  if (st == BP_OK) st = check_range(src, src_offset, size, fn, "src");
  if (st != BP_OK) return st;
  if (dst == src && dst_offset < src_offset + size && src_offset < dst_offset + size)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: source and destination ranges overlap", fn);
  if (size == 0) return BP_OK;
  if (src->device != dst->device) return bp__copy_across(dst, dst_offset, src, src_offset, size);
  return bp__call_mem_copy(dst->device, NULL, dst->ptr, dst->origin + dst_offset, src->ptr,
                           src->origin + src_offset, size);
}

/* Resolves the buffer of an async copy on s and checks the range. */
static bp_status_t check_async(bp__stream_t *s, const bp_buffer_t *bh, uint64_t offset,
                               const void *host, uint64_t size, const char *fn, bp__buffer_t **out) {
  bp_status_t st = bp__buffer_on(bh, s->device, fn, "buffer", out);
  return st == BP_OK ? check_host_copy(*out, offset, host, size, fn) : st;
}

bp_status_t bp_buffer_write_async(bp_stream_t *sh, bp_buffer_t *bh, uint64_t offset,
                                  const void *src, uint64_t size) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_buffer_write_async", "stream");
  bp__buffer_t *b;
  bp_status_t st = check_async(s, bh, offset, src, size, "bp_buffer_write_async", &b);
  if (st == BP_OK) st = bp__buffer_writable(b, "bp_buffer_write_async", "the destination");
  if (st != BP_OK || size == 0) return st;
  return bp__call_mem_write(b->device, s, b->ptr, b->origin + offset, src, size);
}

bp_status_t bp_buffer_read_async(bp_stream_t *sh, bp_buffer_t *bh, uint64_t offset,
                                 void *dst, uint64_t size) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_buffer_read_async", "stream");
  bp__buffer_t *b;
  bp_status_t st = check_async(s, bh, offset, dst, size, "bp_buffer_read_async", &b);
  if (st != BP_OK || size == 0) return st;
  return bp__call_mem_read(b->device, s, dst, b->ptr, b->origin + offset, size);
}
