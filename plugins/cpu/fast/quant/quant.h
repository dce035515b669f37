/*
 * fast/quant/quant.h — the quantized ops' fast kernels
 * (plugins/cpu/fast/quant/): what the baseline dispatch (quant.c) shares
 * with the ISA files (qgemm_*.c), which are built with their own flags.
 */
#ifndef BACKPLANE_CPU_FAST_QUANT_H
#define BACKPLANE_CPU_FAST_QUANT_H

#include "plugins/cpu/cpu.h"

/* B of an int8 / uint8 GEMM packed for the AVX2 kernel: 16-column panels,
 * each k4 step 16 columns x 4 consecutive k (64 bytes), zero-padded to whole
 * panels and k4 steps; colsum[j] = sum_l b[l, j] (the correction for
 * a + 128). */
typedef struct cpu_qb_pack {
  int64_t n, kp;  /* columns, k rounded up to 4 */
  int8_t *b;      /* ceil(n / 16) panels of kp * 16 bytes */
  int32_t *colsum;
  bool b_u8;   /* b's bytes are u8 (else i8) */
  bool a_flip; /* the rows are an i8 a + 128: subtract 128 * colsum */
} cpu_qb_pack_t;

/* acc[r][j] = sum_l a_r[l] * b[l, j] for `rows` (1..4) rows of A given as
 * u8 (a + 128 for an i8 a, a itself for a u8 one; kp bytes each,
 * zero-padded), all n columns, exact modulo 2^32, on AVX2 without VNNI
 * (qgemm_avx2.c); acc rows have stride ldacc. */
CPU_HIDDEN void cpu_qgemm_avx2_rows(const cpu_qb_pack_t *p, const uint8_t *const *arows, int rows,
                                    int32_t *acc, int64_t ldacc);

/* The whole of bp_qgemm, cache-blocked (qgemm_amx.c): any strides, b
 * shared or batched, every c dtype, exact. amx: on AMX-INT8 tiles (call
 * only when CPUID has AMX-INT8 and AVX-512 F, BW, VL, DQ and cpu_amx_request()
 * granted tile state); else on AVX512-VNNI (CPUID has it and AVX-512 F, BW,
 * VL, DQ). BP_ERR_UNIMPLEMENTED (nothing written) when scratch memory for B
 * cannot be had, BP_ERR_OUT_OF_MEMORY when a worker's could not. */
CPU_HIDDEN bp_status_t cpu_qgemm_blocked(cpu_device_t *dev, const bp_qgemm_args_t *a, bool amx);

/* The fp8 GEMM (a and b e4m3 / e5m2) on AMX-BF16 tiles (qgemm_fp8.c), with
 * cpu_qgemm_blocked's contract; call only when CPUID has AMX-BF16 and
 * AVX-512 F, BW, VL, DQ and cpu_amx_request() granted tile state. */
CPU_HIDDEN bp_status_t cpu_qgemm_fp8_amx(cpu_device_t *dev, const bp_qgemm_args_t *a);
/* The same from f32 copies through the f32 GEMM, any CPU the fast GEMM
 * runs on (qgemm_fp8_f32.c); BP_ERR_UNIMPLEMENTED, nothing written, when
 * the copies cannot be had or the GEMM declines. */
CPU_HIDDEN bp_status_t cpu_qgemm_fp8_f32(cpu_device_t *dev, const bp_qgemm_args_t *a);

/* The int8 GEMM's paths, best last. */
typedef enum cpu_qgemm_path {
  CPU_QGEMM_REF,
  CPU_QGEMM_AVX2,
  CPU_QGEMM_VNNI,
  CPU_QGEMM_AMX
} cpu_qgemm_path_t;

/* The path bp_qgemm takes on dev (quant.c): AMX > VNNI > AVX2 by CPUID and
 * the device's ISA ceiling, or the one BP_CPU_QGEMM_ISA=amx|vnni|avx2|ref
 * names (the reference when this CPU lacks it). */
CPU_HIDDEN cpu_qgemm_path_t cpu_qgemm_path(const cpu_device_t *dev);

#endif /* BACKPLANE_CPU_FAST_QUANT_H */
