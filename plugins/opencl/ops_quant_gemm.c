/*
 * ops_quant_gemm.c — the two GEMMs of ABI 1.5's quantized ops
 * (kernels/opencl/quant.cl).
 *
 * qgemm (a and b each i8 or u8): like the f32 GEMM's tiled path
 * (ops_blas.c), qpack first copies a's rows and b's columns, whatever
 * their strides, into zero-padded panels with k contiguous, so qgemm_tiled
 * reads 16 bytes of k at a time for each of its 4 x 4 outputs and needs no
 * edge cases inside its loop; the scale and requantize epilogue runs as
 * the sums are stored.
 * The panels hold the bytes as they are; only qgemm_tiled's products know
 * a u8 operand (-DAU / -DBU, one program per signedness pair). fp8 a and b
 * (-DFA / -DFB, one program per format pair) go through the same panels
 * into qgemm_fp8, which decodes each code to f32 (exact) and sums the
 * products in f32, then scales and rounds once to c's dtype.
 * qmatmul (block weights): m = 1 is the GEMV of token generation, qmv,
 * bound by the weights' bytes: a work-group of QMV_WG items per QMV_ROWS
 * output columns splits k between its items and reduces in local memory;
 * m > 1 runs qmm_tiled, 32 x 32 tiles of y over k blocks staged in local
 * memory (a's values and w's dequantized weights), so each weight is
 * decoded once per tile instead of once per output.
 */
#include <stdio.h>
#include <string.h>

#include "ocl_quant.h"

/* quant.cl's tile sizes (QG_*, QMV_*, QMM_*). */
#define QG_ITEMS 8
#define QG_W 4
#define QG_K 16
#define QMV_WG 32
#define QMV_ROWS 8
#define QMM_ITEMS 8
#define QMM_TILE 32

/* ---- int8 and fp8 GEMM ---------------------------------------------------- */

/* quant.cl's FA / FB: an fp8 operand's mantissa bits; 0 for i8 / u8. */
static int fp8_mbits(bp_dtype_t dt) {
  return dt == BP_FP8_E4M3 ? 3 : dt == BP_FP8_E5M2 ? 2 : 0;
}

typedef struct qg_shape {
  int64_t batch, m, n, k, mp, np, kp;
  int64_t ba, bb; /* panels packed: 1 when the operand is shared */
} qg_shape_t;

/* Packs rows x k of src (element strides sb, sr, sp) into dst's nbatch
 * panels of rp x kp. Caller holds d->lock. */
static bp_status_t qg_pack(ocl_device_t *d, cl_command_queue q, const char *defs,
                           const bp_plugin_tensor_t *src, int64_t nbatch, int64_t rows, int64_t k,
                           int64_t sb, int64_t sr, int64_t sp, cl_mem dst, int64_t rp, int64_t kp) {
  ocl_args_t a;
  bp_status_t st = ocl_quant_kernel(d, BP_F32, defs, "qpack", &a);
  if (st != BP_OK) return st;
  cl_long v[7] = {rows, k, sb, sr, sp, rp, kp};
  ocl_arg_buf(&a, src->ptr, src->offset);
  for (int i = 0; i < 5; i++) OCL_ARG(&a, v[i]);
  OCL_ARG(&a, dst);
  OCL_ARG(&a, v[5]);
  OCL_ARG(&a, v[6]);
  size_t gws[3] = {(size_t)kp, (size_t)rp, (size_t)nbatch};
  return ocl_enqueue(q, &a, 3, gws, NULL);
}

/* Adds a scale's buffer, offset and stride; an absent one (rank 0: 1)
 * binds c's buffer, never read. */
static void qg_arg_scale(ocl_args_t *a, const bp_plugin_tensor_t *s, const bp_plugin_tensor_t *c) {
  cl_long stride = s->rank ? s->strides[0] : 0;
  if (s->rank)
    ocl_arg_buf(a, s->ptr, s->offset);
  else
    ocl_arg_buf(a, c->ptr, c->offset);
  OCL_ARG(a, stride);
}

static bp_status_t qg_tiled(ocl_device_t *d, cl_command_queue q, const char *defs,
                            const bp_qgemm_args_t *args, const qg_shape_t *g, cl_mem pa,
                            cl_mem pb) {
  const bp_plugin_tensor_t *C = &args->c;
  int r = C->rank;
  ocl_args_t a;
  const char *name = fp8_mbits(args->a.dtype) ? "qgemm_fp8" : "qgemm_tiled";
  bp_status_t st = ocl_quant_kernel(d, BP_F32, defs, name, &a);
  if (st != BP_OK) return st;
  cl_long v[8] = {g->kp,
                  g->ba == 1 ? 0 : g->mp * g->kp,
                  g->bb == 1 ? 0 : g->np * g->kp,
                  g->m,
                  g->n,
                  r == 3 ? C->strides[0] : 0,
                  C->strides[r - 2],
                  C->strides[r - 1]};
  cl_int has[2] = {args->scale_a.rank > 0, args->scale_b.rank > 0};
  cl_float out_scale = args->out_scale;
  OCL_ARG(&a, pa);
  OCL_ARG(&a, pb);
  for (int i = 0; i < 3; i++) OCL_ARG(&a, v[i]);
  ocl_arg_buf(&a, C->ptr, C->offset);
  for (int i = 3; i < 8; i++) OCL_ARG(&a, v[i]);
  qg_arg_scale(&a, &args->scale_a, C);
  qg_arg_scale(&a, &args->scale_b, C);
  ocl_arg(&a, sizeof(cl_int2), has);
  OCL_ARG(&a, out_scale);
  size_t lws[3] = {QG_ITEMS, QG_ITEMS, 1};
  size_t gws[3] = {(size_t)(g->np / QG_W), (size_t)(g->mp / QG_W), (size_t)g->batch};
  return ocl_enqueue(q, &a, 3, gws, lws);
}

/* The device's integer dot product, unless BACKPLANE_OPENCL_QUANT_DOT=0
 * asks for the widened products (tests run both on one device). */
static bool qg_int_dot(const ocl_device_t *d) {
  const char *v =
      ocl_host && ocl_host->getenv ? ocl_host->getenv("BACKPLANE_OPENCL_QUANT_DOT") : NULL;
  return d->caps.int_dot && !(v && strcmp(v, "0") == 0);
}

bp_status_t ocl_op_qgemm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                         const bp_qgemm_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *A = &args->a, *B = &args->b;
  int r = A->rank, rb = B->rank;
  qg_shape_t g = {.batch = r == 3 ? A->shape[0] : 1,
                  .m = A->shape[r - 2],
                  .k = A->shape[r - 1],
                  .n = B->shape[rb - 1]};
  const int64_t tile = QG_ITEMS * QG_W;
  g.mp = (int64_t)ocl_round_up((size_t)g.m, tile);
  g.np = (int64_t)ocl_round_up((size_t)g.n, tile);
  g.kp = (int64_t)ocl_round_up((size_t)(g.k ? g.k : 1), QG_K);
  int64_t sab = r == 3 ? A->strides[0] : 0, sbb = rb == 3 ? B->strides[0] : 0;
  g.ba = sab ? g.batch : 1;
  g.bb = sbb ? g.batch : 1;
  char defs[64];
  if (fp8_mbits(A->dtype))
    snprintf(defs, sizeof defs, "-DQG -DCDT=%d -DFA=%d -DFB=%d", (int)args->c.dtype,
             fp8_mbits(A->dtype), fp8_mbits(B->dtype));
  else
    snprintf(defs, sizeof defs, "-DQG -DCDT=%d%s%s%s", (int)args->c.dtype,
             qg_int_dot(d) ? " -DBP_IDOT" : "", A->dtype == BP_U8 ? " -DAU" : "",
             B->dtype == BP_U8 ? " -DBU" : "");
  cl_command_queue q = ocl_queue(d, stream);
  bp_status_t st = BP_OK;
  cl_mem pa = ocl_scratch(d, q, (size_t)(g.ba * g.mp * g.kp), &st);
  cl_mem pb = pa ? ocl_scratch(d, q, (size_t)(g.bb * g.np * g.kp), &st) : NULL;
  if (st != BP_OK) goto out;
  pthread_mutex_lock(&d->lock);
  st = qg_pack(d, q, defs, A, g.ba, g.m, g.k, sab, A->strides[r - 2], A->strides[r - 1], pa, g.mp,
               g.kp);
  if (st == BP_OK)
    st = qg_pack(d, q, defs, B, g.bb, g.n, g.k, sbb, B->strides[rb - 1], B->strides[rb - 2], pb,
                 g.np, g.kp);
  if (st == BP_OK) st = qg_tiled(d, q, defs, args, &g, pa, pb);
  pthread_mutex_unlock(&d->lock);
out:
  /* OpenCL keeps the scratch alive until the queued kernels finish. */
  if (pa) ocl_api.clReleaseMemObject(pa);
  if (pb) ocl_api.clReleaseMemObject(pb);
  return st;
}

/* ---- GEMM / GEMV with block-quantized weights ----------------------------- */

/* Adds a rank 2 or 3 tensor's (batch, row, column) strides as a long4. */
static void arg_strides3(ocl_args_t *a, const bp_plugin_tensor_t *t) {
  int r = t->rank;
  cl_long s[4] = {r == 3 ? t->strides[0] : 0, t->strides[r - 2], t->strides[r - 1], 0};
  ocl_arg(a, sizeof(cl_long4), s);
}

bp_status_t ocl_op_qmatmul(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                           const bp_qmatmul_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *A = &args->a, *W = &args->w, *Y = &args->y;
  int r = A->rank;
  cl_long m = A->shape[r - 2], n = W->shape[0], nb = W->shape[1] / BP_QUANT_BLOCK;
  cl_long wrs = W->strides[0] / BP_QUANT_BLOCK, batch = r == 3 ? A->shape[0] : 1;
  bool gemv = m == 1;
  char defs[32];
  snprintf(defs, sizeof defs, "-DQDT=%d", (int)W->dtype);
  ocl_args_t a;
  pthread_mutex_lock(&d->lock);
  bp_status_t st = ocl_quant_kernel(d, A->dtype, defs, gemv ? "qmv" : "qmm_tiled", &a);
  if (st == BP_OK) {
    ocl_arg_buf(&a, A->ptr, A->offset);
    ocl_arg_buf(&a, W->ptr, W->offset);
    ocl_arg_buf(&a, Y->ptr, Y->offset);
    OCL_ARG(&a, m);
    OCL_ARG(&a, n);
    OCL_ARG(&a, nb);
    OCL_ARG(&a, wrs);
    arg_strides3(&a, A);
    arg_strides3(&a, Y);
    size_t cols = (size_t)(n + QMV_ROWS - 1) / QMV_ROWS;
    size_t gv[2] = {cols * QMV_WG, (size_t)(batch * m)}, lv[2] = {QMV_WG, 1};
    size_t tiles_n = (size_t)(n + QMM_TILE - 1) / QMM_TILE;
    size_t tiles_m = (size_t)(m + QMM_TILE - 1) / QMM_TILE;
    size_t gt[3] = {tiles_n * QMM_ITEMS, tiles_m * QMM_ITEMS, (size_t)batch};
    size_t lt[3] = {QMM_ITEMS, QMM_ITEMS, 1};
    cl_command_queue q = ocl_queue(d, stream);
    st = gemv ? ocl_enqueue(q, &a, 2, gv, lv) : ocl_enqueue(q, &a, 3, gt, lt);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}
