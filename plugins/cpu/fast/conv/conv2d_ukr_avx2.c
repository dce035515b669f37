/*
 * fast/conv/conv2d_ukr_avx2.c — the conv micro-kernels with a 4-row tile, AVX2 +
 * FMA (fast.mk), for a last panel that the AVX2 kernels' 6 rows would run
 * with rows repeated: in place (cpu_fast_ukr_offs_fn), 64 output channels are
 * 10 panels of 6 and one of 4 (3 % of the layer's FMAs wasted); channels
 * along the vector (cpu_fast_ukr_pix_fn), 196 pixels are 32 tiles of 6 and
 * one of 4. Same bodies as fast/gemm/gemm_avx2.c's (fast/gemm/gemm_ukr_rows.h);
 * called by fast/conv/conv2d_igemm.c only when that file's kernels were
 * picked, so only after the CPUID check.
 */
#include <immintrin.h>

#include "conv2d.h"
#include "plugins/cpu/fast/gemm/gemm_ukr_rows.h"
#include "plugins/cpu/fast/gemm/ukr_avx2_f32.h"
CPU_FAST_DEFINE_UKR_OFFS(conv_ukr_offs_4x16, 4)
CPU_FAST_DEFINE_UKR_PIX(conv_ukr_pix_4x16, 4)

/* The 6-pixel tile with one prefetch of the weights per k row, not two:
 * a row of 16 packed weights is one 64-byte line (the scratch is 64-byte
 * aligned), so fast/gemm/gemm_ukr_rows.h's second prefetch names the same
 * line. */
static void conv_ukr_pix_6x16(int64_t k, const float *const *xp, const int64_t *off,
                              const float *wp, float *y, int64_t ldy, int rows, float beta) {
  enum { MR = 6 };
  const float *pr[MR];
  _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) pr[i] = xp[i < rows ? i : rows - 1];
  VEC c0[MR], c1[MR];
  _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) c0[i] = c1[i] = ZERO();
  for (int64_t p = 0; p < k; p++) {
    VEC b0 = LOAD(wp + p * 2 * W), b1 = LOAD(wp + p * 2 * W + W);
    int64_t o = off[p];
    __builtin_prefetch(wp + (p + 8) * 2 * W);
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {
      VEC va = SET1(pr[i][o]);
      c0[i] = FMA(va, b0, c0[i]);
      c1[i] = FMA(va, b1, c1[i]);
    }
  }
  float t[MR][2 * W] __attribute__((aligned(64)));
  _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {
    STORE(t[i], c0[i]);
    STORE(t[i] + W, c1[i]);
  }
  for (int ch = 0; ch < 2 * W; ch++) {
    float *yc = y + ch * ldy;
    if (beta == 0)
      for (int i = 0; i < rows; i++) yc[i] = t[i][ch];
    else
      for (int i = 0; i < rows; i++) yc[i] += t[i][ch];
  }
}

const cpu_fast_ukr_offs_fn cpu_fast_conv_ukr_offs4_avx2 = conv_ukr_offs_4x16;
const cpu_fast_ukr_pix_fn cpu_fast_conv_ukr_pix6_avx2 = conv_ukr_pix_6x16;
const cpu_fast_ukr_pix_fn cpu_fast_conv_ukr_pix4_avx2 = conv_ukr_pix_4x16;
