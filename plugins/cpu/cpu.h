/*
 * cpu.h — internals shared by the files of backend-cpu.so.
 *
 * The plugin exposes two devices: "cpu" (threaded, vectorised kernels chosen
 * at run time by CPU features) and "cpu-ref" (the plain scalar reference that
 * every other backend is tested against). Each op of the "cpu" device first
 * tries its fast path (cpu_fast_*), which returns BP_ERR_UNIMPLEMENTED for
 * any case it does not cover; the op then runs the reference (cpu_ref_*),
 * split over the thread pool where that is safe.
 */
#ifndef BACKPLANE_CPU_H
#define BACKPLANE_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-api.h"

#define CPU_HIDDEN __attribute__((visibility("hidden")))

/* ---- CPU features (cpu_features.c) ------------------------------------- */
typedef struct cpu_features {
  bool avx2, fma, f16c;
  bool avx512f, avx512bw, avx512vl, avx512dq;
  bool avx512_bf16, avx512_fp16, avx512_vnni;
  bool amx_tile, amx_bf16, amx_int8; /* CPUID bits; AMX also needs the OS
                                        permission cpu_amx_request() asks */
  char brand[64];
} cpu_features_t;

/* Detected once (CPUID and the OS's XSAVE state), then cached. */
CPU_HIDDEN const cpu_features_t *cpu_features_get(void);
/* The best ISA level both the CPU and the OS support. */
CPU_HIDDEN bp_isa_level_t cpu_isa_detect(void);
/* Asks the kernel for AMX tile state (arch_prctl); true when granted. */
CPU_HIDDEN bool cpu_amx_request(void);
/* Logical CPUs this process may run on. */
CPU_HIDDEN unsigned cpu_count_online(void);

/* ---- thread pool (threadpool.c) ----------------------------------------- */
typedef struct cpu_pool cpu_pool_t;
/* Work item: runs task indices [begin, end) on worker `worker`. */
typedef void (*cpu_pool_fn)(void *ctx, int64_t begin, int64_t end,
                            unsigned worker);
/* Creates a pool of n workers in all (the calling thread counts as one, so
 * n - 1 threads are started). n == 1 runs everything inline. */
CPU_HIDDEN cpu_pool_t *cpu_pool_create(unsigned n);
CPU_HIDDEN void cpu_pool_destroy(cpu_pool_t *pool);
CPU_HIDDEN unsigned cpu_pool_size(const cpu_pool_t *pool);
/* Splits [0, ntasks) into contiguous chunks of at least grain tasks, runs
 * them on the workers and returns when all are done. Safe to call from
 * several threads at once (calls are serialised); a call from inside a task
 * runs inline. */
CPU_HIDDEN void cpu_pool_run(cpu_pool_t *pool, int64_t ntasks, int64_t grain,
                             cpu_pool_fn fn, void *ctx);

/* ---- devices ------------------------------------------------------------ */
typedef struct cpu_device {
  bool reference;   /* the scalar reference device */
  unsigned threads;
  bp_isa_level_t isa; /* detected, capped by the open config */
  bool allow_reduced_precision;
  uint64_t memory_limit, memory_used; /* memory_used: __atomic builtins */
  cpu_pool_t *pool;
} cpu_device_t;

/* ---- fast paths (fast_*.c): return BP_ERR_UNIMPLEMENTED when not covered */
#define CPU_FAST_OPS(X)                                                        \
  X(gemm, bp_gemm_args_t)                                                      \
  X(gemv, bp_gemv_args_t)                                                      \
  X(conv2d, bp_conv2d_args_t)                                                  \
  X(pool2d, bp_pool2d_args_t)                                                  \
  X(batch_norm, bp_batch_norm_args_t)                                          \
  X(layer_norm, bp_norm_args_t)                                                \
  X(rms_norm, bp_norm_args_t)                                                  \
  X(softmax, bp_softmax_args_t)                                                \
  X(attention, bp_attention_args_t)                                            \
  X(adam, bp_adam_args_t)                                                      \
  X(unary, bp_unary_args_t)                                                    \
  X(binary, bp_binary_args_t)                                                  \
  X(reduce, bp_reduce_args_t)                                                  \
  X(fill, bp_fill_args_t)                                                      \
  X(copy, bp_copy_args_t)                                                      \
  X(cast, bp_copy_args_t)                                                      \
  X(random, bp_random_args_t)

#define CPU__DECLARE_FAST(name, args_t)                                        \
  CPU_HIDDEN bp_status_t cpu_fast_##name(cpu_device_t *dev, const args_t *a);
CPU_FAST_OPS(CPU__DECLARE_FAST)
#undef CPU__DECLARE_FAST

#define CPU__DECLARE_REF(name, args_t)                                         \
  CPU_HIDDEN bp_status_t cpu_ref_##name(const args_t *a);
CPU_FAST_OPS(CPU__DECLARE_REF)
#undef CPU__DECLARE_REF

#endif /* BACKPLANE_CPU_H */
