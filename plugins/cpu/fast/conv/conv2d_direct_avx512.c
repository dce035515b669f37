/*
 * fast/conv/conv2d_direct_avx512.c — the direct route's micro-kernel (AVX-512,
 * fast.mk): one segment of an output row for 32 output channels (or 16),
 * output channels along the vector. Each tile is 2 x 16 channels by up to
 * DC_NP pixels of one row, 28 zmm accumulators; per (c, r, s) step it loads
 * the 32 packed weights (two vectors) and broadcasts each pixel's input
 * value from the image row, so nothing is gathered into a patch matrix and
 * any stride reads in place. The tile is transposed (16 x 16 in registers)
 * on its single store into y's NCHW rows. Called by fast/conv/conv2d_direct.c
 * only after the CPUID check.
 */
#include <immintrin.h>

#include "conv2d.h"
#include "plugins/cpu/fast/tile16_avx512.h"

#define DC_PF_STEPS 32 /* (c, r, s) steps of input prefetched ahead */

/* NP accumulators (pixels) of 16 channels, transposed and stored: channel
 * ch's NP pixels at y + ch * syk, for the first nk channels. */
static inline __attribute__((always_inline)) void store_t(const __m512 *acc, const int NP,
                                                          float *y, int64_t syk, int nk) {
  __m512 r[16];
  _Pragma("GCC unroll 16") for (int p = 0; p < 16; p++) r[p] =
      p < NP ? acc[p] : _mm512_setzero_ps();
  cpu_fast_transpose16x16(r);
  __mmask16 m = cpu_fast_first_lanes16(NP);
  if (nk >= 16) {
    _Pragma("GCC unroll 16") for (int ch = 0; ch < 16; ch++)
        _mm512_mask_storeu_ps(y + ch * syk, m, r[ch]);
  } else
    for (int ch = 0; ch < nk; ch++) _mm512_mask_storeu_ps(y + ch * syk, m, r[ch]);
}

#define DC_MAX_TAPS 64 /* taps a channel at most for the column skip */
#define DC_COLS_PAY 32  /* it must leave out 1 / DC_COLS_PAY of the FMAs */

/* Which pixels of a tile one tap reaches: all of them (its column stays
 * on the image for every pixel), all but the first (the first pixel's
 * column falls on the padding left of the image), all but the last (on
 * the padding right of it), or none (a one-pixel tile on the padding). */
enum { DC_ALL, DC_BUT_FIRST, DC_BUT_LAST, DC_NONE };

/* The reach of each of the segment's taps [t0, t1) for a tile of np
 * pixels from output column ow, in cls[t - t0]; false when every tap
 * reaches every pixel, or the taps are too many, or what is left out
 * would not repay choosing per tap (under 1 / DC_COLS_PAY of the tile's
 * FMAs: a 7 x 7 stem's edge tiles ran slower with it). A tap that misses
 * the image at two pixels or more of one side runs whole: its padding is
 * zeros, so skipping only saves time, which those few columns do not
 * repay. */
static bool tile_cols(const dconv_seg_t *s, int64_t ow, int np, int64_t SW, unsigned char *cls) {
  if (!s->col || s->t1 <= s->t0 || s->t1 - s->t0 > DC_MAX_TAPS) return false;
  /* a filter row's first tap reaches furthest left, its last furthest
   * right: most tiles are settled here */
  if (ow * SW + s->col[s->t0] >= 0 && (ow + np - 1) * SW + s->col[s->t0 + s->S - 1] < s->W)
    return false;
  /* the filter row's taps that miss the image at the first pixel or at
   * the last bound what can be left out */
  int64_t miss = 0, ntaps = s->t1 - s->t0;
  for (int64_t t = s->t0; t < s->t0 + s->S; t++)
    miss += (ow * SW + s->col[t] < 0) + ((ow + np - 1) * SW + s->col[t] >= s->W);
  if (!miss || (np > 1 && miss * (ntaps / s->S) * DC_COLS_PAY < np * ntaps)) return false;
  int64_t left_out = 0; /* pixel-taps */
  for (int64_t t = s->t0; t < s->t1; t++) {
    int64_t c = s->col[t], first = ow * SW + c, last = (ow + np - 1) * SW + c;
    bool left = first < 0, right = last >= s->W;
    unsigned char k = DC_ALL;
    if (np == 1 && (left || right))
      k = DC_NONE;
    else if (left && !right && (ow + 1) * SW + c >= 0)
      k = DC_BUT_FIRST;
    else if (right && !left && (ow + np - 2) * SW + c < s->W)
      k = DC_BUT_LAST;
    cls[t - s->t0] = k;
    left_out += k == DC_NONE ? np : k != DC_ALL;
  }
  return left_out * DC_COLS_PAY >= np * ntaps;
}

/* One tap's FMAs for pixels [P0, P1) of a tile: pixel p's input at
 * xo + p * SW, the tap's weights w0 (and w1). */
static inline __attribute__((always_inline)) void taps_fma(const float *xo, __m512 w0, __m512 w1,
                                                           __m512 *a0, __m512 *a1, const int P0,
                                                           const int P1, const int64_t SW,
                                                           const int KB) {
  _Pragma("GCC unroll 16") for (int p = P0; p < P1; p++) {
    __m512 v = _mm512_set1_ps(xo[p * SW]);
    a0[p] = _mm512_fmadd_ps(w0, v, a0[p]);
    if (KB == 2) a1[p] = _mm512_fmadd_ps(w1, v, a1[p]);
  }
}

/* One tile: NP pixels from x (pixel p's input at x + p * sw, per tap
 * x + off[t], per channel + sxc) times KB x 16 channels of packed weights
 * (32 floats per (c, r, s) step), all of C·R·S, then stored at y. pf is the
 * next tile's input: its lines are fetched while this one computes (1x1
 * layers read the image from memory, a plane apart per channel, more
 * streams than the prefetchers follow). With COLS, each tap runs for the
 * pixels cls gives it (tile_cols), the edge pixels' padding columns left
 * out. */
static inline __attribute__((always_inline)) void tile(const dconv_seg_t *s, const float *x,
                                                       const float *pf, float *y, const int NP,
                                                       const int64_t SW, const int KB,
                                                       const bool ONE, const bool COLS,
                                                       const unsigned char *cls) {
  __m512 a0[DC_NP], a1[DC_NP];
  __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
  if (s->bias) {
    b0 = _mm512_maskz_loadu_ps(cpu_fast_first_lanes16(s->nk), s->bias);
    if (KB == 2) b1 = _mm512_maskz_loadu_ps(cpu_fast_first_lanes16(s->nk - 16), s->bias + 16);
  }
  _Pragma("GCC unroll 16") for (int p = 0; p < NP; p++) a0[p] = b0, a1[p] = b1;
  const int64_t *off = s->off;
  int64_t rs = ONE ? 1 : s->rs, sxc = s->sxc, last = (NP - 1) * SW;
  int64_t t0 = ONE ? 0 : s->t0, t1 = ONE ? 1 : s->t1;
  /* the input is fetched ahead channels at least DC_PF_STEPS steps ahead:
   * its lines lie a plane apart (more streams than the prefetchers follow)
   * and a 1x1 layer reads them from memory; past the last channel, the
   * next tile's */
  int64_t ahead = (DC_PF_STEPS + rs - 1) / rs, cg = s->t1 > s->t0 ? s->cg : 0;
  for (int64_t c = 0; c < cg; c++) {
    const float *xc = x + c * sxc;
    const float *pc = c + ahead < cg ? xc + ahead * sxc : pf + (c + ahead - cg) * sxc;
    const float *wp = s->w + (c * rs + t0) * 32;
    for (int64_t t = t0; t < t1; t++) {
      int64_t o = ONE ? 0 : off[t];
      const float *xo = xc + o;
      __m512 w0 = _mm512_load_ps(wp), w1 = _mm512_setzero_ps();
      if (KB == 2) w1 = _mm512_load_ps(wp + 16);
      _mm_prefetch((const char *)(wp + 8 * 32), _MM_HINT_T0);
      _mm_prefetch((const char *)(wp + 8 * 32 + 16), _MM_HINT_T0);
      _mm_prefetch((const char *)(pc + o), _MM_HINT_T0);
      _mm_prefetch((const char *)(pc + o + last), _MM_HINT_T0);
      wp += 32;
      /* the pixels the tap reaches: each case its own unrolled run */
      int k = COLS ? cls[t - t0] : DC_ALL;
      if (k == DC_ALL)
        taps_fma(xo, w0, w1, a0, a1, 0, NP, SW, KB);
      else if (k == DC_BUT_FIRST)
        taps_fma(xo, w0, w1, a0, a1, 1, NP, SW, KB);
      else if (k == DC_BUT_LAST)
        taps_fma(xo, w0, w1, a0, a1, 0, NP - 1, SW, KB);
    }
  }
  store_t(a0, NP, y, s->syk, s->nk < 16 ? s->nk : 16);
  if (KB == 2) store_t(a1, NP, y + 16 * s->syk, s->syk, s->nk - 16);
}

/* The segment cut into tiles as even as DC_NP allows (30 pixels: 10 + 10 +
 * 10, not 14 + 14 + 2: a narrow tile spends its loads on few FMAs); a
 * tile at the image's left or right edge leaves out the taps that read
 * its padding columns (tile_cols). */
static inline __attribute__((always_inline)) void seg(const dconv_seg_t *s, const int64_t SW,
                                                      const int KB, const bool ONE) {
  int64_t n = s->npix, tiles = (n + DC_NP - 1) / DC_NP, base = n / tiles, wide = n % tiles;
  const float *x = s->x;
  float *y = s->y;
  int64_t ow = s->ow0;
  unsigned char cls[DC_MAX_TAPS];
  /* whether the segment reaches the padding left or right of the image
   * at all (a filter row's first tap reaches furthest left, its last
   * furthest right): only then are its tiles sorted */
  bool edge = !ONE && s->col && s->t1 > s->t0 &&
              (s->ow0 * SW + s->col[s->t0] < 0 ||
               (s->ow0 + n - 1) * SW + s->col[s->t0 + s->S - 1] >= s->W);
  for (int64_t i = 0; i < tiles; i++) {
    int np = (int)(base + (i < wide));
    const float *pf = i + 1 < tiles ? x + np * SW : s->pf;
    bool cols = edge && tile_cols(s, ow, np, SW, cls);
    switch (np) {
#define DC_CASE(N)                                         \
  case N:                                                  \
    if (cols)                                              \
      tile(s, x, pf, y, N, SW, KB, ONE, !ONE, cls);        \
    else                                                   \
      tile(s, x, pf, y, N, SW, KB, ONE, false, NULL);      \
    break;
      DC_CASE(1) DC_CASE(2) DC_CASE(3) DC_CASE(4) DC_CASE(5) DC_CASE(6) DC_CASE(7)
      DC_CASE(8) DC_CASE(9) DC_CASE(10) DC_CASE(11) DC_CASE(12) DC_CASE(13) DC_CASE(14)
#undef DC_CASE
      default:
        break;
    }
    x += np * SW;
    y += np;
    ow += np;
  }
}

/* 1x1 stride 1 (one tap at offset 0): the tap loop and its offset load
 * go, which the FMAs of a single tap do not hide */
static void seg_1x1k2(const dconv_seg_t *s) { seg(s, 1, 2, true); }
static void seg_1x1k1(const dconv_seg_t *s) { seg(s, 1, 1, true); }
static void seg_s1k2(const dconv_seg_t *s) { seg(s, 1, 2, false); }
static void seg_s1k1(const dconv_seg_t *s) { seg(s, 1, 1, false); }
static void seg_s2k2(const dconv_seg_t *s) { seg(s, 2, 2, false); }
static void seg_s2k1(const dconv_seg_t *s) { seg(s, 2, 1, false); }
static void seg_snk2(const dconv_seg_t *s) { seg(s, s->sw, 2, false); }
static void seg_snk1(const dconv_seg_t *s) { seg(s, s->sw, 1, false); }

void cpu_fast_conv_dseg_avx512(const dconv_seg_t *s) {
  bool two = s->nk > 16;
  if (s->rs == 1 && s->off[0] == 0 && s->sw == 1)
    two ? seg_1x1k2(s) : seg_1x1k1(s);
  else if (s->sw == 1)
    two ? seg_s1k2(s) : seg_s1k1(s);
  else if (s->sw == 2)
    two ? seg_s2k2(s) : seg_s2k1(s);
  else
    two ? seg_snk2(s) : seg_snk1(s);
}
