/*
 * fast/gemm/gemm_lowp.c — picks the native kernel for bf16 and f16 GEMM. A
 * few rows of C against a B with contiguous rows (one-token decode) go to
 * the skinny kernel, which reads B once in place (fast/gemm/gemm_skinny_lowp.c);
 * the rest to AMX tiles when the CPU has AMX-BF16 and the kernel grants tile
 * state (f16 through exact bf16 splits, fast/gemm/gemm_amx_f16.c).
 * Everything else (no AMX, an ISA ceiling below AVX-512, k == 0) returns
 * BP_ERR_UNIMPLEMENTED, and cpu_fast_gemm widens to f32 while packing
 * instead.
 */
#include "gemm.h"

bp_status_t cpu_fast_gemm_lowp(cpu_device_t *dev, const bp_gemm_args_t *a) {
  bp_dtype_t dt = a->a.dtype;
  if ((dt != BP_BF16 && dt != BP_F16) || a->a.shape[2] == 0) return BP_ERR_UNIMPLEMENTED;
  if (dev->isa != BP_ISA_BEST && dev->isa < BP_ISA_AVX512)
    return BP_ERR_UNIMPLEMENTED;
  if (cpu_fast_gemm_skinny_lowp_ok(dev, a)) return cpu_fast_gemm_skinny_lowp(dev, a);
  const cpu_features_t *f = cpu_features_get();
  if (!f->amx_bf16 || !f->avx512bw || !f->avx512vl || !cpu_amx_request())
    return BP_ERR_UNIMPLEMENTED;
  if (dt == BP_F16 && !f->f16c) return BP_ERR_UNIMPLEMENTED;
  return cpu_fast_gemm_amx(dev, a);
}
