/*
 * tools/attention_cputime.c — the f32 fused attention kernel of the "cpu"
 * device (plugins/cpu/fast/attention/attention_avx512.c, called directly)
 * beside the two GEMMs of the unfused chain (QK^T and PV through
 * cpu_fast_gemm, the softmax left out), alternating in one process: best
 * wall time and best CPU time of the calling thread per side, in
 * GFLOP/s of the attention's 2 Sq Skv (D + Dv) per head. With one thread
 * the CPU time is what the host's load inflates least. Not built by
 * make; with a build folder B:
 *
 *   B=build
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -I. -Icore -o attention_cputime tools/attention_cputime.c
 *     $(find $B/obj/plugins/cpu/fast -name '*.o')
 *     $B/obj/plugins/cpu/threadpool.o $B/obj/plugins/cpu/cpu_features.o
 *     $B/obj/plugins/cpu/topology.o -lm -lpthread -ldl     (one line)
 *   ./attention_cputime 1 8 512 128 0 1 5
 *
 * Arguments: batch, heads, S (Sq = Skv), D (= Dv), causal, threads,
 * repetitions. NOGEMM=1 in the environment times the fused kernel alone
 * (for perf record).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/fast/attention/attention.h"
#include "tools/gemm_bench.h"

typedef struct job {
  float *q, *k, *v, *o, *s;
  cpu_device_t dev;
  bp_attention_args_t a;
  bp_gemm_args_t qk, pv;
} job_t;

static bool call_side(void *ctx, int side) {
  job_t *j = ctx;
  if (side == 0) return cpu_fast_attention_avx512(&j->dev, &j->a) == BP_OK;
  return cpu_fast_gemm(&j->dev, &j->qk) == BP_OK && cpu_fast_gemm(&j->dev, &j->pv) == BP_OK;
}

static bp_plugin_tensor_t t4(float *p, int64_t B, int64_t H, int64_t S, int64_t D) {
  bp_plugin_tensor_t t;
  memset(&t, 0, sizeof t);
  t.ptr = (uint64_t)(uintptr_t)p;
  t.dtype = BP_F32;
  t.rank = 4;
  int64_t sh[4] = {B, H, S, D}, st[4] = {H * S * D, S * D, D, 1};
  for (int d = 0; d < 4; d++) t.shape[d] = sh[d], t.strides[d] = st[d];
  return t;
}

int main(int argc, char **argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: %s B H S D causal threads reps\n", argv[0]);
    return 2;
  }
  int64_t B = atoll(argv[1]), H = atoll(argv[2]), S = atoll(argv[3]), D = atoll(argv[4]);
  int causal = atoi(argv[5]), reps = atoi(argv[7]);
  job_t j;
  memset(&j, 0, sizeof j);
  size_t n = (size_t)(B * H * S * D);
  j.q = malloc(n * 4), j.k = malloc(n * 4), j.v = malloc(n * 4), j.o = malloc(n * 4);
  j.s = malloc((size_t)(B * H * S * S) * 4);
  srand(1);
  for (size_t i = 0; i < n; i++) {
    j.q[i] = rand() / (float)RAND_MAX - 0.5f;
    j.k[i] = rand() / (float)RAND_MAX - 0.5f;
    j.v[i] = rand() / (float)RAND_MAX - 0.5f;
  }
  j.dev = bench_cpu_device((unsigned)atoi(argv[6]));
  j.a.struct_size = sizeof j.a;
  j.a.causal = causal;
  j.a.scale = 1.0 / sqrt((double)D);
  j.a.q = t4(j.q, B, H, S, D), j.a.k = t4(j.k, B, H, S, D), j.a.v = t4(j.v, B, H, S, D);
  j.a.out = t4(j.o, B, H, S, D);
  /* S = Q K^T (K read transposed), O = S V */
  j.qk = bench_gemm_args(cpu_tensor_view3(j.q, BP_F32, B * H, S, D, S * D, D, 1),
                         cpu_tensor_view3(j.k, BP_F32, B * H, D, S, S * D, 1, D),
                         cpu_tensor_view3(j.s, BP_F32, B * H, S, S, S * S, S, 1));
  j.pv = bench_gemm_args(cpu_tensor_view3(j.s, BP_F32, B * H, S, S, S * S, S, 1),
                         cpu_tensor_view3(j.v, BP_F32, B * H, S, D, S * D, D, 1),
                         cpu_tensor_view3(j.o, BP_F32, B * H, S, D, S * D, D, 1));
  double bw[2], bc[2];
  if (!bench_best(reps, !getenv("NOGEMM"), call_side, &j, bw, bc)) {
    fprintf(stderr, "a call failed\n");
    return 1;
  }
  double fl = 4.0 * (double)(B * H) * (double)S * (double)S * (double)D * (causal ? 0.5 : 1);
  double fg = 4.0 * (double)(B * H) * (double)S * (double)S * (double)D;
  printf("B%lld H%lld S%lld D%lld %s: fused %.3f ms (cpu %.3f) %.1f GFLOP/s cpu | "
         "gemms %.3f ms (cpu %.3f) %.1f GFLOP/s cpu\n",
         (long long)B, (long long)H, (long long)S, (long long)D, causal ? "causal" : "dense",
         bw[0] * 1e3, bc[0] * 1e3, fl / bc[0] * 1e-9, bw[1] * 1e3, bc[1] * 1e3,
         fg / bc[1] * 1e-9);
  return 0;
}
