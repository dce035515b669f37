/*
 * fast_todo.c — ops that have no fast path yet. Each returns
 * BP_ERR_UNIMPLEMENTED, which makes the "cpu" device run the reference
 * implementation. Entries move out of this file as fast kernels land.
 */
#include "cpu.h"

#define CPU__NO_FAST_PATH(name, args_t)                                        \
  bp_status_t cpu_fast_##name(cpu_device_t *dev, const args_t *a) {            \
    (void)dev;                                                                 \
    (void)a;                                                                   \
    return BP_ERR_UNIMPLEMENTED;                                               \
  }
CPU_FAST_OPS(CPU__NO_FAST_PATH)
