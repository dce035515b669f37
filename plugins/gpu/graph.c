/*
 * plugins/gpu/graph.c — native graphs (ABI 1.2) of the CUDA and ROCm
 * backends through stream capture.
 *
 * graph_begin starts a capture on the stream (thread-local mode: only this
 * thread is held to capture rules, other threads' captures are ignored),
 * the core replays the recorded ops through the ordinary op entry points,
 * which enqueue kernels and async copies that the driver records instead of
 * running, and graph_end ends the capture, instantiates the graph and keeps
 * only the executable one. graph_launch launches it on any stream.
 *
 * While a blocking stream captures, work on the legacy (NULL) stream would
 * make the capture depend on it, and the driver fails it (and invalidates
 * the capture). The plugin's legacy-stream users — allocation, frees,
 * synchronous copies, device synchronisation, pinned host memory — therefore
 * go through legacy_begin / legacy_end: a shared hold on the device's
 * capture_lock, which a capture holds exclusively from begin to end. On the
 * capturing thread itself they return BP_ERR_UNSUPPORTED (the core then
 * falls back to replay). Loading a kernel module during a capture is
 * wrapped in capture_relax / capture_restore (the driver's documented way
 * for a library to make a potentially unsafe call).
 */
#include <stdlib.h>

#include "plugins/gpu/gpu.h"

typedef struct gpu_graph {
  gpuGraphExec_t exec;
} gpu_graph_t;

/* Captures open on this thread (each holds its device's capture_lock). */
static _Thread_local int captures_here;

bool gpu_capturing_here(void) {
  return captures_here > 0;
}

bp_status_t gpu_legacy_begin(gpu_device_t *d, const char *what) {
  if (captures_here) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": %s runs on the NULL stream, which a "
                                        "graph capture on this thread forbids",
                        what);
    return BP_ERR_UNSUPPORTED;
  }
  pthread_rwlock_rdlock(&d->capture_lock);
  return BP_OK;
}

void gpu_legacy_end(gpu_device_t *d) {
  pthread_rwlock_unlock(&d->capture_lock);
}

int gpu_capture_relax(void) {
  int mode = gpuStreamCaptureModeRelaxed;
  if (captures_here && gpuThreadExchangeStreamCaptureMode(&mode) != 0) mode = -1;
  return captures_here ? mode : -1;
}

void gpu_capture_restore(int mode) {
  if (mode >= 0) gpuThreadExchangeStreamCaptureMode(&mode);
}

static gpu_stream_t *graph_stream(bp_plugin_stream_t *s) {
  return (gpu_stream_t *)(void *)s;
}

bp_status_t gpu_graph_begin(bp_plugin_device_t *device, bp_plugin_stream_t *stream) {
  gpu_device_t *d = gpu_dev(device);
  gpu_stream_t *s = graph_stream(stream);
  if (!gpuHaveGraphs()) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": the driver has no stream capture "
                                        "entry points");
    return BP_ERR_UNSUPPORTED;
  }
  if (!s || s->capturing) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": graph_begin needs a stream that is not "
                                        "capturing");
    return BP_ERR_INVALID_ARGUMENT;
  }
  bp_status_t st = gpu_device_enter(d);
  if (st != BP_OK) return st;
  pthread_rwlock_wrlock(&d->capture_lock);
  st = gpu_check(gpuStreamBeginCaptureThreadLocal(s->s), "stream capture begin");
  if (st == BP_OK) {
    s->capturing = true;
    captures_here++;
  } else {
    pthread_rwlock_unlock(&d->capture_lock);
  }
  gpu_device_leave();
  return st;
}

bp_status_t gpu_graph_end(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          bp_plugin_graph_t **out_graph) {
  *out_graph = NULL;
  gpu_device_t *d = gpu_dev(device);
  gpu_stream_t *s = graph_stream(stream);
  if (!s || !s->capturing) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": graph_end on a stream that is not "
                                        "capturing");
    return BP_ERR_INVALID_ARGUMENT;
  }
  bp_status_t st = gpu_device_enter(d);
  gpuGraph_t g = NULL;
  gpuGraphExec_t exec = NULL;
  /* The capture ends even when entering failed: the lock and the stream
   * must not stay in capture mode. */
  bp_status_t end = gpu_check(gpuStreamEndCapture(s->s, &g), "stream capture end");
  s->capturing = false;
  captures_here--;
  pthread_rwlock_unlock(&d->capture_lock);
  if (st == BP_OK) st = end;
  if (st == BP_OK && !g) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": stream capture returned no graph");
    st = BP_ERR_INTERNAL;
  }
  if (st == BP_OK) {
    char log[512] = "";
    st = gpu_check(gpuGraphInstantiate(&exec, g, log, sizeof log), "graph instantiate");
    if (st != BP_OK && log[0]) gpu_host->set_error(GPU_PLUGIN_NAME ": graph instantiate: %s", log);
  }
  if (g) gpuGraphDestroy(g); /* the executable graph does not need it */
  gpu_graph_t *out = NULL;
  if (st == BP_OK && !(out = calloc(1, sizeof *out))) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": no host memory for a graph");
    st = BP_ERR_OUT_OF_MEMORY;
  }
  if (st == BP_OK) {
    out->exec = exec;
    *out_graph = (bp_plugin_graph_t *)(void *)out;
  } else if (exec) {
    gpuGraphExecDestroy(exec);
  }
  gpu_device_leave();
  return st;
}

bp_status_t gpu_graph_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                             bp_plugin_graph_t *graph) {
  gpu_device_t *d = gpu_dev(device);
  gpu_graph_t *g = (gpu_graph_t *)(void *)graph;
  bp_status_t st = gpu_device_enter(d);
  if (st != BP_OK) return st;
  /* A NULL stream would be the legacy stream: ordered like a synchronous
   * copy, so it waits for captures like one. */
  if (!stream && (st = gpu_legacy_begin(d, "graph_launch")) != BP_OK) goto out;
  st = gpu_check(gpuGraphLaunch(g->exec, gpu_stream_of(stream)), "graph launch");
  if (!stream) gpu_legacy_end(d);
out:
  gpu_device_leave();
  return st;
}

/* Destroying an executable graph with launches in flight is allowed: the
 * driver releases it when they finish. */
void gpu_graph_destroy(bp_plugin_device_t *device, bp_plugin_graph_t *graph) {
  gpu_graph_t *g = (gpu_graph_t *)(void *)graph;
  if (!g) return;
  if (gpu_device_enter(gpu_dev(device)) == BP_OK) {
    gpuGraphExecDestroy(g->exec);
    gpu_device_leave();
  }
  free(g);
}
