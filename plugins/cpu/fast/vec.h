/*
 * fast/vec.h — the vector row kernels behind the memory-bound fast paths
 * (softmax, norms, elementwise, reductions, casts) and depthwise conv.
 *
 * The drivers (fast/rows/softmax.c, fast/rows/norm.c, fast/elementwise/elementwise.c,
 * fast/elementwise/reduce.c, fast/elementwise/cast.c, fast/conv/conv2d.c) are baseline x86-64 C: they
 * check dtypes and strides, cut the work into rows and hand rows to one of
 * these tables over the thread pool. The tables hold the only SIMD code;
 * they are instantiated from one template (fast/vec_kern.h) per ISA by
 * fast/vec_avx512.c and fast/vec_avx2.c, each compiled with its own -m
 * flags (fast.mk) and reached only after cpu_fast_vec_pick's CPUID check.
 * All row pointers are f32 with unit stride unless a stride is given.
 */
#ifndef BACKPLANE_CPU_FAST_VEC_H
#define BACKPLANE_CPU_FAST_VEC_H

#include <stdbool.h>
#include <stdint.h>

#include "plugins/cpu/cpu.h"

/* Geometry of one depthwise plane; the input plane is first copied into a
 * zero-padded buffer of Hp x Wp floats so the stencil needs no bounds. */
typedef struct cpu_fast_dw_geom {
  int64_t H, W, P, Q, R, S, sh, sw, ph, pw, dh, dw;
  int64_t sxh, sxw; /* input strides of the plane, elements */
  int64_t Hp, Wp;   /* padded plane */
} cpu_fast_dw_geom_t;

/* Rows up to this many floats keep softmax's exps in a scratch row rather
 * than in y when y takes streaming stores, so y is written exactly once. */
#define SOFTMAX_SCRATCH_ROW 4096

/* Softmax's deferred output (fast/rows/softmax.c hands one to consecutive rows
 * of a range): a row whose exps sit in a scratch row leaves its output
 * pending, and the next row's exp pass streams it out, so the stores
 * overlap that row's arithmetic instead of following it. */
typedef struct cpu_fast_sm_defer {
  float *buf[2];    /* two scratch rows of SOFTMAX_SCRATCH_ROW floats */
  int cur;          /* the one the next row's exps go to */
  float *y;         /* the pending row's output; NULL: nothing pending */
  const float *e;   /* its exps (one of buf) */
  float inv;        /* 1 / its sum */
} cpu_fast_sm_defer_t;

typedef struct cpu_fast_vec_kernels {
  /* y (P x Q, contiguous) = depthwise stencil of one plane, plus bias. */
  void (*dw_plane)(const cpu_fast_dw_geom_t *g, const float *x, const float *w,
                   float bias, float *y, float *buf);
  /* In the row kernels below, nt asks for non-temporal (streaming) stores
   * of y (the caller has checked cpu_fast_nt_ok and fences afterwards), and
   * next, when not NULL, is the row the caller will hand over next: it is
   * prefetched while this one is computed. */
  /* Softmax (log != 0: log-softmax) of one row: in cache, max, then exps
   * and their sum, then the output; longer rows online. NaN and -inf rows
   * as the reference. defer (may be NULL) carries a pending output from
   * row to row (cpu_fast_sm_defer_t): this row writes the one pending, and
   * leaves its own pending when next is not NULL; the caller's last row
   * has next NULL, so nothing stays pending after it. */
  void (*softmax_row)(const float *x, float *y, int64_t n, int log,
                      const float *next, bool nt, cpu_fast_sm_defer_t *defer);
  /* Layer norm (rms == 0) or RMS norm of one row; gamma / beta may be NULL.
   */
  void (*norm_row)(const float *x, float *y, int64_t n, const float *gamma,
                   const float *beta, double eps, int rms, const float *next,
                   bool nt);
  /* y = x * scale + shift (batch norm, folded per channel). */
  void (*affine_row)(const float *x, float *y, int64_t n, float scale,
                     float shift, bool nt);
  /* y = op(x); false (nothing written) for an op without a vector form. */
  bool (*unary_row)(bp_unary_op_t op, const float *x, float *y, int64_t n,
                    bool nt);
  /* y = a op b with a, b of element stride 0 or 1; false when not vector. */
  bool (*binary_row)(bp_binary_op_t op, const float *a, int64_t sa,
                     const float *b, int64_t sb, float *y, int64_t n, bool nt);
  /* Reduces one contiguous row: sum, mean, max, min, var (as the
   * reference: double accumulation, first NaN wins for max / min). */
  double (*reduce_row)(bp_reduce_op_t op, const float *x, int64_t n);
  /* Column reduction: acc[j] (op) = x[i * stride + j] for i < len, j <
   * width; acc holds doubles (sum) or the running max / min. */
  void (*reduce_cols)(bp_reduce_op_t op, const float *x, int64_t stride,
                      int64_t len, void *acc, int64_t width);
  /* Converts n elements between f32 and f16 / bf16 (RNE, quiet NaN). */
  bool (*cvt)(bp_dtype_t from, bp_dtype_t to, const void *x, void *y,
              int64_t n);
  /* Rotates the first rd features of one row (y may be x): half-split
   * pairs (i, i + rd / 2) with c, s of rd / 2 angles, or, interleaved,
   * pairs (2i, 2i + 1) with c of rd entries (each angle twice) and s of rd
   * entries (-sin, +sin per pair). */
  void (*rope_row)(const float *x, float *y, const float *c, const float *s,
                   int64_t rd, int interleaved);
} cpu_fast_vec_kernels_t;

CPU_HIDDEN extern const cpu_fast_vec_kernels_t cpu_fast_vec_avx512, cpu_fast_vec_avx2;

/* The table for the device's ISA ceiling and this CPU, or NULL when not
 * even AVX2 + FMA + F16C is there (the reference runs then). */
CPU_HIDDEN const cpu_fast_vec_kernels_t *cpu_fast_vec_pick(const cpu_device_t *dev);

/* f16 / bf16 tensors run the f32 row kernels on widened copies: a dtype
 * the fast paths take (f32, f16, bf16). */
static inline bool cpu_fast_float_dtype(bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_F16 || dt == BP_BF16;
}
/* n elements of dt at src as f32: src itself when f32, else converted
 * into buf (n floats; round trips are exact). */
static inline const float *cpu_fast_widen(const cpu_fast_vec_kernels_t *vk,
                                          bp_dtype_t dt, const void *src,
                                          int64_t n, float *buf) {
  if (dt == BP_F32) return src;
  vk->cvt(dt, BP_F32, src, buf, n);
  return buf;
}
/* Stores n f32 results as dt at dst (round to nearest even); a no-op for
 * f32, whose results the kernel wrote to dst directly. */
static inline void cpu_fast_narrow(const cpu_fast_vec_kernels_t *vk,
                                   bp_dtype_t dt, const float *src, void *dst,
                                   int64_t n) {
  if (dt != BP_F32) vk->cvt(BP_F32, dt, src, dst, n);
}

/* Rows of an elementwise op over up to 4 tensors of one shape: dims are
 * coalesced where every tensor allows, the last dim is the row. */
typedef struct cpu_fast_rows {
  int32_t rank, count;
  int64_t shape[BP_MAX_RANK];
  int64_t strides[4][BP_MAX_RANK];
} cpu_fast_rows_t;

/* Fills r from the tensors' strides over shape; false for rank 0. */
CPU_HIDDEN bool cpu_fast_rows_init(cpu_fast_rows_t *r, const bp_plugin_tensor_t *shape_of,
                               const bp_plugin_tensor_t *const *ts, int count);
/* Element offset of row `row` (the last dim is excluded) in tensor k. */
CPU_HIDDEN int64_t cpu_fast_rows_offset(const cpu_fast_rows_t *r, int k, int64_t row);
/* Rows in all (the product of every dim but the last) and row length. */
CPU_HIDDEN int64_t cpu_fast_rows_count(const cpu_fast_rows_t *r);

/* Runs fn(ctx, row, col0, ncols) over every row, cut into pieces of at most
 * `piece` columns, threaded over the pool when total work is large. The
 * workers claim pieces as they go (fn must write only its piece's output,
 * so the result is the same whoever runs it), and each fences its stores
 * (sfence) when done, so pieces may use non-temporal stores. */
typedef void (*cpu_fast_piece_fn)(void *ctx, int64_t row, int64_t col0,
                              int64_t ncols);
CPU_HIDDEN void cpu_fast_rows_run(cpu_device_t *dev, int64_t rows, int64_t len,
                              int64_t piece, cpu_fast_piece_fn fn, void *ctx);
/* The same for whole rows of len elements handed over as ranges: fn(ctx,
 * row0, row1) runs rows [row0, row1) in order, so a kernel can carry work
 * from one row to the next (cpu_fast_sm_defer_t). */
typedef void (*cpu_fast_range_fn)(void *ctx, int64_t row0, int64_t row1);
CPU_HIDDEN void cpu_fast_row_ranges_run(cpu_device_t *dev, int64_t rows,
                                    int64_t len, cpu_fast_range_fn fn, void *ctx);

/* Outputs of at least this many bytes are written with non-temporal stores
 * (16 MiB: past most L3 slices, so the output would be evicted before a
 * consumer reads it; caching it would only cost a read for ownership per
 * line). A device's tune.nt_min_bytes replaces it when set (tests lower it
 * to reach the streaming path). */
#define CPU_FAST_NT_MIN_BYTES ((int64_t)16 << 20)
static inline int64_t cpu_fast_nt_min_bytes(const cpu_device_t *dev) {
  return dev->tune.nt_min_bytes > 0 ? dev->tune.nt_min_bytes
                                    : CPU_FAST_NT_MIN_BYTES;
}
/* Whether y may take non-temporal stores on dev: f32-aligned, at least
 * cpu_fast_nt_min_bytes(dev) of elements, and its bytes overlap none of the
 * nin inputs (an in-place op keeps normal stores). */
CPU_HIDDEN bool cpu_fast_nt_ok(const cpu_device_t *dev, const bp_plugin_tensor_t *y,
                           const bp_plugin_tensor_t *const *in, int nin);

/* A copy whose x has unit stride along a dim other than y's last (a
 * transposed view into a dense y), in blocks (fast/elementwise/transpose.c). False:
 * not that shape, nothing written. */
CPU_HIDDEN bool cpu_fast_copy_transposed(cpu_device_t *dev, const bp_copy_args_t *a);

/* Element offset in t of line `line` of the lines along t's last axis
 * (the lines enumerated row-major over the other axes). */
CPU_HIDDEN int64_t cpu_fast_line_offset(const bp_plugin_tensor_t *t, int64_t line);

#endif /* BACKPLANE_CPU_FAST_VEC_H */
