/*
 * ref/ref.h — how the scalar reference kernels (ref_*.c) are split into work.
 *
 * Each reference op is written as two functions:
 *   int64_t cpu_ref_<op>_tasks(const args_t *a)
 *       the number of independent tasks (rows, planes, elements) the op
 *       splits into, or a negative bp_status_t when the arguments ask for
 *       something the reference does not do;
 *   bp_status_t cpu_ref_<op>_range(const args_t *a, int64_t begin,
 *                                  int64_t end)
 *       runs tasks [begin, end) (failing only when scratch memory runs
 *       out). Distinct ranges write disjoint outputs, so ops.c may run
 *       ranges on different threads.
 * cpu_ref_<op>(a), declared in cpu.h, runs all tasks on the calling thread
 * (the "cpu-ref" device); ops.c also hands ranges to the pool for "cpu".
 * The grain is the smallest number of tasks worth sending to a thread.
 */
#ifndef BACKPLANE_CPU_REF_H
#define BACKPLANE_CPU_REF_H

#include "plugins/cpu/cpu.h"

#define CPU__DECLARE_SPLIT(E, name, args_t, ...)                               \
  CPU_HIDDEN int64_t cpu_ref_##name##_tasks(const args_t *a);                  \
  CPU_HIDDEN int64_t cpu_ref_##name##_grain(const args_t *a);                  \
  CPU_HIDDEN bp_status_t cpu_ref_##name##_range(const args_t *a,               \
                                                int64_t begin, int64_t end);
BP_OP_TABLE(CPU__DECLARE_SPLIT)
BP_OP_TABLE_MODEL(CPU__DECLARE_SPLIT)
BP_OP_TABLE_QUANT(CPU__DECLARE_SPLIT)
#undef CPU__DECLARE_SPLIT

/* Elements per task chunk for cheap per-element work. */
#define CPU_REF_ELEMENT_GRAIN 16384

/* Grain for tasks costing `work` scalar operations each: about 64k ops. */
static inline int64_t cpu_ref_grain_for(int64_t work) {
  return work >= 65536 ? 1 : 65536 / (work > 0 ? work : 1);
}

#endif /* BACKPLANE_CPU_REF_H */
