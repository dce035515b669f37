/*
 * runtime.c — opens the HIP runtime and hiprtc at run time and turns
 * hipError_t into backplane statuses.
 *
 * The plugin never links against ROCm: a machine without it must still load
 * backend-rocm.so and get a clean "ROCm runtime not found" from probe.
 * BACKPLANE_HIP_RUNTIME and BACKPLANE_HIPRTC (read through the host's secure
 * getenv, so ignored in setuid programs) name other files to open instead;
 * the test suite points them at the CPU shims.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plugins/rocm/rocm_plugin.h"

hip_runtime_t rocm_rt;
const bp_host_services_t *rocm_host;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static bool load_done;
static bp_status_t load_status;
static char load_reason[512];

/* Sonames in order of preference: ROCm 6, ROCm 5, then the unversioned
 * development link. */
static const char *const runtime_names[] = {"libamdhip64.so.6",
                                            "libamdhip64.so.5",
                                            "libamdhip64.so"};
static const char *const rtc_names[] = {"libhiprtc.so.6", "libhiprtc.so.5",
                                        "libhiprtc.so"};

void rocm_log(bp_log_level_t level, const char *fmt, ...) {
  if (!rocm_host || !rocm_host->log)
    return;
  char line[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  rocm_host->log(level, ROCM_PLUGIN_NAME, "%s", line);
}

static const char *env(const char *name) {
  const char *v =
      rocm_host && rocm_host->getenv ? rocm_host->getenv(name) : NULL;
  return v && *v ? v : NULL;
}

/* dlopens the override, or the first of names that opens; path gets the
 * name opened. */
static void *open_first(const char *override, const char *const *names,
                        size_t count, char *path, size_t cap) {
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

static bool resolve_runtime(void *h, const char **out_missing) {
#define HIP__RESOLVE(field, sym, ret, params)                                  \
  *(void **)(&rocm_rt.field) = dlsym(h, sym);                                  \
  if (!rocm_rt.field) {                                                        \
    *out_missing = sym;                                                        \
    return false;                                                              \
  }
  HIP_RUNTIME_ENTRY_POINTS(HIP__RESOLVE)
#undef HIP__RESOLVE
#define HIP__RESOLVE_OPT(field, sym, ret, params)                              \
  *(void **)(&rocm_rt.field) = dlsym(h, sym);
  HIP_RUNTIME_OPTIONAL_ENTRY_POINTS(HIP__RESOLVE_OPT)
#undef HIP__RESOLVE_OPT
  return true;
}

/* All of hiprtc from h, or none of it (a partial table is never left). */
static bool resolve_rtc(void *h, const char **out_missing) {
#define HIP__RESOLVE(field, sym, ret, params)                                  \
  *(void **)(&rocm_rt.field) = dlsym(h, sym);                                  \
  if (!rocm_rt.field) {                                                        \
    *out_missing = sym;                                                        \
    goto fail;                                                                 \
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
  const char *override = env("BACKPLANE_HIPRTC");
  void *h = open_first(override, rtc_names, 3, rocm_rt.rtc_path,
                       sizeof rocm_rt.rtc_path);
  if (h && resolve_rtc(h, &missing)) {
    rocm_rt.rtc_handle = h;
    return;
  }
  if (h) {
    dlclose(h);
    snprintf(rocm_rt.rtc_reason, sizeof rocm_rt.rtc_reason, "%s lacks %s",
             rocm_rt.rtc_path, missing);
    return;
  }
  if (!override && resolve_rtc(rocm_rt.handle, &missing)) {
    rocm_rt.rtc_handle = rocm_rt.handle;
    snprintf(rocm_rt.rtc_path, sizeof rocm_rt.rtc_path, "%s", rocm_rt.path);
    return;
  }
  snprintf(rocm_rt.rtc_reason, sizeof rocm_rt.rtc_reason,
           "hiprtc not found (%s)", override ? override : "libhiprtc.so");
}

static bp_status_t fail(bp_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bp_status_t fail(bp_status_t st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(load_reason, sizeof load_reason, fmt, ap);
  va_end(ap);
  return st;
}

/* One attempt at opening and initialising the runtime; closes the handle
 * on every failure. */
static bp_status_t load_once(void) {
  const char *override = env("BACKPLANE_HIP_RUNTIME");
  memset(&rocm_rt, 0, sizeof rocm_rt);
  void *h = open_first(override, runtime_names, 3, rocm_rt.path,
                       sizeof rocm_rt.path);
  if (!h)
    return fail(BP_ERR_UNAVAILABLE, "ROCm runtime not found (%s)",
                override ? override : "libamdhip64.so");
  bp_status_t st = BP_OK;
  const char *missing = NULL;
  if (!resolve_runtime(h, &missing)) {
    st = fail(BP_ERR_INCOMPATIBLE, "%s lacks %s: ROCm too old (5.0 or newer "
              "is needed)", rocm_rt.path, missing);
    goto out;
  }
  hipError_t r = rocm_rt.hipInit(0);
  if (r != hipSuccess) {
    const char *name = rocm_rt.hipGetErrorName(r);
    /* No GPU and no kernel driver both mean "nothing to run on here". */
    st = fail(BP_ERR_UNAVAILABLE, "hipInit failed: %s (%d)",
              name ? name : "?", r);
    goto out;
  }
  rocm_rt.hipDriverGetVersion(&rocm_rt.driver_version);
  rocm_rt.hipRuntimeGetVersion(&rocm_rt.runtime_version);
  rocm_rt.handle = h;
  load_rtc();
out:
  if (st != BP_OK) {
    dlclose(h);
    memset(&rocm_rt, 0, sizeof rocm_rt);
  }
  return st;
}

bp_status_t rocm_runtime_load(void) {
  pthread_mutex_lock(&load_lock);
  if (!load_done) {
    load_status = load_once();
    load_done = true;
    if (load_status != BP_OK)
      rocm_log(BP_LOG_INFO, "runtime not loaded: %s; no ROCm devices",
               load_reason);
  }
  bp_status_t st = load_status;
  pthread_mutex_unlock(&load_lock);
  if (st != BP_OK && rocm_host && rocm_host->set_error)
    rocm_host->set_error("%s", load_reason);
  return st;
}

void rocm_runtime_unload(void) {
  pthread_mutex_lock(&load_lock);
  if (rocm_rt.rtc_handle && rocm_rt.rtc_handle != rocm_rt.handle)
    dlclose(rocm_rt.rtc_handle);
  if (rocm_rt.handle)
    dlclose(rocm_rt.handle);
  memset(&rocm_rt, 0, sizeof rocm_rt);
  load_done = false;
  pthread_mutex_unlock(&load_lock);
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
  if (!arch || strncmp(arch, "gfx", 3) != 0)
    arch = "";
  snprintf(out, cap, "%.*s", (int)strnlen(arch, 255), arch);
}

/* The status a hipError_t means to an application. */
static bp_status_t status_of(hipError_t r) {
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

bp_status_t rocm_check(hipError_t r, const char *what) {
  if (r == hipSuccess)
    return BP_OK;
  const char *name = rocm_rt.hipGetErrorName ? rocm_rt.hipGetErrorName(r) : 0;
  const char *desc =
      rocm_rt.hipGetErrorString ? rocm_rt.hipGetErrorString(r) : NULL;
  if (rocm_host && rocm_host->set_error)
    rocm_host->set_error("rocm: %s: %s (%s)", what,
                         name ? name : "hipErrorUnknown",
                         desc ? desc : "no description");
  return status_of(r);
}
