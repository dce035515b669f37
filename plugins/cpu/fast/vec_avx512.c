/*
 * fast/vec_avx512.c — the fast/vec.h row kernels for AVX-512 (F, BW, VL,
 * DQ); compiled with those flags (fast.mk), reached through cpu_fast_vec_pick.
 */
#define CPU_FAST_VEC_512 1
#define CPU_FAST_VEC_TABLE cpu_fast_vec_avx512
#include "vec_kern.h"
