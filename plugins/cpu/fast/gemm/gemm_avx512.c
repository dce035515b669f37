/*
 * fast/gemm/gemm_avx512.c — AVX-512 GEMM micro-kernels (f32 12x32, f64 14x16).
 * Compiled with -mavx512f -mfma (fast.mk); called only after CPUID says so.
 */
#include <immintrin.h>

#include "gemm.h"
#include "gemm_dot_ukr.h"
#include "gemm_ukr.h"
#include "gemm_ukr_rows.h"

/* The lane sums of four vectors a, b, c, d into out[0..3]: pairs of
 * vectors folded into one, then the 128-bit lanes added. */
static inline void dot_red4_ps(float *out, __m512 a, __m512 b, __m512 c, __m512 d) {
  __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  __m512 q = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(q), _mm512_extractf32x8_ps(q, 1));
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}

static inline void dot_red4_pd(double *out, __m512d a, __m512d b, __m512d c, __m512d d) {
  __m512d ab = _mm512_add_pd(_mm512_unpacklo_pd(a, b), _mm512_unpackhi_pd(a, b));
  __m512d cd = _mm512_add_pd(_mm512_unpacklo_pd(c, d), _mm512_unpackhi_pd(c, d));
  __m512d q = _mm512_add_pd(_mm512_shuffle_f64x2(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_f64x2(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  __m256d lo = _mm512_castpd512_pd256(q), hi = _mm512_extractf64x4_pd(q, 1);
  _mm256_storeu_pd(out, _mm256_add_pd(_mm256_permute2f128_pd(lo, hi, 0x20),
                                      _mm256_permute2f128_pd(lo, hi, 0x31)));
}

/* 12 rows x 2 vectors: 24 accumulators, 2 B vectors, 1 broadcast of the 32
 * zmm registers; the A panel (12 x KC) stays in L1 while B streams from L2. */
#include "ukr_avx512_f32.h"
CPU_FAST_DEFINE_UKR(sgemm_ukr_12x32, 12)
CPU_FAST_DEFINE_UKR_ROWS(sgemm_ukr_rows_12x32, 12)
CPU_FAST_DEFINE_UKR_OFFS(sgemm_ukr_offs_12x32, 12)
CPU_FAST_DEFINE_UKR_PIX(sgemm_ukr_pix_12x32, 12)
CPU_FAST_DEFINE_UKR_COLS(sgemm_ukr_cols_12x32, 12)
/* Shorter tiles for C's last rows: the 12-row kernel spends the FMAs of
 * all 12 rows on a panel of 4 (256 = 21 x 12 + 4, 16 = 12 + 4). */
CPU_FAST_DEFINE_UKR_ROWS(sgemm_ukr_rows_4x32, 4)
CPU_FAST_DEFINE_UKR_ROWS(sgemm_ukr_rows_8x32, 8)
CPU_FAST_DEFINE_UKR_COLS(sgemm_ukr_cols_4x32, 4)
CPU_FAST_DEFINE_UKR_COLS(sgemm_ukr_cols_8x32, 8)
/* 6 rows of A x 4 of Bᵀ: 24 accumulators, 6 A vectors, one of Bᵀ. */
#define DOT_RED4 dot_red4_ps
#include "dot_plain.h"
CPU_FAST_DEFINE_UKR_DOT(sgemm_ukr_dot_6x4, 6)
#include "ukr_undef.h"

/* bf16 and f16 A, Bᵀ and C on the same tile, widened on the way into
 * the f32 FMAs (a shift for bf16, VCVTPH2PS for f16) and C rounded to
 * nearest even: the f32 accumulation of the other paths. */
static inline __m512 dot_ld_bf16(const uint16_t *p) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
static inline __m512 dot_mld_bf16(const uint16_t *p, __mmask16 m) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
static inline __m512 dot_ld_f16(const uint16_t *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline __m512 dot_mld_f16(const uint16_t *p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
#include "ukr_avx512_f32.h"
#define DOT_RED4 dot_red4_ps
#define DOT_HALF_RA 6
#include "gemm_dot_half.h"
#undef DOT_HALF_RA

/* The kernels as the driver sees them: a tile of `rows` takes the
 * shortest kernel that holds it. */
static void sgemm_ukr_rows(int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float *c, int64_t ldc, int rows, int cols, float alpha, float beta) {
  if (rows <= 4)
    sgemm_ukr_rows_4x32(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
  else if (rows <= 8)
    sgemm_ukr_rows_8x32(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
  else
    sgemm_ukr_rows_12x32(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
}

static void sgemm_ukr_cols(int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float *c, int64_t ldc, int rows, int cols, float alpha, float beta) {
  if (rows <= 4)
    sgemm_ukr_cols_4x32(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
  else if (rows <= 8)
    sgemm_ukr_cols_8x32(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
  else
    sgemm_ukr_cols_12x32(k, a, lda, b, ldb, c, ldc, rows, cols, alpha, beta);
}
#include "ukr_undef.h"

#define VEC __m512d
#define T double
#define W 8
#define LOAD _mm512_loadu_pd
#define STORE _mm512_storeu_pd
#define SET1 _mm512_set1_pd
#define FMA _mm512_fmadd_pd
#define MUL _mm512_mul_pd
#define ZERO _mm512_setzero_pd
#define MASK_T __mmask8
#define MASK(n) ((__mmask8)((1u << (n)) - 1))
#define MLOAD(p, m) _mm512_maskz_loadu_pd((m), (p))
#define DOT_RED4 dot_red4_pd
#include "dot_plain.h"
/* 14 rows x 2 vectors: 28 accumulators, 2 B vectors, 1 broadcast, 31 of
 * the 32 zmm registers; two more FMAs per B load than 12 rows give, and
 * MC a multiple of 14 so only C's last rows make an edge tile. */
CPU_FAST_DEFINE_UKR(dgemm_ukr_14x16, 14)
/* C's last rows (1024 = 73 x 14 + 2, 2048 = 146 x 14 + 4) from the same
 * 14-row panels, with the FMAs of 2, 4 or 8 rows instead of 14. */
CPU_FAST_DEFINE_UKR_AS(dgemm_ukr_2x16, 2, 14)
CPU_FAST_DEFINE_UKR_AS(dgemm_ukr_4x16, 4, 14)
CPU_FAST_DEFINE_UKR_AS(dgemm_ukr_8x16, 8, 14)
CPU_FAST_DEFINE_UKR_DOT(dgemm_ukr_dot_6x4, 6)

static void dgemm_ukr_part(int64_t k, const void *ap, const void *bp, void *c, int64_t ldc,
                           const void *alpha, const void *beta, int rows) {
  if (rows <= 2)
    dgemm_ukr_2x16(k, ap, bp, c, ldc, alpha, beta);
  else if (rows <= 4)
    dgemm_ukr_4x16(k, ap, bp, c, ldc, alpha, beta);
  else if (rows <= 8)
    dgemm_ukr_8x16(k, ap, bp, c, ldc, alpha, beta);
  else
    dgemm_ukr_14x16(k, ap, bp, c, ldc, alpha, beta);
}

const cpu_fast_gemm_kernel_t cpu_fast_sgemm_avx512 = {sgemm_ukr_12x32, 12, 32,
                                              384, 640, 3072,
                                              cpu_fast_spack_avx512,
                                              sgemm_ukr_rows,
                                              sgemm_ukr_offs_12x32,
                                              sgemm_ukr_pix_12x32,
                                              sgemm_ukr_cols, 48, 2048, NULL,
                                              sgemm_ukr_dot_6x4, 6,
                                              bf16_ukr_dot, f16_ukr_dot,
                                              bf16_ukr_dot_1, f16_ukr_dot_1};
const cpu_fast_gemm_kernel_t cpu_fast_dgemm_avx512 = {dgemm_ukr_14x16, 14, 16,
                                              256, 480, 3066,
                                              cpu_fast_dpack_avx512,
                                              NULL, NULL, NULL, NULL, 48, 2048,
                                              dgemm_ukr_part, dgemm_ukr_dot_6x4, 6, NULL, NULL, NULL, NULL};
