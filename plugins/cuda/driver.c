/*
 * driver.c — opens libcuda.so.1 at run time and turns CUresults into
 * backplane statuses.
 *
 * The plugin never links against the driver: a machine without NVIDIA's
 * driver must still load backend-cuda.so and get a clean "libcuda.so.1 not
 * found" from probe. BACKPLANE_CUDA_DRIVER (read through the host's secure
 * getenv, so ignored in setuid programs) names another file to open instead;
 * the test suite points it at the CPU shim.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plugins/cuda/cuda_plugin.h"

cuda_driver_t cuda_drv;
const bp_host_services_t *cuda_host;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static bool load_done;
static bp_status_t load_status;
static char load_reason[512];

/* cuDriverGetVersion 11020 is CUDA 11.2, the first with cuMemAllocAsync;
 * the _v2 entry points used here all exist since CUDA 4.0. */
#define CUDA_MIN_DRIVER_VERSION 11000

void cuda_log(bp_log_level_t level, const char *fmt, ...) {
  if (!cuda_host || !cuda_host->log)
    return;
  char line[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  cuda_host->log(level, CUDA_PLUGIN_NAME, "%s", line);
}

/* Resolves the entry point table; names the first missing symbol. */
static bool resolve_symbols(void *h, const char **out_missing) {
#define CUDA__RESOLVE(field, sym, params)                                      \
  *(void **)(&cuda_drv.field) = dlsym(h, sym);                                 \
  if (!cuda_drv.field) {                                                       \
    *out_missing = sym;                                                        \
    return false;                                                              \
  }
  CUDA_DRIVER_ENTRY_POINTS(CUDA__RESOLVE)
#undef CUDA__RESOLVE
#define CUDA__RESOLVE_OPT(field, sym, params)                                  \
  *(void **)(&cuda_drv.field) = dlsym(h, sym);
  CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(CUDA__RESOLVE_OPT)
#undef CUDA__RESOLVE_OPT
  /* Drivers before 11.4 only have the first cuDeviceGetUuid, which has the
   * same signature. */
  if (!cuda_drv.cuDeviceGetUuid)
    *(void **)(&cuda_drv.cuDeviceGetUuid) = dlsym(h, "cuDeviceGetUuid");
  return true;
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

/* One attempt at opening and initialising the driver; closes the handle on
 * every failure. */
static bp_status_t load_once(void) {
  const char *path = "libcuda.so.1";
  const char *env = cuda_host && cuda_host->getenv
                        ? cuda_host->getenv("BACKPLANE_CUDA_DRIVER")
                        : NULL;
  if (env && *env)
    path = env;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return fail(BP_ERR_UNAVAILABLE, "%s not found (%s)", path, dlerror());
  bp_status_t st = BP_OK;
  const char *missing = NULL;
  memset(&cuda_drv, 0, sizeof cuda_drv);
  if (!resolve_symbols(h, &missing)) {
    st = fail(BP_ERR_INCOMPATIBLE, "%s lacks %s: driver too old", path,
              missing);
    goto out;
  }
  CUresult r = cuda_drv.cuDriverGetVersion(&cuda_drv.version);
  if (r != CUDA_SUCCESS || cuda_drv.version < CUDA_MIN_DRIVER_VERSION) {
    st = fail(BP_ERR_INCOMPATIBLE,
              "%s reports driver version %d; CUDA 11.0 (11000) or newer is "
              "needed",
              path, cuda_drv.version);
    goto out;
  }
  r = cuda_drv.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char *name = "?";
    cuda_drv.cuGetErrorName(r, &name);
    /* No device and a stub library both mean "nothing to run on here". */
    st = fail(BP_ERR_UNAVAILABLE, "cuInit failed: %s (%d)", name, r);
    goto out;
  }
  cuda_drv.handle = h;
  snprintf(cuda_drv.path, sizeof cuda_drv.path, "%s", path);
out:
  if (st != BP_OK) {
    dlclose(h);
    memset(&cuda_drv, 0, sizeof cuda_drv);
  }
  return st;
}

bp_status_t cuda_driver_load(void) {
  pthread_mutex_lock(&load_lock);
  if (!load_done) {
    load_status = load_once();
    load_done = true;
    if (load_status != BP_OK)
      cuda_log(BP_LOG_INFO, "driver not loaded: %s; no CUDA devices",
               load_reason);
  }
  bp_status_t st = load_status;
  pthread_mutex_unlock(&load_lock);
  if (st != BP_OK && cuda_host && cuda_host->set_error)
    cuda_host->set_error("%s", load_reason);
  return st;
}

void cuda_driver_unload(void) {
  pthread_mutex_lock(&load_lock);
  if (cuda_drv.handle)
    dlclose(cuda_drv.handle);
  memset(&cuda_drv, 0, sizeof cuda_drv);
  load_done = false;
  pthread_mutex_unlock(&load_lock);
}

/* The status a CUresult means to an application. */
static bp_status_t status_of(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS:
    return BP_OK;
  case CUDA_ERROR_INVALID_VALUE:
  case CUDA_ERROR_INVALID_HANDLE:
    return BP_ERR_INVALID_ARGUMENT;
  case CUDA_ERROR_OUT_OF_MEMORY:
    return BP_ERR_OUT_OF_MEMORY;
  case CUDA_ERROR_NOT_INITIALIZED:
  case CUDA_ERROR_DEINITIALIZED:
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_INVALID_DEVICE:
  case CUDA_ERROR_STUB_LIBRARY:
    return BP_ERR_UNAVAILABLE;
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    return BP_ERR_INCOMPATIBLE;
  case CUDA_ERROR_NOT_SUPPORTED:
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
  case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
  case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
    return BP_ERR_UNSUPPORTED; /* the core replays the graph instead */
  case CUDA_ERROR_NOT_FOUND:
    return BP_ERR_NOT_FOUND;
  case CUDA_ERROR_NOT_READY:
    return BP_ERR_BUSY;
  case CUDA_ERROR_LAUNCH_TIMEOUT:
    return BP_ERR_TIMEOUT;
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
    /* Sticky errors: the context is unusable from here on. */
    return BP_ERR_DEVICE_LOST;
  default:
    return BP_ERR_INTERNAL;
  }
}

bp_status_t cuda_check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return BP_OK;
  const char *name = NULL, *desc = NULL;
  if (cuda_drv.cuGetErrorName)
    cuda_drv.cuGetErrorName(r, &name);
  if (cuda_drv.cuGetErrorString)
    cuda_drv.cuGetErrorString(r, &desc);
  if (cuda_host && cuda_host->set_error)
    cuda_host->set_error("cuda: %s: %s (%s)", what,
                         name ? name : "CUDA_ERROR_UNKNOWN",
                         desc ? desc : "no description");
  return status_of(r);
}
