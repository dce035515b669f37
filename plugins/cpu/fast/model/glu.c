/*
 * fast/model/glu.c — binary with a scalar and gated linear units on the
 * vector row kernels (fast/vec.h), f32 and f16 / bf16 through widened f32
 * chunks as the elementwise ops do.
 *
 * Binary with a scalar is the broadcasting binary fast path with a
 * one-element f32 operand of stride 0 holding the scalar rounded to a's
 * dtype. GLU runs, per chunk of a row, the activation's unary row kernel
 * on gate into an L1-resident f32 buffer, then the multiply row kernel
 * with up into y. Covered: y with unit stride along its coalesced last
 * dim, gate and up with stride 1 or 0 there; f64 and other layouts run
 * the reference.
 */
#include <string.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/model_args.h"
#include "plugins/cpu/tensor.h"

/* ---- binary with a scalar -----------------------------------------------*/

bp_status_t cpu_fast_binary_scalar(cpu_device_t *dev, const bp_binary_scalar_args_t *a) {
  if (!cpu_fast_float_dtype(a->a.dtype)) return BP_ERR_UNIMPLEMENTED;
  /* exact in f32: the scalar already holds a value of a's dtype */
  float s = (float)cpu_scalar_as(a->a.dtype, a->scalar);
  bp_plugin_tensor_t st;
  memset(&st, 0, sizeof st);
  st.ptr = (uint64_t)(uintptr_t)&s;
  st.dtype = BP_F32;
  st.rank = a->y.rank;
  for (int32_t d = 0; d < st.rank; d++) st.shape[d] = a->y.shape[d];
  bp_binary_args_t b;
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  b.op = a->op;
  b.a = a->scalar_first ? st : a->a;
  b.b = a->scalar_first ? a->a : st;
  b.y = a->y;
  return cpu_fast_binary(dev, &b);
}

/* ---- GLU ----------------------------------------------------------------*/

#define GLU_PIECE 16384 /* elements per task piece */
#define GLU_CHUNK 1024  /* f32 buffers of this many stay in L1 */

typedef struct glu_job {
  const cpu_fast_vec_kernels_t *vk;
  cpu_fast_rows_t r;
  bp_unary_op_t act;
  const char *gate, *up;
  char *y;
  bp_dtype_t dt[3]; /* gate, up, y */
} glu_job_t;

static bp_unary_op_t glu_unary(bp_glu_kind_t kind) {
  switch (kind) {
  case BP_GLU_SWIGLU:
    return BP_UNARY_SILU;
  case BP_GLU_GEGLU:
    return BP_UNARY_GELU;
  case BP_GLU_GEGLU_TANH:
    return BP_UNARY_GELU_TANH;
  default:
    return BP_UNARY_RELU;
  }
}

static void glu_piece(void *ctx, int64_t row, int64_t c0, int64_t n) {
  const glu_job_t *j = ctx;
  float buf[3][GLU_CHUNK] __attribute__((aligned(64)));
  int last = j->r.rank - 1;
  int64_t sg = j->r.strides[0][last], su = j->r.strides[1][last];
  size_t zg = cpu_dtype_size(j->dt[0]), zu = cpu_dtype_size(j->dt[1]);
  size_t zy = cpu_dtype_size(j->dt[2]);
  const char *g = j->gate + (size_t)(cpu_fast_rows_offset(&j->r, 0, row) + c0 * sg) * zg;
  const char *u = j->up + (size_t)(cpu_fast_rows_offset(&j->r, 1, row) + c0 * su) * zu;
  char *y = j->y + (size_t)(cpu_fast_rows_offset(&j->r, 2, row) + c0) * zy;
  for (int64_t k = 0; k < n; k += GLU_CHUNK) {
    int64_t c = n - k < GLU_CHUNK ? n - k : GLU_CHUNK, cg = sg ? c : 1;
    const float *pg = cpu_fast_widen(j->vk, j->dt[0], g + (size_t)(k * sg) * zg, cg, buf[0]);
    const float *pu =
        cpu_fast_widen(j->vk, j->dt[1], u + (size_t)(k * su) * zu, su ? c : 1, buf[1]);
    /* the activation goes to buf[2]; the product to y, or over buf[2]
     * (each element read before written), or to buf[0] when gate is one
     * broadcast element that every product reads */
    j->vk->unary_row(j->act, pg, buf[2], cg, false);
    char *yc = y + (size_t)k * zy;
    float *py = j->dt[2] == BP_F32 ? (float *)(void *)yc : sg ? buf[2] : buf[0];
    j->vk->binary_row(BP_BINARY_MUL, buf[2], sg ? 1 : 0, pu, su ? 1 : 0, py, c, false);
    cpu_fast_narrow(j->vk, j->dt[2], py, yc, c);
  }
}

/* y a plain row-major walk along its last dim; inputs stride 0 or 1 there. */
static bool glu_rows_ok(const cpu_fast_rows_t *r) {
  int last = r->rank - 1;
  if (r->strides[2][last] != 1) return false;
  for (int32_t d = 0; d < r->rank; d++)
    if (r->strides[2][d] == 0 && r->shape[d] > 1) return false;
  for (int k = 0; k < 2; k++)
    if (r->strides[k][last] != 0 && r->strides[k][last] != 1) return false;
  return true;
}

bp_status_t cpu_fast_glu(cpu_device_t *dev, const bp_glu_args_t *a) {
  glu_job_t j = {cpu_fast_vec_pick(dev),
                 {0},
                 glu_unary(a->kind),
                 NULL,
                 NULL,
                 NULL,
                 {a->gate.dtype, a->up.dtype, a->y.dtype}};
  if (!j.vk || (unsigned)a->kind >= BP_GLU_COUNT) return BP_ERR_UNIMPLEMENTED;
  for (int k = 0; k < 3; k++)
    if (!cpu_fast_float_dtype(j.dt[k])) return BP_ERR_UNIMPLEMENTED;
  const bp_plugin_tensor_t *ts[3] = {&a->gate, &a->up, &a->y};
  cpu_fast_rows_init(&j.r, &a->y, ts, 3);
  if (!glu_rows_ok(&j.r)) return BP_ERR_UNIMPLEMENTED;
  j.gate = cpu_tensor_base(&a->gate);
  j.up = cpu_tensor_base(&a->up);
  j.y = cpu_tensor_base(&a->y);
  cpu_fast_rows_run(dev, cpu_fast_rows_count(&j.r), j.r.shape[j.r.rank - 1], GLU_PIECE, glu_piece,
                    &j);
  return BP_OK;
}
