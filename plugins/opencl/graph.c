/*
 * graph.c — native graphs (ABI 1.2) through cl_khr_command_buffer.
 *
 * Between graph_begin and graph_end every kernel the plugin would enqueue on
 * the recording stream's queue goes into a command buffer instead
 * (ocl_enqueue asks ocl_graph_recording). Each command waits on the previous
 * one's sync point, so the buffer runs in the order the ops were issued,
 * like the in-order queue it stands for. Scratch buffers an op creates are
 * retained by the graph, because the command buffer runs after the op has
 * returned and released its own reference.
 *
 * Every recorded command gets a kernel object of its own, created while
 * recording (ocl_graph_own_kernel) and released with the graph. The ops share
 * one cl_kernel per kernel name and set its arguments before each launch;
 * the extension says a recorded command keeps the arguments it was recorded
 * with, but PoCL 3 copies them from the kernel object each time the buffer
 * is enqueued, so a shared kernel would run every command with the
 * arguments of the last launch that used it (two adds write only the
 * second output; the tiled GEMM packs B twice and reads freed scratch).
 * A kernel nobody else touches has the recorded arguments whatever the
 * driver reads, and when.
 *
 * The recording state is thread-local: the core records one graph on one
 * thread, holding the stream's lock, and ops for other streams issued
 * meanwhile from other threads must still run normally.
 */
#include <stdlib.h>

#include "ocl.h"

typedef struct ocl_cb_api {
  clCreateCommandBufferKHR_fn create;
  clCommandNDRangeKernelKHR_fn ndrange;
  clFinalizeCommandBufferKHR_fn finalize;
  clEnqueueCommandBufferKHR_fn enqueue;
  clReleaseCommandBufferKHR_fn release;
} ocl_cb_api_t;

struct ocl_graph {
  ocl_cb_api_t api;
  cl_command_buffer_khr cb;
  cl_command_queue home;  /* the queue the buffer was recorded for */
  cl_sync_point_khr last; /* the newest command, for ordering */
  bool has_last;
  cl_int error; /* the first failure while recording */
  cl_mem *kept; /* scratch retained for the graph's life */
  size_t kept_count, kept_cap;
  cl_kernel *kernels; /* one per recorded command, owned */
  size_t kernel_count, kernel_cap;
  cl_event last_launch; /* without simultaneous use: wait for it */
  bool simultaneous;
};

typedef struct recording_state {
  cl_command_queue queue;
  ocl_graph_t *graph;
} recording_state_t;

static _Thread_local recording_state_t recording, paused;

/* The extension's entry points for d's platform; false when any is absent. */
static bool cb_api(const ocl_device_t *d, ocl_cb_api_t *out) {
  if (!d->caps.command_buffer || !ocl_api.clGetExtensionFunctionAddressForPlatform) return false;
#define GET(field, name)                                                                           \
  out->field = (name##_fn)ocl_api.clGetExtensionFunctionAddressForPlatform(d->platform, #name)
  GET(create, clCreateCommandBufferKHR);
  GET(ndrange, clCommandNDRangeKernelKHR);
  GET(finalize, clFinalizeCommandBufferKHR);
  GET(enqueue, clEnqueueCommandBufferKHR);
  GET(release, clReleaseCommandBufferKHR);
#undef GET
  return out->create && out->ndrange && out->finalize && out->enqueue && out->release;
}

ocl_graph_t *ocl_graph_recording(cl_command_queue q) {
  return recording.graph && recording.queue == q ? recording.graph : NULL;
}

cl_int ocl_graph_record_kernel(ocl_graph_t *g, cl_kernel k, cl_uint dims, const size_t *gws,
                               const size_t *lws) {
  if (g->error != CL_SUCCESS) return g->error;
  cl_sync_point_khr sp;
  cl_int err = g->api.ndrange(g->cb, NULL, NULL, k, dims, NULL, gws, lws, g->has_last ? 1 : 0,
                              g->has_last ? &g->last : NULL, &sp, NULL);
  if (err != CL_SUCCESS) return g->error = err;
  g->last = sp;
  g->has_last = true;
  return CL_SUCCESS;
}

/* Makes room for one more element in *arr (count, cap); false (and g's
 * error set) when memory runs out. */
static bool grow(ocl_graph_t *g, void **arr, size_t elem, size_t count, size_t *cap) {
  if (count < *cap) return true;
  size_t n = *cap ? 2 * *cap : 8;
  void *p = realloc(*arr, n * elem);
  if (!p) {
    g->error = CL_OUT_OF_HOST_MEMORY;
    return false;
  }
  *arr = p;
  *cap = n;
  return true;
}

void ocl_graph_keep(cl_command_queue q, cl_mem m) {
  ocl_graph_t *g = ocl_graph_recording(q);
  if (!g || !m || g->error != CL_SUCCESS) return;
  if (!grow(g, (void **)&g->kept, sizeof *g->kept, g->kept_count, &g->kept_cap)) return;
  ocl_api.clRetainMemObject(m);
  g->kept[g->kept_count++] = m;
}

bp_status_t ocl_graph_own_kernel(cl_program prog, const char *name, cl_kernel *inout_kernel) {
  ocl_graph_t *g = recording.graph;
  if (!g) return BP_OK;
  if (g->error != CL_SUCCESS) return ocl_fail(g->error, "recording a command buffer");
  if (!grow(g, (void **)&g->kernels, sizeof *g->kernels, g->kernel_count, &g->kernel_cap))
    return BP_ERR_OUT_OF_MEMORY;
  cl_int err = CL_SUCCESS;
  cl_kernel k = ocl_api.clCreateKernel(prog, name, &err);
  if (!k) return ocl_fail(g->error = err, name);
  g->kernels[g->kernel_count++] = k;
  *inout_kernel = k;
  return BP_OK;
}

void ocl_graph_pause(bool pause) {
  if (pause) {
    paused = recording;
    recording = (recording_state_t){0};
  } else {
    recording = paused;
    paused = (recording_state_t){0};
  }
}

static void graph_free(ocl_graph_t *g) {
  if (g->last_launch) {
    ocl_api.clWaitForEvents(1, &g->last_launch);
    ocl_api.clReleaseEvent(g->last_launch);
  }
  if (g->cb) {
    /* A buffer may still be queued: its last enqueue finishing is enough,
     * and the in-order home queue gives that after clFinish. */
    ocl_api.clFinish(g->home);
    g->api.release(g->cb);
  }
  for (size_t i = 0; i < g->kept_count; i++) ocl_api.clReleaseMemObject(g->kept[i]);
  free(g->kept);
  for (size_t i = 0; i < g->kernel_count; i++) ocl_api.clReleaseKernel(g->kernels[i]);
  free(g->kernels);
  free(g);
}

bp_status_t ocl_graph_begin(bp_plugin_device_t *device, bp_plugin_stream_t *stream) {
  ocl_device_t *d = (ocl_device_t *)device;
  ocl_cb_api_t api;
  if (!cb_api(d, &api)) {
    ocl_host->set_error("opencl: %s has no cl_khr_command_buffer", d->caps.name);
    return BP_ERR_UNSUPPORTED;
  }
  if (recording.graph) {
    ocl_host->set_error("opencl: this thread is already recording a graph");
    return BP_ERR_INVALID_ARGUMENT;
  }
  ocl_graph_t *g = calloc(1, sizeof *g);
  if (!g) return BP_ERR_OUT_OF_MEMORY;
  g->api = api;
  g->home = ocl_queue(d, stream);
  g->simultaneous = d->caps.command_buffer_simultaneous;
  cl_command_buffer_properties_khr props[] = {CL_COMMAND_BUFFER_FLAGS_KHR,
                                              CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
  cl_int err = CL_SUCCESS;
  g->cb = api.create(1, &g->home, g->simultaneous ? props : NULL, &err);
  if (!g->cb) {
    free(g);
    return ocl_fail(err, "clCreateCommandBufferKHR");
  }
  recording.queue = g->home;
  recording.graph = g;
  return BP_OK;
}

bp_status_t ocl_graph_end(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          bp_plugin_graph_t **out_graph) {
  ocl_device_t *d = (ocl_device_t *)device;
  *out_graph = NULL;
  ocl_graph_t *g = ocl_graph_recording(ocl_queue(d, stream));
  if (!g) {
    ocl_host->set_error("opencl: graph_end on a stream that is not recording");
    return BP_ERR_INVALID_ARGUMENT;
  }
  recording.graph = NULL;
  recording.queue = NULL;
  cl_int err = g->error;
  if (err == CL_SUCCESS) err = g->api.finalize(g->cb);
  if (err != CL_SUCCESS) {
    graph_free(g);
    return ocl_fail(err, "recording a command buffer");
  }
  *out_graph = (bp_plugin_graph_t *)g;
  return BP_OK;
}

/* Orders `first` before whatever is queued next on `then`. */
static cl_int chain(cl_command_queue first, cl_command_queue then) {
  cl_event ev = NULL;
  cl_int err = ocl_api.clEnqueueMarkerWithWaitList(first, 0, NULL, &ev);
  if (err == CL_SUCCESS) err = ocl_api.clEnqueueBarrierWithWaitList(then, 1, &ev, NULL);
  if (ev) ocl_api.clReleaseEvent(ev);
  return err;
}

bp_status_t ocl_graph_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                             bp_plugin_graph_t *graph) {
  ocl_device_t *d = (ocl_device_t *)device;
  ocl_graph_t *g = (ocl_graph_t *)graph;
  cl_command_queue q = ocl_queue(d, stream);
  if (!g->simultaneous && g->last_launch) { /* the buffer may not be pending twice */
    ocl_api.clWaitForEvents(1, &g->last_launch);
    ocl_api.clReleaseEvent(g->last_launch);
    g->last_launch = NULL;
  }
  /* The buffer runs on the queue it was recorded for; a launch on another
   * stream is fenced on both sides so it keeps that stream's order. */
  cl_int err = q == g->home ? CL_SUCCESS : chain(q, g->home);
  cl_event done = NULL;
  if (err == CL_SUCCESS)
    err = g->api.enqueue(0, NULL, g->cb, 0, NULL, g->simultaneous ? NULL : &done);
  if (err == CL_SUCCESS && q != g->home) err = chain(g->home, q);
  if (err != CL_SUCCESS) {
    if (done) ocl_api.clReleaseEvent(done);
    return ocl_fail(err, "clEnqueueCommandBufferKHR");
  }
  g->last_launch = done;
  ocl_api.clFlush(g->home);
  return BP_OK;
}

void ocl_graph_destroy(bp_plugin_device_t *device, bp_plugin_graph_t *graph) {
  (void)device;
  if (graph) graph_free((ocl_graph_t *)graph);
}
