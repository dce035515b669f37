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

/* The activations, quantized: each row is a run of records of
 * CPU_QM8_PAIR bytes, one per pair of blocks (rows are padded to an even
 * number of blocks with zero values and scales), so that a tile reads one
 * pointer per row. Lane i of a pair covers its values 4i..4i+3.
 *   bytes   0-63   the pair's 64 int8 values, + 128 (as u8) when `biased`
 *                  (VNNI with q8_0 weights, whose correction comes from the
 *                  weights);
 *   bytes  64-127  the two f32 scales, each repeated over its block's 8
 *                  lanes (block 2p in floats 0-7, block 2p + 1 in 8-15). */
#define CPU_QM8_PAIR 128
/* VNNI with q4_0 weights reads records of CPU_QM8_QUAD bytes instead, one
 * per group of 4 blocks (rows padded to whole groups with zero values and
 * scales), laid out as the kernel decodes a group of 4 weight blocks: the
 * low nibbles of block i meet values 0-15 and the high ones values 16-31.
 *   bytes   0-63   values 0-15 of block i at 16i..16i+15;
 *   bytes  64-127  values 16-31 of block i at 64+16i..;
 *   bytes 128-191  int32 lane l: -8 * the sum of the 8 values lane l covers
 *                  in the two halves (the nibbles' offset of 8);
 *   bytes 192-255  f32 lane l: the scale of block l / 4. */
#define CPU_QM8_QUAD 256
typedef struct cpu_qm8_act {
  int64_t row_bytes;
  const uint8_t *base;
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
 * [j0, j0 + cols) over blocks [b0, b1) (b0 a multiple of 4; b1 too but
 * where the row ends), rows <= CPU_QM8_R, cols <= CPU_QM8_C:
 * out[r * CPU_QM8_C + c] = sum_b d_a * d_w * dot(q_a, q_w) in f32. */
typedef struct cpu_qm8_part {
  int64_t r0, j0, b0, b1;
  int rows, cols;
} cpu_qm8_part_t;

typedef void (*cpu_qm8_kernel_fn)(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a, const cpu_qm8_part_t *p,
                                  float *out);

/* AVX512-VNNI (qmatmul_vnni.c): pair records, biased, for q8_0; quad
 * records for q4_0. */
CPU_HIDDEN void cpu_qm8_vnni(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a, const cpu_qm8_part_t *p,
                             float *out);
/* One row of f32 activations contiguous along k quantized into its quad
 * records, nb blocks and the pad to a whole record (qmatmul_vnni.c). */
CPU_HIDDEN void cpu_qm8_vnni_quad_row(const float *x, int64_t nb, uint8_t *recs);
/* AVX2 without VNNI (qmatmul_avx2.c): unbiased values. */
CPU_HIDDEN void cpu_qm8_avx2(const cpu_qm8_w_t *w, const cpu_qm8_act_t *a, const cpu_qm8_part_t *p,
                             float *out);

/* AMX-INT8 (qmatmul_amx.c), for prompt shapes: the whole op (a with at
 * least CPU_QM8_AMX_ROWS rows). Call only when CPUID has AMX-INT8 and
 * AVX-512 and cpu_amx_request() granted the tiles. BP_ERR_OUT_OF_MEMORY
 * when scratch memory cannot be had. */
#define CPU_QM8_AMX_ROWS 32
CPU_HIDDEN bp_status_t cpu_qm8_amx(cpu_device_t *dev, const bp_qmatmul_args_t *a);

/* Shared by the paths (qmatmul.c): block b of row `row` (batch * m + i)
 * of a quantized (unbiased int8 into q[32]; returns the block's scale), and
 * one output stored in y's dtype. */
CPU_HIDDEN float cpu_qm8_quantize_block(const bp_plugin_tensor_t *A, int64_t m, int64_t row, int64_t b,
                                        uint8_t *q);
CPU_HIDDEN void cpu_qm8_store_y(const bp_plugin_tensor_t *Y, int64_t m, int64_t row, int64_t j, float v);

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
