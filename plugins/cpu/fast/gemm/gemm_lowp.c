/*
 * fast/gemm/gemm_lowp.c — picks the native kernel for bf16 and f16 GEMM. A
 * few rows of C against a B with contiguous rows (one-token decode) go to
 * the skinny kernel, which reads B once in place (fast/gemm/gemm_skinny_lowp.c);
 * the rest to AMX tiles when the CPU has AMX-BF16 and the kernel grants tile
 * state (f16 through exact bf16 splits, fast/gemm/gemm_amx_f16.c).
 *
 * Without AMX, bf16 takes the same driver with VDPBF16PS on zmm registers
 * (fast/gemm/gemm_dpbf16.c) only on AMD CPUs: there (Zen 4 on, by AMD's
 * instruction tables) it issues as often as an f32 FMA and does twice its
 * work. On an Intel Xeon with AVX512-BF16 and its tiles hidden it issues
 * so much more slowly than the FMAs that it has under their flop rate,
 * and widening to f32 for the FMA kernel is the faster route there
 * (docs/backend-cpu.md has the measurements). f16 never takes it:
 * VDPBF16PS holds f16 exactly only split into bf16 parts, four products
 * per product, more work than the f32 FMAs.
 *
 * Everything else (no native kernel, an ISA ceiling below AVX-512, k == 0)
 * returns BP_ERR_UNIMPLEMENTED, and cpu_fast_gemm widens to f32 while
 * packing instead.
 */
#include "gemm.h"

/* Test hook: take the VDPBF16PS route on any CPU that has the instruction
 * (not only AMD), when there is no AMX. */
bool cpu_fast_gemm_dpbf16_any_vendor;

bp_status_t cpu_fast_gemm_lowp(cpu_device_t *dev, const bp_gemm_args_t *a) {
  bp_dtype_t dt = a->a.dtype;
  if ((dt != BP_BF16 && dt != BP_F16) || a->a.shape[2] == 0) return BP_ERR_UNIMPLEMENTED;
  if (dev->isa != BP_ISA_BEST && dev->isa < BP_ISA_AVX512)
    return BP_ERR_UNIMPLEMENTED;
  if (cpu_fast_gemm_skinny_lowp_ok(dev, a)) return cpu_fast_gemm_skinny_lowp(dev, a);
  const cpu_features_t *f = cpu_features_get();
  if (!f->avx512bw || !f->avx512vl) return BP_ERR_UNIMPLEMENTED;
  if (!f->amx_bf16 || !cpu_amx_request()) {
    bool dp = f->vendor_amd || cpu_fast_gemm_dpbf16_any_vendor;
    return dt == BP_BF16 && f->avx512_bf16 && dp ? cpu_fast_gemm_dpbf16(dev, a)
                                                : BP_ERR_UNIMPLEMENTED;
  }
  if (dt == BP_F16 && !f->f16c) return BP_ERR_UNIMPLEMENTED;
  return cpu_fast_gemm_amx(dev, a);
}
