/*
 * fast/gemm/gemm_pack_avx2.c — AVX2 packing of f32 GEMM panels for the common
 * layouts (fast/gemm/gemm.h, cpu_fast_pack_fn), from f32 sources or, widening on
 * the way (F16C for f16, a shift for bf16), from f16 / bf16 ones. Compiled
 * with the AVX2 flags (fast.mk); reached only through cpu_fast_sgemm_avx2 and,
 * for widening, the driver's CPU check (cpu_fast_wpack_avx2).
 */
#include <immintrin.h>

#include "gemm.h"
#include "plugins/cpu/fast/tail_avx2.h"

/* Transposes 8 rows of 8 floats in place: r[i] lane j -> r[j] lane i. */
static inline __attribute__((always_inline)) void tr8(__m256 r[8]) {
  __m256 t[8], u[8];
  _Pragma("GCC unroll 8") for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  _Pragma("GCC unroll 8") for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  _Pragma("GCC unroll 8") for (int i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/* Source element kinds: the 16-bit ones are widened to f32 as they load. */
enum { SRC_F32, SRC_F16, SRC_BF16 };

static inline __m256 widen8(__m128i h, int kind) {
  if (kind == SRC_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* 8 lanes from element i of src (n of them real, the rest zero). */
static inline __attribute__((always_inline)) __m256 load8(const void *src,
                                                          int64_t i, int64_t n,
                                                          int kind) {
  if (kind == SRC_F32) {
    const float *s = (const float *)src + i;
    return n >= 8 ? _mm256_loadu_ps(s) : _mm256_maskload_ps(s, cpu_fast_first_lanes8(n));
  }
  const uint16_t *s = (const uint16_t *)src + i;
  if (n >= 8) return widen8(_mm_loadu_si128((const __m128i *)s), kind);
  uint16_t t[8] = {0};
  for (int64_t j = 0; j < n; j++) t[j] = s[j];
  return widen8(_mm_loadu_si128((const __m128i *)t), kind);
}

/* Inlined with constant w and kind (below) so that lane masks, row counts
 * and the loads fold. */
static inline __attribute__((always_inline)) bool pack(
    const void *src, int64_t si, int64_t sk, int64_t cnt, int64_t kb, int w,
    float *dst, int kind) {
  if (sk == 1) {
    /* Rows contiguous along k: 8 x 8 register transposes, rows past cnt
     * read as zeros, which is the padding the panels need. */
    for (int64_t i0 = 0; i0 < cnt; i0 += w, dst += (int64_t)w * kb) {
      for (int c = 0; c < w; c += 8) {
        int64_t rows = cnt - i0 < w ? cnt - i0 - c : w - c;
        bool full = w - c >= 8;
        int64_t s = (i0 + c) * si;
        for (int64_t p = 0; p < kb; p += 8) {
          int64_t kn = kb - p < 8 ? kb - p : 8;
          __m256 r[8];
          _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) r[i] =
              i >= rows ? _mm256_setzero_ps() : load8(src, s + i * si + p, kn, kind);
          tr8(r);
          float *d = dst + p * w + c;
          for (int j = 0; j < kn; j++) {
            if (full)
              _mm256_storeu_ps(d + j * w, r[j]);
            else
              cpu_fast_store_first8(d + j * w, r[j], w - c);
          }
        }
      }
    }
    return true;
  }
  if (si == 1) {
    /* Panel rows contiguous: copies, in strips of CPU_FAST_PACK_STRIP k steps
     * across every panel (fast/gemm/gemm.h). One panel at a time walked the source
     * down a column (one line per row, a row apart: nothing for the
     * prefetcher to follow, and well under half this way's bandwidth from
     * memory), and k outermost sent every store a panel (kb * w floats, 16 KiB for B)
     * from the last, into one L1 set. */
    int64_t np = (cnt + w - 1) / w;
    for (int64_t p0 = 0; p0 < kb; p0 += CPU_FAST_PACK_STRIP) {
      int64_t p1 = kb - p0 < CPU_FAST_PACK_STRIP ? kb : p0 + CPU_FAST_PACK_STRIP;
      for (int64_t q = 0; q < np; q++) {
        int64_t i0 = q * w;
        for (int64_t p = p0; p < p1; p++) {
          int64_t s = p * sk;
          float *d = dst + q * w * kb + p * w;
          for (int c = 0; c < w; c += 8) {
            int64_t n = cnt - i0 - c < w - c ? cnt - i0 - c : w - c;
            __m256 v = load8(src, s + i0 + c, n, kind);
            if (w - c >= 8)
              _mm256_storeu_ps(d + c, v);
            else
              cpu_fast_store_first8(d + c, v, w - c);
          }
        }
      }
    }
    return true;
  }
  return false;
}

bool cpu_fast_spack_avx2(const void *src, int64_t si, int64_t sk, int64_t cnt,
                     int64_t kb, int w, void *dst_) {
  float *dst = dst_;
  if (w > 16) return false;
  if (w == 6) return pack(src, si, sk, cnt, kb, 6, dst, SRC_F32);
  if (w == 16) return pack(src, si, sk, cnt, kb, 16, dst, SRC_F32);
  return pack(src, si, sk, cnt, kb, w, dst, SRC_F32);
}

bool cpu_fast_wpack_avx2(bp_dtype_t dtype, const void *src, int64_t si, int64_t sk,
                     int64_t cnt, int64_t kb, int w, void *dst_) {
  float *dst = dst_;
  if (dtype == BP_F16) {
    if (w == 6) return pack(src, si, sk, cnt, kb, 6, dst, SRC_F16);
    if (w == 16) return pack(src, si, sk, cnt, kb, 16, dst, SRC_F16);
    return pack(src, si, sk, cnt, kb, w, dst, SRC_F16);
  }
  if (dtype == BP_BF16) {
    if (w == 6) return pack(src, si, sk, cnt, kb, 6, dst, SRC_BF16);
    if (w == 16) return pack(src, si, sk, cnt, kb, 16, dst, SRC_BF16);
    return pack(src, si, sk, cnt, kb, w, dst, SRC_BF16);
  }
  return false;
}

/* ---- narrow C: the f32 tile rounded back into f16 / bf16 --------------------*/

/* f32 -> bf16 bits, round to nearest even; NaN quieted with its top payload
 * bits kept (cpu_bf16_from_double's rules, one rounding). */
static inline __m128i narrow_bf16(__m256 v) {
  __m256i b = _mm256_castps_si256(v);
  __m256i r = _mm256_add_epi32(
      b, _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                          _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1))));
  __m256i q = _mm256_or_si256(b, _mm256_set1_epi32(0x00400000)); /* quiet NaN */
  __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  r = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(q), nan));
  r = _mm256_srli_epi32(r, 16);
  /* 32-bit lanes to 16-bit: pack within 128-bit halves, then order them */
  __m256i p = _mm256_packus_epi32(r, r);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0x08));
}

static inline __m128i narrow8(__m256 v, int kind) {
  if (kind == SRC_F16) return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
  return narrow_bf16(v);
}

static inline __attribute__((always_inline)) void wmerge(
    const float *tile, int nr, uint16_t *c, int64_t scm, int64_t mb, int64_t nb,
    float alpha, float beta, int kind) {
  __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  for (int64_t i = 0; i < mb; i++) {
    uint16_t *ci = c + i * scm;
    for (int64_t j = 0; j < nb; j += 8) {
      int64_t n = nb - j < 8 ? nb - j : 8;
      /* the tile's row ends at nb: a wider load would read past it (into
       * sums another worker may be writing, or past the buffer) */
      __m256 v = _mm256_mul_ps(va, load8(tile + i * nr, j, n, SRC_F32));
      /* v + beta * C, two roundings, as the scalar merge */
      if (beta != 0) v = _mm256_add_ps(v, _mm256_mul_ps(vb, load8(ci, j, n, kind)));
      __m128i h = narrow8(v, kind);
      if (n == 8) {
        _mm_storeu_si128((__m128i *)(ci + j), h);
      } else {
        uint16_t t[8];
        _mm_storeu_si128((__m128i *)t, h);
        for (int64_t q = 0; q < n; q++) ci[j + q] = t[q];
      }
    }
  }
}

bool cpu_fast_wmerge_avx2(bp_dtype_t dtype, const float *tile, int nr, void *c,
                      int64_t scm, int64_t scn, int64_t mb, int64_t nb,
                      float alpha, float beta) {
  if (scn != 1) return false;
  if (dtype == BP_F16) wmerge(tile, nr, c, scm, mb, nb, alpha, beta, SRC_F16);
  else if (dtype == BP_BF16) wmerge(tile, nr, c, scm, mb, nb, alpha, beta, SRC_BF16);
  else return false;
  return true;
}
