/*
 * tools/gemm_bench.h — what the GEMM timing tools (tools/gemm_cputime.c,
 * tools/gemm_lowp_cputime.c) share: the clocks, a cpu device over the
 * fast path's objects, MKL opened with dlopen, the GEMM's arguments over
 * rank-3 views (cpu_tensor_view3) and the alternating best-of loop that
 * times ours against MKL. Header-only (the tools are single files built
 * by the lines in their headers).
 */
#ifndef BACKPLANE_TOOLS_GEMM_BENCH_H
#define BACKPLANE_TOOLS_GEMM_BENCH_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/fast/gemm/gemm.h"
#include "plugins/cpu/tensor.h"

/* Seconds on clock c. */
static inline double bench_seconds(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* MKL's runtime ($MKL_RT, else the bench venv's under build/), told to use
 * threads threads; NULL when skip or when it cannot be opened. */
static inline void *bench_open_mkl(bool skip, unsigned threads) {
  if (skip) return NULL;
  const char *path = getenv("MKL_RT") ? getenv("MKL_RT") : "build/bench-venv/lib/libmkl_rt.so.3";
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  void (*setn)(int) = h ? (void (*)(int))dlsym(h, "MKL_Set_Num_Threads") : NULL;
  if (setn) setn((int)threads);
  return h;
}

/* A cpu device with its own pool of threads, at the best ISA level or at
 * AVX2 + FMA with BP_BENCH_ISA=avx2 in the environment (then run MKL with
 * MKL_ENABLE_INSTRUCTIONS=AVX2 to compare like with like). */
static inline cpu_device_t bench_cpu_device(unsigned threads) {
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  const char *isa = getenv("BP_BENCH_ISA");
  dev.isa = isa && !strcmp(isa, "avx2") ? BP_ISA_AVX2 : BP_ISA_BEST;
  dev.threads = threads;
  dev.pool = threads > 1 ? cpu_pool_create(threads) : NULL;
  return dev;
}

/* C = A B (alpha 1, beta 0) over the views a, b, c. */
static inline bp_gemm_args_t bench_gemm_args(bp_plugin_tensor_t a, bp_plugin_tensor_t b,
                                             bp_plugin_tensor_t c) {
  bp_gemm_args_t g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.alpha = 1;
  g.beta = 0;
  g.a = a, g.b = b, g.c = c;
  return g;
}

/* One call of side 0 (ours) or 1 (MKL) on ctx; false when ours failed. */
typedef bool (*bench_side_fn)(void *ctx, int side);

/* reps + 1 rounds of side 0 then side 1 (when mkl), the first a warm-up:
 * the best wall time bw[s] and calling-thread CPU time bc[s] per side
 * (1e9 for a side that did not run). False when a call failed. */
static inline bool bench_best(int reps, bool mkl, bench_side_fn call, void *ctx, double bw[2],
                              double bc[2]) {
  bw[0] = bw[1] = bc[0] = bc[1] = 1e9;
  for (int r = 0; r < reps + 1; r++)
    for (int s = 0; s < 2; s++) {
      if (s == 1 && !mkl) continue;
      double w0 = bench_seconds(CLOCK_MONOTONIC), c0 = bench_seconds(CLOCK_THREAD_CPUTIME_ID);
      if (!call(ctx, s)) return false;
      double w = bench_seconds(CLOCK_MONOTONIC) - w0;
      double c = bench_seconds(CLOCK_THREAD_CPUTIME_ID) - c0;
      if (r == 0) continue;
      if (w < bw[s]) bw[s] = w;
      if (c < bc[s]) bc[s] = c;
    }
  return true;
}

#endif
