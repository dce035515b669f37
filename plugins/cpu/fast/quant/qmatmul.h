/*
 * fast/quant/qmatmul.h — GEMM / GEMV with q8_0 / q4_0 weights
 * (bp_qmatmul): what the dispatch (qmatmul.c) shares with its ISA files.
 *
 * The default path is ggml's: the activation rows are quantized to int8
 * blocks of 32 (scale amax / 127, kept in f32), and each (activation
 * block, weight block) pair is an exact int8 dot product (vpdpbusd on
 * AVX512-VNNI in qmatmul_vnni.c, vpmaddubsw on AVX2 in qmatmul_avx2.c)
 * times the two scales, summed in f32. qmatmul_avx512.c keeps the f32 path
 * (each block decoded to f32, f32 activations), more accurate and slower,
 * for BP_CPU_QMATMUL_ISA=f32.
 */
#ifndef BACKPLANE_CPU_FAST_QMATMUL_H
#define BACKPLANE_CPU_FAST_QMATMUL_H

#include "plugins/cpu/cpu.h"

/* ---- the int8-activation path ---------------------------------------------- */

/* A register tile: up to CPU_QM8_R activation rows x CPU_QM8_C weight rows
 * (output columns). */
#define CPU_QM8_R 4
#define CPU_QM8_C 4

/* The activations, quantized: row r's block b has its 32 int8 values at
 * q + r * q_row + b * 32 and its scale at d[r * d_row + b]. Rows are padded
 * to an even number of blocks with zero values and scales, so a kernel may
 * read blocks in pairs. For the VNNI kernel (lanes: 16 floats / int32 per
 * pair of blocks, lane i covering bytes 4i..4i+3 of the pair):
 *   biased   the values are stored + 128 (u8), for q8_0 weights, whose
 *            correction comes from the weights;
 *   ds       the pair's two scales, each spread over its block's 8 lanes;
 *   corr     (q4_0 weights, unbiased values) -8 * the sum of each lane's 4
 *            values: the nibbles' offset of 8, taken out in the int32 start
 *            value of the dot product. */
typedef struct cpu_qm8_act {
  int64_t q_row, d_row, lane_row;
  const uint8_t *q;
  const float *d, *ds;
  const int32_t *corr;
  bool biased;
} cpu_qm8_act_t;

/* The weights: row j (output column j) starts at base + j * row_bytes and
 * holds blocks of block_bytes (34 for q8_0, 18 for q4_0). */
typedef struct cpu_qm8_w {
  bp_dtype_t dtype;
  const uint8_t *base;
  int64_t row_bytes, block_bytes;
} cpu_qm8_w_t;

/* One register tile: activation rows [r0, r0 + rows) against weight rows
 * [j0, j0 + cols) over blocks [b0, b1) (b0 even; b1 may be odd only where
 * the row ends), rows <= CPU_QM8_R, cols <= CPU_QM8_C:
 * out[r * CPU_QM8_C + c] = sum_b d_a * d_w * dot(q_a, q_w) in f32. */
typedef struct cpu_qm8_part {
  int64_t r0, j0, b0, b1;
  int rows, cols;
} cpu_qm8_part_t;

typedef void (*cpu_qm8_kernel_fn)(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a, const cpu_qm8_part_t *p,
                                  float *out);

/* AVX512-VNNI (qmatmul_vnni.c): ds, and biased (q8_0) or corr (q4_0). */
CPU_HIDDEN void cpu_qm8_vnni(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a, const cpu_qm8_part_t *p,
                             float *out);
/* AVX2 without VNNI (qmatmul_avx2.c): unbiased values and d only. */
CPU_HIDDEN void cpu_qm8_avx2(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a, const cpu_qm8_part_t *p,
                             float *out);

/* ---- the f32 path ----------------------------------------------------------- */

/* One tile of the f32 path: rows (<= CPU_QM_ROWS) of contiguous f32 a
 * against output columns [j0, j1) of w (rows of `blocks` blocks,
 * w_row_bytes apart); y[r][j * y_stride] = the f32 sum. */
#define CPU_QM_ROWS 16
typedef struct cpu_qm_tile {
  bp_dtype_t dtype;
  int rows;
  int64_t j0, j1, blocks, block_bytes, w_row_bytes, y_stride;
  const uint8_t *w;
  const float *a[CPU_QM_ROWS];
  float *y[CPU_QM_ROWS];
} cpu_qm_tile_t;

CPU_HIDDEN void cpu_qmatmul_avx512_tile(const cpu_qm_tile_t *t);

#endif /* BACKPLANE_CPU_FAST_QMATMUL_H */
