/*
 * fast/shared_pieces.h — one phase of a pool run in which every worker
 * takes pieces of a job from a shared counter until none is left, then
 * waits until all of them are done (by whichever worker took them), so
 * that the next phase may read what they wrote. The AMX GEMM drivers
 * (gemm/gemm_amx.c, quant/qgemm_amx.c) pack their operands so, once per
 * call, before the tiles read them.
 */
#ifndef BACKPLANE_CPU_FAST_SHARED_PIECES_H
#define BACKPLANE_CPU_FAST_SHARED_PIECES_H

#include <immintrin.h>
#include <sched.h>
#include <stdint.h>

/* Piece x of the job ctx. */
typedef void (*cpu_fast_shared_piece_fn)(void *ctx, int64_t x);

/* Claims pieces [0, pieces) from *next and runs fn on each, counting them
 * in *done; then waits until *done reaches pieces (the only wait of the
 * phase: a worker that was preempted holds up the others by at most one
 * piece). Both counters start at zero for the run. */
static inline void cpu_fast_share_pieces(int64_t *next, int64_t *done, int64_t pieces,
                                         cpu_fast_shared_piece_fn fn, void *ctx) {
  for (;;) {
    int64_t x = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
    if (x >= pieces) break;
    fn(ctx, x);
    __atomic_add_fetch(done, 1, __ATOMIC_RELEASE);
  }
  /* spin, but yield now and then: on a loaded machine the worker we wait
   * for may need this CPU */
  for (unsigned spin = 1; __atomic_load_n(done, __ATOMIC_ACQUIRE) < pieces; spin++) {
    if (spin % 256 == 0)
      sched_yield();
    else
      _mm_pause();
  }
}

#endif
