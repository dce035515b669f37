/*
 * driver.c — opens the OpenCL ICD loader with dlopen and resolves the entry
 * points the plugin uses. No link-time dependency: a machine without
 * libOpenCL.so.1 still loads the plugin, which then reports why it has no
 * devices.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "ocl.h"

ocl_api_t ocl_api;
const bp_host_services_t *ocl_host;

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
static void *api_lib;
static bp_status_t api_status = BP_ERR_UNAVAILABLE;
static char api_reason[256];

static void set_error(const char *msg) {
  if (ocl_host && ocl_host->set_error) ocl_host->set_error("%s", msg);
}

/* Resolves every symbol; the first missing one names the failure. */
static bp_status_t api_resolve(void *lib) {
#define OCL__SYM(fn)                                                                               \
  ocl_api.fn = (__typeof__(&fn))dlsym(lib, #fn);                                                   \
  if (!ocl_api.fn) {                                                                               \
    snprintf(api_reason, sizeof api_reason, "libOpenCL.so.1 lacks %s (OpenCL 1.2 needed)", #fn);   \
    return BP_ERR_UNAVAILABLE;                                                                     \
  }
  OCL_API_FUNCS(OCL__SYM)
#undef OCL__SYM
  return BP_OK;
}

bp_status_t ocl_api_load(void) {
  pthread_mutex_lock(&api_lock);
  if (!api_lib) {
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      snprintf(api_reason, sizeof api_reason, "OpenCL ICD loader not found (libOpenCL.so.1)");
      api_status = BP_ERR_UNAVAILABLE;
    } else if ((api_status = api_resolve(lib)) != BP_OK) {
      dlclose(lib);
    } else {
      api_lib = lib;
    }
  }
  bp_status_t st = api_status;
  if (st != BP_OK) set_error(api_reason);
  pthread_mutex_unlock(&api_lock);
  return st;
}

void ocl_api_unload(void) {
  /* Nothing to undo, on purpose. The ICD loader and drivers keep threads
   * and atexit handlers that point into their code, so unmapping them
   * while those live crashes at exit. And every context of the process
   * calls init / shutdown on this one mapped plugin: a shutdown from one
   * context must not pull the table from under another context's open
   * devices, nor make a concurrent probe re-resolve it while others call
   * through it. The table, once filled, stays valid until exit. */
}

const char *ocl_err_name(cl_int err) {
  switch (err) {
#define E(x)                                                                                       \
  case x:                                                                                          \
    return #x;
    E(CL_SUCCESS)
    E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
        E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
            E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_BUILD_PROGRAM_FAILURE) E(CL_INVALID_VALUE)
                E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT) E(CL_INVALID_COMMAND_QUEUE)
                    E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS)
                        E(CL_INVALID_PROGRAM) E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL)
                            E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
                                E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION)
                                    E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE)
                                        E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST)
                                            E(CL_INVALID_EVENT) E(CL_INVALID_BUFFER_SIZE)
                                                E(CL_INVALID_GLOBAL_WORK_SIZE)
                                                    E(CL_PLATFORM_NOT_FOUND_KHR)
#undef E
                                                        default : return "CL_UNKNOWN_ERROR";
  }
}

bp_status_t ocl_fail(cl_int err, const char *what) {
  if (ocl_host && ocl_host->set_error)
    ocl_host->set_error("opencl: %s failed: %s (%d)", what, ocl_err_name(err), (int)err);
  switch (err) {
  case CL_MEM_OBJECT_ALLOCATION_FAILURE:
  case CL_OUT_OF_HOST_MEMORY:
  case CL_INVALID_BUFFER_SIZE:
    return BP_ERR_OUT_OF_MEMORY;
  case CL_OUT_OF_RESOURCES:
    return BP_ERR_DEVICE_LOST;
  case CL_DEVICE_NOT_FOUND:
  case CL_DEVICE_NOT_AVAILABLE:
  case CL_PLATFORM_NOT_FOUND_KHR:
    return BP_ERR_UNAVAILABLE;
  default:
    return BP_ERR_INTERNAL;
  }
}
