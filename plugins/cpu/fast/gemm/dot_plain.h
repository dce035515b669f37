/*
 * fast/gemm/dot_plain.h — the operand side of the inner-product kernel
 * (fast/gemm/gemm_dot_ukr.h) for f32 and f64: A, Bᵀ and C hold the compute
 * type T, loaded and stored as they are. Included in each f32 / f64 block
 * of instantiations, after the type's vector operations; ukr_undef.h ends
 * it with the rest. No include guard.
 */
#define DOT_TIN CPU_FAST_DOT_PLAIN_TIN
#define DOT_LD CPU_FAST_DOT_PLAIN_LD
#define DOT_MLD CPU_FAST_DOT_PLAIN_MLD
#define DOT_CGET CPU_FAST_DOT_PLAIN_CGET
#define DOT_CPUT CPU_FAST_DOT_PLAIN_CPUT
