/*
 * stream.c — the rocm backend's streams and events: the shared code of
 * plugins/common/gpu_stream.inc on hipStream_t / hipEvent_t (hipStreamCreate
 * makes blocking streams).
 */
#include "plugins/rocm/rocm_plugin.h"

#define GPU(x) rocm_##x
#define GPU_NAME "rocm"
#define GPU_API "hip"
#define GPU_ENTER(d) rocm_enter(d)
#define GPU_LEAVE() ((void)0) /* HIP keeps the device current */
#define GPU_STREAM_CREATE(s) rocm_rt.hipStreamCreate(s)
#define GPU_STREAM_DESTROY(s) rocm_rt.hipStreamDestroy(s)
#define GPU_STREAM_SYNC(s) rocm_rt.hipStreamSynchronize(s)
#define GPU_EVENT_CREATE(e) rocm_rt.hipEventCreate(e)
#define GPU_EVENT_DESTROY(e) rocm_rt.hipEventDestroy(e)
#define GPU_EVENT_RECORD(e, s) rocm_rt.hipEventRecord(e, s)
#define GPU_STREAM_WAIT_EVENT(s, e) rocm_rt.hipStreamWaitEvent(s, e, 0)
#define GPU_EVENT_SYNC(e) rocm_rt.hipEventSynchronize(e)
#define GPU_EVENT_ELAPSED(ms, a, b) rocm_rt.hipEventElapsedTime(ms, a, b)

#include "plugins/common/gpu_stream.inc"
