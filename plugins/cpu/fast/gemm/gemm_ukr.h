/*
 * fast/gemm/gemm_ukr.h — one micro-kernel body, instantiated per ISA and dtype by
 * fast/gemm/gemm_avx512.c and fast/gemm/gemm_avx2.c (each compiled with its own -m
 * flags). The includer defines the vector ops before instantiating:
 *   VEC, T, W (lanes), LOAD, STORE, SET1, FMA, MUL, ZERO.
 * The tile is MR rows x 2W columns: 2*MR accumulators plus two B vectors and
 * one broadcast must fit the register file (32 zmm / 16 ymm).
 */
#define PF_DIST 8 /* k rows ahead */
/* C's tile is read and written only after the k loop. Its 2 * MR lines (a
 * row's first and last element) are prefetched one at a time, one every
 * `step` k steps over the first three quarters of the loop: issued all at
 * once before it, they take most of the core's L1 miss buffers while they
 * come from L3 or memory, and the B rows the loop streams from L2 wait
 * behind them (docs/backend-cpu.md). A k too short to spread them over
 * fetches them all before the loop. */
#define CPU_FAST_UKR_C_PF_STEP(k, MR) ((k) * 3 / 4 / (2 * (MR)))
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
    /* C's lines, spread over the k loop (CPU_FAST_UKR_C_PF_STEP) */                               \
    int64_t pf_step = CPU_FAST_UKR_C_PF_STEP(k, MR), pf_next = 0;                                  \
    int pf_line = pf_step < 1 ? 2 * MR : 0;                                                        \
    for (int i = 0; pf_step < 1 && i < MR; i++) {                                                  \
      __builtin_prefetch(c + i * ldc, 1);                                                          \
      __builtin_prefetch(c + i * ldc + 2 * W - 1, 1);                                              \
    }                                                                                              \
    for (int64_t p = 0; p < k; p++) {                                                              \
      VEC b0 = LOAD(bp), b1 = LOAD(bp + W);                                                        \
      /* B streams from L2: fetch both of its lines a few rows ahead */                            \
      __builtin_prefetch(bp + PF_DIST * 2 * W);                                                    \
      __builtin_prefetch(bp + PF_DIST * 2 * W + 2 * W - 1);                                        \
      if (p == pf_next && pf_line < 2 * MR) {                                                      \
        __builtin_prefetch(c + (pf_line >> 1) * ldc + (pf_line & 1) * (2 * W - 1), 1);             \
        pf_line++;                                                                                 \
        pf_next += pf_step;                                                                        \
      }                                                                                            \
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
