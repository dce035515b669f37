/*
 * driver.c — the shim's driver entry points: devices, contexts, memory,
 * copies, streams, events, modules, launches. See shim.h for what the shim
 * is and is not.
 *
 * Environment (read at each call, so one test binary can vary it):
 *   BP_CUDA_SHIM_DEVICES   device count (default 1)
 *   BP_CUDA_SHIM_CC        compute capability as major*10+minor (default 80)
 *   BP_CUDA_SHIM_MEM       bytes of "device" memory per device (default 1 GiB)
 *   BP_CUDA_SHIM_DRIVER    cuDriverGetVersion value (default 13000)
 *   BP_CUDA_SHIM_FAIL      comma-separated failures to inject: init, alloc,
 *                          launch, module, memcpy, event
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test/shims/cuda/shim.h"


static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool initialised;
bp_cuda_shim_stats_t shim_stats;
#define stats shim_stats

SHIM_DEFINE_REPORT("cuda-shim")

bool shim_fail(const char *what) {
  return shim_env_has("BP_CUDA_SHIM_FAIL", what);
}

#define env_long shim_env_long

/* ---- contexts ------------------------------------------------------------ */

#define MAX_DEVICES 8
#define CTX_STACK 16
struct CUctx_st {
  int device;
  int refs;
};
static struct CUctx_st primary[MAX_DEVICES];
static _Thread_local CUcontext ctx_stack[CTX_STACK];
static _Thread_local int ctx_depth;

static int device_count(void) {
  return shim_env_devices("BP_CUDA_SHIM_DEVICES", MAX_DEVICES);
}

/* Calls that act on "the current context" fail without one, as the real
 * driver's do: this catches a plugin entry point that forgot its push. */
static bool have_ctx(const char *fn) {
  if (ctx_depth > 0 && ctx_stack[ctx_depth - 1]->refs > 0)
    return true;
  shim_report("%s called with no current context", fn);
  return false;
}

bool shim_have_ctx(const char *fn) {
  if (!initialised) {
    shim_report("%s called before cuInit", fn);
    return false;
  }
  return have_ctx(fn);
}

#define NEED_INIT()                                                            \
  do {                                                                         \
    if (!initialised)                                                          \
      return CUDA_ERROR_NOT_INITIALIZED;                                       \
  } while (0)
#define NEED_CTX()                                                             \
  do {                                                                         \
    NEED_INIT();                                                               \
    if (!have_ctx(__func__))                                                   \
      return SHIM_INVALID_CONTEXT;                                             \
  } while (0)

static const shim_error_t errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
     "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
     "device kernel image is invalid"},
    {SHIM_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
     "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED",
     "unspecified launch failure"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
};

/* Unknown codes: CUDA_ERROR_INVALID_VALUE and NULL, as the driver does. */
CUresult cuGetErrorName(CUresult r, const char **out) {
  const shim_error_t *e =
      shim_error_find(errors, sizeof errors / sizeof errors[0], r);
  *out = e ? e->name : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char **out) {
  const shim_error_t *e =
      shim_error_find(errors, sizeof errors / sizeof errors[0], r);
  *out = e ? e->desc : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuInit(unsigned flags) {
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (shim_fail("init") || device_count() == 0)
    return CUDA_ERROR_NO_DEVICE;
  initialised = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
  *v = (int)env_long("BP_CUDA_SHIM_DRIVER", 13000);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
  NEED_INIT();
  *n = device_count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  NEED_INIT();
  if (ordinal < 0 || ordinal >= device_count())
    return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}

#define CHECK_DEV(d)                                                           \
  do {                                                                         \
    NEED_INIT();                                                               \
    if ((d) < 0 || (d) >= device_count())                                      \
      return CUDA_ERROR_INVALID_DEVICE;                                        \
  } while (0)

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  CHECK_DEV(d);
  snprintf(name, (size_t)len, "backplane CUDA shim %d (CPU)", d);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
  CHECK_DEV(d);
  long cc = env_long("BP_CUDA_SHIM_CC", 80);
  switch (attr) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = (int)(cc / 10); break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = (int)(cc % 10); break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 4; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1000000; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 1000000; break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 256; break;
  case CU_DEVICE_ATTRIBUTE_INTEGRATED: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 * 1024; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = 1; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

static uint64_t total_mem(void) {
  return (uint64_t)env_long("BP_CUDA_SHIM_MEM", 1L << 30);
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) {
  CHECK_DEV(d);
  *bytes = total_mem();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d) {
  CHECK_DEV(d);
  snprintf(id, (size_t)len, "0000:%02X:00.0", 0x0A + d);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) {
  CHECK_DEV(d);
  for (int i = 0; i < 16; i++)
    u->bytes[i] = (char)(0x10 * d + i);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  CHECK_DEV(d);
  pthread_mutex_lock(&lock);
  primary[d].device = d;
  primary[d].refs++;
  stats.primary_ctx_refs++;
  pthread_mutex_unlock(&lock);
  *c = &primary[d];
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
  CHECK_DEV(d);
  pthread_mutex_lock(&lock);
  CUresult r = CUDA_SUCCESS;
  if (primary[d].refs <= 0) {
    shim_report("cuDevicePrimaryCtxRelease(%d) without a retain", d);
    r = SHIM_INVALID_CONTEXT;
  } else {
    primary[d].refs--;
    stats.primary_ctx_refs--;
  }
  pthread_mutex_unlock(&lock);
  return r;
}

CUresult cuCtxPushCurrent(CUcontext c) {
  NEED_INIT();
  if (!c || c->refs <= 0) {
    shim_report("cuCtxPushCurrent of a context not retained");
    return SHIM_INVALID_CONTEXT;
  }
  if (ctx_depth == CTX_STACK) {
    shim_report("context stack overflow: pushes without pops");
    return CUDA_ERROR_INVALID_VALUE;
  }
  ctx_stack[ctx_depth++] = c;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *c) {
  NEED_INIT();
  if (ctx_depth == 0) {
    shim_report("cuCtxPopCurrent with an empty context stack");
    return SHIM_INVALID_CONTEXT;
  }
  CUcontext top = ctx_stack[--ctx_depth];
  if (c)
    *c = top;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  NEED_CTX();
  CUresult r = shim_capture_unsafe(__func__);
  if (r == CUDA_SUCCESS)
    r = shim_capture_legacy(__func__);
  return r; /* all work already ran synchronously */
}

void bp_cuda_shim_stats(bp_cuda_shim_stats_t *out) {
  pthread_mutex_lock(&lock);
  *out = stats;
  pthread_mutex_unlock(&lock);
  out->ctx_depth = ctx_depth;
  out->graphs = shim_graphs_live();
  shim_heap_usage(&out->allocations, &out->bytes_in_use);
  shim_streams_live(&out->streams, &out->events);
}

/* ---- memory -------------------------------------------------------------- */

static CUresult mem_alloc(CUdeviceptr *p, size_t size);

CUresult cuMemAlloc(CUdeviceptr *p, size_t size) {
  NEED_CTX();
  *p = 0;
  CUresult r = shim_capture_unsafe(__func__);
  return r ? r : mem_alloc(p, size);
}

static CUresult mem_alloc(CUdeviceptr *p, size_t size) {
  *p = 0;
  if (size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (shim_fail("alloc"))
    return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t ptr;
  if (!shim_heap_alloc(size, total_mem(), &ptr))
    return CUDA_ERROR_OUT_OF_MEMORY;
  *p = ptr;
  return CUDA_SUCCESS;
}

/* Page-locked memory is plain memory here; the shim only checks the context
 * and counts blocks so a leak shows in the statistics. */
CUresult cuMemHostAlloc(void **p, size_t size, unsigned flags) {
  NEED_CTX();
  (void)flags;
  if (!p || size == 0) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = shim_capture_unsafe(__func__);
  if (r) return r;
  if (shim_fail("alloc")) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = aligned_alloc(256, (size + 255) / 256 * 256);
  if (!*p) return CUDA_ERROR_OUT_OF_MEMORY;
  __atomic_add_fetch(&stats.host_blocks, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *p) {
  NEED_CTX();
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = shim_capture_unsafe(__func__);
  if (r) return r;
  __atomic_sub_fetch(&stats.host_blocks, 1, __ATOMIC_RELAXED);
  free(p);
  return CUDA_SUCCESS;
}

static CUresult mem_free(CUdeviceptr p);

/* cuMemFree synchronises with the device: unsafe, and legacy-stream work. */
CUresult cuMemFree(CUdeviceptr p) {
  NEED_CTX();
  CUresult r = shim_capture_unsafe(__func__);
  if (r == CUDA_SUCCESS)
    r = shim_capture_legacy(__func__);
  return r ? r : mem_free(p);
}

static CUresult mem_free(CUdeviceptr p) {
  return shim_heap_free(p, "cuMemFree") ? CUDA_SUCCESS
                                        : CUDA_ERROR_INVALID_VALUE;
}

/* Stream-ordered allocation is recorded as an allocation node by the real
 * driver; the shim does not model those, and the plugin never allocates in
 * a capture: it is refused. */
CUresult cuMemAllocAsync(CUdeviceptr *p, size_t size, CUstream s) {
  NEED_CTX();
  CUresult r = (CUresult)shim_stream_use(s, __func__);
  if (r == CUDA_SUCCESS && shim_stream_capture(s))
    r = (CUresult)shim_capture_sync(shim_stream_state(s), __func__);
  return r ? r : mem_alloc(p, size);
}

CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  NEED_CTX();
  CUresult r = (CUresult)shim_stream_use(s, __func__);
  if (r == CUDA_SUCCESS && shim_stream_capture(s))
    r = (CUresult)shim_capture_sync(shim_stream_state(s), __func__);
  return r ? r : mem_free(p);
}

/* Copies: test/shims/common/streams.c (the synchronous ones are legacy-
 * stream work). */
#define COPY(dst, dst_dev, src, src_dev, n, s, sync)                           \
  (CUresult) shim_stream_copy((uint64_t)(uintptr_t)(dst), dst_dev,             \
                              (uint64_t)(uintptr_t)(src), src_dev, n, s, sync, \
                              shim_fail("memcpy"), __func__)

CUresult cuMemcpyHtoD(CUdeviceptr d, const void *h, size_t n) {
  NEED_CTX();
  return COPY(d, true, h, false, n, NULL, true);
}
CUresult cuMemcpyDtoH(void *h, CUdeviceptr d, size_t n) {
  NEED_CTX();
  return COPY(h, false, d, true, n, NULL, true);
}
CUresult cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) {
  NEED_CTX();
  return COPY(d, true, s, true, n, NULL, true);
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s) {
  NEED_CTX();
  return COPY(d, true, h, false, n, s, false);
}
CUresult cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream s) {
  NEED_CTX();
  return COPY(h, false, d, true, n, s, false);
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s) {
  NEED_CTX();
  return COPY(d, true, src, true, n, s, false);
}

/* ---- streams and events: test/shims/common/streams.c ------------------ */

CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  NEED_CTX();
  (void)flags; /* every stream is synchronous here */
  return (CUresult)shim_stream_create((void **)s);
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  NEED_CTX();
  (void)flags;
  return (CUresult)shim_event_wait(s, e, __func__);
}

CUresult cuEventCreate(CUevent *e, unsigned flags) {
  NEED_CTX();
  (void)flags;
  return (CUresult)shim_event_create((void **)e, shim_fail("event"));
}

/* What the HIP shim defines alike (the stream and event calls of the same
 * parameters, cuMemGetInfo). */
#define SHIM_R CUresult
#define SHIM_OK CUDA_SUCCESS
#define SHIM_FN(x) cu##x
#define SHIM_STREAM_T CUstream
#define SHIM_EVENT_T CUevent
#define SHIM_NEED() NEED_CTX()
#include "test/shims/common/api.inc"
