/*
 * fast/gemm/ukr_undef.h — ends one element type's instantiations of the
 * micro-kernel templates (fast/gemm/gemm_ukr.h, gemm_ukr_rows.h): removes
 * the vector operations that ukr_avx2_f32.h, ukr_avx512_f32.h or the
 * includer defined, so the next type (or the rest of the file) starts
 * clean. Included once per block of instantiations, so no include guard.
 */
#undef MASK_T
#undef MASK
#undef MLOAD
#undef STORE_N
#undef VEC
#undef T
#undef W
#undef LOAD
#undef STORE
#undef SET1
#undef FMA
#undef MUL
#undef ZERO
#undef DOT_RED4
#undef DOT_TIN
#undef DOT_LD
#undef DOT_MLD
#undef DOT_CGET
#undef DOT_CPUT
