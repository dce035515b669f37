/*
 * graph.c — the shim's stream capture and graph entry points, over the
 * shared capture code of test/shims/common/capture.c (see capture.h for the
 * runtime rules it enforces).
 */
#include "test/shims/hip/shim.h"

#define NEED_DEVICE()                                                          \
  do {                                                                         \
    if (!shim_have_device(__func__))                                           \
      return hipErrorInvalidDevice;                                            \
  } while (0)

hipError_t hipStreamBeginCapture(hipStream_t s, int mode) {
  NEED_DEVICE();
  if (!s) /* the null stream cannot be captured */
    return hipErrorStreamCaptureUnsupported;
  if (!shim_stream_ok(s, __func__))
    return hipErrorInvalidHandle;
  return (hipError_t)shim_capture_begin(shim_stream_state(s), mode);
}

hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t *out) {
  NEED_DEVICE();
  *out = NULL;
  if (!s || !shim_stream_ok(s, __func__))
    return hipErrorInvalidHandle;
  shim_graph_t *g = NULL;
  hipError_t r = (hipError_t)shim_capture_end(shim_stream_state(s), &g);
  *out = (hipGraph_t)(void *)g;
  return r;
}

hipError_t hipThreadExchangeStreamCaptureMode(int *mode) {
  return (hipError_t)shim_capture_exchange_mode(mode);
}

hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *out, hipGraph_t g,
                                        unsigned long long flags) {
  NEED_DEVICE();
  *out = NULL;
  if (flags != 0)
    return hipErrorInvalidValue;
  shim_graph_t *e = NULL;
  hipError_t r = (hipError_t)shim_graph_instantiate((shim_graph_t *)(void *)g, &e);
  *out = (hipGraphExec_t)(void *)e;
  return r;
}

hipError_t hipGraphInstantiate(hipGraphExec_t *out, hipGraph_t g,
                               hipGraphNode_t *error_node, char *log,
                               size_t log_size) {
  if (error_node)
    *error_node = NULL;
  if (log && log_size)
    log[0] = 0;
  return hipGraphInstantiateWithFlags(out, g, 0);
}

hipError_t hipGraphLaunch(hipGraphExec_t e, hipStream_t s) {
  NEED_DEVICE();
  hipError_t r = (hipError_t)shim_stream_use(s, __func__);
  if (r != hipSuccess)
    return r;
  if (shim_stream_capture(s)) /* child graphs are not modelled */
    return (hipError_t)shim_capture_sync(shim_stream_state(s), __func__);
  if (shim_hip_fail("launch"))
    return hipErrorLaunchFailure;
  __atomic_add_fetch(&shim_hip_stats.graph_launches, 1, __ATOMIC_RELAXED);
  return (hipError_t)shim_graph_run((const shim_graph_t *)(void *)e,
                                    hipErrorIllegalAddress,
                                    &shim_hip_stats.launches);
}

hipError_t hipGraphExecDestroy(hipGraphExec_t e) {
  NEED_DEVICE();
  if (!shim_graph_ok((shim_graph_t *)(void *)e, __func__))
    return hipErrorInvalidValue;
  shim_graph_free((shim_graph_t *)(void *)e, __func__);
  return hipSuccess;
}

hipError_t hipGraphDestroy(hipGraph_t g) {
  NEED_DEVICE();
  if (!shim_graph_ok((shim_graph_t *)(void *)g, __func__))
    return hipErrorInvalidValue;
  shim_graph_free((shim_graph_t *)(void *)g, __func__);
  return hipSuccess;
}

hipError_t bp_hip_shim_enqueue(hipStream_t s, void (*fn)(void *),
                               const void *data, size_t size) {
  NEED_DEVICE();
  hipError_t r = (hipError_t)shim_stream_use(s, __func__);
  if (r != hipSuccess)
    return r;
  if (shim_capture_host(shim_stream_capture(s), fn, data, size))
    return hipSuccess;
  fn((void *)data);
  return hipSuccess;
}

bool bp_hip_shim_mem_valid(uint64_t p, uint64_t bytes) {
  return shim_mem_valid(p, bytes, "rocBLAS operand");
}
