/*
 * fast_conv2d_ukr_avx2.c — the conv micro-kernels with a 4-row tile, AVX2 +
 * FMA (fast.mk), for a last panel that the AVX2 kernels' 6 rows would run
 * with rows repeated: in place (fast_ukr_offs_fn), 64 output channels are
 * 10 panels of 6 and one of 4 (3 % of the layer's FMAs wasted); channels
 * along the vector (fast_ukr_pix_fn), 196 pixels are 32 tiles of 6 and
 * one of 4. Same bodies as fast_gemm_avx2.c's (fast_gemm_ukr_rows.h);
 * called by fast_conv2d_igemm.c only when that file's kernels were
 * picked, so only after the CPUID check.
 */
#include <immintrin.h>

#include "fast_conv2d.h"
#include "fast_gemm_ukr_rows.h"

#define VEC __m256
#define W 8
#define LOAD _mm256_loadu_ps
#define STORE _mm256_storeu_ps
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define MUL _mm256_mul_ps
#define ZERO _mm256_setzero_ps
/* Lane mask with the first n of 8 lanes set (none for n <= 0). */
static inline __m256i lanes8(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#define MASK_T __m256i
#define MASK(n) lanes8(n)
#define MLOAD(p, m) _mm256_maskload_ps((p), (m))
#define MSTORE(p, m, v) _mm256_maskstore_ps((p), (m), (v))
FAST_DEFINE_UKR_OFFS(conv_ukr_offs_4x16, 4)
FAST_DEFINE_UKR_PIX(conv_ukr_pix_4x16, 4)

const fast_ukr_offs_fn fast_conv_ukr_offs4_avx2 = conv_ukr_offs_4x16;
const fast_ukr_pix_fn fast_conv_ukr_pix4_avx2 = conv_ukr_pix_4x16;
