/*
 * test_opencl_bench.c — GEMM GFLOP/s of backend-opencl.so next to CLBlast
 * (Debian's libclblast1) on the same OpenCL device, in one run. Both
 * libraries are opened with dlopen; CLBlast is only ever used here.
 *
 * usage: test_opencl_bench [SIZE...]   (default 512 1024 2048)
 * Not part of `make test`; run by hand or from `make bench`.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugin-api.h"
#include "test_opencl_util.h"

/* CLBlast's C API (clblast_c.h is not packaged in Debian 12). */
typedef int (*clblast_sgemm_fn)(int layout, int ta, int tb, size_t m, size_t n,
                                size_t k, float alpha, cl_mem a, size_t ao,
                                size_t lda, cl_mem b, size_t bo, size_t ldb,
                                float beta, cl_mem c, size_t co, size_t ldc,
                                cl_command_queue *queue, cl_event *event);

static void h_log(bp_log_level_t l, const char *p, const char *fmt, ...) {
  if (l > (getenv("BP_BENCH_VERBOSE") ? BP_LOG_DEBUG : BP_LOG_INFO))
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[%s] ", p);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
static void h_err(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
static const char *h_getenv(const char *n) { return getenv(n); }
static const bp_host_services_t host = {
    .struct_size = offsetof(bp_host_services_t, set_error) + sizeof(void *),
    .abi_major = 1,
    .abi_minor = 0,
    .host_version = "bench",
    .log = h_log,
    .getenv = h_getenv,
    .set_error = h_err};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int reps_for(int n) { return n <= 512 ? 10 : n <= 1024 ? 4 : 2; }

/* Ours: best GFLOP/s over a few runs after one warm-up. */
static double bench_ours(const bp_plugin_descriptor_t *P,
                         bp_plugin_device_t *dev, bp_plugin_stream_t *s,
                         int n, const float *host_data) {
  uint64_t p[3];
  size_t bytes = (size_t)n * n * 4;
  for (int i = 0; i < 3; i++) {
    if (P->mem_alloc(dev, bytes, &p[i]) != BP_OK)
      return 0;
    P->mem_write(dev, NULL, p[i], 0, host_data, bytes);
  }
  bp_gemm_args_t g = {.struct_size = sizeof g, .alpha = 1.0, .beta = 0.0,
                      .a = tensor3(p[0], 0, BP_F32, 1, n, n, 0, n, 1),
                      .b = tensor3(p[1], 0, BP_F32, 1, n, n, 0, n, 1),
                      .c = tensor3(p[2], 0, BP_F32, 1, n, n, 0, n, 1)};
  double best = 1e30;
  for (int r = 0; r <= reps_for(n); r++) {
    double t0 = now_s();
    if (P->gemm(dev, s, &g) != BP_OK || P->stream_synchronize(dev, s) != BP_OK)
      return 0;
    double t = now_s() - t0;
    if (r > 0 && t < best)
      best = t;
  }
  for (int i = 0; i < 3; i++)
    P->mem_free(dev, p[i]);
  return 2.0 * n * n * n / best / 1e9;
}

typedef struct clb {
  clblast_sgemm_fn sgemm;
  cl_context ctx;
  cl_command_queue q;
  __typeof__(&clCreateBuffer) create_buffer;
  __typeof__(&clEnqueueWriteBuffer) write;
  __typeof__(&clFinish) finish;
  __typeof__(&clReleaseMemObject) release;
} clb_t;

/* CLBlast on its own context for device 0 of platform 0 (PoCL here). */
static int clb_open(clb_t *c) {
  void *ocl = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_GLOBAL);
  void *lib = dlopen("libclblast.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!ocl || !lib) {
    fprintf(stderr, "CLBlast or libOpenCL missing: %s\n", dlerror());
    return -1;
  }
  c->sgemm = (clblast_sgemm_fn)dlsym(lib, "CLBlastSgemm");
  __typeof__(&clGetPlatformIDs) plats = dlsym(ocl, "clGetPlatformIDs");
  __typeof__(&clGetDeviceIDs) devs = dlsym(ocl, "clGetDeviceIDs");
  __typeof__(&clCreateContext) mkctx = dlsym(ocl, "clCreateContext");
  __typeof__(&clCreateCommandQueue) mkq = dlsym(ocl, "clCreateCommandQueue");
  c->create_buffer = dlsym(ocl, "clCreateBuffer");
  c->write = dlsym(ocl, "clEnqueueWriteBuffer");
  c->finish = dlsym(ocl, "clFinish");
  c->release = dlsym(ocl, "clReleaseMemObject");
  cl_platform_id pl;
  cl_device_id d;
  cl_int err;
  if (!c->sgemm || plats(1, &pl, NULL) != CL_SUCCESS ||
      devs(pl, CL_DEVICE_TYPE_ALL, 1, &d, NULL) != CL_SUCCESS)
    return -1;
  c->ctx = mkctx(NULL, 1, &d, NULL, NULL, &err);
  c->q = c->ctx ? mkq(c->ctx, d, 0, &err) : NULL;
  return c->q ? 0 : -1;
}

static double bench_clblast(clb_t *c, int n, const float *host_data) {
  size_t bytes = (size_t)n * n * 4;
  cl_mem m[3];
  cl_int err;
  for (int i = 0; i < 3; i++) {
    m[i] = c->create_buffer(c->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    c->write(c->q, m[i], CL_TRUE, 0, bytes, host_data, 0, NULL, NULL);
  }
  double best = 1e30;
  for (int r = 0; r <= reps_for(n); r++) {
    double t0 = now_s();
    int st = c->sgemm(101, 111, 111, n, n, n, 1.0f, m[0], 0, n, m[1], 0, n,
                      0.0f, m[2], 0, n, &c->q, NULL);
    c->finish(c->q);
    double t = now_s() - t0;
    if (st != 0) {
      fprintf(stderr, "CLBlastSgemm failed: %d\n", st);
      return 0;
    }
    if (r > 0 && t < best)
      best = t;
  }
  for (int i = 0; i < 3; i++)
    c->release(m[i]);
  return 2.0 * n * n * n / best / 1e9;
}

int main(int argc, char **argv) {
  int sizes[16] = {512, 1024, 2048}, nsizes = 3;
  if (argc > 1)
    for (nsizes = 0; nsizes < argc - 1 && nsizes < 16; nsizes++)
      sizes[nsizes] = atoi(argv[nsizes + 1]);
  char path[PATH_MAX + 64], exe[PATH_MAX] = "";
  const char *env = getenv("BACKPLANE_PLUGIN_PATH");
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[len > 0 ? len : 0] = 0;
  if (strrchr(exe, '/'))
    *strrchr(exe, '/') = 0;
  snprintf(path, sizeof path, "%s/backend-opencl.so",
           env && *env ? env : strcat(exe, "/../plugins"));
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  const bp_plugin_descriptor_t *P = lib ? dlsym(lib, "bp_plugin_descriptor") : NULL;
  bp_device_info_t info;
  uint32_t count = 0;
  bp_plugin_device_t *dev = NULL;
  bp_plugin_stream_t *s = NULL;
  if (!P || P->init(&host) != BP_OK || P->probe(&info, 1, &count) != BP_OK ||
      count == 0 || P->device_open(0, NULL, &dev) != BP_OK ||
      P->stream_create(dev, &s) != BP_OK) {
    fprintf(stderr, "skipped: no OpenCL device through %s\n", path);
    return 0;
  }
  clb_t clb;
  memset(&clb, 0, sizeof clb);
  int have_clb = clb_open(&clb) == 0;
  printf("device: %s (%s)\n", info.name, info.driver_version);
  printf("%6s %14s %14s %8s\n", "n", "ours GFLOP/s", "CLBlast GF/s", "ratio");
  for (int i = 0; i < nsizes; i++) {
    int n = sizes[i];
    float *h = malloc((size_t)n * n * 4);
    for (size_t j = 0; j < (size_t)n * n; j++)
      h[j] = (float)((j * 7 + 3) % 11) / 8.0f - 0.6f;
    /* BENCH_CLBLAST_FIRST=1 swaps the order, to check neither run warms or
     * cools the machine for the other. */
    bool clb_first = getenv("BENCH_CLBLAST_FIRST") != NULL;
    double theirs = have_clb && clb_first ? bench_clblast(&clb, n, h) : 0;
    double ours = bench_ours(P, dev, s, n, h);
    if (have_clb && !clb_first)
      theirs = bench_clblast(&clb, n, h);
    printf("%6d %14.1f %14.1f %8.2f\n", n, ours, theirs,
           theirs > 0 ? ours / theirs : 0);
    fflush(stdout);
    free(h);
  }
  P->stream_destroy(dev, s);
  P->device_close(dev);
  P->shutdown();
  return 0;
}
