/*
 * ops_blas.c — gemm, strided batched gemm and gemv (kernels/opencl/gemm.cl).
 *
 * Small problems go to gemm_direct (no scratch, any strides). Larger ones
 * pack A and B into padded compute-type scratch buffers and run gemm_tiled
 * with the device's tuned configuration (ops_blas_tune.c); the whole batch is
 * one launch of each kernel.
 */
#include <stdio.h>
#include <string.h>

#include "ocl.h"

/* Below this many multiply-adds per matrix the packing passes cost more than
 * they save. */
#define GEMM_DIRECT_MAX_FLOPS (48ll * 48 * 48)

void ocl_gemm_cfg_options(const ocl_device_t *d, bp_dtype_t dt, const ocl_gemm_cfg_t *c, char *out,
                          size_t cap) {
  char base[64];
  ocl_dtype_options(d, dt, base, sizeof base);
  snprintf(out, cap,
           "%s -DTM=%d -DTN=%d -DTK=%d -DWM=%d -DWN=%d -DVW=%d "
           "-DUK=%d -DUSE_LOCAL=%d",
           base, c->tile_m, c->tile_n, c->tile_k, c->wpt_m, c->wpt_n, c->vec, c->unroll_k,
           c->use_local);
}

void ocl_arg_epilogue(ocl_args_t *a, const bp_plugin_tensor_t *c, const bp_plugin_tensor_t *bias,
                      bool activate, int32_t activation) {
  cl_long es[4] = {0, 0, 0, 0};
  if (bias) {
    for (int i = 0; i < 3; i++) es[i] = bias->strides[i];
    es[3] = 1;
  }
  cl_int act = activate ? activation : -1;
  ocl_arg_buf(a, bias ? bias->ptr : c->ptr, bias ? bias->offset : c->offset);
  ocl_arg(a, sizeof(cl_long4), es);
  OCL_ARG(a, act);
}

/* g's epilogue into r (none from a caller older than ABI 1.5). */
static void tiled_epilogue(const bp_gemm_args_t *g, ocl_tiled_run_t *r) {
  if (g->struct_size < sizeof *g) return; /* a caller from before ABI 1.5 */
  r->bias = g->bias.rank > 0 ? &g->bias : NULL;
  r->activate = (g->flags & BP_GEMM_FLAG_ACTIVATION) != 0;
  r->activation = g->activation;
}

static void gemm_epilogue_args(ocl_args_t *a, const bp_gemm_args_t *g) {
  ocl_tiled_run_t r = {0};
  tiled_epilogue(g, &r);
  ocl_arg_epilogue(a, &g->c, r.bias, r.activate, r.activation);
}

/* The arguments gemm_direct and the skinny kernels share (gemm.cl): a, b,
 * c, m, n, k, a's and b's strides, c's strides, alpha, beta, epilogue. */
static void gemm_plain_args(ocl_args_t *a, const bp_gemm_args_t *g) {
  const bp_plugin_tensor_t *A = &g->a, *B = &g->b, *C = &g->c;
  cl_long m = C->shape[1], n = C->shape[2], k = A->shape[2];
  cl_long s[8] = {A->strides[0],
                  A->strides[1],
                  A->strides[2],
                  B->strides[0],
                  B->strides[1],
                  B->strides[2],
                  0,
                  0};
  ocl_arg_buf(a, A->ptr, A->offset);
  ocl_arg_buf(a, B->ptr, B->offset);
  ocl_arg_buf(a, C->ptr, C->offset);
  OCL_ARG(a, m);
  OCL_ARG(a, n);
  OCL_ARG(a, k);
  ocl_arg(a, sizeof(cl_long8), s);
  for (int i = 0; i < 3; i++) OCL_ARG(a, C->strides[i]);
  ocl_arg_scalar(a, C->dtype, g->alpha);
  ocl_arg_scalar(a, C->dtype, g->beta);
  gemm_epilogue_args(a, g);
}

static bp_status_t gemm_direct(ocl_device_t *d, cl_command_queue q, const bp_gemm_args_t *g) {
  const bp_plugin_tensor_t *C = &g->c;
  char opts[64];
  ocl_dtype_options(d, C->dtype, opts, sizeof opts);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_GEMM, opts, "gemm_direct", &a.k);
  if (st != BP_OK) return st;
  cl_long m = C->shape[1], n = C->shape[2];
  gemm_plain_args(&a, g);
  size_t lws[3] = {8, 8, 1};
  size_t gws[3] = {ocl_round_up((size_t)n, 8), ocl_round_up((size_t)m, 8), (size_t)C->shape[0]};
  return ocl_enqueue(q, &a, 3, gws, lws);
}

/* Packs one operand: dst[b][p][x] for p < kp, x < xp (see gemm.cl). */
static bp_status_t gemm_pack(ocl_device_t *d, cl_command_queue q, const char *opts,
                             const bp_plugin_tensor_t *t, int64_t batch, int64_t rows_k,
                             int64_t cols_x, int64_t sb, int64_t sp, int64_t sx, cl_mem dst,
                             int64_t kp, int64_t xp, int64_t pw) {
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_GEMM, opts, "pack", &a.k);
  if (st != BP_OK) return st;
  cl_long v[8] = {rows_k, cols_x, sb, sp, sx, kp, xp, pw};
  ocl_arg_buf(&a, t->ptr, t->offset);
  for (int i = 0; i < 5; i++) OCL_ARG(&a, v[i]);
  OCL_ARG(&a, dst);
  OCL_ARG(&a, v[5]);
  OCL_ARG(&a, v[6]);
  OCL_ARG(&a, v[7]);
  size_t lws[3] = {16, 4, 1};
  size_t gws[3] = {ocl_round_up((size_t)xp, 16), ocl_round_up((size_t)kp, 4), (size_t)batch};
  return ocl_enqueue(q, &a, 3, gws, lws);
}

static int64_t round_up64(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

int64_t ocl_gemm_kstep(const ocl_gemm_cfg_t *cfg) {
  return cfg->use_local ? cfg->tile_k : cfg->unroll_k;
}

cl_mem ocl_scratch(ocl_device_t *d, cl_command_queue q, size_t size, bp_status_t *out_st) {
  cl_int err = CL_SUCCESS;
  cl_mem m = ocl_api.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, size ? size : 4, NULL, &err);
  *out_st = m ? BP_OK : ocl_fail(err, "clCreateBuffer (scratch)");
  if (m) ocl_graph_keep(q, m); /* a recorded graph reuses the scratch later */
  return m;
}

bp_status_t ocl_gemm_run(ocl_device_t *d, cl_command_queue q, const ocl_gemm_cfg_t *cfg,
                         const ocl_tiled_run_t *r) {
  char opts[256];
  ocl_gemm_cfg_options(d, r->c->dtype, cfg, opts, sizeof opts);
  /* bf16 B read in place: the program whose B loads widen (gemm.cl) */
  if (r->ldb && r->c->dtype == BP_BF16) strncat(opts, " -DBX", sizeof opts - strlen(opts) - 1);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_GEMM, opts, "gemm_tiled", &a.k);
  if (st != BP_OK) return st;
  cl_long v[18] = {r->mp,  r->np,  r->kp,   r->sab,  r->sbb, r->m,       r->n,   r->csb,  r->csm,
                   r->csn, r->nb1, r->csb1, r->boff, r->tri, r->tri_off, r->ldb, r->bofs, 0};
  cl_int tri = r->tri;
  OCL_ARG(&a, r->pa);
  OCL_ARG(&a, r->pb);
  for (int i = 0; i < 5; i++) OCL_ARG(&a, v[i]);
  ocl_arg_buf(&a, r->c->ptr, r->c->offset + (uint64_t)r->c_off * ocl_dtype_size(r->c->dtype));
  for (int i = 5; i < 10; i++) OCL_ARG(&a, v[i]);
  ocl_arg_scalar(&a, r->c->dtype, r->alpha);
  ocl_arg_scalar(&a, r->c->dtype, r->beta);
  for (int i = 10; i < 13; i++) OCL_ARG(&a, v[i]);
  OCL_ARG(&a, tri);
  for (int i = 14; i < 17; i++) OCL_ARG(&a, v[i]);
  ocl_arg_epilogue(&a, r->c, r->bias, r->activate, r->activation);
  size_t lws[3] = {(size_t)(cfg->tile_n / cfg->wpt_n), (size_t)(cfg->tile_m / cfg->wpt_m), 1};
  size_t gws[3] = {(size_t)(r->np / cfg->tile_n) * lws[0], (size_t)(r->mp / cfg->tile_m) * lws[1],
                   (size_t)r->batch};
  return ocl_enqueue(q, &a, 3, gws, lws);
}

bp_status_t ocl_gemm_tiled(ocl_device_t *d, cl_command_queue q, const ocl_gemm_cfg_t *cfg,
                           const bp_gemm_args_t *g) {
  const bp_plugin_tensor_t *A = &g->a, *B = &g->b, *C = &g->c;
  int64_t batch = C->shape[0], m = C->shape[1], n = C->shape[2];
  int64_t k = A->shape[2];
  int64_t mp = round_up64(m, cfg->tile_m), np = round_up64(n, cfg->tile_n);
  int64_t kp = round_up64(k > 0 ? k : 1, ocl_gemm_kstep(cfg));
  /* A batch stride of 0 shares one matrix: pack it once. */
  int64_t ba = A->strides[0] == 0 ? 1 : batch, bb = B->strides[0] == 0 ? 1 : batch;
  size_t cs = C->dtype == BP_F64 ? 8 : 4;
  bp_status_t st = BP_OK;
  cl_mem pa = ocl_scratch(d, q, (size_t)(ba * kp * mp) * cs, &st);
  cl_mem pb = pa ? ocl_scratch(d, q, (size_t)(bb * kp * np) * cs, &st) : NULL;
  if (st != BP_OK) goto out;
  char opts[256];
  ocl_gemm_cfg_options(d, C->dtype, cfg, opts, sizeof opts);
  st = gemm_pack(d, q, opts, A, ba, k, m, A->strides[0], A->strides[2], A->strides[1], pa, kp, mp,
                 cfg->tile_m);
  if (st == BP_OK)
    st = gemm_pack(d, q, opts, B, bb, k, n, B->strides[0], B->strides[1], B->strides[2], pb, kp, np,
                   cfg->tile_n);
  if (st != BP_OK) goto out;
  ocl_tiled_run_t r = {.pa = pa,
                       .pb = pb,
                       .mp = mp,
                       .np = np,
                       .kp = kp,
                       .sab = ba == 1 ? 0 : kp * mp,
                       .sbb = bb == 1 ? 0 : kp * np,
                       .m = m,
                       .n = n,
                       .batch = batch,
                       .c = C,
                       .csb = C->strides[0],
                       .csm = C->strides[1],
                       .csn = C->strides[2],
                       .nb1 = 1,
                       .alpha = g->alpha,
                       .beta = g->beta};
  tiled_epilogue(g, &r);
  st = ocl_gemm_run(d, q, cfg, &r);
out:
  /* OpenCL keeps the scratch alive until the queued kernels finish. */
  if (pa) ocl_api.clReleaseMemObject(pa);
  if (pb) ocl_api.clReleaseMemObject(pb);
  return st;
}

/* C with at most SKINNY_MAX_M rows: gemm_skinny_n / _k read B once
 * (gemm.cl); they need unit strides along B's rows (n) or along A's rows
 * and B's columns (k), and at least one vector of columns or of k. */
#define SKINNY_MAX_M 16
#define SKINNY_VEC 16

static const char *skinny_kernel(const bp_gemm_args_t *g) {
  const bp_plugin_tensor_t *A = &g->a, *B = &g->b;
  int64_t m = g->c.shape[1], n = g->c.shape[2], k = A->shape[2];
  if (m > SKINNY_MAX_M || m * n * k <= GEMM_DIRECT_MAX_FLOPS) return NULL;
  if (B->strides[2] == 1 && n >= SKINNY_VEC) return "gemm_skinny_n";
  if (B->strides[1] == 1 && A->strides[2] == 1 && k >= SKINNY_VEC) return "gemm_skinny_k";
  return NULL;
}

static bp_status_t gemm_skinny(ocl_device_t *d, cl_command_queue q, const bp_gemm_args_t *g,
                               const char *kernel) {
  const bp_plugin_tensor_t *C = &g->c;
  cl_long m = C->shape[1], n = C->shape[2];
  int mb = 1;
  while (mb < m) mb *= 2;
  char base[64], opts[128];
  ocl_dtype_options(d, C->dtype, base, sizeof base);
  snprintf(opts, sizeof opts, "%s -DMB=%d", base, mb);
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_GEMM, opts, kernel, &a.k);
  if (st != BP_OK) return st;
  gemm_plain_args(&a, g);
  /* _n: an item per SK_NV blocks of 16 columns (gemm.cl); _k: per column */
  int nv = mb == 1 ? 8 : mb <= 2 ? 4 : mb <= 4 ? 2 : 1;
  size_t items =
      kernel[12] == 'n' ? (size_t)((n + SKINNY_VEC * nv - 1) / (SKINNY_VEC * nv)) : (size_t)n;
  /* small groups: more of them to share between the driver's threads */
  size_t lws[2] = {4, 1};
  size_t gws[2] = {ocl_round_up(items, 4), (size_t)C->shape[0]};
  return ocl_enqueue(q, &a, 2, gws, lws);
}

/* beta * C when k == 0 or alpha == 0 is still a gemm: the tiled path handles
 * k == 0 through zero padding, so no special case is needed. */
bp_status_t ocl_op_gemm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_gemm_args_t *args) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *C = &args->c;
  int64_t m = C->shape[1], n = C->shape[2], k = args->a.shape[2];
  if (C->shape[0] == 0 || m == 0 || n == 0) return BP_OK;
  cl_command_queue q = ocl_queue(d, stream);
  bp_status_t st;
  pthread_mutex_lock(&d->lock);
  const char *skinny = skinny_kernel(args);
  /* one row of C: the matrix-vector kernels, when the layout suits them */
  st = m == 1 && skinny ? ocl_gemm_mv(d, q, args) : BP_ERR_UNSUPPORTED;
  if (st != BP_ERR_UNSUPPORTED) {
    /* ran (or failed) on the matrix-vector path */
  } else if (skinny) {
    st = gemm_skinny(d, q, args, skinny);
  } else if (m * n * k <= GEMM_DIRECT_MAX_FLOPS || m < 8 || n < 8) {
    st = gemm_direct(d, q, args);
  } else {
    const ocl_gemm_cfg_t *cfg = NULL;
    st = ocl_gemm_config(d, C->dtype, &cfg);
    if (st == BP_OK) st = ocl_gemm_tiled(d, q, cfg, args);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

bp_status_t ocl_op_gemv(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_gemv_args_t *g) {
  ocl_device_t *d = (ocl_device_t *)device;
  const bp_plugin_tensor_t *A = &g->a, *x = &g->x, *y = &g->y;
  if (y->shape[0] == 0) return BP_OK;
  char opts[64];
  ocl_dtype_options(d, y->dtype, opts, sizeof opts);
  pthread_mutex_lock(&d->lock);
  ocl_args_t a = {0};
  bp_status_t st = ocl_gemv_mv(d, ocl_queue(d, stream), g);
  if (st == BP_ERR_UNSUPPORTED) st = ocl_kernel_get(d, OCL_FAM_GEMM, opts, "gemv", &a.k);
  else a.k = NULL; /* ran (or failed) on the matrix-vector path */
  if (st == BP_OK && a.k) {
    cl_long v[6] = {A->shape[0],   A->shape[1],   A->strides[0],
                    A->strides[1], x->strides[0], y->strides[0]};
    ocl_arg_buf(&a, A->ptr, A->offset);
    ocl_arg_buf(&a, x->ptr, x->offset);
    ocl_arg_buf(&a, y->ptr, y->offset);
    for (int i = 0; i < 6; i++) OCL_ARG(&a, v[i]);
    ocl_arg_scalar(&a, y->dtype, g->alpha);
    ocl_arg_scalar(&a, y->dtype, g->beta);
    size_t lws = 64, gws = (size_t)A->shape[0] * 64;
    st = ocl_enqueue(ocl_queue(d, stream), &a, 1, &gws, &lws);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}
