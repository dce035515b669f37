/*
 * fast/elementwise/cast.c — cast (f32 <-> f16 / bf16), copy and fill fast paths.
 *
 * All three walk y in coalesced rows (fast/vec.h) with unit stride along
 * the row, threaded in pieces. Casts use the vector converters (F16C for
 * f16; bit arithmetic for bf16, since VCVTNEPS2BF16 flushes denormals):
 * round to nearest even, NaN kept and made quiet, exactly the reference's
 * results. Copy moves bytes for any dtype; fill writes the reference's
 * rounding of the value (cpu_store) as a repeated bit pattern. Other
 * conversions and strided rows return BP_ERR_UNIMPLEMENTED, except a copy
 * from a transposed view (fast/elementwise/transpose.c).
 */
#include <string.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/tensor.h"

#define CAST_PIECE 16384

typedef struct move_job {
  const cpu_fast_vec_kernels_t *vk;
  cpu_fast_rows_t r;
  const char *x;
  char *y;
  bp_dtype_t from, to;
  size_t es;            /* y's element size */
  unsigned char pat[8]; /* fill: one element of y */
} move_job_t;

static void cast_piece(void *ctx, int64_t row, int64_t c0, int64_t n) {
  const move_job_t *j = ctx;
  size_t ei = cpu_dtype_size(j->from);
  const char *x = j->x + (cpu_fast_rows_offset(&j->r, 0, row) + c0) * (int64_t)ei;
  char *y = j->y + (cpu_fast_rows_offset(&j->r, 1, row) + c0) * (int64_t)j->es;
  if (j->vk)
    j->vk->cvt(j->from, j->to, x, y, n);
  else
    memcpy(y, x, (size_t)n * j->es);
}

/* Rows of at most this many elements are handed out as ranges of whole
 * rows (move_range) rather than as pieces, each of which finds its row's
 * offsets by a division per dim. */
#define CAST_SHORT_ROW 1024

/* Rows [row0, row1) whole: the offsets of x and y stepped from row to row
 * like an odometer. A KV-cache append is thousands of rows of one head
 * (32 to 128 elements), where the per-row divisions cost more than
 * moving the row. */
static void move_range(void *ctx, int64_t row0, int64_t row1) {
  const move_job_t *j = ctx;
  const cpu_fast_rows_t *r = &j->r;
  int32_t outer = r->rank - 1; /* dims [0, outer) number the rows */
  int64_t len = r->shape[outer], idx[BP_MAX_RANK], rest = row0;
  for (int32_t d = outer - 1; d >= 0; d--) {
    idx[d] = rest % r->shape[d];
    rest /= r->shape[d];
  }
  int64_t ox = cpu_fast_rows_offset(r, 0, row0), oy = cpu_fast_rows_offset(r, 1, row0);
  int64_t ei = (int64_t)cpu_dtype_size(j->from), eo = (int64_t)j->es;
  for (int64_t row = row0; row < row1; row++) {
    if (j->vk)
      j->vk->cvt(j->from, j->to, j->x + ox * ei, j->y + oy * eo, len);
    else
      memcpy(j->y + oy * eo, j->x + ox * ei, (size_t)(len * eo));
    for (int32_t d = outer - 1; d >= 0; d--) { /* the next row's index */
      ox += r->strides[0][d], oy += r->strides[1][d];
      if (++idx[d] < r->shape[d]) break;
      ox -= r->strides[0][d] * r->shape[d], oy -= r->strides[1][d] * r->shape[d];
      idx[d] = 0;
    }
  }
}

static void fill_piece(void *ctx, int64_t row, int64_t c0, int64_t n) {
  const move_job_t *j = ctx;
  char *y = j->y + (cpu_fast_rows_offset(&j->r, 0, row) + c0) * (int64_t)j->es;
  switch (j->es) { /* constant-size copies the compiler vectorises */
  case 1: memset(y, j->pat[0], (size_t)n); break;
  case 2: for (int64_t i = 0; i < n; i++) memcpy(y + 2 * i, j->pat, 2); break;
  case 4: for (int64_t i = 0; i < n; i++) memcpy(y + 4 * i, j->pat, 4); break;
  default: for (int64_t i = 0; i < n; i++) memcpy(y + 8 * i, j->pat, 8); break;
  }
}

/* y written once per element, in unit-stride rows; x (if any) alike. */
static bool plain_rows(const cpu_fast_rows_t *r, int nt) {
  int last = r->rank - 1;
  for (int k = 0; k < nt; k++)
    if (r->strides[k][last] != 1) return false;
  for (int32_t d = 0; d < r->rank; d++)
    if (r->strides[nt - 1][d] == 0 && r->shape[d] > 1) return false;
  return true;
}

static bp_status_t move(cpu_device_t *dev, const bp_copy_args_t *a, bool cast) {
  move_job_t j;
  memset(&j, 0, sizeof j);
  j.vk = cast ? cpu_fast_vec_pick(dev) : NULL;
  j.from = a->x.dtype, j.to = a->y.dtype;
  j.es = cpu_dtype_size(j.to);
  if (cast) {
    bool ok = (j.from == BP_F32 && (j.to == BP_F16 || j.to == BP_BF16)) ||
              (j.to == BP_F32 && (j.from == BP_F16 || j.from == BP_BF16));
    if (!j.vk || !ok) return BP_ERR_UNIMPLEMENTED;
  } else if (j.from != j.to || j.es == 0) {
    return BP_ERR_UNIMPLEMENTED;
  }
  const bp_plugin_tensor_t *ts[2] = {&a->x, &a->y};
  cpu_fast_rows_init(&j.r, &a->y, ts, 2);
  if (!plain_rows(&j.r, 2)) return BP_ERR_UNIMPLEMENTED;
  j.x = cpu_tensor_base(&a->x);
  j.y = cpu_tensor_base(&a->y);
  if (cpu_numel(&a->y) == 0) return BP_OK;
  int64_t len = j.r.shape[j.r.rank - 1], rows = cpu_fast_rows_count(&j.r);
  if (rows > 1 && len <= CAST_SHORT_ROW)
    cpu_fast_row_ranges_run(dev, rows, len, move_range, &j);
  else
    cpu_fast_rows_run(dev, rows, len, CAST_PIECE, cast_piece, &j);
  return BP_OK;
}

bp_status_t cpu_fast_cast(cpu_device_t *dev, const bp_copy_args_t *a) {
  return move(dev, a, true);
}

bp_status_t cpu_fast_copy(cpu_device_t *dev, const bp_copy_args_t *a) {
  bp_status_t st = move(dev, a, false);
  if (st == BP_ERR_UNIMPLEMENTED && cpu_fast_copy_transposed(dev, a)) return BP_OK;
  return st;
}

bp_status_t cpu_fast_fill(cpu_device_t *dev, const bp_fill_args_t *a) {
  move_job_t j;
  memset(&j, 0, sizeof j);
  j.es = cpu_dtype_size(a->y.dtype);
  if (j.es == 0 || j.es > sizeof j.pat) return BP_ERR_UNIMPLEMENTED;
  cpu_store(j.pat, a->y.dtype, 0, a->value);
  const bp_plugin_tensor_t *ts[1] = {&a->y};
  cpu_fast_rows_init(&j.r, &a->y, ts, 1);
  if (!plain_rows(&j.r, 1)) return BP_ERR_UNIMPLEMENTED;
  j.y = cpu_tensor_base(&a->y);
  if (cpu_numel(&a->y) == 0) return BP_OK;
  int64_t len = j.r.shape[j.r.rank - 1];
  cpu_fast_rows_run(dev, cpu_fast_rows_count(&j.r), len, CAST_PIECE, fill_piece, &j);
  return BP_OK;
}
