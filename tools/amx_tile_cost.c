/*
 * tools/amx_tile_cost.c — what one TDPBF16PS costs on this CPU in the tile
 * loop of the bf16 conv2d routes (plugins/cpu/fast/conv/conv2d_amx*.c),
 * depending on where its operands come from: the 2 x 2 step of
 * fast/amx_tiles.h (A tiles 4-5, B tiles 6-7 loaded, four products onto
 * tiles 0-3) repeated over A and B buffers of a given size, one thread,
 * best CPU time of 5 runs, printed per product. It tells the cache level
 * a route's A and B streams must live in (docs/backend-cpu.md, conv2d).
 * Not built by make:
 *
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -mavx512f -mamx-tile -mamx-bf16 -I.
 *     -o amx_tile_cost tools/amx_tile_cost.c                (one line)
 *   ./amx_tile_cost
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "plugins/cpu/fast/amx_tiles.h"

#define STEPS 200000 /* 2 x 2 steps per run */

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* n bf16 values near 0.1-0.5 of both signs (tiles run faster on zeros). */
static uint16_t *values(size_t n) {
  uint16_t *p = aligned_alloc(64, (n * 2 + 63) / 64 * 64);
  if (!p) exit(1);
  for (size_t i = 0; i < n; i++) p[i] = (uint16_t)((0x3dcd + (i * 7919 % 11) * 0x40) | (i % 3 ? 0 : 0x8000));
  return p;
}

/* One case: A tiles from a (abytes; row stride ast bytes, 32 rows of
 * 64-byte k chunks, the chunks one after the other along a row when ast
 * > 64), B tiles 1 KiB each one after the other in b (bbytes); with
 * reload, the accumulators stored and another block's loaded every 8
 * steps (a k slab of 8 chunks); with only_dp, no tile loads at all. */
static void run_case(const char *what, size_t abytes, size_t ast, size_t bbytes, bool reload,
                     bool only_dp) {
  uint16_t *a = values(abytes / 2), *b = values(bbytes / 2);
  float *acc = aligned_alloc(64, 56 * 4096);
  if (!acc) exit(1);
  for (int i = 0; i < 56 * 1024; i++) acc[i] = 0;
  /* A chunks per row (strided A) or 2 KiB A blocks (packed A); B 2 KiB blocks */
  size_t na = ast > 64 ? ast / 64 : abytes / 2048, nb = bbytes / 2048;
  size_t rows = ast > 64 ? abytes / ast / 32 : 1; /* 32-row panels of strided A */
  cpu_amx_configure_full();
  double best = 1e9;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = cpu_seconds();
    cpu_amx_acc_start(NULL, 0, true);
    for (size_t i = 0; i < STEPS; i++) {
      if (reload && i % 8 == 0) {
        float *c = acc + (i / 8) % 56 * 1024;
        cpu_amx_acc_store(c, 32);
        cpu_amx_acc_start(c, 32, false);
      }
      if (only_dp) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        continue;
      }
      const uint16_t *bp = b + i % nb * 1024;
      if (ast > 64) {
        const uint16_t *ap = a + i % na * 32 + i / na % rows * 32 * (ast / 2);
        cpu_amx_bf16_2x2(ap, ap + 16 * (ast / 2), ast, bp, bp + 512, 64);
      } else {
        const uint16_t *ap = a + i % na * 1024;
        cpu_amx_bf16_2x2(ap, ap + 512, 64, bp, bp + 512, 64);
      }
    }
    float out[1024] __attribute__((aligned(64)));
    cpu_amx_acc_store(out, 32);
    double t = cpu_seconds() - t0;
    best = t < best ? t : best;
  }
  _tile_release();
  printf("%-58s %6.2f ns per TDPBF16PS\n", what, best / STEPS / 4 * 1e9);
  free(a), free(b), free(acc);
}

int main(void) {
  if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */)) {
    fprintf(stderr, "no AMX tile state granted\n");
    return 1;
  }
  run_case("products only (no tile loads)", 2048, 64, 2048, false, true);
  run_case("A 16 KiB, B 16 KiB (both in L1)", 16 << 10, 64, 16 << 10, false, false);
  run_case("A 16 KiB in L1, B 1 MiB streamed from L2", 16 << 10, 64, 1 << 20, false, false);
  run_case("A 16 KiB in L1, B 4 MiB streamed from L3", 16 << 10, 64, 4 << 20, false, false);
  run_case("A 144 KiB, B 144 KiB (both streamed from L2)", 144 << 10, 64, 144 << 10, false,
           false);
  run_case("A in place, rows 4.5 KiB apart, 1.1 MiB; B in L1", 256 * 4608, 4608, 16 << 10,
           false, false);
  run_case("A in place, 1.1 MiB; B 144 KiB from L2", 256 * 4608, 4608, 144 << 10, false, false);
  run_case("A, B in L1; accumulators reloaded every 8 chunks (L2)", 16 << 10, 64, 16 << 10, true,
           false);
  return 0;
}
