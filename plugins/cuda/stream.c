/*
 * stream.c — the cuda backend's streams and events: the shared code of
 * plugins/common/gpu_stream.inc on CUstream / CUevent of the device's
 * primary context.
 */
#include "plugins/cuda/cuda_plugin.h"

#define GPU(x) cuda_##x
#define GPU_NAME "cuda"
#define GPU_API "cu"
#define GPU_ENTER(d) cuda_ctx_enter(d)
#define GPU_LEAVE() cuda_ctx_leave()
#define GPU_STREAM_CREATE(s) cuda_drv.cuStreamCreate(s, CU_STREAM_DEFAULT)
#define GPU_STREAM_DESTROY(s) cuda_drv.cuStreamDestroy(s)
#define GPU_STREAM_SYNC(s) cuda_drv.cuStreamSynchronize(s)
#define GPU_EVENT_CREATE(e) cuda_drv.cuEventCreate(e, CU_EVENT_DEFAULT)
#define GPU_EVENT_DESTROY(e) cuda_drv.cuEventDestroy(e)
#define GPU_EVENT_RECORD(e, s) cuda_drv.cuEventRecord(e, s)
#define GPU_STREAM_WAIT_EVENT(s, e) cuda_drv.cuStreamWaitEvent(s, e, 0)
#define GPU_EVENT_SYNC(e) cuda_drv.cuEventSynchronize(e)
#define GPU_EVENT_ELAPSED(ms, a, b) cuda_drv.cuEventElapsedTime(ms, a, b)

#include "plugins/common/gpu_stream.inc"
