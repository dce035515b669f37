/*
 * tools/conv_cputime.c — the "cpu" device's conv2d fast path (plugins/cpu/
 * fast/conv/, linked from a build's objects) on one NCHW layer: the best
 * wall time and the best CPU time of the calling thread over repeated
 * calls. With one thread the CPU time is what the host's load inflates
 * least (issue 22's one-thread comparisons; oneDNN's side is in `bp bench
 * --op conv2d`). Not built by make; with a build folder B:
 *
 *   B=build
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -I. -Icore -o conv_cputime tools/conv_cputime.c
 *     $(find $B/obj/plugins/cpu/fast -name '*.o')
 *     $B/obj/plugins/cpu/threadpool.o $B/obj/plugins/cpu/cpu_features.o
 *     $B/obj/plugins/cpu/topology.o -lm -lpthread -ldl     (one line)
 *   ./conv_cputime bf16 256 14 256 3 0 1 200
 *
 * Arguments: dtype (f32 | bf16), C, H (= W), K, R (= S; padding R / 2),
 * depthwise (0 | 1), threads, calls, and the stride (1 unless given). Inputs are small
 * non-zero values (the AMX tiles run faster on zeros). BP_BENCH_ISA=avx2
 * in the environment runs the AVX2 + FMA kernels; WINO_MIN_PIXELS=N
 * replaces the Winograd route's pixel floor (a large N: the route it
 * would take otherwise), PW_MIN_PIXELS=N the pointwise 1x1 route's
 * (fast/conv/conv2d_pointwise.c). CONST=1 passes a constant id for the weights
 * (bp_buffer_set_constant), so the routes that can keep their packed or
 * transformed weights between calls do. NHWC=1 lays x and y out
 * channels-last (NCHW views with channel stride 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/conv/conv2d.h"

static bp_plugin_tensor_t tensor4(void *p, bp_dtype_t dt, const int64_t *shape) {
  bp_plugin_tensor_t t;
  memset(&t, 0, sizeof t);
  t.ptr = (uint64_t)(uintptr_t)p;
  t.dtype = dt;
  t.rank = 4;
  for (int d = 3, st = 1; d >= 0; st *= (int)shape[d], d--)
    t.shape[d] = shape[d], t.strides[d] = st;
  return t;
}

static double seconds(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* n values of dt at p: (i * mul % 11 - 5) / 10. */
static void fill(void *p, bp_dtype_t dt, int64_t n, int64_t mul) {
  for (int64_t i = 0; i < n; i++) {
    double v = (double)(i * mul % 11 - 5) / 10.0;
    if (dt == BP_BF16)
      ((uint16_t *)p)[i] = cpu_bf16_from_double(v);
    else
      ((float *)p)[i] = (float)v;
  }
}

int main(int argc, char **argv) {
  if (argc != 9 && argc != 10) {
    fprintf(stderr, "usage: %s f32|bf16 C H K R depthwise threads calls [stride]\n", argv[0]);
    return 2;
  }
  bp_dtype_t dt = strcmp(argv[1], "bf16") ? BP_F32 : BP_BF16;
  int64_t C = atoll(argv[2]), H = atoll(argv[3]), K = atoll(argv[4]), R = atoll(argv[5]);
  int dw = atoi(argv[6]), threads = atoi(argv[7]), calls = atoi(argv[8]);
  int64_t G = dw ? C : 1, cg = C / G, es = dt == BP_BF16 ? 2 : 4;
  if (dw) K = C;
  int64_t st = argc == 10 ? atoll(argv[9]) : 1, P = (H + 2 * (R / 2) - R) / st + 1;
  int64_t xs[4] = {1, C, H, H}, ws[4] = {K, cg, R, R}, ys[4] = {1, K, P, P};
  /* 64-byte aligned, as the device's buffers are (plugins/cpu/memory.c) */
  void *x = aligned_alloc(64, (size_t)(C * H * H * es + 63) / 64 * 64),
       *w = aligned_alloc(64, (size_t)(K * cg * R * R * es + 63) / 64 * 64);
  void *y = aligned_alloc(64, (size_t)(K * H * H * es + 63) / 64 * 64);
  if (!x || !w || !y) return 1;
  fill(x, dt, C * H * H, 7), fill(w, dt, K * cg * R * R, 7919);
  bp_conv2d_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.stride_h = a.stride_w = st, a.pad_h = a.pad_w = R / 2;
  a.dilation_h = a.dilation_w = 1, a.groups = G;
  a.x = tensor4(x, dt, xs), a.w = tensor4(w, dt, ws), a.y = tensor4(y, dt, ys);
  /* NHWC=1: x and y channels-last (an NCHW view with the channel stride 1) */
  if (getenv("NHWC") && atoi(getenv("NHWC"))) {
    const int64_t xl[4] = {C * H * H, 1, H * C, C}, yl[4] = {K * P * P, 1, P * K, K};
    memcpy(a.x.strides, xl, sizeof xl), memcpy(a.y.strides, yl, sizeof yl);
  }
  /* CONST=1: w as if its buffer were marked constant (prepared once) */
  a.w_const_id = getenv("CONST") && atoi(getenv("CONST")) ? 1 : 0;
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  const char *isa = getenv("BP_BENCH_ISA"), *wino = getenv("WINO_MIN_PIXELS");
  dev.isa = isa && !strcmp(isa, "avx2") ? BP_ISA_AVX2 : BP_ISA_BEST;
  dev.tune.conv_winograd_min_pixels = wino ? atoll(wino) : 0;
  const char *pwmin = getenv("PW_MIN_PIXELS");
  dev.tune.conv_pointwise_min_pixels = pwmin ? atoll(pwmin) : 0;
  dev.threads = (unsigned)threads;
  dev.pool = cpu_pool_create((unsigned)threads);
  double flops = 2.0 * (double)(K * cg * R * R) * (double)(P * P), wall = 1e9, cpu = 1e9;
  for (int i = 0; i < calls; i++) {
    double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_THREAD_CPUTIME_ID);
    if (cpu_fast_conv2d(&dev, &a) != BP_OK) {
      fprintf(stderr, "the fast path declined this layer\n");
      return 1;
    }
    double dwall = seconds(CLOCK_MONOTONIC) - w0, dcpu = seconds(CLOCK_THREAD_CPUTIME_ID) - c0;
    wall = dwall < wall ? dwall : wall, cpu = dcpu < cpu ? dcpu : cpu;
  }
  printf("%s C%ld H%ld K%ld %ldx%ld%s, %d thread(s): wall %.1f us (%.0f GFLOP/s), calling "
         "thread's CPU %.1f us (%.0f GFLOP/s)\n",
         argv[1], (long)C, (long)H, (long)K, (long)R, (long)R, dw ? " depthwise" : "", threads,
         wall * 1e6, flops / wall * 1e-9, cpu * 1e6, flops / cpu * 1e-9);
  cpu_pool_destroy(dev.pool);
  free(x), free(w), free(y);
  return 0;
}
