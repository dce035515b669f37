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
 * Covered: f32 x / y with unit stride along the normalised run, f32 gamma /
 * beta of unit stride (or absent); anything else returns
 * BP_ERR_UNIMPLEMENTED.
 */
#include <math.h>
#include <stdlib.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/tensor.h"

typedef struct norm_job {
  const cpu_fast_vec_kernels_t *vk;
  const bp_norm_args_t *a;
  const float *x, *gamma, *beta;
  float *y;
  int rms;
  int64_t rows;
  bool nt;
} norm_job_t;

static void norm_piece(void *ctx, int64_t row, int64_t c0, int64_t n) {
  const norm_job_t *j = ctx;
  (void)c0;
  const float *next =
      row + 1 < j->rows ? j->x + cpu_fast_line_offset(&j->a->x, row + 1) : NULL;
  j->vk->norm_row(j->x + cpu_fast_line_offset(&j->a->x, row),
                  j->y + cpu_fast_line_offset(&j->a->y, row), n, j->gamma,
                  j->beta, j->a->eps, j->rms, next, j->nt);
}

/* An optional [n] parameter: usable when absent or f32 with unit stride. */
static bool param_ok(const bp_plugin_tensor_t *t, const float **out) {
  *out = NULL;
  if (cpu_tensor_absent(t)) return true;
  if (t->dtype != BP_F32 || t->rank != 1 || (t->shape[0] > 1 && t->strides[0] != 1))
    return false;
  *out = cpu_tensor_base(t);
  return true;
}

static bp_status_t norm(cpu_device_t *dev, const bp_norm_args_t *a, int rms) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y;
  norm_job_t j = {cpu_fast_vec_pick(dev), a, cpu_tensor_base(x), NULL, NULL,
                  cpu_tensor_base(y), rms, 0, false};
  int32_t last = x->rank - 1;
  if (!j.vk || x->dtype != BP_F32 || y->dtype != BP_F32 || last < 0 ||
      x->strides[last] != 1 || y->strides[last] != 1 ||
      !param_ok(&a->gamma, &j.gamma) || (!rms && !param_ok(&a->beta, &j.beta)))
    return BP_ERR_UNIMPLEMENTED;
  int64_t n = x->shape[last];
  if (n == 0 || cpu_numel(x) == 0) return BP_OK;
  const bp_plugin_tensor_t *in[3] = {x};
  int nin = 1;
  if (j.gamma) in[nin++] = &a->gamma;
  if (j.beta) in[nin++] = &a->beta;
  j.rows = cpu_numel(x) / n;
  j.nt = cpu_fast_nt_ok(dev, y, in, nin);
  cpu_fast_rows_run(dev, j.rows, n, n, norm_piece, &j);
  return BP_OK;
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
