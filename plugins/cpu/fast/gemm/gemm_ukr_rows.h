/*
 * fast/gemm/gemm_ukr_rows.h — the unpacked f32 micro-kernel body, instantiated
 * per ISA by fast/gemm/gemm_avx512.c and fast/gemm/gemm_avx2.c (cpu_fast_ukr_rows_fn in
 * fast/gemm/gemm.h). Where fast/gemm/gemm_ukr.h reads packed panels, this one reads A
 * as MR rows of unit k stride (a + i*lda) and B as k rows of unit n stride
 * (b + p*ldb), so row-major operands, packed image tiles (ldb = NR) and
 * plain weights need no packing. Ragged edges are handled in place: rows
 * past `rows` repeat the last row and are not stored, columns past `cols`
 * are loaded and stored under a lane mask.
 *
 * The includer defines VEC, W (lanes), LOAD, STORE, SET1, FMA, MUL, ZERO,
 * MASK_T, MASK(n) (first n lanes), MLOAD(p, m), STORE_N(p, v, n) (the
 * first n lanes, none for n <= 0).
 */
/* The body shared by both kernels: BLO(p) and BHI(p) give the addresses of
 * B row p's first and second W lanes. */
#define CPU_FAST_UKR_ROWS_BODY(MR, BLO, BHI, LCOLS)                                \
    CPU_FAST_UKR_BODY_A(MR, BLO, BHI, LCOLS, lda, 1)

/* The same with A element (i, p) at a + i*AI + p*AP. */
#define CPU_FAST_UKR_BODY_A(MR, BLO, BHI, LCOLS, AI, AP)                           \
    const float *ar[MR];                                                       \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) ar[i] =              \
        a + (i < rows ? i : rows - 1) * (AI);                                  \
    VEC c0[MR], c1[MR];                                                        \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) c0[i] = c1[i] =      \
        ZERO();                                                                \
    /* C is only touched after the k loop: start fetching it now */           \
    for (int i = 0; i < rows; i++) {                                           \
      __builtin_prefetch(c + i * ldc, 1);                                      \
      __builtin_prefetch(c + i * ldc + cols - 1, 1);                           \
    }                                                                          \
    if ((LCOLS) == 2 * W) {                                                    \
      for (int64_t p = 0; p < k; p++) {                                        \
        VEC b0 = LOAD(BLO(p)), b1 = LOAD(BHI(p));                              \
        __builtin_prefetch(BLO(p + 8));                                        \
        __builtin_prefetch(BHI(p + 8) + W - 1);                                \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                \
          VEC va = SET1(ar[i][p * (AP)]);                                      \
          c0[i] = FMA(va, b0, c0[i]);                                          \
          c1[i] = FMA(va, b1, c1[i]);                                          \
        }                                                                      \
      }                                                                        \
    } else {                                                                   \
      MASK_T m0 = MASK(cols < W ? cols : W), m1 = MASK(cols - W);              \
      for (int64_t p = 0; p < k; p++) {                                        \
        VEC b0 = MLOAD(BLO(p), m0), b1 = MLOAD(BHI(p), m1);                    \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                \
          VEC va = SET1(ar[i][p * (AP)]);                                      \
          c0[i] = FMA(va, b0, c0[i]);                                          \
          c1[i] = FMA(va, b1, c1[i]);                                          \
        }                                                                      \
      }                                                                        \
    }                                                                          \
    VEC vA = SET1(alpha), vB = SET1(beta);                                     \
    MASK_T m0 = MASK(cols < W ? cols : W), m1 = MASK(cols - W);                \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                    \
      if (i >= rows) break;                                                    \
      float *ci = c + i * ldc;                                                 \
      VEC r0 = MUL(vA, c0[i]), r1 = MUL(vA, c1[i]);                            \
      if (cols == 2 * W) {                                                     \
        if (beta != 0)                                                         \
          r0 = FMA(vB, LOAD(ci), r0), r1 = FMA(vB, LOAD(ci + W), r1);          \
        STORE(ci, r0);                                                         \
        STORE(ci + W, r1);                                                     \
      } else {                                                                 \
        if (beta != 0)                                                         \
          r0 = FMA(vB, MLOAD(ci, m0), r0), r1 = FMA(vB, MLOAD(ci + W, m1), r1); \
        STORE_N(ci, r0, cols < W ? cols : W);                                  \
        STORE_N(ci + W, r1, cols - W);                                         \
      }                                                                        \
    }

#define CPU_FAST_ROWS_BLO(p) (b + (p) * ldb)
#define CPU_FAST_ROWS_BHI(p) (b + (p) * ldb + W)
#define CPU_FAST_DEFINE_UKR_ROWS(name, MR)                                         \
  static void name(int64_t k, const float *a, int64_t lda, const float *b,     \
                   int64_t ldb, float *c, int64_t ldc, int rows, int cols,     \
                   float alpha, float beta) {                                  \
    CPU_FAST_UKR_ROWS_BODY(MR, CPU_FAST_ROWS_BLO, CPU_FAST_ROWS_BHI, cols)                 \
  }

/* Whole MR x 2W tiles with A's rows LDA apart, a compile-time constant:
 * one pointer then addresses all MR rows (the row pointers of ukr_rows,
 * one register each, leave the k loop short of registers). For an A that
 * lies in a block of known width, as the attention kernels' weights do. */
#define CPU_FAST_DEFINE_UKR_ROWS_FIXED(name, MR, LDA)                              \
  static void name(int64_t k, const float *a, const float *b, int64_t ldb,     \
                   float *c, int64_t ldc, float alpha, float beta) {           \
    const int rows = MR, cols = 2 * W;                                         \
    CPU_FAST_UKR_BODY_A(MR, CPU_FAST_ROWS_BLO, CPU_FAST_ROWS_BHI, 2 * W, LDA, 1)         \
  }

/* Column-major A (cpu_fast_gemm_kernel_t.ukr_cols): element (i, p) at
 * a[p*lda + i], the MR values of one k step side by side. */
#define CPU_FAST_DEFINE_UKR_COLS(name, MR)                                         \
  static void name(int64_t k, const float *a, int64_t lda, const float *b,     \
                   int64_t ldb, float *c, int64_t ldc, int rows, int cols,     \
                   float alpha, float beta) {                                  \
    CPU_FAST_UKR_BODY_A(MR, CPU_FAST_ROWS_BLO, CPU_FAST_ROWS_BHI, cols, 1, lda)            \
  }

/* B row p's two halves at blo + off[p] and bhi + off[p] (cpu_fast_ukr_offs_fn):
 * an image read in place, each half a run of one output row. lcols lanes
 * are loaded (2W: all, unmasked), cols stored. */
#define CPU_FAST_OFFS_BLO(p) (blo + off[p])
#define CPU_FAST_OFFS_BHI(p) (bhi + off[p])
#define CPU_FAST_DEFINE_UKR_OFFS(name, MR)                                         \
  static void name(int64_t k, const float *a, int64_t lda, const float *blo,   \
                   const float *bhi, const int64_t *off, float *c,             \
                   int64_t ldc, int rows, int cols, int lcols, float alpha,    \
                   float beta) {                                               \
    CPU_FAST_UKR_ROWS_BODY(MR, CPU_FAST_OFFS_BLO, CPU_FAST_OFFS_BHI, lcols)                \
  }

/* Output channels along the vector (cpu_fast_ukr_pix_fn): MR output pixels, each
 * broadcast from its own input pointer xp[i] + off[p], times NR = 2W output
 * channels of packed weights wp[p*2W + ch]; the tile is transposed on the
 * way out, so y[ch*ldy + i] (NCHW) is written directly. Pixels past `rows`
 * repeat the last one and are not stored. */
#define CPU_FAST_DEFINE_UKR_PIX(name, MR)                                          \
  static void name(int64_t k, const float *const *xp, const int64_t *off,      \
                   const float *wp, float *y, int64_t ldy, int rows,           \
                   float beta) {                                               \
    const float *pr[MR];                                                       \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) pr[i] =              \
        xp[i < rows ? i : rows - 1];                                           \
    VEC c0[MR], c1[MR];                                                        \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) c0[i] = c1[i] =      \
        ZERO();                                                                \
    for (int64_t p = 0; p < k; p++) {                                          \
      VEC b0 = LOAD(wp + p * 2 * W), b1 = LOAD(wp + p * 2 * W + W);            \
      int64_t o = off[p];                                                      \
      __builtin_prefetch(wp + (p + 8) * 2 * W);                                \
      __builtin_prefetch(wp + (p + 8) * 2 * W + 2 * W - 1);                    \
      _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                  \
        VEC va = SET1(pr[i][o]);                                               \
        c0[i] = FMA(va, b0, c0[i]);                                            \
        c1[i] = FMA(va, b1, c1[i]);                                            \
      }                                                                        \
    }                                                                          \
    float t[MR][2 * W] __attribute__((aligned(64)));                           \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                    \
      STORE(t[i], c0[i]);                                                      \
      STORE(t[i] + W, c1[i]);                                                  \
    }                                                                          \
    for (int ch = 0; ch < 2 * W; ch++) {                                       \
      float *yc = y + ch * ldy;                                                \
      if (beta == 0)                                                           \
        for (int i = 0; i < rows; i++) yc[i] = t[i][ch];                       \
      else                                                                     \
        for (int i = 0; i < rows; i++) yc[i] += t[i][ch];                      \
    }                                                                          \
  }
