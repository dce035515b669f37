/*
 * xcopy_order.c — work ordered across devices: bp_buffer_copy_async between
 * any two buffers, and a stream waiting for another device's event
 * (docs/runtime.md, "Ordering across devices").
 *
 * Two backends share no queue and no event the other can wait on (the ABI
 * has no way to hand one plugin's event to another), so the core orders work
 * across devices on the host: it waits for what must come first, then does
 * or queues what must come after. Those calls return once the cross-device
 * part is done; work on one device stays asynchronous as before.
 */
#include "internal.h"
#include "xcopy.h"

/* offset + size must fit in the buffer, without overflow. */
static bp_status_t check_range(const bp__buffer_t *b, uint64_t offset, uint64_t size,
                               const char *what) {
  if (offset > b->size || size > b->size - offset)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_buffer_copy_async: %s range [%llu, +%llu) is outside its %llu bytes", what,
                    (unsigned long long)offset, (unsigned long long)size,
                    (unsigned long long)b->size);
  return BP_OK;
}

/* Takes s's lock, refusing a stream that is capturing (the capture state is
 * read under that lock); fn and what name the call in the message. */
static bp_status_t lock_uncaptured(bp__stream_t *s, const char *fn, const char *what) {
  bp__stream_lock(s); /* after the collectives queued on it */
  if (!s->capture) return BP_OK;
  pthread_mutex_unlock(&s->lock);
  return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s cannot be captured into a graph", fn, what);
}

/* A copy between two devices, ordered on s (a stream of one of them): it
 * starts after the work queued so far on both devices, s included, and is
 * complete on return, so whatever is queued on s later comes after it. s's
 * lock is held throughout so no other thread's work on s slips in between. */
static bp_status_t copy_across_on(bp__stream_t *s, bp__buffer_t *dst, uint64_t doff,
                                  bp__buffer_t *src, uint64_t soff, uint64_t size) {
  bp_status_t st = lock_uncaptured(s, "bp_buffer_copy_async", "copies");
  if (st != BP_OK) return st;
  st = bp__copy_across(dst, doff, src, soff, size);
  pthread_mutex_unlock(&s->lock);
  return st;
}

bp_status_t bp_buffer_copy_async(bp_stream_t *sh, bp_buffer_t *dsth, uint64_t dst_offset,
                                 bp_buffer_t *srch, uint64_t src_offset, uint64_t size) {
  bp__clear_error();
  const char *fn = "bp_buffer_copy_async";
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, fn, "stream");
  BP__ENTER(bp__buffer_t, dst, dsth, BP__H_BUFFER, fn, "dst");
  BP__ENTER(bp__buffer_t, src, srch, BP__H_BUFFER, fn, "src");
  if (s->device != dst->device && s->device != src->device)
    return bp__fail(
        BP_ERR_INVALID_ARGUMENT,
        "%s: the stream is on device '%s', which holds neither dst (on '%s') nor src (on '%s'); "
        "use a stream of one of the two",
        fn, s->device->entry.info.name, dst->device->entry.info.name, src->device->entry.info.name);
  bp_status_t st = bp__buffer_writable(dst, fn, "dst");
  if (st == BP_OK) st = check_range(dst, dst_offset, size, "dst");
  if (st == BP_OK) st = check_range(src, src_offset, size, "src");
  if (st != BP_OK) return st;
  if (dst == src && dst_offset < src_offset + size && src_offset < dst_offset + size)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: source and destination ranges overlap", fn);
  if (size == 0) return BP_OK;
  if (src->device != dst->device) return copy_across_on(s, dst, dst_offset, src, src_offset, size);
  return bp__call_mem_copy(s->device, s, dst->ptr, dst->origin + dst_offset, src->ptr,
                           src->origin + src_offset, size);
}

bp_status_t bp__stream_wait_across(bp__stream_t *s, const bp_event_t *eh) {
  BP__ENTER(bp__event_t, e, eh, BP__H_EVENT, "bp_stream_wait_event", "event");
  if (!e->recorded) return BP_OK; /* as on one device: an unrecorded event is no wait */
  /* Under s's lock: no capture can begin, and no other thread's work on s
   * can be queued, until the event has completed. */
  bp_status_t st = lock_uncaptured(s, "bp_stream_wait_event", "a wait for another device's event");
  if (st != BP_OK) return st;
  st = bp__call_event_synchronize(e->device, e->handle);
  pthread_mutex_unlock(&s->lock);
  return st;
}
