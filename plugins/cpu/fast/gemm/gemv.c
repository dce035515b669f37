/*
 * fast/gemm/gemv.c — matrix-vector products for f32 / f64, in the two forms a
 * row-major matrix allows:
 *   - dot:  y[i] = alpha * (row i of A) . x + beta * y[i], rows of A
 *     contiguous (bp_gemv; a GEMM whose C is one column);
 *   - axpy: y[j] = alpha * sum_p x[p] * B[p][j] + beta * y[j], rows of B
 *     contiguous (bp_gemv of a column-major A; a GEMM whose C is one row),
 *     B read row after row into per-thread sums of a block of columns.
 * Both are bound by reading the matrix once, so plain C that the compiler
 * vectorises, with independent partial sums, split over the pool (rows
 * for dot, column blocks for axpy) is as fast as the memory allows; the
 * packed GEMM would copy the whole matrix first for one use of each
 * element. Other layouts and dtypes use the reference.
 */
#include <immintrin.h>
#include <string.h>

#include "gemm.h"
#include "plugins/cpu/tensor.h"

/* Below ~256 KiB of matrix a second thread costs more than it brings. */
#define GEMV_MT_ELEMS 65536.0
/* Bytes of sums an axpy task keeps: they stay in L1. */
#define GEMV_ACC_BYTES 16384
/* Least rows of B per k part when an axpy splits k (below it the parts'
 * sums cost more than the rows they read). */
#define GEMV_KPART_MIN_ROWS 256

typedef struct gemv_job {
  bool f64;
  int64_t rows, len;   /* dot: rows of A, their length; axpy: k, n */
  int64_t cols;        /* axpy: columns per task (GEMV_ACC_BYTES of sums) */
  int64_t kparts;      /* axpy: row ranges of B per column block */
  char *partial;       /* axpy with kparts > 1: kparts x len sums */
  const char *a, *x;   /* the matrix and the vector */
  int64_t lda, incx;   /* elements */
  char *y;
  int64_t incy;
  double alpha, beta;
} gemv_job_t;

#define DEFINE_GEMV_DOT(T, sfx)                                                \
  static void gemv_dot_##sfx(void *ctx, int64_t begin, int64_t end,            \
                             unsigned worker) {                                \
    const gemv_job_t *j = ctx;                                                 \
    (void)worker;                                                              \
    const T *x = (const T *)j->x;                                              \
    int64_t n = j->len, sx = j->incx;                                          \
    T alpha = (T)j->alpha, beta = (T)j->beta;                                  \
    for (int64_t i = begin; i < end; i++) {                                    \
      const T *ai = (const T *)j->a + i * j->lda;                              \
      T s[8] = {0};                                                            \
      int64_t p = 0;                                                           \
      if (sx == 1)                                                             \
        for (; p + 8 <= n; p += 8)                                             \
          for (int u = 0; u < 8; u++) s[u] += ai[p + u] * x[p + u];            \
      for (; p < n; p++) s[0] += ai[p] * x[p * sx];                            \
      T dot = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])); \
      T *yi = (T *)j->y + i * j->incy;                                         \
      *yi = beta == 0 ? alpha * dot : alpha * dot + beta * *yi;                \
    }                                                                          \
  }
DEFINE_GEMV_DOT(float, f32)
DEFINE_GEMV_DOT(double, f64)

/* The dot form in AVX-512 and in AVX2 (chosen at run time): four rows a pass, so
 * four streams of the matrix are in flight for the prefetchers, each
 * summed into two vectors of partial sums (eight independent FMA chains).
 * One row at a time with eight floats of sums, as the baseline loop
 * above, reads a matrix from the last-level cache slower than the memory
 * delivers it (docs/backend-cpu.md, "GEMM"). VEC, W, LOADU, FMADD, ADD,
 * ZEROV and HSUM are the type's operations in the ISA of ATTR. */
#define GEMV_DOT_ROWS 4
#define DEFINE_GEMV_DOT_WIDE(T, sfx, ATTR, VEC, W, LOADU, FMADD, ADD, ZEROV, HSUM)            \
  ATTR static void gemv_dot_##sfx(void *ctx, int64_t begin, int64_t end,                    \
                                  unsigned worker) {                                        \
    const gemv_job_t *j = ctx;                                                               \
    (void)worker;                                                                            \
    const T *x = (const T *)j->x;                                                            \
    int64_t n = j->len, sx = j->incx;                                                        \
    T alpha = (T)j->alpha, beta = (T)j->beta;                                                \
    for (int64_t i = begin; i < end; i += GEMV_DOT_ROWS) {                                   \
      int rows = end - i < GEMV_DOT_ROWS ? (int)(end - i) : GEMV_DOT_ROWS;                   \
      const T *r[GEMV_DOT_ROWS];                                                             \
      VEC s0[GEMV_DOT_ROWS], s1[GEMV_DOT_ROWS];                                              \
      for (int q = 0; q < GEMV_DOT_ROWS; q++) {                                              \
        r[q] = (const T *)j->a + (i + (q < rows ? q : rows - 1)) * j->lda;                   \
        s0[q] = s1[q] = ZEROV();                                                             \
      }                                                                                      \
      int64_t p = 0;                                                                         \
      if (sx == 1)                                                                           \
        for (; p + 2 * W <= n; p += 2 * W) {                                                 \
          VEC x0 = LOADU(x + p), x1 = LOADU(x + p + W);                                      \
          for (int q = 0; q < GEMV_DOT_ROWS; q++) {                                          \
            s0[q] = FMADD(LOADU(r[q] + p), x0, s0[q]);                                       \
            s1[q] = FMADD(LOADU(r[q] + p + W), x1, s1[q]);                                   \
          }                                                                                  \
        }                                                                                    \
      for (int q = 0; q < rows; q++) {                                                       \
        T dot = HSUM(ADD(s0[q], s1[q]));                                                     \
        for (int64_t t = p; t < n; t++) dot += r[q][t] * x[t * sx];                          \
        T *yi = (T *)j->y + (i + q) * j->incy;                                               \
        *yi = beta == 0 ? alpha * dot : alpha * dot + beta * *yi;                            \
      }                                                                                      \
    }                                                                                        \
  }

/* Tasks are (block of j->cols columns, range of B's rows): each sums its
 * rows of its block, k outermost, so each row segment is read once, front
 * to back. With one range the task writes y; with several (kparts > 1)
 * it writes its sums to the partial buffer, and gemv_axpy_reduce adds
 * them up in range order. */
#define DEFINE_GEMV_AXPY(T, sfx, ATTR)                                         \
  ATTR static void gemv_axpy_##sfx(void *ctx, int64_t begin, int64_t end,      \
                                   unsigned worker) {                          \
    const gemv_job_t *j = ctx;                                                 \
    (void)worker;                                                              \
    const T *x = (const T *)j->x;                                              \
    T alpha = (T)j->alpha, beta = (T)j->beta;                                  \
    T acc[GEMV_ACC_BYTES / sizeof(T)];                                         \
    for (int64_t t = begin; t < end; t++) {                                    \
      int64_t blk = t / j->kparts, part = t % j->kparts;                       \
      int64_t c0 = blk * j->cols;                                              \
      int64_t w = j->len - c0 < j->cols ? j->len - c0 : j->cols;               \
      int64_t per = (j->rows + j->kparts - 1) / j->kparts;                     \
      int64_t p = part * per, pend = p + per < j->rows ? p + per : j->rows;    \
      memset(acc, 0, (size_t)w * sizeof *acc);                                 \
      /* eight rows a pass (then four, then one): an eighth of the sums'    \
       * loads and stores, and eight streams of B in flight for the          \
       * prefetchers, which a matrix from the last-level cache needs */      \
      for (; p + 8 <= pend; p += 8) {                                          \
        const T *b0 = (const T *)j->a + p * j->lda + c0, *b1 = b0 + j->lda;    \
        const T *b2 = b1 + j->lda, *b3 = b2 + j->lda, *b4 = b3 + j->lda;       \
        const T *b5 = b4 + j->lda, *b6 = b5 + j->lda, *b7 = b6 + j->lda;       \
        T x0 = x[p * j->incx], x1 = x[(p + 1) * j->incx];                      \
        T x2 = x[(p + 2) * j->incx], x3 = x[(p + 3) * j->incx];                \
        T x4 = x[(p + 4) * j->incx], x5 = x[(p + 5) * j->incx];                \
        T x6 = x[(p + 6) * j->incx], x7 = x[(p + 7) * j->incx];                \
        int64_t c = 0;                                                         \
        for (; c + 16 <= w; c += 16)                                           \
          for (int u = 0; u < 16; u++)                                         \
            acc[c + u] += ((x0 * b0[c + u] + x1 * b1[c + u]) +                 \
                           (x2 * b2[c + u] + x3 * b3[c + u])) +                \
                          ((x4 * b4[c + u] + x5 * b5[c + u]) +                 \
                           (x6 * b6[c + u] + x7 * b7[c + u]));                 \
        for (; c < w; c++)                                                     \
          acc[c] += ((x0 * b0[c] + x1 * b1[c]) + (x2 * b2[c] + x3 * b3[c])) +  \
                    ((x4 * b4[c] + x5 * b5[c]) + (x6 * b6[c] + x7 * b7[c]));   \
      }                                                                        \
      for (; p + 4 <= pend; p += 4) {                                          \
        const T *b0 = (const T *)j->a + p * j->lda + c0, *b1 = b0 + j->lda;    \
        const T *b2 = b1 + j->lda, *b3 = b2 + j->lda;                          \
        T x0 = x[p * j->incx], x1 = x[(p + 1) * j->incx];                      \
        T x2 = x[(p + 2) * j->incx], x3 = x[(p + 3) * j->incx];                \
        int64_t c = 0;                                                         \
        /* sixteen at a time: a fixed count the compiler vectorises at -O2 */ \
        for (; c + 16 <= w; c += 16)                                           \
          for (int u = 0; u < 16; u++)                                         \
            acc[c + u] += (x0 * b0[c + u] + x1 * b1[c + u]) +                  \
                          (x2 * b2[c + u] + x3 * b3[c + u]);                   \
        for (; c < w; c++)                                                     \
          acc[c] += (x0 * b0[c] + x1 * b1[c]) + (x2 * b2[c] + x3 * b3[c]);     \
      }                                                                        \
      for (; p < pend; p++) {                                                  \
        const T *bp = (const T *)j->a + p * j->lda + c0;                       \
        T xp = x[p * j->incx];                                                 \
        for (int64_t c = 0; c < w; c++) acc[c] += xp * bp[c];                  \
      }                                                                        \
      if (j->kparts > 1) {                                                     \
        memcpy((T *)j->partial + part * j->len + c0, acc, (size_t)w * sizeof *acc); \
        continue;                                                              \
      }                                                                        \
      T *y = (T *)j->y + c0 * j->incy;                                         \
      for (int64_t c = 0; c < w; c++) {                                        \
        T *yc = y + c * j->incy;                                               \
        *yc = beta == 0 ? alpha * acc[c] : alpha * acc[c] + beta * *yc;        \
      }                                                                        \
    }                                                                          \
  }
DEFINE_GEMV_AXPY(float, f32, )
DEFINE_GEMV_AXPY(double, f64, )
/* The same loops in AVX-512 (chosen at run time): the baseline build's
 * SSE2 moves four floats per load, too few to keep up with a matrix that
 * comes from the last-level cache. */
#if defined(__clang__) /* clang has no prefer-vector-width target option */
#define GEMV_AVX512 __attribute__((target("avx512f,avx512vl,fma")))
#else
#define GEMV_AVX512 __attribute__((target("avx512f,avx512vl,fma,prefer-vector-width=512")))
#endif
DEFINE_GEMV_AXPY(float, f32_avx512, GEMV_AVX512)
DEFINE_GEMV_AXPY(double, f64_avx512, GEMV_AVX512)
DEFINE_GEMV_DOT_WIDE(float, f32_avx512, GEMV_AVX512, __m512, 16, _mm512_loadu_ps,
                     _mm512_fmadd_ps, _mm512_add_ps, _mm512_setzero_ps, _mm512_reduce_add_ps)
DEFINE_GEMV_DOT_WIDE(double, f64_avx512, GEMV_AVX512, __m512d, 8, _mm512_loadu_pd,
                     _mm512_fmadd_pd, _mm512_add_pd, _mm512_setzero_pd, _mm512_reduce_add_pd)
/* The same in AVX2 + FMA, for CPUs (or devices held) below AVX-512. */
#define GEMV_AVX2 __attribute__((target("avx2,fma")))
GEMV_AVX2 static float gemv_hsum_ps256(__m256 v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}
GEMV_AVX2 static double gemv_hsum_pd256(__m256d v) {
  __m128d h = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}
DEFINE_GEMV_DOT_WIDE(float, f32_avx2, GEMV_AVX2, __m256, 8, _mm256_loadu_ps, _mm256_fmadd_ps,
                     _mm256_add_ps, _mm256_setzero_ps, gemv_hsum_ps256)
DEFINE_GEMV_DOT_WIDE(double, f64_avx2, GEMV_AVX2, __m256d, 4, _mm256_loadu_pd, _mm256_fmadd_pd,
                     _mm256_add_pd, _mm256_setzero_pd, gemv_hsum_pd256)

/* y = alpha * (sum of the kparts partial sums, in order) + beta * y. */
#define DEFINE_GEMV_AXPY_REDUCE(T, sfx)                                        \
  static void gemv_axpy_reduce_##sfx(const gemv_job_t *j) {                    \
    const T *part = (const T *)j->partial;                                     \
    T alpha = (T)j->alpha, beta = (T)j->beta;                                  \
    for (int64_t c = 0; c < j->len; c++) {                                     \
      T s = part[c];                                                           \
      for (int64_t q = 1; q < j->kparts; q++) s += part[q * j->len + c];       \
      T *yc = (T *)j->y + c * j->incy;                                         \
      *yc = beta == 0 ? alpha * s : alpha * s + beta * *yc;                    \
    }                                                                          \
  }
DEFINE_GEMV_AXPY_REDUCE(float, f32)
DEFINE_GEMV_AXPY_REDUCE(double, f64)

static bool gemv_avx2_ok(const cpu_device_t *dev) {
  const cpu_features_t *f = cpu_features_get();
  return (dev->isa == BP_ISA_BEST || dev->isa >= BP_ISA_AVX2) && f->avx2 && f->fma;
}

static bool gemv_avx512_ok(const cpu_device_t *dev) {
  const cpu_features_t *f = cpu_features_get();
  return (dev->isa == BP_ISA_BEST || dev->isa >= BP_ISA_AVX512) && f->avx512f &&
         f->avx512vl && f->fma;
}

static void run(cpu_device_t *dev, gemv_job_t *j, bool axpy) {
  bool wide = gemv_avx512_ok(dev), avx2 = gemv_avx2_ok(dev);
  cpu_pool_fn fn = axpy ? (j->f64 ? (wide ? gemv_axpy_f64_avx512 : gemv_axpy_f64)
                                  : (wide ? gemv_axpy_f32_avx512 : gemv_axpy_f32))
                        : (j->f64 ? (wide ? gemv_dot_f64_avx512 : avx2 ? gemv_dot_f64_avx2 : gemv_dot_f64)
                                  : (wide ? gemv_dot_f32_avx512 : avx2 ? gemv_dot_f32_avx2 : gemv_dot_f32));
  bool mt = dev->pool && (double)j->rows * (double)j->len >= GEMV_MT_ELEMS;
  int64_t tasks = j->rows;
  j->kparts = 1;
  if (axpy) {
    int64_t workers = mt ? (int64_t)cpu_pool_size(dev->pool) : 1;
    int64_t most = GEMV_ACC_BYTES / (j->f64 ? 8 : 4);
    int64_t blocks = (j->len + most - 1) / most;
    /* Fewer whole-width blocks than workers: split B's rows as well, so
     * each worker reads whole rows, one contiguous run of B, rather than
     * a part of every row (a strided walk the prefetchers restart on
     * every row). The partial sums are added up after. */
    if (blocks < workers && j->rows >= workers * GEMV_KPART_MIN_ROWS &&
        (j->partial = cpu_fast_scratch(4, (size_t)(workers * j->len) * (j->f64 ? 8 : 4)))) {
      j->kparts = workers;
      j->cols = (j->len + blocks - 1) / blocks;
    } else {
      /* column blocks narrow enough that every worker gets one, 16
       * columns at least (whole vectors) */
      int64_t cols = ((j->len + workers - 1) / workers + 15) / 16 * 16;
      j->cols = cols < most ? (cols > 16 ? cols : 16) : most;
      blocks = (j->len + j->cols - 1) / j->cols;
    }
    tasks = blocks * j->kparts;
  }
  if (mt && tasks > 1)
    cpu_pool_run(dev->pool, tasks, axpy ? 1 : 64, fn, j);
  else
    fn(j, 0, tasks, 0);
  if (axpy && j->kparts > 1) {
    if (j->f64) gemv_axpy_reduce_f64(j);
    else gemv_axpy_reduce_f32(j);
  }
}

void cpu_fast_gemv_dot(cpu_device_t *dev, bool f64, int64_t m, int64_t k,
                   const void *a, int64_t lda, const void *x, int64_t incx,
                   void *y, int64_t incy, double alpha, double beta) {
  gemv_job_t j = {f64, m, k, 0, 1, NULL, a, x, lda, incx, y, incy, alpha, beta};
  run(dev, &j, false);
}

void cpu_fast_gemv_axpy(cpu_device_t *dev, bool f64, int64_t k, int64_t n,
                    const void *x, int64_t incx, const void *b, int64_t ldb,
                    void *y, int64_t incy, double alpha, double beta) {
  gemv_job_t j = {f64, k, n, 0, 1, NULL, b, x, ldb, incx, y, incy, alpha, beta};
  run(dev, &j, true);
}

bp_status_t cpu_fast_gemv(cpu_device_t *dev, const bp_gemv_args_t *g) {
  bp_dtype_t dt = g->a.dtype;
  if ((dt != BP_F32 && dt != BP_F64) || g->x.dtype != dt ||
      g->y.dtype != dt || g->a.rank != 2 || g->x.rank != 1 ||
      g->y.rank != 1 || g->alpha == 0 || (g->y.shape[0] > 1 && g->y.strides[0] == 0))
    return BP_ERR_UNIMPLEMENTED;
  int64_t m = g->a.shape[0], n = g->a.shape[1];
  const char *a = cpu_tensor_base(&g->a), *x = cpu_tensor_base(&g->x);
  char *y = cpu_tensor_base(&g->y);
  bool f64 = dt == BP_F64;
  if (n <= 1 || g->a.strides[1] == 1)
    cpu_fast_gemv_dot(dev, f64, m, n, a, g->a.strides[0], x, g->x.strides[0], y,
                  g->y.strides[0], g->alpha, g->beta);
  else if (m <= 1 || g->a.strides[0] == 1) /* column-major A: y = x^T A^T */
    cpu_fast_gemv_axpy(dev, f64, n, m, x, g->x.strides[0], a, g->a.strides[1], y,
                   g->y.strides[0], g->alpha, g->beta);
  else
    return BP_ERR_UNIMPLEMENTED;
  return BP_OK;
}
