/*
 * fast/attention/attention.h — the per-ISA fused attention kernels that
 * fast/attention/attention.c chooses between. Each is compiled with its own -m flags
 * (fast.mk) and must only be called once the CPU features were checked.
 */
#ifndef BACKPLANE_CPU_FAST_ATTENTION_H
#define BACKPLANE_CPU_FAST_ATTENTION_H

#include <stdbool.h>
#include <string.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/fast/task_ranges.h"

/* The fused kernels' shared setup, static inline because each kernel is
 * compiled with its own ISA flags. */

/* Copies q's, k's, v's and out's four strides (elements) into the job. */
static inline void cpu_fast_attention_strides(const bp_attention_args_t *a, int64_t sq[4],
                                              int64_t sk[4], int64_t sv[4], int64_t so[4]) {
  memcpy(sq, a->q.strides, 4 * sizeof *sq);
  memcpy(sk, a->k.strides, 4 * sizeof *sk);
  memcpy(sv, a->v.strides, 4 * sizeof *sv);
  memcpy(so, a->out.strides, 4 * sizeof *so);
}

/* The tasks of a job whose tasks are (batch, head, pair of query blocks),
 * t = head * per + c, in one contiguous range per worker
 * (fast/task_ranges.h). Consecutive tasks share a head, so a worker keeps
 * the kv head it packed for the next task, where one shared counter had
 * every worker take every head (and pack it) in turn. */
typedef struct cpu_fast_att_sched {
  cpu_fast_ranges_t ranges;
  int64_t per, Hq, nqb;
  int causal;
} cpu_fast_att_sched_t;

static inline void cpu_fast_att_sched_init(cpu_fast_att_sched_t *s, int64_t ntasks, int64_t per,
                                           int64_t Hq, int64_t nqb, int causal) {
  cpu_fast_ranges_init(&s->ranges, ntasks, 1);
  s->per = per, s->Hq = Hq, s->nqb = nqb, s->causal = causal;
}

/* Takes the next task for the worker of range `mine`: a causal job pairs
 * block c with block nqb - 1 - c so every task has about the same work.
 * Sets b, h and blocks; returns how many of blocks to run (1 or 2), 0 when
 * no task is left. */
static inline int cpu_fast_att_sched_next(cpu_fast_att_sched_t *s, unsigned mine, int64_t *b,
                                          int64_t *h, int64_t blocks[2]) {
  int64_t t = cpu_fast_ranges_next(&s->ranges, mine);
  if (t < 0) return 0;
  int64_t bh = t / s->per, c = t % s->per;
  *b = bh / s->Hq, *h = bh % s->Hq;
  blocks[0] = c, blocks[1] = s->nqb - 1 - c;
  return s->causal && blocks[1] != c ? 2 : 1;
}

/* true when every task was taken (fast/task_ranges.h). */
static inline bool cpu_fast_att_sched_done(const cpu_fast_att_sched_t *s) {
  return cpu_fast_ranges_done(&s->ranges);
}

/* How many workers run ntasks tasks: one (the calling thread) when one
 * would do or work is at most min_work, as waking the pool costs more than
 * a small call gains. */
static inline int64_t cpu_fast_attention_workers(cpu_device_t *dev, int64_t ntasks, double work,
                                                 double min_work) {
  unsigned threads = dev->pool ? cpu_pool_size(dev->pool) : 1;
  int64_t workers = ntasks < (int64_t)threads ? ntasks : threads;
  return workers > 1 && work > min_work ? workers : 1;
}

/* Runs ntasks tasks of fn over dev->pool, one task at a time per worker,
 * or all on the calling thread (cpu_fast_attention_workers). */
static inline void cpu_fast_attention_run(cpu_device_t *dev, int64_t ntasks, double work,
                                          double min_work, cpu_pool_fn fn, void *job) {
  int64_t workers = cpu_fast_attention_workers(dev, ntasks, work, min_work);
  if (workers > 1)
    cpu_pool_run(dev->pool, workers, 1, fn, job);
  else
    fn(job, 0, 1, 0);
}

/* cpu_fast_attention_run for a job whose tasks s hands out: fn's chunk
 * begin (chunk i runs on worker i) is the range its worker takes first. */
static inline void cpu_fast_attention_run_sched(cpu_device_t *dev, cpu_fast_att_sched_t *s,
                                                double work, double min_work, cpu_pool_fn fn,
                                                void *job) {
  int64_t workers = cpu_fast_attention_workers(dev, s->ranges.ntasks, work, min_work);
  s->ranges.nranges = workers < CPU_FAST_RANGES_MAX ? (unsigned)workers : CPU_FAST_RANGES_MAX;
  if (workers > 1)
    cpu_pool_run(dev->pool, workers, 1, fn, job);
  else
    fn(job, 0, 1, 0);
}

/* Fused attention on AVX2 + FMA + F16C (fast/attention/attention_avx2.c): q, k, v and
 * out each f32, f16 or bf16 (f32 arithmetic), any strides. Returns
 * BP_ERR_UNIMPLEMENTED for what it does not cover (f64), BP_OK otherwise
 * unless per-thread scratch could not be allocated. Thread-safe; runs on
 * dev->pool. */
CPU_HIDDEN bp_status_t cpu_fast_attention_avx2(cpu_device_t *dev, const bp_attention_args_t *a);

/* Attention for at most CPU_FAST_ATTENTION_DECODE_MAX_SQ queries per head
 * (fast/attention/attention_decode.c): q, k, v and out all f32 or all
 * bf16, keys and values with contiguous rows, no additive terms; each
 * query row reads its keys and values once, in place. Returns
 * BP_ERR_UNIMPLEMENTED for what it does not cover. The caller has checked
 * AVX-512 (F, BW, VL, DQ) and FMA. Thread-safe; runs on dev->pool. */
#define CPU_FAST_ATTENTION_DECODE_MAX_SQ 4
CPU_HIDDEN bp_status_t cpu_fast_attention_decode(cpu_device_t *dev, const bp_attention_args_t *a);

/* Fused attention for bf16 q, k, v and out on AMX tiles
 * (fast/attention/attention_amx.c), f32 softmax and accumulation. Returns
 * BP_ERR_UNIMPLEMENTED for what it does not cover (other dtypes, causal
 * attention over values that are not all finite), BP_OK otherwise unless
 * per-thread scratch could not be allocated. The caller has checked
 * AMX-BF16, AVX-512 (F, BW, VL, DQ), AVX512-BF16 and cpu_amx_request(). Thread-safe; runs
 * on dev->pool. */
CPU_HIDDEN bp_status_t cpu_fast_attention_amx(cpu_device_t *dev, const bp_attention_args_t *a);

/* Fused attention for f32 q, k, v and out on the bf16 AMX tiles at f32
 * accuracy, each f32 value split into three bf16 parts
 * (fast/attention/attention_amx_f32.c). Returns BP_ERR_UNIMPLEMENTED for
 * what it does not cover (other dtypes, masks beyond causal, values that
 * are not finite or reach 2^127), BP_OK otherwise unless per-thread scratch
 * could not be allocated. The caller has checked what
 * cpu_fast_attention_amx needs. Thread-safe; runs on dev->pool. */
CPU_HIDDEN bp_status_t cpu_fast_attention_amx_f32(cpu_device_t *dev, const bp_attention_args_t *a);
/* cpu_fast_attention leaves causal attention over at most this many keys
 * to the AVX-512 FMA kernel (its P V keeps f32's full accuracy, which the
 * split's two-part weights do not; a short causal call's first rows are
 * one weight of exactly 1, and users read them). */
#define CPU_FAST_ATTENTION_AMX_F32_MIN_CAUSAL 512

#endif /* BACKPLANE_CPU_FAST_ATTENTION_H */
