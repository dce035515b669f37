/*
 * tools/gemm_cputime.c — f32 / f64 GEMM of the "cpu" device's fast path
 * (plugins/cpu/fast/gemm/, linked from a build's objects) against MKL's
 * cblas_sgemm / cblas_dgemm (dlopen), alternating in one process: best
 * wall time and best CPU time of the calling thread per side, and their
 * ratios (MKL's time / ours: above 1 means faster than MKL). With one
 * thread the CPU time is what the host's load inflates least. Not built
 * by make; with a build folder B (bench-venv/ there from `make bench`):
 *
 *   B=build
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -I. -Icore -o gemm_cputime tools/gemm_cputime.c
 *     $(find $B/obj/plugins/cpu/fast -name '*.o')
 *     $B/obj/plugins/cpu/threadpool.o $B/obj/plugins/cpu/cpu_features.o
 *     $B/obj/plugins/cpu/topology.o -lm -lpthread -ldl     (one line)
 *   MKL_RT=$B/bench-venv/lib/libmkl_rt.so.3 ./gemm_cputime f32 1 1024 1024 1024 1 8
 *
 * Arguments: dtype (f32 | f64), batch, m, n, k, threads, repetitions
 * [nomkl]. Operands row-major; AXPY=1 in the environment times the axpy
 * matrix-vector product (gemv.c) directly instead of the GEMM entry.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "plugins/cpu/cpu.h"
#include "plugins/cpu/fast/gemm/gemm.h"
typedef void (*sg_t)(int, int, int, int, int, int, float, const float *, int, const float *, int,
                     float, float *, int);
typedef void (*dg_t)(int, int, int, int, int, int, double, const double *, int, const double *, int,
                     double, double *, int);
static double ts(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static bp_plugin_tensor_t T3(void *p, int dt, int64_t d0, int64_t d1, int64_t d2, int64_t s0,
                             int64_t s1, int64_t s2) {
  bp_plugin_tensor_t t;
  memset(&t, 0, sizeof t);
  t.ptr = (uint64_t)(uintptr_t)p;
  t.dtype = dt;
  t.rank = 3;
  t.shape[0] = d0;
  t.shape[1] = d1;
  t.shape[2] = d2;
  t.strides[0] = s0;
  t.strides[1] = s1;
  t.strides[2] = s2;
  return t;
}
int main(int argc, char **argv) {
  if (argc < 8) return 2;
  int f64 = !strcmp(argv[1], "f64");
  int64_t B = atoll(argv[2]), m = atoll(argv[3]), n = atoll(argv[4]), k = atoll(argv[5]);
  unsigned thr = atoi(argv[6]);
  int reps = atoi(argv[7]);
  int skipmkl = argc > 8 && !strcmp(argv[8], "nomkl");
  size_t es = f64 ? 8 : 4;
  char *A = aligned_alloc(64, (es * B * m * k + 63) / 64 * 64),
       *Bm = aligned_alloc(64, (es * B * k * n + 63) / 64 * 64),
       *C = aligned_alloc(64, (es * B * m * n + 63) / 64 * 64);
  for (int64_t i = 0; i < B * m * k; i++) {
    if (f64)
      ((double *)A)[i] = (i % 17) * 0.1;
    else
      ((float *)A)[i] = (i % 17) * 0.1f;
  }
  for (int64_t i = 0; i < B * k * n; i++) {
    if (f64)
      ((double *)Bm)[i] = (i % 13) * 0.1;
    else
      ((float *)Bm)[i] = (i % 13) * 0.1f;
  }
  memset(C, 0, es * B * m * n);
  void *h =
      skipmkl ? NULL
              : dlopen(getenv("MKL_RT") ? getenv("MKL_RT") : "build/bench-venv/lib/libmkl_rt.so.3",
                       RTLD_NOW | RTLD_LOCAL);
  sg_t sg = h ? (sg_t)dlsym(h, "cblas_sgemm") : NULL;
  dg_t dg = h ? (dg_t)dlsym(h, "cblas_dgemm") : NULL;
  void (*setn)(int) = h ? (void (*)(int))dlsym(h, "MKL_Set_Num_Threads") : NULL;
  if (setn) setn((int)thr);
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  dev.isa = BP_ISA_BEST;
  dev.threads = thr;
  dev.pool = thr > 1 ? cpu_pool_create(thr) : NULL;
  int dt = f64 ? BP_F64 : BP_F32;
  bp_gemm_args_t g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.alpha = 1;
  g.beta = 0;
  g.a = T3(A, dt, B, m, k, m * k, k, 1);
  g.b = T3(Bm, dt, B, k, n, k * n, n, 1);
  g.c = T3(C, dt, B, m, n, m * n, n, 1);
  double bw[2] = {1e9, 1e9}, bc[2] = {1e9, 1e9};
  for (int r = 0; r < reps + 1; r++)
    for (int s = 0; s < 2; s++) {
      if (s == 1 && !h) continue;
      double w0 = ts(CLOCK_MONOTONIC), c0 = ts(CLOCK_THREAD_CPUTIME_ID);
      if (s == 0 && getenv("AXPY"))
        cpu_fast_gemv_axpy(&dev, f64, k, n, A, 1, Bm, n, C, 1, 1.0, 0.0);
      else if (s == 0) {
        if (cpu_fast_gemm(&dev, &g) != BP_OK) {
          printf("fail\n");
          return 1;
        }
      } else
        for (int64_t b = 0; b < B; b++) {
          if (f64)
            dg(101, 111, 111, m, n, k, 1.0, (double *)A + b * m * k, k, (double *)Bm + b * k * n, n,
               0.0, (double *)C + b * m * n, n);
          else
            sg(101, 111, 111, m, n, k, 1.0f, (float *)A + b * m * k, k, (float *)Bm + b * k * n, n,
               0.0f, (float *)C + b * m * n, n);
        }
      double w = ts(CLOCK_MONOTONIC) - w0, c = ts(CLOCK_THREAD_CPUTIME_ID) - c0;
      if (r == 0) continue;
      if (w < bw[s]) bw[s] = w;
      if (c < bc[s]) bc[s] = c;
    }
  double fl = 2.0 * B * m * n * k;
  printf("%s %ldx(%ldx%ldx%ld) thr%u: ours %.3f ms (%.1f GF/s) cpu %.3f | mkl %.3f ms (%.1f GF/s) "
         "cpu %.3f | wall ratio %.3f cpu ratio %.3f\n",
         argv[1], (long)B, (long)m, (long)n, (long)k, thr, bw[0] * 1e3, fl / bw[0] * 1e-9,
         bc[0] * 1e3, bw[1] * 1e3, fl / bw[1] * 1e-9, bc[1] * 1e3, bw[1] / bw[0], bc[1] / bc[0]);
  return 0;
}
