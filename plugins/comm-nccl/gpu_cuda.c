/*
 * gpu_cuda.c — gpu.h over the CUDA driver API (libcuda.so.1 through
 * dlopen), for comm-nccl.so: the device's primary context (the one the
 * CUDA backend uses), pushed around each call, and a non-blocking stream.
 */
#ifndef BP_COMM_RCCL
#include <dlfcn.h>
#include <stddef.h>

#include "gpu.h"
#include "nccl_lib.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600
#define CU_STREAM_NON_BLOCKING 1
#define CU_EVENT_DISABLE_TIMING 2

/* (field, exported symbol, parameters): the symbols the CUDA backend uses
 * too (plugins/cuda/cuda_driver.h), _v2 where the driver has one. */
#define CUDA_FUNCTIONS(X)                                                                          \
  X(cuInit, "cuInit", (unsigned flags))                                                           \
  X(cuDeviceGetCount, "cuDeviceGetCount", (int *count))                                           \
  X(cuDeviceGet, "cuDeviceGet", (CUdevice * dev, int ordinal))                                    \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext * ctx, CUdevice dev))        \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice dev))                    \
  X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", (CUcontext ctx))                                     \
  X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", (CUcontext * ctx))                                     \
  X(cuStreamCreate, "cuStreamCreate", (CUstream * s, unsigned flags))                             \
  X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream s))                                          \
  X(cuStreamQuery, "cuStreamQuery", (CUstream s))                                                 \
  X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr * p, size_t size))                                  \
  X(cuMemFree, "cuMemFree_v2", (CUdeviceptr p))                                                   \
  X(cuEventCreate, "cuEventCreate", (CUevent * e, unsigned flags))                                \
  X(cuEventRecord, "cuEventRecord", (CUevent e, CUstream s))                                      \
  X(cuEventQuery, "cuEventQuery", (CUevent e))                                                    \
  X(cuEventDestroy, "cuEventDestroy_v2", (CUevent e))

static struct {
#define CUDA_FN_FIELD(field, symbol, params) CUresult(*field) params;
  CUDA_FUNCTIONS(CUDA_FN_FIELD)
#undef CUDA_FN_FIELD
} cu;

bp_status_t gpu_open(void) {
  const char *env = nccl_host->getenv("BACKPLANE_CUDA_DRIVER");
  const char *name = env && env[0] ? env : "libcuda.so.1";
  void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *e = dlerror();
    nccl_host->set_error("%s not found (%s)", name, e ? e : "dlopen failed");
    return BP_ERR_UNAVAILABLE;
  }
#define CUDA_FN_RESOLVE(field, symbol, params)                                                   \
  if (!(*(void **)&cu.field = dlsym(dl, symbol))) {                                              \
    nccl_host->set_error("%s has no %s", name, symbol);                                          \
    return BP_ERR_UNAVAILABLE;                                                                   \
  }
  CUDA_FUNCTIONS(CUDA_FN_RESOLVE)
#undef CUDA_FN_RESOLVE
  return BP_OK;
}

int gpu_device_count(void) {
  int n = 0;
  return cu.cuInit(0) == CUDA_SUCCESS && cu.cuDeviceGetCount(&n) == CUDA_SUCCESS ? n : 0;
}

void gpu_enter(const gpu_side_t *g) { cu.cuCtxPushCurrent(g->ctx); }

void gpu_leave(const gpu_side_t *g) {
  CUcontext popped;
  (void)g;
  cu.cuCtxPopCurrent(&popped);
}

bp_status_t gpu_attach(gpu_side_t *g, int ordinal) {
  CUdevice dev;
  g->ordinal = ordinal;
  if (cu.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS || cu.cuDevicePrimaryCtxRetain(&g->ctx, dev) != CUDA_SUCCESS) {
    g->ctx = NULL;
    nccl_host->set_error("cannot retain the primary context of CUDA device %d", ordinal);
    return BP_ERR_UNAVAILABLE;
  }
  gpu_enter(g);
  CUdeviceptr p = 0;
  bool ok = cu.cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS &&
            cu.cuMemAlloc(&p, sizeof(float)) == CUDA_SUCCESS &&
            cu.cuEventCreate(&g->done, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS;
  g->scratch = p;
  gpu_leave(g);
  if (!ok) nccl_host->set_error("cannot create a stream, an event or a scratch word on CUDA device %d", ordinal);
  return ok ? BP_OK : BP_ERR_UNAVAILABLE;
}

void gpu_detach(gpu_side_t *g) {
  if (!g->ctx) return;
  gpu_enter(g);
  if (g->scratch) cu.cuMemFree(g->scratch);
  if (g->stream) cu.cuStreamDestroy(g->stream);
  if (g->done) cu.cuEventDestroy(g->done);
  gpu_leave(g);
  CUdevice dev;
  if (cu.cuDeviceGet(&dev, g->ordinal) == CUDA_SUCCESS) cu.cuDevicePrimaryCtxRelease(dev);
  g->ctx = NULL;
}

int gpu_query(const gpu_side_t *g) {
  CUresult r = cu.cuStreamQuery(g->stream);
  return r == CUDA_SUCCESS ? 0 : r == CUDA_ERROR_NOT_READY ? 1 : -r;
}
int gpu_event_record(const gpu_side_t *g, void *stream) {
  CUresult r = cu.cuEventRecord(g->done, stream);
  return r == CUDA_SUCCESS ? 0 : -r;
}

int gpu_event_query(const gpu_side_t *g) {
  CUresult r = cu.cuEventQuery(g->done);
  return r == CUDA_SUCCESS ? 0 : r == CUDA_ERROR_NOT_READY ? 1 : -r;
}
#endif /* !BP_COMM_RCCL */
