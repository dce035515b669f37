/*
 * ref/ref_reduce.c — scalar reference reductions along one axis.
 *
 * y has x's rank with extent 1 on the axis; one task per element of y, each
 * walking its line of x in double. max / min propagate NaN; argmax returns
 * the first index of the maximum, a NaN counting as larger than everything
 * (the first NaN wins), written as i32 or i64. var is the population
 * variance, two-pass. An empty axis gives the identity: sum 0, prod 1,
 * max -inf, min +inf, mean and var NaN, argmax 0.
 */
#include <math.h>

#include "ref.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

int64_t cpu_ref_reduce_tasks(const bp_reduce_args_t *a) {
  if ((unsigned)a->op >= BP_REDUCE_COUNT || a->axis < 0 || a->axis >= a->x.rank)
    return BP_ERR_INVALID_ARGUMENT;
  if (a->op == BP_REDUCE_ARGMAX && a->y.dtype != BP_I32 && a->y.dtype != BP_I64)
    return BP_ERR_INVALID_ARGUMENT;
  return cpu_numel(&a->y);
}

int64_t cpu_ref_reduce_grain(const bp_reduce_args_t *a) {
  return cpu_ref_grain_for(a->x.shape[a->axis]);
}

typedef struct line {
  const void *base;
  bp_dtype_t dtype;
  int64_t off, stride, n;
} line_t;

static double at(const line_t *l, int64_t j) {
  return cpu_load(l->base, l->dtype, l->off + j * l->stride);
}

static double line_sum(const line_t *l) {
  double s = 0.0;
  for (int64_t j = 0; j < l->n; j++)
    s += at(l, j);
  return s;
}

/* Index of the first maximum (sign > 0) or minimum (sign < 0); the first
 * NaN beats everything. */
static int64_t line_arg_extreme(const line_t *l, double sign) {
  int64_t best = 0;
  double bv = l->n ? at(l, 0) : 0.0;
  for (int64_t j = 1; j < l->n && bv == bv; j++) {
    double v = at(l, j);
    if (v != v || sign * v > sign * bv) {
      best = j;
      bv = v;
    }
  }
  return best;
}

static double line_var(const line_t *l) {
  double mean = line_sum(l) / (double)l->n, s = 0.0;
  for (int64_t j = 0; j < l->n; j++) {
    double d = at(l, j) - mean;
    s += d * d;
  }
  return s / (double)l->n;
}

static double reduce_line(bp_reduce_op_t op, const line_t *l) {
  switch (op) {
  case BP_REDUCE_SUM:
    return line_sum(l);
  case BP_REDUCE_MEAN:
    return l->n ? line_sum(l) / (double)l->n : NAN;
  case BP_REDUCE_MAX:
    return l->n ? at(l, line_arg_extreme(l, 1.0)) : -INFINITY;
  case BP_REDUCE_MIN:
    return l->n ? at(l, line_arg_extreme(l, -1.0)) : INFINITY;
  case BP_REDUCE_PROD: {
    double p = 1.0;
    for (int64_t j = 0; j < l->n; j++)
      p *= at(l, j);
    return p;
  }
  case BP_REDUCE_VAR:
    return l->n ? line_var(l) : NAN;
  case BP_REDUCE_ARGMAX:
    return (double)line_arg_extreme(l, 1.0);
  default:
    return NAN;
  }
}

bp_status_t cpu_ref_reduce_range(const bp_reduce_args_t *a, int64_t begin,
                                 int64_t end) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y;
  const bp_plugin_tensor_t *ts[2] = {x, y};
  void *py = cpu_tensor_base(y);
  line_t l = {cpu_tensor_base(x), x->dtype, 0, x->strides[a->axis],
              x->shape[a->axis]};
  /* Walk y's shape (extent 1 on the axis); x's offset then points at the
   * first element of the line, since index 0 on the axis adds nothing. */
  cpu_iter_t it;
  cpu_iter_init(&it, y->rank, y->shape, 2, ts, begin);
  for (int64_t t = begin; t < end; t++, cpu_iter_next(&it)) {
    l.off = it.off[0];
    cpu_store(py, y->dtype, it.off[1], reduce_line(a->op, &l));
  }
  return BP_OK;
}
