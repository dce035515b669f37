/*
 * streams.c — see streams.h.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test/shims/common/heap.h"
#include "test/shims/common/streams.h"

#define STREAM_MAGIC 0x5354524du
#define EVENT_MAGIC 0x4556544eu
#define ERR_OUT_OF_MEMORY 2
#define ERR_ILLEGAL_ADDRESS 700 /* CUDA_ERROR_ILLEGAL_ADDRESS, hipErrorIllegalAddress */

typedef struct shim_event {
  uint32_t magic;
  bool recorded;
  double ms; /* CLOCK_MONOTONIC at record */
} shim_event_t;

static int64_t streams_live, events_live;

void shim_streams_live(int64_t *out_streams, int64_t *out_events) {
  *out_streams = __atomic_load_n(&streams_live, __ATOMIC_RELAXED);
  *out_events = __atomic_load_n(&events_live, __ATOMIC_RELAXED);
}

bool shim_stream_ok(const void *s, const char *fn) {
  if (!s || ((const shim_stream_t *)s)->magic == STREAM_MAGIC)
    return true;
  shim_report("%s: stream %p is not a live stream", fn, s);
  return false;
}

int shim_stream_use(const void *s, const char *fn) {
  if (!shim_stream_ok(s, fn))
    return SHIM_ERR_INVALID_HANDLE;
  return s ? 0 : shim_capture_legacy(fn);
}

shim_stream_capture_t *shim_stream_state(const void *s) {
  return &((shim_stream_t *)(uintptr_t)s)->cap;
}

shim_stream_capture_t *shim_stream_capture(const void *s) {
  return s && shim_stream_state(s)->graph ? shim_stream_state(s) : NULL;
}

int shim_stream_create(void **out) {
  shim_stream_t *s = calloc(1, sizeof *s);
  *out = s;
  if (!s)
    return ERR_OUT_OF_MEMORY;
  s->magic = STREAM_MAGIC;
  __atomic_add_fetch(&streams_live, 1, __ATOMIC_RELAXED);
  return 0;
}

int shim_stream_destroy(void *stream, const char *fn) {
  shim_stream_t *s = stream;
  if (!s || !shim_stream_ok(s, fn))
    return SHIM_ERR_INVALID_HANDLE;
  shim_capture_drop(&s->cap);
  s->magic = 0;
  free(s);
  __atomic_sub_fetch(&streams_live, 1, __ATOMIC_RELAXED);
  return 0;
}

int shim_stream_sync(void *s, const char *fn) {
  int r = shim_stream_use(s, fn);
  return r ? r : shim_capture_sync(shim_stream_capture(s), fn);
}

int shim_stream_copy(uint64_t dst, bool dst_dev, uint64_t src, bool src_dev,
                     uint64_t n, void *s, bool sync, bool fail,
                     const char *fn) {
  int r = sync ? shim_capture_unsafe(fn) : 0;
  if (r == 0)
    r = shim_stream_use(s, fn);
  if (r != 0)
    return r;
  if ((dst_dev && !shim_mem_valid(dst, n, fn)) ||
      (src_dev && !shim_mem_valid(src, n, fn)))
    return SHIM_ERR_INVALID_VALUE;
  if (shim_capture_copy(shim_stream_capture(s), dst, dst_dev, src, src_dev,
                        (size_t)n))
    return 0;
  if (fail)
    return ERR_ILLEGAL_ADDRESS;
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, (size_t)n);
  return 0;
}

static bool event_ok(const void *e, const char *fn) {
  if (e && ((const shim_event_t *)e)->magic == EVENT_MAGIC)
    return true;
  shim_report("%s: event %p is not a live event", fn, e);
  return false;
}

int shim_event_create(void **out, bool fail) {
  *out = NULL;
  if (fail)
    return ERR_OUT_OF_MEMORY;
  shim_event_t *e = calloc(1, sizeof *e);
  if (!e)
    return ERR_OUT_OF_MEMORY;
  e->magic = EVENT_MAGIC;
  __atomic_add_fetch(&events_live, 1, __ATOMIC_RELAXED);
  *out = e;
  return 0;
}

int shim_event_destroy(void *event, const char *fn) {
  shim_event_t *e = event;
  if (!event_ok(e, fn))
    return SHIM_ERR_INVALID_HANDLE;
  e->magic = 0;
  free(e);
  __atomic_sub_fetch(&events_live, 1, __ATOMIC_RELAXED);
  return 0;
}

/* Event nodes in a capture are not modelled: recording into a capturing
 * stream is refused (and invalidates the capture). */
int shim_event_record(void *event, void *s, const char *fn) {
  shim_event_t *e = event;
  if (!event_ok(e, fn) || !shim_stream_ok(s, fn))
    return SHIM_ERR_INVALID_HANDLE;
  int r = shim_stream_use(s, fn);
  if (r == 0)
    r = shim_capture_sync(shim_stream_capture(s), fn);
  if (r)
    return r;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  e->ms = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  e->recorded = true;
  return 0;
}

/* Cross-stream dependencies inside a capture are not modelled either. */
int shim_event_wait(void *s, void *e, const char *fn) {
  if (!shim_stream_ok(s, fn) || !event_ok(e, fn))
    return SHIM_ERR_INVALID_HANDLE;
  int r = shim_stream_use(s, fn);
  return r ? r : shim_capture_sync(shim_stream_capture(s), fn);
}

int shim_event_sync(void *e, const char *fn) {
  return event_ok(e, fn) ? 0 : SHIM_ERR_INVALID_HANDLE;
}

int shim_event_elapsed(float *ms, void *a, void *b, const char *fn) {
  if (!event_ok(a, fn) || !event_ok(b, fn))
    return SHIM_ERR_INVALID_HANDLE;
  const shim_event_t *x = a, *y = b;
  if (!x->recorded || !y->recorded)
    return SHIM_ERR_INVALID_HANDLE; /* the drivers' answer, too */
  *ms = (float)(y->ms - x->ms);
  return 0;
}
