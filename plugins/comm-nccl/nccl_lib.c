/*
 * nccl_lib.c — opening NCCL (or RCCL) and the GPU runtime at run time, and
 * waiting for their work against a deadline. NCCL queues each collective
 * on a stream of the plugin's own and returns; the stream is then polled
 * (gpu_query) together with ncclCommGetAsyncError until the deadline,
 * after which the communicator is aborted (ncclCommAbort frees NCCL's
 * kernels waiting for peers that will never come) and broken.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nccl_lib.h"

nccl_lib_t nccl;
const bp_host_services_t *nccl_host;
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *env(const char *name) {
  const char *v = nccl_host && nccl_host->getenv ? nccl_host->getenv(name) : NULL;
  return v && v[0] ? v : NULL;
}

static bp_status_t resolve(void *nl, const char *name) {
#define NCCL_FN_RESOLVE(ret, fn, params)                                                         \
  if (!(*(void **)&nccl.fn = dlsym(nl, #fn))) {                                                  \
    nccl_host->set_error("%s has no %s: not NCCL 2.x's API", name, #fn);                          \
    return BP_ERR_UNAVAILABLE;                                                                   \
  }
  NCCL_FUNCTIONS(NCCL_FN_RESOLVE)
#undef NCCL_FN_RESOLVE
  return BP_OK;
}

bp_status_t nccl_lib_open(void) {
  pthread_mutex_lock(&open_lock);
  bp_status_t st = nccl.nccl_dl ? BP_OK : gpu_open();
  if (st == BP_OK && !nccl.nccl_dl) {
    const char *name = env(VENDOR_LIBRARY_ENV) ? env(VENDOR_LIBRARY_ENV) : VENDOR_SONAME;
    void *nl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!nl) {
      const char *e = dlerror();
      nccl_host->set_error("%s not found (%s)", name, e ? e : "dlopen failed");
      st = BP_ERR_UNAVAILABLE;
    } else if ((st = resolve(nl, name)) == BP_OK) {
      nccl.nccl_dl = nl; /* never dlclosed, like every library a plugin opens */
    } else {
      memset(&nccl, 0, sizeof nccl);
    }
  }
  pthread_mutex_unlock(&open_lock);
  return st;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

bp_status_t nccl_failed(nccl_comm_t *c, const char *fn, ncclResult_t r) {
  nccl_host->set_error("%s: %s (NCCL error %d); the communicator is broken", fn, nccl.ncclGetErrorString(r),
                       (int)r);
  if (c) c->broken = true;
  return r == ncclInvalidArgument || r == ncclInvalidUsage ? BP_ERR_INVALID_ARGUMENT : BP_ERR_UNAVAILABLE;
}

/* Polls query (the plugin's stream, or the event after a call enqueued on
 * the backend's stream) and NCCL's asynchronous error until the work is
 * done, NCCL failed, or the deadline passed (then aborts NCCL, which ends
 * its kernels, so the stream's later work can run). */
static bp_status_t wait_for(nccl_comm_t *c, uint32_t timeout_ms, const char *fn, int (*query)(const gpu_side_t *)) {
  double deadline = now_ms() + timeout_ms;
  for (long sleep_ns = 1000;; ) {
    int q = query(&c->gpu);
    if (q == 0) return BP_OK;
    if (q < 0) {
      nccl_host->set_error("%s: querying the stream failed (%s error %d); the communicator is broken", fn,
                           VENDOR_DEVICE, -q);
      c->broken = true;
      return BP_ERR_DEVICE_LOST;
    }
    ncclResult_t async = ncclSuccess;
    nccl.ncclCommGetAsyncError(c->comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) return nccl_failed(c, fn, async);
    if (timeout_ms && now_ms() > deadline) {
      nccl.ncclCommAbort(c->comm);
      c->aborted = c->broken = true;
      nccl_host->set_error("%s: not every rank took part within %u ms (a rank died, hangs, is unreachable, or "
                           "made another call); the communicator is aborted", fn, timeout_ms);
      return BP_ERR_TIMEOUT;
    }
    struct timespec ts = {0, sleep_ns};
    nanosleep(&ts, NULL);
    if (sleep_ns < 1000000L) sleep_ns *= 2;
  }
}

bp_status_t nccl_wait(nccl_comm_t *c, uint32_t timeout_ms, const char *fn) {
  return wait_for(c, timeout_ms, fn, gpu_query);
}

bp_status_t nccl_complete(bp_plugin_comm_t *c, uint32_t timeout_ms) {
  if (!c->pending) {
    nccl_host->set_error("complete: no call was enqueued on a stream of the backend's");
    return BP_ERR_INVALID_ARGUMENT;
  }
  c->pending = false;
  gpu_enter(&c->gpu);
  bp_status_t st = wait_for(c, timeout_ms, c->pending_fn, gpu_event_query);
  gpu_leave(&c->gpu);
  return st;
}
