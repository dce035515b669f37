/*
 * stream.c — streams (in-order work queues) and events, and releasing what a
 * device still owns when it closes.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

bp_status_t bp__stream_check(const bp_stream_t *s, const char *fn) {
  if (!bp__handle_live(s, BP__H_STREAM))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: stream is %s", fn,
                    s ? "not a live stream (destroyed or foreign)" : "NULL");
  return BP_OK;
}

bp_status_t bp_stream_create(bp_device_t *d, bp_stream_t **out_stream) {
  bp__clear_error();
  if (!out_stream) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_stream_create: out_stream is NULL");
  *out_stream = NULL;
  if (!bp__handle_live(d, BP__H_DEVICE))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_stream_create: device is %s",
                    d ? "not a live device" : "NULL");
  bp_stream_t *s = calloc(1, sizeof *s);
  if (!s) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_stream_create: out of memory");
  bp_status_t st = bp__call_stream_create(d, &s->handle);
  if (st != BP_OK) {
    free(s);
    return st;
  }
  s->device = d;
  pthread_mutex_init(&s->lock, NULL);
  pthread_mutex_lock(&d->lock);
  s->next = d->streams;
  if (d->streams) d->streams->prev = s;
  d->streams = s;
  pthread_mutex_unlock(&d->lock);
  bp__handle_add(s, BP__H_STREAM);
  *out_stream = s;
  return BP_OK;
}

static void stream_release(bp_stream_t *s) {
  bp_device_t *d = s->device;
  if (s->capture) bp__graph_free(s->capture); /* capture never ended */
  bp__call_stream_sync(d, s->handle);
  bp__call_stream_destroy(d, s->handle);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

void bp_stream_destroy(bp_stream_t *s) {
  if (!s || !bp__handle_live(s, BP__H_STREAM)) return;
  bp__handle_remove(s);
  bp_device_t *d = s->device;
  pthread_mutex_lock(&d->lock);
  if (s->prev) s->prev->next = s->next; else d->streams = s->next;
  if (s->next) s->next->prev = s->prev;
  pthread_mutex_unlock(&d->lock);
  pthread_mutex_lock(&s->lock); /* wait for a call in flight on it */
  pthread_mutex_unlock(&s->lock);
  stream_release(s);
}

bp_status_t bp_stream_synchronize(bp_stream_t *s) {
  bp__clear_error();
  bp_status_t st = bp__stream_check(s, "bp_stream_synchronize");
  return st == BP_OK ? bp__call_stream_sync(s->device, s->handle) : st;
}

/* ---- events ------------------------------------------------------------- */

static bp_status_t events_supported(const bp_device_t *d, const char *fn) {
  const bp_plugin_descriptor_t *x = d->desc;
  if (!x->event_create || !x->event_destroy || !x->event_record ||
      !x->stream_wait_event || !x->event_synchronize || !x->event_elapsed)
    return bp__fail(BP_ERR_UNSUPPORTED, "%s: plugin '%s' has no events", fn, d->entry.backend);
  return BP_OK;
}

static bp_status_t check_event(const bp_event_t *e, const char *fn) {
  if (!bp__handle_live(e, BP__H_EVENT))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: event is %s", fn,
                    e ? "not a live event" : "NULL");
  return BP_OK;
}

static bp_status_t plugin_status(bp_status_t st, const bp_device_t *d, const char *fn) {
  if (st == BP_OK) return st;
  return bp__fail(st, "%s: plugin '%s': %s", fn, d->entry.backend,
                  bp__plugin_error()[0] ? bp__plugin_error() : bp_status_string(st));
}

bp_status_t bp_event_create(bp_device_t *d, bp_event_t **out_event) {
  bp__clear_error();
  if (!out_event) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_event_create: out_event is NULL");
  *out_event = NULL;
  if (!bp__handle_live(d, BP__H_DEVICE))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_event_create: device is %s",
                    d ? "not a live device" : "NULL");
  bp_status_t st = events_supported(d, "bp_event_create");
  if (st != BP_OK) return st;
  bp_event_t *e = calloc(1, sizeof *e);
  if (!e) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_event_create: out of memory");
  st = plugin_status(d->desc->event_create(d->handle, &e->handle), d, "bp_event_create");
  if (st != BP_OK) {
    free(e);
    return st;
  }
  e->device = d;
  pthread_mutex_lock(&d->lock);
  e->next = d->events;
  if (d->events) d->events->prev = e;
  d->events = e;
  pthread_mutex_unlock(&d->lock);
  bp__handle_add(e, BP__H_EVENT);
  *out_event = e;
  return BP_OK;
}

void bp_event_destroy(bp_event_t *e) {
  if (!e || !bp__handle_live(e, BP__H_EVENT)) return;
  bp__handle_remove(e);
  bp_device_t *d = e->device;
  pthread_mutex_lock(&d->lock);
  if (e->prev) e->prev->next = e->next; else d->events = e->next;
  if (e->next) e->next->prev = e->prev;
  pthread_mutex_unlock(&d->lock);
  d->desc->event_destroy(d->handle, e->handle);
  free(e);
}

bp_status_t bp_event_record(bp_event_t *e, bp_stream_t *s) {
  bp__clear_error();
  bp_status_t st = check_event(e, "bp_event_record");
  if (st == BP_OK) st = bp__stream_check(s, "bp_event_record");
  if (st != BP_OK) return st;
  if (e->device != s->device)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_event_record: event and stream are on different devices");
  pthread_mutex_lock(&s->lock);
  bp__plugin_error_reset();
  st = e->device->desc->event_record(e->device->handle, e->handle, s->handle);
  pthread_mutex_unlock(&s->lock);
  if (st == BP_OK) e->recorded = true;
  return plugin_status(st, e->device, "bp_event_record");
}

bp_status_t bp_stream_wait_event(bp_stream_t *s, bp_event_t *e) {
  bp__clear_error();
  bp_status_t st = bp__stream_check(s, "bp_stream_wait_event");
  if (st == BP_OK) st = check_event(e, "bp_stream_wait_event");
  if (st != BP_OK) return st;
  if (e->device != s->device)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_stream_wait_event: event and stream are on different devices");
  if (!e->recorded) return BP_OK; /* as in CUDA: waiting on an unrecorded event is a no-op */
  pthread_mutex_lock(&s->lock);
  bp__plugin_error_reset();
  st = s->device->desc->stream_wait_event(s->device->handle, s->handle, e->handle);
  pthread_mutex_unlock(&s->lock);
  return plugin_status(st, s->device, "bp_stream_wait_event");
}

bp_status_t bp_event_synchronize(bp_event_t *e) {
  bp__clear_error();
  bp_status_t st = check_event(e, "bp_event_synchronize");
  if (st != BP_OK || !e->recorded) return st;
  bp__plugin_error_reset();
  return plugin_status(e->device->desc->event_synchronize(e->device->handle, e->handle),
                       e->device, "bp_event_synchronize");
}

bp_status_t bp_event_elapsed_ms(bp_event_t *start, bp_event_t *end, double *out_ms) {
  bp__clear_error();
  if (!out_ms) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_event_elapsed_ms: out_ms is NULL");
  *out_ms = 0;
  bp_status_t st = check_event(start, "bp_event_elapsed_ms");
  if (st == BP_OK) st = check_event(end, "bp_event_elapsed_ms");
  if (st != BP_OK) return st;
  if (start->device != end->device)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_event_elapsed_ms: events are on different devices");
  if (!start->recorded || !end->recorded)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_event_elapsed_ms: %s event was never recorded",
                    start->recorded ? "end" : "start");
  bp__plugin_error_reset();
  return plugin_status(start->device->desc->event_elapsed(start->device->handle, start->handle,
                                                          end->handle, out_ms),
                       start->device, "bp_event_elapsed_ms");
}

/* ---- children of a closing device ---------------------------------------- */

void bp__device_release_children(bp_device_t *d) {
  while (d->streams) {
    bp_stream_t *s = d->streams;
    d->streams = s->next;
    bp__log(BP_LOG_DEBUG, BP__LOG_API, "bp_device_close: destroying a stream left open");
    bp__handle_remove(s);
    stream_release(s);
  }
  while (d->events) {
    bp_event_t *e = d->events;
    d->events = e->next;
    bp__handle_remove(e);
    d->desc->event_destroy(d->handle, e->handle);
    free(e);
  }
  while (d->buffers) {
    bp_buffer_t *b = d->buffers;
    d->buffers = b->next;
    bp__log(BP_LOG_DEBUG, BP__LOG_API, "bp_device_close: freeing a buffer of %llu bytes left allocated",
            (unsigned long long)b->size);
    bp__handle_remove(b);
    bp__buffer_release_memory(d, b);
    free(b);
  }
}
