/*
 * stream.c — streams are in-order command queues with profiling on; events
 * are markers enqueued on them, whose end timestamps give elapsed times.
 */
#include <stdlib.h>

#include "ocl.h"

bp_status_t ocl_stream_create(bp_plugin_device_t *device, bp_plugin_stream_t **out_stream) {
  ocl_device_t *d = (ocl_device_t *)device;
  *out_stream = NULL;
  ocl_stream_t *s = calloc(1, sizeof *s);
  if (!s) return BP_ERR_OUT_OF_MEMORY;
  cl_int err = CL_SUCCESS;
  s->queue = ocl_api.clCreateCommandQueue(d->ctx, d->id, CL_QUEUE_PROFILING_ENABLE, &err);
  if (!s->queue) {
    free(s);
    return ocl_fail(err, "clCreateCommandQueue");
  }
  pthread_mutex_lock(&d->lock);
  s->next = d->streams;
  d->streams = s;
  pthread_mutex_unlock(&d->lock);
  *out_stream = (bp_plugin_stream_t *)s;
  return BP_OK;
}

void ocl_stream_destroy(bp_plugin_device_t *device, bp_plugin_stream_t *stream) {
  ocl_device_t *d = (ocl_device_t *)device;
  ocl_stream_t *s = (ocl_stream_t *)stream;
  if (!s) return;
  pthread_mutex_lock(&d->lock);
  for (ocl_stream_t **p = &d->streams; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  pthread_mutex_unlock(&d->lock);
  ocl_api.clFinish(s->queue);
  ocl_api.clReleaseCommandQueue(s->queue);
  free(s);
}

bp_status_t ocl_stream_synchronize(bp_plugin_device_t *device, bp_plugin_stream_t *stream) {
  cl_int err = ocl_api.clFinish(ocl_queue((ocl_device_t *)device, stream));
  return err == CL_SUCCESS ? BP_OK : ocl_fail(err, "clFinish");
}

bp_status_t ocl_event_create(bp_plugin_device_t *device, bp_plugin_event_t **out_event) {
  (void)device;
  *out_event = calloc(1, sizeof(ocl_event_t));
  return *out_event ? BP_OK : BP_ERR_OUT_OF_MEMORY;
}

void ocl_event_destroy(bp_plugin_device_t *device, bp_plugin_event_t *event) {
  (void)device;
  ocl_event_t *e = (ocl_event_t *)event;
  if (!e) return;
  if (e->ev) ocl_api.clReleaseEvent(e->ev);
  free(e);
}

bp_status_t ocl_event_record(bp_plugin_device_t *device, bp_plugin_event_t *event,
                             bp_plugin_stream_t *stream) {
  ocl_event_t *e = (ocl_event_t *)event;
  cl_event ev = NULL;
  cl_int err =
      ocl_api.clEnqueueMarkerWithWaitList(ocl_queue((ocl_device_t *)device, stream), 0, NULL, &ev);
  if (err != CL_SUCCESS) return ocl_fail(err, "clEnqueueMarkerWithWaitList");
  if (e->ev) ocl_api.clReleaseEvent(e->ev); /* re-recording moves the event */
  e->ev = ev;
  return BP_OK;
}

bp_status_t ocl_stream_wait_event(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                  bp_plugin_event_t *event) {
  ocl_event_t *e = (ocl_event_t *)event;
  if (!e->ev) return BP_OK; /* never recorded: nothing to wait for, as in CUDA */
  cl_int err = ocl_api.clEnqueueBarrierWithWaitList(ocl_queue((ocl_device_t *)device, stream), 1,
                                                    &e->ev, NULL);
  return err == CL_SUCCESS ? BP_OK : ocl_fail(err, "clEnqueueBarrierWithWaitList");
}

bp_status_t ocl_event_synchronize(bp_plugin_device_t *device, bp_plugin_event_t *event) {
  (void)device;
  ocl_event_t *e = (ocl_event_t *)event;
  if (!e->ev) return BP_OK;
  cl_int err = ocl_api.clWaitForEvents(1, &e->ev);
  return err == CL_SUCCESS ? BP_OK : ocl_fail(err, "clWaitForEvents");
}

/* A marker's END timestamp is when everything before it finished. */
static cl_int event_time(cl_event ev, cl_ulong *out_ns) {
  cl_int err = ocl_api.clWaitForEvents(1, &ev);
  if (err == CL_SUCCESS)
    err =
        ocl_api.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof *out_ns, out_ns, NULL);
  return err;
}

bp_status_t ocl_event_elapsed(bp_plugin_device_t *device, bp_plugin_event_t *start,
                              bp_plugin_event_t *end, double *out_ms) {
  (void)device;
  *out_ms = 0;
  ocl_event_t *a = (ocl_event_t *)start, *b = (ocl_event_t *)end;
  if (!a->ev || !b->ev) {
    ocl_host->set_error("opencl: event_elapsed on an event never recorded");
    return BP_ERR_INVALID_ARGUMENT;
  }
  cl_ulong t0 = 0, t1 = 0;
  cl_int err = event_time(a->ev, &t0);
  if (err == CL_SUCCESS) err = event_time(b->ev, &t1);
  if (err != CL_SUCCESS) return ocl_fail(err, "clGetEventProfilingInfo");
  *out_ms = ((double)t1 - (double)t0) / 1e6;
  return BP_OK;
}
