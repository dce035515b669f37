/*
 * fast/amx_tiles.h — the AMX tile configuration the fast kernels share
 * (gemm/gemm_amx.c, attention/attention_amx.c, quant/qgemm_amx.c,
 * quant/qmatmul_amx.c). Header-only (static inline) because each kernel is
 * compiled with its own -mamx-* flags; callers have checked the CPU and
 * cpu_amx_request() first.
 */
#ifndef BACKPLANE_CPU_FAST_AMX_TILES_H
#define BACKPLANE_CPU_FAST_AMX_TILES_H

#include <immintrin.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The 64-byte operand of LDTILECFG, palette 1. */
typedef struct cpu_amx_tilecfg {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} cpu_amx_tilecfg_t;

/* Configures tiles 0-7 on this thread: tile t holds rows[t] rows of
 * colsb[t] bytes; tiles 8-15 unused. */
static inline void cpu_amx_configure(const uint8_t rows[8], const uint16_t colsb[8]) {
  alignas(64) cpu_amx_tilecfg_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) {
    cfg.rows[t] = rows[t];
    cfg.colsb[t] = colsb[t];
  }
  _tile_loadconfig(&cfg);
}

/* Tiles 0-7 each 16 rows x 64 bytes, the whole tile: what the GEMM,
 * attention and int8 GEMM kernels use (0-3 accumulators of a 32 x 32
 * block, 4-5 the A operand's two 16-row halves, 6-7 B's). */
static inline void cpu_amx_configure_full(void) {
  static const uint8_t rows[8] = {16, 16, 16, 16, 16, 16, 16, 16};
  static const uint16_t colsb[8] = {64, 64, 64, 64, 64, 64, 64, 64};
  cpu_amx_configure(rows, colsb);
}

/* Tiles 0-3 (as cpu_amx_configure_full sets them) become the 32 x 32 block
 * of 4-byte accumulators (f32 or int32) at w, rows ld elements apart; or
 * zeros when zero. */
static inline void cpu_amx_acc_start(const void *w, int64_t ld, bool zero) {
  if (zero) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    return;
  }
  const char *p = (const char *)w;
  size_t st = (size_t)ld * 4;
  _tile_loadd(0, p, st);
  _tile_loadd(1, p + 64, st);
  _tile_loadd(2, p + 16 * st, st);
  _tile_loadd(3, p + 16 * st + 64, st);
}

/* Stores tiles 0-3 as the 32 x 32 block of 4-byte accumulators at out,
 * rows ld elements apart. */
static inline void cpu_amx_acc_store(void *out, int64_t ld) {
  char *p = (char *)out;
  size_t st = (size_t)ld * 4;
  _tile_stored(0, p, st);
  _tile_stored(1, p + 64, st);
  _tile_stored(2, p + 16 * st, st);
  _tile_stored(3, p + 16 * st + 64, st);
}

/* GCC names the feature __AMX_BF16__, clang __AMXBF16__ */
#if defined(__AMX_BF16__) || defined(__AMXBF16__)
/* One 32-deep k chunk of bf16 pairs onto the f32 block in tiles 0-3
 * (TDPBF16PS): A's rows 0-15 at a0 and 16-31 at a1 (tiles 4, 5), B's VNNI
 * columns 0-15 at b0 and 16-31 at b1 (tiles 6, 7), rows ast and bst
 * bytes apart. Inlined: it is the tile loop's whole body. */
static inline __attribute__((always_inline)) void cpu_amx_bf16_2x2(const void *a0, const void *a1,
                                                                   size_t ast, const void *b0,
                                                                   const void *b1, size_t bst) {
  _tile_loadd(4, a0, ast);
  _tile_loadd(5, a1, ast);
  _tile_loadd(6, b0, bst);
  _tile_loadd(7, b1, bst);
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  _tile_dpbf16ps(2, 5, 6);
  _tile_dpbf16ps(3, 5, 7);
}
#endif

#endif /* BACKPLANE_CPU_FAST_AMX_TILES_H */
