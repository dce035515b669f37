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

/* Fused attention for bf16 q, k, v and out on AMX tiles
 * (fast/attention/attention_amx.c), f32 softmax and accumulation. Returns
 * BP_ERR_UNIMPLEMENTED for what it does not cover (other dtypes, causal
 * attention over values that are not all finite), BP_OK otherwise unless
 * per-thread scratch could not be allocated. The caller has checked
 * AMX-BF16, AVX-512 (F, BW, VL, DQ), AVX512-BF16 and cpu_amx_request(). Thread-safe; runs
 * on dev->pool. */
CPU_HIDDEN bp_status_t cpu_fast_attention_amx(cpu_device_t *dev, const bp_attention_args_t *a);

#endif /* BACKPLANE_CPU_FAST_ATTENTION_H */
