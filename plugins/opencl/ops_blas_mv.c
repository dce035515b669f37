/*
 * ops_blas_mv.c — the matrix-vector product (the 1 x k x n GEMM and gemv)
 * through gemm.cl's mv_* kernels, which read the matrix once, front to
 * back along its contiguous rows, from enough work-items for every core.
 *
 * x^T W with W [k][n] row-contiguous splits k: mv_cols_part leaves one
 * partial row per k slice in a scratch buffer, mv_cols_sum adds them (a
 * second pass over nsplit x n values, small beside the k x n matrix) and
 * applies alpha, beta and the GEMM epilogue. W x with W's rows contiguous
 * along k runs mv_rows, an item per output.
 */
#include "ocl.h"

/* k slices: enough for every core several times over, each at least
 * MV_MIN_ROWS rows so the partial rows stay a small share of the traffic. */
#define MV_MIN_ROWS 32
#define MV_TARGET_SPLITS 64
/* mv_cols reads whole vectors of 16 columns (gemm.cl SKV). */
#define MV_VEC 16

/* One matrix-vector problem, per batch entry: y[j] (stride ys) =
 * alpha sum_p W[p, j] x[p] + beta y[j] over batch entries. */
typedef struct mv_problem {
  const bp_plugin_tensor_t *w, *x, *y; /* buffers, offsets, dtype */
  int64_t n, k, batch;
  int64_t sw_row, sw_col, swb; /* W's strides: along k, along n, batch */
  int64_t sx, sxb, sy, syb;
  double alpha, beta;
  const bp_plugin_tensor_t *bias;
  bool activate;
  int32_t activation;
} mv_problem_t;

static int64_t mv_slice_rows(int64_t k) {
  int64_t kc = (k + MV_TARGET_SPLITS - 1) / MV_TARGET_SPLITS;
  return kc < MV_MIN_ROWS ? MV_MIN_ROWS : kc;
}

static bp_status_t mv_cols_part(ocl_device_t *d, cl_command_queue q, const char *opts,
                                const mv_problem_t *p, cl_mem part, int64_t kc, int64_t nsplit) {
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_GEMM, opts, "mv_cols_part", &a.k);
  if (st != BP_OK) return st;
  cl_long v[8] = {p->sx, p->sxb, p->sw_row, p->swb, p->n, p->k, kc, nsplit};
  ocl_arg_buf(&a, p->x->ptr, p->x->offset);
  OCL_ARG(&a, v[0]);
  OCL_ARG(&a, v[1]);
  ocl_arg_buf(&a, p->w->ptr, p->w->offset);
  OCL_ARG(&a, v[2]);
  OCL_ARG(&a, v[3]);
  OCL_ARG(&a, part);
  for (int i = 4; i < 8; i++) OCL_ARG(&a, v[i]);
  /* groups of one item: the driver's threads share the slices freely */
  size_t lws[2] = {1, 1}, gws[2] = {(size_t)nsplit, (size_t)p->batch};
  return ocl_enqueue(q, &a, 2, gws, lws);
}

static bp_status_t mv_cols_sum(ocl_device_t *d, cl_command_queue q, const char *opts,
                               const mv_problem_t *p, cl_mem part, int64_t nsplit) {
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_GEMM, opts, "mv_cols_sum", &a.k);
  if (st != BP_OK) return st;
  cl_long v[4] = {nsplit, p->n, p->syb, p->sy};
  OCL_ARG(&a, part);
  OCL_ARG(&a, v[0]);
  ocl_arg_buf(&a, p->y->ptr, p->y->offset);
  for (int i = 1; i < 4; i++) OCL_ARG(&a, v[i]);
  ocl_arg_scalar(&a, p->y->dtype, p->alpha);
  ocl_arg_scalar(&a, p->y->dtype, p->beta);
  ocl_arg_epilogue(&a, p->y, p->bias, p->activate, p->activation);
  size_t lws[2] = {64, 1}, gws[2] = {ocl_round_up((size_t)p->n, 64), (size_t)p->batch};
  return ocl_enqueue(q, &a, 2, gws, lws);
}

static bp_status_t mv_cols(ocl_device_t *d, cl_command_queue q, const char *opts,
                           const mv_problem_t *p) {
  int64_t kc = mv_slice_rows(p->k), nsplit = p->k > 0 ? (p->k + kc - 1) / kc : 1;
  size_t cs = p->y->dtype == BP_F64 ? 8 : 4;
  bp_status_t st = BP_OK;
  cl_mem part = ocl_scratch(d, q, (size_t)(p->batch * nsplit * p->n) * cs, &st);
  if (st != BP_OK) return st;
  st = mv_cols_part(d, q, opts, p, part, kc, nsplit);
  if (st == BP_OK) st = mv_cols_sum(d, q, opts, p, part, nsplit);
  ocl_api.clReleaseMemObject(part); /* OpenCL keeps it until the kernels end */
  return st;
}

static bp_status_t mv_rows(ocl_device_t *d, cl_command_queue q, const char *opts,
                           const mv_problem_t *p) {
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_GEMM, opts, "mv_rows", &a.k);
  if (st != BP_OK) return st;
  cl_long v[7] = {p->sw_col, p->swb, p->sxb, p->n, p->k, p->syb, p->sy};
  ocl_arg_buf(&a, p->w->ptr, p->w->offset);
  OCL_ARG(&a, v[0]);
  OCL_ARG(&a, v[1]);
  ocl_arg_buf(&a, p->x->ptr, p->x->offset);
  OCL_ARG(&a, v[2]);
  ocl_arg_buf(&a, p->y->ptr, p->y->offset);
  for (int i = 3; i < 7; i++) OCL_ARG(&a, v[i]);
  ocl_arg_scalar(&a, p->y->dtype, p->alpha);
  ocl_arg_scalar(&a, p->y->dtype, p->beta);
  ocl_arg_epilogue(&a, p->y, p->bias, p->activate, p->activation);
  size_t lws[2] = {1, 1}, gws[2] = {(size_t)p->n, (size_t)p->batch};
  return ocl_enqueue(q, &a, 2, gws, lws);
}

/* mv_cols when W's rows are contiguous along n, mv_rows when they are
 * contiguous along k with x contiguous too; BP_ERR_UNSUPPORTED otherwise
 * (the caller's general kernels run it). */
static bp_status_t mv_run(ocl_device_t *d, cl_command_queue q, const mv_problem_t *p) {
  bool cols = p->sw_col == 1 && p->n >= MV_VEC;
  bool rows = p->sw_row == 1 && p->sx == 1 && p->k >= MV_VEC;
  if (!cols && !rows) return BP_ERR_UNSUPPORTED;
  char opts[64];
  ocl_dtype_options(d, p->y->dtype, opts, sizeof opts);
  return cols ? mv_cols(d, q, opts, p) : mv_rows(d, q, opts, p);
}

bp_status_t ocl_gemm_mv(ocl_device_t *d, cl_command_queue q, const bp_gemm_args_t *g) {
  const bp_plugin_tensor_t *A = &g->a, *B = &g->b, *C = &g->c;
  if (C->shape[1] != 1) return BP_ERR_UNSUPPORTED;
  /* c[b, 0, j] = sum_p a[b, 0, p] b[b, p, j]: W = b, x = a's row */
  mv_problem_t p = {.w = B,
                    .x = A,
                    .y = C,
                    .n = C->shape[2],
                    .k = A->shape[2],
                    .batch = C->shape[0],
                    .sw_row = B->strides[1],
                    .sw_col = B->strides[2],
                    .swb = B->strides[0],
                    .sx = A->strides[2],
                    .sxb = A->strides[0],
                    .sy = C->strides[2],
                    .syb = C->strides[0],
                    .alpha = g->alpha,
                    .beta = g->beta};
  if (g->struct_size >= sizeof *g) { /* the epilogue: ABI 1.5 callers */
    p.bias = g->bias.rank > 0 ? &g->bias : NULL;
    p.activate = (g->flags & BP_GEMM_FLAG_ACTIVATION) != 0;
    p.activation = g->activation;
  }
  return mv_run(d, q, &p);
}

bp_status_t ocl_gemv_mv(ocl_device_t *d, cl_command_queue q, const bp_gemv_args_t *g) {
  const bp_plugin_tensor_t *A = &g->a;
  /* y[i] = sum_j A[i, j] x[j]: W[p = j][i] */
  mv_problem_t p = {.w = A,
                    .x = &g->x,
                    .y = &g->y,
                    .n = A->shape[0],
                    .k = A->shape[1],
                    .batch = 1,
                    .sw_row = A->strides[1],
                    .sw_col = A->strides[0],
                    .sx = g->x.strides[0],
                    .sy = g->y.strides[0],
                    .alpha = g->alpha,
                    .beta = g->beta};
  return mv_run(d, q, &p);
}
