/*
 * plugins/gpu/stream.c — streams and events of the CUDA and ROCm backends:
 * each maps directly onto one driver stream or event. Streams are blocking
 * (not NON_BLOCKING): the synchronous copies and frees on the legacy /
 * null stream then order after every stream's queued work, which is what
 * "synchronous with respect to the device" means in the ABI. Work given
 * the NULL stream is legacy-stream work and waits for graph captures like
 * the synchronous copies (graph.c).
 */
#include <stdlib.h>

#include "plugins/gpu/gpu.h"

/* ---- streams ------------------------------------------------------------ */

bp_status_t gpu_stream_create(bp_plugin_device_t *device, bp_plugin_stream_t **out_stream) {
  *out_stream = NULL;
  gpu_device_t *d = gpu_dev(device);
  gpu_stream_t *s = calloc(1, sizeof *s);
  if (!s) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": no host memory for a stream");
    return BP_ERR_OUT_OF_MEMORY;
  }
  bp_status_t st = gpu_device_enter(d);
  if (st == BP_OK) {
    st = gpu_check(gpuStreamCreate(&s->s), GPU_API "StreamCreate");
    gpu_device_leave();
  }
  if (st != BP_OK) {
    free(s);
    return st;
  }
  *out_stream = (bp_plugin_stream_t *)(void *)s;
  return BP_OK;
}

void gpu_stream_destroy(bp_plugin_device_t *device, bp_plugin_stream_t *stream) {
  gpu_stream_t *s = (gpu_stream_t *)(void *)stream;
  if (!s) return;
  if (gpu_device_enter(gpu_dev(device)) == BP_OK) {
    /* Destroying a stream returns at once and lets queued work finish;
     * waiting first gives the ABI's "destroy after the work" without
     * surprises. */
    gpuStreamSynchronize(s->s);
    gpuStreamDestroy(s->s);
    gpu_device_leave();
  }
  gpu_mem_free(device, s->work);
  free(s);
}

bp_status_t gpu_stream_workspace(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                 uint64_t bytes, uint64_t *out) {
  gpu_stream_t *s = (gpu_stream_t *)(void *)stream;
  *out = 0;
  /* A captured graph would keep reading a buffer that a later, larger
   * request frees. */
  if (!s || s->capturing || gpu_capturing_here()) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": no stream scratch memory on the NULL stream or "
                                        "during a graph capture");
    return BP_ERR_UNSUPPORTED;
  }
  if (s->work_size >= bytes) {
    *out = s->work;
    return BP_OK;
  }
  if (s->work) {
    bp_status_t st = gpu_device_enter(gpu_dev(device));
    if (st != BP_OK) return st;
    st = gpu_check(gpuStreamSynchronize(s->s), GPU_API "StreamSynchronize");
    gpu_device_leave();
    if (st != BP_OK) return st;
    gpu_mem_free(device, s->work);
    s->work = s->work_size = 0;
  }
  const uint64_t mib = (uint64_t)1 << 20, size = (bytes + mib - 1) / mib * mib;
  bp_status_t st = gpu_mem_alloc(device, size, &s->work);
  if (st != BP_OK) return st;
  s->work_size = size;
  *out = s->work;
  return BP_OK;
}

/* Enters d, and for NULL-stream work also waits out any capture. */
static bp_status_t stream_enter(gpu_device_t *d, bp_plugin_stream_t *stream, const char *what) {
  bp_status_t st = stream ? BP_OK : gpu_legacy_begin(d, what);
  if (st == BP_OK && (st = gpu_device_enter(d)) != BP_OK && !stream) gpu_legacy_end(d);
  return st;
}

static void stream_leave(gpu_device_t *d, bp_plugin_stream_t *stream) {
  gpu_device_leave();
  if (!stream) gpu_legacy_end(d);
}

bp_status_t gpu_stream_synchronize(bp_plugin_device_t *device, bp_plugin_stream_t *stream) {
  gpu_device_t *d = gpu_dev(device);
  bp_status_t st = stream_enter(d, stream, "stream_synchronize");
  if (st != BP_OK) return st;
  st = gpu_check(gpuStreamSynchronize(gpu_stream_of(stream)), GPU_API "StreamSynchronize");
  stream_leave(d, stream);
  return st;
}

bp_status_t gpu_stream_native(bp_plugin_device_t *device, bp_plugin_stream_t *stream, void **out_native) {
  (void)device;
  *out_native = stream ? (void *)gpu_stream_of(stream) : NULL;
  return stream ? BP_OK : BP_ERR_UNSUPPORTED; /* the legacy stream is not handed out */
}

/* ---- events ------------------------------------------------------------- */

bp_status_t gpu_event_create(bp_plugin_device_t *device, bp_plugin_event_t **out_event) {
  *out_event = NULL;
  gpu_event_t *e = calloc(1, sizeof *e);
  if (!e) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": no host memory for an event");
    return BP_ERR_OUT_OF_MEMORY;
  }
  bp_status_t st = gpu_device_enter(gpu_dev(device));
  if (st == BP_OK) {
    st = gpu_check(gpuEventCreate(&e->e), GPU_API "EventCreate");
    gpu_device_leave();
  }
  if (st != BP_OK) {
    free(e);
    return st;
  }
  *out_event = (bp_plugin_event_t *)(void *)e;
  return BP_OK;
}

void gpu_event_destroy(bp_plugin_device_t *device, bp_plugin_event_t *event) {
  gpu_event_t *e = (gpu_event_t *)(void *)event;
  if (!e) return;
  if (gpu_device_enter(gpu_dev(device)) == BP_OK) {
    gpuEventDestroy(e->e);
    gpu_device_leave();
  }
  free(e);
}

#define EV(ev) (((gpu_event_t *)(void *)(ev))->e)

bp_status_t gpu_event_record(bp_plugin_device_t *device, bp_plugin_event_t *event,
                             bp_plugin_stream_t *stream) {
  gpu_device_t *d = gpu_dev(device);
  bp_status_t st = stream_enter(d, stream, "event_record");
  if (st != BP_OK) return st;
  st = gpu_check(gpuEventRecord(EV(event), gpu_stream_of(stream)), GPU_API "EventRecord");
  stream_leave(d, stream);
  return st;
}

bp_status_t gpu_stream_wait_event(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                  bp_plugin_event_t *event) {
  gpu_device_t *d = gpu_dev(device);
  bp_status_t st = stream_enter(d, stream, "stream_wait_event");
  if (st != BP_OK) return st;
  st = gpu_check(gpuStreamWaitEvent(gpu_stream_of(stream), EV(event)), GPU_API "StreamWaitEvent");
  stream_leave(d, stream);
  return st;
}

bp_status_t gpu_event_synchronize(bp_plugin_device_t *device, bp_plugin_event_t *event) {
  bp_status_t st = gpu_device_enter(gpu_dev(device));
  if (st != BP_OK) return st;
  st = gpu_check(gpuEventSynchronize(EV(event)), GPU_API "EventSynchronize");
  gpu_device_leave();
  return st;
}

bp_status_t gpu_event_elapsed(bp_plugin_device_t *device, bp_plugin_event_t *start,
                              bp_plugin_event_t *end, double *out_ms) {
  *out_ms = 0;
  bp_status_t st = gpu_device_enter(gpu_dev(device));
  if (st != BP_OK) return st;
  float ms = 0;
  st = gpu_check(gpuEventElapsedTime(&ms, EV(start), EV(end)), GPU_API "EventElapsedTime");
  gpu_device_leave();
  if (st == BP_OK) *out_ms = ms;
  return st;
}

#undef EV
