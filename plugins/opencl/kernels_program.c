/*
 * kernels_program.c — the plugin's own kernels: builds the embedded sources
 * (kernels/opencl/, embedded by plugin.mk) into programs, caches the
 * programs in memory per device and, as driver binaries, on disk under
 * $XDG_CACHE_HOME/backplane (or ~/.cache/backplane), keyed by device,
 * driver, source and options, so a warm run builds nothing from source.
 * Custom kernels (kernels.c) are built through the same binary cache.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ocl.h"
#include "ocl_sources.h"

#define OCL_MAX_KERNELS 16

struct ocl_program {
  ocl_family_t fam;
  char *options;
  cl_program prog;
  struct {
    const char *name; /* a string literal from the caller */
    cl_kernel k;
  } kernels[OCL_MAX_KERNELS];
  int nkernels;
  ocl_program_t *next;
};

static const char *const family_files[OCL_FAM_COUNT] = {
    [OCL_FAM_DATA] = "data.cl",           [OCL_FAM_ELEMENTWISE] = "elementwise.cl",
    [OCL_FAM_GEMM] = "gemm.cl",           [OCL_FAM_REDUCE] = "reduce.cl",
    [OCL_FAM_SOFTMAX] = "softmax.cl",     [OCL_FAM_NORM] = "norm.cl",
    [OCL_FAM_ATTENTION] = "attention.cl", [OCL_FAM_CONV] = "conv.cl",
    [OCL_FAM_POOL] = "pool.cl",           [OCL_FAM_BATCH_NORM] = "batch_norm.cl",
    [OCL_FAM_ADAM] = "adam.cl",           [OCL_FAM_RANDOM] = "random.cl",
    [OCL_FAM_MODEL] = "model.cl",         [OCL_FAM_QUANT] = "quant.cl",
};

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static double stats_ms;
static unsigned stats_source_builds;

double ocl_compile_ms(unsigned *out_source_builds) {
  pthread_mutex_lock(&stats_lock);
  double ms = stats_ms;
  if (out_source_builds) *out_source_builds = stats_source_builds;
  pthread_mutex_unlock(&stats_lock);
  return ms;
}

static void stats_add(double ms, bool from_source) {
  pthread_mutex_lock(&stats_lock);
  stats_ms += ms;
  stats_source_builds += from_source;
  pthread_mutex_unlock(&stats_lock);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

const char *ocl_source(const char *file) {
  for (int i = 0; ocl_sources[i].name; i++)
    if (strcmp(ocl_sources[i].name, file) == 0) return ocl_sources[i].text;
  return NULL;
}

uint64_t ocl_hash(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t hash_str(uint64_t h, const char *s) {
  return ocl_hash(h, s, strlen(s) + 1); /* the NUL separates fields */
}

bool ocl_cache_dir(char *out, size_t cap) {
  const char *xdg = ocl_host->getenv ? ocl_host->getenv("XDG_CACHE_HOME") : NULL;
  const char *home = ocl_host->getenv ? ocl_host->getenv("HOME") : NULL;
  char base[768];
  if (xdg && xdg[0] == '/')
    snprintf(base, sizeof base, "%s", xdg);
  else if (home && home[0] == '/')
    snprintf(base, sizeof base, "%s/.cache", home);
  else
    return false;
  if (mkdir(base, 0700) != 0 && errno != EEXIST) return false;
  int n = snprintf(out, cap, "%s/backplane", base);
  if (n < 0 || (size_t)n >= cap) return false;
  return mkdir(out, 0700) == 0 || errno == EEXIST;
}

/* The binary cache file for (device, driver, sources, options). */
static bool cache_path(const ocl_device_t *d, const char *prelude, const char *src,
                       const char *options, char *out, size_t cap) {
  char dir[800];
  if (!ocl_cache_dir(dir, sizeof dir)) return false;
  uint64_t h = 0xcbf29ce484222325ull;
  h = hash_str(h, d->caps.platform);
  h = hash_str(h, d->caps.name);
  h = hash_str(h, d->caps.driver);
  h = hash_str(h, d->caps.version);
  h = hash_str(h, prelude);
  h = hash_str(h, src);
  h = hash_str(h, options);
  int n = snprintf(out, cap, "%s/opencl-%016llx.bin", dir, (unsigned long long)h);
  return n > 0 && (size_t)n < cap;
}

static unsigned char *file_read(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  *out_size = 0;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
        fread(buf, 1, (size_t)n, f) == (size_t)n) {
      *out_size = (size_t)n;
    } else {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  return buf;
}

/* Writes via a temporary file and rename, so concurrent processes never see
 * a half-written binary. Failures only cost a rebuild next time. */
static void file_write_atomic(const char *path, const void *data, size_t n) {
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return;
  bool ok = fwrite(data, 1, n, f) == n;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

static cl_program build_from_binary(ocl_device_t *d, const char *path, const char *options) {
  size_t n = 0;
  unsigned char *bin = file_read(path, &n);
  if (!bin) return NULL;
  cl_int err = CL_SUCCESS, status = CL_SUCCESS;
  const unsigned char *bins[1] = {bin};
  cl_program p = ocl_api.clCreateProgramWithBinary(d->ctx, 1, &d->id, &n, bins, &status, &err);
  free(bin);
  if (!p) return NULL;
  double t0 = now_ms();
  err = ocl_api.clBuildProgram(p, 1, &d->id, options, NULL, NULL);
  stats_add(now_ms() - t0, false);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    OCL_LOG(BP_LOG_WARN, "cached binary %s rejected (%s); rebuilding", path, ocl_err_name(err));
    ocl_api.clReleaseProgram(p);
    return NULL;
  }
  return p;
}

static void binary_store(ocl_device_t *d, cl_program p, const char *path) {
  size_t n = 0;
  if (ocl_api.clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS ||
      n == 0)
    return;
  unsigned char *bin = malloc(n);
  if (!bin) return;
  unsigned char *bins[1] = {bin};
  if (ocl_api.clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
    file_write_atomic(path, bin, n);
  free(bin);
  (void)d;
}

static void build_log_report(ocl_device_t *d, cl_program p, const char *file, const char *options,
                             bp_log_level_t level) {
  size_t n = 0;
  ocl_api.clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
  char *log = malloc(n + 1);
  if (!log) return;
  log[0] = 0;
  ocl_api.clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, n, log, NULL);
  log[n] = 0;
  OCL_LOG(level, "building %s with '%s' failed:\n%s", file, options, log);
  ocl_host->set_error("opencl: building %s failed: %.300s", file, log);
  free(log);
}

/* Builds prelude (may be NULL) + src. A failure is the caller's to name:
 * ours is internal, an application's source is an invalid argument. */
static bp_status_t build_from_source(ocl_device_t *d, const char *file, const char *prelude,
                                     const char *src, const char *options, bp_status_t fail,
                                     cl_program *out) {
  const char *texts[2] = {prelude ? prelude : src, src};
  cl_int err = CL_SUCCESS;
  cl_program p = ocl_api.clCreateProgramWithSource(d->ctx, prelude ? 2 : 1, texts, NULL, &err);
  if (!p) return ocl_fail(err, "clCreateProgramWithSource");
  double t0 = now_ms();
  err = ocl_api.clBuildProgram(p, 1, &d->id, options, NULL, NULL);
  double ms = now_ms() - t0;
  stats_add(ms, true);
  if (err != CL_SUCCESS) {
    /* Our own kernels failing is a bug worth a warning; an application's
     * source failing is its error, already in the returned message. */
    build_log_report(d, p, file, options, fail == BP_ERR_INTERNAL ? BP_LOG_WARN : BP_LOG_DEBUG);
    ocl_api.clReleaseProgram(p);
    return fail;
  }
  OCL_LOG(BP_LOG_DEBUG, "built %s '%s' from source in %.0f ms", file, options, ms);
  *out = p;
  return BP_OK;
}

bp_status_t ocl_program_build_user(ocl_device_t *d, const char *name, const char *src,
                                   const char *options, cl_program *out) {
  char path[1024];
  bool cached = cache_path(d, "", src, options, path, sizeof path);
  if (cached && (*out = build_from_binary(d, path, options)) != NULL) return BP_OK;
  bp_status_t st = build_from_source(d, name, NULL, src, options, BP_ERR_INVALID_ARGUMENT, out);
  if (st == BP_OK && cached) binary_store(d, *out, path);
  return st;
}

static bp_status_t program_build(ocl_device_t *d, ocl_family_t fam, const char *options,
                                 cl_program *out) {
  const char *file = family_files[fam]; /* named in messages as is */
  const char *prelude = ocl_source("common.cl");
  const char *src = ocl_source(file);
  if (!prelude || !src) {
    ocl_host->set_error("opencl: kernels/opencl/%s is not built in", file);
    return BP_ERR_UNIMPLEMENTED;
  }
  char path[1024];
  bool cached = cache_path(d, prelude, src, options, path, sizeof path);
  if (cached && (*out = build_from_binary(d, path, options)) != NULL) return BP_OK;
  bp_status_t st = build_from_source(d, file, prelude, src, options, BP_ERR_INTERNAL, out);
  if (st == BP_OK && cached) binary_store(d, *out, path);
  return st;
}

static ocl_program_t *program_find(ocl_device_t *d, ocl_family_t fam, const char *options) {
  for (ocl_program_t *p = d->programs; p; p = p->next)
    if (p->fam == fam && strcmp(p->options, options) == 0) return p;
  return NULL;
}

static bp_status_t program_get(ocl_device_t *d, ocl_family_t fam, const char *options,
                               ocl_program_t **out) {
  if ((*out = program_find(d, fam, options)) != NULL) return BP_OK;
  ocl_program_t *p = calloc(1, sizeof *p);
  char *opts = strdup(options);
  bp_status_t st = BP_ERR_OUT_OF_MEMORY;
  if (!p || !opts) goto out;
  if ((st = program_build(d, fam, options, &p->prog)) != BP_OK) goto out;
  p->fam = fam;
  p->options = opts;
  p->next = d->programs;
  d->programs = p;
  *out = p;
  return BP_OK;
out:
  free(opts);
  free(p);
  return st;
}

bp_status_t ocl_kernel_get(ocl_device_t *d, ocl_family_t fam, const char *options, const char *name,
                           cl_kernel *out_kernel) {
  *out_kernel = NULL;
  ocl_program_t *p;
  bp_status_t st = program_get(d, fam, options, &p);
  if (st != BP_OK) return st;
  for (int i = 0; i < p->nkernels; i++)
    if (strcmp(p->kernels[i].name, name) == 0) {
      *out_kernel = p->kernels[i].k;
      return ocl_graph_own_kernel(p->prog, name, out_kernel);
    }
  if (p->nkernels == OCL_MAX_KERNELS) return BP_ERR_INTERNAL;
  cl_int err = CL_SUCCESS;
  cl_kernel k = ocl_api.clCreateKernel(p->prog, name, &err);
  if (!k) return ocl_fail(err, name);
  p->kernels[p->nkernels].name = name;
  p->kernels[p->nkernels++].k = k;
  *out_kernel = k;
  return ocl_graph_own_kernel(p->prog, name, out_kernel);
}

void ocl_programs_release(ocl_device_t *d) {
  while (d->programs) {
    ocl_program_t *p = d->programs;
    d->programs = p->next;
    for (int i = 0; i < p->nkernels; i++) ocl_api.clReleaseKernel(p->kernels[i].k);
    ocl_api.clReleaseProgram(p->prog);
    free(p->options);
    free(p);
  }
}
