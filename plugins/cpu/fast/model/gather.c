/*
 * fast/model/gather.c — gather (embedding lookup) when the block each index
 * selects is contiguous in both table and y (the dims after the gathered
 * axis row-major and dense, as in a [vocab, d_model] table): one memcpy
 * per index, any dtype, over the pool. Other layouts run the reference.
 */
#include <string.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/tensor.h"

typedef struct gather_job {
  const bp_gather_args_t *a;
  int64_t inner; /* elements of one block */
  size_t es;
} gather_job_t;

/* Whether dims [from, rank) of t are dense row-major; *n gets their size. */
static bool dense_tail(const bp_plugin_tensor_t *t, int32_t from, int64_t *n) {
  int64_t want = 1;
  for (int32_t d = t->rank - 1; d >= from; d--) {
    if (t->shape[d] != 1 && t->strides[d] != want) return false;
    want *= t->shape[d];
  }
  *n = want;
  return true;
}

static void gather_blocks(void *ctx, int64_t t0, int64_t t1) {
  const gather_job_t *j = ctx;
  const bp_gather_args_t *a = j->a;
  const bp_plugin_tensor_t *tb = &a->table, *ix = &a->indices, *y = &a->y;
  int32_t ax = a->axis, nix = ix->rank;
  const char *pt = cpu_tensor_base(tb);
  char *py = cpu_tensor_base(y);
  const void *pi = cpu_tensor_base(ix);
  size_t bytes = (size_t)j->inner * j->es;
  for (int64_t t = t0; t < t1; t++) {
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
    int64_t v = ix->dtype == BP_I64 ? ((const int64_t *)pi)[ioff] : ((const int32_t *)pi)[ioff];
    char *dst = py + yoff * (int64_t)j->es;
    if (v < 0 || v >= tb->shape[ax])
      memset(dst, 0, bytes);
    else
      memcpy(dst, pt + (toff + v * tb->strides[ax]) * (int64_t)j->es, bytes);
  }
}

bp_status_t cpu_fast_gather(cpu_device_t *dev, const bp_gather_args_t *a) {
  gather_job_t j = {a, 0, cpu_dtype_size(a->y.dtype)};
  int64_t yin;
  if (!dense_tail(&a->table, a->axis + 1, &j.inner) ||
      !dense_tail(&a->y, a->axis + a->indices.rank, &yin) || yin != j.inner)
    return BP_ERR_UNIMPLEMENTED;
  int64_t tasks = 1;
  for (int32_t d = 0; d < a->axis + a->indices.rank; d++) tasks *= a->y.shape[d];
  cpu_fast_row_ranges_run(dev, tasks, j.inner > 0 ? j.inner : 1, gather_blocks, &j);
  return BP_OK;
}
