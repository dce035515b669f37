/*
 * fast/elementwise/reduce.c — reductions along one axis (f32 input).
 *
 * Two shapes of walk, both vectorised (fast/vec.h) and threaded:
 *  - the axis is x's last one with unit stride: one task per row, reduced
 *    in registers (sum, mean, max, min, var);
 *  - the axis has any stride and the dims after it are dense: for each
 *    outer index, a run of `width` contiguous columns is accumulated row by
 *    row (sum, mean, max, min), so memory is read once, in order.
 * Sums accumulate in double, as the reference does; max / min return the
 * first NaN of a line, and a zero's sign as the reference picks it. Results
 * are rounded into y's dtype once. f16 / bf16 x: last-axis rows up to
 * REDUCE_HALF_ROW, widened exactly to f32 first (so the same results as an
 * f32 x of the same values). Anything else (prod, argmax, var along an
 * outer axis, half x along an outer axis, other dtypes) returns
 * BP_ERR_UNIMPLEMENTED.
 */
#include <math.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/tensor.h"

#define COLS_PIECE 1024 /* columns per task: 8 KiB of double accumulators */

/* f16 / bf16 rows up to this many elements are widened (exactly) into a
 * buffer on the stack for the f32 row kernel; longer ones run the
 * reference. */
#define REDUCE_HALF_ROW 8192

typedef struct reduce_job {
  const cpu_fast_vec_kernels_t *vk;
  const bp_reduce_args_t *a;
  const float *x;
  void *y;
  int64_t len, width, sx_axis; /* axis extent and stride; dense run width */
} reduce_job_t;

static void row_piece(void *ctx, int64_t row, int64_t c0, int64_t n) {
  const reduce_job_t *j = ctx;
  (void)c0;
  int64_t off = cpu_fast_line_offset(&j->a->x, row);
  const float *x = j->x + off;
  float buf[REDUCE_HALF_ROW] __attribute__((aligned(64)));
  if (j->a->x.dtype != BP_F32)
    x = cpu_fast_widen(j->vk, j->a->x.dtype,
                       (const uint16_t *)(const void *)j->x + off, n, buf);
  double v = j->vk->reduce_row(j->a->op, x, n);
  cpu_store(j->y, j->a->y.dtype, cpu_fast_line_offset(&j->a->y, row), v);
}

/* Offset of outer index o (dims before the axis) in t. */
static int64_t outer_offset(const bp_plugin_tensor_t *t, int32_t axis,
                            int64_t o) {
  int64_t off = 0;
  for (int32_t d = axis - 1; d >= 0; d--) {
    off += (o % t->shape[d]) * t->strides[d];
    o /= t->shape[d];
  }
  return off;
}

static void cols_piece(void *ctx, int64_t o, int64_t c0, int64_t n) {
  const reduce_job_t *j = ctx;
  bp_reduce_op_t op = j->a->op;
  int32_t axis = j->a->axis;
  union { /* sums in double, max / min in the input's f32 */
    double d[COLS_PIECE];
    float f[COLS_PIECE];
  } acc;
  double *dacc = acc.d;
  float *facc = acc.f;
  bool sum = op == BP_REDUCE_SUM || op == BP_REDUCE_MEAN;
  for (int64_t c = 0; c < n; c++) {
    if (sum) dacc[c] = 0.0;
    else facc[c] = op == BP_REDUCE_MAX ? -INFINITY : INFINITY;
  }
  const float *x = j->x + outer_offset(&j->a->x, axis, o) + c0;
  j->vk->reduce_cols(op, x, j->sx_axis, j->len, sum ? (void *)dacc : (void *)facc, n);
  int64_t yo = outer_offset(&j->a->y, axis, o) + c0;
  for (int64_t c = 0; c < n; c++) {
    double v = sum ? dacc[c] : facc[c];
    if (op == BP_REDUCE_MEAN) v = j->len ? v / (double)j->len : NAN;
    cpu_store(j->y, j->a->y.dtype, yo + c, v);
  }
}

/* dims after axis dense in t (one run of `width`) */
static bool tail_dense(const bp_plugin_tensor_t *t, int32_t axis,
                       int64_t *width) {
  int64_t s = 1;
  for (int32_t d = t->rank - 1; d > axis; d--) {
    if (t->shape[d] > 1 && t->strides[d] != s) return false;
    s *= t->shape[d];
  }
  *width = s;
  return true;
}

bp_status_t cpu_fast_reduce(cpu_device_t *dev, const bp_reduce_args_t *a) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y;
  reduce_job_t j = {cpu_fast_vec_pick(dev), a, cpu_tensor_base(x),
                    cpu_tensor_base(y), 0, 0, 0};
  bp_reduce_op_t op = a->op;
  bool simple = op == BP_REDUCE_SUM || op == BP_REDUCE_MEAN ||
                op == BP_REDUCE_MAX || op == BP_REDUCE_MIN;
  if (!j.vk || !cpu_fast_float_dtype(x->dtype) || !cpu_dtype_is_float(y->dtype) ||
      a->axis < 0 || a->axis >= x->rank || (!simple && op != BP_REDUCE_VAR))
    return BP_ERR_UNIMPLEMENTED;
  int32_t axis = a->axis, last = x->rank - 1;
  j.len = x->shape[axis];
  j.sx_axis = x->strides[axis];
  int64_t lines = cpu_numel(y);
  if (lines == 0) return BP_OK;
  bool half = x->dtype != BP_F32;
  if (axis == last && (j.len <= 1 || j.sx_axis == 1) && j.len > 0 &&
      (!half || j.len <= REDUCE_HALF_ROW)) {
    cpu_fast_rows_run(dev, lines, j.len, j.len, row_piece, &j);
    return BP_OK;
  }
  int64_t wy;
  if (half || !simple || !tail_dense(x, axis, &j.width) || !tail_dense(y, axis, &wy) ||
      j.width < 16)
    return BP_ERR_UNIMPLEMENTED;
  cpu_fast_rows_run(dev, lines / j.width, j.width, COLS_PIECE, cols_piece, &j);
  return BP_OK;
}
