/*
 * fast/elementwise/elementwise.c — unary and broadcasting binary fast paths (f32), and
 * the row machinery the other memory-bound fast paths share: picking the
 * vector table (fast/vec.h) for the device's ISA ceiling, coalescing a
 * tensor walk into long rows, and spreading row pieces over the pool.
 *
 * Covered: f32, f16 and bf16 tensors (any mix; f16 / bf16 ones are widened
 * to f32 a chunk at a time, run through the same f32 row kernels and
 * narrowed with round to nearest even), y with unit stride along its
 * (coalesced) last dim and no broadcast, inputs with stride 1 or 0 there
 * (a row or column broadcast) and any strides outside it. Everything else —
 * other dtypes, pow, sin / cos, strided rows — returns
 * BP_ERR_UNIMPLEMENTED.
 */
#include <immintrin.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/tensor.h"

const cpu_fast_vec_kernels_t *cpu_fast_vec_pick(const cpu_device_t *dev) {
  const cpu_features_t *f = cpu_features_get();
  bp_isa_level_t isa = dev->isa == BP_ISA_BEST ? BP_ISA_AVX512 : dev->isa;
  if (isa >= BP_ISA_AVX512 && f->avx512f && f->avx512bw && f->avx512vl &&
      f->avx512dq)
    return &cpu_fast_vec_avx512;
  if (isa >= BP_ISA_AVX2 && f->avx2 && f->fma && f->f16c) return &cpu_fast_vec_avx2;
  return NULL;
}

/* ---- rows -------------------------------------------------------------------*/

bool cpu_fast_rows_init(cpu_fast_rows_t *r, const bp_plugin_tensor_t *shape_of,
                    const bp_plugin_tensor_t *const *ts, int count) {
  r->count = count;
  r->rank = 0;
  /* drop extent-1 dims, then merge each dim into the next (inner) one
   * where every tensor steps through both as through one */
  for (int32_t d = 0; d < shape_of->rank; d++) {
    if (shape_of->shape[d] == 1) continue;
    int32_t o = r->rank;
    bool merge = o > 0;
    for (int k = 0; k < count && merge; k++)
      merge = r->strides[k][o - 1] == ts[k]->strides[d] * shape_of->shape[d];
    if (merge) {
      r->shape[o - 1] *= shape_of->shape[d];
      for (int k = 0; k < count; k++) r->strides[k][o - 1] = ts[k]->strides[d];
      continue;
    }
    r->shape[o] = shape_of->shape[d];
    for (int k = 0; k < count; k++) r->strides[k][o] = ts[k]->strides[d];
    r->rank++;
  }
  if (r->rank == 0) { /* one element */
    r->rank = 1;
    r->shape[0] = 1;
    for (int k = 0; k < count; k++) r->strides[k][0] = 1;
  }
  return true;
}

int64_t cpu_fast_rows_offset(const cpu_fast_rows_t *r, int k, int64_t row) {
  int64_t off = 0;
  for (int32_t d = r->rank - 2; d >= 0; d--) {
    off += (row % r->shape[d]) * r->strides[k][d];
    row /= r->shape[d];
  }
  return off;
}

int64_t cpu_fast_rows_count(const cpu_fast_rows_t *r) {
  int64_t n = 1;
  for (int32_t d = 0; d + 1 < r->rank; d++) n *= r->shape[d];
  return n;
}

int64_t cpu_fast_line_offset(const bp_plugin_tensor_t *t, int64_t line) {
  /* the outermost dim takes what is left without a division: a rank-2
   * tensor's rows cost a multiply, not two 64-bit divisions (a large part
   * of a short row's time) */
  if (t->rank < 2) return 0;
  int64_t off = 0;
  for (int32_t d = t->rank - 2; d > 0; d--) {
    if (t->shape[d] == 1) continue;
    off += (line % t->shape[d]) * t->strides[d];
    line /= t->shape[d];
  }
  return off + line * t->strides[0];
}

/* ---- non-temporal stores ---------------------------------------------------*/

/* [lo, hi) bytes t's elements touch. */
static void byte_span(const bp_plugin_tensor_t *t, uintptr_t *lo,
                      uintptr_t *hi) {
  int64_t es = (int64_t)cpu_dtype_size(t->dtype), a = 0, b = 0;
  for (int32_t d = 0; d < t->rank; d++) {
    int64_t ext = (t->shape[d] - 1) * t->strides[d] * es;
    if (ext < 0) a += ext;
    else b += ext;
  }
  uintptr_t base = (uintptr_t)cpu_tensor_base(t);
  *lo = base + (uintptr_t)a; /* a <= 0: wraps to base - |a| */
  *hi = base + (uintptr_t)b + (uintptr_t)es;
}

bool cpu_fast_nt_ok(const cpu_device_t *dev, const bp_plugin_tensor_t *y,
                const bp_plugin_tensor_t *const *in, int nin) {
  int64_t n = cpu_numel(y);
  if (n == 0 || (uintptr_t)cpu_tensor_base(y) % sizeof(float) != 0 ||
      n * (int64_t)cpu_dtype_size(y->dtype) < cpu_fast_nt_min_bytes(dev))
    return false;
  uintptr_t ylo, yhi;
  byte_span(y, &ylo, &yhi);
  for (int k = 0; k < nin; k++) {
    uintptr_t lo, hi;
    if (cpu_numel(in[k]) == 0) continue;
    byte_span(in[k], &lo, &hi);
    if (lo < yhi && ylo < hi) return false;
  }
  return true;
}

/* ---- threading -----------------------------------------------------------------*/

/* Pieces are claimed from a shared counter a batch at a time rather than
 * split evenly up front: every piece writes only its own output, so who
 * runs it does not change a bit, and when another process holds one core
 * (a shared machine) the other worker takes the rest instead of waiting
 * for the slow half. */
typedef struct rows_job {
  cpu_fast_piece_fn fn;
  cpu_fast_range_fn range_fn; /* whole rows in claimed ranges, when set */
  void *ctx;
  int64_t len, piece, per_row, tasks, batch;
  int64_t next; /* the first unclaimed piece (atomic) */
} rows_job_t;

static void rows_task(void *vctx, int64_t begin, int64_t end, unsigned w) {
  (void)begin, (void)end, (void)w;
  rows_job_t *j = vctx;
  for (;;) {
    int64_t t = __atomic_fetch_add(&j->next, j->batch, __ATOMIC_RELAXED);
    if (t >= j->tasks) break;
    int64_t stop = t + j->batch < j->tasks ? t + j->batch : j->tasks;
    if (j->range_fn) {
      j->range_fn(j->ctx, t, stop);
      continue;
    }
    for (; t < stop; t++) {
      int64_t row = t / j->per_row, c0 = t % j->per_row * j->piece;
      int64_t n = j->len - c0 < j->piece ? j->len - c0 : j->piece;
      j->fn(j->ctx, row, c0, n);
    }
  }
  /* streaming stores are weakly ordered: make them visible before the
   * pool reports this worker done (cheap when there were none) */
  _mm_sfence();
}

/* Starts the workers on j (its tasks, per_row and piece set). */
static void rows_start(cpu_device_t *dev, rows_job_t *j) {
  /* a thread is worth it above ~64k elements; claims of ~16k elements */
  int64_t grain = 65536 / j->piece + 1, workers = cpu_pool_size(dev->pool);
  if (j->tasks / grain < workers) workers = j->tasks / grain;
  j->batch = 16384 / j->piece > 1 ? 16384 / j->piece : 1;
  cpu_pool_run(dev->pool, workers > 1 ? workers : 1, 1, rows_task, j);
}

void cpu_fast_rows_run(cpu_device_t *dev, int64_t rows, int64_t len, int64_t piece,
                   cpu_fast_piece_fn fn, void *ctx) {
  if (rows <= 0 || len <= 0) return;
  if (piece <= 0 || piece > len) piece = len;
  rows_job_t j = {fn, NULL, ctx, len, piece, (len + piece - 1) / piece, 0, 0, 0};
  j.tasks = rows * j.per_row;
  rows_start(dev, &j);
}

void cpu_fast_row_ranges_run(cpu_device_t *dev, int64_t rows, int64_t len,
                         cpu_fast_range_fn fn, void *ctx) {
  if (rows <= 0 || len <= 0) return;
  rows_job_t j = {NULL, fn, ctx, len, len, 1, rows, 0, 0};
  rows_start(dev, &j);
}

/* ---- unary / binary ---------------------------------------------------------*/

#define EW_PIECE 16384 /* elements per task piece: 64 KiB of f32 */
/* f16 / bf16 pieces go through f32 rows of this many elements: three of
 * them (two inputs, the output) stay in L1 between widening, the kernel
 * and narrowing. */
#define EW_CHUNK 1024

typedef struct ew_job {
  const cpu_fast_vec_kernels_t *vk;
  cpu_fast_rows_t r;
  int op;
  const char *in[2];
  char *y;
  int nin;
  bool nt;
  bp_dtype_t dt[3]; /* in[0], in[1] (binary), y */
  bool f32;         /* every tensor f32: no widening */
} ew_job_t;

static void ew_row(const ew_job_t *j, const float *a, int64_t sa,
                   const float *b, int64_t sb, float *y, int64_t n, bool nt) {
  if (j->nin == 1)
    j->vk->unary_row((bp_unary_op_t)j->op, a, y, n, nt);
  else
    j->vk->binary_row((bp_binary_op_t)j->op, a, sa, b, sb, y, n, nt);
}

/* One piece with f16 / bf16 tensors: chunks widened to f32 (a broadcast
 * input, stride 0, is one element), the f32 row kernel, the result
 * narrowed with round to nearest even. */
static void ew_piece_half(const ew_job_t *j, const char *a, int64_t sa,
                          const char *b, int64_t sb, char *y, int64_t n) {
  float buf[3][EW_CHUNK] __attribute__((aligned(64)));
  const size_t za = cpu_dtype_size(j->dt[0]), zb = cpu_dtype_size(j->dt[1]);
  const size_t zy = cpu_dtype_size(j->dt[2]);
  for (int64_t c0 = 0; c0 < n; c0 += EW_CHUNK) {
    int64_t c = n - c0 < EW_CHUNK ? n - c0 : EW_CHUNK;
    const float *pa = cpu_fast_widen(j->vk, j->dt[0], a + (ptrdiff_t)(c0 * sa) * (ptrdiff_t)za,
                                     sa ? c : 1, buf[0]);
    const float *pb = NULL;
    if (j->nin == 2)
      pb = cpu_fast_widen(j->vk, j->dt[1], b + (ptrdiff_t)(c0 * sb) * (ptrdiff_t)zb,
                          sb ? c : 1, buf[1]);
    char *yc = y + (size_t)c0 * zy;
    float *py = j->dt[2] == BP_F32 ? (float *)(void *)yc : buf[2];
    ew_row(j, pa, sa, pb, sb, py, c, false);
    cpu_fast_narrow(j->vk, j->dt[2], py, yc, c);
  }
}

static void ew_piece(void *ctx, int64_t row, int64_t c0, int64_t n) {
  const ew_job_t *j = ctx;
  int last = j->r.rank - 1;
  const size_t za = cpu_dtype_size(j->dt[0]), zy = cpu_dtype_size(j->dt[2]);
  char *y = j->y + (ptrdiff_t)(cpu_fast_rows_offset(&j->r, j->nin, row) + c0) * (ptrdiff_t)zy;
  int64_t s0 = j->r.strides[0][last], s1 = 0;
  const char *a = j->in[0] + (ptrdiff_t)(cpu_fast_rows_offset(&j->r, 0, row) + c0 * s0) * (ptrdiff_t)za;
  const char *b = NULL;
  if (j->nin == 2) {
    s1 = j->r.strides[1][last];
    b = j->in[1] + (ptrdiff_t)(cpu_fast_rows_offset(&j->r, 1, row) + c0 * s1) *
                       (ptrdiff_t)cpu_dtype_size(j->dt[1]);
  }
  if (!j->f32) {
    ew_piece_half(j, a, s0, b, s1, y, n);
    return;
  }
  ew_row(j, (const float *)(const void *)a, s0, (const float *)(const void *)b,
         s1, (float *)(void *)y, n, j->nt);
}

/* y must be a plain, non-broadcast row-major walk along its last dim. */
static bool rows_ok(const cpu_fast_rows_t *r, int yk, int nin) {
  int last = r->rank - 1;
  if (r->strides[yk][last] != 1) return false;
  for (int32_t d = 0; d < r->rank; d++)
    if (r->strides[yk][d] == 0 && r->shape[d] > 1) return false;
  for (int k = 0; k < nin; k++)
    if (r->strides[k][last] != 0 && r->strides[k][last] != 1) return false;
  return true;
}

static bp_status_t ew_run(cpu_device_t *dev, ew_job_t *j) {
  int64_t len = j->r.shape[j->r.rank - 1];
  cpu_fast_rows_run(dev, cpu_fast_rows_count(&j->r), len, EW_PIECE, ew_piece, j);
  return BP_OK;
}

/* The dtypes of an op's tensors: each f32, f16 or bf16. */
static bool ew_dtypes(ew_job_t *j, const bp_dtype_t *dt, int count) {
  j->f32 = true;
  for (int k = 0; k < count; k++) {
    if (!cpu_fast_float_dtype(dt[k])) return false;
    j->f32 = j->f32 && dt[k] == BP_F32;
  }
  j->dt[0] = dt[0];
  j->dt[1] = count == 3 ? dt[1] : BP_F32;
  j->dt[2] = dt[count - 1];
  return true;
}

bp_status_t cpu_fast_unary(cpu_device_t *dev, const bp_unary_args_t *a) {
  ew_job_t j = {cpu_fast_vec_pick(dev), {0}, (int)a->op, {0}, NULL, 1, false,
                {0}, false};
  const bp_dtype_t dt[2] = {a->x.dtype, a->y.dtype};
  if (!j.vk || !ew_dtypes(&j, dt, 2)) return BP_ERR_UNIMPLEMENTED;
  /* ops without a vector form: probe with an empty row */
  float probe = 0;
  if (!j.vk->unary_row(a->op, &probe, &probe, 0, false))
    return BP_ERR_UNIMPLEMENTED;
  const bp_plugin_tensor_t *ts[2] = {&a->x, &a->y};
  cpu_fast_rows_init(&j.r, &a->y, ts, 2);
  if (!rows_ok(&j.r, 1, 1) || j.r.strides[0][j.r.rank - 1] != 1)
    return BP_ERR_UNIMPLEMENTED;
  j.in[0] = cpu_tensor_base(&a->x);
  j.y = cpu_tensor_base(&a->y);
  j.nt = j.f32 && cpu_fast_nt_ok(dev, &a->y, ts, 1);
  return ew_run(dev, &j);
}

bp_status_t cpu_fast_binary(cpu_device_t *dev, const bp_binary_args_t *a) {
  ew_job_t j = {cpu_fast_vec_pick(dev), {0}, (int)a->op, {0}, NULL, 2, false,
                {0}, false};
  const bp_dtype_t dt[3] = {a->a.dtype, a->b.dtype, a->y.dtype};
  if (!j.vk || !ew_dtypes(&j, dt, 3)) return BP_ERR_UNIMPLEMENTED;
  float probe = 0;
  if (!j.vk->binary_row(a->op, &probe, 0, &probe, 0, &probe, 0, false))
    return BP_ERR_UNIMPLEMENTED;
  const bp_plugin_tensor_t *ts[3] = {&a->a, &a->b, &a->y};
  cpu_fast_rows_init(&j.r, &a->y, ts, 3);
  if (!rows_ok(&j.r, 2, 2)) return BP_ERR_UNIMPLEMENTED;
  j.in[0] = cpu_tensor_base(&a->a);
  j.in[1] = cpu_tensor_base(&a->b);
  j.y = cpu_tensor_base(&a->y);
  j.nt = j.f32 && cpu_fast_nt_ok(dev, &a->y, ts, 2);
  return ew_run(dev, &j);
}
