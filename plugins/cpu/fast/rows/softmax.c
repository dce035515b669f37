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
 * Covered: f32 x and y, axis the last one with unit stride there; other
 * axes and dtypes return BP_ERR_UNIMPLEMENTED.
 */
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
  if (!j.vk || x->dtype != BP_F32 || y->dtype != BP_F32 || last < 0 ||
      a->axis != last || x->strides[last] != 1 || y->strides[last] != 1)
    return BP_ERR_UNIMPLEMENTED;
  int64_t n = x->shape[last];
  if (n == 0 || cpu_numel(x) == 0) return BP_OK;
  j.rows = cpu_numel(x) / n;
  j.nt = cpu_fast_nt_ok(dev, y, &x, 1);
  cpu_fast_row_ranges_run(dev, j.rows, n, softmax_range, &j);
  return BP_OK;
}
