/*
 * tools/gemm_lowp_cputime.c — bf16 / f16 GEMM of the "cpu" device's fast
 * path (plugins/cpu/fast/gemm/, linked from a build's objects: AMX for
 * bf16 and f16 where the CPU has it) against MKL's cblas_gemm_bf16bf16f32 /
 * cblas_gemm_f16f16f32 (dlopen), alternating in one process: best wall
 * time and best CPU time of the calling thread per side, and their ratios
 * (MKL's time / ours: above 1 means faster than MKL). Ours writes C in the
 * inputs' dtype, MKL in f32 (what bp bench compares too). Operands hold
 * uniform random numbers in [-1, 1), as bp bench's. The f32 / f64 twin is
 * tools/gemm_cputime.c. Not built by make; with a build folder B
 * (bench-venv/ there from `make bench`):
 *
 *   B=build
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -I. -Icore -o gemm_lowp_cputime tools/gemm_lowp_cputime.c
 *     $(find $B/obj/plugins/cpu/fast -name '*.o') $B/obj/plugins/cpu/threadpool.o
 *     $B/obj/plugins/cpu/cpu_features.o $B/obj/plugins/cpu/topology.o
 *     -lm -lpthread -ldl -mf16c     (one line)
 *   MKL_RT=$B/bench-venv/lib/libmkl_rt.so.3 ./gemm_lowp_cputime bf16 1 2048 2048 2048 1 8
 *
 * Arguments: dtype (bf16 | f16), batch, m, n, k, threads, repetitions
 * [nomkl | onlyours]. Operands row-major; TA=1 / TB=1 in the environment
 * read A / B transposed (column-major) on both sides.
 */
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/gemm_bench.h"

typedef void (*g16_t)(int, int, int, int, int, int, float, const uint16_t *, int, const uint16_t *,
                      int, float, float *, int);

/* Uniform in [-1, 1) as bf16 (top half of the f32) or f16 (F16C). */
static void fill(uint16_t *p, int64_t cnt, int f16, unsigned seed) {
  srand(seed);
  for (int64_t i = 0; i < cnt; i++) {
    float v = (float)rand() / ((float)RAND_MAX + 1.0f) * 2.0f - 1.0f;
    if (f16)
      p[i] = _cvtss_sh(v, 0);
    else {
      uint32_t u;
      memcpy(&u, &v, 4);
      p[i] = (uint16_t)(u >> 16);
    }
  }
}

static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

/* The operands and both sides' entry points. */
typedef struct job {
  int64_t B, m, n, k;
  int ta, tb;
  uint16_t *A, *Bm;
  float *Cm;
  cpu_device_t dev;
  bp_gemm_args_t g;
  g16_t g16;
} job_t;

static bool call_side(void *ctx, int side) {
  job_t *j = ctx;
  int64_t m = j->m, n = j->n, k = j->k;
  if (side == 0) return cpu_fast_gemm(&j->dev, &j->g) == BP_OK;
  for (int64_t b = 0; b < j->B; b++)
    j->g16(101, j->ta ? 112 : 111, j->tb ? 112 : 111, m, n, k, 1.0f, j->A + b * m * k,
           j->ta ? m : k, j->Bm + b * k * n, j->tb ? k : n, 0.0f, j->Cm + b * m * n, n);
  return true;
}

int main(int argc, char **argv) {
  if (argc < 8) return 2;
  job_t j;
  memset(&j, 0, sizeof j);
  int f16 = !strcmp(argv[1], "f16");
  int64_t B = j.B = atoll(argv[2]), m = j.m = atoll(argv[3]), n = j.n = atoll(argv[4]),
          k = j.k = atoll(argv[5]);
  unsigned thr = atoi(argv[6]);
  int reps = atoi(argv[7]);
  int skipmkl = argc > 8 && (!strcmp(argv[8], "nomkl") || !strcmp(argv[8], "onlyours"));
  int ta = j.ta = getenv("TA") && atoi(getenv("TA")), tb = j.tb = getenv("TB") && atoi(getenv("TB"));
  uint16_t *A = j.A = alloc64(2 * B * m * k), *Bm = j.Bm = alloc64(2 * B * k * n),
           *C = alloc64(2 * B * m * n);
  float *Cm = j.Cm = alloc64(4 * B * m * n);
  fill(A, B * m * k, f16, 1);
  fill(Bm, B * k * n, f16, 2);
  memset(C, 0, 2 * B * m * n);
  void *h = bench_open_mkl(skipmkl, thr);
  g16_t g16 = j.g16 =
      h ? (g16_t)dlsym(h, f16 ? "cblas_gemm_f16f16f32" : "cblas_gemm_bf16bf16f32") : NULL;
  j.dev = bench_cpu_device(thr);
  bp_dtype_t dt = f16 ? BP_F16 : BP_BF16;
  j.g = bench_gemm_args(ta ? cpu_tensor_view3(A, dt, B, m, k, m * k, 1, m)
                           : cpu_tensor_view3(A, dt, B, m, k, m * k, k, 1),
                        tb ? cpu_tensor_view3(Bm, dt, B, k, n, k * n, 1, k)
                           : cpu_tensor_view3(Bm, dt, B, k, n, k * n, n, 1),
                        cpu_tensor_view3(C, dt, B, m, n, m * n, n, 1));
  double bw[2], bc[2];
  if (!bench_best(reps, g16 != NULL, call_side, &j, bw, bc)) {
    printf("fail\n");
    return 1;
  }
  /* both sides computed the same product: their largest difference
   * (relative to the largest |C|) says the call was the GEMM */
  double maxd = 0, maxc = 0;
  for (int64_t i = 0; g16 && i < B * m * n; i++) {
    float v = f16 ? _cvtsh_ss(C[i]) : 0;
    if (!f16) {
      uint32_t u = (uint32_t)C[i] << 16;
      memcpy(&v, &u, 4);
    }
    maxd = fmax(maxd, fabs((double)v - Cm[i]));
    maxc = fmax(maxc, fabs((double)Cm[i]));
  }
  double fl = 2.0 * B * m * n * k;
  printf("%s %ldx(%ldx%ldx%ld)%s%s thr%u: ours %.3f ms (%.1f GF/s) cpu %.3f | mkl %.3f ms "
         "(%.1f GF/s) cpu %.3f | wall ratio %.3f cpu ratio %.3f | maxdiff %.2g of %.3g\n",
         argv[1], (long)B, (long)m, (long)n, (long)k, ta ? " TA" : "", tb ? " TB" : "", thr,
         bw[0] * 1e3, fl / bw[0] * 1e-9, bc[0] * 1e3, bw[1] * 1e3, fl / bw[1] * 1e-9, bc[1] * 1e3,
         bw[1] / bw[0], bc[1] / bc[0], maxd, maxc);
  return 0;
}
