/*
 * fast/gemm/gemm_avx2.c — AVX2 + FMA GEMM micro-kernels (f32 6x16, f64 6x8).
 * Compiled with -mavx2 -mfma (fast.mk); called only after CPUID says so.
 */
#include <immintrin.h>

#include <string.h>

#include "gemm.h"
#include "gemm_dot_ukr.h"
#include "gemm_ukr.h"
#include "gemm_ukr_rows.h"

/* The lane sums of four vectors a, b, c, d into out[0..3]. */
static inline void dot_red4_ps(float *out, __m256 a, __m256 b, __m256 c, __m256 d) {
  __m256 q = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1)));
}

static inline void dot_red4_pd(double *out, __m256d a, __m256d b, __m256d c, __m256d d) {
  __m256d ab = _mm256_hadd_pd(a, b), cd = _mm256_hadd_pd(c, d);
  _mm256_storeu_pd(out, _mm256_add_pd(_mm256_permute2f128_pd(ab, cd, 0x20),
                                      _mm256_permute2f128_pd(ab, cd, 0x31)));
}

/* The first n of four 64-bit lanes. */
static inline __m256i first_lanes4(int64_t n) {
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
}

/* 6 rows x 2 vectors: 12 accumulators + 2 B + 1 broadcast of 16 ymm. */
#include "ukr_avx2_f32.h"
#define T float
CPU_FAST_DEFINE_UKR(sgemm_ukr_6x16, 6)
CPU_FAST_DEFINE_UKR_ROWS(sgemm_ukr_rows_6x16, 6)
CPU_FAST_DEFINE_UKR_OFFS(sgemm_ukr_offs_6x16, 6)
CPU_FAST_DEFINE_UKR_PIX(sgemm_ukr_pix_6x16, 6)
CPU_FAST_DEFINE_UKR_COLS(sgemm_ukr_cols_6x16, 6)
/* Shorter tiles for C's last rows, as on AVX-512 (gemm_avx512.c): 256 =
 * 42 x 6 + 4, 16 = 2 x 6 + 4. */
CPU_FAST_DEFINE_UKR_ROWS(sgemm_ukr_rows_2x16, 2)
CPU_FAST_DEFINE_UKR_ROWS(sgemm_ukr_rows_4x16, 4)
CPU_FAST_DEFINE_UKR_COLS(sgemm_ukr_cols_2x16, 2)
CPU_FAST_DEFINE_UKR_COLS(sgemm_ukr_cols_4x16, 4)
/* 3 rows of A x 4 of Bᵀ: 12 accumulators, 3 A vectors, one of Bᵀ. */
#define DOT_RED4 dot_red4_ps
#include "dot_plain.h"
CPU_FAST_DEFINE_UKR_DOT(sgemm_ukr_dot_3x4, 3)

/* The kernels as the driver sees them: a tile of `rows` takes the
 * shortest kernel that holds it. */
static void sgemm_ukr_rows(int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float *c, int64_t ldc, int rows, int cols, float alpha, float beta) {
  if (rows <= 2)
    sgemm_ukr_rows_2x16(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
  else if (rows <= 4)
    sgemm_ukr_rows_4x16(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
  else
    sgemm_ukr_rows_6x16(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
}

static void sgemm_ukr_cols(int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float *c, int64_t ldc, int rows, int cols, float alpha, float beta) {
  if (rows <= 2)
    sgemm_ukr_cols_2x16(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
  else if (rows <= 4)
    sgemm_ukr_cols_4x16(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
  else
    sgemm_ukr_cols_6x16(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
}
#include "ukr_undef.h"

/* bf16 and f16 A, Bᵀ and C on the same tile, widened on the way into
 * the f32 FMAs (a shift for bf16, VCVTPH2PS for f16), C rounded to
 * nearest even. A k tail of n < 8 elements is copied next to zeros
 * (AVX2 has no 16-bit masked load). */
static inline __m256 dot_ld_bf16(const uint16_t *p) {
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
static inline __m256 dot_ld_f16(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline __m256 dot_tail(const uint16_t *p, int n, bool f16) {
  uint16_t t[8] = {0};
  memcpy(t, p, (size_t)n * sizeof *t);
  return f16 ? dot_ld_f16(t) : dot_ld_bf16(t);
}
static inline __m256 dot_mld_bf16(const uint16_t *p, int n) { return dot_tail(p, n, false); }
static inline __m256 dot_mld_f16(const uint16_t *p, int n) { return dot_tail(p, n, true); }
#include "ukr_avx2_f32.h"
#define T float
#undef MASK_T
#undef MASK
#define MASK_T int
#define MASK(n) ((int)(n))
#define DOT_RED4 dot_red4_ps
#define DOT_HALF_RA 3
#include "gemm_dot_half.h"
#undef DOT_HALF_RA
#include "ukr_undef.h"

#define VEC __m256d
#define T double
#define W 4
#define LOAD _mm256_loadu_pd
#define STORE _mm256_storeu_pd
#define SET1 _mm256_set1_pd
#define FMA _mm256_fmadd_pd
#define MUL _mm256_mul_pd
#define ZERO _mm256_setzero_pd
#define MASK_T __m256i
#define MASK(n) first_lanes4(n)
#define MLOAD(p, m) _mm256_maskload_pd((p), (m))
#define DOT_RED4 dot_red4_pd
#include "dot_plain.h"
CPU_FAST_DEFINE_UKR(dgemm_ukr_6x8, 6)
/* C's last rows from the same 6-row panels (1024 = 170 x 6 + 4). */
CPU_FAST_DEFINE_UKR_AS(dgemm_ukr_2x8, 2, 6)
CPU_FAST_DEFINE_UKR_AS(dgemm_ukr_4x8, 4, 6)
CPU_FAST_DEFINE_UKR_DOT(dgemm_ukr_dot_3x4, 3)

static void dgemm_ukr_part(int64_t k, const void *ap, const void *bp, void *c, int64_t ldc,
                           const void *alpha, const void *beta, int rows) {
  if (rows <= 2)
    dgemm_ukr_2x8(k, ap, bp, c, ldc, alpha, beta);
  else if (rows <= 4)
    dgemm_ukr_4x8(k, ap, bp, c, ldc, alpha, beta);
  else
    dgemm_ukr_6x8(k, ap, bp, c, ldc, alpha, beta);
}

const cpu_fast_gemm_kernel_t cpu_fast_sgemm_avx2 = {sgemm_ukr_6x16, 6, 16,
                                            256, 1024, 1536,
                                            cpu_fast_spack_avx2,
                                            sgemm_ukr_rows,
                                            sgemm_ukr_offs_6x16,
                                            sgemm_ukr_pix_6x16,
                                            sgemm_ukr_cols, 32, 1024, NULL,
                                            sgemm_ukr_dot_3x4, 3,
                                            bf16_ukr_dot, f16_ukr_dot,
                                            bf16_ukr_dot_1, f16_ukr_dot_1};
const cpu_fast_gemm_kernel_t cpu_fast_dgemm_avx2 = {dgemm_ukr_6x8, 6, 8,
                                            256, 512, 1536, NULL, NULL, NULL, NULL, NULL, 32, 1024,
                                            dgemm_ukr_part, dgemm_ukr_dot_3x4, 3, NULL, NULL, NULL, NULL};
