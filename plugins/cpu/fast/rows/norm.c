/*
 * fast/rows/norm.c — layer norm, RMS norm and (inference) batch norm fast paths,
 * f32.
 *
 * Layer / RMS norm: one task per row along the last axis; the kernel sums
 * the row (f32 blocks accumulated in double), then the squared deviations,
 * then writes the output — the later passes hit the cache for any row that
 * fits L2, and the next row is prefetched meanwhile, so memory sees one
 * read and one write; a large output goes out in non-temporal stores
 * (cpu_fast_nt_ok). Batch norm folds each channel's
 * mean, var, scale and bias into one multiply-add (computed in double) and
 * streams each (n, c) plane through it.
 * Covered: f32 x / y with unit stride along the normalised run, gamma /
 * beta of unit stride (or absent); f16 / bf16 x, y, gamma and beta too
 * (rows up to NORM_HALF_ROW), widened to f32 for the same row kernel and
 * narrowed with round to nearest even; anything else returns
 * BP_ERR_UNIMPLEMENTED. Batch norm: f32 x and y.
 */
#include <math.h>
#include <stdlib.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/tensor.h"

typedef struct norm_job {
  const cpu_fast_vec_kernels_t *vk;
  const bp_norm_args_t *a;
  const char *x;
  const float *gamma, *beta; /* f32 (widened copies of f16 / bf16 ones) */
  char *y;
  int rms;
  int64_t rows;
  bool nt, f32; /* f32: x and y f32, rows passed straight to the kernel */
} norm_job_t;

/* f16 / bf16 rows up to this many elements take the fast path, widened
 * into buffers on the stack (64 KiB); longer ones run the reference. */
#define NORM_HALF_ROW 8192

/* One f16 / bf16 row: widened to f32, normalised by the f32 kernel,
 * narrowed with round to nearest even. */
static void norm_row_half(const norm_job_t *j, const char *x, char *y,
                          int64_t n) {
  float bx[NORM_HALF_ROW] __attribute__((aligned(64)));
  float by[NORM_HALF_ROW] __attribute__((aligned(64)));
  const float *px = cpu_fast_widen(j->vk, j->a->x.dtype, x, n, bx);
  float *py = j->a->y.dtype == BP_F32 ? (float *)(void *)y : by;
  j->vk->norm_row(px, py, n, j->gamma, j->beta, j->a->eps, j->rms, NULL, false);
  cpu_fast_narrow(j->vk, j->a->y.dtype, py, y, n);
}

static void norm_piece(void *ctx, int64_t row, int64_t c0, int64_t n) {
  const norm_job_t *j = ctx;
  (void)c0;
  const size_t zx = cpu_dtype_size(j->a->x.dtype), zy = cpu_dtype_size(j->a->y.dtype);
  const char *x = j->x + (size_t)cpu_fast_line_offset(&j->a->x, row) * zx;
  char *y = j->y + (size_t)cpu_fast_line_offset(&j->a->y, row) * zy;
  if (!j->f32) {
    norm_row_half(j, x, y, n);
    return;
  }
  const float *next =
      row + 1 < j->rows
          ? (const float *)(const void *)j->x + cpu_fast_line_offset(&j->a->x, row + 1)
          : NULL;
  j->vk->norm_row((const float *)(const void *)x, (float *)(void *)y, n,
                  j->gamma, j->beta, j->a->eps, j->rms, next, j->nt);
}

/* An optional [n] parameter: usable when absent or f32 / f16 / bf16 with
 * unit stride; a half one is widened into *own (freed by the caller). */
static bool param_ok(const cpu_fast_vec_kernels_t *vk, const bp_plugin_tensor_t *t,
                     const float **out, float **own) {
  *out = NULL;
  *own = NULL;
  if (cpu_tensor_absent(t)) return true;
  if (!cpu_fast_float_dtype(t->dtype) || t->rank != 1 ||
      (t->shape[0] > 1 && t->strides[0] != 1))
    return false;
  if (t->dtype == BP_F32) {
    *out = cpu_tensor_base(t);
    return true;
  }
  *own = malloc(sizeof(float) * (size_t)(t->shape[0] + 1));
  if (!*own) return false;
  *out = cpu_fast_widen(vk, t->dtype, cpu_tensor_base(t), t->shape[0], *own);
  return true;
}

static bp_status_t norm(cpu_device_t *dev, const bp_norm_args_t *a, int rms) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y;
  norm_job_t j = {cpu_fast_vec_pick(dev), a, cpu_tensor_base(x), NULL, NULL,
                  cpu_tensor_base(y), rms, 0, false, false};
  int32_t last = x->rank - 1;
  if (!j.vk || !cpu_fast_float_dtype(x->dtype) || !cpu_fast_float_dtype(y->dtype) ||
      last < 0 || x->strides[last] != 1 || y->strides[last] != 1)
    return BP_ERR_UNIMPLEMENTED;
  int64_t n = x->shape[last];
  j.f32 = x->dtype == BP_F32 && y->dtype == BP_F32;
  if (!j.f32 && n > NORM_HALF_ROW) return BP_ERR_UNIMPLEMENTED;
  if (n == 0 || cpu_numel(x) == 0) return BP_OK;
  float *own_g = NULL, *own_b = NULL;
  bp_status_t st = BP_ERR_UNIMPLEMENTED;
  if (!param_ok(j.vk, &a->gamma, &j.gamma, &own_g) ||
      (!rms && !param_ok(j.vk, &a->beta, &j.beta, &own_b)))
    goto out;
  const bp_plugin_tensor_t *in[3] = {x};
  int nin = 1;
  if (j.gamma) in[nin++] = &a->gamma;
  if (j.beta) in[nin++] = &a->beta;
  j.rows = cpu_numel(x) / n;
  j.nt = j.f32 && cpu_fast_nt_ok(dev, y, in, nin);
  cpu_fast_rows_run(dev, j.rows, n, n, norm_piece, &j);
  st = BP_OK;
out:
  free(own_g), free(own_b);
  return st;
}

bp_status_t cpu_fast_layer_norm(cpu_device_t *dev, const bp_norm_args_t *a) {
  return norm(dev, a, 0);
}

bp_status_t cpu_fast_rms_norm(cpu_device_t *dev, const bp_norm_args_t *a) {
  return norm(dev, a, 1);
}

/* ---- batch norm ---------------------------------------------------------*/

typedef struct bn_job {
  const cpu_fast_vec_kernels_t *vk;
  const bp_batch_norm_args_t *a;
  const float *x;
  float *y, *scale, *shift; /* per channel */
  int64_t C, inner;
  bool nt;
} bn_job_t;

static void bn_piece(void *ctx, int64_t row, int64_t c0, int64_t n) {
  const bn_job_t *j = ctx;
  int64_t b = row / j->C, c = row % j->C;
  const int64_t *sx = j->a->x.strides, *sy = j->a->y.strides;
  j->vk->affine_row(j->x + b * sx[0] + c * sx[1] + c0,
                    j->y + b * sy[0] + c * sy[1] + c0, n, j->scale[c],
                    j->shift[c], j->nt);
}

/* dims 2.. of t laid out densely (one run of `inner` elements) */
static bool inner_dense(const bp_plugin_tensor_t *t, int64_t *inner) {
  int64_t s = 1;
  for (int32_t d = t->rank - 1; d >= 2; d--) {
    if (t->shape[d] > 1 && t->strides[d] != s) return false;
    s *= t->shape[d];
  }
  *inner = s;
  return true;
}

static double chan(const bp_plugin_tensor_t *t, int64_t c) {
  return cpu_load(cpu_tensor_base(t), t->dtype, c * t->strides[0]);
}

bp_status_t cpu_fast_batch_norm(cpu_device_t *dev,
                                const bp_batch_norm_args_t *a) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y;
  bn_job_t j = {cpu_fast_vec_pick(dev), a, cpu_tensor_base(x), cpu_tensor_base(y),
                NULL, NULL, 0, 0, cpu_fast_nt_ok(dev, y, &x, 1)};
  int64_t iy;
  if (!j.vk || x->dtype != BP_F32 || y->dtype != BP_F32 || x->rank < 2 ||
      !inner_dense(x, &j.inner) || !inner_dense(y, &iy) || j.inner < 16)
    return BP_ERR_UNIMPLEMENTED;
  j.C = x->shape[1];
  if (cpu_numel(x) == 0) return BP_OK;
  j.scale = malloc(sizeof(float) * (size_t)(2 * j.C));
  if (!j.scale) return BP_ERR_UNIMPLEMENTED;
  j.shift = j.scale + j.C;
  for (int64_t c = 0; c < j.C; c++) {
    double s = chan(&a->scale, c) / sqrt(chan(&a->var, c) + a->eps);
    j.scale[c] = (float)s;
    j.shift[c] = (float)(chan(&a->bias, c) - chan(&a->mean, c) * s);
  }
  cpu_fast_rows_run(dev, x->shape[0] * j.C, j.inner, 16384, bn_piece, &j);
  free(j.scale);
  return BP_OK;
}
