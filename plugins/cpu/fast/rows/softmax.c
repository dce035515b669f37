/*
 * fast/rows/softmax.c — softmax / log-softmax fast path (f32, last axis).
 *
 * Ranges of rows per task: the vector kernel (fast/vec.h) reads a row that
 * fits the cache once from memory (max, exps and sum, output — the later
 * passes hit L1 / L2) while prefetching the next row, and writes a large
 * output with non-temporal stores (cpu_fast_nt_ok), each row's during the
 * next row's exp pass (cpu_fast_sm_defer_t), where the stores drain while the
 * exps are computed instead of stalling the row that made them. Rows too
 * long for the cache take
 * the online form: one read pass for max and sum, one read-and-write pass.
 * NaN in a row makes it all NaN, an all -inf row gives NaN, as the
 * reference.
 * Covered: f32 x and y, axis the last one with unit stride there; f16 /
 * bf16 x or y too (rows up to SOFTMAX_HALF_ROW), widened to f32 for the
 * same row kernel and narrowed with round to nearest even; other axes and
 * dtypes return BP_ERR_UNIMPLEMENTED.
 */
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/tensor.h"

typedef struct softmax_job {
  const cpu_fast_vec_kernels_t *vk;
  const bp_softmax_args_t *a;
  const float *x;
  float *y;
  int64_t rows;
  bool nt;
} softmax_job_t;

/* f16 / bf16 rows up to this many elements take the fast path, widened
 * into buffers on the stack (64 KiB); longer ones run the reference. */
#define SOFTMAX_HALF_ROW 8192

/* Rows [r0, r1) of f16 / bf16 tensors: each widened to f32, through the
 * f32 kernel (no deferred output), narrowed with round to nearest even. */
static void softmax_range_half(void *ctx, int64_t r0, int64_t r1) {
  const softmax_job_t *j = ctx;
  const bp_plugin_tensor_t *x = &j->a->x, *y = &j->a->y;
  int64_t n = x->shape[x->rank - 1];
  size_t zx = cpu_dtype_size(x->dtype), zy = cpu_dtype_size(y->dtype);
  float bx[SOFTMAX_HALF_ROW] __attribute__((aligned(64)));
  float by[SOFTMAX_HALF_ROW] __attribute__((aligned(64)));
  for (int64_t row = r0; row < r1; row++) {
    const char *xr = (const char *)(const void *)j->x +
                     (size_t)cpu_fast_line_offset(x, row) * zx;
    char *yr = (char *)(void *)j->y + (size_t)cpu_fast_line_offset(y, row) * zy;
    const float *px = cpu_fast_widen(j->vk, x->dtype, xr, n, bx);
    float *py = y->dtype == BP_F32 ? (float *)(void *)yr : by;
    j->vk->softmax_row(px, py, n, j->a->log, NULL, false, NULL);
    cpu_fast_narrow(j->vk, y->dtype, py, yr, n);
  }
}

/* Rows [r0, r1) in order, each streaming out the previous one's output
 * during its exp pass (cpu_fast_sm_defer_t); the last row writes its own. */
static void softmax_range(void *ctx, int64_t r0, int64_t r1) {
  const softmax_job_t *j = ctx;
  int64_t n = j->a->x.shape[j->a->x.rank - 1];
  float buf[2][SOFTMAX_SCRATCH_ROW] __attribute__((aligned(64)));
  cpu_fast_sm_defer_t d = {{buf[0], buf[1]}, 0, NULL, NULL, 0.0f};
  for (int64_t row = r0; row < r1; row++) {
    const float *next =
        row + 1 < r1 ? j->x + cpu_fast_line_offset(&j->a->x, row + 1) : NULL;
    j->vk->softmax_row(j->x + cpu_fast_line_offset(&j->a->x, row),
                       j->y + cpu_fast_line_offset(&j->a->y, row), n, j->a->log,
                       next, j->nt, &d);
  }
}

bp_status_t cpu_fast_softmax(cpu_device_t *dev, const bp_softmax_args_t *a) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y;
  softmax_job_t j = {cpu_fast_vec_pick(dev), a, cpu_tensor_base(x),
                     cpu_tensor_base(y), 0, false};
  int32_t last = x->rank - 1;
  if (!j.vk || !cpu_fast_float_dtype(x->dtype) || !cpu_fast_float_dtype(y->dtype) ||
      last < 0 || a->axis != last || x->strides[last] != 1 || y->strides[last] != 1)
    return BP_ERR_UNIMPLEMENTED;
  int64_t n = x->shape[last];
  bool f32 = x->dtype == BP_F32 && y->dtype == BP_F32;
  if (!f32 && n > SOFTMAX_HALF_ROW) return BP_ERR_UNIMPLEMENTED;
  if (n == 0 || cpu_numel(x) == 0) return BP_OK;
  j.rows = cpu_numel(x) / n;
  j.nt = f32 && cpu_fast_nt_ok(dev, y, &x, 1);
  cpu_fast_row_ranges_run(dev, j.rows, n, f32 ? softmax_range : softmax_range_half, &j);
  return BP_OK;
}
