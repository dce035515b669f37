/*
 * fast/conv/conv2d_bf16.c — bf16 conv2d (NCHW) on the AMX-BF16 tiles, f32
 * accumulation, one rounding to bf16 per output.
 *
 * Stride-1 layers (cpu_fast_conv_amx_direct_ok) go to an implicit GEMM:
 * 1x1 to fast/conv/conv2d_amx_pairs.c (cpu_fast_conv_amx_pairs_ok), the
 * others to fast/conv/conv2d_amx.c; the rest (strides, depthwise, groups
 * of fewer than 16 output channels) run here:
 * Y[n][group] = W[group] · im2col(X[n][group]) as one bf16 GEMM per group,
 * batched over the images, run by fast/gemm's AMX driver (cpu_fast_gemm:
 * it packs the filter into VNNI pairs and the image columns into tiles,
 * and keeps each 32 x 32 block of Y in f32 tiles for all of k):
 *  - 1x1, stride 1, no padding, dense planes: the image planes are B as
 *    they lie, nothing is copied;
 *  - otherwise the patches are gathered once into a zero-padded bf16
 *    im2col buffer (crs rows of P*Q pixels per image), in parallel over
 *    (image, channel), which the GEMM then reads row-major; with
 *    unit-stride rows and stride 1 along them, each channel is padded once
 *    into a small plane and every (tap, output row) is one short copy.
 * Bias: y is filled with the bias (rounded to bf16) and the GEMM adds to
 * it (beta = 1), so no second pass over y is needed.
 * Taken only when the CPU has AMX-BF16 and the kernel grants tile state
 * (the GEMM's own condition, cpu_fast_gemm_lowp); otherwise
 * BP_ERR_UNIMPLEMENTED and the reference runs.
 */
#include <stdlib.h>
#include <string.h>

#include "conv2d.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

typedef struct bconv {
  const bp_conv2d_args_t *a;
  const uint16_t *x;
  uint16_t *col; /* im2col: [N][C*R*S][P*Q] */
  uint16_t *y;
  const float *bias;
  int64_t C, H, W, K, P, Q, R, S;
} bconv_t;

/* The ISA ceiling and CPU features the AMX GEMM needs, tile state granted. */
bool cpu_fast_conv_amx_ok(const cpu_device_t *dev) {
  if (dev->isa != BP_ISA_BEST && dev->isa < BP_ISA_AVX512) return false;
  const cpu_features_t *f = cpu_features_get();
  return f->amx_bf16 && f->avx512bw && f->avx512vl && cpu_amx_request();
}

/* One im2col row (c, r, s) of image plane xc: P*Q bf16 values, zero where
 * the tap falls in the padding. */
static void im2col_row(const bconv_t *j, const uint16_t *xc, int64_t r, int64_t s, uint16_t *d) {
  const bp_conv2d_args_t *a = j->a;
  const int64_t *xs = a->x.strides;
  int64_t sw = a->stride_w, pw = a->pad_w, off = s * a->dilation_w - pw;
  /* output columns whose input column lies inside the row: [q0, q1) */
  int64_t q0 = off >= 0 ? 0 : (-off + sw - 1) / sw;
  int64_t q1 = j->W - 1 - off < 0 ? 0 : (j->W - 1 - off) / sw + 1;
  q1 = q1 < j->Q ? q1 : j->Q;
  q0 = q0 < q1 ? q0 : q1;
  for (int64_t p = 0; p < j->P; p++, d += j->Q) {
    int64_t ih = p * a->stride_h - a->pad_h + r * a->dilation_h;
    if (ih < 0 || ih >= j->H) {
      memset(d, 0, (size_t)j->Q * 2);
      continue;
    }
    const uint16_t *xr = xc + ih * xs[2];
    memset(d, 0, (size_t)q0 * 2);
    if (sw == 1 && xs[3] == 1)
      memcpy(d + q0, xr + q0 + off, (size_t)(q1 - q0) * 2);
    else
      for (int64_t q = q0; q < q1; q++) d[q] = xr[(q * sw + off) * xs[3]];
    memset(d + q1, 0, (size_t)(j->Q - q1) * 2);
  }
}

/* q bf16 values from s to d in 16-byte moves (the last one overlapping),
 * not a library call per short row (a 14-wide row is 28 bytes). */
static inline void copy_row(uint16_t *d, const uint16_t *s, int64_t q) {
  if (q < 8) {
    memcpy(d, s, (size_t)q * 2);
    return;
  }
  int64_t i = 0;
  for (; i + 8 <= q; i += 8) memcpy(d + i, s + i, 16);
  if (i < q) memcpy(d + q - 8, s + q - 8, 16);
}

/* Stride-1 rows of unit stride: the channel's plane is zero-padded once
 * into pad (Hp x Wp), so each of its P im2col rows per tap is one copy of
 * Q values, with no bounds to test per row. */
static void im2col_padded(const bconv_t *j, const uint16_t *xc, uint16_t *pad, uint16_t *d) {
  const bp_conv2d_args_t *a = j->a;
  int64_t ph = a->pad_h, pw = a->pad_w, wp = j->W + 2 * pw, hp = j->H + 2 * ph;
  int64_t pq = j->P * j->Q;
  memset(pad, 0, (size_t)(ph * wp) * 2);
  for (int64_t h = 0; h < j->H; h++) {
    uint16_t *row = pad + (h + ph) * wp;
    memset(row, 0, (size_t)pw * 2);
    memcpy(row + pw, xc + h * a->x.strides[2], (size_t)j->W * 2);
    memset(row + pw + j->W, 0, (size_t)pw * 2);
  }
  memset(pad + (j->H + ph) * wp, 0, (size_t)((hp - j->H - ph) * wp) * 2);
  for (int64_t r = 0; r < j->R; r++)
    for (int64_t s = 0; s < j->S; s++, d += pq) {
      const uint16_t *src = pad + r * a->dilation_h * wp + s * a->dilation_w;
      for (int64_t p = 0; p < j->P; p++) copy_row(d + p * j->Q, src + p * a->stride_h * wp, j->Q);
    }
}

/* Tasks t = (image, channel): that channel's R*S im2col rows. */
static void im2col_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const bconv_t *j = ctx;
  const bp_conv2d_args_t *a = j->a;
  const int64_t *xs = a->x.strides;
  int64_t rs = j->R * j->S, pq = j->P * j->Q;
  bool dense = a->stride_w == 1 && xs[3] == 1;
  uint16_t *pad =
      dense ? malloc((size_t)((j->H + 2 * a->pad_h) * (j->W + 2 * a->pad_w)) * 2) : NULL;
  for (int64_t t = begin; t < end; t++) {
    int64_t n = t / j->C, c = t % j->C;
    const uint16_t *xc = j->x + n * xs[0] + c * xs[1];
    uint16_t *d = j->col + (n * j->C + c) * rs * pq;
    if (pad) {
      im2col_padded(j, xc, pad, d);
      continue;
    }
    for (int64_t r = 0; r < j->R; r++)
      for (int64_t s = 0; s < j->S; s++, d += pq) im2col_row(j, xc, r, s, d);
  }
  free(pad);
}

/* Tasks t = (image, output channel): the plane set to the bias. */
static void bias_fill_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const bconv_t *j = ctx;
  const int64_t *ys = j->a->y.strides;
  int64_t pq = j->P * j->Q;
  for (int64_t t = begin; t < end; t++) {
    uint16_t v = cpu_bf16_from_double(j->bias[t % j->K]);
    uint16_t *d = j->y + (t / j->K) * ys[0] + (t % j->K) * ys[1];
    for (int64_t i = 0; i < pq; i++) d[i] = v;
  }
}

/* The filter as rows of C/G*R*S bf16 values: in place when (c, r, s) are
 * dense, else copied into *owned (the caller frees it). */
static const uint16_t *filter_rows(const bp_plugin_tensor_t *w, int64_t *lda, uint16_t **owned) {
  const int64_t *ws = w->strides;
  int64_t K = w->shape[0], cg = w->shape[1], R = w->shape[2], S = w->shape[3];
  const uint16_t *pw = cpu_tensor_base(w);
  *owned = NULL;
  if ((S == 1 || ws[3] == 1) && (R == 1 || ws[2] == S) && (cg == 1 || ws[1] == R * S)) {
    *lda = ws[0];
    return pw;
  }
  int64_t crs = cg * R * S;
  uint16_t *d = malloc((size_t)(K * crs) * 2);
  if (!d) return NULL;
  for (int64_t k = 0; k < K; k++)
    for (int64_t c = 0; c < cg; c++)
      for (int64_t r = 0; r < R; r++)
        for (int64_t s = 0; s < S; s++)
          d[((k * cg + c) * R + r) * S + s] = pw[k * ws[0] + c * ws[1] + r * ws[2] + s * ws[3]];
  *lda = crs;
  *owned = d;
  return d;
}

/* Whether x's planes are B as they lie: 1x1, stride 1, no padding, rows
 * of unit stride one after the other. */
static bool unit_in_place(const bp_conv2d_args_t *a) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w;
  return w->shape[2] == 1 && w->shape[3] == 1 && a->stride_h == 1 && a->stride_w == 1 &&
         a->pad_h == 0 && a->pad_w == 0 && x->strides[3] == 1 &&
         (x->shape[2] == 1 || x->strides[2] == x->shape[3]);
}

/* One batched GEMM per group: y[:, g] (+)= w[g] · B[:, g]. b: B's base,
 * sbn / sbk: its image and k-row strides, cstride: its channel stride. */
static bp_status_t gemm_groups(cpu_device_t *dev, const bconv_t *j, const uint16_t *wr, int64_t lda,
                               const uint16_t *b, int64_t sbn, int64_t sbk, int64_t cstride) {
  const bp_conv2d_args_t *a = j->a;
  int64_t N = j->a->x.shape[0], G = a->groups, kg = j->K / G, cg = a->w.shape[1];
  int64_t crs = cg * j->R * j->S, pq = j->P * j->Q;
  const int64_t *ys = a->y.strides;
  for (int64_t g = 0; g < G; g++) {
    bp_gemm_args_t ga;
    memset(&ga, 0, sizeof ga);
    ga.struct_size = sizeof ga;
    ga.alpha = 1.0;
    ga.beta = j->bias ? 1.0 : 0.0;
    ga.a = cpu_tensor_view3(wr + g * kg * lda, BP_BF16, N, kg, crs, 0, lda, 1);
    ga.b = cpu_tensor_view3(b + g * cg * cstride, BP_BF16, N, crs, pq, sbn, sbk, 1);
    ga.c = cpu_tensor_view3(j->y + g * kg * ys[1], BP_BF16, N, kg, pq, ys[0], ys[1], 1);
    bp_status_t st = cpu_fast_gemm(dev, &ga);
    if (st != BP_OK) return st == BP_ERR_UNIMPLEMENTED && g > 0 ? BP_ERR_OUT_OF_MEMORY : st;
  }
  return BP_OK;
}

bp_status_t cpu_fast_conv2d_bf16(cpu_device_t *dev, const bp_conv2d_args_t *a, const float *bias) {
  if (cpu_fast_conv_amx_direct_ok(a))
    return cpu_fast_conv_amx_pairs_ok(a) ? cpu_fast_conv2d_amx_pairs(dev, a, bias)
                                         : cpu_fast_conv2d_amx(dev, a, bias);
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  bconv_t j = {a,           cpu_tensor_base(x), NULL,        cpu_tensor_base(y), bias,
               x->shape[1], x->shape[2],        x->shape[3], y->shape[1],        y->shape[2],
               y->shape[3], w->shape[2],        w->shape[3]};
  int64_t N = x->shape[0], pq = j.P * j.Q, rs = j.R * j.S;
  if (w->shape[1] * rs == 0) return BP_ERR_UNIMPLEMENTED;
  int64_t lda;
  uint16_t *wcopy;
  const uint16_t *wr = filter_rows(w, &lda, &wcopy);
  if (!wr) return BP_ERR_UNIMPLEMENTED;
  bool unit = unit_in_place(a);
  if (!unit) {
    j.col = malloc((size_t)(N * j.C * rs * pq) * 2);
    if (!j.col) {
      free(wcopy);
      return BP_ERR_UNIMPLEMENTED;
    }
    int64_t per = rs * pq, grain = per >= 8192 ? 1 : 8192 / per + 1;
    cpu_pool_run(dev->pool, N * j.C, grain, im2col_task, &j);
  }
  if (bias) cpu_pool_run(dev->pool, N * j.K, pq >= 8192 ? 1 : 8192 / pq + 1, bias_fill_task, &j);
  bp_status_t st =
      unit ? gemm_groups(dev, &j, wr, lda, j.x, x->strides[0], x->strides[1], x->strides[1])
           : gemm_groups(dev, &j, wr, lda, j.col, j.C * rs * pq, pq, rs * pq);
  free(j.col);
  free(wcopy);
  return st;
}
