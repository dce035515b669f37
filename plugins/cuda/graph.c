/*
 * graph.c — the cuda backend's native graphs (ABI 1.2): stream capture,
 * the shared code of plugins/common/gpu_graph.inc under this plugin's
 * names and driver entry points.
 */
#include "plugins/cuda/cuda_plugin.h"

#define GPU(x) cuda_##x
#define GPU_NAME "cuda"
#define GPU_ENTER(d) cuda_ctx_enter(d)
#define GPU_LEAVE() cuda_ctx_leave()
#define GPU_GRAPH_T CUgraph
#define GPU_EXEC_T CUgraphExec
#define GPU_HAVE_GRAPHS()                                                      \
  (cuda_drv.cuStreamBeginCapture && cuda_drv.cuStreamEndCapture &&            \
   (cuda_drv.cuGraphInstantiateWithFlags || cuda_drv.cuGraphInstantiate) &&   \
   cuda_drv.cuGraphLaunch && cuda_drv.cuGraphExecDestroy &&                   \
   cuda_drv.cuGraphDestroy)
#define GPU_BEGIN_CAPTURE(s)                                                   \
  cuda_drv.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
#define GPU_END_CAPTURE(s, g) cuda_drv.cuStreamEndCapture(s, g)
#define GPU_INSTANTIATE(e, g, log, n) instantiate(e, g, log, n)
#define GPU_GRAPH_LAUNCH(e, s) cuda_drv.cuGraphLaunch(e, s)
#define GPU_EXEC_DESTROY(e) cuda_drv.cuGraphExecDestroy(e)
#define GPU_GRAPH_DESTROY(g) cuda_drv.cuGraphDestroy(g)
#define GPU_EXCHANGE_MODE(m)                                                   \
  (cuda_drv.cuThreadExchangeStreamCaptureMode                                  \
       ? cuda_drv.cuThreadExchangeStreamCaptureMode(m)                         \
       : CUDA_SUCCESS)
#define GPU_MODE_RELAXED CU_STREAM_CAPTURE_MODE_RELAXED

/* cuGraphInstantiateWithFlags came with 11.4; before it, the _v2 of 11.0
 * (whose error log is kept for the message). */
static CUresult instantiate(CUgraphExec *e, CUgraph g, char *log, size_t n) {
  if (cuda_drv.cuGraphInstantiateWithFlags && cuda_drv.version >= 11040)
    return cuda_drv.cuGraphInstantiateWithFlags(e, g, 0);
  if (!cuda_drv.cuGraphInstantiate)
    return CUDA_ERROR_NOT_SUPPORTED;
  return cuda_drv.cuGraphInstantiate(e, g, NULL, log, n);
}

#include "plugins/common/gpu_graph.inc"
