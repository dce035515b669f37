/*
 * ops_conv_gemm.c — conv2d on the device's tuned tiled GEMM
 * (kernels/opencl/conv.cl: conv_packw, conv_im2col; gemm.cl: gemm_tiled,
 * whose epilogue adds the bias). The filters of one group are packed once
 * per call. A 1x1 stride-1 layer is a plain GEMM whose B is x where it
 * lies (conv_direct); other layers go through im2col panels of a few
 * images at a time in one scratch buffer. Small or depthwise-like
 * convolutions (a handful of filters per group) keep the direct kernel
 * (ops_dnn.c), where a GEMM tile would be mostly padding.
 */
#include "ocl.h"

/* Filters per group below which a GEMM tile row would be mostly padding. */
#define CONV_GEMM_MIN_FILTERS 8
/* Multiply-adds per image and group below which packing costs more. */
#define CONV_GEMM_MIN_MACS (32ll * 32 * 32)
/* The im2col scratch holds as many images as fit in this many bytes. */
#define CONV_SCRATCH_BYTES (64ll << 20)

typedef struct conv_geom {
  int64_t n, groups, cg, kpg, npix, red, q_out;
  int64_t mp, np, kp;
} conv_geom_t;

static int64_t round_up64(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

static bp_status_t pack_filters(ocl_device_t *d, cl_command_queue q, const char *opts,
                                const bp_conv2d_args_t *args, const conv_geom_t *g, int64_t group,
                                cl_mem dst, int64_t pwid) {
  const bp_plugin_tensor_t *w = &args->w;
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_CONV, opts, "conv_packw", &a.k);
  if (st != BP_OK) return st;
  cl_int r = (cl_int)w->shape[2], s = (cl_int)w->shape[3];
  cl_long v[5] = {g->kpg, g->red, g->kp, g->mp, pwid};
  ocl_arg_buf(&a, w->ptr,
              w->offset + (uint64_t)(group * g->kpg * w->strides[0]) * ocl_dtype_size(w->dtype));
  ocl_arg_strides4(&a, w);
  OCL_ARG(&a, r);
  OCL_ARG(&a, s);
  OCL_ARG(&a, v[0]);
  OCL_ARG(&a, v[1]);
  OCL_ARG(&a, dst);
  for (int i = 2; i < 5; i++) OCL_ARG(&a, v[i]);
  /* an item per panel row (conv.cl) */
  size_t lws[2] = {64, 1};
  size_t gws[2] = {ocl_round_up((size_t)g->kp, 64), (size_t)(g->mp / pwid)};
  return ocl_enqueue(q, &a, 2, gws, lws);
}

static bp_status_t im2col(ocl_device_t *d, cl_command_queue q, const char *opts,
                          const bp_conv2d_args_t *args, const conv_geom_t *g, int64_t n0,
                          int64_t nb, int64_t group, cl_mem dst, int64_t pwid) {
  const bp_plugin_tensor_t *x = &args->x;
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_CONV, opts, "conv_im2col", &a.k);
  if (st != BP_OK) return st;
  int64_t off = n0 * x->strides[0] + group * g->cg * x->strides[1];
  cl_int iv[12] = {(cl_int)x->shape[2],      (cl_int)x->shape[3], (cl_int)args->w.shape[2],
                   (cl_int)args->w.shape[3], (cl_int)g->q_out,    args->stride_h,
                   args->stride_w,           args->pad_h,         args->pad_w,
                   args->dilation_h,         args->dilation_w,    0};
  cl_long lv[5] = {g->npix, g->red, g->kp, g->np, pwid};
  ocl_arg_buf(&a, x->ptr, x->offset + (uint64_t)off * ocl_dtype_size(x->dtype));
  ocl_arg_strides4(&a, x);
  for (int i = 0; i < 5; i++) OCL_ARG(&a, iv[i]);
  OCL_ARG(&a, lv[0]);
  OCL_ARG(&a, lv[1]);
  for (int i = 5; i < 11; i++) OCL_ARG(&a, iv[i]);
  OCL_ARG(&a, dst);
  for (int i = 2; i < 5; i++) OCL_ARG(&a, lv[i]);
  /* an item per panel row (conv.cl) */
  size_t lws[3] = {64, 1, 1};
  size_t gws[3] = {ocl_round_up((size_t)g->kp, 64), (size_t)(g->np / pwid), (size_t)nb};
  return ocl_enqueue(q, &a, 3, gws, lws);
}

/* The multiply of one group over images [n0, n0 + nb): C = y's rows of the
 * group's filters, columns = pixels (y's pixel axes collapse to one). */
static bp_status_t group_gemm(ocl_device_t *d, cl_command_queue q, const ocl_gemm_cfg_t *cfg,
                              const bp_conv2d_args_t *args, const conv_geom_t *g, int64_t group,
                              int64_t n0, int64_t nb, cl_mem pa, cl_mem pb) {
  const bp_plugin_tensor_t *y = &args->y, *x = &args->x;
  ocl_tiled_run_t r = {.pa = pa,
                       .pb = pb,
                       .mp = g->mp,
                       .np = g->np,
                       .kp = g->kp,
                       .sab = 0,
                       .sbb = g->kp * g->np,
                       .m = g->kpg,
                       .n = g->npix,
                       .batch = nb,
                       .c = y,
                       .c_off = n0 * y->strides[0] + group * g->kpg * y->strides[1],
                       .csb = y->strides[0],
                       .csm = y->strides[1],
                       .csn = y->strides[3],
                       .nb1 = 1,
                       .alpha = 1.0,
                       .beta = 0.0};
  if (!pb) { /* x is B where it lies (conv_direct) */
    r.pb = ocl_mem(x->ptr);
    r.ldb = x->strides[1];
    r.sbb = x->strides[0];
    r.bofs = (int64_t)(x->offset / ocl_dtype_size(x->dtype)) + n0 * x->strides[0] +
             group * g->cg * x->strides[1];
  }
  /* the bias, one value per filter (a row of C), added in the store */
  bp_plugin_tensor_t bias = args->bias;
  if (bias.rank > 0) {
    int64_t bst = args->bias.strides[0];
    bias.offset += (uint64_t)(group * g->kpg * bst) * ocl_dtype_size(bias.dtype);
    bias.strides[0] = 0, bias.strides[1] = bst, bias.strides[2] = 0;
    r.bias = &bias;
  }
  return ocl_gemm_run(d, q, cfg, &r);
}

static bool conv_geom(const bp_conv2d_args_t *args, conv_geom_t *g) {
  const bp_plugin_tensor_t *x = &args->x, *w = &args->w, *y = &args->y;
  g->n = y->shape[0];
  g->groups = args->groups > 0 ? args->groups : 1;
  g->cg = x->shape[1] / g->groups;
  g->kpg = w->shape[0] / g->groups;
  g->npix = y->shape[2] * y->shape[3];
  g->red = g->cg * w->shape[2] * w->shape[3];
  g->q_out = y->shape[3];
  /* y's pixel axes must collapse to one stride for gemm_tiled's C. */
  bool flat = y->shape[2] == 1 || y->strides[2] == y->shape[3] * y->strides[3];
  return flat && g->kpg >= CONV_GEMM_MIN_FILTERS && g->kpg * g->npix * g->red >= CONV_GEMM_MIN_MACS;
}

/* A 1x1, stride-1, unpadded convolution is the plain GEMM W [K/g x C/g] x
 * x[n] [C/g x H W]: with rows of contiguous pixels, gemm_tiled reads x as
 * its B where it lies (no im2col, no packing; bf16 widened to f32 as each
 * vector is loaded), given at least a tile of pixels and a reduction
 * that needs no k padding. */
static bool conv_direct(const bp_conv2d_args_t *args, const conv_geom_t *g,
                        const ocl_gemm_cfg_t *cfg) {
  const bp_plugin_tensor_t *x = &args->x, *w = &args->w;
  bool one = w->shape[2] == 1 && w->shape[3] == 1 && args->stride_h == 1 && args->stride_w == 1 &&
             args->pad_h == 0 && args->pad_w == 0;
  bool rows = x->strides[3] == 1 && (x->shape[2] == 1 || x->strides[2] == x->shape[3]);
  bool dt = x->dtype == BP_F32 || x->dtype == BP_F64 || x->dtype == BP_BF16;
  return one && rows && dt && x->dtype == args->y.dtype &&
         x->offset % ocl_dtype_size(x->dtype) == 0 && g->npix >= cfg->tile_n &&
         g->red % ocl_gemm_kstep(cfg) == 0;
}

bp_status_t ocl_conv2d_gemm(ocl_device_t *d, cl_command_queue q, const bp_conv2d_args_t *args) {
  conv_geom_t g;
  if (!conv_geom(args, &g)) return BP_ERR_UNSUPPORTED;
  const ocl_gemm_cfg_t *cfg = NULL;
  bp_status_t st = ocl_gemm_config(d, args->y.dtype, &cfg);
  if (st != BP_OK) return st;
  g.mp = round_up64(g.kpg, cfg->tile_m);
  g.np = round_up64(g.npix, cfg->tile_n);
  g.kp = round_up64(g.red, ocl_gemm_kstep(cfg));
  size_t cs = args->y.dtype == BP_F64 ? 8 : 4;
  int64_t per_image = g.kp * g.np * (int64_t)cs;
  bool direct = conv_direct(args, &g, cfg);
  int64_t chunk = direct ? g.n : CONV_SCRATCH_BYTES / per_image;
  chunk = chunk < 1 ? 1 : chunk > g.n ? g.n : chunk;
  char opts[64];
  ocl_dtype_options(d, args->x.dtype, opts, sizeof opts);
  cl_mem pa = ocl_scratch(d, q, (size_t)(g.kp * g.mp) * cs, &st);
  cl_mem pb = pa && !direct ? ocl_scratch(d, q, (size_t)(chunk * per_image), &st) : NULL;
  for (int64_t grp = 0; grp < g.groups && st == BP_OK; grp++) {
    st = pack_filters(d, q, opts, args, &g, grp, pa, cfg->tile_m);
    for (int64_t n0 = 0; n0 < g.n && st == BP_OK; n0 += chunk) {
      int64_t nb = g.n - n0 < chunk ? g.n - n0 : chunk;
      if (!direct) st = im2col(d, q, opts, args, &g, n0, nb, grp, pb, cfg->tile_n);
      if (st == BP_OK) st = group_gemm(d, q, cfg, args, &g, grp, n0, nb, pa, pb);
    }
  }
  /* OpenCL keeps the scratch alive until the queued kernels finish. */
  if (pa) ocl_api.clReleaseMemObject(pa);
  if (pb) ocl_api.clReleaseMemObject(pb);
  return st;
}
