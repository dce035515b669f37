/*
 * bench_anchors.c — the anchors of bp bench measured on the spot: the
 * machine's FMA peak (detected ISA x cores x measured clock) and its
 * streaming bandwidth, from memory (buffers well over the last-level cache)
 * and over any working set a memory-bound case has. The library anchors
 * are in bench_anchor_*.c.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bench.h"
#include "bench_anchor.h"

/* ---------------------------------------------------------------------------
 * Clock and FMA throughput.
 */
#define REP10(s) s s s s s s s s s s

/* Cycles per second from a chain of dependent integer multiplies (3 cycles
 * each on every x86 core since Core 2 and Zen). Not adds: recent cores fold
 * chains of add-immediate at rename and run them faster than one a cycle. */
static double measure_hz(void) {
  double best = 0;
  /* Many short windows, keeping the fastest: a busy machine preempts some. */
  for (int rep = 0; rep < 30; rep++) {
    uint64_t x = 1, one = 1;
    const long iters = 50000;
    double t0 = bpt_now();
    for (long i = 0; i < iters; i++) {
#if defined(__x86_64__)
      __asm__ volatile(REP10("imul %1, %0\n\t") REP10("imul %1, %0\n\t") : "+r"(x) : "r"(one));
#else
      x = x * 3 + one;
#endif
    }
    double hz = (double)iters * 20 * 3 / (bpt_now() - t0);
    if (hz > best) best = hz;
  }
  return best;
}

#if defined(__x86_64__)
#define FMA_CHAINS(T, fma, a, y, x)                                                                \
  a[0] = fma(a[0], y, x);                                                                          \
  a[1] = fma(a[1], y, x);                                                                          \
  a[2] = fma(a[2], y, x);                                                                          \
  a[3] = fma(a[3], y, x);                                                                          \
  a[4] = fma(a[4], y, x);                                                                          \
  a[5] = fma(a[5], y, x);                                                                          \
  a[6] = fma(a[6], y, x);                                                                          \
  a[7] = fma(a[7], y, x);                                                                          \
  a[8] = fma(a[8], y, x);                                                                          \
  a[9] = fma(a[9], y, x);                                                                          \
  a[10] = fma(a[10], y, x);                                                                        \
  a[11] = fma(a[11], y, x);

/* FMA instructions per second on one core, 12 independent chains. */
__attribute__((target("avx512f"))) static double fma_rate_avx512(long iters) {
  __m512 a[12], y = _mm512_set1_ps(0.9999f), x = _mm512_set1_ps(1e-6f);
  for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
  double t0 = bpt_now();
  for (long i = 0; i < iters; i++) {
    FMA_CHAINS(__m512, _mm512_fmadd_ps, a, y, x)
  }
  double t = bpt_now() - t0;
  volatile float sink = 0;
  for (int i = 0; i < 12; i++) sink += _mm512_reduce_add_ps(a[i]);
  (void)sink;
  return (double)iters * 12 / t;
}

__attribute__((target("avx2,fma"))) static double fma_rate_avx2(long iters) {
  __m256 a[12], y = _mm256_set1_ps(0.9999f), x = _mm256_set1_ps(1e-6f);
  for (int i = 0; i < 12; i++) a[i] = _mm256_set1_ps((float)i);
  double t0 = bpt_now();
  for (long i = 0; i < iters; i++) {
    FMA_CHAINS(__m256, _mm256_fmadd_ps, a, y, x)
  }
  double t = bpt_now() - t0;
  float out[8];
  volatile float sink = 0;
  for (int i = 0; i < 12; i++) {
    _mm256_storeu_ps(out, a[i]);
    sink += out[0];
  }
  (void)sink;
  return (double)iters * 12 / t;
}
#endif

/* The level bench_cpu_isa_level finds (CPUID and the OS's XSAVE state,
 * under the --isa ceiling) sets the peak every side is held to. */
static void detect_isa(bench_machine_t *m) {
  m->isa = "scalar";
  m->lanes_f32 = 1;
#if defined(__x86_64__)
  bench_isa_level_t level = bench_cpu_isa_level();
  if (level == BENCH_ISA_AVX512) {
    m->isa = "avx512";
    m->lanes_f32 = 16;
  } else if (level == BENCH_ISA_AVX2) {
    m->isa = "avx2+fma";
    m->lanes_f32 = 8;
  }
#endif
}

/* FMA units per core: measured FMA rate over the clock, rounded, 1 or 2.
 * The host's other tenants only ever lower a rate, so the best of many
 * short runs is taken, for up to 0.3 s or until two units show: 30 runs
 * (6 ms) once read one unit on a busy moment and halved every % of peak. */
static int measure_fma_units(const bench_machine_t *m, double hz) {
  double rate = 0;
#if defined(__x86_64__)
  double t0 = bpt_now();
  for (int rep = 0; rep < 1500 && bpt_now() - t0 < 0.3; rep++) {
    double r = m->lanes_f32 == 16  ? fma_rate_avx512(100000)
               : m->lanes_f32 == 8 ? fma_rate_avx2(100000)
                                   : 0;
    if (r > rate) rate = r;
    if (hz > 0 && rate >= 1.9 * hz) break;
  }
#endif
  if (rate <= 0 || hz <= 0) return 1;
  int units = (int)(rate / hz + 0.5);
  return units < 1 ? 1 : units > 2 ? 2 : units;
}

/* ---------------------------------------------------------------------------
 * Streaming bandwidth: y = s * x over large buffers, one slice per core,
 * counted as bytes read plus bytes written (as the memory-bound cases are).
 * Two loops, and the faster one is the machine's figure: a vectorised loop
 * with ordinary stores, and one with non-temporal stores, which skip the
 * read-for-ownership of y and so reach more of the memory's real bandwidth.
 * Both are written so the compiler can vectorise them (no aliasing, the
 * scale hoisted): a scalar loop would understate the bandwidth and flatter
 * every op measured against it.
 */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef struct stream_job {
  float *x, *y;
  size_t n;
  float s;
  bool nontemporal;
  int passes;     /* over the slice: a working set in cache takes several, so
                   * the timing is not thread start-up */
  double seconds; /* the thread's own time, from its first pass to its last */
} stream_job_t;

static void scale_cached(const float *restrict x, float *restrict y, size_t n, float s) {
#if defined(__SSE2__)
  /* written out: -O2 leaves the plain loop scalar, which would understate
   * a cache's bandwidth and flatter every op measured against it */
  size_t i = 0;
  __m128 vs = _mm_set1_ps(s);
  for (; i + 16 <= n; i += 16) {
    _mm_storeu_ps(y + i, _mm_mul_ps(_mm_loadu_ps(x + i), vs));
    _mm_storeu_ps(y + i + 4, _mm_mul_ps(_mm_loadu_ps(x + i + 4), vs));
    _mm_storeu_ps(y + i + 8, _mm_mul_ps(_mm_loadu_ps(x + i + 8), vs));
    _mm_storeu_ps(y + i + 12, _mm_mul_ps(_mm_loadu_ps(x + i + 12), vs));
  }
  for (; i < n; i++) y[i] = x[i] * s;
#else
  for (size_t i = 0; i < n; i++) y[i] = x[i] * s;
#endif
}

static void scale_streaming(const float *restrict x, float *restrict y, size_t n, float s) {
#if defined(__SSE2__)
  size_t i = 0;
  for (; i < n && ((uintptr_t)(y + i) & 15); i++) y[i] = x[i] * s;
  __m128 vs = _mm_set1_ps(s);
  for (; i + 16 <= n; i += 16) {
    _mm_stream_ps(y + i, _mm_mul_ps(_mm_loadu_ps(x + i), vs));
    _mm_stream_ps(y + i + 4, _mm_mul_ps(_mm_loadu_ps(x + i + 4), vs));
    _mm_stream_ps(y + i + 8, _mm_mul_ps(_mm_loadu_ps(x + i + 8), vs));
    _mm_stream_ps(y + i + 12, _mm_mul_ps(_mm_loadu_ps(x + i + 12), vs));
  }
  for (; i < n; i++) y[i] = x[i] * s;
  _mm_sfence();
#else
  scale_cached(x, y, n, s);
#endif
}

#if defined(__x86_64__)
/* The cached loop at the widest vectors: in cache, the width of the loads
 * and stores shows, and an op using AVX-512 would otherwise pass it. */
__attribute__((target("avx512f"))) static void
scale_cached_avx512(const float *restrict x, float *restrict y, size_t n, float s) {
  size_t i = 0;
  __m512 vs = _mm512_set1_ps(s);
  for (; i + 32 <= n; i += 32) {
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), vs));
    _mm512_storeu_ps(y + i + 16, _mm512_mul_ps(_mm512_loadu_ps(x + i + 16), vs));
  }
  for (; i < n; i++) y[i] = x[i] * s;
}
#endif

static void *stream_thread(void *arg) {
  stream_job_t *j = arg;
  bool wide = false;
#if defined(__x86_64__)
  wide = __builtin_cpu_supports("avx512f");
#endif
  double t0 = bpt_now();
  for (int p = 0; p < j->passes; p++) {
    if (j->nontemporal) scale_streaming(j->x, j->y, j->n, j->s);
#if defined(__x86_64__)
    else if (wide)
      scale_cached_avx512(j->x, j->y, j->n, j->s);
#endif
    else
      scale_cached(j->x, j->y, j->n, j->s);
  }
  j->seconds = bpt_now() - t0;
  return NULL;
}

/* Bytes read plus written per second by all threads together. Each thread
 * times its own passes: on a loaded host a new thread may wait for a core
 * for milliseconds before it starts, which is not the memory's time. Each
 * thread's rate is summed, as if all had run at once (a thread that ran
 * alone had the memory to itself, so the sum errs high, never low). */
static double stream_once(float *x, float *y, size_t n, int threads, bool nontemporal, int passes) {
  pthread_t tid[64];
  stream_job_t job[64];
  size_t per = (n / (size_t)threads) & ~(size_t)15;
  for (int t = 0; t < threads; t++) {
    size_t lo = per * (size_t)t, hi = t + 1 == threads ? n : lo + per;
    job[t] = (stream_job_t){x + lo, y + lo, hi - lo, 1.0f, nontemporal, passes, 0};
    if (pthread_create(&tid[t], NULL, stream_thread, &job[t]) != 0)
      stream_thread(&job[t]), tid[t] = 0;
  }
  double rate = 0;
  for (int t = 0; t < threads; t++) {
    if (tid[t]) pthread_join(tid[t], NULL);
    double bytes = 2.0 * sizeof(float) * (double)job[t].n * passes;
    if (job[t].seconds > 0) rate += bytes / job[t].seconds;
  }
  return rate;
}

/* Anchor buffers on transparent huge pages where the system gives them, as
 * the CPU plugin's large buffers are (plugins/cpu/memory.c): the anchors
 * then run on the same memory system our ops see, not a TLB-bound one. */
void *bench_huge_buffer(size_t bytes) {
  bytes = (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  if (!bytes) bytes = 2u << 20;
  void *p = aligned_alloc(2u << 20, bytes);
  if (p) (void)madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

static double measure_stream(int threads, size_t bytes, int reps) {
  size_t n = bytes / sizeof(float);
  float *x = bench_huge_buffer(n * sizeof *x), *y = bench_huge_buffer(n * sizeof *y);
  if (!x || !y) {
    free(x);
    free(y);
    return 0;
  }
  for (size_t i = 0; i < n; i++) x[i] = y[i] = (float)(i & 1023);
  double best = 0;
  size_t moved = (size_t)1 << 30; /* per timing, at least */
  int passes = 2 * bytes >= moved ? 1 : (int)(moved / (2 * bytes));
  for (int r = 0; r < reps; r++)
    for (int nt = 0; nt < 2; nt++) { /* alternate, so load hits both alike */
      double rate = stream_once(x, y, n, threads, nt, passes);
      if (rate > best) best = rate;
    }
  free(x);
  free(y);
  return best / 1e9;
}

/* The last-level cache in bytes (0 when unknown). */
static double llc_bytes(void) {
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l3 > 0 ? (double)l3 : l2 > 0 ? (double)l2 : 0;
}

/* Buffers of twice the last-level cache each (64 MiB to 1 GiB): the loop
 * then streams from memory, whatever part of the cache is free. */
size_t bench_dram_bytes(void) {
  double b = 2 * llc_bytes(), lo = 64.0 * (1 << 20), hi = 1024.0 * (1 << 20);
  b = b < lo ? lo : b > hi ? hi : b;
  return (size_t)b & ~(size_t)((2u << 20) - 1);
}

double bench_stream_gbs(int threads, bool quick) {
  return measure_stream(threads, bench_dram_bytes(), quick ? 2 : 4);
}

double bench_stream_gbs_at(int threads, double working_set) {
  size_t half = (size_t)(working_set / 2) & ~(size_t)63;
  return measure_stream(threads, half < 4096 ? 4096 : half, 4);
}

double bench_case_intensity(const bpt_case_t *c) {
  double es = (double)bp_dtype_size(c->dtype), bytes = 0;
  switch (c->op) {
  case BPT_GEMM:
    bytes = (double)c->batch * (double)(c->m * c->k + c->k * c->n + c->m * c->n);
    break;
  case BPT_ATTENTION: /* q, k, v in, o out */
    bytes = 4.0 * (double)(c->batch * c->heads * c->seq * c->dim);
    break;
  case BPT_CONV2D: {
    double p = (double)((c->hw + 2 * c->pad - c->r) / c->stride + 1);
    bytes = (double)c->batch * ((double)(c->c * c->hw * c->hw) + (double)c->k * p * p) +
            (double)(c->k * (c->c / c->groups) * c->r * c->r);
    break;
  }
  default:
    return 0;
  }
  return bytes > 0 ? bpt_case_flops(c) / (bytes * es) : 0;
}

void bench_fill_uniform(void *p, size_t n, bool f64) {
  uint64_t s = 0x2545f4914f6cdd1dull;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double v = (double)(s >> 40) / (double)(1ull << 24) * 2.0 - 1.0;
    if (f64)
      ((double *)p)[i] = v;
    else
      ((float *)p)[i] = (float)v;
  }
}

void bench_machine_measure(bench_machine_t *m, bool quick) {
  memset(m, 0, sizeof *m);
  detect_isa(m);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  m->cores = cores < 1 ? 1 : cores > 64 ? 64 : (int)cores;
  double hz = measure_hz();
  m->ghz = hz / 1e9;
  m->fma_units = measure_fma_units(m, hz);
  m->peak_f32_gflops = (double)m->lanes_f32 * 2.0 * m->fma_units * m->cores * m->ghz;
  m->llc_bytes = llc_bytes();
  m->stream_gbs = bench_stream_gbs(m->cores, quick);
}
