/*
 * fast_gemv.c — y = alpha * A x + beta * y for f32 / f64 with rows of A
 * contiguous (the common layout). GEMV is bound by reading A once, so plain
 * C with eight independent partial sums per row (enough to hide FMA latency
 * and let the compiler use wide loads) split over the pool by rows is as
 * fast as the memory allows. Other layouts and dtypes use the reference.
 */
#include <string.h>

#include "fast_gemm.h"

typedef struct gemv_job {
  const bp_gemv_args_t *g;
  const char *a, *x;
  char *y;
} gemv_job_t;

#define DEFINE_GEMV_ROWS(T, sfx)                                               \
  static void gemv_rows_##sfx(void *ctx, int64_t begin, int64_t end,           \
                              unsigned worker) {                               \
    const gemv_job_t *j = ctx;                                                 \
    const bp_gemv_args_t *g = j->g;                                            \
    (void)worker;                                                              \
    int64_t n = g->a.shape[1], sa = g->a.strides[0], sx = g->x.strides[0];     \
    int64_t sy = g->y.strides[0];                                              \
    const T *x = (const T *)j->x;                                              \
    T alpha = (T)g->alpha, beta = (T)g->beta;                                  \
    for (int64_t i = begin; i < end; i++) {                                    \
      const T *ai = (const T *)j->a + i * sa;                                  \
      T s[8] = {0};                                                            \
      int64_t p = 0;                                                           \
      if (sx == 1)                                                             \
        for (; p + 8 <= n; p += 8)                                             \
          for (int u = 0; u < 8; u++) s[u] += ai[p + u] * x[p + u];            \
      for (; p < n; p++) s[0] += ai[p] * x[p * sx];                            \
      T dot = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])); \
      T *yi = (T *)j->y + i * sy;                                              \
      *yi = beta == 0 ? alpha * dot : alpha * dot + beta * *yi;                \
    }                                                                          \
  }
DEFINE_GEMV_ROWS(float, f32)
DEFINE_GEMV_ROWS(double, f64)

bp_status_t cpu_fast_gemv(cpu_device_t *dev, const bp_gemv_args_t *g) {
  bp_dtype_t dt = g->a.dtype;
  if ((dt != BP_F32 && dt != BP_F64) || g->x.dtype != dt ||
      g->y.dtype != dt || g->a.rank != 2 || g->x.rank != 1 ||
      g->y.rank != 1 || (g->a.shape[1] > 1 && g->a.strides[1] != 1) ||
      g->alpha == 0 || (g->y.shape[0] > 1 && g->y.strides[0] == 0))
    return BP_ERR_UNIMPLEMENTED;
  int64_t m = g->a.shape[0], n = g->a.shape[1];
  gemv_job_t j = {g, (const char *)(uintptr_t)g->a.ptr + g->a.offset,
                  (const char *)(uintptr_t)g->x.ptr + g->x.offset,
                  (char *)(uintptr_t)g->y.ptr + g->y.offset};
  cpu_pool_fn fn = dt == BP_F32 ? gemv_rows_f32 : gemv_rows_f64;
  /* Below ~256 KiB of A a second thread costs more than it brings. */
  if (dev->pool && (double)m * (double)n >= 65536.0)
    cpu_pool_run(dev->pool, m, 64, fn, &j);
  else
    fn(&j, 0, m, 0);
  return BP_OK;
}
