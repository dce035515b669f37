/*
 * plugins/gpu/blas.c — the vendor BLAS (cuBLAS, rocBLAS), when it is
 * installed, for the gemm of ops_blas.c (which decides when to use it).
 *
 * The library (GPU_BLAS_LIBRARY_NAMES, or the file GPU_BLAS_LIBRARY_ENV
 * names, read through the host's secure getenv) is opened with dlopen on
 * the first gemm; its absence is logged once at info and the plugin's own
 * kernels run every gemm. Each device gets one handle, created with the
 * device current (cuBLAS uses the current context, so it shares the
 * plugin's), and every call sets the op's stream first under the device
 * lock, since a handle must not be used from two threads at once. Vendor
 * BLAS calls are stream-ordered and capture-safe as long as they need not
 * allocate: each handle gets a workspace the plugin allocates
 * (gpublasWorkspaceSize: NVIDIA's and AMD's recommendations), set again
 * after every cublasSetStream where that resets it
 * (GPU_BLAS_WORKSPACE_PER_CALL), else once. Creating a handle allocates
 * device memory, so when that happens during a graph capture it runs in
 * relaxed capture mode.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "plugins/gpu/gpu.h"

/* The resolved library; the gpublas* names of vendors/<vendor>.h call
 * through it. */
static struct {
  void *handle;
  char path[256];
  char version[64]; /* for the tuning key */
#define GPU__BLAS_FIELD(field, sym, params) gpublasStatus_t(*field) params;
  GPU_BLAS_ENTRY_POINTS(GPU__BLAS_FIELD)
  GPU_BLAS_OPTIONAL_ENTRY_POINTS(GPU__BLAS_FIELD)
#undef GPU__BLAS_FIELD
} gpu_blas_lib;
static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static bool blas_tried;

/* Opens the library once per process; false when it is not there. */
static bool blas_load(void) {
  pthread_mutex_lock(&blas_lock);
  if (blas_tried) {
    pthread_mutex_unlock(&blas_lock);
    return gpu_blas_lib.handle != NULL;
  }
  blas_tried = true;
  const char *env = gpu_host->getenv(GPU_BLAS_LIBRARY_ENV);
  const char *names[] = GPU_BLAS_LIBRARY_NAMES;
  char why[512] = "";
  void *h = NULL;
  if (env && *env) {
    snprintf(gpu_blas_lib.path, sizeof gpu_blas_lib.path, "%s", env);
    h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!h) snprintf(why, sizeof why, "%s", dlerror());
  } else {
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) {
      snprintf(gpu_blas_lib.path, sizeof gpu_blas_lib.path, "%s", names[i]);
      h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) snprintf(why, sizeof why, GPU_BLAS_LIBRARY_MISSING);
  }
  const char *missing = NULL;
#define GPU__BLAS_RESOLVE(field, sym, params)                                                      \
  if (h && !missing && !(*(void **)(&gpu_blas_lib.field) = dlsym(h, sym))) missing = sym;
  GPU_BLAS_ENTRY_POINTS(GPU__BLAS_RESOLVE)
#undef GPU__BLAS_RESOLVE
#define GPU__BLAS_RESOLVE_OPT(field, sym, params)                                                  \
  if (h && !missing) *(void **)(&gpu_blas_lib.field) = dlsym(h, sym);
  GPU_BLAS_OPTIONAL_ENTRY_POINTS(GPU__BLAS_RESOLVE_OPT)
#undef GPU__BLAS_RESOLVE_OPT
  if (h && missing) {
    snprintf(why, sizeof why, "%s lacks %s", gpu_blas_lib.path, missing);
    dlclose(h);
    h = NULL;
  }
  if (h) gpublasLibraryVersion(gpu_blas_lib.version, sizeof gpu_blas_lib.version);
  gpu_blas_lib.handle = h;
  pthread_mutex_unlock(&blas_lock);
  if (h)
    gpu_log(BP_LOG_INFO, GPU_BLAS_NAME " from %s for gemm where it is faster", gpu_blas_lib.path);
  else
    gpu_log(BP_LOG_INFO,
            "no " GPU_BLAS_NAME " (%s): gemm runs on the "
            "plugin's own kernels",
            why);
  return h != NULL;
}

bool gpu_blas_ready(gpu_device_t *d) {
  if (!blas_load()) return false;
  pthread_mutex_lock(&d->lock);
  bool ok = !d->blas.broken;
  if (ok && !d->blas.handle && gpu_device_enter(d) == BP_OK) {
    gpublasHandle_t h = NULL;
    int mode = gpu_capture_relax(); /* both allocate device memory */
    gpublasStatus_t r = gpublasCreate(&h);
    uint64_t ws = 0;
    const size_t ws_size = gpublasWorkspaceSize(d);
    if (r == GPUBLAS_STATUS_SUCCESS && h && gpublasHaveSetWorkspace() &&
        (gpuMallocPlain(&ws, ws_size) != gpuSuccess ||
         (!GPU_BLAS_WORKSPACE_PER_CALL &&
          gpublasSetWorkspace(h, (void *)(uintptr_t)ws, ws_size) != GPUBLAS_STATUS_SUCCESS))) {
      if (ws) gpuFreePlain(ws);
      ws = 0; /* the library's own workspace then */
    }
    gpu_capture_restore(mode);
    gpu_device_leave();
    if (r == GPUBLAS_STATUS_SUCCESS && h) {
      d->blas.handle = h;
      d->blas.workspace = ws;
      d->blas.workspace_size = ws ? ws_size : 0;
      gpublasHandleVersion(h, gpu_blas_lib.version, sizeof gpu_blas_lib.version);
    } else {
      d->blas.broken = true;
      gpu_log(BP_LOG_WARN,
              GPU_BLAS_CREATE_NAME " failed (status %d) on "
                                   "device %d: gemm runs on the plugin's own kernels",
              r, d->ordinal);
    }
  }
  ok = d->blas.handle != NULL && !d->blas.broken;
  pthread_mutex_unlock(&d->lock);
  return ok;
}

void gpu_blas_identity(gpu_device_t *d, char *dev, size_t dev_size, char *driver,
                       size_t driver_size) {
  gpu_device_identity(d, dev, dev_size, driver, driver_size, gpu_blas_lib.version);
}

bp_status_t gpu_blas_run(gpu_device_t *d, bp_plugin_stream_t *s, const bp_gpu_blas_call_t *c) {
  bp_status_t st = gpu_device_enter(d);
  if (st != BP_OK) return st;
  const int ta = c->trans_a ? GPUBLAS_OP_T : GPUBLAS_OP_N;
  const int tb = c->trans_b ? GPUBLAS_OP_T : GPUBLAS_OP_N;
  pthread_mutex_lock(&d->lock);
  gpublasHandle_t h = d->blas.handle;
  gpublasStatus_t r = gpublasSetStream(h, gpu_stream_of(s));
  if (GPU_BLAS_WORKSPACE_PER_CALL && r == GPUBLAS_STATUS_SUCCESS && d->blas.workspace)
    r = gpublasSetWorkspace(h, (void *)(uintptr_t)d->blas.workspace,
                            (size_t)d->blas.workspace_size);
  if (r == GPUBLAS_STATUS_SUCCESS && c->dtype == BP_F64) {
    const double alpha = c->alpha, beta = c->beta;
    r = gpublasDgemmStridedBatched(h, ta, tb, c->m, c->n, c->k, &alpha,
                                   (const double *)(uintptr_t)c->a, c->lda, c->stride_a,
                                   (const double *)(uintptr_t)c->b, c->ldb, c->stride_b, &beta,
                                   (double *)(uintptr_t)c->c, c->ldc, c->stride_c, c->batch);
  } else if (r == GPUBLAS_STATUS_SUCCESS && c->dtype == BP_F32) {
    const float alpha = (float)c->alpha, beta = (float)c->beta;
    r = gpublasSgemmStridedBatched(h, ta, tb, c->m, c->n, c->k, &alpha,
                                   (const float *)(uintptr_t)c->a, c->lda, c->stride_a,
                                   (const float *)(uintptr_t)c->b, c->ldb, c->stride_b, &beta,
                                   (float *)(uintptr_t)c->c, c->ldc, c->stride_c, c->batch);
  } else if (r == GPUBLAS_STATUS_SUCCESS) {
    /* f16 / bf16 storage, f32 accumulation (alpha and beta in f32). */
    const float alpha = (float)c->alpha, beta = (float)c->beta;
    r = gpublasGemmStridedBatchedHalf(h, ta, tb, c, &alpha, &beta);
  }
  pthread_mutex_unlock(&d->lock);
  gpu_device_leave();
  if (r != GPUBLAS_STATUS_SUCCESS) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": " GPU_BLAS_NAME " gemm failed with "
                                        "status %d",
                        r);
    return BP_ERR_INTERNAL;
  }
  return BP_OK;
}

void gpu_blas_release(gpu_device_t *d) {
  if (d->blas.handle && gpu_blas_lib.handle) gpublasDestroy((gpublasHandle_t)d->blas.handle);
  if (d->blas.workspace) gpuFreePlain(d->blas.workspace);
  d->blas.handle = NULL;
  d->blas.workspace = 0;
}

void gpu_blas_unload(void) {
  pthread_mutex_lock(&blas_lock);
  if (gpu_blas_lib.handle) dlclose(gpu_blas_lib.handle);
  memset(&gpu_blas_lib, 0, sizeof gpu_blas_lib);
  blas_tried = false;
  pthread_mutex_unlock(&blas_lock);
}
