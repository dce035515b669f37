/*
 * stream.c — streams (in-order work queues) and events, and releasing what a
 * device still owns when it closes.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xcopy.h"

static void stream_release(bp__stream_t *s);

bp_status_t bp_stream_create(bp_device_t *dh, bp_stream_t **out_stream) {
  bp__clear_error();
  if (!out_stream) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_stream_create: out_stream is NULL");
  *out_stream = NULL;
  BP__ENTER(bp__device_t, d, dh, BP__H_DEVICE, "bp_stream_create", "device");
  bp__stream_t *s = calloc(1, sizeof *s);
  if (!s) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_stream_create: out of memory");
  bp_status_t st = bp__call_stream_create(d, &s->handle);
  if (st != BP_OK) {
    free(s);
    return st;
  }
  s->device = d;
  pthread_mutex_init(&s->lock, NULL);
  s->h = bp__handle_add(s, BP__H_STREAM, d->gate);
  if (!s->h) {
    stream_release(s);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_stream_create: no room for another handle");
  }
  pthread_mutex_lock(&d->lock);
  s->next = d->streams;
  if (d->streams) d->streams->prev = s;
  d->streams = s;
  pthread_mutex_unlock(&d->lock);
  *out_stream = s->h;
  return BP_OK;
}

static void stream_release(bp__stream_t *s) {
  bp__device_t *d = s->device;
  bp__stream_wait_host_done(s); /* the collectives still queued on it finish first */
  bp__stream_lock(s);
  pthread_mutex_unlock(&s->lock);
  if (s->capture) bp__graph_free(s->capture); /* capture never ended */
  bp__call_stream_sync(d, s->handle);
  bp__call_stream_destroy(d, s->handle);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

void bp_stream_destroy(bp_stream_t *sh) {
  BP__ENTER_VOID(bp__stream_t, s, sh, BP__H_STREAM, "bp_stream_destroy");
  if (!bp__handle_remove(sh)) return;
  bp__device_t *d = s->device;
  pthread_mutex_lock(&d->lock);
  if (s->prev) s->prev->next = s->next; else d->streams = s->next;
  if (s->next) s->next->prev = s->prev;
  pthread_mutex_unlock(&d->lock);
  pthread_mutex_lock(&s->lock); /* wait for a call in flight on it */
  pthread_mutex_unlock(&s->lock);
  stream_release(s);
}

bp_status_t bp_stream_synchronize(bp_stream_t *sh) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_stream_synchronize", "stream");
  /* Under the stream's lock: the plugin never sees a synchronize racing an
   * op on the same stream. */
  bp__stream_lock(s); /* collectives queued on it (comm_queue.c) first */
  bp_status_t st = bp__call_stream_sync(s->device, s->handle);
  pthread_mutex_unlock(&s->lock);
  bp_status_t queued = bp__stream_take_host_error(s);
  return st != BP_OK ? st : queued;
}

/* ---- events ------------------------------------------------------------- */

static bp_status_t events_supported(const bp__device_t *d, const char *fn) {
  if (!bp__plugin_has_events(d))
    return bp__fail(BP_ERR_UNSUPPORTED, "%s: plugin '%s' has no events", fn, d->entry.backend);
  return BP_OK;
}

/* Resolves an event token that must belong to d (whose gate is entered). */
static bp_status_t event_on(const bp_event_t *eh, const bp__device_t *d, const char *fn, const char *what,
                            bp__event_t **out) {
  *out = bp__handle_get_on(eh, BP__H_EVENT, d->gate);
  if (*out) return BP_OK;
  if (bp__handle_get(eh, BP__H_EVENT))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s and the %s are on different devices", fn, what,
                    strcmp(what, "event") ? "start event" : "stream");
  return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s is %s", fn, what, eh ? "not a live event" : "NULL");
}

bp_status_t bp_event_create(bp_device_t *dh, bp_event_t **out_event) {
  bp__clear_error();
  if (!out_event) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_event_create: out_event is NULL");
  *out_event = NULL;
  BP__ENTER(bp__device_t, d, dh, BP__H_DEVICE, "bp_event_create", "device");
  bp_status_t st = events_supported(d, "bp_event_create");
  if (st != BP_OK) return st;
  bp__event_t *e = calloc(1, sizeof *e);
  if (!e) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_event_create: out of memory");
  st = bp__call_event_create(d, &e->handle);
  if (st != BP_OK) {
    free(e);
    return st;
  }
  e->device = d;
  e->h = bp__handle_add(e, BP__H_EVENT, d->gate);
  if (!e->h) {
    bp__call_event_destroy(d, e->handle);
    free(e);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_event_create: no room for another handle");
  }
  pthread_mutex_lock(&d->lock);
  e->next = d->events;
  if (d->events) d->events->prev = e;
  d->events = e;
  pthread_mutex_unlock(&d->lock);
  *out_event = e->h;
  return BP_OK;
}

void bp_event_destroy(bp_event_t *eh) {
  BP__ENTER_VOID(bp__event_t, e, eh, BP__H_EVENT, "bp_event_destroy");
  if (!bp__handle_remove(eh)) return;
  bp__device_t *d = e->device;
  pthread_mutex_lock(&d->lock);
  if (e->prev) e->prev->next = e->next; else d->events = e->next;
  if (e->next) e->next->prev = e->prev;
  pthread_mutex_unlock(&d->lock);
  bp__call_event_destroy(d, e->handle);
  free(e);
}

bp_status_t bp_event_record(bp_event_t *eh, bp_stream_t *sh) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_event_record", "stream");
  bp__event_t *e;
  bp_status_t st = event_on(eh, s->device, "bp_event_record", "event", &e);
  if (st != BP_OK) return st;
  st = bp__call_event_record(s, e->handle);
  if (st == BP_OK) e->recorded = true;
  if (st == BP_OK) bp__event_note_host_error(e, s); /* a collective before it failed */
  return st;
}

bp_status_t bp_stream_wait_event(bp_stream_t *sh, bp_event_t *eh) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_stream_wait_event", "stream");
  /* An event of another device: the core orders the two (xcopy_order.c). */
  if (bp__handle_get(eh, BP__H_EVENT) && !bp__handle_get_on(eh, BP__H_EVENT, s->device->gate))
    return bp__stream_wait_across(s, eh);
  bp__event_t *e;
  bp_status_t st = event_on(eh, s->device, "bp_stream_wait_event", "event", &e);
  if (st != BP_OK) return st;
  if (!e->recorded) return BP_OK; /* as in CUDA: waiting on an unrecorded event is a no-op */
  return bp__call_stream_wait_event(s, e->handle);
}

bp_status_t bp_event_synchronize(bp_event_t *eh) {
  bp__clear_error();
  BP__ENTER(bp__event_t, e, eh, BP__H_EVENT, "bp_event_synchronize", "event");
  if (!e->recorded) return BP_OK;
  bp_status_t st = bp__call_event_synchronize(e->device, e->handle);
  if (st == BP_OK && e->host_status != BP_OK) st = bp__fail(e->host_status, "%s", e->host_why);
  return st;
}

bp_status_t bp_event_elapsed_ms(bp_event_t *starth, bp_event_t *endh, double *out_ms) {
  bp__clear_error();
  if (!out_ms) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_event_elapsed_ms: out_ms is NULL");
  *out_ms = 0;
  BP__ENTER(bp__event_t, start, starth, BP__H_EVENT, "bp_event_elapsed_ms", "start");
  if (bp__handle_get(endh, BP__H_EVENT) && !bp__handle_get_on(endh, BP__H_EVENT, start->device->gate))
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_event_elapsed_ms: start and end are on different devices, whose clocks cannot be "
                    "compared; time with two events of one device");
  bp__event_t *end;
  bp_status_t st = event_on(endh, start->device, "bp_event_elapsed_ms", "end", &end);
  if (st != BP_OK) return st;
  if (!start->recorded || !end->recorded)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_event_elapsed_ms: %s event was never recorded",
                    start->recorded ? "end" : "start");
  return bp__call_event_elapsed(start->device, start->handle, end->handle, out_ms);
}

/* ---- children of a closing device ---------------------------------------- */

void bp__device_release_children(bp__device_t *d) {
  bp__device_wait_host_work(d); /* collectives queued on its streams */
  while (d->streams) {
    bp__stream_t *s = d->streams;
    d->streams = s->next;
    bp__log(BP_LOG_DEBUG, BP__LOG_API, "bp_device_close: destroying a stream left open");
    bp__handle_remove(s->h);
    stream_release(s);
  }
  while (d->events) {
    bp__event_t *e = d->events;
    d->events = e->next;
    bp__handle_remove(e->h);
    bp__call_event_destroy(d, e->handle);
    free(e);
  }
  while (d->buffers) {
    bp__buffer_t *b = d->buffers;
    d->buffers = b->next;
    bp__log(BP_LOG_DEBUG, BP__LOG_API, "bp_device_close: freeing a buffer of %llu bytes left allocated",
            (unsigned long long)b->size);
    bp__handle_remove(b->h);
    bp__buffer_release_memory(d, b);
    free(b);
  }
  bp__device_release_kernels(d);
  bp__xcopy_release(d);
}
