/*
 * fast/gemm/gemm_ukr.h — one micro-kernel body, instantiated per ISA and dtype by
 * fast/gemm/gemm_avx512.c and fast/gemm/gemm_avx2.c (each compiled with its own -m
 * flags). The includer defines the vector ops before instantiating:
 *   VEC, T, W (lanes), LOAD, STORE, SET1, FMA, MUL, ZERO.
 * The tile is MR rows x 2W columns: 2*MR accumulators plus two B vectors and
 * one broadcast must fit the register file (32 zmm / 16 ymm).
 */
#define PF_DIST 8 /* k rows ahead */
#define CPU_FAST_DEFINE_UKR(name, MR) CPU_FAST_DEFINE_UKR_AS(name, MR, MR)
/* The first MR rows of panels packed AS rows wide (AS >= MR): a short
 * kernel for C's last rows, with FMAs for the rows it has only. */
#define CPU_FAST_DEFINE_UKR_AS(name, MR, AS)                                                       \
  static void name(int64_t k, const void *ap_, const void *bp_, void *c_, int64_t ldc,             \
                   const void *alpha_, const void *beta_) {                                        \
    const T *ap = ap_, *bp = bp_;                                                                  \
    T *c = c_;                                                                                     \
    VEC c0[MR], c1[MR];                                                                            \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) c0[i] = c1[i] = ZERO();                  \
    /* C is only touched after the k loop: start fetching it now */                                \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                                        \
      __builtin_prefetch(c + i * ldc, 1);                                                          \
      __builtin_prefetch(c + i * ldc + 2 * W - 1, 1);                                              \
    }                                                                                              \
    for (int64_t p = 0; p < k; p++) {                                                              \
      VEC b0 = LOAD(bp), b1 = LOAD(bp + W);                                                        \
      /* B streams from L2: fetch both of its lines a few rows ahead */                            \
      __builtin_prefetch(bp + PF_DIST * 2 * W);                                                    \
      __builtin_prefetch(bp + PF_DIST * 2 * W + 2 * W - 1);                                        \
      _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                                      \
        VEC a = SET1(ap[i]);                                                                       \
        c0[i] = FMA(a, b0, c0[i]);                                                                 \
        c1[i] = FMA(a, b1, c1[i]);                                                                 \
      }                                                                                            \
      ap += AS;                                                                                    \
      bp += 2 * W;                                                                                 \
    }                                                                                              \
    VEC va = SET1(*(const T *)alpha_);                                                             \
    T beta = *(const T *)beta_;                                                                    \
    if (beta == 0) {                                                                               \
      _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                                      \
        STORE(c + i * ldc, MUL(va, c0[i]));                                                        \
        STORE(c + i * ldc + W, MUL(va, c1[i]));                                                    \
      }                                                                                            \
    } else {                                                                                       \
      VEC vb = SET1(beta);                                                                         \
      _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                                      \
        T *ci = c + i * ldc;                                                                       \
        STORE(ci, FMA(va, c0[i], MUL(vb, LOAD(ci))));                                              \
        STORE(ci + W, FMA(va, c1[i], MUL(vb, LOAD(ci + W))));                                      \
      }                                                                                            \
    }                                                                                              \
  }
