/*
 * stream.c — streams and events: each maps directly onto a hipStream_t or a
 * hipEvent_t of the device.
 */
#include <stdlib.h>

#include "plugins/rocm/rocm_plugin.h"

/* ---- streams ------------------------------------------------------------ */

bp_status_t rocm_stream_create(bp_plugin_device_t *device,
                               bp_plugin_stream_t **out_stream) {
  *out_stream = NULL;
  rocm_stream_t *s = calloc(1, sizeof *s);
  if (!s) {
    rocm_host->set_error("rocm: no host memory for a stream");
    return BP_ERR_OUT_OF_MEMORY;
  }
  /* Blocking streams (hipStreamCreate, not ...WithFlags(NonBlocking)): the
   * synchronous copies on the null stream then order after every stream's
   * queued work, which is what "synchronous with respect to the device"
   * means in the ABI. */
  bp_status_t st = rocm_enter(rocm_dev(device));
  if (st == BP_OK)
    st = rocm_check(rocm_rt.hipStreamCreate(&s->s), "hipStreamCreate");
  if (st != BP_OK) {
    free(s);
    return st;
  }
  *out_stream = (bp_plugin_stream_t *)(void *)s;
  return BP_OK;
}

void rocm_stream_destroy(bp_plugin_device_t *device,
                         bp_plugin_stream_t *stream) {
  rocm_stream_t *s = (rocm_stream_t *)(void *)stream;
  if (!s)
    return;
  if (rocm_enter(rocm_dev(device)) == BP_OK) {
    /* Waiting first gives the ABI's "destroy after the work" whatever the
     * runtime does with queued work of a destroyed stream. */
    rocm_rt.hipStreamSynchronize(s->s);
    rocm_rt.hipStreamDestroy(s->s);
  }
  free(s);
}

bp_status_t rocm_stream_synchronize(bp_plugin_device_t *device,
                                    bp_plugin_stream_t *stream) {
  bp_status_t st = rocm_enter(rocm_dev(device));
  if (st != BP_OK)
    return st;
  return rocm_check(rocm_rt.hipStreamSynchronize(rocm_stream_of(stream)),
                    "hipStreamSynchronize");
}

/* ---- events ------------------------------------------------------------- */

bp_status_t rocm_event_create(bp_plugin_device_t *device,
                              bp_plugin_event_t **out_event) {
  *out_event = NULL;
  rocm_event_t *e = calloc(1, sizeof *e);
  if (!e) {
    rocm_host->set_error("rocm: no host memory for an event");
    return BP_ERR_OUT_OF_MEMORY;
  }
  bp_status_t st = rocm_enter(rocm_dev(device));
  if (st == BP_OK)
    st = rocm_check(rocm_rt.hipEventCreate(&e->e), "hipEventCreate");
  if (st != BP_OK) {
    free(e);
    return st;
  }
  *out_event = (bp_plugin_event_t *)(void *)e;
  return BP_OK;
}

void rocm_event_destroy(bp_plugin_device_t *device, bp_plugin_event_t *event) {
  rocm_event_t *e = (rocm_event_t *)(void *)event;
  if (!e)
    return;
  if (rocm_enter(rocm_dev(device)) == BP_OK)
    rocm_rt.hipEventDestroy(e->e);
  free(e);
}

static hipEvent_t ev(bp_plugin_event_t *e) {
  return ((rocm_event_t *)(void *)e)->e;
}

bp_status_t rocm_event_record(bp_plugin_device_t *device,
                              bp_plugin_event_t *event,
                              bp_plugin_stream_t *stream) {
  bp_status_t st = rocm_enter(rocm_dev(device));
  if (st != BP_OK)
    return st;
  return rocm_check(rocm_rt.hipEventRecord(ev(event), rocm_stream_of(stream)),
                    "hipEventRecord");
}

bp_status_t rocm_stream_wait_event(bp_plugin_device_t *device,
                                   bp_plugin_stream_t *stream,
                                   bp_plugin_event_t *event) {
  bp_status_t st = rocm_enter(rocm_dev(device));
  if (st != BP_OK)
    return st;
  return rocm_check(
      rocm_rt.hipStreamWaitEvent(rocm_stream_of(stream), ev(event), 0),
      "hipStreamWaitEvent");
}

bp_status_t rocm_event_synchronize(bp_plugin_device_t *device,
                                   bp_plugin_event_t *event) {
  bp_status_t st = rocm_enter(rocm_dev(device));
  if (st != BP_OK)
    return st;
  return rocm_check(rocm_rt.hipEventSynchronize(ev(event)),
                    "hipEventSynchronize");
}

bp_status_t rocm_event_elapsed(bp_plugin_device_t *device,
                               bp_plugin_event_t *start,
                               bp_plugin_event_t *end, double *out_ms) {
  *out_ms = 0;
  bp_status_t st = rocm_enter(rocm_dev(device));
  if (st != BP_OK)
    return st;
  float ms = 0;
  st = rocm_check(rocm_rt.hipEventElapsedTime(&ms, ev(start), ev(end)),
                  "hipEventElapsedTime");
  if (st == BP_OK)
    *out_ms = ms;
  return st;
}
