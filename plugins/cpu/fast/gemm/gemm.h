/*
 * fast/gemm/gemm.h — internals shared by the fast-path files (fast/): the GEMM
 * micro-kernel contract, the per-ISA entry points and scratch memory.
 *
 * The driver (fast/gemm/gemm.c) packs A and B into contiguous micro-panels and
 * calls a register-tiled micro-kernel chosen at run time for the ISA. A
 * micro-kernel computes one MR x NR tile of C:
 *
 *   C[i][j] = alpha * sum_p Ap[p*MR + i] * Bp[p*NR + j] + beta * C[i][j]
 *
 * with C row-major (row stride ldc, unit column stride). beta == 0 means C is
 * not read. The broadcast operand is A (MR values per k), the vector operand
 * B (NR values per k), so vectors run along C's contiguous dimension.
 */
#ifndef BACKPLANE_CPU_FAST_GEMM_H
#define BACKPLANE_CPU_FAST_GEMM_H

#include <stdint.h>

#include "plugins/cpu/cpu.h"

/* Micro-kernel: alpha and beta point at values of the element type. */
typedef void (*cpu_fast_ukr_fn)(int64_t k, const void *ap, const void *bp, void *c,
                            int64_t ldc, const void *alpha, const void *beta);

/* Vectorised panel packing for one ISA, used by the driver for the native
 * dtype only (the f32 kernels; NULL elsewhere). Packs `cnt` rows of a
 * kb-long operand into panels of w rows, zero-padded past cnt:
 *   dst[q*w*kb + p*w + i] = src[(q*w + i)*si + p*sk]
 * i.e. A panels with (si, sk) = (sam, sak) and B panels with (sbn, sbk).
 * Returns false, having written nothing, for layouts it does not cover
 * (neither si nor sk is 1); the generic scalar packing runs then. */
/* k steps per strip when panels are copied from a source whose panel rows
 * are contiguous (B row-major, A column-major): each strip is dealt out
 * across all the panels, so every source row is read in one run and the
 * strip's rows are streams the hardware prefetcher follows. 8 is the
 * count it tracks well: more streams than it follows, or fewer and
 * shorter runs, both cost (docs/performance.md). */
#define CPU_FAST_PACK_STRIP 8

typedef bool (*cpu_fast_pack_fn)(const void *src, int64_t si, int64_t sk,
                             int64_t cnt, int64_t kb, int w, void *dst);

/* Unpacked f32 micro-kernel (fast/gemm/gemm_ukr_rows.h): one MR x NR tile
 *   C[i][j] = alpha * sum_p A[i*lda + p] * B[p*ldb + j] + beta * C[i][j]
 * for i < rows (<= MR), j < cols (<= NR); A rows and B rows have unit
 * stride, so row-major operands need no packing. beta == 0: C not read.
 * Rows and columns past rows / cols are neither read from C nor written;
 * rows past `rows` re-read A's last row, columns past `cols` are masked. */
typedef void (*cpu_fast_ukr_rows_fn)(int64_t k, const float *a, int64_t lda,
                                 const float *b, int64_t ldb, float *c,
                                 int64_t ldc, int rows, int cols, float alpha,
                                 float beta);

/* The same tile with B read in place from an image (fast/conv/conv2d.c): row p
 * of B is the W lanes at blo + off[p] followed by the W lanes at bhi +
 * off[p] (NR = 2W). off must be readable 8 entries past k (prefetch).
 * lcols: lanes of B loaded, the rest masked; NR when all NR lanes may be
 * read (whatever they hold only reaches columns that are not stored). */
typedef void (*cpu_fast_ukr_offs_fn)(int64_t k, const float *a, int64_t lda,
                                 const float *blo, const float *bhi,
                                 const int64_t *off, float *c, int64_t ldc,
                                 int rows, int cols, int lcols, float alpha,
                                 float beta);

/* MR output pixels x NR output channels of a convolution with the channels
 * along the vector (fast/conv/conv2d.c): pixel i's k row p is the float at
 * xp[i] + off[p], the weights are packed NR channels per k row (wp[p*NR +
 * ch]), and the tile is written transposed, y[ch*ldy + i], adding to y
 * unless beta == 0. Only the first `rows` pixels are stored. */
typedef void (*cpu_fast_ukr_pix_fn)(int64_t k, const float *const *xp,
                                const int64_t *off, const float *wp, float *y,
                                int64_t ldy, int rows, float beta);

/* The packed kernel for the first `rows` (< MR) rows of an MR-row panel
 * (C's last rows): c gets at least those rows, at most MR of them, and
 * only the FMAs of a kernel about that tall are spent (fast/gemm/gemm_ukr.h,
 * CPU_FAST_DEFINE_UKR_AS). */
typedef void (*cpu_fast_ukr_part_fn)(int64_t k, const void *ap, const void *bp, void *c,
                                     int64_t ldc, const void *alpha, const void *beta, int rows);

/* Inner-product micro-kernel (fast/gemm/gemm_dot_ukr.h), k along the
 * vector: up to RA rows of A (unit k stride, lda apart) against up to 4
 * (CPU_FAST_DOT_RB) rows of Bᵀ (unit k stride, ldb apart), for i < ra, j < rb:
 *   C[i*scm + j*scn] = alpha * sum_p a[i*lda + p] * b[j*ldb + p] + beta * C
 * with alpha and beta of the element type; beta == 0: C not read. Rows
 * past ra / rb re-read the last one; nothing past them is stored. */
#define CPU_FAST_DOT_RB 4 /* rows of Bᵀ per ukr_dot tile: one fold of four sums */
typedef void (*cpu_fast_ukr_dot_fn)(int64_t k, const void *a, int64_t lda, const void *b,
                                    int64_t ldb, void *c, int64_t scm, int64_t scn, int ra,
                                    int rb, const void *alpha, const void *beta);

/* A micro-kernel with its register tile and the cache blocking it wants. */
typedef struct cpu_fast_gemm_kernel {
  cpu_fast_ukr_fn ukr;
  int mr, nr; /* tile: MR rows (broadcast) x NR columns (vector) */
  int kc;     /* k block: MR x KC A panel stays in L1 */
  int nc;     /* n block: KC x NC packed B stays in L2 */
  int mc;     /* m block: MC x KC packed A (L3) */
  cpu_fast_pack_fn pack; /* optional, see cpu_fast_pack_fn */
  cpu_fast_ukr_rows_fn ukr_rows; /* optional (f32), same MR x NR tile */
  cpu_fast_ukr_offs_fn ukr_offs; /* optional (f32), same MR x NR tile */
  cpu_fast_ukr_pix_fn ukr_pix;   /* optional (f32), same MR x NR tile */
  /* optional (f32): ukr_rows with column-major A, (i, p) at a[p*lda + i] */
  cpu_fast_ukr_rows_fn ukr_cols;
  /* the L1d and L2 (KiB) of the machine kc and nc were tuned on; 0: keep
   * them on every machine (cpu_fast_gemm_block_for) */
  unsigned tuned_l1_kib, tuned_l2_kib;
  cpu_fast_ukr_part_fn ukr_part; /* optional: C's last rows, see the type */
  cpu_fast_ukr_dot_fn ukr_dot;   /* optional: k along the vector, see the type */
  int dot_ra;                    /* ukr_dot's rows of A per tile */
  /* optional (f32 kernels): ukr_dot on bf16 / f16 A, Bᵀ and C, widened
   * to f32 sums (alpha and beta f32), dot_ra rows of A a tile and one
   * (a single row of C: no widening and FMAs for rows it does not have) */
  cpu_fast_ukr_dot_fn ukr_dot_bf16, ukr_dot_f16, ukr_dot_bf16_1, ukr_dot_f16_1;
} cpu_fast_gemm_kernel_t;

/* Scales kr's kc and nc from the caches it was tuned for to l1d / l2
 * bytes: the KC x NR micro-panel keeps its share of L1, the KC x NC block
 * of B its share of L2, each within a quarter to four times the tuned
 * size; kc a multiple of 16 (>= 64), nc of NR. Unknown sizes (0) or an
 * untuned kernel keep the constants. */
CPU_HIDDEN void cpu_fast_gemm_block_for(cpu_fast_gemm_kernel_t *kr, uint64_t l1d,
                                    uint64_t l2);

/* Kernels per ISA; each file is compiled with its own -m flags and is only
 * called after the run-time feature check. */
CPU_HIDDEN extern const cpu_fast_gemm_kernel_t cpu_fast_sgemm_avx512, cpu_fast_dgemm_avx512;
CPU_HIDDEN extern const cpu_fast_gemm_kernel_t cpu_fast_sgemm_avx2, cpu_fast_dgemm_avx2;
/* f32 packing (fast/gemm/gemm_pack_avx512.c, fast/gemm/gemm_pack_avx2.c). */
CPU_HIDDEN bool cpu_fast_spack_avx512(const void *src, int64_t si, int64_t sk,
                                  int64_t cnt, int64_t kb, int w, void *dst);
CPU_HIDDEN bool cpu_fast_spack_avx2(const void *src, int64_t si, int64_t sk,
                                int64_t cnt, int64_t kb, int w, void *dst);
/* f64 panels of the AVX-512 kernel (fast/gemm/gemm_pack_avx512.c), w <= 16. */
CPU_HIDDEN bool cpu_fast_dpack_avx512(const void *src, int64_t si, int64_t sk,
                                      int64_t cnt, int64_t kb, int w, void *dst);
/* The same packing from f16 or bf16 sources (dtype), widened to f32 on the
 * way: F16C's conversion for f16, a shift for bf16 (exact either way). For
 * the f32 kernels that take widened panels on any CPU with AVX2, FMA and
 * F16C (the AVX-512 ones too); false for other dtypes and layouts. */
CPU_HIDDEN bool cpu_fast_wpack_avx2(bp_dtype_t dtype, const void *src, int64_t si,
                                int64_t sk, int64_t cnt, int64_t kb, int w,
                                void *dst);
/* The matching merge of an f32 tile (mb x nb, rows nr apart) into an f16 /
 * bf16 C with unit column stride: C = round(alpha * tile + beta * C) with
 * the scalar merge's f32 arithmetic and rounding, so results are bit for
 * bit the same. False (nothing written) for other dtypes or strides. */
CPU_HIDDEN bool cpu_fast_wmerge_avx2(bp_dtype_t dtype, const float *tile, int nr,
                                 void *c, int64_t scm, int64_t scn, int64_t mb,
                                 int64_t nb, float alpha, float beta);

/* Low-precision GEMM with a native kernel (fast/gemm/gemm_lowp.c): bf16 / f16
 * inputs, f32 accumulation, on AMX-BF16 tiles. Returns BP_ERR_UNIMPLEMENTED
 * when no native kernel applies; the caller then widens to f32 while
 * packing. */
CPU_HIDDEN bp_status_t cpu_fast_gemm_lowp(cpu_device_t *dev,
                                      const bp_gemm_args_t *a);

/* bf16 / f16 GEMM with at most CPU_FAST_SKINNY_LOWP_MAX_M rows of C and
 * B's rows contiguous (fast/gemm/gemm_skinny_lowp.c): B read once, in
 * place, widened in AVX-512 registers, f32 sums, rows of B split over the
 * pool. _ok says whether the shape, dtypes and CPU fit; the call returns
 * BP_ERR_UNIMPLEMENTED (nothing written) when they do not or alpha == 0. */
#define CPU_FAST_SKINNY_LOWP_MAX_M 16
CPU_HIDDEN bool cpu_fast_gemm_skinny_lowp_ok(const cpu_device_t *dev, const bp_gemm_args_t *a);
CPU_HIDDEN bp_status_t cpu_fast_gemm_skinny_lowp(cpu_device_t *dev, const bp_gemm_args_t *a);
/* The same kernel for f32 with at most CPU_FAST_SKINNY_F32_MAX_M rows of
 * C, the epilogue applied before C is written (once). Past it the f32
 * micro-kernel's MR rows (all computed whatever m is) are used well enough,
 * and it reads each element of A from L1 instead of the sums' loads and
 * stores (docs/performance.md). */
#define CPU_FAST_SKINNY_F32_MAX_M 7
CPU_HIDDEN bool cpu_fast_gemm_skinny_f32_ok(const cpu_device_t *dev, const bp_gemm_args_t *a);
CPU_HIDDEN bp_status_t cpu_fast_gemm_skinny_f32(cpu_device_t *dev, const bp_gemm_args_t *a);

/* bf16 or f16 GEMM on AMX-BF16 tiles (fast/gemm/gemm_amx.c); the caller has
 * checked the CPU features (AMX-BF16, AVX-512 BW / VL) and
 * cpu_amx_request(). */
CPU_HIDDEN bp_status_t cpu_fast_gemm_amx(cpu_device_t *dev, const bp_gemm_args_t *a);
/* bf16 GEMM through the same driver with VDPBF16PS on zmm registers for
 * the block product instead of tiles (fast/gemm/gemm_dpbf16.c), for CPUs
 * with AVX512-BF16 but no AMX; BP_ERR_UNIMPLEMENTED for other dtypes. The
 * caller has checked the CPU features (AVX512-BF16, AVX-512 BW / VL). */
CPU_HIDDEN bp_status_t cpu_fast_gemm_dpbf16(cpu_device_t *dev, const bp_gemm_args_t *a);
/* Test hook of cpu_fast_gemm_lowp: true sends bf16 to cpu_fast_gemm_dpbf16
 * on any CPU with AVX512-BF16 and no AMX, not only on AMD's. */
CPU_HIDDEN extern bool cpu_fast_gemm_dpbf16_any_vendor;
/* The block product of cpu_fast_gemm_dpbf16 (the AMX one's contract):
 * w[32][ld] (+)= the packed A panel x the packed B panel over kchunks
 * 32-deep k chunks (first: from zero, w unread), pfl lines from pf on
 * prefetched into L2 per chunk (pf NULL: none). */
CPU_HIDDEN void cpu_fast_gemm_dpbf16_block(int64_t kchunks, const uint16_t *ap,
                                           const uint16_t *bp, float *w, int64_t ld, bool first,
                                           const char *pf, int64_t pfl);
/* Bytes of packed A per row group of cpu_fast_gemm_amx (whole groups of
 * its row tasks; 0: the default, 32 MiB); tests set it to reach several
 * groups with small problems. */
CPU_HIDDEN extern int64_t cpu_fast_gemm_amx_group_bytes;
/* Test hook of cpu_fast_gemm_amx: true makes each worker take the other
 * workers' units (from the back of their runs) before its own, so that
 * the helpers' path computes them. */
CPU_HIDDEN extern bool cpu_fast_gemm_amx_help_first;
/* Whether cpu_fast_gemm_amx applies a's epilogue (bias in C's dtype, a
 * known activation) in its merge, rounding each value of C once. */
CPU_HIDDEN bool cpu_fast_gemm_amx_epilogue_ok(const bp_gemm_args_t *a);

/* The bf16 packers of that driver (fast/gemm/gemm_amx_pack.c), for both
 * block products: A, 32 rows of which the first `rows` are read (strides
 * sam, sak), dst[c][i][kk] = A[i][c*32 + kk]; B, 32 columns of which the
 * first `cols` are read (strides sbk, sbn), VNNI pairs, dst[c][h][r][2j +
 * e] = B[c*32 + 2r + e][h*16 + j]; k padded with zeros to kp (a multiple
 * of 32). */
CPU_HIDDEN void cpu_fast_amx_bf16_pack_a(const uint16_t *a, int64_t sam, int64_t sak,
                                         int64_t rows, int64_t k, int64_t kp, uint16_t *dst);
CPU_HIDDEN void cpu_fast_amx_bf16_pack_b(const uint16_t *b, int64_t sbk, int64_t sbn,
                                         int64_t cols, int64_t k, int64_t kp, uint16_t *dst);
/* f16 on the bf16 tiles, each value split into two bf16 values so every
 * product is exact (fast/gemm/gemm_amx_f16.c). The packers write the
 * layouts gemm_amx.c's bf16 packers write, four tile k elements per source
 * k step (kp: the padded tile k, a multiple of 32): A, 32 rows of which
 * the first `rows` are read (strides sam, sak); B, 32 columns of which the
 * first `cols` are read (strides sbk, sbn); zeros elsewhere. (The merge
 * into an f16 C is gemm_amx.c's, shared with bf16.) */
CPU_HIDDEN void cpu_fast_amx_f16_pack_a(const uint16_t *a, int64_t sam, int64_t sak,
                                        int64_t rows, int64_t k, int64_t kp,
                                        uint16_t *dst);
CPU_HIDDEN void cpu_fast_amx_f16_pack_b(const uint16_t *b, int64_t sbk, int64_t sbn,
                                        int64_t cols, int64_t k, int64_t kp,
                                        uint16_t *dst);

/* Fused attention, AVX-512 (fast/attention/attention_avx512.c): q, k, v and
 * out each f32, bf16 or f16, f32 arithmetic; the caller has checked the
 * CPU features. */
CPU_HIDDEN bp_status_t cpu_fast_attention_avx512(cpu_device_t *dev,
                                             const bp_attention_args_t *a);

/* Matrix-vector products, f32 (f64 when f64), threaded over dev's pool
 * (fast/gemm/gemv.c). dot: y[i] = alpha * A[i][:] . x + beta * y[i] for m rows
 * of k contiguous elements lda apart. axpy: y[j] = alpha * sum_p x[p] *
 * B[p][j] + beta * y[j] for k rows of n contiguous elements ldb apart.
 * Strides in elements; beta == 0 leaves y unread. */
CPU_HIDDEN void cpu_fast_gemv_dot(cpu_device_t *dev, bool f64, int64_t m, int64_t k,
                              const void *a, int64_t lda, const void *x,
                              int64_t incx, void *y, int64_t incy, double alpha,
                              double beta);
CPU_HIDDEN void cpu_fast_gemv_axpy(cpu_device_t *dev, bool f64, int64_t k, int64_t n,
                               const void *x, int64_t incx, const void *b,
                               int64_t ldb, void *y, int64_t incy, double alpha,
                               double beta);

/* Floats of f32 C per band of an f16 / bf16 GEMM with k past one k block
 * (4 MiB of C, gemm.c); a device's tune.gemm_band_floats replaces it. */
#define CPU_FAST_GEMM_BAND_FLOATS ((int64_t)1 << 20)
/* Floats of f32 C per row group of an f16 / bf16 GEMM run by the team
 * (16 MiB, gemm_team.c): B is packed once per row group, so a group as tall
 * as an f32 one keeps the packing what f32 pays; a device's
 * tune.gemm_band_floats replaces it too. */
#define CPU_FAST_GEMM_TEAM_C_FLOATS ((int64_t)1 << 22)

/* A threaded GEMM is split by rows (one team sharing B) when m reaches
 * this many MR panels per thread or C is taller than wide in tiles;
 * otherwise by columns (gemm.c). Splitting by columns gives each thread its
 * own columns of B to pack and keep in its own L2; the team instead shares
 * each packed B block, which then has to reach both cores' L2 and be
 * waited for block by block, which costs more than it saves when there
 * are few rows (docs/performance.md has the figures). A device's
 * tune.gemm_row_split_panels replaces it. */
#define CPU_FAST_GEMM_ROW_SPLIT_PANELS 48

/* Per-thread scratch memory, 64-byte aligned, kept between calls and freed
 * when the thread exits. slot selects one of a few independent buffers:
 * 0 and 1 the GEMM panels, 2 and 3 conv2d's and AMX's buffers (held while
 * they call the GEMM), 4 the f32 C band of an f16 / bf16 GEMM. */
CPU_HIDDEN void *cpu_fast_scratch(unsigned slot, size_t bytes);

#endif /* BACKPLANE_CPU_FAST_GEMM_H */
