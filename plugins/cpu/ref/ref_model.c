/*
 * ref/ref_model.c — scalar reference gather, arange and rotary position
 * embedding (the model ops of ABI 1.5; binary with a scalar and GLU are in
 * ref_elementwise.c beside the ops they reuse).
 *
 * gather: one task per (outer index, index) pair, copying table's inner
 * block element by element as raw bytes (any dtype, exact), or writing
 * zeros for an index outside the table. arange: one task per element.
 * rope: one task per (batch, seq, head) row, computed in double and
 * rounded once per output.
 */
#include <math.h>
#include <string.h>

#include "ref.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/model_args.h"
#include "plugins/cpu/tensor.h"

/* ---- gather -------------------------------------------------------------*/

int64_t cpu_ref_gather_tasks(const bp_gather_args_t *a) {
  const bp_plugin_tensor_t *ix = &a->indices;
  if ((ix->dtype != BP_I32 && ix->dtype != BP_I64) || ix->rank < 1 || a->axis < 0 ||
      a->axis >= a->table.rank || a->y.dtype != a->table.dtype ||
      a->y.rank != a->table.rank - 1 + ix->rank)
    return BP_ERR_INVALID_ARGUMENT;
  int64_t n = 1;
  for (int32_t d = 0; d < a->axis + ix->rank; d++) n *= a->y.shape[d];
  return n;
}

int64_t cpu_ref_gather_grain(const bp_gather_args_t *a) {
  int64_t inner = 1;
  for (int32_t d = a->axis + a->indices.rank; d < a->y.rank; d++) inner *= a->y.shape[d];
  return cpu_ref_grain_for(inner);
}

/* The inner block (the dims after the gathered ones) of t from dim `from`,
 * as a tensor of its own. */
static void inner_view(const bp_plugin_tensor_t *t, int32_t from, bp_plugin_tensor_t *out) {
  memset(out, 0, sizeof *out);
  out->dtype = t->dtype;
  out->rank = t->rank - from;
  for (int32_t d = from; d < t->rank; d++) {
    out->shape[d - from] = t->shape[d];
    out->strides[d - from] = t->strides[d];
  }
}

static int64_t load_index(const bp_plugin_tensor_t *ix, int64_t off) {
  const void *p = cpu_tensor_base(ix);
  return ix->dtype == BP_I64 ? ((const int64_t *)p)[off] : ((const int32_t *)p)[off];
}

bp_status_t cpu_ref_gather_range(const bp_gather_args_t *a, int64_t begin, int64_t end) {
  const bp_plugin_tensor_t *tb = &a->table, *ix = &a->indices, *y = &a->y;
  int32_t ax = a->axis, nix = ix->rank;
  int64_t es = (int64_t)cpu_dtype_size(y->dtype);
  bp_plugin_tensor_t tin, yin;
  inner_view(tb, ax + 1, &tin);
  inner_view(y, ax + nix, &yin);
  const bp_plugin_tensor_t *ts[2] = {&tin, &yin};
  const char *pt = cpu_tensor_base(tb);
  char *py = cpu_tensor_base(y);
  for (int64_t t = begin; t < end; t++) {
    int64_t rest = t, toff = 0, yoff = 0, ioff = 0;
    for (int32_t d = ax + nix - 1; d >= 0; d--) {
      int64_t c = rest % y->shape[d];
      rest /= y->shape[d];
      yoff += c * y->strides[d];
      if (d >= ax)
        ioff += c * ix->strides[d - ax];
      else
        toff += c * tb->strides[d];
    }
    int64_t v = load_index(ix, ioff);
    bool inside = v >= 0 && v < tb->shape[ax];
    toff += inside ? v * tb->strides[ax] : 0;
    cpu_iter_t it;
    cpu_iter_init(&it, yin.rank, yin.shape, 2, ts, 0);
    for (int64_t i = 0, n = cpu_numel(&yin); i < n; i++, cpu_iter_next(&it)) {
      char *dst = py + (yoff + it.off[1]) * es;
      if (inside)
        memcpy(dst, pt + (toff + it.off[0]) * es, (size_t)es);
      else
        memset(dst, 0, (size_t)es);
    }
  }
  return BP_OK;
}

/* ---- arange -------------------------------------------------------------*/

int64_t cpu_ref_arange_tasks(const bp_arange_args_t *a) {
  return cpu_numel(&a->y);
}

int64_t cpu_ref_arange_grain(const bp_arange_args_t *a) {
  (void)a;
  return CPU_REF_ELEMENT_GRAIN;
}

bp_status_t cpu_ref_arange_range(const bp_arange_args_t *a, int64_t begin, int64_t end) {
  const bp_plugin_tensor_t *ts[1] = {&a->y};
  void *py = cpu_tensor_base(&a->y);
  cpu_iter_t it;
  cpu_iter_init(&it, a->y.rank, a->y.shape, 1, ts, begin);
  for (int64_t i = begin; i < end; i++, cpu_iter_next(&it))
    cpu_store(py, a->y.dtype, it.off[0], a->start + (double)i * a->step);
  return BP_OK;
}

/* ---- rope ---------------------------------------------------------------*/

int64_t cpu_ref_rope_tasks(const bp_rope_args_t *a) {
  const bp_plugin_tensor_t *x = &a->x;
  if (x->rank != 4 || a->y.rank != 4 || a->rotary_dim <= 0 || a->rotary_dim % 2 ||
      a->rotary_dim > x->shape[3] || (unsigned)a->mode >= BP_ROPE_MODE_COUNT ||
      (a->positions.rank != 0 && a->positions.rank != 2))
    return BP_ERR_INVALID_ARGUMENT;
  return x->shape[0] * x->shape[1] * x->shape[2];
}

int64_t cpu_ref_rope_grain(const bp_rope_args_t *a) {
  return cpu_ref_grain_for(a->x.shape[3] * 8);
}

/* The element indices of pair i's two features. */
static void rope_pair(const bp_rope_args_t *a, int64_t i, int64_t *f0, int64_t *f1) {
  if (a->mode == BP_ROPE_HALF) {
    *f0 = i;
    *f1 = i + a->rotary_dim / 2;
  } else {
    *f0 = 2 * i;
    *f1 = 2 * i + 1;
  }
}

bp_status_t cpu_ref_rope_range(const bp_rope_args_t *a, int64_t begin, int64_t end) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y;
  const void *px = cpu_tensor_base(x);
  void *py = cpu_tensor_base(y);
  int64_t H = x->shape[2], S = x->shape[1], D = x->shape[3];
  for (int64_t t = begin; t < end; t++) {
    int64_t h = t % H, s = t / H % S, b = t / H / S;
    int64_t xo = b * x->strides[0] + s * x->strides[1] + h * x->strides[2];
    int64_t yo = b * y->strides[0] + s * y->strides[1] + h * y->strides[2];
    double pos = (double)cpu_rope_position(a, b, s);
    for (int64_t i = 0; i < a->rotary_dim / 2; i++) {
      int64_t f0, f1;
      rope_pair(a, i, &f0, &f1);
      double ang = pos * pow(a->theta_base, -2.0 * (double)i / a->rotary_dim);
      double c = cos(ang), sn = sin(ang);
      double x0 = cpu_load(px, x->dtype, xo + f0 * x->strides[3]);
      double x1 = cpu_load(px, x->dtype, xo + f1 * x->strides[3]);
      cpu_store(py, y->dtype, yo + f0 * y->strides[3], x0 * c - x1 * sn);
      cpu_store(py, y->dtype, yo + f1 * y->strides[3], x1 * c + x0 * sn);
    }
    for (int64_t f = a->rotary_dim; f < D; f++)
      cpu_store(py, y->dtype, yo + f * y->strides[3],
                cpu_load(px, x->dtype, xo + f * x->strides[3]));
  }
  return BP_OK;
}
