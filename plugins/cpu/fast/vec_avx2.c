/*
 * fast/vec_avx2.c — the fast/vec.h row kernels for AVX2 + FMA + F16C;
 * compiled with those flags (fast.mk), reached through cpu_fast_vec_pick.
 */
#define CPU_FAST_VEC_TABLE cpu_fast_vec_avx2
#include "vec_kern.h"
