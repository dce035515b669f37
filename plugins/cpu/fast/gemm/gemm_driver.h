/*
 * fast/gemm/gemm_driver.h — the steps of the blocked GEMM driver
 * (gemm_macro.c), shared by the per-thread loops (gemm.c) and the team
 * driver that lets all workers share one packed B (gemm_team.c). Calls go
 * one way: gemm.c -> gemm_team.c -> gemm_macro.c.
 *
 * A problem is a view over raw bytes with element strides; a gemm_type_t
 * says how its dtype is packed (widened to the compute type), merged back
 * and computed without packing when scratch memory is short.
 */
#ifndef BACKPLANE_CPU_FAST_GEMM_DRIVER_H
#define BACKPLANE_CPU_FAST_GEMM_DRIVER_H

#include "gemm.h"

/* One GEMM problem over raw bytes with element strides. */
typedef struct gemm_view {
  int64_t m, n, k;
  const char *a, *b;
  char *c;
  int64_t sam, sak, sbk, sbn, scm, scn;
} gemm_view_t;

typedef struct gemm_type {
  bp_dtype_t dtype; /* of A, B and C */
  size_t in_size; /* element size of A, B and C */
  size_t esize;   /* element size of the packed panels (compute type) */
  bool wide_c;    /* C holds the compute type, so kernels may write it */
  void (*pack_a)(const void *a, int64_t sam, int64_t sak, int64_t mb,
                 int64_t kb, int mr, void *dst);
  void (*pack_b)(const void *b, int64_t sbk, int64_t sbn, int64_t kb,
                 int64_t nb, int nr, void *dst);
  void (*merge)(const void *tile, int nr, void *c, int64_t scm, int64_t scn,
                int64_t mb, int64_t nb, const void *alpha, const void *beta);
  void (*naive)(const gemm_view_t *v, const void *alpha, const void *beta);
  void (*scale)(const gemm_view_t *v, const void *beta);
} gemm_type_t;

/* Per dtype (fast/gemm/gemm_types.c): f32 and f64 computed in their own type,
 * f16 and bf16 widened to f32 while packing. */
CPU_HIDDEN extern const gemm_type_t cpu_fast_gemm_type_f32, cpu_fast_gemm_type_f64,
    cpu_fast_gemm_type_f16, cpu_fast_gemm_type_bf16;
/* The portable 4 x 8 micro-kernels, for CPUs without AVX2 + FMA. */
CPU_HIDDEN extern const cpu_fast_gemm_kernel_t cpu_fast_gemm_portable_f32,
    cpu_fast_gemm_portable_f64;

/* The steps below live in gemm_macro.c. */

/* Whether the f32 kernel kr may take the AVX2 widening packer and merge:
 * a vector ISA's kernel (it has a packer) on a CPU with AVX2, FMA, F16C. */
CPU_HIDDEN bool cpu_fast_gemm_wpack_ok(const cpu_fast_gemm_kernel_t *kr);

/* The block size that cuts len into as few blocks of at most max as
 * possible, all about equal: a multiple of align, the last block shorter
 * by less than an align per block. The count, and so the passes over C,
 * stay what max gives, but no block is a short leftover: k = 512 runs as
 * 2 x 256 instead of 384 + 128, n = 2048 as 4 x 512 instead of 3 x 640 +
 * 128 (a B block of four panels, each A panel fetched for four tiles).
 * Both drivers block alike with it, so they agree bit for bit. */
CPU_HIDDEN int64_t cpu_fast_gemm_even_block(int64_t len, int64_t max, int64_t align);

/* Packs rows [i0, i0 + mb) x k [p0, p0 + kb) of v's A into MR-row panels
 * at dst (vector code when the ISA has some for the layout). */
CPU_HIDDEN void cpu_fast_gemm_pack_a(const gemm_type_t *t,
                                 const cpu_fast_gemm_kernel_t *kr,
                                 const gemm_view_t *v, int64_t i0, int64_t p0,
                                 int64_t mb, int64_t kb, void *dst);

/* Packs k [p0, p0 + kb) x columns [j0, j0 + nb) of v's B into NR-column
 * panels at dst. */
CPU_HIDDEN void cpu_fast_gemm_pack_b(const gemm_type_t *t,
                                 const cpu_fast_gemm_kernel_t *kr,
                                 const gemm_view_t *v, int64_t j0, int64_t p0,
                                 int64_t nb, int64_t kb, void *dst);

/* Where one packed block's product goes: C's block origin and strides in
 * C's type ct, and the scalars (values of the compute type). */
typedef struct gemm_macro {
  const gemm_type_t *ct;
  const cpu_fast_gemm_kernel_t *kr;
  char *c;
  int64_t scm, scn;
  const void *alpha, *beta, *one, *zero;
} gemm_macro_t;

/* C block (mb x nb) = alpha * packed A (mb x kb) * packed B (kb x nb) +
 * beta * C block: every MR x NR tile through the micro-kernel, the ragged
 * edges through a tile and the type's merge. Each A micro-panel stays in
 * L1 while the B block streams past it from L2. */
CPU_HIDDEN void cpu_fast_gemm_macro(const gemm_macro_t *mk, const char *ap,
                                const char *bp, int64_t mb, int64_t nb,
                                int64_t kb);

/* Whether an f16 / bf16 C of n columns may be summed in f32 scratch rows
 * of n floats: the rounding takes the row length as an int, and a band of
 * MR such rows stays within 2^24 floats. */
static inline bool cpu_fast_gemm_narrow_rows_fit(const cpu_fast_gemm_kernel_t *kr, int64_t n) {
  return n <= ((int64_t)1 << 24) / kr->mr;
}

/* Rounds rows x cols of f32 sums (rows ldf apart) into t's narrow C (f16 /
 * bf16): C = round(alpha * sums + beta * C), by vector code where the
 * kernel's CPU and C's layout allow, else t's scalar merge (the same
 * bits). alpha and beta are f32. */
CPU_HIDDEN void cpu_fast_gemm_round_c(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                                  const float *sums, int64_t ldf, char *c, int64_t scm,
                                  int64_t scn, int64_t rows, int64_t cols,
                                  const void *alpha, const void *beta);

/* One thread-shared run of a problem over the pool: every B block is
 * packed once, by all workers together, and rows of A are claimed in
 * chunks as workers come free (fast/gemm/gemm_team.c). A narrow C (f16 /
 * bf16 widened to f32) is summed in f32 scratch, at most c_floats of it
 * per row group, and each chunk rounded into C after its last k block.
 * False when it does not apply or its buffers cannot be had: nothing was
 * written, the caller runs its own split. */
CPU_HIDDEN bool cpu_fast_gemm_team(cpu_device_t *dev, const gemm_type_t *t,
                               const cpu_fast_gemm_kernel_t *kr,
                               const gemm_view_t *v, const void *alpha,
                               const void *beta, const void *one,
                               const void *zero, int64_t c_floats);

/* Whether v runs unpacked, A's and B's rows read where they lie (t f32,
 * kr with ukr_rows; fast/gemm/gemm.c): small problems, a few rows of C,
 * and a C of one column panel. */
CPU_HIDDEN bool cpu_fast_gemm_direct_fits(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                                          const gemm_view_t *v);

/* Whether v (of t's elements, after any swap for a column-major C)
 * takes the inner-product route (fast/gemm/gemm_dot.c): kr (the f32
 * kernel for bf16 / f16) has a kernel for t, A's rows are contiguous
 * along k, and C is a few columns wide, or a few rows or columns with B
 * given as Bᵀ (B's k stride 1). */
CPU_HIDDEN bool cpu_fast_gemm_dot_fits(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                                       const gemm_view_t *v);

/* The route itself over batch entries sab / sbb / scb elements apart
 * (alpha, beta and one are values of t's compute type). False when its scratch
 * memory cannot be had: nothing was written. */
CPU_HIDDEN bool cpu_fast_gemm_dot(cpu_device_t *dev, const gemm_type_t *t,
                                  const cpu_fast_gemm_kernel_t *kr, const gemm_view_t *v,
                                  int64_t batch, int64_t sab, int64_t sbb, int64_t scb,
                                  const void *alpha, const void *beta, const void *one);

#endif /* BACKPLANE_CPU_FAST_GEMM_DRIVER_H */
