/*
 * ops.c — the op entry points of the descriptor.
 *
 * Every op follows the same path, generated once below for all of them:
 *  1. refuse an argument struct smaller than this plugin's ABI 1.0 layout
 *     (we would read past what the caller gave us);
 *  2. ask the reference how many tasks the op splits into, which also
 *     catches what the reference does not do (a negative status); zero
 *     tasks means a zero-size output and nothing to do;
 *  3. "cpu-ref": run every task on the calling thread (it has no pool);
 *     "cpu": try cpu_fast_<op> (plugins/cpu/fast/); on BP_ERR_UNIMPLEMENTED split the
 *     reference's tasks over the device's pool. Tasks write disjoint
 *     outputs, so the split changes nothing in the results.
 * Streams need no handling: ops run synchronously, in call order.
 */
#include "plugin.h"
#include "plugins/cpu/ref/ref.h"

/* One split op: the args, the range function, the first failure. */
typedef struct split_ctx {
  const void *args;
  bp_status_t (*range)(const void *args, int64_t begin, int64_t end);
  int status; /* first failure, written with __atomic */
} split_ctx_t;

static void split_task(void *vctx, int64_t begin, int64_t end,
                       unsigned worker) {
  (void)worker;
  split_ctx_t *ctx = vctx;
  bp_status_t st = ctx->range(ctx->args, begin, end);
  if (st != BP_OK) {
    int ok = BP_OK;
    __atomic_compare_exchange_n(&ctx->status, &ok, (int)st, false,
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  }
}

static bp_status_t
run_split(cpu_device_t *dev, int64_t tasks, int64_t grain, const void *args,
          bp_status_t (*range)(const void *, int64_t, int64_t)) {
  split_ctx_t ctx = {args, range, BP_OK};
  cpu_pool_run(dev->pool, tasks, grain, split_task, &ctx);
  if (ctx.status == BP_ERR_OUT_OF_MEMORY)
    cpu_set_error("cpu: out of host memory for an op's scratch space");
  return (bp_status_t)ctx.status;
}

static bp_status_t args_too_small(const char *op, uint32_t got, size_t want) {
  cpu_set_error("cpu: %s arguments have struct_size %u, need at least %zu", op,
                got, want);
  return BP_ERR_INVALID_ARGUMENT;
}

static bp_status_t refused(const char *op, int64_t status) {
  cpu_set_error("cpu: %s: the reference does not implement these arguments",
                op);
  return (bp_status_t)status;
}

/* The range functions take their own args type; the split context stores
 * them type-erased through this adapter, one per op. */
#define CPU__RANGE_ADAPTER(E, name, args_t, ...)                               \
  static bp_status_t range_##name(const void *a, int64_t begin, int64_t end) { \
    return cpu_ref_##name##_range((const args_t *)a, begin, end);              \
  }
BP_OP_TABLE(CPU__RANGE_ADAPTER)
BP_OP_TABLE_MODEL(CPU__RANGE_ADAPTER)
BP_OP_TABLE_QUANT(CPU__RANGE_ADAPTER)
#undef CPU__RANGE_ADAPTER

/* cpu_ref_<op> (cpu.h): the whole op, single-threaded. */
#define CPU__REF_WHOLE(E, name, args_t, ...)                                   \
  bp_status_t cpu_ref_##name(const args_t *a) {                                \
    int64_t tasks = cpu_ref_##name##_tasks(a);                                 \
    if (tasks <= 0)                                                            \
      return (bp_status_t)tasks;                                               \
    return cpu_ref_##name##_range(a, 0, tasks);                                \
  }
BP_OP_TABLE(CPU__REF_WHOLE)
BP_OP_TABLE_MODEL(CPU__REF_WHOLE)
BP_OP_TABLE_QUANT(CPU__REF_WHOLE)
#undef CPU__REF_WHOLE

#define CPU__OP_ENTRY(E, name, args_t, ...)                                    \
  bp_status_t cpu_op_##name(bp_plugin_device_t *device,                        \
                            bp_plugin_stream_t *stream, const args_t *a) {     \
    (void)stream;                                                              \
    cpu_device_t *dev = cpu_device(device);                                    \
    if (!dev || !a)                                                            \
      return BP_ERR_INVALID_ARGUMENT;                                          \
    if (a->struct_size < sizeof(args_t))                                       \
      return args_too_small(#name, a->struct_size, sizeof(args_t));            \
    int64_t tasks = cpu_ref_##name##_tasks(a);                                 \
    if (tasks < 0)                                                             \
      return refused(#name, tasks);                                            \
    if (tasks == 0)                                                            \
      return BP_OK;                                                            \
    if (!dev->reference) {                                                     \
      bp_status_t st = cpu_fast_##name(dev, a);                                \
      if (st != BP_ERR_UNIMPLEMENTED)                                          \
        return st;                                                             \
    }                                                                          \
    return run_split(dev, tasks, cpu_ref_##name##_grain(a), a, range_##name);  \
  }
BP_OP_TABLE(CPU__OP_ENTRY)
BP_OP_TABLE_MODEL(CPU__OP_ENTRY)
BP_OP_TABLE_QUANT(CPU__OP_ENTRY)
#undef CPU__OP_ENTRY
