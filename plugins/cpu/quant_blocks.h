/*
 * quant_blocks.h — the block formats BP_Q8_0 / BP_Q4_0 (docs/ops.md,
 * "Quantized types"), as ggml's reference code writes and reads them, and
 * the row addressing of the quantized ops. Shared by the reference
 * (ref/ref_quant.c) and the fast paths (fast/quant/), which link apart.
 * Arithmetic is f32 without fused multiply-adds (ISO C mode), as ggml's
 * reference rounds.
 */
#ifndef BACKPLANE_CPU_QUANT_BLOCKS_H
#define BACKPLANE_CPU_QUANT_BLOCKS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

#define CPU_QB 32 /* weights per block */

static inline size_t cpu_qblock_bytes(bp_dtype_t dt) {
  return dt == BP_Q8_0 ? 34 : dt == BP_Q4_0 ? 18 : 0;
}

/* Block `blk` (counted from the tensor's offset) of a block-dtype tensor. */
static inline uint8_t *cpu_qblock(const bp_plugin_tensor_t *t, int64_t blk) {
  return (uint8_t *)cpu_tensor_base(t) + blk * (int64_t)cpu_qblock_bytes(t->dtype);
}

/* Element offset of row r (all dims but the last, row-major over shape)
 * of t, whose shape is `shape` (t may broadcast by stride 0). */
static inline int64_t cpu_row_offset(const bp_plugin_tensor_t *t, const int64_t *shape,
                                     int32_t rank, int64_t r) {
  int64_t off = 0;
  for (int32_t d = rank - 2; d >= 0; d--) {
    off += (r % shape[d]) * t->strides[d];
    r /= shape[d];
  }
  return off;
}

static inline void cpu_q_put_scale(uint8_t *blk, float d) {
  uint16_t h = bp_f64_to_f16(d);
  memcpy(blk, &h, 2);
}

static inline float cpu_q_scale(const uint8_t *blk) {
  uint16_t h;
  memcpy(&h, blk, 2);
  return bp_f16_to_f32(h);
}

/* ggml's quantize_row_q8_0_ref for one block. */
static inline void cpu_q8_0_quantize(const float *x, uint8_t *blk) {
  float amax = 0.0f;
  for (int j = 0; j < CPU_QB; j++) amax = fmaxf(amax, fabsf(x[j]));
  const float d = amax / 127.0f;
  const float id = d ? 1.0f / d : 0.0f;
  cpu_q_put_scale(blk, d);
  int8_t *qs = (int8_t *)(blk + 2);
  for (int j = 0; j < CPU_QB; j++) qs[j] = (int8_t)roundf(x[j] * id);
}

/* ggml's quantize_row_q4_0_ref for one block: the scale maps the value of
 * largest magnitude to -8; nibble j holds weight j (low) and j + 16 (high). */
static inline void cpu_q4_0_quantize(const float *x, uint8_t *blk) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < CPU_QB; j++)
    if (amax < fabsf(x[j])) {
      amax = fabsf(x[j]);
      max = x[j];
    }
  const float d = max / -8.0f;
  const float id = d ? 1.0f / d : 0.0f;
  cpu_q_put_scale(blk, d);
  for (int j = 0; j < CPU_QB / 2; j++) {
    float x0 = x[j] * id, x1 = x[CPU_QB / 2 + j] * id;
    int8_t v0 = (int8_t)(x0 + 8.5f), v1 = (int8_t)(x1 + 8.5f);
    uint8_t q0 = (uint8_t)(v0 < 15 ? v0 : 15), q1 = (uint8_t)(v1 < 15 ? v1 : 15);
    blk[2 + j] = (uint8_t)(q0 | (q1 << 4));
  }
}

/* The block's 32 quantized integers (q8_0: -128..127, q4_0: -8..7). */
static inline void cpu_qblock_ints(bp_dtype_t dt, const uint8_t *blk, int8_t *q) {
  if (dt == BP_Q8_0) {
    memcpy(q, blk + 2, CPU_QB);
    return;
  }
  for (int j = 0; j < CPU_QB / 2; j++) {
    q[j] = (int8_t)((blk[2 + j] & 0x0F) - 8);
    q[j + CPU_QB / 2] = (int8_t)((blk[2 + j] >> 4) - 8);
  }
}

/* ggml's dequantize_row_q{8,4}_0: y = q * d in f32. */
static inline void cpu_qblock_dequantize(bp_dtype_t dt, const uint8_t *blk, float *y) {
  int8_t q[CPU_QB];
  cpu_qblock_ints(dt, blk, q);
  const float d = cpu_q_scale(blk);
  for (int j = 0; j < CPU_QB; j++) y[j] = (float)q[j] * d;
}

/* saturate(rne(v)) to int8; NaN gives 0. */
static inline int8_t cpu_sat_i8(float v) {
  if (v != v) return 0;
  float r = nearbyintf(v);
  return (int8_t)(r < -128.0f ? -128 : r > 127.0f ? 127 : r);
}

/* saturate(rne(v)) to uint8; NaN gives 0. */
static inline uint8_t cpu_sat_u8(float v) {
  if (v != v) return 0;
  float r = nearbyintf(v);
  return (uint8_t)(r < 0.0f ? 0 : r > 255.0f ? 255 : r);
}

#endif /* BACKPLANE_CPU_QUANT_BLOCKS_H */
