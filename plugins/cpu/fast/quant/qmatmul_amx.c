/*
 * fast/quant/qmatmul_amx.c — bp_qmatmul at prompt shapes on AMX-INT8:
 * ggml's int8 scheme (qmatmul.h), each block of 32 along k one TDPBSSD per
 * tile pair, so the int8 work of a block runs in the tile unit and only
 * the per-block scaling (int32 -> f32, times d_a and d_w) runs on AVX-512.
 *
 * The weights are the A operand: a weight row's block is 32 contiguous
 * int8 (q8_0 as stored, q4_0 decoded to nibble - 8), 16 weight rows per A
 * tile; each task decodes its panel of 32 weight rows once for all its
 * activation rows. The activations are the B operand, in the VNNI layout
 * built once per call when they are quantized: per group of 16 rows and
 * block, 8 x 64 bytes (k step s holds values 4s..4s+3 of each row) and the
 * 16 rows' scales. C tiles are [16 weight rows x 16 activation rows], so
 * the accumulators are y transposed, written out at the end of each tile.
 */
#include <immintrin.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/fast/amx_tiles.h"
#include "plugins/cpu/fast/quant/qmatmul.h"
#include "plugins/cpu/quant_blocks.h"

#define GROUP 16        /* activation rows per B tile */
#define GROUP_BLOCK 576 /* a group's block: 8 x 64 bytes of values, 16 f32 scales */
#define PANEL 32        /* weight rows per task: two A tiles */
#define TASK_ROWS 64    /* activation rows per task */

typedef struct amx_job {
  const bp_qmatmul_args_t *args;
  int64_t m, rows, n, nb, groups, panels, row_blocks;
  uint8_t *act; /* groups x nb x GROUP_BLOCK */
  int failed;
} amx_job_t;

/* C 0-3: 16 x 16 int32; A 4-5: 16 weight rows x 32 bytes; B 6-7: 8 k steps
 * x 16 activation rows x 4 bytes. */
static void configure(void) {
  static const uint8_t rows[8] = {16, 16, 16, 16, 16, 16, 8, 8};
  static const uint16_t colsb[8] = {64, 64, 64, 64, 32, 32, 64, 64};
  cpu_amx_configure(rows, colsb);
}

static void quantize_rows(void *vctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  amx_job_t *j = vctx;
  uint8_t q[CPU_QB];
  for (int64_t row = begin; row < end; row++) {
    int64_t g = row / GROUP, r = row % GROUP;
    for (int64_t b = 0; b < j->nb; b++) {
      float d = cpu_qm8_quantize_block(&j->args->a, j->m, row, b, q);
      uint8_t *blk = j->act + (g * j->nb + b) * GROUP_BLOCK;
      for (int s = 0; s < 8; s++) memcpy(blk + s * 64 + 4 * r, q + 4 * s, 4);
      memcpy(blk + 512 + 4 * r, &d, 4);
    }
  }
}

/* The panel's weights as int8 (wp: per block, 32 rows of 32 bytes) and
 * their scales (dw: per block, 32); rows past n are zero. */
static void decode_panel(const amx_job_t *j, int64_t panel, int8_t *wp, float *dw) {
  const bp_plugin_tensor_t *W = &j->args->w;
  int64_t bb = (int64_t)cpu_qblock_bytes(W->dtype), rb = W->strides[0] / CPU_QB * bb;
  const uint8_t *base = cpu_qblock(W, 0);
  const __m128i lo4 = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  for (int64_t b = 0; b < j->nb; b++)
    for (int c = 0; c < PANEL; c++) {
      int64_t row = panel * PANEL + c;
      int8_t *dst = wp + (b * PANEL + c) * CPU_QB;
      if (row >= j->n) {
        memset(dst, 0, CPU_QB);
        dw[b * PANEL + c] = 0.0f;
        continue;
      }
      const uint8_t *blk = base + row * rb + b * bb;
      dw[b * PANEL + c] = cpu_q_scale(blk);
      if (W->dtype == BP_Q8_0) {
        memcpy(dst, blk + 2, CPU_QB);
        continue;
      }
      __m128i q = _mm_loadu_si128((const __m128i *)(blk + 2));
      _mm_storeu_si128((__m128i *)dst, _mm_sub_epi8(_mm_and_si128(q, lo4), eight));
      _mm_storeu_si128((__m128i *)(dst + 16), _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), lo4), eight));
    }
}

/* acc[c][r] (32 weight rows x 32 activation rows) += block b's int32 tiles
 * (ct) scaled by d_w[c] * d_a[r]. */
static void scale_block(const int32_t *ct, const float *dw, const uint8_t *g0, const uint8_t *g1, float *acc) {
  for (int gb = 0; gb < 2; gb++) {
    __m512 da = _mm512_loadu_ps((gb ? g1 : g0) + 512);
    for (int jb = 0; jb < 2; jb++) {
      const int32_t *t = ct + (jb * 2 + gb) * 256;
      for (int i = 0; i < 16; i++) {
        float *a = acc + (jb * 16 + i) * 32 + gb * 16;
        __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(t + i * 16)), da);
        _mm512_store_ps(a, _mm512_fmadd_ps(v, _mm512_set1_ps(dw[jb * 16 + i]), _mm512_load_ps(a)));
      }
    }
  }
}

/* acc (transposed) into y: rows of groups g, g + 1, the panel's columns. */
static void store_tile(const amx_job_t *j, int64_t panel, int64_t g, const float *acc) {
  const bp_plugin_tensor_t *Y = &j->args->y;
  int64_t cs = Y->strides[Y->rank - 1], j0 = panel * PANEL;
  int cols = (int)(j->n - j0 < PANEL ? j->n - j0 : PANEL);
  for (int r = 0; r < 2 * GROUP && g * GROUP + r < j->rows; r++) {
    int64_t row = g * GROUP + r, off = (Y->rank == 3 ? row / j->m * Y->strides[0] : 0) +
                                      row % j->m * Y->strides[Y->rank - 2] + j0 * cs;
    if (Y->dtype == BP_F32) {
      float *y = (float *)cpu_tensor_base(Y) + off;
      for (int c = 0; c < cols; c++) y[c * cs] = acc[c * 32 + r];
    } else {
      for (int c = 0; c < cols; c++) cpu_store(cpu_tensor_base(Y), Y->dtype, off + c * cs, acc[c * 32 + r]);
    }
  }
}

/* 32 weight rows of the panel x activation groups g, g + 1. */
static void tile_pair(const amx_job_t *j, const int8_t *wp, const float *dw, int64_t panel, int64_t g,
                      int32_t *ct, float *acc) {
  memset(acc, 0, PANEL * 2 * GROUP * sizeof(float));
  for (int64_t b = 0; b < j->nb; b++) {
    const uint8_t *g0 = j->act + (g * j->nb + b) * GROUP_BLOCK, *g1 = g0 + j->nb * GROUP_BLOCK;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, wp + b * PANEL * CPU_QB, CPU_QB);
    _tile_loadd(5, wp + b * PANEL * CPU_QB + 16 * CPU_QB, CPU_QB);
    _tile_loadd(6, g0, 64);
    _tile_loadd(7, g1, 64);
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
    _tile_stored(0, ct, 64); /* tile numbers are immediates */
    _tile_stored(1, ct + 256, 64);
    _tile_stored(2, ct + 512, 64);
    _tile_stored(3, ct + 768, 64);
    scale_block(ct, dw + b * PANEL, g0, g1, acc);
  }
  store_tile(j, panel, g, acc);
}

/* Tasks: panel-major (panel, block of TASK_ROWS rows), so a worker's
 * contiguous run decodes each panel once. */
static void amx_task(void *vctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  amx_job_t *j = vctx;
  int8_t *wp = aligned_alloc(64, (size_t)(j->nb * PANEL * CPU_QB));
  float *dw = malloc((size_t)(j->nb * PANEL) * sizeof(float));
  int32_t *ct = aligned_alloc(64, 4 * 256 * sizeof(int32_t));
  float *acc = aligned_alloc(64, PANEL * 2 * GROUP * sizeof(float));
  if (!wp || !dw || !ct || !acc) {
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    goto out;
  }
  configure();
  int64_t decoded = -1;
  for (int64_t t = begin; t < end; t++) {
    int64_t panel = t / j->row_blocks, rb = t % j->row_blocks;
    if (panel != decoded) decode_panel(j, panel, wp, dw), decoded = panel;
    for (int64_t g = rb * (TASK_ROWS / GROUP); g < (rb + 1) * (TASK_ROWS / GROUP) && g < j->groups; g += 2)
      tile_pair(j, wp, dw, panel, g, ct, acc);
  }
  _tile_release();
out:
  free(wp), free(dw), free(ct), free(acc);
}

bp_status_t cpu_qm8_amx(cpu_device_t *dev, const bp_qmatmul_args_t *a) {
  const bp_plugin_tensor_t *A = &a->a, *W = &a->w;
  int32_t r = A->rank;
  amx_job_t j = {.args = a, .m = A->shape[r - 2], .n = W->shape[0], .nb = W->shape[1] / CPU_QB};
  j.rows = j.m * (r == 3 ? A->shape[0] : 1);
  j.groups = (j.rows + 2 * GROUP - 1) / (2 * GROUP) * 2; /* tiles go in pairs of groups */
  j.panels = (j.n + PANEL - 1) / PANEL;
  j.row_blocks = (j.groups * GROUP + TASK_ROWS - 1) / TASK_ROWS;
  /* rows past `rows` stay zero: their outputs are never stored */
  j.act = calloc((size_t)(j.groups * j.nb), GROUP_BLOCK);
  if (!j.act) return BP_ERR_OUT_OF_MEMORY;
  cpu_pool_run(dev->pool, j.rows, 1 + (1 << 14) / (j.nb * CPU_QB), quantize_rows, &j);
  cpu_pool_run(dev->pool, j.panels * j.row_blocks, 1, amx_task, &j);
  free(j.act);
  return j.failed ? BP_ERR_OUT_OF_MEMORY : BP_OK;
}
