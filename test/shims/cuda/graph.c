/*
 * graph.c — the shim's stream capture and graph entry points, over the
 * shared capture code of test/shims/common/capture.c (see capture.h for the
 * driver rules it enforces).
 */
#include "test/shims/cuda/shim.h"

#define NEED_CTX()                                                             \
  do {                                                                         \
    if (!shim_have_ctx(__func__))                                              \
      return SHIM_INVALID_CONTEXT;                                             \
  } while (0)

CUresult cuStreamBeginCapture(CUstream s, int mode) {
  NEED_CTX();
  if (!s) /* the legacy stream cannot be captured */
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (!shim_stream_ok(s, __func__))
    return CUDA_ERROR_INVALID_HANDLE;
  return (CUresult)shim_capture_begin(shim_stream_state(s), mode);
}

CUresult cuStreamEndCapture(CUstream s, CUgraph *out) {
  NEED_CTX();
  *out = NULL;
  if (!s || !shim_stream_ok(s, __func__))
    return CUDA_ERROR_INVALID_HANDLE;
  shim_graph_t *g = NULL;
  CUresult r = (CUresult)shim_capture_end(shim_stream_state(s), &g);
  *out = (CUgraph)(void *)g;
  return r;
}

CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
  return (CUresult)shim_capture_exchange_mode(mode);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g,
                                     unsigned long long flags) {
  NEED_CTX();
  *out = NULL;
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  shim_graph_t *e = NULL;
  CUresult r = (CUresult)shim_graph_instantiate((shim_graph_t *)(void *)g, &e);
  *out = (CUgraphExec)(void *)e;
  return r;
}

CUresult cuGraphInstantiate(CUgraphExec *out, CUgraph g, CUgraphNode *error_node,
                            char *log, size_t log_size) {
  if (error_node)
    *error_node = NULL;
  if (log && log_size)
    log[0] = 0;
  return cuGraphInstantiateWithFlags(out, g, 0);
}

CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
  NEED_CTX();
  CUresult r = (CUresult)shim_stream_use(s, __func__);
  if (r != CUDA_SUCCESS)
    return r;
  if (shim_stream_capture(s)) /* child graphs are not modelled */
    return (CUresult)shim_capture_sync(shim_stream_state(s), __func__);
  if (shim_fail("launch"))
    return CUDA_ERROR_LAUNCH_FAILED;
  __atomic_add_fetch(&shim_stats.graph_launches, 1, __ATOMIC_RELAXED);
  return (CUresult)shim_graph_run((const shim_graph_t *)(void *)e,
                                  CUDA_ERROR_ILLEGAL_ADDRESS,
                                  &shim_stats.launches);
}

CUresult cuGraphExecDestroy(CUgraphExec e) {
  NEED_CTX();
  if (!shim_graph_ok((shim_graph_t *)(void *)e, __func__))
    return CUDA_ERROR_INVALID_VALUE;
  shim_graph_free((shim_graph_t *)(void *)e, __func__);
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph g) {
  NEED_CTX();
  if (!shim_graph_ok((shim_graph_t *)(void *)g, __func__))
    return CUDA_ERROR_INVALID_VALUE;
  shim_graph_free((shim_graph_t *)(void *)g, __func__);
  return CUDA_SUCCESS;
}

CUresult bp_cuda_shim_enqueue(CUstream s, void (*fn)(void *), const void *data,
                              size_t size) {
  NEED_CTX();
  CUresult r = (CUresult)shim_stream_use(s, __func__);
  if (r != CUDA_SUCCESS)
    return r;
  if (shim_capture_host(shim_stream_capture(s), fn, data, size))
    return CUDA_SUCCESS;
  fn((void *)data);
  return CUDA_SUCCESS;
}

bool bp_cuda_shim_mem_valid(uint64_t p, uint64_t bytes) {
  return shim_mem_valid(p, bytes, "cuBLAS operand");
}
