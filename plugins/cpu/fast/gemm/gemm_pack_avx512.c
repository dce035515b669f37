/*
 * fast/gemm/gemm_pack_avx512.c — AVX-512 packing of f32 and f64 GEMM panels for the
 * common layouts (fast/gemm/gemm.h, cpu_fast_pack_fn). Compiled with the AVX-512
 * flags (fast.mk); reached only through cpu_fast_sgemm_avx512 and
 * cpu_fast_dgemm_avx512.
 */
#include <immintrin.h>

#include "gemm.h"
#include "plugins/cpu/fast/tile16_avx512.h"

/* The packing for one panel width: inlined with constant w so that masks
 * and row counts fold in the common case (whole panels, whole 16-k
 * blocks); the edges take the masked / zeroing forms. */
static inline __attribute__((always_inline)) void pack_t(
    const float *src, int64_t si, int64_t cnt, int64_t kb, int w, float *dst) {
  /* Rows contiguous along k: 16 x 16 register transposes, rows past cnt
   * read as zeros, which is the padding the panels need. */
  for (int64_t i0 = 0; i0 < cnt; i0 += w, dst += (int64_t)w * kb) {
    bool whole = cnt - i0 >= w;
    for (int c = 0; c < w; c += 16) {
      int bw = w - c < 16 ? w - c : 16; /* panel rows in this block */
      int64_t rows = whole ? bw : cnt - i0 - c;
      __mmask16 sm = cpu_fast_first_lanes16(bw);
      const float *s = src + (i0 + c) * si;
      int64_t p = 0;
      for (; p + 16 <= kb; p += 16) {
        __m512 r[16];
        if (whole) {
          _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) r[i] =
              i < bw ? _mm512_loadu_ps(s + i * si + p) : _mm512_setzero_ps();
        } else {
          _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) r[i] =
              i < rows ? _mm512_loadu_ps(s + i * si + p) : _mm512_setzero_ps();
        }
        cpu_fast_transpose16x16(r);
        float *d = dst + p * w + c;
        _Pragma("GCC unroll 16") for (int j = 0; j < 16; j++) {
          if (bw == 16)
            _mm512_storeu_ps(d + j * w, r[j]);
          else
            _mm512_mask_storeu_ps(d + j * w, sm, r[j]);
        }
      }
      if (p < kb) {
        __mmask16 km = cpu_fast_first_lanes16(kb - p);
        __m512 r[16];
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) r[i] =
            i < rows ? _mm512_maskz_loadu_ps(km, s + i * si + p)
                     : _mm512_setzero_ps();
        cpu_fast_transpose16x16(r);
        float *d = dst + p * w + c;
        for (int j = 0; j < kb - p; j++)
          _mm512_mask_storeu_ps(d + j * w, sm, r[j]);
      }
    }
  }
}

static inline __attribute__((always_inline)) void pack_c(
    const float *src, int64_t sk, int64_t cnt, int64_t kb, int w, float *dst) {
  /* Panel rows contiguous: copies in strips of CPU_FAST_PACK_STRIP k steps
   * across every panel (fast/gemm/gemm.h); the last, partial panel takes
   * masked loads. */
  int64_t full = cnt / w, rem = cnt - full * w;
  for (int64_t p0 = 0; p0 < kb; p0 += CPU_FAST_PACK_STRIP) {
    int64_t p1 = kb - p0 < CPU_FAST_PACK_STRIP ? kb : p0 + CPU_FAST_PACK_STRIP;
    for (int64_t q = 0; q < full; q++) {
      const float *s = src + q * w + p0 * sk;
      float *d = dst + q * w * kb + p0 * w;
      for (int64_t p = p0; p < p1; p++, s += sk, d += w)
        _Pragma("GCC unroll 4") for (int c = 0; c < w; c += 16) {
          if (w - c >= 16)
            _mm512_storeu_ps(d + c, _mm512_loadu_ps(s + c));
          else
            _mm512_mask_storeu_ps(d + c, cpu_fast_first_lanes16(w - c),
                                  _mm512_maskz_loadu_ps(cpu_fast_first_lanes16(w - c), s + c));
        }
    }
    if (rem) {
      const float *s = src + full * w + p0 * sk;
      float *d = dst + full * w * kb + p0 * w;
      for (int64_t p = p0; p < p1; p++, s += sk, d += w)
        for (int c = 0; c < w; c += 16)
          _mm512_mask_storeu_ps(d + c, cpu_fast_first_lanes16(w - c),
                                _mm512_maskz_loadu_ps(cpu_fast_first_lanes16(rem - c), s + c));
    }
  }
}

bool cpu_fast_spack_avx512(const void *src_, int64_t si, int64_t sk, int64_t cnt,
                       int64_t kb, int w, void *dst_) {
  const float *src = src_;
  float *dst = dst_;
  if (w > 32) return false;
  if (sk == 1) {
    if (w == 12)
      pack_t(src, si, cnt, kb, 12, dst);
    else if (w == 32)
      pack_t(src, si, cnt, kb, 32, dst);
    else
      pack_t(src, si, cnt, kb, w, dst);
    return true;
  }
  if (si == 1) {
    if (w == 12)
      pack_c(src, sk, cnt, kb, 12, dst);
    else if (w == 32)
      pack_c(src, sk, cnt, kb, 32, dst);
    else
      pack_c(src, sk, cnt, kb, w, dst);
    return true;
  }
  return false;
}

/* ---- f64 panels (cpu_fast_dgemm_avx512) ---------------------------------- */

/* Transposes 8 rows of 8 doubles in place: r[i] lane j -> r[j] lane i. */
static inline __attribute__((always_inline)) void tr8d(__m512d r[8]) {
  __m512d t[8], u[8];
  _Pragma("GCC unroll 8") for (int i = 0; i < 8; i += 2) {
    t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);     /* r_i[0] r_i+1[0] r_i[2] ... */
    t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]); /* r_i[1] r_i+1[1] r_i[3] ... */
  }
  /* u[4q + s]: rows 4q..4q+3 at columns {s', s' + 4} for s = 0: 0, 1: 2,
   * 2: 1, 3: 3 */
  _Pragma("GCC unroll 8") for (int q = 0; q < 8; q += 4) {
    u[q] = _mm512_shuffle_f64x2(t[q], t[q + 2], 0x88);
    u[q + 1] = _mm512_shuffle_f64x2(t[q], t[q + 2], 0xdd);
    u[q + 2] = _mm512_shuffle_f64x2(t[q + 1], t[q + 3], 0x88);
    u[q + 3] = _mm512_shuffle_f64x2(t[q + 1], t[q + 3], 0xdd);
  }
  r[0] = _mm512_shuffle_f64x2(u[0], u[4], 0x88);
  r[4] = _mm512_shuffle_f64x2(u[0], u[4], 0xdd);
  r[2] = _mm512_shuffle_f64x2(u[1], u[5], 0x88);
  r[6] = _mm512_shuffle_f64x2(u[1], u[5], 0xdd);
  r[1] = _mm512_shuffle_f64x2(u[2], u[6], 0x88);
  r[5] = _mm512_shuffle_f64x2(u[2], u[6], 0xdd);
  r[3] = _mm512_shuffle_f64x2(u[3], u[7], 0x88);
  r[7] = _mm512_shuffle_f64x2(u[3], u[7], 0xdd);
}

static inline __mmask8 lanes8(int64_t n) {
  return n >= 8 ? (__mmask8)0xff : n <= 0 ? 0 : (__mmask8)((1u << n) - 1);
}

/* pack_t for doubles: 8 x 8 transposes, rows past cnt read as zeros. */
static inline __attribute__((always_inline)) void dpack_t(
    const double *src, int64_t si, int64_t cnt, int64_t kb, int w, double *dst) {
  for (int64_t i0 = 0; i0 < cnt; i0 += w, dst += (int64_t)w * kb) {
    for (int c = 0; c < w; c += 8) {
      int bw = w - c < 8 ? w - c : 8; /* panel rows in this block */
      int64_t left = cnt - i0 - c, rows = left < bw ? left : bw;
      __mmask8 sm = lanes8(bw);
      const double *s = src + (i0 + c) * si;
      int64_t p = 0;
      if (rows == bw) /* whole blocks of 8 k steps: unmasked loads, the
                       * store mask and counts constant */
        for (; p + 8 <= kb; p += 8) {
          __m512d r[8];
          _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) r[i] =
              i < bw ? _mm512_loadu_pd(s + i * si + p) : _mm512_setzero_pd();
          tr8d(r);
          double *d = dst + p * w + c;
          _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {
            if (bw == 8)
              _mm512_storeu_pd(d + j * w, r[j]);
            else
              _mm512_mask_storeu_pd(d + j * w, sm, r[j]);
          }
        }
      for (; p < kb; p += 8) {
        __mmask8 km = lanes8(kb - p);
        __m512d r[8];
        _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) r[i] =
            i < rows ? _mm512_maskz_loadu_pd(km, s + i * si + p) : _mm512_setzero_pd();
        tr8d(r);
        double *d = dst + p * w + c;
        int64_t steps = kb - p < 8 ? kb - p : 8;
        for (int j = 0; j < steps; j++) _mm512_mask_storeu_pd(d + j * w, sm, r[j]);
      }
    }
  }
}

/* pack_c for doubles: panel rows contiguous, copied in strips of
 * CPU_FAST_PACK_STRIP k steps across every panel (fast/gemm/gemm.h). */
static inline __attribute__((always_inline)) void dpack_c(
    const double *src, int64_t sk, int64_t cnt, int64_t kb, int w, double *dst) {
  int64_t panels = (cnt + w - 1) / w;
  for (int64_t p0 = 0; p0 < kb; p0 += CPU_FAST_PACK_STRIP) {
    int64_t p1 = kb - p0 < CPU_FAST_PACK_STRIP ? kb : p0 + CPU_FAST_PACK_STRIP;
    for (int64_t q = 0; q < panels; q++) {
      int64_t have = cnt - q * w; /* source rows of this panel */
      const double *s = src + q * w + p0 * sk;
      double *d = dst + q * w * kb + p0 * w;
      for (int64_t p = p0; p < p1; p++, s += sk, d += w)
        _Pragma("GCC unroll 2") for (int c = 0; c < w; c += 8)
          _mm512_mask_storeu_pd(d + c, lanes8(w - c),
                                _mm512_maskz_loadu_pd(lanes8(have - c), s + c));
    }
  }
}

bool cpu_fast_dpack_avx512(const void *src_, int64_t si, int64_t sk, int64_t cnt,
                           int64_t kb, int w, void *dst_) {
  const double *src = src_;
  double *dst = dst_;
  if (w > 16) return false;
  if (sk == 1) {
    /* the AVX-512 kernel's MR: a constant width folds the masks and
     * unrolls the transposes */
    if (w == 14)
      dpack_t(src, si, cnt, kb, 14, dst);
    else
      dpack_t(src, si, cnt, kb, w, dst);
    return true;
  }
  if (si == 1) {
    if (w == 16)
      dpack_c(src, sk, cnt, kb, 16, dst);
    else
      dpack_c(src, sk, cnt, kb, w, dst);
    return true;
  }
  return false;
}
