/*
 * runtime.c — the shim's HIP runtime entry points: devices, memory, copies,
 * streams, events. Modules and launches are in module.c. See shim.h.
 *
 * Environment (read at each call, so one test binary can vary it):
 *   BP_HIP_SHIM_DEVICES    device count (default 1)
 *   BP_HIP_SHIM_ARCH       gcnArchName (default gfx90a:sramecc+:xnack-)
 *   BP_HIP_SHIM_PROPS      "r0000": hipGetDevicePropertiesR0600 fails, as
 *                          on ROCm 5 where only the old layout exists
 *   BP_HIP_SHIM_INTEGRATED 1: an APU
 *   BP_HIP_SHIM_MEM        bytes of "device" memory (default 1 GiB)
 *   BP_HIP_SHIM_FAIL       failures to inject (shim.h)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test/shims/common/env.h"
#include "test/shims/hip/shim.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool initialised;
static _Thread_local int current = -1; /* hipSetDevice of this thread */
bp_hip_shim_stats_t shim_hip_stats;
#define stats shim_hip_stats
#define MAX_DEVICES 8

#define env_long shim_env_long

static int device_count(void) {
  return shim_env_devices("BP_HIP_SHIM_DEVICES", MAX_DEVICES);
}

/* Device calls without hipSetDevice on the calling thread would act on
 * whatever device the thread last used: a plugin entry point that forgot
 * its rocm_enter. */
bool shim_have_device(const char *fn) {
  if (!initialised) {
    shim_report("%s called before hipInit", fn);
    return false;
  }
  if (current < 0) {
    shim_report("%s called on a thread that never called hipSetDevice", fn);
    return false;
  }
  return true;
}

#define NEED_DEVICE()                                                          \
  do {                                                                         \
    if (!shim_have_device(__func__))                                           \
      return hipErrorInvalidDevice;                                            \
  } while (0)
#define CHECK_DEV(d)                                                           \
  do {                                                                         \
    if (!initialised)                                                          \
      return hipErrorNotInitialized;                                           \
    if ((d) < 0 || (d) >= device_count())                                      \
      return hipErrorInvalidDevice;                                            \
  } while (0)

static const shim_error_t errors[] = {
    {hipSuccess, "hipSuccess", "no error"},
    {hipErrorInvalidValue, "hipErrorInvalidValue", "invalid argument"},
    {hipErrorOutOfMemory, "hipErrorOutOfMemory", "out of memory"},
    {hipErrorNotInitialized, "hipErrorNotInitialized", "initialization error"},
    {hipErrorNoDevice, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {hipErrorInvalidDevice, "hipErrorInvalidDevice", "invalid device ordinal"},
    {hipErrorInvalidImage, "hipErrorInvalidImage", "device kernel image is invalid"},
    {hipErrorInvalidHandle, "hipErrorInvalidHandle", "invalid resource handle"},
    {hipErrorNotFound, "hipErrorNotFound", "named symbol not found"},
    {hipErrorNotSupported, "hipErrorNotSupported", "operation not supported"},
    {hipErrorLaunchFailure, "hipErrorLaunchFailure", "unspecified launch failure"},
    {hipErrorIllegalAddress, "hipErrorIllegalAddress",
     "an illegal memory access was encountered"},
};

/* Unknown codes have a name and a description, as in the HIP runtime. */
const char *hipGetErrorName(hipError_t r) {
  const shim_error_t *e =
      shim_error_find(errors, sizeof errors / sizeof errors[0], r);
  return e ? e->name : "hipErrorUnknown";
}

const char *hipGetErrorString(hipError_t r) {
  const shim_error_t *e =
      shim_error_find(errors, sizeof errors / sizeof errors[0], r);
  return e ? e->desc : "unknown error";
}

hipError_t hipInit(unsigned flags) {
  if (flags != 0)
    return hipErrorInvalidValue;
  if (shim_hip_fail("init") || device_count() == 0)
    return hipErrorNoDevice;
  initialised = true;
  return hipSuccess;
}

hipError_t hipDriverGetVersion(int *v) {
  *v = 60241133; /* ROCm 6.2 */
  return hipSuccess;
}

hipError_t hipRuntimeGetVersion(int *v) {
  *v = 60241134;
  return hipSuccess;
}

hipError_t hipGetDeviceCount(int *n) {
  if (!initialised)
    return hipErrorNotInitialized;
  *n = device_count();
  return *n ? hipSuccess : hipErrorNoDevice;
}

hipError_t hipDeviceGetAttribute(int *v, int attr, int d) {
  CHECK_DEV(d);
  switch (attr) {
  case hipDeviceAttributeClockRate: *v = 1700000; break;
  case hipDeviceAttributeIntegrated:
    *v = (int)env_long("BP_HIP_SHIM_INTEGRATED", 0); break;
  case hipDeviceAttributeMaxThreadsPerBlock: *v = 1024; break;
  case hipDeviceAttributeMemoryBusWidth: *v = 4096; break;
  case hipDeviceAttributeMemoryClockRate: *v = 1600000; break;
  case hipDeviceAttributeMultiprocessorCount: *v = 104; break;
  case hipDeviceAttributeMaxSharedMemoryPerBlock: *v = 65536; break;
  case hipDeviceAttributeWarpSize: *v = 64; break;
  default: return hipErrorInvalidValue;
  }
  return hipSuccess;
}

hipError_t hipDeviceGetName(char *name, int len, int d) {
  CHECK_DEV(d);
  snprintf(name, (size_t)len, "backplane HIP shim %d (CPU)", d);
  return hipSuccess;
}

hipError_t hipDeviceGetPCIBusId(char *id, int len, int d) {
  CHECK_DEV(d);
  snprintf(id, (size_t)len, "0000:%02X:00.0", 0xC1 + d);
  return hipSuccess;
}

static uint64_t total_mem(void) {
  return (uint64_t)env_long("BP_HIP_SHIM_MEM", 1L << 30);
}

hipError_t hipDeviceTotalMem(size_t *bytes, int d) {
  CHECK_DEV(d);
  *bytes = total_mem();
  return hipSuccess;
}

hipError_t hipDeviceGetUuid(hipUUID *u, int d) {
  CHECK_DEV(d);
  memcpy(u->bytes, "5a1b2c3d4e5f6a7b", 16);
  u->bytes[15] = (char)('0' + d);
  return hipSuccess;
}

static const char *arch(void) {
  const char *a = getenv("BP_HIP_SHIM_ARCH");
  return a ? a : "gfx90a:sramecc+:xnack-";
}

/* The two layouts of hipDeviceProp_t, written as the real runtimes do:
 * the whole struct, here only the name and gcnArchName (see the plugin's
 * hip_runtime.h for the offsets). */
hipError_t hipGetDeviceProperties(void *props, int d) {
  CHECK_DEV(d);
  memset(props, 0, 792); /* sizeof(hipDeviceProp_t) in ROCm 5.2 */
  snprintf(props, 256, "backplane HIP shim %d (CPU)", d);
  snprintf((char *)props + HIP_PROPS_R0000_ARCH_OFFSET, 256, "%s", arch());
  return hipSuccess;
}

hipError_t hipGetDevicePropertiesR0600(void *props, int d) {
  CHECK_DEV(d);
  const char *p = getenv("BP_HIP_SHIM_PROPS");
  if (p && strcmp(p, "r0000") == 0)
    return hipErrorNotSupported;
  hip_props_r0600_prefix_t *r = props;
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "backplane HIP shim %d (CPU)", d);
  snprintf(r->gcnArchName, sizeof r->gcnArchName, "%s", arch());
  return hipSuccess;
}

hipError_t hipSetDevice(int d) {
  CHECK_DEV(d);
  current = d;
  return hipSuccess;
}

hipError_t hipDeviceSynchronize(void) {
  NEED_DEVICE();
  hipError_t r = shim_capture_unsafe(__func__);
  if (r == hipSuccess)
    r = shim_capture_legacy(__func__);
  return r; /* all work already ran synchronously */
}

void bp_hip_shim_stats(bp_hip_shim_stats_t *out) {
  pthread_mutex_lock(&lock);
  *out = stats;
  pthread_mutex_unlock(&lock);
  out->graphs = shim_graphs_live();
  shim_heap_usage(&out->allocations, &out->bytes_in_use);
  shim_streams_live(&out->streams, &out->events);
}

/* ---- memory -------------------------------------------------------------- */

hipError_t hipMalloc(void **p, size_t size) {
  NEED_DEVICE();
  *p = NULL;
  hipError_t unsafe = shim_capture_unsafe(__func__);
  if (unsafe)
    return unsafe;
  if (shim_hip_fail("alloc"))
    return hipErrorOutOfMemory;
  if (size == 0)
    return hipSuccess; /* HIP returns a null pointer for 0 bytes */
  uint64_t ptr;
  if (!shim_heap_alloc(size, total_mem(), &ptr))
    return hipErrorOutOfMemory;
  *p = (void *)(uintptr_t)ptr;
  return hipSuccess;
}

/* hipFree waits for the device: unsafe, and null-stream work. */
hipError_t hipFree(void *p) {
  NEED_DEVICE();
  hipError_t unsafe = shim_capture_unsafe(__func__);
  if (unsafe == hipSuccess)
    unsafe = shim_capture_legacy(__func__);
  if (unsafe)
    return unsafe;
  if (!p)
    return hipSuccess;
  return shim_heap_free((uint64_t)(uintptr_t)p, "hipFree") ? hipSuccess
                                                           : hipErrorInvalidValue;
}

/* Copies: test/shims/common/streams.c. Any copy on the null stream waits
 * for the device here, so it counts as a synchronous one. */
#define COPY(dst, dst_dev, src, src_dev, n, s)                                 \
  (hipError_t) shim_stream_copy((uint64_t)(uintptr_t)(dst), dst_dev,           \
                                (uint64_t)(uintptr_t)(src), src_dev, n, s,     \
                                (s) == NULL, shim_hip_fail("memcpy"),          \
                                __func__)

hipError_t hipMemcpyHtoD(hipDeviceptr_t d, void *h, size_t n) {
  NEED_DEVICE();
  return COPY(d, true, h, false, n, NULL);
}
hipError_t hipMemcpyDtoH(void *h, hipDeviceptr_t d, size_t n) {
  NEED_DEVICE();
  return COPY(h, false, d, true, n, NULL);
}
hipError_t hipMemcpyDtoD(hipDeviceptr_t d, hipDeviceptr_t s, size_t n) {
  NEED_DEVICE();
  return COPY(d, true, s, true, n, NULL);
}
hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t d, void *h, size_t n,
                              hipStream_t s) {
  NEED_DEVICE();
  return COPY(d, true, h, false, n, s);
}
hipError_t hipMemcpyDtoHAsync(void *h, hipDeviceptr_t d, size_t n,
                              hipStream_t s) {
  NEED_DEVICE();
  return COPY(h, false, d, true, n, s);
}
hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t d, hipDeviceptr_t src, size_t n,
                              hipStream_t s) {
  NEED_DEVICE();
  return COPY(d, true, src, true, n, s);
}

/* ---- streams and events: test/shims/common/streams.c ------------------ */

hipError_t hipStreamCreate(hipStream_t *s) {
  NEED_DEVICE();
  return (hipError_t)shim_stream_create((void **)s);
}

hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned flags) {
  NEED_DEVICE();
  if (flags != 0)
    return hipErrorInvalidHandle;
  return (hipError_t)shim_event_wait(s, e, __func__);
}

hipError_t hipEventCreate(hipEvent_t *e) {
  NEED_DEVICE();
  return (hipError_t)shim_event_create((void **)e, shim_hip_fail("event"));
}

/* What the CUDA shim defines alike (the stream and event calls of the same
 * parameters, hipMemGetInfo). */
#define SHIM_R hipError_t
#define SHIM_OK hipSuccess
#define SHIM_FN(x) hip##x
#define SHIM_STREAM_T hipStream_t
#define SHIM_EVENT_T hipEvent_t
#define SHIM_NEED() NEED_DEVICE()
#include "test/shims/common/api.inc"
