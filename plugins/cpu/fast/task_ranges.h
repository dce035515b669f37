/*
 * fast/task_ranges.h — a job's tasks split into one contiguous range per
 * worker. A worker takes its own range from the front; when that is empty
 * it takes the other ranges' tasks from their backs. Neighbouring tasks
 * stay on one worker (what it cached for one serves the next, and what
 * the tasks write stays apart from the other workers' writes), and a
 * worker slowed down by other processes still does less of the work.
 * The attention kernels (fast/attention/attention.h) and the Winograd
 * conv2d (fast/conv/conv2d_winograd.c) hand out their tasks with it.
 */
#ifndef BACKPLANE_CPU_FAST_TASK_RANGES_H
#define BACKPLANE_CPU_FAST_TASK_RANGES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Ranges at most (workers past this many share ranges). */
#define CPU_FAST_RANGES_MAX 64

typedef struct cpu_fast_ranges {
  int64_t ntasks;
  unsigned nranges;
  /* per range: tasks taken from its front (low 32 bits) and back (high) */
  uint64_t taken[CPU_FAST_RANGES_MAX];
} cpu_fast_ranges_t;

/* ntasks tasks (fewer than 2^32 a range) in ranges for `workers`. */
static inline void cpu_fast_ranges_init(cpu_fast_ranges_t *s, int64_t ntasks, int64_t workers) {
  memset(s, 0, sizeof *s);
  s->ntasks = ntasks;
  s->nranges = workers < 1                     ? 1
               : workers < CPU_FAST_RANGES_MAX ? (unsigned)workers
                                               : CPU_FAST_RANGES_MAX;
}

/* Range r's first task. */
static inline int64_t cpu_fast_ranges_start(const cpu_fast_ranges_t *s, unsigned r) {
  return (int64_t)((__int128)s->ntasks * r / s->nranges);
}

/* Takes one task of range r, from its front or its back; -1 when the
 * range is empty. */
static inline int64_t cpu_fast_ranges_take(cpu_fast_ranges_t *s, unsigned r, bool front) {
  int64_t lo = cpu_fast_ranges_start(s, r), len = cpu_fast_ranges_start(s, r + 1) - lo;
  uint64_t v = __atomic_load_n(&s->taken[r], __ATOMIC_RELAXED);
  for (;;) {
    int64_t f = (int64_t)(v & 0xffffffffu), b = (int64_t)(v >> 32);
    if (f + b >= len) return -1;
    uint64_t nv = v + (front ? 1u : (uint64_t)1 << 32);
    if (__atomic_compare_exchange_n(&s->taken[r], &v, nv, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return front ? lo + f : lo + len - 1 - b;
  }
}

/* The next task for the worker of range `mine`: its own range's front
 * first, then the others' backs; -1 when every task is taken. */
static inline int64_t cpu_fast_ranges_next(cpu_fast_ranges_t *s, unsigned mine) {
  int64_t t = -1;
  for (unsigned k = 0; k < s->nranges && t < 0; k++)
    t = cpu_fast_ranges_take(s, (mine % s->nranges + k) % s->nranges, k == 0);
  return t;
}

/* true when every task was taken (a worker that could not get its scratch
 * memory takes none, and the others take its range). */
static inline bool cpu_fast_ranges_done(const cpu_fast_ranges_t *s) {
  int64_t taken = 0;
  for (unsigned r = 0; r < s->nranges; r++) {
    uint64_t v = __atomic_load_n(&s->taken[r], __ATOMIC_RELAXED);
    taken += (int64_t)(v & 0xffffffffu) + (int64_t)(v >> 32);
  }
  return taken >= s->ntasks;
}

#endif /* BACKPLANE_CPU_FAST_TASK_RANGES_H */
