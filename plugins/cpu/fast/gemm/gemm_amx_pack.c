/*
 * fast/gemm/gemm_amx_pack.c — the bf16 packers of the AMX driver
 * (fast/gemm/gemm_amx.c), for both of its block products (AMX tiles and
 * VDPBF16PS, fast/gemm/gemm_dpbf16.c): B into VNNI pairs, per 32-deep k
 * chunk and 32-column panel two 16 x 64-byte tiles whose row r holds the
 * pairs (B[2r][j], B[2r+1][j]); A into 32-row micro-panels, two 16 x
 * 64-byte tiles per k chunk, row by row. k is padded with zeros to kp, so
 * an odd k's last pair has a zero half. Transposed operands with whole
 * panels go through a 16 x 16 transpose of 32-bit pairs, the rest element
 * by element. Compiled with the AVX-512 flags (fast.mk), no tile
 * instructions; reached only from gemm_amx.c.
 */
#include <immintrin.h>
#include <string.h>

#include "gemm.h"

#define AMX_KC 32      /* bf16 per tile row: one k chunk */
#define AMX_PANEL 1024 /* bf16 per 32 x 32 panel chunk (two 1 KiB tiles) */

/* x[0..15] as a 16 x 16 matrix of 32-bit lanes, transposed in place. */
static inline void amx_transpose16(__m512i x[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(x[i], x[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(x[i], x[i + 1]);
  }
  /* x[4q + s], 128-bit lane L: rows 4q..4q+3 of column 4L + s */
  for (int i = 0; i < 16; i += 4) {
    x[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    x[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    x[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    x[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  /* row 4L + s of the result: lane L of x[s], x[4 + s], x[8 + s], x[12 + s] */
  for (int s = 0; s < 4; s++) {
    __m512i t1 = _mm512_shuffle_i32x4(x[s], x[4 + s], 0x88);
    __m512i t2 = _mm512_shuffle_i32x4(x[s], x[4 + s], 0xdd);
    __m512i t3 = _mm512_shuffle_i32x4(x[8 + s], x[12 + s], 0x88);
    __m512i t4 = _mm512_shuffle_i32x4(x[8 + s], x[12 + s], 0xdd);
    t[s] = _mm512_shuffle_i32x4(t1, t3, 0x88);
    t[8 + s] = _mm512_shuffle_i32x4(t1, t3, 0xdd);
    t[4 + s] = _mm512_shuffle_i32x4(t2, t4, 0x88);
    t[12 + s] = _mm512_shuffle_i32x4(t2, t4, 0xdd);
  }
  for (int i = 0; i < 16; i++) x[i] = t[i];
}

/* The pairs (x[j], y[j]) as 32-bit lanes: columns 0-15 (*lo) and 16-31
 * (*hi) of two 32-wide rows, interleaved. */
static inline void amx_pairs(__m512i x, __m512i y, __m512i *lo, __m512i *hi) {
  const __m512i il = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40,
                                      8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  *lo = _mm512_permutex2var_epi16(x, il, y);
  *hi = _mm512_permutex2var_epi16(x, _mm512_add_epi16(il, _mm512_set1_epi16(16)), y);
}

/* A whole 32-row panel of an A whose rows are adjacent (sam == 1: a
 * transposed row-major matrix), k a multiple of 32: per k chunk, the k
 * rows' pairs (A[i][2r], A[i][2r + 1]) form two 16 x 16 matrices of 32-bit
 * lanes (rows i 0-15 and 16-31) whose transposes are the two A tiles. */
static void amx_pack_a_rows(const uint16_t *a, int64_t sak, int64_t kp, uint16_t *dst) {
  __m512i lo[16], hi[16];
  for (int64_t c = 0; c < kp / AMX_KC; c++, dst += AMX_PANEL) {
    const uint16_t *s = a + c * AMX_KC * sak;
    for (int r = 0; r < 16; r++)
      amx_pairs(_mm512_loadu_si512(s + 2 * r * sak), _mm512_loadu_si512(s + (2 * r + 1) * sak),
                &lo[r], &hi[r]);
    amx_transpose16(lo);
    amx_transpose16(hi);
    for (int i = 0; i < 16; i++) {
      _mm512_storeu_si512(dst + i * AMX_KC, lo[i]);
      _mm512_storeu_si512(dst + (16 + i) * AMX_KC, hi[i]);
    }
  }
}

/* Panel of rows [0, rows) of A (bf16, strides sam/sak), k padded to kp:
 * dst[c][i][kk] = A[i][c*32 + kk]. */
void cpu_fast_amx_bf16_pack_a(const uint16_t *a, int64_t sam, int64_t sak, int64_t rows, int64_t k,
                              int64_t kp, uint16_t *dst) {
  if (sam == 1 && rows == 32 && k == kp) {
    amx_pack_a_rows(a, sak, kp, dst);
    return;
  }
  for (int64_t c = 0; c < kp / AMX_KC; c++, dst += AMX_PANEL)
    for (int64_t i = 0; i < 32; i++) {
      uint16_t *d = dst + i * AMX_KC;
      int64_t k0 = c * AMX_KC, w = k - k0 < AMX_KC ? k - k0 : AMX_KC;
      if (i >= rows) w = 0;
      const uint16_t *s = a + i * sam + k0 * sak;
      if (sak == 1 && w == AMX_KC)
        memcpy(d, s, 64);
      else {
        for (int64_t kk = 0; kk < w; kk++) d[kk] = s[kk * sak];
        for (int64_t kk = w; kk < AMX_KC; kk++) d[kk] = 0;
      }
    }
}

/* A whole 32-column panel of a B whose columns are contiguous (sbk == 1:
 * a transposed row-major matrix), k a multiple of 32: per k chunk and
 * half, the 64-byte k runs of 16 columns are the 16 rows of a 32-bit
 * matrix whose transpose is the VNNI tile. */
static void amx_pack_b_cols(const uint16_t *b, int64_t sbn, int64_t kp, uint16_t *dst) {
  __m512i x[16];
  for (int64_t c = 0; c < kp / AMX_KC; c++, dst += AMX_PANEL)
    for (int h = 0; h < 2; h++) {
      for (int j = 0; j < 16; j++) x[j] = _mm512_loadu_si512(b + (h * 16 + j) * sbn + c * AMX_KC);
      amx_transpose16(x);
      for (int r = 0; r < 16; r++) _mm512_storeu_si512(dst + h * 512 + r * 32, x[r]);
    }
}

/* Panel of columns [0, cols) of B, VNNI pairs, k padded to kp:
 * dst[c][h][r][2j + e] = B[c*32 + 2r + e][h*16 + j]. */
void cpu_fast_amx_bf16_pack_b(const uint16_t *b, int64_t sbk, int64_t sbn, int64_t cols, int64_t k,
                              int64_t kp, uint16_t *dst) {
  if (sbk == 1 && cols == 32 && k == kp) {
    amx_pack_b_cols(b, sbn, kp, dst);
    return;
  }
  for (int64_t c = 0; c < kp / AMX_KC; c++, dst += AMX_PANEL)
    for (int64_t r = 0; r < 16; r++) {
      int64_t k0 = c * AMX_KC + 2 * r;
      uint16_t *d0 = dst + r * 32, *d1 = dst + 512 + r * 32;
      if (sbn == 1 && cols == 32 && k0 + 1 < k) {
        /* interleave two 32-wide rows into two rows of 16 pairs */
        __m512i lo, hi;
        amx_pairs(_mm512_loadu_si512(b + k0 * sbk), _mm512_loadu_si512(b + (k0 + 1) * sbk), &lo,
                  &hi);
        _mm512_storeu_si512(d0, lo);
        _mm512_storeu_si512(d1, hi);
        continue;
      }
      for (int64_t j = 0; j < 32; j++) {
        uint16_t *d = (j < 16 ? d0 : d1) + (j & 15) * 2;
        bool in = j < cols;
        d[0] = in && k0 < k ? b[k0 * sbk + j * sbn] : 0;
        d[1] = in && k0 + 1 < k ? b[(k0 + 1) * sbk + j * sbn] : 0;
      }
    }
}
