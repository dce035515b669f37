/*
 * streams.h — streams and events of the CPU shims, written once for the
 * CUDA driver shim and the HIP runtime shim, which wrap them under their
 * API names (CUstream / hipStream_t and CUevent / hipEvent_t are opaque
 * pointers to the structs here; 0 is the legacy / null stream). Both APIs
 * share the error numbers returned (capture.h). Streams are synchronous:
 * work runs when it is issued, unless the stream is capturing
 * (capture.h); events record the monotonic clock.
 */
#ifndef BP_SHIM_STREAMS_H
#define BP_SHIM_STREAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "test/shims/common/capture.h"

typedef struct shim_stream {
  uint32_t magic;
  shim_stream_capture_t cap;
} shim_stream_t;

/* True when s is 0 or a live stream; reports (naming fn) otherwise. */
bool shim_stream_ok(const void *s, const char *fn);
/* 0, or the error stream-ordered work on s gets: an invalid handle, or the
 * legacy stream while a stream captures (capture.h). */
int shim_stream_use(const void *s, const char *fn);
/* s's capture state when it is capturing, else NULL. */
shim_stream_capture_t *shim_stream_capture(const void *s);
/* s's capture state, capturing or not (s a live, non-null stream). */
shim_stream_capture_t *shim_stream_state(const void *s);

int shim_stream_create(void **out);
int shim_stream_destroy(void *s, const char *fn);
int shim_stream_sync(void *s, const char *fn);

/* A copy of n bytes on stream s (sync: a synchronous copy, which is a
 * potentially unsafe call during a capture); the device sides are checked
 * against the live allocations. Recorded when s captures, else done now.
 * fail: an injected failure (illegal address). */
int shim_stream_copy(uint64_t dst, bool dst_dev, uint64_t src, bool src_dev,
                     uint64_t n, void *s, bool sync, bool fail,
                     const char *fn);

int shim_event_create(void **out, bool fail);
int shim_event_destroy(void *e, const char *fn);
int shim_event_record(void *e, void *s, const char *fn);
int shim_event_wait(void *s, void *e, const char *fn);
int shim_event_sync(void *e, const char *fn);
int shim_event_elapsed(float *ms, void *a, void *b, const char *fn);

/* Live streams and events, for the shims' leak counters. */
void shim_streams_live(int64_t *out_streams, int64_t *out_events);

#endif /* BP_SHIM_STREAMS_H */
