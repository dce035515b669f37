/*
 * fast_attention.c — picks the attention kernel for the CPU and ISA ceiling.
 * Only an AVX-512 kernel exists; elsewhere the threaded reference runs.
 */
#include "fast_gemm.h"

bp_status_t cpu_fast_attention(cpu_device_t *dev,
                               const bp_attention_args_t *a) {
  const cpu_features_t *f = cpu_features_get();
  bool avx512 = dev->isa == BP_ISA_BEST || dev->isa >= BP_ISA_AVX512;
  if (!avx512 || !f->avx512f || !f->avx512bw || !f->avx512vl || !f->avx512dq)
    return BP_ERR_UNIMPLEMENTED;
  return fast_attention_avx512(dev, a);
}
