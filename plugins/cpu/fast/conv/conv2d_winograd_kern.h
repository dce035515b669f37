/*
 * fast/conv/conv2d_winograd_kern.h — the three transforms of Winograd
 * F(2x2, 3x3) (fast/conv/conv2d_winograd.c), WK_L lanes at a time: the
 * filter's along input channels, the input's and the output's along a row
 * of tiles, a chunk's tiles WINO_NT floats a row. The filter's and a scan
 * of x record the largest magnitude they read (NaN as UINT32_MAX).
 * Instantiated by fast/conv/conv2d_winograd_avx512.c (16 lanes) and
 * fast/conv/conv2d_winograd_avx2.c (8), each compiled with its own -m
 * flags, which define before including it:
 *   WK_L, WK_VEC, WK_MASK (a lane mask), WK_ADD, WK_SUB, WK_MUL, WK_SET1,
 *   WK_ZERO, WK_ABS, WK_MAX, WK_NAN(v) (a mask of v's NaN lanes), WK_OR
 *   (of two masks), WK_NONE (the empty mask), WK_ANY(m) (a lane set),
 *   WK_REDUCE_MAX(v), WK_FIRST(n) (the first n lanes, none for n <= 0),
 *   WK_BETWEEN(lo, hi) (lanes [lo, hi), clamped to [0, WK_L)),
 *   WK_MLOAD(p, m) (zeros where m is clear, nothing read there),
 *   WK_STORE_FIRST(p, v, n) (the first n lanes, nothing past them),
 *   WK_EVEN(a, b) / WK_ODD(a, b) (the even / odd floats of a then b),
 *   WK_ZIP_LO(a, b) / WK_ZIP_HI(a, b) (a0 b0 a1 b1 ...: the first / second
 *   WK_L floats of it), WK_GATHER(base, idx, m) (base[idx[i]] where m is
 *   set, zeros elsewhere), WK_IDX_T and WK_STRIDE_IDX(s) (lane i's index
 *   i * s), and WK_NAME(f) (f with the ISA's suffix).
 * Lanes the masks leave out are zeros, so the running maximum needs no
 * mask: |0| changes no maximum and 0 is no NaN.
 */
#include <stdint.h>
#include <string.h>

#include "conv2d.h"

/* The 1-D transforms of F(2, 3), each four values in and out (two out for
 * the output's): in the input's, B^T d = (d0 - d2, d1 + d2, d2 - d1,
 * d1 - d3); in the filter's, G g = (g0, (g0 + g1 + g2) / 2,
 * (g0 - g1 + g2) / 2, g2); in the output's, A^T m = (m0 + m1 + m2,
 * m1 - m2 - m3). */
static inline void bt4(const WK_VEC d[4], WK_VEC o[4]) {
  o[0] = WK_SUB(d[0], d[2]);
  o[1] = WK_ADD(d[1], d[2]);
  o[2] = WK_SUB(d[2], d[1]);
  o[3] = WK_SUB(d[1], d[3]);
}

static inline void g3(WK_VEC g0, WK_VEC g1, WK_VEC g2, WK_VEC o[4]) {
  WK_VEC half = WK_SET1(0.5f), s = WK_ADD(g0, g2);
  o[0] = g0;
  o[1] = WK_MUL(half, WK_ADD(s, g1));
  o[2] = WK_MUL(half, WK_SUB(s, g1));
  o[3] = g2;
}

static inline void at4(WK_VEC m0, WK_VEC m1, WK_VEC m2, WK_VEC m3, WK_VEC *o0, WK_VEC *o1) {
  *o0 = WK_ADD(WK_ADD(m0, m1), m2);
  *o1 = WK_SUB(WK_SUB(m1, m2), m3);
}

/* The running largest |v|, NaN lanes kept apart (max would drop them). */
typedef struct vmax {
  WK_VEC big;
  WK_MASK nan;
} vmax_t;

static inline void vmax_add(vmax_t *m, WK_VEC v) {
  m->big = WK_MAX(m->big, WK_ABS(v));
  m->nan = WK_OR(m->nan, WK_NAN(v));
}

/* Folds m into *word: float bits of a non-negative value order as the
 * values do; NaN is UINT32_MAX. */
static void vmax_publish(_Atomic uint32_t *word, const vmax_t *m) {
  float f = WK_REDUCE_MAX(m->big);
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if (WK_ANY(m->nan)) bits = UINT32_MAX;
  uint32_t old = atomic_load_explicit(word, memory_order_relaxed);
  while (old < bits && !atomic_compare_exchange_weak_explicit(
                           word, &old, bits, memory_order_relaxed, memory_order_relaxed)) {
  }
}

/* ---- filter: U[xi][k][c] = (G g G^T)[xi], WK_L input channels a vector -- */

static void WK_NAME(wino_filter)(wino_job_t *j, int64_t k0, int64_t k1) {
  /* the gather's index: channel c0 + lane at lane * swc floats */
  const WK_IDX_T idx = WK_STRIDE_IDX(j->swc);
  int64_t KC = j->K * j->C;
  vmax_t seen = {WK_ZERO(), WK_NONE};
  for (int64_t k = k0; k < k1; k++)
    for (int64_t c0 = 0; c0 < j->C; c0 += WK_L) {
      WK_MASK m = WK_FIRST(j->C - c0);
      const float *g = j->w + k * j->swk + c0 * j->swc;
      WK_VEC a[4][3]; /* G g: rows of the 4 x 3 */
      _Pragma("GCC unroll 4") for (int s = 0; s < 3; s++) {
        WK_VEC t[3], o[4];
        _Pragma("GCC unroll 4") for (int r = 0; r < 3; r++) {
          t[r] = WK_GATHER(g + r * j->swr + s * j->sws, idx, m);
          vmax_add(&seen, t[r]);
        }
        g3(t[0], t[1], t[2], o);
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) a[i][s] = o[i];
      }
      float *u = j->U + k * j->C + c0;
      _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
        WK_VEC o[4];
        g3(a[i][0], a[i][1], a[i][2], o);
        _Pragma("GCC unroll 4") for (int jj = 0; jj < 4; jj++)
            WK_STORE_FIRST(u + (4 * i + jj) * KC, o[jj], j->C - c0);
      }
    }
  vmax_publish(&j->wmax, &seen);
}

/* ---- x's largest magnitude -------------------------------------------- */

static void WK_NAME(wino_scan)(wino_job_t *j, int64_t p0, int64_t p1) {
  vmax_t seen = {WK_ZERO(), WK_NONE};
  for (int64_t p = p0; p < p1; p++) {
    const float *xp = j->x + p / j->C * j->sxn + p % j->C * j->sxc;
    for (int64_t h = 0; h < j->H; h++)
      for (int64_t w = 0; w < j->W; w += WK_L)
        vmax_add(&seen, WK_MLOAD(xp + h * j->sxh + w, WK_FIRST(j->W - w)));
  }
  vmax_publish(&j->xmax, &seen);
}

/* ---- input: V[xi][c][t] = (B^T d B)[xi], WK_L tiles of a row a vector -- */

/* WK_L floats of image row `row` from column c0 on, zeros for the columns
 * outside the row (the padding): a masked load, which reads nothing
 * there. NULL row: a row of padding. */
static inline WK_VEC row_at(const wino_job_t *j, const float *row, int64_t c0) {
  if (!row) return WK_ZERO();
  return WK_MLOAD(row + c0, WK_BETWEEN(-c0, j->W - c0));
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
      for (int64_t i = nt; i < WINO_NT; i += WK_L)
        WK_STORE_FIRST(V + xi * WINO_XI_STRIDE(j->C) + c * WINO_NT + i, WK_ZERO(), WINO_NT - i);
}

static void WK_NAME(wino_input)(wino_job_t *j, int64_t t0, int64_t nt, float *V) {
  zero_tail(j, nt, V);
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
      for (int64_t b0 = 0; b0 < len; b0 += WK_L) {
        WK_VEC t[4][4]; /* each row's d B */
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
          int64_t c0 = 2 * (tj + b0) - j->pw; /* lane 0's image column */
          /* a tile's columns 0 / 1 are the even / odd floats of 2 WK_L
           * from c0, its columns 2 / 3 the same from c0 + 2 */
          WK_VEC lo = row_at(j, rows[r], c0), hi = row_at(j, rows[r], c0 + WK_L);
          WK_VEC lo2 = row_at(j, rows[r], c0 + 2), hi2 = row_at(j, rows[r], c0 + WK_L + 2);
          WK_VEC d[4] = {WK_EVEN(lo, hi), WK_ODD(lo, hi), WK_EVEN(lo2, hi2), WK_ODD(lo2, hi2)};
          bt4(d, t[r]);
        }
        _Pragma("GCC unroll 4") for (int cc = 0; cc < 4; cc++) {
          WK_VEC col[4] = {t[0][cc], t[1][cc], t[2][cc], t[3][cc]}, o[4];
          bt4(col, o);
          _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
              WK_STORE_FIRST(vc + (4 * i + cc) * xs + b0, o[i], len - b0);
        }
      }
    }
  }
}

/* ---- output: y's 2 x 2 blocks = A^T m A + bias, WK_L tiles a vector ---- */

/* Two output rows' pieces (a tile's two columns side by side) at yr,
 * ncol floats of them. */
static inline void store_pair(float *yr, WK_VEC c0, WK_VEC c1, WK_VEC bias, int64_t ncol) {
  c0 = WK_ADD(c0, bias), c1 = WK_ADD(c1, bias);
  WK_STORE_FIRST(yr, WK_ZIP_LO(c0, c1), ncol);
  WK_STORE_FIRST(yr + WK_L, WK_ZIP_HI(c0, c1), ncol - WK_L);
}

static void WK_NAME(wino_output)(const wino_job_t *j, int64_t t0, int64_t nt, const float *M) {
  int64_t xs = WINO_XI_STRIDE(j->K);
  for (int64_t t = t0, n, ti, tj, len; t < t0 + nt; t += len) {
    len = run_at(j, t, t0 + nt, &n, &ti, &tj);
    int64_t pos = t - t0;
    for (int64_t k = 0; k < j->K; k++) {
      const float *mk = M + k * WINO_NT + pos;
      float *yk = j->y + n * j->syn + k * j->syk;
      WK_VEC bias = WK_SET1(j->bias ? j->bias[k] : 0.0f);
      for (int64_t b0 = 0; b0 < len; b0 += WK_L) {
        WK_MASK m = WK_FIRST(len - b0);
        WK_VEC s0[4], s1[4]; /* A^T down the rows, per column */
        _Pragma("GCC unroll 4") for (int cc = 0; cc < 4; cc++)
            at4(WK_MLOAD(mk + cc * xs + b0, m), WK_MLOAD(mk + (4 + cc) * xs + b0, m),
                WK_MLOAD(mk + (8 + cc) * xs + b0, m), WK_MLOAD(mk + (12 + cc) * xs + b0, m),
                &s0[cc], &s1[cc]);
        /* the run's columns only: the next ones are another chunk's */
        int64_t col = 2 * (tj + b0),
                ncol = j->Q - col < 2 * (len - b0) ? j->Q - col : 2 * (len - b0);
        float *yr = yk + 2 * ti * j->syh + col;
        WK_VEC y0, y1;
        at4(s0[0], s0[1], s0[2], s0[3], &y0, &y1);
        store_pair(yr, y0, y1, bias, ncol);
        if (2 * ti + 1 < j->P) { /* a last tile row of an odd P has one */
          at4(s1[0], s1[1], s1[2], s1[3], &y0, &y1);
          store_pair(yr + j->syh, y0, y1, bias, ncol);
        }
      }
    }
  }
}

const wino_kernels_t WK_NAME(cpu_fast_wino) = {WK_NAME(wino_filter), WK_NAME(wino_scan),
                                               WK_NAME(wino_input), WK_NAME(wino_output)};
