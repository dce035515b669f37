/*
 * fast/conv/conv2d.h — internals shared by the conv2d fast path's files:
 * conv2d.c (routes, planning, weights), conv2d_igemm.c (the implicit-GEMM
 * loops that run on the pool) and conv2d_pad.c (padded image rows, which
 * both use). Calls go one way: conv2d.c -> conv2d_igemm.c -> conv2d_pad.c.
 */
#ifndef BACKPLANE_CPU_FAST_CONV2D_H
#define BACKPLANE_CPU_FAST_CONV2D_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "plugins/cpu/fast/gemm/gemm.h"
#include "plugins/cpu/fast/vec.h"

#define CONV_NR_MAX 32              /* widest micro-kernel tile (NR) */
#define CONV_TILE_BYTES (384 << 10) /* packed image tile, kept in L2 */
#define CONV_DIRECT_NC 512          /* output pixels per block, in-place route */
#define CONV_DIRECT_TASKS 8         /* in place, several threads: blocks per thread */
#define CONV_KC_DIRECT 384          /* k block of the in-place route (see plan) */
#define CONV_KC_MAX 256             /* k block: a micro-panel (KC x NR) stays in L1 */
#define CONV_ROW_MAX 4096           /* widest padded row split into phases */
#define CONV_PAD_AHEAD 4            /* channels prefetched ahead of the padding */

/* Zero-padded copy of the images, so packing needs no bounds checks:
 * plane (n, c) of Hp x Wp floats, x's pixel (h, w) at (h + ph, w + pw). */
typedef struct pad_job {
  const float *x;
  float *xp;
  int64_t C, H, W, Hp, Wp, ph, pw, sxn, sxc, sxh, sxw;
  int64_t sw, wq; /* rows split into sw phases of wq (Wp = sw * wq) */
} pad_job_t;

typedef struct conv_job {
  const cpu_fast_gemm_kernel_t *kr;
  const float *x, *ap; /* image, packed weights (all groups) */
  /* pix_task: every NR-channel block's packed weights, kept between calls
   * (constant weights, fast/prepared.h), or NULL: each task packs its own */
  const float *wpacked;
  float *y;
  const float *bias; /* K floats or NULL */
  int64_t C, H, W, K, P, Q, R, S, G, cg, kg, crs;
  int64_t sxn, sxc, sxh, sxw, syn, syk;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t kc, nc, ncb, pm; /* blocking; column blocks; m parts */
  int64_t lda;             /* floats between two output channels' weights */
  int64_t wq;              /* > 0: rows are split into stride_w phases this wide */
  int64_t Hin, Win;        /* extent of the planes x points at (padded or not) */
  bool lim_ok;             /* x's strides are positive: reads may run to its end */
  const int64_t *off;      /* per k row (c, r, s): tap offset, for conv_direct */
  int64_t off_max;         /* the largest of them (phases make them unordered) */
  bool direct;             /* B read in place (conv_direct), off set */
  bool pix;                /* channels along the vector (pix_task), off set */
  /* dyn: the pool runs one chunk per worker, and each claims tasks from
   * *next until ntasks are taken */
  bool dyn;
  int64_t ntasks;
  _Atomic int64_t *next;
  /* slab: each task pads the input rows its block needs (pad, slab_rows of
   * them per channel) into its own scratch, instead of one padded copy */
  bool slab;
  int64_t slab_rows;
  pad_job_t pad;
  const bp_plugin_tensor_t *wt;
} conv_job_t;

/* The f32 GEMM kernel the conv routes run on under dev's ISA ceiling
 * (AVX-512, else AVX2 + FMA), or NULL where the CPU has neither. In
 * conv2d.c. */
CPU_HIDDEN const cpu_fast_gemm_kernel_t *cpu_fast_conv_sgemm_kernel(const cpu_device_t *dev);

/* The constant id of the call's weights (bp_conv2d_args_t.w_const_id, ABI
 * 1.6), 0 for none or from an older core. */
CPU_HIDDEN uint64_t cpu_fast_conv_const_id(const bp_conv2d_args_t *a);
/* The prepared form `tag` of the call's weights, laid out for kernel kr
 * with `extra` (what else it depends on), held until cpu_prep_release
 * (fast/prepared.h; *fresh: the caller fills it); NULL without a constant
 * id or room. */
struct cpu_prep;
CPU_HIDDEN struct cpu_prep *cpu_fast_conv_prepared(const bp_conv2d_args_t *a, char tag,
                                                   const cpu_fast_gemm_kernel_t *kr,
                                                   uint64_t extra, size_t bytes, bool *fresh);

/* Padded rows [h0, h1) of one channel plane xc into d (Wp floats each).
 * ahead, when not NULL, is a plane padded later: its same rows are
 * prefetched meanwhile (the planes lie a plane apart, too far for the
 * hardware prefetchers, and the copies would wait on memory). In
 * conv2d_pad.c. */
CPU_HIDDEN void cpu_fast_conv_pad_rows(const pad_job_t *j, const float *xc, int64_t h0, int64_t h1,
                                   float *d, const float *ahead);

/* The next strip of output pixels from jj (at most end) that the in-place
 * route reads: one or two halves of W lanes, each on one output row, the
 * second only after a full first. Returns its width. */
CPU_HIDDEN int64_t cpu_fast_conv_strip(int64_t Q, int64_t W, int64_t jj, int64_t end);

/* Scratch slot 3 bytes one worker needs for its packed image tile. */
CPU_HIDDEN size_t cpu_fast_conv_tile_bytes(const conv_job_t *j);

/* Pool tasks (cpu_pool_fn) over a conv_job_t: blocks of output pixels
 * (packed or in place), or blocks of NR output channels (j->pix). */
CPU_HIDDEN void cpu_fast_conv_task(void *ctx, int64_t begin, int64_t end, unsigned worker);
CPU_HIDDEN void cpu_fast_conv_pix_task(void *ctx, int64_t begin, int64_t end, unsigned worker);

/* Depthwise stencil of one plane, stride-1 rows, AVX2 (fast/conv/conv2d_dw_avx2.c):
 * cpu_fast_vec_kernels_t.dw_plane's contract for g->sw == 1; nt: store full
 * aligned vectors with non-temporal stores (the caller fences). */
CPU_HIDDEN void cpu_fast_conv_dw_plane_avx2(const cpu_fast_dw_geom_t *g, const float *x, const float *w,
                                        float bias, float *y, float *buf, int nt);
/* The same stencil with 16 lanes (fast/conv/conv2d_dw_avx512.c): g->Wp a
 * multiple of 16. */
CPU_HIDDEN void cpu_fast_conv_dw_plane_avx512(const cpu_fast_dw_geom_t *g, const float *x,
                                              const float *w, float bias, float *y, float *buf,
                                              int nt);
/* 3 x 3 depthwise with stride 1 and no dilation down the rows, unit-strided
 * rows (fast/conv/conv2d_dw3_kern.h, in conv2d_dw_avx512.c and
 * conv2d_dw_avx2.c): three output rows in flight, each input row loaded
 * once for all three; x read in place under lane masks (no padded copy,
 * no buffer). nt as above. */
CPU_HIDDEN void cpu_fast_conv_dw3_plane_avx512(const cpu_fast_dw_geom_t *g, const float *x,
                                               const float *w, float bias, float *y, int nt);
CPU_HIDDEN void cpu_fast_conv_dw3_plane_avx2(const cpu_fast_dw_geom_t *g, const float *x,
                                             const float *w, float bias, float *y, int nt);

/* cpu_fast_sgemm_avx2's in-place and channels-along-the-vector kernels with 4
 * rows instead of 6, for a last panel of at most 4 output channels or
 * pixels (fast/conv/conv2d_ukr_avx2.c). */
CPU_HIDDEN extern const cpu_fast_ukr_offs_fn cpu_fast_conv_ukr_offs4_avx2;
CPU_HIDDEN extern const cpu_fast_ukr_pix_fn cpu_fast_conv_ukr_pix4_avx2;
CPU_HIDDEN extern const cpu_fast_ukr_pix_fn cpu_fast_conv_ukr_pix6_avx2;

/* ---- the direct route (f32, AVX-512): fast/conv/conv2d_direct.c ---- */

#define DC_NP 14 /* pixels per tile of the direct kernel (2 x 14 accumulators) */

/* One segment of an output row for up to 32 output channels: npix pixels,
 * pixel p's input at x + p * sw (tap (0, 0) of channel 0), tap t at
 * + off[t], channel c at + c * sxc; w the channels' packed weights,
 * w[(c * rs + t) * 32 + k] (64-byte aligned, zero past nk); y the first
 * channel's first pixel, channel k at + k * syk; bias nk floats or NULL;
 * pf the next segment's input (its lines are prefetched; never NULL).
 * Only taps [t0, t1) of each channel run: the filter rows that fall on
 * the zero rows padding the image above or below add nothing. With col
 * (not NULL: the image has padding left or right), a tile's first or last
 * pixel also leaves out the taps whose column falls on that padding:
 * output column ow's tap t reads image column ow * sw + col[t], ow0 is
 * the segment's first output column, W the image's width and S the
 * filter's (taps per filter row). */
typedef struct dconv_seg {
  const float *x, *w, *bias, *pf;
  float *y;
  const int64_t *off, *col;
  int64_t cg, rs, sxc, syk, sw, npix, t0, t1, ow0, W, S;
  int nk;
} dconv_seg_t;

/* The segment on AVX-512 (fast/conv/conv2d_direct_avx512.c). */
CPU_HIDDEN void cpu_fast_conv_dseg_avx512(const dconv_seg_t *s);

/* f32 conv2d on the direct route (AVX-512 CPUs): BP_ERR_UNIMPLEMENTED,
 * having written nothing, for layers it does not take (depthwise, fewer
 * than 16 output channels per group, scratch not to be had). */
CPU_HIDDEN bp_status_t cpu_fast_conv2d_direct(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                              const float *bias);

/* f32 1x1 stride-1 layers over dense planes of at least a floor of pixels
 * (the device's tune.conv_pointwise_min_pixels, else the kernel's), as a
 * GEMM per image with the pixels along the vector
 * (fast/conv/conv2d_pointwise.c); kr is the GEMM kernel (its ukr_cols and
 * panel packer). BP_ERR_UNIMPLEMENTED, having written nothing, for the
 * layers it does not take. */
CPU_HIDDEN bp_status_t cpu_fast_conv2d_pointwise(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                                 const cpu_fast_gemm_kernel_t *kr,
                                                 const float *bias);

/* ---- Winograd F(2x2, 3x3) (f32, AVX-512): fast/conv/conv2d_winograd.c ---- */

#define WINO_NT 32 /* tiles per chunk: one B panel of the 12 x 32 kernel, two of the 6 x 16 */
/* Floats between two xi of a chunk's V (rows = C) or M (rows = K): a line
 * more than the rows, so the 16 xi a transform writes or reads together
 * do not all fall in one L1 set. */
#define WINO_XI_STRIDE(rows) ((rows) * WINO_NT + 16)

/* One 3x3 stride-1 layer as 16 GEMMs over transformed tiles: every 2 x 2
 * block of output pixels is a tile, T = N * TH * TW of them, numbered
 * row by row ((n * TH + ti) * TW + tj), and cut into chunks of WINO_NT.
 *   U[xi][K][C]: each filter g as G g G^T (xi = 4 i + j of the 4 x 4);
 *   per chunk, V[xi][C][WINO_NT]: each tile's 4 x 4 input patch d as
 *   B^T d B, and M[xi][K][WINO_NT] = U[xi] . V[xi];
 *   y's 2 x 2 block = A^T m A, plus the bias.
 * Strides in floats; x and y unit-strided along their rows. */
typedef struct wino_job {
  const float *x, *w, *bias;
  float *y, *U;
  int64_t N, C, K, H, W, P, Q, TH, TW, T, ph, pw;
  int64_t sxn, sxc, sxh, swk, swc, swr, sws, syn, syk, syh;
  /* the largest |x| and |w| seen (as float bits, which order as the
   * values do), or UINT32_MAX after a NaN: with a value that is not
   * finite, or too large for the transforms' sums to stay finite where
   * the direct route's would, the caller leaves the layer to the direct
   * route, which keeps an inf or NaN to the outputs whose windows read
   * it */
  _Atomic uint32_t xmax, wmax;
} wino_job_t;

/* The transforms per ISA (fast/conv/conv2d_winograd_kern.h). The filter's
 * takes output channels [k0, k1) into j->U; the scan the planes [p0, p1)
 * (n * C + c) of x; the input's and the output's take tiles [t0, t0 + nt)
 * (nt <= WINO_NT) from x into a chunk's V, and from a chunk's M into y.
 * The filter's and the scan record the largest magnitudes they read
 * (wino_job_t). */
typedef struct wino_kernels {
  void (*filter)(wino_job_t *j, int64_t k0, int64_t k1);
  void (*scan)(wino_job_t *j, int64_t p0, int64_t p1);
  void (*input)(wino_job_t *j, int64_t t0, int64_t nt, float *V);
  void (*output)(const wino_job_t *j, int64_t t0, int64_t nt, const float *M);
} wino_kernels_t;
CPU_HIDDEN extern const wino_kernels_t cpu_fast_wino_avx512, cpu_fast_wino_avx2;

/* f32 3x3 stride-1 conv2d by Winograd F(2x2, 3x3) on an AVX-512 or AVX2
 * CPU: BP_ERR_UNIMPLEMENTED, y untouched, for layers it does not take (groups,
 * other filters or strides, too few channels or pixels to pay, scratch
 * not to be had) and for inputs or weights that are not all
 * finite. */
CPU_HIDDEN bp_status_t cpu_fast_conv2d_winograd(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                                const float *bias);

/* bf16 conv2d on AMX tiles (fast/conv/conv2d_bf16.c): x, w, y bf16 with
 * dense output planes, bias widened to K floats or NULL. Call only when
 * cpu_fast_conv_amx_ok(dev). */
CPU_HIDDEN bool cpu_fast_conv_amx_ok(const cpu_device_t *dev);
CPU_HIDDEN bp_status_t cpu_fast_conv2d_bf16(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                            const float *bias);

/* bf16 conv2d as an implicit GEMM on AMX tiles, filter read in place and
 * the input gathered straight into VNNI blocks (fast/conv/conv2d_amx.c):
 * the layers cpu_fast_conv_amx_direct_ok() accepts (stride 1); same
 * contract as cpu_fast_conv2d_bf16. */
CPU_HIDDEN bool cpu_fast_conv_amx_direct_ok(const bp_conv2d_args_t *a);
CPU_HIDDEN bp_status_t cpu_fast_conv2d_amx(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                           const float *bias);

/* The same layers with the input transposed once per run of pixel blocks
 * into channel pairs that the tiles read in place, for every tap
 * (fast/conv/conv2d_amx_pairs.c): those of cpu_fast_conv_amx_direct_ok()
 * that cpu_fast_conv_amx_pairs_ok() also accepts; same contract. */
CPU_HIDDEN bool cpu_fast_conv_amx_pairs_ok(const bp_conv2d_args_t *a);
CPU_HIDDEN bp_status_t cpu_fast_conv2d_amx_pairs(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                                 const float *bias);

/* A y whose planes are not dense (channels-last, gaps between rows)
 * (fast/conv/conv2d_relayout.c): a channels-last 1x1 layer as one GEMM
 * over the tensors as they lie, anything else through dense copies (x
 * copied into NCHW when its rows are not unit-strided, the call into a
 * dense y, that y copied into the caller's layout); nothing written to y
 * on a decline. bias: K floats (widened) or NULL. */
CPU_HIDDEN bool cpu_fast_conv2d_needs_relayout(const bp_conv2d_args_t *a);
CPU_HIDDEN bp_status_t cpu_fast_conv2d_relayout(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                                const float *bias);
/* dst = src, 4-D, element by element (converting between float dtypes). */
CPU_HIDDEN void cpu_fast_conv_copy_elements(const bp_plugin_tensor_t *dst,
                                            const bp_plugin_tensor_t *src);

/* bf16 conv2d without AMX tiles (fast/conv/conv2d_widen.c): x and w
 * widened to dense f32, the f32 routes, y rounded to bf16 into the
 * caller's layout; nothing written to y on a decline. */
CPU_HIDDEN bp_status_t cpu_fast_conv2d_widened(cpu_device_t *dev, const bp_conv2d_args_t *a);

#endif /* BACKPLANE_CPU_FAST_CONV2D_H */
