/*
 * blas.c — rocBLAS, when it is installed, for the gemm of
 * plugins/common/gpu_blas.inc (which decides when to use it).
 *
 * librocblas.so.4, .3, .0 (or the file BACKPLANE_ROCBLAS names, read
 * through the host's secure getenv) is opened with dlopen on the first
 * gemm; its absence is logged once at info and the plugin's own kernels
 * run every gemm. Each device gets one handle, created with the device
 * current, and every call sets the op's stream first (rocblas_set_stream)
 * under the device lock. Each handle gets a 32 MiB workspace the plugin
 * allocates (rocblas_set_workspace), so that no gemm inside a graph capture
 * allocates. Creating a handle allocates device memory, so during a graph
 * capture it runs in relaxed capture mode.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "plugins/rocm/rocblas_api.h"
#include "plugins/rocm/rocm_plugin.h"

static struct {
  void *handle;
  char path[256];
  char version[64];
#define ROCBLAS__FIELD(field, sym, params) rocblas_status (*field) params;
  ROCBLAS_ENTRY_POINTS(ROCBLAS__FIELD)
  ROCBLAS_OPTIONAL_ENTRY_POINTS(ROCBLAS__FIELD)
#undef ROCBLAS__FIELD
} rb;
static pthread_mutex_t rb_lock = PTHREAD_MUTEX_INITIALIZER;
static bool rb_tried;

/* Opens rocBLAS once per process; false when it is not there. */
static bool rocblas_load(void) {
  pthread_mutex_lock(&rb_lock);
  if (rb_tried) {
    pthread_mutex_unlock(&rb_lock);
    return rb.handle != NULL;
  }
  rb_tried = true;
  const char *env = rocm_host->getenv("BACKPLANE_ROCBLAS");
  const char *names[] = {"librocblas.so.4", "librocblas.so.3",
                         "librocblas.so.0"};
  char why[512] = "";
  void *h = NULL;
  if (env && *env) {
    snprintf(rb.path, sizeof rb.path, "%s", env);
    h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!h)
      snprintf(why, sizeof why, "%s", dlerror());
  } else {
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) {
      snprintf(rb.path, sizeof rb.path, "%s", names[i]);
      h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!h)
      snprintf(why, sizeof why, "librocblas.so.4/.3/.0 not found");
  }
  const char *missing = NULL;
#define ROCBLAS__RESOLVE(field, sym, params)                                   \
  if (h && !missing && !(*(void **)(&rb.field) = dlsym(h, sym)))               \
    missing = sym;
  ROCBLAS_ENTRY_POINTS(ROCBLAS__RESOLVE)
#undef ROCBLAS__RESOLVE
#define ROCBLAS__RESOLVE_OPT(field, sym, params)                               \
  if (h && !missing)                                                           \
    *(void **)(&rb.field) = dlsym(h, sym);
  ROCBLAS_OPTIONAL_ENTRY_POINTS(ROCBLAS__RESOLVE_OPT)
#undef ROCBLAS__RESOLVE_OPT
  if (h && missing) {
    snprintf(why, sizeof why, "%s lacks %s", rb.path, missing);
    dlclose(h);
    h = NULL;
  }
  if (h && rb.rocblas_get_version_string(rb.version, sizeof rb.version) !=
               rocblas_status_success)
    snprintf(rb.version, sizeof rb.version, "unknown");
  rb.handle = h;
  pthread_mutex_unlock(&rb_lock);
  if (h)
    rocm_log(BP_LOG_INFO, "rocBLAS %s from %s for gemm where it is faster",
             rb.version, rb.path);
  else
    rocm_log(BP_LOG_INFO, "no rocBLAS (%s): gemm runs on the plugin's own "
             "kernels", why);
  return h != NULL;
}

bool rocm_blas_ready(rocm_device_t *d) {
  if (!rocblas_load())
    return false;
  pthread_mutex_lock(&d->lock);
  bool ok = !d->blas.broken;
  if (ok && !d->blas.handle && rocm_enter(d) == BP_OK) {
    rocblas_handle h = NULL;
    int mode = rocm_capture_relax(); /* both allocate device memory */
    rocblas_status r = rb.rocblas_create_handle(&h);
    void *ws = NULL;
    const size_t ws_size = (size_t)32 << 20;
    if (r == rocblas_status_success && h && rb.rocblas_set_workspace &&
        (rocm_rt.hipMalloc(&ws, ws_size) != hipSuccess ||
         rb.rocblas_set_workspace(h, ws, ws_size) != rocblas_status_success)) {
      if (ws)
        rocm_rt.hipFree(ws);
      ws = NULL; /* rocBLAS's own workspace then */
    }
    rocm_capture_restore(mode);
    if (r == rocblas_status_success && h) {
      d->blas.handle = h;
      d->blas.workspace = (uint64_t)(uintptr_t)ws;
      d->blas.workspace_size = ws ? ws_size : 0;
    } else {
      d->blas.broken = true;
      rocm_log(BP_LOG_WARN, "rocblas_create_handle failed (status %d) on "
               "device %d: gemm runs on the plugin's own kernels", r,
               d->ordinal);
    }
  }
  ok = d->blas.handle != NULL && !d->blas.broken;
  pthread_mutex_unlock(&d->lock);
  return ok;
}

void rocm_blas_identity(rocm_device_t *d, char *dev, size_t dev_size,
                        char *driver, size_t driver_size) {
  if (rocm_rt.hipDeviceGetName(dev, (int)dev_size, d->ordinal) != hipSuccess)
    snprintf(dev, dev_size, "rocm device %d", d->ordinal);
  snprintf(driver, driver_size, "%s hip %d rocblas %s", d->arch,
           rocm_rt.runtime_version, rb.version);
}

bp_status_t rocm_blas_run(rocm_device_t *d, bp_plugin_stream_t *s,
                          const bp_gpu_blas_call_t *c) {
  bp_status_t st = rocm_enter(d);
  if (st != BP_OK)
    return st;
  const int ta = c->trans_a ? rocblas_operation_transpose : rocblas_operation_none;
  const int tb = c->trans_b ? rocblas_operation_transpose : rocblas_operation_none;
  pthread_mutex_lock(&d->lock);
  rocblas_handle h = d->blas.handle;
  rocblas_status r = rb.rocblas_set_stream(h, rocm_stream_of(s));
  if (r == rocblas_status_success && c->dtype == BP_F64) {
    const double alpha = c->alpha, beta = c->beta;
    r = rb.rocblas_dgemm_strided_batched(
        h, ta, tb, c->m, c->n, c->k, &alpha, (const double *)(uintptr_t)c->a,
        c->lda, c->stride_a, (const double *)(uintptr_t)c->b, c->ldb,
        c->stride_b, &beta, (double *)(uintptr_t)c->c, c->ldc, c->stride_c,
        c->batch);
  } else if (r == rocblas_status_success && c->dtype == BP_F32) {
    const float alpha = (float)c->alpha, beta = (float)c->beta;
    r = rb.rocblas_sgemm_strided_batched(
        h, ta, tb, c->m, c->n, c->k, &alpha, (const float *)(uintptr_t)c->a,
        c->lda, c->stride_a, (const float *)(uintptr_t)c->b, c->ldb,
        c->stride_b, &beta, (float *)(uintptr_t)c->c, c->ldc, c->stride_c,
        c->batch);
  } else if (r == rocblas_status_success) {
    /* f16 / bf16 storage, f32 compute; C is both input and output. */
    const int type = c->dtype == BP_F16 ? rocblas_datatype_f16_r
                                        : rocblas_datatype_bf16_r;
    const float alpha = (float)c->alpha, beta = (float)c->beta;
    void *cp = (void *)(uintptr_t)c->c;
    r = rb.rocblas_gemm_strided_batched_ex(
        h, ta, tb, c->m, c->n, c->k, &alpha, (const void *)(uintptr_t)c->a,
        type, c->lda, c->stride_a, (const void *)(uintptr_t)c->b, type,
        c->ldb, c->stride_b, &beta, cp, type, c->ldc, c->stride_c, cp, type,
        c->ldc, c->stride_c, c->batch, rocblas_datatype_f32_r,
        rocblas_gemm_algo_standard, 0, 0);
  }
  pthread_mutex_unlock(&d->lock);
  if (r != rocblas_status_success) {
    rocm_host->set_error("rocm: rocBLAS gemm failed with status %d", r);
    return BP_ERR_INTERNAL;
  }
  return BP_OK;
}

void rocm_blas_release(rocm_device_t *d) {
  if (d->blas.handle && rb.rocblas_destroy_handle)
    rb.rocblas_destroy_handle((rocblas_handle)d->blas.handle);
  if (d->blas.workspace)
    rocm_rt.hipFree((void *)(uintptr_t)d->blas.workspace);
  d->blas.handle = NULL;
  d->blas.workspace = 0;
}

void rocm_blas_unload(void) {
  pthread_mutex_lock(&rb_lock);
  if (rb.handle)
    dlclose(rb.handle);
  memset(&rb, 0, sizeof rb);
  rb_tried = false;
  pthread_mutex_unlock(&rb_lock);
}
