/*
 * driver.c — the ROCm side of the runtime load (plugins/gpu/driver.c does
 * the rest): the entry-point table, opening the HIP runtime and hiprtc,
 * reading gcnArchName, and hipError_t -> backplane status.
 *
 * The plugin never links against ROCm: a machine without it must still load
 * backend-rocm.so and get a clean "ROCm runtime not found" from probe.
 * BACKPLANE_HIP_RUNTIME and BACKPLANE_HIPRTC (read through the host's secure
 * getenv, so ignored in setuid programs) name other files to open instead;
 * the test suite points them at the CPU shims.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "plugins/gpu/gpu.h"

hip_runtime_t rocm_rt;

/* hipGetErrorName / hipGetErrorString are entry points like any other. */
const char *gpu_error_name(hipError_t r) {
  return rocm_rt.hipGetErrorName ? rocm_rt.hipGetErrorName(r) : NULL;
}

const char *gpu_error_string(hipError_t r) {
  return rocm_rt.hipGetErrorString ? rocm_rt.hipGetErrorString(r) : NULL;
}

/* hiprtc may live in the runtime's own library (load_rtc). */
void gpu_driver_close_extra(void) {
  if (rocm_rt.rtc_handle && rocm_rt.rtc_handle != rocm_rt.handle) dlclose(rocm_rt.rtc_handle);
}

/* Sonames in order of preference: ROCm 6, ROCm 5, then the unversioned
 * development link. */
static const char *const runtime_names[] = {"libamdhip64.so.6", "libamdhip64.so.5",
                                            "libamdhip64.so"};
static const char *const rtc_names[] = {"libhiprtc.so.6", "libhiprtc.so.5", "libhiprtc.so"};

/* dlopens the override, or the first of names that opens; path gets the
 * name opened. */
static void *open_first(const char *override, const char *const *names, size_t count, char *path,
                        size_t cap) {
  if (override) {
    snprintf(path, cap, "%s", override);
    return dlopen(override, RTLD_NOW | RTLD_LOCAL);
  }
  for (size_t i = 0; i < count; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      snprintf(path, cap, "%s", names[i]);
      return h;
    }
  }
  return NULL;
}

void *gpu_driver_open(void) {
  const char *override = gpu_env("BACKPLANE_HIP_RUNTIME");
  void *h = open_first(override, runtime_names, 3, rocm_rt.path, sizeof rocm_rt.path);
  if (!h)
    gpu_driver_fail(BP_ERR_UNAVAILABLE, "ROCm runtime not found (%s)",
                    override ? override : "libamdhip64.so");
  return h;
}

/* All of hiprtc from h, or none of it (a partial table is never left). */
static bool resolve_rtc(void *h, const char **out_missing) {
#define HIP__RESOLVE(field, sym, ret, params)                                                      \
  *(void **)(&rocm_rt.field) = dlsym(h, sym);                                                      \
  if (!rocm_rt.field) {                                                                            \
    *out_missing = sym;                                                                            \
    goto fail;                                                                                     \
  }
  HIPRTC_ENTRY_POINTS(HIP__RESOLVE)
#undef HIP__RESOLVE
  return true;
fail:;
#define HIP__CLEAR(field, sym, ret, params) rocm_rt.field = NULL;
  HIPRTC_ENTRY_POINTS(HIP__CLEAR)
#undef HIP__CLEAR
  return false;
}

/* hiprtc: its own library since ROCm 5.3, inside libamdhip64 before. A
 * missing compiler leaves the device listed without ops (see probe). */
static void load_rtc(void) {
  const char *missing = NULL;
  const char *override = gpu_env("BACKPLANE_HIPRTC");
  void *h = open_first(override, rtc_names, 3, rocm_rt.rtc_path, sizeof rocm_rt.rtc_path);
  if (h && resolve_rtc(h, &missing)) {
    rocm_rt.rtc_handle = h;
    return;
  }
  if (h) {
    dlclose(h);
    snprintf(rocm_rt.rtc_reason, sizeof rocm_rt.rtc_reason, "%s lacks %s", rocm_rt.rtc_path,
             missing);
    return;
  }
  if (!override && resolve_rtc(rocm_rt.handle, &missing)) {
    rocm_rt.rtc_handle = rocm_rt.handle;
    snprintf(rocm_rt.rtc_path, sizeof rocm_rt.rtc_path, "%s", rocm_rt.path);
    return;
  }
  snprintf(rocm_rt.rtc_reason, sizeof rocm_rt.rtc_reason, "hiprtc not found (%s)",
           override ? override : "libhiprtc.so");
}

bp_status_t gpu_driver_before_init(void *h) {
  (void)h; /* no version floor: a missing entry point says "too old" */
  return BP_OK;
}

void gpu_driver_after_init(void) {
  rocm_rt.hipDriverGetVersion(&rocm_rt.driver_version);
  rocm_rt.hipRuntimeGetVersion(&rocm_rt.runtime_version);
  load_rtc();
}

void rocm_arch_name(int ordinal, char *out, size_t cap) {
  /* Aligned storage larger than either layout of hipDeviceProp_t. */
  static _Thread_local union {
    char bytes[HIP_PROPS_BUFFER_BYTES];
    hip_props_r0600_prefix_t r0600;
  } props;
  memset(&props, 0, sizeof props);
  const char *arch = NULL;
  if (rocm_rt.hipGetDevicePropertiesR0600 &&
      rocm_rt.hipGetDevicePropertiesR0600(&props, ordinal) == hipSuccess)
    arch = props.r0600.gcnArchName;
  else if (rocm_rt.hipGetDeviceProperties(&props, ordinal) == hipSuccess)
    arch = props.bytes + HIP_PROPS_R0000_ARCH_OFFSET;
  /* A layout we misread shows up as something other than "gfx...". */
  if (!arch || strncmp(arch, "gfx", 3) != 0) arch = "";
  snprintf(out, cap, "%.*s", (int)strnlen(arch, 255), arch);
}

/* The status a hipError_t means to an application; kept apart from the
 * CUDA mapping on purpose (see plugins/cuda/driver.c). */
bp_status_t gpu_status_of(hipError_t r) {
  switch (r) {
  case hipSuccess:
    return BP_OK;
  case hipErrorInvalidValue:
  case hipErrorInvalidHandle:
    return BP_ERR_INVALID_ARGUMENT;
  case hipErrorOutOfMemory:
    return BP_ERR_OUT_OF_MEMORY;
  case hipErrorNotInitialized:
  case hipErrorDeinitialized:
  case hipErrorNoDevice:
  case hipErrorInvalidDevice:
  case hipErrorInsufficientDriver:
    return BP_ERR_UNAVAILABLE;
  case hipErrorNoBinaryForGpu:
  case hipErrorInvalidImage:
  case hipErrorInvalidKernelFile:
  case hipErrorSharedObjectInitFailed:
    return BP_ERR_INCOMPATIBLE;
  case hipErrorNotSupported:
  case hipErrorStreamCaptureUnsupported:
  case hipErrorStreamCaptureInvalidated:
  case hipErrorStreamCaptureImplicit:
  case hipErrorStreamCaptureWrongThread:
    return BP_ERR_UNSUPPORTED; /* the core replays the graph instead */
  case hipErrorNotFound:
  case hipErrorInvalidDeviceFunction:
    return BP_ERR_NOT_FOUND;
  case hipErrorNotReady:
    return BP_ERR_BUSY;
  case hipErrorLaunchTimeOut:
    return BP_ERR_TIMEOUT;
  case hipErrorIllegalAddress:
  case hipErrorLaunchFailure:
    /* Sticky errors: the device is unusable from here on. */
    return BP_ERR_DEVICE_LOST;
  default:
    return BP_ERR_INTERNAL;
  }
}
