/*
 * plugins/gpu/ops_blas.c — gemm and gemv of the CUDA and ROCm backends:
 * marshalling into kernels/cuda/gemm.cu, and for gemm the vendor BLAS
 * (cuBLAS, rocBLAS; blas.c) where it wins, chosen per shape bucket by
 * timing both once and remembered in the core's tuning
 * cache (host tune_lookup / tune_store, key op "gemm-blas", bucket
 * "<dtype>-m<M>n<N>k<K>-b<1|n>" with M, N, K rounded up to powers of two).
 *
 * GPU_BLAS_CHOICE_ENV (BACKPLANE_CUDA_BLAS, BACKPLANE_ROCM_BLAS): 0 never
 * uses the vendor library, 1 always (no timing); unset: tune. The device
 * struct has `bp_gpu_blas_state_t blas` under its `lock`.
 *
 * Choices:
 *  - a GEMM epilogue the vendor call cannot take (an activation into an
 *    f16 / bf16 C, or a bias there with beta != 0: fused in the own
 *    kernel; f32 / f64 take theirs in a pass after the call), not
 *    mappable onto a BLAS call (blas.h), vendor library absent or
 *    broken, or BLAS=0: own kernel;
 *  - a bucket first met while this thread captures a graph cannot be
 *    timed (that needs a synchronisation): the vendor library is taken,
 *    for this process only (not stored), so later direct calls agree with
 *    the graph bit for bit;
 *  - else both run on scratch output (beta 0, so the real C is untouched)
 *    on the caller's stream, best of three after a warm-up each, and the
 *    faster is stored.
 * A vendor call that fails marks the library broken for the device (logged
 * once) and the own kernel runs the call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/gpu/gpu.h"

#define GRID_YZ_MAX 65535

static const char *gemm_kernel(bp_dtype_t dt) {
  switch (dt) {
  case BP_F16:
    return "bp_gemm_f16"; /* tensor cores */
  case BP_BF16:
    return "bp_gemm_bf16";
  case BP_F64:
    return "bp_gemm_f64";
  default:
    return "bp_gemm_f32";
  }
}

/* The plugin's own gemm kernels; gpu_op_gemm (below) chooses between
 * them and the vendor BLAS. */
static void gemm_params(const bp_gemm_args_t *a, bpk_gemm_args_t *p) {
  memset(p, 0, sizeof *p);
  bp_gpu_tensor(&a->a, &p->a);
  bp_gpu_tensor(&a->b, &p->b);
  bp_gpu_tensor(&a->c, &p->c);
  p->alpha = a->alpha;
  p->beta = a->beta;
  if (a->bias.rank) bp_gpu_tensor(&a->bias, &p->bias);
  p->act = (a->flags & BP_GEMM_FLAG_ACTIVATION) ? a->activation : BPK_GEMM_NO_ACT;
}

static bp_status_t gemm_own(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                            const bp_gemm_args_t *a) {
  bpk_gemm_args_t p;
  gemm_params(a, &p);
  const int64_t batch = p.c.shape[0], m = p.c.shape[1], n = p.c.shape[2];
  if (batch == 0 || m == 0 || n == 0) return BP_OK;
  const int64_t tiles_m = (m + BPK_GEMM_TILE - 1) / BPK_GEMM_TILE;
  if (tiles_m > GRID_YZ_MAX) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": gemm with m = %lld exceeds the grid (at most "
                                        "%d rows)",
                        (long long)m, GRID_YZ_MAX * BPK_GEMM_TILE);
    return BP_ERR_UNSUPPORTED;
  }
  /* TF32 (BP_GEMM_FLAG_ALLOW_TF32) is not used: f32 runs on the SIMT
   * kernel at full precision either way. The batch loops grid-stride past
   * 65535. */
  unsigned grid[3] = {(unsigned)((n + BPK_GEMM_TILE - 1) / BPK_GEMM_TILE), (unsigned)tiles_m,
                      (unsigned)(batch < GRID_YZ_MAX ? batch : GRID_YZ_MAX)};
  unsigned block[3] = {BPK_GEMM_THREADS, 1, 1};
  return gpu_launch(gpu_dev(device), stream, BP_GPU_MOD_GEMM, gemm_kernel(a->c.dtype), grid, block,
                    0, &p);
}

/* One pass of gemm_passes.cuh over C (grid x over n, y over the rows). */
static bp_status_t gemm_c_pass(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                               const bp_gemm_args_t *a, const char *kernel) {
  bpk_gemm_args_t p;
  gemm_params(a, &p);
  const int64_t rows = p.c.shape[0] * p.c.shape[1], n = p.c.shape[2];
  unsigned grid[3] = {gpu_blocks_for(n, 256), (unsigned)(rows < GRID_YZ_MAX ? rows : GRID_YZ_MAX),
                      1};
  unsigned block[3] = {256, 1, 1};
  return gpu_launch(gpu_dev(device), stream, BP_GPU_MOD_GEMM, kernel, grid, block, 0, &p);
}

/* C = act(C + bias) in place after a vendor call into an f32 / f64 C. */
static bp_status_t gemm_epilogue_pass(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                      const bp_gemm_args_t *a) {
  return gemm_c_pass(device, stream, a,
                     a->c.dtype == BP_F64 ? "bp_gemm_epilogue_d" : "bp_gemm_epilogue_f");
}

/* The bytes [*lo, *hi) of its buffer a view of 2-byte elements spans. */
static void view_span_h(const bp_plugin_tensor_t *t, uint64_t *lo, uint64_t *hi) {
  int64_t below = 0, above = 0;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) {
      *lo = *hi = t->offset;
      return;
    }
    const int64_t d = (t->shape[i] - 1) * t->strides[i];
    if (d < 0)
      below += d;
    else
      above += d;
  }
  *lo = t->offset + (uint64_t)(below * 2);
  *hi = t->offset + (uint64_t)((above + 1) * 2);
}

static bool views_apart_h(const bp_plugin_tensor_t *x, const bp_plugin_tensor_t *y) {
  if (x->ptr != y->ptr) return true;
  uint64_t xl, xh, yl, yh;
  view_span_h(x, &xl, &xh);
  view_span_h(y, &yl, &yh);
  return xh <= yl || yh <= xl;
}

/* Whether an f16 / bf16 call's epilogue is a bias alone that the vendor
 * call can add: with beta 0 and the bias (c's dtype, so exact) written into
 * C first, beta 1 makes the vendor add alpha·A·B in its f32 compute type
 * and round once, the fused kernels' arithmetic. An activation after it
 * would round C twice. The core refuses a C that overlaps A or B; the
 * plugin checks again, since the bias would overwrite an input. */
static bool gemm_bias_before(const bp_gemm_args_t *a) {
  return a->bias.rank && !(a->flags & BP_GEMM_FLAG_ACTIVATION) && a->beta == 0.0 &&
         (a->c.dtype == BP_F16 || a->c.dtype == BP_BF16) && a->bias.dtype == a->c.dtype &&
         a->a.dtype == a->c.dtype && a->b.dtype == a->c.dtype && views_apart_h(&a->c, &a->a) &&
         views_apart_h(&a->c, &a->b);
}

/* ---- own kernel or vendor BLAS ------------------------------------------ */

static int64_t pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v && p < ((int64_t)1 << 40)) p <<= 1;
  return p;
}

static const char *blas_dtype_name(bp_dtype_t dt) {
  switch (dt) {
  case BP_F16:
    return "f16";
  case BP_BF16:
    return "bf16";
  case BP_F64:
    return "f64";
  default:
    return "f32";
  }
}

static bool blas_host_cache(void) {
  const bp_host_services_t *h = gpu_host;
  return h && h->struct_size >= offsetof(bp_host_services_t, tune_store) + sizeof(void *) &&
         h->tune_lookup && h->tune_store;
}

static double blas_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Seconds of the best of three runs after a warm-up; 1e30 on failure. */
static double blas_time(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_gemm_args_t *g, const bp_gpu_blas_call_t *call) {
  double best = 1e30;
  for (int rep = 0; rep < 4; rep++) {
    double t0 = blas_now();
    bp_status_t st =
        call ? gpu_blas_run(gpu_dev(device), stream, call) : gemm_own(device, stream, g);
    if (st != BP_OK || gpu_stream_synchronize(device, stream) != BP_OK) return 1e30;
    double t = blas_now() - t0;
    if (rep > 0 && t < best) best = t;
  }
  return best;
}

/* Times own and vendor on a dense scratch C; true when the vendor wins. */
static bool blas_measure(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                         const bp_gemm_args_t *g, bool *out_vendor) {
  const int64_t batch = g->c.shape[0], m = g->c.shape[1], n = g->c.shape[2];
  const uint64_t es = g->c.dtype == BP_F64 ? 8 : g->c.dtype == BP_F32 ? 4 : 2;
  const uint64_t bytes = (uint64_t)batch * m * n * es;
  if (bytes > ((uint64_t)256 << 20))
    return false; /* too big to copy for a measurement: not decided */
  uint64_t scratch = 0;
  if (gpu_mem_alloc(device, bytes ? bytes : es, &scratch) != BP_OK) return false;
  bp_gemm_args_t t = *g;
  t.beta = 0.0;
  t.c.ptr = scratch, t.c.offset = 0;
  t.c.strides[2] = 1, t.c.strides[1] = n, t.c.strides[0] = m * n;
  bp_gpu_blas_call_t call;
  bool ok = bp_gpu_blas_map(&t, &call);
  double own = 1e30, vendor = 1e30;
  if (ok) {
    own = blas_time(device, stream, &t, NULL);
    vendor = blas_time(device, stream, &t, &call);
  }
  gpu_mem_free(device, scratch);
  if (!ok || (own >= 1e30 && vendor >= 1e30)) return false;
  *out_vendor = vendor < own;
  gpu_log(BP_LOG_INFO,
          "gemm %s [%lld x %lld x %lld, batch %lld]: own "
          "kernel %.3f ms, " GPU_BLAS_NAME " %.3f ms: %s",
          blas_dtype_name(g->c.dtype), (long long)m, (long long)n, (long long)g->a.shape[2],
          (long long)batch, own * 1e3, vendor * 1e3, *out_vendor ? GPU_BLAS_NAME : "own kernel");
  return true;
}

/* The remembered choice for bucket, if any (device lock held). */
static bool blas_recall(gpu_device_t *d, const char *bucket, bool *vendor) {
  int n = d->blas.count < BP_GPU_BLAS_CHOICES ? d->blas.count : BP_GPU_BLAS_CHOICES;
  for (int i = 0; i < n; i++)
    if (strcmp(d->blas.choices[i].bucket, bucket) == 0) {
      *vendor = d->blas.choices[i].vendor;
      return true;
    }
  return false;
}

static void blas_remember(gpu_device_t *d, const char *bucket, bool vendor) {
  pthread_mutex_lock(&d->lock);
  bool old;
  if (!blas_recall(d, bucket, &old)) {
    int i = d->blas.count++ % BP_GPU_BLAS_CHOICES;
    snprintf(d->blas.choices[i].bucket, sizeof d->blas.choices[i].bucket, "%s", bucket);
    d->blas.choices[i].vendor = vendor;
  }
  pthread_mutex_unlock(&d->lock);
}

/* Whether this call goes to the vendor library. */
static bool blas_choose(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_gemm_args_t *g) {
  gpu_device_t *d = gpu_dev(device);
  const char *env = gpu_host->getenv(GPU_BLAS_CHOICE_ENV);
  if (env && strcmp(env, "0") == 0) return false;
  if (!gpu_blas_ready(d)) return false;
  if (env && strcmp(env, "1") == 0) return true;
  char bucket[48];
  snprintf(bucket, sizeof bucket, "%s-m%lldn%lldk%lld-b%s", blas_dtype_name(g->c.dtype),
           (long long)pow2_ceil(g->c.shape[1]), (long long)pow2_ceil(g->c.shape[2]),
           (long long)pow2_ceil(g->a.shape[2]), g->c.shape[0] > 1 ? "n" : "1");
  bool vendor = false;
  pthread_mutex_lock(&d->lock);
  bool known = blas_recall(d, bucket, &vendor);
  pthread_mutex_unlock(&d->lock);
  if (known) return vendor;

  char dev_name[128], driver[128], value[BP_TUNE_VALUE_MAX];
  gpu_blas_identity(d, dev_name, sizeof dev_name, driver, sizeof driver);
  bp_tune_key_t key = {sizeof key, GPU_PLUGIN_NAME, GPU_PLUGIN_VERSION,          dev_name,
                       driver,     "gemm-blas",     blas_dtype_name(g->c.dtype), bucket};
  bool host = blas_host_cache();
  if (host && gpu_host->tune_lookup(&key, value, sizeof value) &&
      (strcmp(value, "vendor") == 0 || strcmp(value, "own") == 0)) {
    vendor = strcmp(value, "vendor") == 0;
  } else if (gpu_capturing_here() || !stream) {
    vendor = true; /* cannot time here: see the top of this file */
  } else if (blas_measure(device, stream, g, &vendor)) {
    if (host) gpu_host->tune_store(&key, vendor ? "vendor" : "own");
  } else {
    vendor = true;
  }
  blas_remember(d, bucket, vendor);
  return vendor;
}

bp_status_t gpu_op_gemm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_gemm_args_t *a) {
  const int64_t batch = a->c.shape[0], m = a->c.shape[1], n = a->c.shape[2];
  bp_gpu_blas_call_t call;
  /* The vendor BLAS has no epilogue. Into an f32 / f64 C, which holds the
   * compute type, a second pass applies it with the fused kernels'
   * arithmetic (one more read and write of C, far less than what the own
   * kernels lose to the vendor's); into f16 / bf16 a pass would round C
   * twice, so there only a bias alone goes in first (gemm_bias_before) and
   * the own kernel, which fuses it, runs the other epilogues. */
  const bool epilogue = a->bias.rank || (a->flags & BP_GEMM_FLAG_ACTIVATION);
  const bool pass = epilogue && (a->c.dtype == BP_F32 || a->c.dtype == BP_F64);
  const bool before = epilogue && !pass && gemm_bias_before(a);
  bp_gemm_args_t v = *a;
  if (before) v.beta = 1.0;
  if ((epilogue && !pass && !before) || batch == 0 || m == 0 || n == 0 ||
      a->a.shape[2] == 0 || !bp_gpu_blas_map(&v, &call) || !blas_choose(device, stream, a))
    return gemm_own(device, stream, a);
  gpu_device_t *d = gpu_dev(device);
  bp_status_t st = before ? gemm_c_pass(device, stream, a, "bp_gemm_bias_fill_h") : BP_OK;
  if (st != BP_OK) return st; /* the plugin's own launch failed, not the vendor */
  st = gpu_blas_run(d, stream, &call);
  if (st == BP_OK) return pass ? gemm_epilogue_pass(device, stream, a) : BP_OK;
  pthread_mutex_lock(&d->lock);
  bool first = !d->blas.broken;
  d->blas.broken = true;
  pthread_mutex_unlock(&d->lock);
  if (first)
    gpu_log(BP_LOG_WARN,
            GPU_BLAS_NAME " gemm failed (status %d): the "
                          "plugin's own gemm kernels from now on on this device",
            (int)st);
  return gemm_own(device, stream, a);
}

#define ROW_THREADS 256u /* one warp per row: 8 rows per block */

bp_status_t gpu_op_gemv(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_gemv_args_t *a) {
  bpk_gemv_args_t p;
  memset(&p, 0, sizeof p);
  bp_gpu_tensor(&a->a, &p.a);
  bp_gpu_vec(&a->x, &p.x);
  bp_gpu_vec(&a->y, &p.y);
  p.m = a->a.shape[0];
  p.n = a->a.shape[1];
  p.alpha = a->alpha;
  p.beta = a->beta;
  if (p.m == 0) return BP_OK;
  unsigned grid[3] = {gpu_blocks_for(p.m * 32, ROW_THREADS), 1, 1};
  unsigned block[3] = {ROW_THREADS, 1, 1};
  return gpu_launch(gpu_dev(device), stream, BP_GPU_MOD_GEMM,
                    a->y.dtype == BP_F64 ? "bp_gemv_d" : "bp_gemv_f", grid, block, 0, &p);
}
