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

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
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
  bool vendor_amd; /* CPUID vendor "AuthenticAMD": the bf16 GEMM's choice of
                      VDPBF16PS over widening (fast/gemm/gemm_lowp.c) */
} cpu_features_t;

/* Detected once (CPUID and the OS's XSAVE state), then cached. */
CPU_HIDDEN const cpu_features_t *cpu_features_get(void);
/* The best ISA level both the CPU and the OS support. */
CPU_HIDDEN bp_isa_level_t cpu_isa_detect(void);
/* Asks the kernel for AMX tile state (arch_prctl); true when granted. */
CPU_HIDDEN bool cpu_amx_request(void);
/* Logical CPUs this process may run on. */
CPU_HIDDEN unsigned cpu_count_online(void);

/* ---- topology (topology.c) ---------------------------------------------- */
typedef struct cpu_topology {
  bool from_hwloc; /* false: hwloc absent, sysconf and the affinity mask */
  unsigned packages, cores, pus, numa_nodes; /* 0: unknown */
  uint64_t l1d, l2, l3; /* bytes of one cache instance, 0: unknown */
} cpu_topology_t;

/* Discovered once (hwloc through dlopen, else sysconf), then cached; the
 * first call is the slow one (init makes it). Thread-safe. */
CPU_HIDDEN const cpu_topology_t *cpu_topology_get(void);
/* The sizes in bytes of one L1 data, L2 and L3 cache instance (0 when
 * unknown), for kernels that block for the caches. Any pointer may be NULL.
 * Thread-safe. */
CPU_HIDDEN void cpu_cache_sizes(uint64_t *out_l1d, uint64_t *out_l2,
                                uint64_t *out_l3);
/* Discovers afresh, through hwloc when use_hwloc and it loads (returns true),
 * otherwise through sysconf (returns false). Uncached: for tests. */
CPU_HIDDEN bool cpu_topology_query(bool use_hwloc, cpu_topology_t *out);
/* The logical CPUs of each core this process may run on (its affinity
 * mask), one set per core in topology order: hwloc's core objects, else
 * sysfs's core_cpus_list / thread_siblings_list, else one set per allowed
 * CPU. *out is valid for the life of the process; returns the count (>= 1
 * unless nothing could be read, then 0). Thread-safe. */
CPU_HIDDEN unsigned cpu_core_sets(const cpu_set_t **out);
/* "1 package, 2 cores, L1d 32 KiB, L2 2 MiB, L3 32 MiB, 1 NUMA node". */
CPU_HIDDEN void cpu_topology_describe(const cpu_topology_t *t, char *buf,
                                      size_t cap);

/* ---- thread pool (threadpool.c) ----------------------------------------- */
typedef struct cpu_pool cpu_pool_t;
/* Work item: runs task indices [begin, end) on worker `worker`. */
typedef void (*cpu_pool_fn)(void *ctx, int64_t begin, int64_t end,
                            unsigned worker);
/* Creates a pool of n workers in all (the calling thread counts as one, so
 * n - 1 threads are started). n == 1 runs everything inline. */
CPU_HIDDEN cpu_pool_t *cpu_pool_create(unsigned n);
CPU_HIDDEN void cpu_pool_destroy(cpu_pool_t *pool);
/* Pins started worker i (1 .. n - 1) to the logical CPUs of core i of the
 * nsets in sets (wrapping around when there are more workers than cores).
 * The calling thread, worker 0, belongs to the application and is never
 * pinned: core 0 is left for it, and a run that finds the caller on a
 * worker's core moves that worker to the core no worker holds. Returns how
 * many workers were pinned. */
CPU_HIDDEN unsigned cpu_pool_pin(cpu_pool_t *pool, const cpu_set_t *sets,
                                 unsigned nsets);
/* Worker i's CPU affinity (i >= 1) into *out; false for worker 0 or when
 * it cannot be read. For tests. */
CPU_HIDDEN bool cpu_pool_worker_affinity(cpu_pool_t *pool, unsigned i,
                                         cpu_set_t *out);
CPU_HIDDEN unsigned cpu_pool_size(const cpu_pool_t *pool);
/* Splits [0, ntasks) into contiguous chunks of at least grain tasks, runs
 * them on the workers and returns when all are done. Safe to call from
 * several threads at once (calls are serialised); a call from inside a task
 * runs inline. */
CPU_HIDDEN void cpu_pool_run(cpu_pool_t *pool, int64_t ntasks, int64_t grain,
                             cpu_pool_fn fn, void *ctx);

/* ---- devices ------------------------------------------------------------ */
/* Size thresholds of the fast paths, per device. Zero in a field means the
 * default (the CPU_FAST_* constants beside the code that reads it), which
 * is what every opened device gets; the cpu_fast tests set them on devices
 * of their own to reach paths that only large problems take. Read while an
 * op runs, never written by the plugin. */
typedef struct cpu_fast_tuning {
  int64_t nt_min_bytes;  /* outputs this large are streamed (fast/vec.h) */
  int64_t gemm_band_floats; /* f32 band of an f16 / bf16 C (fast/gemm/gemm.c) */
  int64_t gemm_row_split_panels; /* MR panels per worker before a GEMM
                                    splits by rows (fast/gemm/gemm.c) */
  int64_t conv_winograd_min_pixels; /* output pixels (all images) before a
                                       3x3 layer takes Winograd
                                       (fast/conv/conv2d_winograd.c) */
  int64_t conv_pointwise_min_pixels; /* pixels of a plane before a 1x1
                                        layer takes the pointwise route
                                        (fast/conv/conv2d_pointwise.c) */
} cpu_fast_tuning_t;

typedef struct cpu_device {
  bool reference;   /* the scalar reference device */
  unsigned threads;
  bp_isa_level_t isa; /* detected, capped by the open config */
  bool allow_reduced_precision;
  uint64_t memory_limit, memory_used; /* memory_used: __atomic builtins */
  cpu_pool_t *pool;
  cpu_fast_tuning_t tune; /* zeroed at open: the defaults */
} cpu_device_t;

/* ---- fast paths (fast/), one per line of BP_OP_TABLE: they return
 * BP_ERR_UNIMPLEMENTED when a case is not covered ------------------------- */
#define CPU__DECLARE_FAST(E, name, args_t, ...)                                \
  CPU_HIDDEN bp_status_t cpu_fast_##name(cpu_device_t *dev, const args_t *a);
BP_OP_TABLE(CPU__DECLARE_FAST)
BP_OP_TABLE_MODEL(CPU__DECLARE_FAST)
BP_OP_TABLE_QUANT(CPU__DECLARE_FAST)
#undef CPU__DECLARE_FAST

#define CPU__DECLARE_REF(E, name, args_t, ...)                                 \
  CPU_HIDDEN bp_status_t cpu_ref_##name(const args_t *a);
BP_OP_TABLE(CPU__DECLARE_REF)
BP_OP_TABLE_MODEL(CPU__DECLARE_REF)
BP_OP_TABLE_QUANT(CPU__DECLARE_REF)
#undef CPU__DECLARE_REF

#endif /* BACKPLANE_CPU_H */
