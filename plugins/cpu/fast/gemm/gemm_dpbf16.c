/*
 * fast/gemm/gemm_dpbf16.c — the block product of the bf16 GEMM driver
 * (fast/gemm/gemm_amx.c) for CPUs with AVX-512 and AVX512-BF16 but no AMX
 * (Xeons whose tiles are not exposed, AMD Zen 4): VDPBF16PS on zmm
 * registers instead of TDPBF16PS on tiles.
 *
 * Why the AMX driver and not the f32 one (gemm.c, gemm_macro.c,
 * gemm_team.c) with a pair-packing type: the AMX driver already packs B
 * into exactly the pairs VDPBF16PS takes (per k pair, the pairs
 * (B[2p][j], B[2p+1][j]) of 16 columns in 64 bytes) and A row by row per
 * 32-deep k chunk (a pair of A is one 32-bit broadcast), pads odd k with
 * zeros, keeps f32 sums between k blocks in a workspace and merges into C
 * once with alpha, beta, the epilogue and one nearest-even rounding. Only
 * the product of one 32 x 32 block over a run of k chunks differs, so the
 * driver takes it as a function (one driver, two inner products). The f32
 * driver's gemm_type_t widens while packing and its kernels write C in
 * the packed type; a pair layout there would be a second packing scheme
 * beside the one the AMX driver has.
 *
 * The block is computed in four register tiles of 8 rows x 32 columns:
 * 16 f32 accumulators (two zmm per row), per k pair two loads of B and
 * one 32-bit broadcast of A's pair per row (a load, VPBROADCASTD from
 * memory), 16 VDPBF16PS.
 * Each VDPBF16PS adds a lane's two products (exact in f32) into its f32
 * sum one after the other, rounding each time as two FMAs would: the
 * API's f32 accumulation. Unlike the widening path it flushes denormal
 * inputs and results to zero (below 2^-126, inside the tolerance of f32
 * accumulation). The 32 x KB B sub-panel stays in L1 while the four row
 * tiles sweep it.
 *
 * The driver takes this product only where VDPBF16PS outruns the f32
 * FMAs (fast/gemm/gemm_lowp.c says where); everywhere else it runs for
 * the tests only.
 *
 * f16 GEMM does not come here: VDPBF16PS would hold f16 exactly only as
 * the AMX route does, each value split into bf16 parts (four products per
 * product), which costs more than widening to f32 and the f32 FMA kernel.
 *
 * Compiled with AVX-512 and -mavx512bf16 (fast.mk); called only when
 * CPUID reports AVX512-BF16 (fast/gemm/gemm_lowp.c).
 */
#include <immintrin.h>

#include "gemm.h"

#define DP_KC 32       /* bf16 per packed row: one k chunk */
#define DP_PANEL 1024  /* bf16 per 32 x 32 panel chunk */
#define DP_ROWS 8      /* rows of the register tile */

/* The pair of A at p (two bf16, one 32-bit lane) in every lane. */
static inline __m512bh dp_bcast(const uint16_t *p) {
  int32_t v;
  __builtin_memcpy(&v, p, sizeof v);
  return (__m512bh)_mm512_set1_epi32(v);
}

/* Rows [r0, r0 + 8) x 32 columns of w (+)= A x B over kchunks k chunks. */
static inline __attribute__((always_inline)) void
dp_tile(int64_t kchunks, const uint16_t *ap, const uint16_t *bp, float *w, int64_t ld,
        bool first, int r0, const char *pf, int64_t pfl) {
  __m512 acc[DP_ROWS][2];
  _Pragma("GCC unroll 16") for (int i = 0; i < DP_ROWS; i++)
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
      acc[i][h] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(w + (r0 + i) * ld + 16 * h);
  for (int64_t c = 0; c < kchunks; c++) {
    const uint16_t *a = ap + c * DP_PANEL + r0 * DP_KC, *b = bp + c * DP_PANEL;
    for (int64_t l = 0; l < pfl; l++, pf += 64) _mm_prefetch(pf, _MM_HINT_T1);
    _Pragma("GCC unroll 4") for (int r = 0; r < DP_KC / 2; r++) {
      __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + r * 32);
      __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + 512 + r * 32);
      _Pragma("GCC unroll 16") for (int i = 0; i < DP_ROWS; i++) {
        __m512bh x = dp_bcast(a + i * DP_KC + 2 * r);
        acc[i][0] = _mm512_dpbf16_ps(acc[i][0], x, b0);
        acc[i][1] = _mm512_dpbf16_ps(acc[i][1], x, b1);
      }
    }
  }
  _Pragma("GCC unroll 16") for (int i = 0; i < DP_ROWS; i++)
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
      _mm512_storeu_ps(w + (r0 + i) * ld + 16 * h, acc[i][h]);
}

void cpu_fast_gemm_dpbf16_block(int64_t kchunks, const uint16_t *ap, const uint16_t *bp,
                                float *w, int64_t ld, bool first, const char *pf, int64_t pfl) {
  /* the next B sub-panel's prefetch rides with the first row tile: the
   * others read this B sub-panel from L1 */
  for (int r0 = 0; r0 < 32; r0 += DP_ROWS)
    dp_tile(kchunks, ap, bp, w, ld, first, r0, pf, r0 == 0 && pf ? pfl : 0);
}
