/*
 * plugins/gpu/driver.c — opening the vendor's driver library at run time:
 * the cached, thread-safe load with its reason, symbol resolution from the
 * vendor's entry-point list (GPU_DRIVER_ENTRY_POINTS), the one cleanup path
 * that closes the library on failure, the log function and the message of
 * a failed driver call.
 *
 * The vendor's driver.c (plugins/cuda/driver.c, plugins/rocm/driver.c)
 * keeps what differs on purpose: the symbol table, which files it opens,
 * the version it needs, what it loads besides (hiprtc) and the mapping of
 * its result codes to statuses (gpu_status_of).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plugins/gpu/gpu.h"

const bp_host_services_t *gpu_host;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static bool load_done;
static bp_status_t load_status;
static char load_reason[512];

void gpu_log(bp_log_level_t level, const char *fmt, ...) {
  if (!gpu_host || !gpu_host->log) return;
  char line[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  gpu_host->log(level, GPU_PLUGIN_NAME, "%s", line);
}

const char *gpu_env(const char *name) {
  const char *v = gpu_host && gpu_host->getenv ? gpu_host->getenv(name) : NULL;
  return v && *v ? v : NULL;
}

bp_status_t gpu_driver_fail(bp_status_t st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(load_reason, sizeof load_reason, fmt, ap);
  va_end(ap);
  return st;
}

/* Resolves the entry point table; names the first missing symbol. */
static bool resolve_symbols(void *h, const char **out_missing) {
#define GPU__RESOLVE(field, sym, ...)                                                              \
  *(void **)(&GPU_DRIVER_TABLE.field) = dlsym(h, sym);                                             \
  if (!GPU_DRIVER_TABLE.field) {                                                                   \
    *out_missing = sym;                                                                            \
    return false;                                                                                  \
  }
  GPU_DRIVER_ENTRY_POINTS(GPU__RESOLVE)
#undef GPU__RESOLVE
#define GPU__RESOLVE_OPT(field, sym, ...) *(void **)(&GPU_DRIVER_TABLE.field) = dlsym(h, sym);
  GPU_DRIVER_OPTIONAL_ENTRY_POINTS(GPU__RESOLVE_OPT)
#undef GPU__RESOLVE_OPT
  return true;
}

/* One attempt at opening and initialising the library; closes the handle
 * on every failure. */
static bp_status_t load_once(void) {
  memset(&GPU_DRIVER_TABLE, 0, sizeof GPU_DRIVER_TABLE);
  void *h = gpu_driver_open();
  if (!h) return BP_ERR_UNAVAILABLE; /* gpu_driver_open gave the reason */
  bp_status_t st = BP_OK;
  const char *missing = NULL;
  if (!resolve_symbols(h, &missing)) {
    st = gpu_driver_fail(BP_ERR_INCOMPATIBLE, "%s lacks %s: %s", GPU_DRIVER_TABLE.path, missing,
                         GPU_DRIVER_TOO_OLD);
    goto out;
  }
  st = gpu_driver_before_init(h);
  if (st != BP_OK) goto out;
  gpuError_t r = gpuInit();
  if (r != gpuSuccess) {
    const char *name = gpu_error_name(r);
    /* No device and a stub library both mean "nothing to run on here". */
    st = gpu_driver_fail(BP_ERR_UNAVAILABLE, GPU_API "Init failed: %s (%d)", name ? name : "?",
                         (int)r);
    goto out;
  }
  GPU_DRIVER_TABLE.handle = h;
  gpu_driver_after_init();
out:
  if (st != BP_OK) {
    dlclose(h);
    memset(&GPU_DRIVER_TABLE, 0, sizeof GPU_DRIVER_TABLE);
  }
  return st;
}

bp_status_t gpu_driver_load(void) {
  pthread_mutex_lock(&load_lock);
  if (!load_done) {
    load_status = load_once();
    load_done = true;
    if (load_status != BP_OK)
      gpu_log(BP_LOG_INFO, GPU_DRIVER_WHAT " not loaded: %s; no " GPU_DRIVER_VENDOR " devices",
              load_reason);
  }
  bp_status_t st = load_status;
  pthread_mutex_unlock(&load_lock);
  if (st != BP_OK && gpu_host && gpu_host->set_error) gpu_host->set_error("%s", load_reason);
  return st;
}

void gpu_driver_unload(void) {
  pthread_mutex_lock(&load_lock);
  gpu_driver_close_extra();
  if (GPU_DRIVER_TABLE.handle) dlclose(GPU_DRIVER_TABLE.handle);
  memset(&GPU_DRIVER_TABLE, 0, sizeof GPU_DRIVER_TABLE);
  load_done = false;
  pthread_mutex_unlock(&load_lock);
}

bp_status_t gpu_check(gpuError_t r, const char *what) {
  if (r == gpuSuccess) return BP_OK;
  const char *name = gpu_error_name(r);
  const char *desc = gpu_error_string(r);
  if (gpu_host && gpu_host->set_error)
    gpu_host->set_error(GPU_PLUGIN_NAME ": %s: %s (%s)", what, name ? name : gpuUnknownErrorName,
                        desc ? desc : "no description");
  return gpu_status_of(r);
}
