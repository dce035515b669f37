/*
 * fast/attention/attention.h — the per-ISA fused attention kernels that
 * fast/attention/attention.c chooses between. Each is compiled with its own -m flags
 * (fast.mk) and must only be called once the CPU features were checked.
 */
#ifndef BACKPLANE_CPU_FAST_ATTENTION_H
#define BACKPLANE_CPU_FAST_ATTENTION_H

#include "plugins/cpu/cpu.h"

/* Fused attention on AVX2 + FMA + F16C (fast/attention/attention_avx2.c): q, k, v and
 * out each f32, f16 or bf16 (f32 arithmetic), any strides. Returns
 * BP_ERR_UNIMPLEMENTED for what it does not cover (f64), BP_OK otherwise
 * unless per-thread scratch could not be allocated. Thread-safe; runs on
 * dev->pool. */
CPU_HIDDEN bp_status_t cpu_fast_attention_avx2(cpu_device_t *dev, const bp_attention_args_t *a);

#endif /* BACKPLANE_CPU_FAST_ATTENTION_H */
