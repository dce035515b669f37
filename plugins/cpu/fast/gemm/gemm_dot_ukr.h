/*
 * fast/gemm/gemm_dot_ukr.h — the inner-product micro-kernel body
 * (cpu_fast_ukr_dot_fn in fast/gemm/gemm.h), instantiated per ISA and
 * dtype by fast/gemm/gemm_avx512.c and fast/gemm/gemm_avx2.c. Where the
 * other kernels put C's columns along the vector, this one puts k there:
 * RA rows of A and 4 rows of Bᵀ, each read front to back, and each of the
 * RA x 4 sums kept as a vector of partial sums that is folded only after
 * the k loop. It serves C with a narrow side (a few columns, or a few rows
 * against B given as Bᵀ), where a vector along C's columns would run
 * mostly empty lanes, and where packing the long operand would cost more
 * than the few uses of each of its elements (fast/gemm/gemm_dot.c).
 *
 * The includer defines VEC, T (the compute type, f32 or f64), W (lanes),
 * ZERO, FMA, MASK_T, MASK(n) (first n lanes), DOT_RED4(out, a, b, c, d),
 * which writes the lane sums of four vectors to out[0..3], and the
 * operands' side:
 *   DOT_TIN          the stored element type of A, Bᵀ and C;
 *   DOT_LD(p)        W elements at p as a VEC (widened from bf16 / f16);
 *   DOT_MLD(p, m)    the same under a MASK_T, lanes outside it zero;
 *   DOT_CGET(p)      C's element at p as a T;
 *   DOT_CPUT(p, v)   v rounded into C's element at p.
 * For f32 / f64 these are plain loads and stores (CPU_FAST_DOT_PLAIN_*,
 * set by fast/gemm/dot_plain.h).
 */
#define CPU_FAST_DOT_PLAIN_TIN T
#define CPU_FAST_DOT_PLAIN_LD(p) LOAD(p)
#define CPU_FAST_DOT_PLAIN_MLD(p, m) MLOAD((p), (m))
#define CPU_FAST_DOT_PLAIN_CGET(p) (*(p))
#define CPU_FAST_DOT_PLAIN_CPUT(p, v) (*(p) = (v))

/* One step of k: RA + 4 loads, RA x 4 FMAs. A's RA vectors are held and
 * Bᵀ's four streamed past them, so the tile needs RA x 4 + RA + 1
 * registers: 6 x 4 takes 31 of AVX-512's 32, 3 x 4 all 16 of AVX2's. */
#define CPU_FAST_DOT_STEP(LD_A, LD_B)                                          \
  do {                                                                         \
    VEC av[RA_];                                                               \
    _Pragma("GCC unroll 8") for (int i = 0; i < RA_; i++) av[i] = LD_A(i);     \
    _Pragma("GCC unroll 4") for (int j = 0; j < CPU_FAST_DOT_RB; j++) {        \
      VEC bv = LD_B(j);                                                        \
      _Pragma("GCC unroll 8") for (int i = 0; i < RA_; i++)                    \
          acc[i][j] = FMA(av[i], bv, acc[i][j]);                               \
    }                                                                          \
  } while (0)

#define CPU_FAST_DOT_LD_A(i) DOT_LD(ar[i] + p)
#define CPU_FAST_DOT_LD_B(j) DOT_LD(br[j] + p)
#define CPU_FAST_DOT_MLD_A(i) DOT_MLD(ar[i] + p, tail)
#define CPU_FAST_DOT_MLD_B(j) DOT_MLD(br[j] + p, tail)

/* Rows past ra (rb) re-read A's (Bᵀ's) last row; their sums are dropped. */
#define CPU_FAST_DEFINE_UKR_DOT(name, RA)                                      \
  static void name(int64_t k, const void *a_, int64_t lda, const void *b_,     \
                   int64_t ldb, void *c_, int64_t scm, int64_t scn, int ra,    \
                   int rb, const void *alpha_, const void *beta_) {            \
    enum { RA_ = RA };                                                         \
    const DOT_TIN *ar[RA], *br[CPU_FAST_DOT_RB];                               \
    _Pragma("GCC unroll 8") for (int i = 0; i < RA; i++) ar[i] =               \
        (const DOT_TIN *)a_ + (i < ra ? i : ra - 1) * lda;                     \
    _Pragma("GCC unroll 4") for (int j = 0; j < CPU_FAST_DOT_RB; j++) br[j] =  \
        (const DOT_TIN *)b_ + (j < rb ? j : rb - 1) * ldb;                     \
    VEC acc[RA][CPU_FAST_DOT_RB];                                              \
    _Pragma("GCC unroll 8") for (int i = 0; i < RA; i++)                       \
        _Pragma("GCC unroll 4") for (int j = 0; j < CPU_FAST_DOT_RB; j++)      \
            acc[i][j] = ZERO();                                                \
    int64_t p = 0;                                                             \
    for (; p + W <= k; p += W)                                                 \
      CPU_FAST_DOT_STEP(CPU_FAST_DOT_LD_A, CPU_FAST_DOT_LD_B);                 \
    if (p < k) {                                                               \
      MASK_T tail = MASK(k - p);                                               \
      CPU_FAST_DOT_STEP(CPU_FAST_DOT_MLD_A, CPU_FAST_DOT_MLD_B);               \
    }                                                                          \
    T alpha = *(const T *)alpha_, beta = *(const T *)beta_;                   \
    DOT_TIN *c = c_;                                                           \
    _Pragma("GCC unroll 8") for (int i = 0; i < RA; i++) {                     \
      if (i >= ra) break;                                                      \
      T s[CPU_FAST_DOT_RB];                                                    \
      DOT_TIN *ci = c + i * scm;                                               \
      DOT_RED4(s, acc[i][0], acc[i][1], acc[i][2], acc[i][3]);                 \
      for (int j = 0; j < rb; j++)                                             \
        DOT_CPUT(ci + j * scn,                                                 \
                 beta == 0 ? alpha * s[j] : alpha * s[j] + beta * DOT_CGET(ci + j * scn)); \
    }                                                                          \
  }
