/*
 * stream.c — streams and events: each maps directly onto a CUstream or a
 * CUevent of the device's primary context.
 */
#include <stdlib.h>

#include "plugins/cuda/cuda_plugin.h"

/* ---- streams ------------------------------------------------------------ */

bp_status_t cuda_stream_create(bp_plugin_device_t *device,
                               bp_plugin_stream_t **out_stream) {
  *out_stream = NULL;
  cuda_device_t *d = cuda_dev(device);
  cuda_stream_t *s = calloc(1, sizeof *s);
  if (!s) {
    cuda_host->set_error("cuda: no host memory for a stream");
    return BP_ERR_OUT_OF_MEMORY;
  }
  bp_status_t st = cuda_ctx_enter(d);
  if (st == BP_OK) {
    /* Blocking streams (not CU_STREAM_NON_BLOCKING): the synchronous copies
     * and frees on the legacy default stream then order after every stream's
     * queued work, which is what "synchronous with respect to the device"
     * means in the ABI. */
    st = cuda_check(cuda_drv.cuStreamCreate(&s->s, CU_STREAM_DEFAULT),
                    "cuStreamCreate");
    cuda_ctx_leave();
  }
  if (st != BP_OK) {
    free(s);
    return st;
  }
  *out_stream = (bp_plugin_stream_t *)(void *)s;
  return BP_OK;
}

void cuda_stream_destroy(bp_plugin_device_t *device,
                         bp_plugin_stream_t *stream) {
  cuda_stream_t *s = (cuda_stream_t *)(void *)stream;
  if (!s)
    return;
  if (cuda_ctx_enter(cuda_dev(device)) == BP_OK) {
    /* cuStreamDestroy returns at once and lets queued work finish; waiting
     * first gives the ABI's "destroy after the work" without surprises. */
    cuda_drv.cuStreamSynchronize(s->s);
    cuda_drv.cuStreamDestroy(s->s);
    cuda_ctx_leave();
  }
  free(s);
}

bp_status_t cuda_stream_synchronize(bp_plugin_device_t *device,
                                    bp_plugin_stream_t *stream) {
  bp_status_t st = cuda_ctx_enter(cuda_dev(device));
  if (st != BP_OK)
    return st;
  st = cuda_check(cuda_drv.cuStreamSynchronize(cuda_stream_of(stream)),
                  "cuStreamSynchronize");
  cuda_ctx_leave();
  return st;
}

/* ---- events ------------------------------------------------------------- */

bp_status_t cuda_event_create(bp_plugin_device_t *device,
                              bp_plugin_event_t **out_event) {
  *out_event = NULL;
  cuda_event_t *e = calloc(1, sizeof *e);
  if (!e) {
    cuda_host->set_error("cuda: no host memory for an event");
    return BP_ERR_OUT_OF_MEMORY;
  }
  bp_status_t st = cuda_ctx_enter(cuda_dev(device));
  if (st == BP_OK) {
    st = cuda_check(cuda_drv.cuEventCreate(&e->e, CU_EVENT_DEFAULT),
                    "cuEventCreate");
    cuda_ctx_leave();
  }
  if (st != BP_OK) {
    free(e);
    return st;
  }
  *out_event = (bp_plugin_event_t *)(void *)e;
  return BP_OK;
}

void cuda_event_destroy(bp_plugin_device_t *device, bp_plugin_event_t *event) {
  cuda_event_t *e = (cuda_event_t *)(void *)event;
  if (!e)
    return;
  if (cuda_ctx_enter(cuda_dev(device)) == BP_OK) {
    cuda_drv.cuEventDestroy(e->e);
    cuda_ctx_leave();
  }
  free(e);
}

static CUevent ev(bp_plugin_event_t *e) {
  return ((cuda_event_t *)(void *)e)->e;
}

bp_status_t cuda_event_record(bp_plugin_device_t *device,
                              bp_plugin_event_t *event,
                              bp_plugin_stream_t *stream) {
  bp_status_t st = cuda_ctx_enter(cuda_dev(device));
  if (st != BP_OK)
    return st;
  st = cuda_check(cuda_drv.cuEventRecord(ev(event), cuda_stream_of(stream)),
                  "cuEventRecord");
  cuda_ctx_leave();
  return st;
}

bp_status_t cuda_stream_wait_event(bp_plugin_device_t *device,
                                   bp_plugin_stream_t *stream,
                                   bp_plugin_event_t *event) {
  bp_status_t st = cuda_ctx_enter(cuda_dev(device));
  if (st != BP_OK)
    return st;
  st = cuda_check(
      cuda_drv.cuStreamWaitEvent(cuda_stream_of(stream), ev(event), 0),
      "cuStreamWaitEvent");
  cuda_ctx_leave();
  return st;
}

bp_status_t cuda_event_synchronize(bp_plugin_device_t *device,
                                   bp_plugin_event_t *event) {
  bp_status_t st = cuda_ctx_enter(cuda_dev(device));
  if (st != BP_OK)
    return st;
  st = cuda_check(cuda_drv.cuEventSynchronize(ev(event)),
                  "cuEventSynchronize");
  cuda_ctx_leave();
  return st;
}

bp_status_t cuda_event_elapsed(bp_plugin_device_t *device,
                               bp_plugin_event_t *start,
                               bp_plugin_event_t *end, double *out_ms) {
  *out_ms = 0;
  bp_status_t st = cuda_ctx_enter(cuda_dev(device));
  if (st != BP_OK)
    return st;
  float ms = 0;
  st = cuda_check(cuda_drv.cuEventElapsedTime(&ms, ev(start), ev(end)),
                  "cuEventElapsedTime");
  cuda_ctx_leave();
  if (st == BP_OK)
    *out_ms = ms;
  return st;
}
