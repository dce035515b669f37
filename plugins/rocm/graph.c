/*
 * graph.c — the rocm backend's native graphs (ABI 1.2): stream capture,
 * the shared code of plugins/common/gpu_graph.inc under this plugin's
 * names and HIP entry points.
 */
#include "plugins/rocm/rocm_plugin.h"

#define GPU(x) rocm_##x
#define GPU_NAME "rocm"
#define GPU_ENTER(d) rocm_enter(d)
#define GPU_LEAVE() ((void)0) /* HIP keeps the device current */
#define GPU_GRAPH_T hipGraph_t
#define GPU_EXEC_T hipGraphExec_t
#define GPU_HAVE_GRAPHS()                                                      \
  (rocm_rt.hipStreamBeginCapture && rocm_rt.hipStreamEndCapture &&            \
   (rocm_rt.hipGraphInstantiateWithFlags || rocm_rt.hipGraphInstantiate) &&   \
   rocm_rt.hipGraphLaunch && rocm_rt.hipGraphExecDestroy &&                   \
   rocm_rt.hipGraphDestroy)
#define GPU_BEGIN_CAPTURE(s)                                                   \
  rocm_rt.hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal)
#define GPU_END_CAPTURE(s, g) rocm_rt.hipStreamEndCapture(s, g)
#define GPU_INSTANTIATE(e, g, log, n) instantiate(e, g, log, n)
#define GPU_GRAPH_LAUNCH(e, s) rocm_rt.hipGraphLaunch(e, s)
#define GPU_EXEC_DESTROY(e) rocm_rt.hipGraphExecDestroy(e)
#define GPU_GRAPH_DESTROY(g) rocm_rt.hipGraphDestroy(g)
#define GPU_EXCHANGE_MODE(m)                                                   \
  (rocm_rt.hipThreadExchangeStreamCaptureMode                                  \
       ? rocm_rt.hipThreadExchangeStreamCaptureMode(m)                         \
       : hipSuccess)
#define GPU_MODE_RELAXED hipStreamCaptureModeRelaxed

static hipError_t instantiate(hipGraphExec_t *e, hipGraph_t g, char *log,
                              size_t n) {
  if (rocm_rt.hipGraphInstantiateWithFlags)
    return rocm_rt.hipGraphInstantiateWithFlags(e, g, 0);
  return rocm_rt.hipGraphInstantiate(e, g, NULL, log, n);
}

#include "plugins/common/gpu_graph.inc"
