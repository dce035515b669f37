/*
 * fast/todo.c — ops that have no fast path yet. Each returns
 * BP_ERR_UNIMPLEMENTED, which makes the "cpu" device run the reference
 * implementation. Entries move out of this file as fast kernels land.
 */
#include "plugins/cpu/cpu.h"

#define CPU__NO_FAST_PATH(name, args_t)                                        \
  bp_status_t cpu_fast_##name(cpu_device_t *dev, const args_t *a) {            \
    (void)dev;                                                                 \
    (void)a;                                                                   \
    return BP_ERR_UNIMPLEMENTED;                                               \
  }

#define CPU_FAST_TODO(X)                                                       \
  X(pool2d, bp_pool2d_args_t)                                                  \
  X(adam, bp_adam_args_t)                                                      \
  X(random, bp_random_args_t)                                                  \
  X(arange, bp_arange_args_t)
CPU_FAST_TODO(CPU__NO_FAST_PATH)
