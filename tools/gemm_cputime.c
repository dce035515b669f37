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
 * [nomkl]. Operands row-major; TRANSB=1 stores B as n x k (C = A B^T, a
 * linear layer's weights as PyTorch keeps them); AXPY=1 in the environment times the axpy
 * matrix-vector product (gemv.c) directly instead of the GEMM entry;
 * BP_BENCH_ISA=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 compares the AVX2 + FMA
 * kernels with MKL's AVX2 branch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/gemm_bench.h"

typedef void (*sg_t)(int, int, int, int, int, int, float, const float *, int, const float *, int,
                     float, float *, int);
typedef void (*dg_t)(int, int, int, int, int, int, double, const double *, int, const double *, int,
                     double, double *, int);

/* The operands and both sides' entry points. */
typedef struct job {
  int f64;
  int64_t B, m, n, k;
  char *A, *Bm, *C;
  cpu_device_t dev;
  bp_gemm_args_t g;
  sg_t sg;
  dg_t dg;
  int transb; /* B stored n x k (row-major), C = A B^T as a linear layer */
} job_t;

static bool call_side(void *ctx, int side) {
  job_t *j = ctx;
  int64_t m = j->m, n = j->n, k = j->k;
  int tb = j->transb ? 112 : 111;
  int64_t ldb = j->transb ? k : n;
  if (side == 0 && getenv("AXPY"))
    cpu_fast_gemv_axpy(&j->dev, j->f64, k, n, j->A, 1, j->Bm, n, j->C, 1, 1.0, 0.0);
  else if (side == 0) {
    if (cpu_fast_gemm(&j->dev, &j->g) != BP_OK) return false;
  } else
    for (int64_t b = 0; b < j->B; b++) {
      if (j->f64)
        j->dg(101, 111, tb, m, n, k, 1.0, (double *)j->A + b * m * k, k,
              (double *)j->Bm + b * k * n, ldb, 0.0, (double *)j->C + b * m * n, n);
      else
        j->sg(101, 111, tb, m, n, k, 1.0f, (float *)j->A + b * m * k, k,
              (float *)j->Bm + b * k * n, ldb, 0.0f, (float *)j->C + b * m * n, n);
    }
  return true;
}

int main(int argc, char **argv) {
  if (argc < 8) return 2;
  job_t j = {.f64 = !strcmp(argv[1], "f64"), .transb = getenv("TRANSB") != NULL};
  int f64 = j.f64;
  int64_t B = j.B = atoll(argv[2]), m = j.m = atoll(argv[3]), n = j.n = atoll(argv[4]),
          k = j.k = atoll(argv[5]);
  unsigned thr = atoi(argv[6]);
  int reps = atoi(argv[7]);
  int skipmkl = argc > 8 && !strcmp(argv[8], "nomkl");
  size_t es = f64 ? 8 : 4;
  char *A = j.A = aligned_alloc(64, (es * B * m * k + 63) / 64 * 64),
       *Bm = j.Bm = aligned_alloc(64, (es * B * k * n + 63) / 64 * 64),
       *C = j.C = aligned_alloc(64, (es * B * m * n + 63) / 64 * 64);
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
  void *h = bench_open_mkl(skipmkl, thr);
  j.sg = h ? (sg_t)dlsym(h, "cblas_sgemm") : NULL;
  j.dg = h ? (dg_t)dlsym(h, "cblas_dgemm") : NULL;
  j.dev = bench_cpu_device(thr);
  bp_dtype_t dt = f64 ? BP_F64 : BP_F32;
  j.g = bench_gemm_args(cpu_tensor_view3(A, dt, B, m, k, m * k, k, 1),
                        j.transb ? cpu_tensor_view3(Bm, dt, B, k, n, k * n, 1, k)
                                 : cpu_tensor_view3(Bm, dt, B, k, n, k * n, n, 1),
                        cpu_tensor_view3(C, dt, B, m, n, m * n, n, 1));
  double bw[2], bc[2];
  if (!bench_best(reps, h != NULL, call_side, &j, bw, bc)) {
    printf("fail\n");
    return 1;
  }
  double fl = 2.0 * B * m * n * k;
  printf("%s %ldx(%ldx%ldx%ld) thr%u: ours %.3f ms (%.1f GF/s) cpu %.3f | mkl %.3f ms (%.1f GF/s) "
         "cpu %.3f | wall ratio %.3f cpu ratio %.3f\n",
         argv[1], (long)B, (long)m, (long)n, (long)k, thr, bw[0] * 1e3, fl / bw[0] * 1e-9,
         bc[0] * 1e3, bw[1] * 1e3, fl / bw[1] * 1e-9, bc[1] * 1e3, bw[1] / bw[0], bc[1] / bc[0]);
  return 0;
}
