/*
 * driver.c — the CUDA side of the driver load (plugins/gpu/driver.c does
 * the rest): the entry-point table, opening libcuda.so.1, the version
 * floor, and CUresult -> backplane status.
 *
 * The plugin never links against the driver: a machine without NVIDIA's
 * driver must still load backend-cuda.so and get a clean "libcuda.so.1 not
 * found" from probe. BACKPLANE_CUDA_DRIVER (read through the host's secure
 * getenv, so ignored in setuid programs) names another file to open instead;
 * the test suite points it at the CPU shim.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "plugins/gpu/gpu.h"

cuda_driver_t cuda_drv;

/* cuDriverGetVersion 11020 is CUDA 11.2, the first with cuMemAllocAsync;
 * the _v2 entry points used here all exist since CUDA 4.0. */
#define CUDA_MIN_DRIVER_VERSION 11000

/* cuGetErrorName / cuGetErrorString answer through an out-parameter. */
const char *gpu_error_name(CUresult r) {
  const char *s = NULL;
  if (cuda_drv.cuGetErrorName) cuda_drv.cuGetErrorName(r, &s);
  return s;
}

const char *gpu_error_string(CUresult r) {
  const char *s = NULL;
  if (cuda_drv.cuGetErrorString) cuda_drv.cuGetErrorString(r, &s);
  return s;
}

void *gpu_driver_open(void) {
  const char *path = gpu_env("BACKPLANE_CUDA_DRIVER");
  if (!path) path = "libcuda.so.1";
  snprintf(cuda_drv.path, sizeof cuda_drv.path, "%s", path);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) gpu_driver_fail(BP_ERR_UNAVAILABLE, "%s not found (%s)", path, dlerror());
  return h;
}

bp_status_t gpu_driver_before_init(void *h) {
  /* Drivers before 11.4 only have the first cuDeviceGetUuid, which has the
   * same signature. */
  if (!cuda_drv.cuDeviceGetUuid)
    *(void **)(&cuda_drv.cuDeviceGetUuid) = dlsym(h, "cuDeviceGetUuid");
  CUresult r = cuda_drv.cuDriverGetVersion(&cuda_drv.version);
  if (r != CUDA_SUCCESS || cuda_drv.version < CUDA_MIN_DRIVER_VERSION)
    return gpu_driver_fail(BP_ERR_INCOMPATIBLE,
                           "%s reports driver version %d; CUDA 11.0 (11000) or newer "
                           "is needed",
                           cuda_drv.path, cuda_drv.version);
  return BP_OK;
}

void gpu_driver_after_init(void) {}

void gpu_driver_close_extra(void) {}

/* The status a CUresult means to an application. Kept apart from the HIP
 * mapping (plugins/rocm/driver.c) on purpose: the enumerations differ in
 * values and in which codes exist (CUDA_ERROR_STUB_LIBRARY,
 * CUDA_ERROR_UNSUPPORTED_PTX_VERSION here; hipErrorInvalidImage,
 * hipErrorInvalidDeviceFunction there). */
bp_status_t gpu_status_of(CUresult r) {
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
