/*
 * fast/conv/conv2d_winograd_avx512.c — the three transforms of Winograd
 * F(2x2, 3x3) (fast/conv/conv2d_winograd.c) in AVX-512, 16 lanes at a
 * time: the filter's along input channels, the input's and the output's
 * along a row of tiles, a chunk's tiles WINO_NT floats a row (one B panel
 * of the 12 x 32 GEMM kernel). The filter's and a scan of x record the
 * largest magnitude they read (NaN as UINT32_MAX). Called only after the
 * CPUID check.
 */
#include <immintrin.h>
#include <string.h>

#include "conv2d.h"
#include "plugins/cpu/fast/tile16_avx512.h"

/* The 1-D transforms of F(2, 3), each four values in and out (two out for
 * the output's): in the input's, B^T d = (d0 - d2, d1 + d2, d2 - d1,
 * d1 - d3); in the filter's, G g = (g0, (g0 + g1 + g2) / 2,
 * (g0 - g1 + g2) / 2, g2); in the output's, A^T m = (m0 + m1 + m2,
 * m1 - m2 - m3). */
static inline void bt4(const __m512 d[4], __m512 o[4]) {
  o[0] = _mm512_sub_ps(d[0], d[2]);
  o[1] = _mm512_add_ps(d[1], d[2]);
  o[2] = _mm512_sub_ps(d[2], d[1]);
  o[3] = _mm512_sub_ps(d[1], d[3]);
}

static inline void g3(__m512 g0, __m512 g1, __m512 g2, __m512 o[4]) {
  __m512 half = _mm512_set1_ps(0.5f), s = _mm512_add_ps(g0, g2);
  o[0] = g0;
  o[1] = _mm512_mul_ps(half, _mm512_add_ps(s, g1));
  o[2] = _mm512_mul_ps(half, _mm512_sub_ps(s, g1));
  o[3] = g2;
}

static inline void at4(__m512 m0, __m512 m1, __m512 m2, __m512 m3, __m512 *o0, __m512 *o1) {
  *o0 = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
  *o1 = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
}

/* The running largest |v|, NaN lanes kept apart (max would drop them). */
typedef struct vmax {
  __m512 big;
  __mmask16 nan;
} vmax_t;

static inline void vmax_add(vmax_t *m, __m512 v, __mmask16 lanes) {
  m->big = _mm512_mask_max_ps(m->big, lanes, m->big, _mm512_abs_ps(v));
  m->nan |= _mm512_mask_cmp_ps_mask(lanes, v, v, _CMP_UNORD_Q);
}

/* Folds m into *word: float bits of a non-negative value order as the
 * values do; NaN is UINT32_MAX. */
static void vmax_publish(_Atomic uint32_t *word, const vmax_t *m) {
  float f = _mm512_reduce_max_ps(m->big);
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if (m->nan) bits = UINT32_MAX;
  uint32_t old = atomic_load_explicit(word, memory_order_relaxed);
  while (old < bits && !atomic_compare_exchange_weak_explicit(
                           word, &old, bits, memory_order_relaxed, memory_order_relaxed)) {
  }
}

/* ---- filter: U[xi][k][c] = (G g G^T)[xi], 16 input channels a vector --- */

void cpu_fast_wino_filter_avx512(wino_job_t *j, int64_t k0, int64_t k1) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  /* the gather's index: channel c0 + lane at lane * swc floats */
  const __m512i idx = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)j->swc));
  int64_t KC = j->K * j->C;
  vmax_t seen = {_mm512_setzero_ps(), 0};
  for (int64_t k = k0; k < k1; k++)
    for (int64_t c0 = 0; c0 < j->C; c0 += 16) {
      __mmask16 m = cpu_fast_first_lanes16(j->C - c0);
      const float *g = j->w + k * j->swk + c0 * j->swc;
      __m512 a[4][3]; /* G g: rows of the 4 x 3 */
      _Pragma("GCC unroll 4") for (int s = 0; s < 3; s++) {
        __m512 t[3], o[4];
        _Pragma("GCC unroll 4") for (int r = 0; r < 3; r++) {
          t[r] =
              _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, g + r * j->swr + s * j->sws, 4);
          vmax_add(&seen, t[r], m);
        }
        g3(t[0], t[1], t[2], o);
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) a[i][s] = o[i];
      }
      float *u = j->U + k * j->C + c0;
      _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
        __m512 o[4];
        g3(a[i][0], a[i][1], a[i][2], o);
        _Pragma("GCC unroll 4") for (int jj = 0; jj < 4; jj++)
            _mm512_mask_storeu_ps(u + (4 * i + jj) * KC, m, o[jj]);
      }
    }
  vmax_publish(&j->wmax, &seen);
}

/* ---- x's largest magnitude -------------------------------------------- */

void cpu_fast_wino_scan_avx512(wino_job_t *j, int64_t p0, int64_t p1) {
  vmax_t seen = {_mm512_setzero_ps(), 0};
  for (int64_t p = p0; p < p1; p++) {
    const float *xp = j->x + p / j->C * j->sxn + p % j->C * j->sxc;
    for (int64_t h = 0; h < j->H; h++)
      for (int64_t w = 0; w < j->W; w += 16) {
        __mmask16 m = cpu_fast_first_lanes16(j->W - w);
        vmax_add(&seen, _mm512_maskz_loadu_ps(m, xp + h * j->sxh + w), m);
      }
  }
  vmax_publish(&j->xmax, &seen);
}

/* ---- input: V[xi][c][t] = (B^T d B)[xi], 16 tiles of a row a vector ---- */

/* 16 floats of image row `row` from column c0 on, zeros for the columns
 * outside the row (the padding): a masked load, which reads nothing
 * there. NULL row: a row of padding. */
static inline __m512 row16(const wino_job_t *j, const float *row, int64_t c0) {
  if (!row) return _mm512_setzero_ps();
  __mmask16 m = (__mmask16)(cpu_fast_first_lanes16(j->W - c0) & ~cpu_fast_first_lanes16(-c0));
  return _mm512_maskz_loadu_ps(m, row + c0);
}

/* The run of tiles from tile t along its tile row, up to end: its image
 * n, tile row ti and first tile column tj; returns its length. */
static int64_t run_at(const wino_job_t *j, int64_t t, int64_t end, int64_t *n, int64_t *ti,
                      int64_t *tj) {
  int64_t plane = j->TH * j->TW, rem = t % plane;
  *n = t / plane, *ti = rem / j->TW, *tj = rem % j->TW;
  return j->TW - *tj < end - t ? j->TW - *tj : end - t;
}

/* Zeros past the chunk's nt tiles in every row of V, so the GEMM kernel
 * may run all WINO_NT columns on numbers. */
static void zero_tail(const wino_job_t *j, int64_t nt, float *V) {
  if (nt >= WINO_NT) return;
  for (int64_t xi = 0; xi < 16; xi++)
    for (int64_t c = 0; c < j->C; c++)
      for (int64_t i = nt; i < WINO_NT; i += 16)
        _mm512_mask_storeu_ps(V + xi * WINO_XI_STRIDE(j->C) + c * WINO_NT + i,
                              cpu_fast_first_lanes16(WINO_NT - i), _mm512_setzero_ps());
}

void cpu_fast_wino_input_avx512(wino_job_t *j, int64_t t0, int64_t nt, float *V) {
  zero_tail(j, nt, V);
  /* even and odd floats of 32: a tile's columns 0 / 1 for 16 tiles (its
   * columns 2 / 3 are the same two floats further on) */
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  int64_t xs = WINO_XI_STRIDE(j->C);
  for (int64_t t = t0, n, ti, tj, len; t < t0 + nt; t += len) {
    len = run_at(j, t, t0 + nt, &n, &ti, &tj);
    int64_t pos = t - t0;
    for (int64_t c = 0; c < j->C; c++) {
      /* the tile row's four input rows, read in place (the image's rows
       * past its edges are padding) */
      const float *xp = j->x + n * j->sxn + c * j->sxc, *rows[4];
      _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
        int64_t h = 2 * ti - j->ph + r;
        rows[r] = h >= 0 && h < j->H ? xp + h * j->sxh : NULL;
      }
      float *vc = V + c * WINO_NT + pos;
      for (int64_t b0 = 0; b0 < len; b0 += 16) {
        __mmask16 m = cpu_fast_first_lanes16(len - b0);
        __m512 t[4][4]; /* each row's d B */
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
          int64_t c0 = 2 * (tj + b0) - j->pw; /* lane 0's image column */
          __m512 lo = row16(j, rows[r], c0), hi = row16(j, rows[r], c0 + 16);
          __m512 lo2 = row16(j, rows[r], c0 + 2), hi2 = row16(j, rows[r], c0 + 18);
          __m512 d[4] = {_mm512_permutex2var_ps(lo, even, hi), _mm512_permutex2var_ps(lo, odd, hi),
                         _mm512_permutex2var_ps(lo2, even, hi2),
                         _mm512_permutex2var_ps(lo2, odd, hi2)};
          bt4(d, t[r]);
        }
        _Pragma("GCC unroll 4") for (int cc = 0; cc < 4; cc++) {
          __m512 col[4] = {t[0][cc], t[1][cc], t[2][cc], t[3][cc]}, o[4];
          bt4(col, o);
          _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
              _mm512_mask_storeu_ps(vc + (4 * i + cc) * xs + b0, m, o[i]);
        }
      }
    }
  }
}

/* ---- output: y's 2 x 2 blocks = A^T m A + bias, 16 tiles a vector ------ */

void cpu_fast_wino_output_avx512(const wino_job_t *j, int64_t t0, int64_t nt, const float *M) {
  /* (a0, b0, a1, b1, ...): a tile's two columns side by side, tiles 0-7
   * in the first vector and 8-15 in the second */
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  int64_t xs = WINO_XI_STRIDE(j->K);
  for (int64_t t = t0, n, ti, tj, len; t < t0 + nt; t += len) {
    len = run_at(j, t, t0 + nt, &n, &ti, &tj);
    int64_t pos = t - t0;
    for (int64_t k = 0; k < j->K; k++) {
      const float *mk = M + k * WINO_NT + pos;
      float *yk = j->y + n * j->syn + k * j->syk;
      __m512 bias = _mm512_set1_ps(j->bias ? j->bias[k] : 0.0f);
      for (int64_t b0 = 0; b0 < len; b0 += 16) {
        __mmask16 m = cpu_fast_first_lanes16(len - b0);
        __m512 s0[4], s1[4]; /* A^T down the rows, per column */
        _Pragma("GCC unroll 4") for (int cc = 0; cc < 4; cc++)
            at4(_mm512_maskz_loadu_ps(m, mk + cc * xs + b0),
                _mm512_maskz_loadu_ps(m, mk + (4 + cc) * xs + b0),
                _mm512_maskz_loadu_ps(m, mk + (8 + cc) * xs + b0),
                _mm512_maskz_loadu_ps(m, mk + (12 + cc) * xs + b0), &s0[cc], &s1[cc]);
        /* the run's columns only: the next ones are another chunk's */
        int64_t col = 2 * (tj + b0),
                ncol = j->Q - col < 2 * (len - b0) ? j->Q - col : 2 * (len - b0);
        __mmask16 m0 = cpu_fast_first_lanes16(ncol), m1 = cpu_fast_first_lanes16(ncol - 16);
        __m512 y0, y1;
        float *yr = yk + 2 * ti * j->syh + col;
        at4(s0[0], s0[1], s0[2], s0[3], &y0, &y1);
        y0 = _mm512_add_ps(y0, bias), y1 = _mm512_add_ps(y1, bias);
        _mm512_mask_storeu_ps(yr, m0, _mm512_permutex2var_ps(y0, lo, y1));
        _mm512_mask_storeu_ps(yr + 16, m1, _mm512_permutex2var_ps(y0, hi, y1));
        if (2 * ti + 1 < j->P) { /* a last tile row of an odd P has one */
          at4(s1[0], s1[1], s1[2], s1[3], &y0, &y1);
          y0 = _mm512_add_ps(y0, bias), y1 = _mm512_add_ps(y1, bias);
          _mm512_mask_storeu_ps(yr + j->syh, m0, _mm512_permutex2var_ps(y0, lo, y1));
          _mm512_mask_storeu_ps(yr + j->syh + 16, m1, _mm512_permutex2var_ps(y0, hi, y1));
        }
      }
    }
  }
}
