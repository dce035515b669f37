/*
 * blas.c — cuBLAS, when it is installed, for the gemm of
 * plugins/common/gpu_blas.inc (which decides when to use it).
 *
 * libcublas.so.13, .12, .11 (or the file BACKPLANE_CUBLAS names, read
 * through the host's secure getenv) is opened with dlopen on the first
 * gemm; its absence is logged once at info and the plugin's own kernels
 * run every gemm. Each device gets one handle, created with the device's
 * primary context current (cuBLAS uses the current context, so it shares
 * the plugin's), and every call sets the op's stream first
 * (cublasSetStream) under the device lock, since a handle must not be
 * used from two threads at once. cuBLAS calls are stream-ordered and
 * capture-safe as long as they need not allocate: each handle gets a
 * workspace the plugin allocates (4 MiB, 32 MiB from sm_90, NVIDIA's
 * recommendation), set again after every cublasSetStream (which resets
 * it). Creating a handle allocates, so when that happens during a graph
 * capture it runs in relaxed capture mode.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "plugins/cuda/cublas_api.h"
#include "plugins/cuda/cuda_plugin.h"

static struct {
  void *handle;
  char path[256];
  int version; /* cublasGetVersion of the first handle */
#define CUBLAS__FIELD(field, sym, params) cublasStatus_t (*field) params;
  CUBLAS_ENTRY_POINTS(CUBLAS__FIELD)
  CUBLAS_OPTIONAL_ENTRY_POINTS(CUBLAS__FIELD)
#undef CUBLAS__FIELD
} cublas;
static pthread_mutex_t cublas_lock = PTHREAD_MUTEX_INITIALIZER;
static bool cublas_tried;

/* Opens cuBLAS once per process; false when it is not there. */
static bool cublas_load(void) {
  pthread_mutex_lock(&cublas_lock);
  if (cublas_tried) {
    pthread_mutex_unlock(&cublas_lock);
    return cublas.handle != NULL;
  }
  cublas_tried = true;
  const char *env = cuda_host->getenv("BACKPLANE_CUBLAS");
  const char *names[] = {"libcublas.so.13", "libcublas.so.12",
                         "libcublas.so.11"};
  char why[512] = "";
  void *h = NULL;
  if (env && *env) {
    snprintf(cublas.path, sizeof cublas.path, "%s", env);
    h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!h)
      snprintf(why, sizeof why, "%s", dlerror());
  } else {
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) {
      snprintf(cublas.path, sizeof cublas.path, "%s", names[i]);
      h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!h)
      snprintf(why, sizeof why, "libcublas.so.13/.12/.11 not found");
  }
  const char *missing = NULL;
#define CUBLAS__RESOLVE(field, sym, params)                                    \
  if (h && !missing && !(*(void **)(&cublas.field) = dlsym(h, sym)))           \
    missing = sym;
  CUBLAS_ENTRY_POINTS(CUBLAS__RESOLVE)
#undef CUBLAS__RESOLVE
#define CUBLAS__RESOLVE_OPT(field, sym, params)                                \
  if (h && !missing)                                                           \
    *(void **)(&cublas.field) = dlsym(h, sym);
  CUBLAS_OPTIONAL_ENTRY_POINTS(CUBLAS__RESOLVE_OPT)
#undef CUBLAS__RESOLVE_OPT
  if (h && missing) {
    snprintf(why, sizeof why, "%s lacks %s", cublas.path, missing);
    dlclose(h);
    h = NULL;
  }
  cublas.handle = h;
  pthread_mutex_unlock(&cublas_lock);
  if (h)
    cuda_log(BP_LOG_INFO, "cuBLAS from %s for gemm where it is faster",
             cublas.path);
  else
    cuda_log(BP_LOG_INFO, "no cuBLAS (%s): gemm runs on the plugin's own "
             "kernels", why);
  return h != NULL;
}

bool cuda_blas_ready(cuda_device_t *d) {
  if (!cublas_load())
    return false;
  pthread_mutex_lock(&d->lock);
  bool ok = !d->blas.broken;
  if (ok && !d->blas.handle && cuda_ctx_enter(d) == BP_OK) {
    cublasHandle_t h = NULL;
    int mode = cuda_capture_relax(); /* both allocate device memory */
    cublasStatus_t r = cublas.cublasCreate(&h);
    CUdeviceptr ws = 0;
    size_t ws_size = (size_t)(d->cc_major >= 9 ? 32 : 4) << 20;
    if (r == CUBLAS_STATUS_SUCCESS && h && cublas.cublasSetWorkspace &&
        cuda_drv.cuMemAlloc(&ws, ws_size) != CUDA_SUCCESS)
      ws = 0; /* cuBLAS's own workspace then */
    cuda_capture_restore(mode);
    cuda_ctx_leave();
    if (r == CUBLAS_STATUS_SUCCESS && h) {
      d->blas.handle = h;
      d->blas.workspace = ws;
      d->blas.workspace_size = ws ? ws_size : 0;
      int v = 0;
      if (cublas.cublasGetVersion(h, &v) == CUBLAS_STATUS_SUCCESS)
        cublas.version = v;
    } else {
      d->blas.broken = true;
      cuda_log(BP_LOG_WARN, "cublasCreate failed (status %d) on device %d: "
               "gemm runs on the plugin's own kernels", r, d->ordinal);
    }
  }
  ok = d->blas.handle != NULL && !d->blas.broken;
  pthread_mutex_unlock(&d->lock);
  return ok;
}

void cuda_blas_identity(cuda_device_t *d, char *dev, size_t dev_size,
                        char *driver, size_t driver_size) {
  if (cuda_drv.cuDeviceGetName(dev, (int)dev_size, d->dev) != CUDA_SUCCESS)
    snprintf(dev, dev_size, "cuda device %d", d->ordinal);
  snprintf(driver, driver_size, "driver %d cublas %d", cuda_drv.version,
           cublas.version);
}

bp_status_t cuda_blas_run(cuda_device_t *d, bp_plugin_stream_t *s,
                          const bp_gpu_blas_call_t *c) {
  bp_status_t st = cuda_ctx_enter(d);
  if (st != BP_OK)
    return st;
  const int ta = c->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int tb = c->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t r;
  pthread_mutex_lock(&d->lock);
  cublasHandle_t h = d->blas.handle;
  r = cublas.cublasSetStream(h, cuda_stream_of(s));
  if (r == CUBLAS_STATUS_SUCCESS && d->blas.workspace)
    r = cublas.cublasSetWorkspace(h, (void *)(uintptr_t)d->blas.workspace,
                                  (size_t)d->blas.workspace_size);
  if (r == CUBLAS_STATUS_SUCCESS && c->dtype == BP_F64) {
    const double alpha = c->alpha, beta = c->beta;
    r = cublas.cublasDgemmStridedBatched(
        h, ta, tb, c->m, c->n, c->k, &alpha, (const double *)(uintptr_t)c->a,
        c->lda, c->stride_a, (const double *)(uintptr_t)c->b, c->ldb,
        c->stride_b, &beta, (double *)(uintptr_t)c->c, c->ldc, c->stride_c,
        c->batch);
  } else if (r == CUBLAS_STATUS_SUCCESS && c->dtype == BP_F32) {
    const float alpha = (float)c->alpha, beta = (float)c->beta;
    r = cublas.cublasSgemmStridedBatched(
        h, ta, tb, c->m, c->n, c->k, &alpha, (const float *)(uintptr_t)c->a,
        c->lda, c->stride_a, (const float *)(uintptr_t)c->b, c->ldb,
        c->stride_b, &beta, (float *)(uintptr_t)c->c, c->ldc, c->stride_c,
        c->batch);
  } else if (r == CUBLAS_STATUS_SUCCESS) {
    /* f16 / bf16 storage, f32 accumulation (alpha and beta in f32). */
    const int type = c->dtype == BP_F16 ? CUDA_R_16F : CUDA_R_16BF;
    const float alpha = (float)c->alpha, beta = (float)c->beta;
    r = cublas.cublasGemmStridedBatchedEx(
        h, ta, tb, c->m, c->n, c->k, &alpha, (const void *)(uintptr_t)c->a,
        type, c->lda, c->stride_a, (const void *)(uintptr_t)c->b, type,
        c->ldb, c->stride_b, &beta, (void *)(uintptr_t)c->c, type, c->ldc,
        c->stride_c, c->batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  }
  pthread_mutex_unlock(&d->lock);
  cuda_ctx_leave();
  if (r != CUBLAS_STATUS_SUCCESS) {
    cuda_host->set_error("cuda: cuBLAS gemm failed with status %d", r);
    return BP_ERR_INTERNAL;
  }
  return BP_OK;
}

void cuda_blas_release(cuda_device_t *d) {
  if (d->blas.handle && cublas.cublasDestroy)
    cublas.cublasDestroy((cublasHandle_t)d->blas.handle);
  if (d->blas.workspace)
    cuda_drv.cuMemFree(d->blas.workspace);
  d->blas.handle = NULL;
  d->blas.workspace = 0;
}

void cuda_blas_unload(void) {
  pthread_mutex_lock(&cublas_lock);
  if (cublas.handle)
    dlclose(cublas.handle);
  memset(&cublas, 0, sizeof cublas);
  cublas_tried = false;
  pthread_mutex_unlock(&cublas_lock);
}
