/*
 * ops_blas_tune.c — chooses the tiled-gemm configuration (ops_blas.c) per
 * device and dtype by timing a few candidates on a 512^3 problem, and
 * remembers the winner in
 * the core's tuning cache (host tune_lookup / tune_store, ABI 1.1) or, with
 * a 1.0 host, in $XDG_CACHE_HOME/backplane/opencl-gemm-<key>.txt. Either
 * key covers device, driver, plugin version, kernel source and dtype.
 *
 * BACKPLANE_OPENCL_GEMM="TM,TN,TK,WM,WN,VW,UK,LOCAL" forces a configuration
 * (for experiments); BACKPLANE_OPENCL_TUNE=0 skips measuring and takes the
 * first candidate that fits the device.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ocl.h"

/* TM TN TK WM WN VW UK LOCAL. The register-only variants come first: they
 * win on CPU drivers (LOCAL 2 adds cache blocking by barriers); the
 * local-memory ones (LOCAL 1) are the GPU shapes. */
static const ocl_gemm_cfg_t candidates[] = {
    {64, 64, 16, 8, 32, 16, 4, 0},   {32, 64, 16, 8, 32, 16, 4, 0}, {64, 128, 16, 4, 64, 16, 2, 0},
    {32, 32, 16, 4, 32, 16, 8, 0},   {64, 64, 16, 8, 16, 8, 4, 0},  {32, 32, 16, 4, 16, 8, 4, 0},
    {48, 128, 16, 6, 64, 16, 4, 0},  {64, 96, 16, 8, 48, 16, 4, 0}, {64, 64, 64, 8, 32, 16, 4, 2},
    {64, 128, 128, 4, 64, 16, 4, 2}, {64, 64, 16, 4, 4, 4, 4, 1},   {64, 64, 16, 8, 8, 8, 4, 1},
    {128, 128, 8, 8, 8, 4, 8, 1},    {32, 32, 16, 2, 2, 2, 4, 1},
};
#define NCAND (sizeof candidates / sizeof candidates[0])

static bool cfg_fits(const ocl_device_t *d, bp_dtype_t dt, const ocl_gemm_cfg_t *c) {
  size_t wg = (size_t)(c->tile_n / c->wpt_n) * (size_t)(c->tile_m / c->wpt_m);
  size_t es = dt == BP_F64 ? 8 : 4;
  size_t lmem = c->use_local == 1 ? es * (size_t)c->tile_k * (c->tile_m + c->tile_n) : 0;
  return wg <= d->caps.max_wg && lmem <= d->caps.local_mem && c->wpt_n % c->vec == 0 &&
         (!c->use_local || c->tile_k % c->unroll_k == 0) && c->use_local >= 0 && c->use_local <= 2;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static bool tune_path(const ocl_device_t *d, bp_dtype_t dt, char *out, size_t cap) {
  char dir[800];
  if (!ocl_cache_dir(dir, sizeof dir)) return false;
  const char *src = ocl_source("gemm.cl");
  uint64_t h = 0xcbf29ce484222325ull;
  const char *parts[] = {d->caps.platform, d->caps.name, d->caps.driver, d->caps.version,
                         src ? src : ""};
  for (size_t i = 0; i < 5; i++) h = ocl_hash(h, parts[i], strlen(parts[i]) + 1);
  h = ocl_hash(h, &dt, sizeof dt);
  int n = snprintf(out, cap, "%s/opencl-gemm-%016llx.txt", dir, (unsigned long long)h);
  return n > 0 && (size_t)n < cap;
}

static bool cfg_parse(const char *s, ocl_gemm_cfg_t *c);

/* The host's tuning cache, when the loader is ABI 1.1 or newer. */
static bool host_has_tune_cache(void) {
  return ocl_host &&
         ocl_host->struct_size >= offsetof(bp_host_services_t, tune_store) + sizeof(void *) &&
         ocl_host->tune_lookup && ocl_host->tune_store;
}

/* The bucket names the kernel source too: a changed gemm.cl must retune
 * even when the plugin version string did not move. */
static void host_key(const ocl_device_t *d, bp_dtype_t dt, char *bucket, size_t cap,
                     bp_tune_key_t *key) {
  const char *src = ocl_source("gemm.cl");
  uint64_t h = ocl_hash(0xcbf29ce484222325ull, src ? src : "", src ? strlen(src) : 0);
  snprintf(bucket, cap, "tiled-all-shapes-src%016llx", (unsigned long long)h);
  memset(key, 0, sizeof *key);
  key->struct_size = sizeof *key;
  key->plugin = OCL_NAME;
  key->plugin_version = OCL_VERSION;
  key->device = d->caps.name;
  key->driver_version = d->caps.driver;
  key->op = "gemm";
  key->dtype = dt == BP_F64 ? "f64" : "f32";
  key->bucket = bucket;
}

static bool cfg_parse(const char *s, ocl_gemm_cfg_t *c) {
  return sscanf(s, "%d%*[ ,]%d%*[ ,]%d%*[ ,]%d%*[ ,]%d%*[ ,]%d%*[ ,]%d%*[ ,]%d", &c->tile_m,
                &c->tile_n, &c->tile_k, &c->wpt_m, &c->wpt_n, &c->vec, &c->unroll_k,
                &c->use_local) == 8 &&
         c->wpt_m > 0 && c->wpt_n > 0 && c->vec > 0 && c->unroll_k > 0 &&
         c->tile_m % c->wpt_m == 0 && c->tile_n % c->wpt_n == 0;
}

static bool cfg_load(const char *path, ocl_gemm_cfg_t *c) {
  FILE *f = fopen(path, "r");
  char line[128] = "";
  if (!f) return false;
  bool ok = fgets(line, sizeof line, f) && cfg_parse(line, c);
  fclose(f);
  return ok;
}

static void cfg_store(const char *path, const ocl_gemm_cfg_t *c, double gf) {
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  fprintf(f,
          "%d %d %d %d %d %d %d %d\n# TM TN TK WM WN VW UK LOCAL; "
          "%.1f GFLOP/s at 512^3\n",
          c->tile_m, c->tile_n, c->tile_k, c->wpt_m, c->wpt_n, c->vec, c->unroll_k, c->use_local,
          gf);
  if (fclose(f) != 0 || rename(tmp, path) != 0) remove(tmp);
}

/* Seconds for one 512^3 gemm with cfg: the best of five after a warm-up,
 * since the best run is the one least disturbed by other processes. */
static double cfg_time(ocl_device_t *d, bp_dtype_t dt, const ocl_gemm_cfg_t *c,
                       const bp_gemm_args_t *g) {
  double best = 1e30;
  for (int rep = 0; rep < 6; rep++) {
    double t0 = now_s();
    if (ocl_gemm_tiled(d, d->queue, c, g) != BP_OK || ocl_api.clFinish(d->queue) != CL_SUCCESS)
      return 1e30;
    double t = now_s() - t0;
    if (rep > 0 && t < best) best = t;
  }
  (void)dt;
  return best;
}

static bp_plugin_tensor_t tune_tensor(cl_mem m, bp_dtype_t dt, int64_t n) {
  bp_plugin_tensor_t t;
  memset(&t, 0, sizeof t);
  t.ptr = (uint64_t)(uintptr_t)m;
  t.dtype = dt;
  t.rank = 3;
  t.shape[0] = 1, t.shape[1] = n, t.shape[2] = n;
  t.strides[0] = n * n, t.strides[1] = n, t.strides[2] = 1;
  return t;
}

static bp_status_t tune_measure(ocl_device_t *d, bp_dtype_t dt, ocl_gemm_cfg_t *out,
                                double *out_gflops) {
  enum { N = 512 };
  size_t bytes = (size_t)N * N * ocl_dtype_size(dt);
  void *zeros = calloc(1, bytes); /* zeros: no denormal slow paths */
  cl_int err = CL_SUCCESS;
  cl_mem m = zeros ? ocl_api.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                                            zeros, &err)
                   : NULL;
  free(zeros);
  if (!m) return ocl_fail(err, "clCreateBuffer (gemm tuning)");
  bp_gemm_args_t g = {.struct_size = sizeof g,
                      .alpha = 1.0,
                      .a = tune_tensor(m, dt, N),
                      .b = tune_tensor(m, dt, N),
                      .c = tune_tensor(m, dt, N)};
  double best = 1e30;
  for (size_t i = 0; i < NCAND; i++) {
    if (!cfg_fits(d, dt, &candidates[i])) continue;
    double t = cfg_time(d, dt, &candidates[i], &g);
    OCL_LOG(BP_LOG_DEBUG, "gemm tune %s cand %zu: %.1f GFLOP/s", d->caps.name, i,
            2.0 * N * N * N / t / 1e9);
    if (t < best) {
      best = t;
      *out = candidates[i];
    }
  }
  ocl_api.clReleaseMemObject(m);
  if (best >= 1e30) {
    ocl_host->set_error("opencl: no gemm configuration runs on %s", d->caps.name);
    return BP_ERR_UNSUPPORTED;
  }
  *out_gflops = 2.0 * N * N * N / best / 1e9;
  OCL_LOG(BP_LOG_INFO,
          "gemm tuned for %s: %d %d %d %d %d %d %d %d, "
          "%.1f GFLOP/s at 512^3",
          d->caps.name, out->tile_m, out->tile_n, out->tile_k, out->wpt_m, out->wpt_n, out->vec,
          out->unroll_k, out->use_local, 2.0 * N * N * N / best / 1e9);
  return BP_OK;
}

/* f16 and bf16 are packed to f32 before the tiled kernel, which then does
 * exactly the f32 work: they share f32's configuration. */
static bp_dtype_t tune_dtype(bp_dtype_t dt) {
  return dt == BP_F64 ? BP_F64 : BP_F32;
}

bp_status_t ocl_gemm_config(ocl_device_t *d, bp_dtype_t dt, const ocl_gemm_cfg_t **out_cfg) {
  dt = tune_dtype(dt);
  *out_cfg = &d->gemm_cfg[dt];
  if (d->gemm_tuned[dt]) return BP_OK;
  ocl_gemm_cfg_t *c = &d->gemm_cfg[dt];
  const char *force = ocl_host->getenv("BACKPLANE_OPENCL_GEMM");
  const char *tune = ocl_host->getenv("BACKPLANE_OPENCL_TUNE");
  char path[1024], bucket[64], value[BP_TUNE_VALUE_MAX];
  bool host = host_has_tune_cache();
  bool have_path = !host && tune_path(d, dt, path, sizeof path);
  bp_tune_key_t key;
  host_key(d, dt, bucket, sizeof bucket, &key);
  bp_status_t st = BP_OK;
  if (force && cfg_parse(force, c) && cfg_fits(d, dt, c)) {
    /* forced: nothing to do */
  } else if (host && ocl_host->tune_lookup(&key, value, sizeof value) && cfg_parse(value, c) &&
             cfg_fits(d, dt, c)) {
    /* from the core's cache */
  } else if (have_path && cfg_load(path, c) && cfg_fits(d, dt, c)) {
    /* from the plugin-local cache */
  } else if (tune && strcmp(tune, "0") == 0) {
    st = BP_ERR_UNSUPPORTED;
    for (size_t i = 0; i < NCAND && st != BP_OK; i++)
      if (cfg_fits(d, dt, &candidates[i])) {
        *c = candidates[i];
        st = BP_OK;
      }
  } else {
    /* The tuner's launches run now, on the device queue, even while this
     * thread records a graph (which may be for that queue). */
    double gflops = 0;
    ocl_graph_pause(true);
    st = tune_measure(d, dt, c, &gflops);
    ocl_graph_pause(false);
    if (st == BP_OK && host) {
      snprintf(value, sizeof value, "%d %d %d %d %d %d %d %d", c->tile_m, c->tile_n, c->tile_k,
               c->wpt_m, c->wpt_n, c->vec, c->unroll_k, c->use_local);
      ocl_host->tune_store(&key, value);
    } else if (st == BP_OK && have_path) {
      cfg_store(path, c, gflops);
    }
  }
  d->gemm_tuned[dt] = st == BP_OK;
  return st;
}
