/*
 * stream.c — streams and events of the CPU devices.
 *
 * Ops and copies execute synchronously inside the call that enqueues them,
 * so a stream is in order trivially and is always idle when a call returns:
 * synchronize and wait_event have nothing to wait for. An event records the
 * CLOCK_MONOTONIC time at which everything before it on its stream had
 * finished, which is the time of the record call.
 */
#include <stdlib.h>
#include <time.h>

#include "plugin.h"

struct bp_plugin_stream {
  cpu_device_t *device; /* owner, for sanity checks by a debugger */
};

struct bp_plugin_event {
  bool recorded;
  struct timespec when;
};

bp_status_t cpu_stream_create(bp_plugin_device_t *device,
                              bp_plugin_stream_t **out_stream) {
  if (!out_stream)
    return BP_ERR_INVALID_ARGUMENT;
  *out_stream = NULL;
  bp_plugin_stream_t *s = calloc(1, sizeof *s);
  if (!s)
    return BP_ERR_OUT_OF_MEMORY;
  s->device = cpu_device(device);
  *out_stream = s;
  return BP_OK;
}

void cpu_stream_destroy(bp_plugin_device_t *device,
                        bp_plugin_stream_t *stream) {
  (void)device;
  free(stream);
}

bp_status_t cpu_stream_synchronize(bp_plugin_device_t *device,
                                   bp_plugin_stream_t *stream) {
  (void)device;
  (void)stream;
  return BP_OK;
}

bp_status_t cpu_event_create(bp_plugin_device_t *device,
                             bp_plugin_event_t **out_event) {
  (void)device;
  if (!out_event)
    return BP_ERR_INVALID_ARGUMENT;
  *out_event = calloc(1, sizeof **out_event);
  return *out_event ? BP_OK : BP_ERR_OUT_OF_MEMORY;
}

void cpu_event_destroy(bp_plugin_device_t *device, bp_plugin_event_t *event) {
  (void)device;
  free(event);
}

bp_status_t cpu_event_record(bp_plugin_device_t *device,
                             bp_plugin_event_t *event,
                             bp_plugin_stream_t *stream) {
  (void)device;
  (void)stream;
  if (!event)
    return BP_ERR_INVALID_ARGUMENT;
  clock_gettime(CLOCK_MONOTONIC, &event->when);
  event->recorded = true;
  return BP_OK;
}

bp_status_t cpu_stream_wait_event(bp_plugin_device_t *device,
                                  bp_plugin_stream_t *stream,
                                  bp_plugin_event_t *event) {
  (void)device;
  (void)stream;
  (void)event; /* the event's work is already done */
  return BP_OK;
}

bp_status_t cpu_event_synchronize(bp_plugin_device_t *device,
                                  bp_plugin_event_t *event) {
  (void)device;
  (void)event;
  return BP_OK;
}

bp_status_t cpu_event_elapsed(bp_plugin_device_t *device,
                              bp_plugin_event_t *start, bp_plugin_event_t *end,
                              double *out_ms) {
  (void)device;
  if (!out_ms)
    return BP_ERR_INVALID_ARGUMENT;
  *out_ms = 0.0;
  if (!start || !end || !start->recorded || !end->recorded) {
    cpu_set_error("cpu: event_elapsed needs two recorded events");
    return BP_ERR_INVALID_ARGUMENT;
  }
  *out_ms = (double)(end->when.tv_sec - start->when.tv_sec) * 1e3 +
            (double)(end->when.tv_nsec - start->when.tv_nsec) * 1e-6;
  return BP_OK;
}
