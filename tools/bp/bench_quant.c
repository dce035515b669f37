/*
 * bench_quant.c — bp bench --op qgemm: the quantized ops side by side in one
 * run on one device ("cpu" unless --device): the int8 GEMM (bp_qgemm, i32 c;
 * i8 x i8 and u8 x i8) beside MKL's cblas_gemm_s8u8s32 (row-major: a u8, b
 * s8, offsets 0; dlopen'ed from the build's bench-venv, absent is said) and
 * our bf16 GEMM at the same shape; the q4_0 GEMV of
 * token generation (1x4096x4096, 1x11008x4096) as weight bytes per second
 * against a loop that only reads as many bytes (read_gbs: the GEMV's own
 * yardstick) and the streaming loop's read+write bandwidth
 * (bench_stream_gbs), each call on
 * the next of as many weight copies as the loop's working set holds, so the
 * weights come from memory as in a model too large for the cache (one
 * matrix reused call after call would sit in the last-level cache); the
 * q4_0 GEMM
 * at a prompt shape (512x4096x4096) beside our f32 and bf16 GEMM.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_anchor.h"
#include "bench_quant.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

bool bench_quant_wanted(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--op=qgemm")) return true;
    if (!strcmp(argv[i], "--op") && i + 1 < argc && !strcmp(argv[i + 1], "qgemm")) return true;
  }
  return false;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef bp_status_t (*run_fn)(void *ctx);

/* Best of `reps` runs after one warm-up, in seconds. */
static double best_time(bp_stream_t *s, run_fn fn, void *ctx, int reps) {
  if (fn(ctx) != BP_OK || bp_stream_synchronize(s) != BP_OK) return -1;
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now_s();
    fn(ctx);
    bp_stream_synchronize(s);
    double t = now_s() - t0;
    if (t < best) best = t;
  }
  return best;
}

typedef struct job {
  bp_stream_t *s;
  bp_tensor_t a, b, c;
  bool quant; /* qgemm / qmatmul, else bp_matmul */
} job_t;

static bp_status_t run_job(void *v) {
  job_t *j = v;
  if (!j->quant) return bp_matmul(j->s, 1.0, &j->a, &j->b, 0.0, &j->c);
  if (!BP_DTYPE_IS_BLOCK(j->b.dtype)) return bp_qgemm(j->s, &j->a, &j->b, NULL, NULL, 0, &j->c);
  return bp_qmatmul(j->s, &j->a, &j->b, &j->c);
}

/* A tensor of shape on a fresh buffer of dev filled with small bytes. */
static bp_tensor_t make(bp_device_t *dev, bp_dtype_t dt, int64_t r, int64_t c) {
  bp_tensor_t t = {0};
  bp_buffer_t *b = NULL;
  uint64_t bytes = bp_quant_bytes(dt, (uint64_t)(r * c));
  if (bp_buffer_alloc(dev, bytes, &b) != BP_OK) return t;
  uint8_t *h = malloc(bytes);
  /* 0x11 decodes as small finite numbers in every dtype (f16 scale 0x1111) */
  memset(h, 0x11, bytes);
  bp_buffer_write(b, 0, h, bytes);
  free(h);
  int64_t shape[2] = {r, c};
  bp_tensor_init(b, 0, dt, 2, shape, NULL, &t);
  return t;
}

static void drop(job_t *j) {
  bp_buffer_free(j->a.buffer);
  bp_buffer_free(j->b.buffer);
  bp_buffer_free(j->c.buffer);
}

/* y = a [m, k] x w: w [k, n] for bp_matmul / qgemm, [n, k] for qmatmul. */
static double time_gemm(bp_device_t *dev, bp_stream_t *s, bp_dtype_t at, bp_dtype_t wt, bp_dtype_t ct,
                        int64_t m, int64_t n, int64_t k, int reps) {
  bool fp8 = at == BP_FP8_E4M3 || at == BP_FP8_E5M2;
  job_t j = {s, make(dev, at, m, k), {0}, make(dev, ct, m, n), wt != at || at == BP_I8 || fp8};
  j.b = BP_DTYPE_IS_BLOCK(wt) ? make(dev, wt, n, k) : make(dev, wt, k, n);
  double t = j.a.buffer && j.b.buffer && j.c.buffer ? best_time(s, run_job, &j, reps) : -1;
  drop(&j);
  return t;
}

/* The GEMV y = a x w^T (w [n, k] of wt) per call, in seconds: the best of
 * `reps` passes, each pass one call on each of `copies` weight tensors in
 * turn (their bytes together at least bench_dram_bytes()). */
static double time_gemv_cold(bp_device_t *dev, bp_stream_t *s, bp_dtype_t wt, int64_t n, int64_t k,
                             int reps, int *copies) {
  uint64_t wb = bp_quant_bytes(wt, (uint64_t)(n * k));
  int nw = (int)((bench_dram_bytes() + wb - 1) / wb);
  nw = nw < 2 ? 2 : nw > 256 ? 256 : nw;
  job_t *j = calloc((size_t)nw, sizeof *j);
  bp_tensor_t a = make(dev, BP_F32, 1, k), y = make(dev, BP_F32, 1, n);
  bool ok = j && a.buffer && y.buffer;
  for (int i = 0; ok && i < nw; i++) {
    j[i] = (job_t){s, a, make(dev, wt, n, k), y, true};
    ok = j[i].b.buffer != NULL;
  }
  double best = -1;
  for (int r = 0; ok && r <= 2 * reps; r++) { /* pass 0 warms up */
    double t0 = now_s();
    for (int i = 0; ok && i < nw; i++) ok = run_job(&j[i]) == BP_OK;
    ok = ok && bp_stream_synchronize(s) == BP_OK;
    double t = (now_s() - t0) / nw;
    if (ok && r && (best < 0 || t < best)) best = t;
  }
  for (int i = 0; j && i < nw; i++) bp_buffer_free(j[i].b.buffer);
  bp_buffer_free(a.buffer), bp_buffer_free(y.buffer);
  free(j);
  *copies = nw;
  return ok ? best : -1;
}

/* ---- the weight-read loop: the GEMV's yardstick ------------------------------ */

/* The GEMV reads its weights and writes almost nothing, while the streaming
 * loop (bench_stream_gbs) reads one buffer and writes another, so on a
 * memory system whose reads and writes do not add up alike the two differ.
 * This loop reads what the GEMV reads: `copies` buffers of `bytes` each in
 * turn, every one split between the threads as the GEMV splits its rows,
 * summed with the widest loads (a sum, so nothing is skipped); every other
 * pass also fetches 4 KiB ahead into L2, since one core reads faster with
 * more lines in flight than its hardware prefetcher keeps (the GEMV does
 * so too), and the best pass of either kind counts. */
typedef struct read_job {
  uint8_t **bufs;
  int copies, part, parts;
  size_t bytes;
  bool prefetch;
  uint64_t sum;
  pthread_barrier_t *start;
} read_job_t;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static uint64_t sum_avx512(const uint8_t *p, size_t n, bool prefetch) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (size_t i = 0; i + 256 <= n; i += 256) {
    if (prefetch)
      for (int l = 0; l < 4; l++) _mm_prefetch((const char *)p + i + 4096 + 64 * l, _MM_HINT_T1);
    a = _mm512_add_epi64(a, _mm512_loadu_si512(p + i));
    b = _mm512_add_epi64(b, _mm512_loadu_si512(p + i + 64));
    c = _mm512_add_epi64(c, _mm512_loadu_si512(p + i + 128));
    d = _mm512_add_epi64(d, _mm512_loadu_si512(p + i + 192));
  }
  return (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
}
#endif

static uint64_t sum_bytes(const uint8_t *p, size_t n, bool prefetch) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return sum_avx512(p, n, prefetch);
#endif
  (void)prefetch;
  uint64_t s = 0;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t v;
    memcpy(&v, p + i, 8);
    s += v;
  }
  return s;
}

static void *read_thread(void *arg) {
  read_job_t *j = arg;
  size_t per = j->bytes / (size_t)j->parts & ~(size_t)255, lo = per * (size_t)j->part;
  size_t len = j->part + 1 == j->parts ? j->bytes - lo : per;
  pthread_barrier_wait(j->start);
  for (int i = 0; i < j->copies; i++) j->sum += sum_bytes(j->bufs[i] + lo, len, j->prefetch);
  return NULL;
}

/* GB/s of reading `copies` buffers of `bytes` with `threads` threads: the
 * best of `reps` passes of each kind, each timed from the threads' common
 * start to the last one's end (as a GEMV call is). 0 when the buffers
 * cannot be had. */
static double read_gbs(size_t bytes, int copies, int threads, int reps) {
  uint8_t **bufs = calloc((size_t)copies, sizeof *bufs);
  bool ok = bufs != NULL;
  for (int i = 0; ok && i < copies; i++) {
    bufs[i] = bench_huge_buffer(bytes);
    if ((ok = bufs[i] != NULL)) memset(bufs[i], 0x11, bytes);
  }
  double best = 0;
  pthread_barrier_t start;
  for (int r = 0; ok && r <= 2 * reps; r++) { /* pass 0 warms up */
    pthread_t tid[8];
    read_job_t job[8];
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++) {
      job[t] = (read_job_t){bufs, copies, t, threads, bytes, r % 2 == 0, 0, &start};
      if (pthread_create(&tid[t], NULL, read_thread, &job[t]) != 0) abort();
    }
    pthread_barrier_wait(&start);
    double t0 = now_s();
    for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    double gbs = (double)bytes * copies / (now_s() - t0) * 1e-9;
    pthread_barrier_destroy(&start);
    if (r && gbs > best) best = gbs;
  }
  for (int i = 0; bufs && i < copies; i++) free(bufs[i]);
  free(bufs);
  return best;
}

/* ---- MKL's cblas_gemm_s8u8s32 ------------------------------------------------ */

typedef void (*s8u8_fn)(int, int, int, int, int, int, int, float, const void *, int, int8_t,
                        const void *, int, int8_t, float, int32_t *, int, const int32_t *);

static double time_mkl(const char *bpdir, int64_t m, int64_t n, int64_t k, int reps, char *why, size_t wsz) {
  char path[4200];
  void *dl = NULL;
  for (int v = 3; v >= 2 && !dl; v--) {
    snprintf(path, sizeof path, "%s/../bench-venv/lib/libmkl_rt.so.%d", bpdir, v);
    dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  s8u8_fn f = dl ? (s8u8_fn)dlsym(dl, "cblas_gemm_s8u8s32") : NULL;
  if (!f) {
    snprintf(why, wsz, "absent (%s)", dl ? "no cblas_gemm_s8u8s32" : path);
    return -1;
  }
  uint8_t *a = calloc((size_t)(m * k), 1);
  int8_t *b = calloc((size_t)(k * n), 1);
  int32_t *c = calloc((size_t)(m * n), 4), co = 0;
  double best = 1e30;
  for (int r = 0; r <= reps; r++) {
    double t0 = now_s();
    f(101, 111, 111, 171, (int)m, (int)n, (int)k, 1.0f, a, (int)k, 0, b, (int)n, 0, 0.0f, c, (int)n, &co);
    double t = now_s() - t0;
    if (r && t < best) best = t;
  }
  free(a), free(b), free(c);
  return best;
}

static void gemm_row(const char *what, int64_t m, int64_t n, int64_t k, double t, double ref) {
  double gops = 2.0 * (double)m * (double)n * (double)k / t * 1e-9;
  printf("%-34s %5lldx%-5lldx%-5lld %9.3f ms %8.1f GOP/s", what, (long long)m, (long long)n, (long long)k,
         t * 1e3, gops);
  if (ref > 0) printf("   %.2fx", ref / t);
  printf("\n");
}

int bench_quant_main(int argc, char **argv) {
  const char *sel = "cpu";
  bool quick = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) sel = argv[++i];
    else if (!strncmp(argv[i], "--device=", 9)) sel = argv[i] + 9;
    else if (!strcmp(argv[i], "--quick")) quick = true;
  }
  bp_context_t *ctx = NULL;
  bp_device_t *dev = NULL;
  bp_stream_t *s = NULL;
  if (bp_context_create(NULL, &ctx) != BP_OK || bp_device_open(ctx, sel, NULL, &dev) != BP_OK ||
      bp_stream_create(dev, &s) != BP_OK) {
    fprintf(stderr, "bp bench --op qgemm: %s\n", bp_last_error());
    return 1;
  }
  char exe[4096] = "", why[4300] = "";
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len > 0) exe[len] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash) *slash = '\0';
  int reps = quick ? 2 : 5;
  int64_t g = quick ? 512 : 1024;
  printf("bp bench --op qgemm on %s (best of %d; ratios: the bracketed reference's time / ours)\n", sel, reps);
  double ti8 = time_gemm(dev, s, BP_I8, BP_I8, BP_I32, g, g, g, reps);
  double tu8 = time_gemm(dev, s, BP_U8, BP_I8, BP_I32, g, g, g, reps);
  double tbf = time_gemm(dev, s, BP_BF16, BP_BF16, BP_BF16, g, g, g, reps);
  double tf8 = time_gemm(dev, s, BP_FP8_E4M3, BP_FP8_E4M3, BP_F32, g, g, g, reps);
  double tmkl = time_mkl(exe, g, g, g, reps, why, sizeof why);
  gemm_row("int8 gemm (bp_qgemm, i32 c)", g, g, g, ti8, -1);
  /* MKL's row-major call takes a u8 a and an s8 b: the same operation */
  gemm_row("u8 x i8 gemm (bp_qgemm, i32 c)", g, g, g, tu8, -1);
  if (tmkl > 0) gemm_row("  MKL cblas_gemm_s8u8s32", g, g, g, tmkl, -1);
  else printf("  MKL cblas_gemm_s8u8s32: %s\n", why);
  gemm_row("  bf16 gemm (bp_matmul)", g, g, g, tbf, -1);
  gemm_row("fp8 e4m3 gemm (bp_qgemm, f32 c)", g, g, g, tf8, -1);
  printf("  fp8 e4m3 vs our bf16: %.2fx\n", tf8 > 0 ? tbf / tf8 : 0.0);
  printf("  int8 vs MKL: %.2fx   u8 x i8 vs MKL: %.2fx   int8 vs our bf16: %.2fx\n",
         tmkl > 0 ? tmkl / ti8 : 0.0, tmkl > 0 ? tmkl / tu8 : 0.0, tbf / ti8);
  double gbs = bench_stream_gbs(2, quick);
  static const int64_t gemv_n[2] = {4096, 11008};
  for (int i = 0; i < 2; i++) {
    int copies = 0;
    double t = time_gemv_cold(dev, s, BP_Q4_0, gemv_n[i], 4096, quick ? 1 : 3, &copies);
    uint64_t wb = bp_quant_bytes(BP_Q4_0, (uint64_t)gemv_n[i] * 4096);
    if (t <= 0) {
      printf("q4_0 gemv 1x%lldx4096: failed (%s)\n", (long long)gemv_n[i], bp_last_error());
      continue;
    }
    /* the read loop right after the GEMV, over as many copies of its size */
    double rd = read_gbs(wb, copies, 2, quick ? 1 : 3), w = (double)wb / t * 1e-9;
    printf("q4_0 gemv 1x%lldx4096 %9.3f ms  weights %.1f GB/s = %.0f %% of the weight-read loop's %.1f GB/s,"
           " %.0f %% of the streaming loop's %.1f GB/s (%d weight copies in turn)\n",
           (long long)gemv_n[i], t * 1e3, w, rd > 0 ? 100 * w / rd : 0.0, rd, 100 * w / gbs, gbs, copies);
  }
  int64_t pm = quick ? 64 : 512;
  double tq = time_gemm(dev, s, BP_F32, BP_Q4_0, BP_F32, pm, 4096, 4096, quick ? 1 : 2);
  double tf = time_gemm(dev, s, BP_F32, BP_F32, BP_F32, pm, 4096, 4096, quick ? 1 : 2);
  double tb = time_gemm(dev, s, BP_BF16, BP_BF16, BP_BF16, pm, 4096, 4096, quick ? 1 : 2);
  gemm_row("q4_0 gemm (bp_qmatmul, f32 a)", pm, 4096, 4096, tq, -1);
  gemm_row("  f32 gemm (bp_matmul)", pm, 4096, 4096, tf, -1);
  gemm_row("  bf16 gemm (bp_matmul)", pm, 4096, 4096, tb, -1);
  bp_stream_destroy(s);
  bp_device_close(dev);
  bp_context_destroy(ctx);
  return 0;
}
