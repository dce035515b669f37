/*
 * gpu_hip.c — gpu.h over the HIP runtime (libamdhip64.so through dlopen),
 * for comm-rccl.so: hipSetDevice before each call (HIP's current device is
 * per thread, as the ROCm backend's rocm_enter does), a non-blocking
 * stream.
 */
#ifdef BP_COMM_RCCL
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "gpu.h"
#include "nccl_lib.h"

typedef int hipError_t;
typedef void *hipStream_t;
typedef void *hipEvent_t;
#define hipSuccess 0
#define hipErrorNotReady 600
#define hipStreamNonBlocking 1

#define HIP_FUNCTIONS(X)                                                                           \
  X(hipInit, (unsigned flags))                                                                    \
  X(hipGetDeviceCount, (int *count))                                                              \
  X(hipSetDevice, (int ordinal))                                                                  \
  X(hipStreamCreateWithFlags, (hipStream_t * s, unsigned flags))                                  \
  X(hipStreamDestroy, (hipStream_t s))                                                            \
  X(hipStreamQuery, (hipStream_t s))                                                              \
  X(hipMalloc, (void **p, size_t size))                                                           \
  X(hipFree, (void *p))                                                                           \
  X(hipEventCreate, (hipEvent_t * e))                                                             \
  X(hipEventRecord, (hipEvent_t e, hipStream_t s))                                                \
  X(hipEventQuery, (hipEvent_t e))                                                                \
  X(hipEventDestroy, (hipEvent_t e))

static struct {
#define HIP_FN_FIELD(name, params) hipError_t(*name) params;
  HIP_FUNCTIONS(HIP_FN_FIELD)
#undef HIP_FN_FIELD
} hip;

/* The shim and old runtimes have only hipStreamCreate. */
static hipError_t (*hip_stream_create)(hipStream_t *s);

bp_status_t gpu_open(void) {
  const char *env = nccl_host->getenv("BACKPLANE_HIP_RUNTIME");
  const char *name = env && env[0] ? env : "libamdhip64.so";
  void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *e = dlerror();
    nccl_host->set_error("%s not found (%s)", name, e ? e : "dlopen failed");
    return BP_ERR_UNAVAILABLE;
  }
  *(void **)&hip_stream_create = dlsym(dl, "hipStreamCreate");
#define HIP_FN_RESOLVE(fn, params)                                                               \
  if (!(*(void **)&hip.fn = dlsym(dl, #fn)) && strcmp(#fn, "hipStreamCreateWithFlags")) {        \
    nccl_host->set_error("%s has no %s", name, #fn);                                             \
    return BP_ERR_UNAVAILABLE;                                                                   \
  }
  HIP_FUNCTIONS(HIP_FN_RESOLVE)
#undef HIP_FN_RESOLVE
  if (!hip.hipStreamCreateWithFlags && !hip_stream_create) {
    nccl_host->set_error("%s has no hipStreamCreate", name);
    return BP_ERR_UNAVAILABLE;
  }
  return BP_OK;
}

int gpu_device_count(void) {
  int n = 0;
  return hip.hipInit(0) == hipSuccess && hip.hipGetDeviceCount(&n) == hipSuccess ? n : 0;
}

void gpu_enter(const gpu_side_t *g) { hip.hipSetDevice(g->ordinal); }
void gpu_leave(const gpu_side_t *g) { (void)g; }

bp_status_t gpu_attach(gpu_side_t *g, int ordinal) {
  g->ordinal = ordinal;
  g->ctx = g; /* attached */
  gpu_enter(g);
  void *p = NULL;
  bool ok = (hip.hipStreamCreateWithFlags ? hip.hipStreamCreateWithFlags(&g->stream, hipStreamNonBlocking)
                                          : hip_stream_create(&g->stream)) == hipSuccess &&
            hip.hipMalloc(&p, sizeof(float)) == hipSuccess && hip.hipEventCreate(&g->done) == hipSuccess;
  g->scratch = (uint64_t)(uintptr_t)p;
  if (!ok) nccl_host->set_error("cannot create a stream, an event or a scratch word on ROCm device %d", ordinal);
  return ok ? BP_OK : BP_ERR_UNAVAILABLE;
}

void gpu_detach(gpu_side_t *g) {
  if (!g->ctx) return;
  gpu_enter(g);
  if (g->scratch) hip.hipFree((void *)(uintptr_t)g->scratch);
  if (g->stream) hip.hipStreamDestroy(g->stream);
  if (g->done) hip.hipEventDestroy(g->done);
  g->ctx = NULL;
}

int gpu_query(const gpu_side_t *g) {
  hipError_t r = hip.hipStreamQuery(g->stream);
  return r == hipSuccess ? 0 : r == hipErrorNotReady ? 1 : -r;
}
int gpu_event_record(const gpu_side_t *g, void *stream) {
  hipError_t r = hip.hipEventRecord(g->done, stream);
  return r == hipSuccess ? 0 : -r;
}

int gpu_event_query(const gpu_side_t *g) {
  hipError_t r = hip.hipEventQuery(g->done);
  return r == hipSuccess ? 0 : r == hipErrorNotReady ? 1 : -r;
}
#endif /* BP_COMM_RCCL */
