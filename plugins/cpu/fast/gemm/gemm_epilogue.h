/*
 * fast/gemm/gemm_epilogue.h — the GEMM epilogue of ABI 1.5 (bias and
 * activation) on the "cpu" device's fast path.
 */
#ifndef BACKPLANE_CPU_FAST_GEMM_EPILOGUE_H
#define BACKPLANE_CPU_FAST_GEMM_EPILOGUE_H

#include "plugins/cpu/cpu.h"

/* Whether a uses the epilogue (a bias or an activation). */
static inline bool cpu_gemm_has_epilogue(const bp_gemm_args_t *a) {
  return a->bias.rank != 0 || (a->flags & BP_GEMM_FLAG_ACTIVATION) != 0;
}

/* Whether op is an activation the epilogue takes, and its value at x, as
 * the reference computes it. */
CPU_HIDDEN bool cpu_fast_gemm_act_known(int op);
CPU_HIDDEN double cpu_fast_gemm_act_value(int op, double x);

/* C = act(alpha A·B + beta C + bias): the fast GEMM, then the vectorised
 * add and unary kernels over C in place, within the same call.
 * BP_ERR_UNIMPLEMENTED (nothing written) when the fast GEMM declines the
 * shape: the reference then runs the whole op. */
CPU_HIDDEN bp_status_t cpu_fast_gemm_epilogue(cpu_device_t *dev, const bp_gemm_args_t *a);

#endif /* BACKPLANE_CPU_FAST_GEMM_EPILOGUE_H */
