/*
 * bench_anchors.c — the anchors of bp bench measured on the spot: the
 * machine's FMA peak (detected ISA x cores x measured clock), its streaming
 * bandwidth, and OpenBLAS GEMM through dlopen (the bench only; no plugin
 * depends on OpenBLAS).
 */
#include <dlfcn.h>
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
      __asm__ volatile(REP10("imul %1, %0\n\t") REP10("imul %1, %0\n\t")
                       : "+r"(x)
                       : "r"(one));
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
#define FMA_CHAINS(T, fma, a, y, x)                                            \
  a[0] = fma(a[0], y, x); a[1] = fma(a[1], y, x); a[2] = fma(a[2], y, x);      \
  a[3] = fma(a[3], y, x); a[4] = fma(a[4], y, x); a[5] = fma(a[5], y, x);      \
  a[6] = fma(a[6], y, x); a[7] = fma(a[7], y, x); a[8] = fma(a[8], y, x);      \
  a[9] = fma(a[9], y, x); a[10] = fma(a[10], y, x); a[11] = fma(a[11], y, x);

/* FMA instructions per second on one core, 12 independent chains. */
__attribute__((target("avx512f"))) static double fma_rate_avx512(long iters) {
  __m512 a[12], y = _mm512_set1_ps(0.9999f), x = _mm512_set1_ps(1e-6f);
  for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
  double t0 = bpt_now();
  for (long i = 0; i < iters; i++) { FMA_CHAINS(__m512, _mm512_fmadd_ps, a, y, x) }
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
  for (long i = 0; i < iters; i++) { FMA_CHAINS(__m256, _mm256_fmadd_ps, a, y, x) }
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

static void detect_isa(bench_machine_t *m) {
  m->isa = "scalar";
  m->lanes_f32 = 1;
#if defined(__x86_64__)
  /* __builtin_cpu_supports checks CPUID and the OS's XSAVE state. */
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    m->isa = "avx512";
    m->lanes_f32 = 16;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
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
    double r = m->lanes_f32 == 16 ? fma_rate_avx512(100000)
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
} stream_job_t;

static void scale_cached(const float *restrict x, float *restrict y, size_t n, float s) {
  for (size_t i = 0; i < n; i++) y[i] = x[i] * s;
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

static void *stream_thread(void *arg) {
  stream_job_t *j = arg;
  if (j->nontemporal) scale_streaming(j->x, j->y, j->n, j->s);
  else scale_cached(j->x, j->y, j->n, j->s);
  return NULL;
}

static double stream_once(float *x, float *y, size_t n, int threads, bool nontemporal) {
  pthread_t tid[64];
  stream_job_t job[64];
  size_t per = (n / (size_t)threads) & ~(size_t)15;
  double t0 = bpt_now();
  for (int t = 0; t < threads; t++) {
    size_t lo = per * (size_t)t, hi = t + 1 == threads ? n : lo + per;
    job[t] = (stream_job_t){x + lo, y + lo, hi - lo, 1.0f, nontemporal};
    if (pthread_create(&tid[t], NULL, stream_thread, &job[t]) != 0)
      stream_thread(&job[t]), tid[t] = 0;
  }
  for (int t = 0; t < threads; t++)
    if (tid[t]) pthread_join(tid[t], NULL);
  return bpt_now() - t0;
}

/* Anchor buffers on transparent huge pages where the system gives them, as
 * the CPU plugin's large buffers are (plugins/cpu/memory.c): the anchors
 * then run on the same memory system our ops see, not a TLB-bound one. */
static void *huge_buffer(size_t bytes) {
  bytes = (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  if (!bytes) bytes = 2u << 20;
  void *p = aligned_alloc(2u << 20, bytes);
  if (p) (void)madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

static double measure_stream(int threads, size_t bytes, int reps) {
  size_t n = bytes / sizeof(float);
  float *x = huge_buffer(n * sizeof *x), *y = huge_buffer(n * sizeof *y);
  if (!x || !y) {
    free(x);
    free(y);
    return 0;
  }
  for (size_t i = 0; i < n; i++) x[i] = y[i] = (float)(i & 1023);
  double best = 1e300;
  for (int r = 0; r < reps; r++)
    for (int nt = 0; nt < 2; nt++) { /* alternate, so load hits both alike */
      double t = stream_once(x, y, n, threads, nt);
      if (t < best) best = t;
    }
  free(x);
  free(y);
  return 2.0 * (double)bytes / best / 1e9;
}

double bench_stream_gbs(int threads, bool quick) {
  return measure_stream(threads, (quick ? 32u : 64u) << 20, quick ? 3 : 6);
}

void bench_machine_measure(bench_machine_t *m, bool quick) {
  memset(m, 0, sizeof *m);
  detect_isa(m);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  m->cores = cores < 1 ? 1 : cores > 64 ? 64 : (int)cores;
  double hz = measure_hz();
  m->ghz = hz / 1e9;
  m->fma_units = measure_fma_units(m, hz);
  m->peak_f32_gflops =
      (double)m->lanes_f32 * 2.0 * m->fma_units * m->cores * m->ghz;
  m->stream_gbs = bench_stream_gbs(m->cores, quick);
}

/* ---------------------------------------------------------------------------
 * OpenBLAS.
 */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *,
                         int, const float *, int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *,
                         int, const double *, int, double, double *, int);

struct bench_openblas {
  void *lib;
  sgemm_fn sgemm;
  dgemm_fn dgemm;
  char config[128];
};

bench_openblas_t *bench_openblas_open(char *why, size_t why_size) {
  void *lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(why, why_size, "libopenblas.so.0 not found");
    return NULL;
  }
  bench_openblas_t *ob = calloc(1, sizeof *ob);
  if (!ob) goto fail;
  ob->lib = lib;
  *(void **)&ob->sgemm = dlsym(lib, "cblas_sgemm");
  *(void **)&ob->dgemm = dlsym(lib, "cblas_dgemm");
  if (!ob->sgemm || !ob->dgemm) {
    snprintf(why, why_size, "libopenblas.so.0 has no cblas_sgemm/cblas_dgemm");
    goto fail;
  }
  void (*set_threads)(int);
  char *(*get_config)(void);
  *(void **)&set_threads = dlsym(lib, "openblas_set_num_threads");
  *(void **)&get_config = dlsym(lib, "openblas_get_config");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (set_threads) set_threads(cores > 0 ? (int)cores : 1);
  snprintf(ob->config, sizeof ob->config, "%s",
           get_config ? get_config() : "OpenBLAS");
  /* Loading it started its worker threads, which spin for about 2^28
   * cycles before they park (THREAD_TIMEOUT): the first case timed after
   * this would share the cores with them (--quick's 256^3 read 0.42x). */
  usleep(300000);
  return ob;
fail:
  free(ob);
  dlclose(lib);
  return NULL;
}

void bench_openblas_close(bench_openblas_t *ob) {
  if (!ob) return;
  dlclose(ob->lib);
  free(ob);
}

const char *bench_openblas_config(bench_openblas_t *ob) {
  return ob ? ob->config : "";
}

static void fill_uniform(void *p, size_t n, bool f64) {
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

/* One call of the case: every matrix of the batch. */
static void openblas_call(bench_openblas_t *ob, const bpt_case_t *c, bool f64,
                          void *a, void *b, void *cc) {
  int m = (int)c->m, n = (int)c->n, k = (int)c->k;
  for (int64_t i = 0; i < c->batch; i++) {
    if (f64)
      ob->dgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, m, n, k, 1.0,
                (double *)a + i * m * k, k, (double *)b + i * k * n, n, 0.0,
                (double *)cc + i * m * n, n);
    else
      ob->sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, m, n, k, 1.0f,
                (float *)a + i * m * k, k, (float *)b + i * k * n, n, 0.0f,
                (float *)cc + i * m * n, n);
  }
}

struct bench_openblas_case {
  bench_openblas_t *ob;
  bpt_case_t c;
  bool f64;
  void *a, *b, *cc;
};

bench_openblas_case_t *bench_openblas_case(bench_openblas_t *ob, const bpt_case_t *c) {
  if (!ob || c->op != BPT_GEMM) return NULL;
  bench_openblas_case_t *oc = calloc(1, sizeof *oc);
  if (!oc) return NULL;
  *oc = (bench_openblas_case_t){ob, *c, c->dtype == BP_F64, NULL, NULL, NULL};
  size_t es = oc->f64 ? 8 : 4;
  size_t na = (size_t)(c->batch * c->m * c->k), nb = (size_t)(c->batch * c->k * c->n);
  size_t nc = (size_t)(c->batch * c->m * c->n);
  oc->a = huge_buffer(na * es);
  oc->b = huge_buffer(nb * es);
  oc->cc = huge_buffer(nc * es);
  if (!oc->a || !oc->b || !oc->cc) {
    bench_openblas_case_free(oc);
    return NULL;
  }
  fill_uniform(oc->a, na, oc->f64);
  fill_uniform(oc->b, nb, oc->f64);
  return oc;
}

double bench_openblas_time(bench_openblas_case_t *oc, const bench_timing_t *t) {
  if (!oc) return -1;
  double t0 = bpt_now();
  openblas_call(oc->ob, &oc->c, oc->f64, oc->a, oc->b, oc->cc); /* warm-up */
  double warm = bpt_now() - t0, total = 0, best = 1e300;
  int reps = warm > t->slow_seconds ? 1 : t->max_reps;
  for (int i = 0; i < reps; i++) {
    if (i >= t->min_reps && total >= t->min_seconds) break;
    t0 = bpt_now();
    openblas_call(oc->ob, &oc->c, oc->f64, oc->a, oc->b, oc->cc);
    double s = bpt_now() - t0;
    total += s;
    if (s < best) best = s;
  }
  return best * 1e3;
}

void bench_openblas_case_free(bench_openblas_case_t *oc) {
  if (!oc) return;
  free(oc->a);
  free(oc->b);
  free(oc->cc);
  free(oc);
}
