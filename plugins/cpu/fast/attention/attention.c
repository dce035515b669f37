/*
 * fast/attention/attention.c — picks the fused attention kernel for the CPU and the
 * device's ISA ceiling: a few queries per head (decode, f32 or bf16, AVX-512)
 * first, then AMX (bf16, and f32 split into three bf16 parts, when the CPU
 * has AMX-BF16 and Linux grants tile state), then AVX-512 (f32, f16, bf16:
 * the halves widened to f32, so a CPU without AMX runs bf16 at the full
 * vector width), then AVX2 + FMA + F16C (f32, f16, bf16);
 * BP_ERR_UNIMPLEMENTED elsewhere, and the threaded reference runs.
 */
#include "attention.h"
#include "plugins/cpu/fast/gemm/gemm.h"

bp_status_t cpu_fast_attention(cpu_device_t *dev, const bp_attention_args_t *a) {
  const cpu_features_t *f = cpu_features_get();
  bp_isa_level_t isa = dev->isa == BP_ISA_BEST ? BP_ISA_AVX512 : dev->isa;
  bool avx512 = f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq;
  if (isa >= BP_ISA_AVX512 && avx512 && f->fma) {
    /* a few queries per head (decode): read K and V once, in place */
    bp_status_t st = cpu_fast_attention_decode(dev, a);
    if (st != BP_ERR_UNIMPLEMENTED) return st;
  }
  bool amx = isa >= BP_ISA_AVX512 && avx512 && f->amx_bf16 && f->avx512_bf16;
  if (amx && a->q.dtype == BP_BF16 && cpu_amx_request()) {
    bp_status_t st = cpu_fast_attention_amx(dev, a);
    if (st != BP_ERR_UNIMPLEMENTED) return st;
  }
  /* f32 on the bf16 tiles, three parts a value: faster than the FMAs,
   * except causal over few keys, where the diagonal blocks' hidden
   * products are a large share of the tiles' work and the FMA kernel
   * stops each 12-row tile at its last key (docs/backend-cpu.md) */
  bool few = a->causal && a->k.rank == 4 && a->k.shape[2] <= CPU_FAST_ATTENTION_AMX_F32_MIN_CAUSAL;
  if (amx && a->q.dtype == BP_F32 && !few && cpu_amx_request()) {
    bp_status_t st = cpu_fast_attention_amx_f32(dev, a);
    if (st != BP_ERR_UNIMPLEMENTED) return st;
  }
  /* bf16 or f16 over a few queries of a group of heads (GQA) that the
   * decode kernel declined: the AVX2 kernel stacks the group's heads into
   * one block, where the AVX-512 one runs a 12-row tile per head for one
   * to four live rows and widens K and V besides (docs/backend-cpu.md) */
  bool lowp_few = a->q.dtype != BP_F32 && a->q.rank == 4 && a->k.rank == 4 &&
                  a->q.shape[2] <= CPU_FAST_ATTENTION_DECODE_MAX_SQ &&
                  a->q.shape[1] > a->k.shape[1] && f->avx2 && f->fma && f->f16c;
  if (isa >= BP_ISA_AVX512 && avx512 && !lowp_few) {
    bp_status_t st = cpu_fast_attention_avx512(dev, a);
    if (st != BP_ERR_UNIMPLEMENTED) return st;
  }
  if (isa >= BP_ISA_AVX2 && f->avx2 && f->fma && f->f16c) return cpu_fast_attention_avx2(dev, a);
  return BP_ERR_UNIMPLEMENTED;
}
