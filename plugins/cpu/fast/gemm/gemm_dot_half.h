/*
 * fast/gemm/gemm_dot_half.h — the bf16 and f16 instances of the
 * inner-product kernel (fast/gemm/gemm_dot_ukr.h) for one ISA: a tile of
 * DOT_HALF_RA rows of A and a one-row tile, each for bf16 and for f16,
 * named bf16_ukr_dot, bf16_ukr_dot_1, f16_ukr_dot and f16_ukr_dot_1
 * (static in the includer). A, Bᵀ and C hold 16-bit values; the sums are
 * f32 and C is rounded once, to nearest even.
 *
 * The includer has the f32 vector operations of the kernel template
 * defined (VEC, T = float, W, ZERO, FMA, MASK_T, MASK, DOT_RED4) and the
 * widening loads dot_ld_bf16, dot_mld_bf16, dot_ld_f16 and dot_mld_f16
 * (W elements to a VEC, the masked ones under a MASK_T), and defines
 * DOT_HALF_RA. Included once per file, after gemm_dot_ukr.h.
 */
#include "plugins/cpu/dtype.h"

static inline float dot_get_bf16(const uint16_t *p) { return cpu_bf16_to_float(*p); }
static inline float dot_get_f16(const uint16_t *p) { return cpu_f16_to_float(*p); }
static inline void dot_put_bf16(uint16_t *p, float v) { *p = cpu_bf16_from_double(v); }
static inline void dot_put_f16(uint16_t *p, float v) { *p = cpu_f16_from_double(v); }

#define DOT_TIN uint16_t
#define DOT_LD dot_ld_bf16
#define DOT_MLD dot_mld_bf16
#define DOT_CGET dot_get_bf16
#define DOT_CPUT dot_put_bf16
CPU_FAST_DEFINE_UKR_DOT(bf16_ukr_dot, DOT_HALF_RA)
CPU_FAST_DEFINE_UKR_DOT(bf16_ukr_dot_1, 1)
#undef DOT_LD
#undef DOT_MLD
#undef DOT_CGET
#undef DOT_CPUT
#define DOT_LD dot_ld_f16
#define DOT_MLD dot_mld_f16
#define DOT_CGET dot_get_f16
#define DOT_CPUT dot_put_f16
CPU_FAST_DEFINE_UKR_DOT(f16_ukr_dot, DOT_HALF_RA)
CPU_FAST_DEFINE_UKR_DOT(f16_ukr_dot_1, 1)
