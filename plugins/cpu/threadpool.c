/*
 * threadpool.c — the persistent worker pool behind the "cpu" device.
 *
 * A pool of n workers starts n - 1 threads once, at device open; the thread
 * that calls cpu_pool_run is worker 0. Threads are never created per call:
 * a call publishes one job (fn, ctx, the chunking), bumps a generation
 * counter and wakes the workers, runs its own chunk and waits until every
 * chunk is done.
 *
 * Chunking is static and deterministic: [0, ntasks) is cut into at most n
 * contiguous chunks of at least `grain` tasks, and chunk i always runs on
 * worker i. That keeps results independent of scheduling (a reduction that
 * sums per-worker partials gives the same bits every run) and lets callers
 * keep per-worker scratch indexed by the worker argument.
 *
 * Between jobs a worker first spins for up to POOL_SPIN_NS, watching the
 * generation counter, and only then sleeps on the condition variable; the
 * caller waits for the last chunk the same way. Waking a sleeping thread
 * costs tens of microseconds on a VM (an inter-processor interrupt through
 * the hypervisor), which a call of a few hundred microseconds cannot
 * afford when calls come back to back. Pools with more workers than CPUs
 * never spin (a spinning worker would hold a CPU a working one needs).
 *
 * Workers may be pinned, one per core (cpu_pool_pin, from the device's
 * topology): a GEMM block sized for one core's L2 then stays with it. The
 * calling thread belongs to the application and is never pinned, so the
 * scheduler may well run it on a pinned worker's core (it has no reason to
 * move it when the other cores are busy, and a pinned worker cannot be
 * moved): the two then take turns on one CPU for the whole call while the
 * core left for the caller runs something else. So each run first looks
 * where the caller is (sched_getcpu, no system call) and, when it sits on
 * a worker's core, moves that worker to the core no worker holds.
 *
 * Calls from several threads are serialised by run_lock. A call made from
 * inside a task (of any pool) runs inline on the calling worker, which both
 * avoids a deadlock on run_lock and keeps nested parallelism from
 * oversubscribing the machine.
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu.h"

struct cpu_pool {
  unsigned size;            /* workers, including the calling thread */
  pthread_t *threads;       /* size - 1 started threads */
  unsigned started;         /* how many of them were created successfully */
  pthread_mutex_t run_lock; /* serialises cpu_pool_run callers */
  pthread_mutex_t lock;     /* guards everything below */
  pthread_cond_t wake;      /* workers wait here for a new generation */
  pthread_cond_t done;      /* the caller waits here for pending == 0 */
  uint64_t generation; /* written under lock, atomically (spinners read it) */
  unsigned pending; /* chunks of the current job not yet finished (ditto) */
  int shutting_down;  /* (ditto) */
  bool spin;          /* spin before sleeping (no more workers than CPUs) */
  /* The current job, valid while pending > 0. */
  cpu_pool_fn fn;
  void *ctx;
  int64_t ntasks;
  unsigned nchunks;
  /* Pinning (cpu_pool_pin): the core sets, and which one each started
   * worker holds (held[i - 1] for worker i); read and changed by runs
   * only, under run_lock. */
  cpu_set_t *sets;
  unsigned nsets;
  unsigned *held;
};

typedef struct worker_arg {
  cpu_pool_t *pool;
  unsigned index;
} worker_arg_t;

/* Set while this thread runs a task, so nested calls run inline. */
static _Thread_local int tls_in_task;
static _Thread_local unsigned tls_worker;

#define POOL_SPIN_NS 100000 /* 100 us */

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Spins up to POOL_SPIN_NS while *word == value; true when it changed. */
static bool spin_while_u64(const uint64_t *word, uint64_t value, const int *stop) {
  uint64_t until = now_ns() + POOL_SPIN_NS;
  for (;;) {
    for (int i = 0; i < 256; i++) {
      if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != value ||
          __atomic_load_n(stop, __ATOMIC_RELAXED))
        return true;
      _mm_pause();
    }
    if (now_ns() > until) return false;
  }
}

static void spin_until_zero(const unsigned *word) {
  uint64_t until = now_ns() + POOL_SPIN_NS;
  for (;;) {
    for (int i = 0; i < 256; i++) {
      if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == 0) return;
      _mm_pause();
    }
    if (now_ns() > until) return;
  }
}

static void chunk_bounds(const cpu_pool_t *p, unsigned chunk, int64_t *begin,
                         int64_t *end) {
  /* Even split; the first (ntasks % nchunks) chunks get one extra task. */
  int64_t base = p->ntasks / p->nchunks, extra = p->ntasks % p->nchunks;
  int64_t c = chunk;
  *begin = c * base + (c < extra ? c : extra);
  *end = *begin + base + (c < extra ? 1 : 0);
}

static void run_chunk(cpu_pool_t *p, unsigned chunk) {
  int64_t begin, end;
  chunk_bounds(p, chunk, &begin, &end);
  tls_in_task = 1;
  tls_worker = chunk;
  p->fn(p->ctx, begin, end, chunk);
  tls_in_task = 0;
}

static void *worker_main(void *varg) {
  worker_arg_t *arg = varg;
  cpu_pool_t *p = arg->pool;
  unsigned index = arg->index;
  free(arg);
  uint64_t seen = 0;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    if (p->spin && p->generation == seen && !p->shutting_down) {
      pthread_mutex_unlock(&p->lock);
      spin_while_u64(&p->generation, seen, &p->shutting_down);
      pthread_mutex_lock(&p->lock);
    }
    while (p->generation == seen && !p->shutting_down)
      pthread_cond_wait(&p->wake, &p->lock);
    if (p->shutting_down)
      break;
    seen = p->generation;
    if (index >= p->nchunks)
      continue; /* this job has fewer chunks than workers */
    pthread_mutex_unlock(&p->lock);
    run_chunk(p, index);
    pthread_mutex_lock(&p->lock);
    if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_RELEASE) == 0)
      pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

cpu_pool_t *cpu_pool_create(unsigned n) {
  cpu_pool_t *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->size = n ? n : 1;
  p->spin = p->size <= cpu_count_online();
  pthread_mutex_init(&p->run_lock, NULL);
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  if (p->size > 1) {
    p->threads = calloc(p->size - 1, sizeof *p->threads);
    if (!p->threads)
      goto fail;
  }
  for (unsigned i = 1; i < p->size; i++) {
    worker_arg_t *arg = malloc(sizeof *arg);
    if (!arg)
      goto fail;
    arg->pool = p;
    arg->index = i;
    if (pthread_create(&p->threads[i - 1], NULL, worker_main, arg) != 0) {
      free(arg);
      goto fail;
    }
    p->started++;
  }
  return p;
fail:
  cpu_pool_destroy(p);
  return NULL;
}

/* Keeps a copy of the core sets and which one each worker holds, so that
 * runs can move a worker off the caller's core (leave_caller_core). */
static void remember_sets(cpu_pool_t *p, const cpu_set_t *sets, unsigned nsets) {
  free(p->sets);
  free(p->held);
  p->sets = malloc(nsets * sizeof *p->sets);
  p->held = p->started ? malloc(p->started * sizeof *p->held) : NULL;
  if (!p->sets || (p->started && !p->held)) {
    free(p->sets), free(p->held);
    p->sets = NULL, p->held = NULL, p->nsets = 0;
    return;
  }
  memcpy(p->sets, sets, nsets * sizeof *sets);
  p->nsets = nsets;
  for (unsigned i = 1; i <= p->started; i++) p->held[i - 1] = i % nsets;
}

unsigned cpu_pool_pin(cpu_pool_t *p, const cpu_set_t *sets, unsigned nsets) {
  unsigned pinned = 0;
  if (!p || !sets || !nsets) return 0;
  pthread_mutex_lock(&p->run_lock);
  for (unsigned i = 1; i <= p->started; i++)
    if (pthread_setaffinity_np(p->threads[i - 1], sizeof(cpu_set_t),
                               &sets[i % nsets]) == 0)
      pinned++;
  if (pinned == p->started) remember_sets(p, sets, nsets);
  pthread_mutex_unlock(&p->run_lock);
  return pinned;
}

/* The core set that contains cpu and is held by no worker, else the first
 * set held by none that does not contain it; nsets when there is none. */
static unsigned free_set(const cpu_pool_t *p, int cpu) {
  unsigned found = p->nsets;
  for (unsigned s = 0; s < p->nsets; s++) {
    bool taken = false;
    for (unsigned i = 0; i < p->started && !taken; i++) taken = p->held[i] == s;
    if (taken) continue;
    if (CPU_ISSET((unsigned)cpu, &p->sets[s])) return s;
    if (found == p->nsets) found = s;
  }
  return found;
}

/* When the calling thread runs on the core of a pinned worker, moves that
 * worker to a core no worker holds (the one the caller left), so that the
 * caller and the worker do not take turns on one CPU for the whole run.
 * Costs nothing when the caller is where it should be. Under run_lock. */
static void leave_caller_core(cpu_pool_t *p) {
  if (!p->nsets) return;
  int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE) return;
  unsigned mine = free_set(p, cpu);
  if (mine < p->nsets && CPU_ISSET((unsigned)cpu, &p->sets[mine])) return;
  for (unsigned i = 0; i < p->started; i++) {
    if (!CPU_ISSET((unsigned)cpu, &p->sets[p->held[i]])) continue;
    if (mine < p->nsets &&
        pthread_setaffinity_np(p->threads[i], sizeof(cpu_set_t), &p->sets[mine]) == 0)
      p->held[i] = mine;
    return;
  }
}

bool cpu_pool_worker_affinity(cpu_pool_t *p, unsigned i, cpu_set_t *out) {
  if (!p || i == 0 || i > p->started) return false;
  return pthread_getaffinity_np(p->threads[i - 1], sizeof *out, out) == 0;
}

void cpu_pool_destroy(cpu_pool_t *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->lock);
  __atomic_store_n(&p->shutting_down, 1, __ATOMIC_RELAXED);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  for (unsigned i = 0; i < p->started; i++)
    pthread_join(p->threads[i], NULL);
  free(p->threads);
  free(p->sets);
  free(p->held);
  pthread_cond_destroy(&p->done);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->lock);
  pthread_mutex_destroy(&p->run_lock);
  free(p);
}

unsigned cpu_pool_size(const cpu_pool_t *p) { return p ? p->size : 1; }

void cpu_pool_run(cpu_pool_t *p, int64_t ntasks, int64_t grain, cpu_pool_fn fn,
                  void *ctx) {
  if (ntasks <= 0)
    return;
  if (grain < 1)
    grain = 1;
  int64_t want = (ntasks + grain - 1) / grain;
  unsigned workers = p ? p->size : 1;
  /* Inline when there is nothing to split or we are already inside a task
   * (nested parallelism would deadlock on run_lock or oversubscribe). */
  if (want <= 1 || workers <= 1 || tls_in_task) {
    unsigned w = tls_in_task ? tls_worker : 0;
    fn(ctx, 0, ntasks, w);
    return;
  }
  pthread_mutex_lock(&p->run_lock);
  leave_caller_core(p);
  pthread_mutex_lock(&p->lock);
  p->fn = fn;
  p->ctx = ctx;
  p->ntasks = ntasks;
  p->nchunks = want < (int64_t)workers ? (unsigned)want : workers;
  __atomic_store_n(&p->pending, p->nchunks - 1, __ATOMIC_RELAXED); /* chunk 0 is ours */
  __atomic_store_n(&p->generation, p->generation + 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);

  run_chunk(p, 0);

  if (p->spin) spin_until_zero(&p->pending);
  pthread_mutex_lock(&p->lock);
  while (p->pending > 0)
    pthread_cond_wait(&p->done, &p->lock);
  pthread_mutex_unlock(&p->lock);
  pthread_mutex_unlock(&p->run_lock);
}
