/*
 * plugins/gpu/ops_conv_gemm.c — conv2d of the CUDA and ROCm backends as
 * GEMMs on the plugin's tuned GEMM (gpu_op_gemm: cuBLAS / rocBLAS, or the
 * tensor-core tiles of kernels/cuda/gemm.cu), which the direct kernel
 * (conv.cu's bp_conv2d_f, scalar FMAs on gathered tiles) never gets near.
 *
 * Per group g, with y's (p, q) merged into one axis, w's (c, r, s) into
 * another, and one GEMM batch entry per image:
 *   y[n, g] (Kg x P*Q) = w[g] (Kg x Cg*R*S) · patches[n, g] (Cg*R*S x P*Q)
 * A 1x1, stride-1, unpadded conv needs no patch matrix: x[n, g] (Cg x H*W)
 * is it, so it runs as one batched GEMM and is fine in a graph capture.
 * Otherwise bp_conv2d_im2col writes the patches of a chunk of images into
 * the stream's scratch memory (gpu_stream_workspace): at most
 * BACKPLANE_CUDA_CONV_SCRATCH / BACKPLANE_ROCM_CONV_SCRATCH bytes when set,
 * else CONV_WORKSPACE_CAP, or one image's patches up to
 * CONV_WORKSPACE_IMAGE_MAX when they are more. A bias is written
 * into y first (bp_conv2d_bias_fill) and the GEMMs add onto it (beta 1),
 * so y is rounded once, as in the direct kernel.
 *
 * Not taken (the caller runs bp_conv2d_f): operands of different dtypes,
 * layouts whose axes do not merge, patch matrices during a capture or on
 * the NULL stream, and, unless BACKPLANE_CUDA_CONV / BACKPLANE_ROCM_CONV=1
 * forces it, layers whose GEMMs would be thin (fewer than CONV_GEMM_MIN
 * output channels per group or reduction terms: depthwise and tiny layers,
 * where one direct launch beats a launch per group and image chunk).
 * =0 never takes it.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/gpu/gpu.h"

#define CONV_WORKSPACE_CAP ((uint64_t)512 << 20)
#define CONV_WORKSPACE_IMAGE_MAX ((uint64_t)1 << 30)
#define CONV_GEMM_MIN 16

typedef struct conv_dims {
  int64_t N, G, Cg, Kg, KR, PQ; /* images, groups, per-group channels, reduction, pixels */
  int64_t y_pix, w_red, x_pix;  /* strides of the merged axes */
  bool x_is_patches;            /* 1x1, stride 1, no padding, x's (h, w) merge */
} conv_dims_t;

/* Whether t's axes from..to (shape 1 ones aside) merge into one axis, and
 * its stride then. */
static bool axes_merge(const bp_plugin_tensor_t *t, int from, int to, int64_t *stride) {
  int64_t inner = 1, extent = 0;
  for (int i = to; i >= from; i--) {
    if (t->shape[i] == 1) continue;
    if (extent == 0)
      inner = t->strides[i], extent = 1;
    else if (t->strides[i] != extent * inner)
      return false;
    extent *= t->shape[i];
  }
  *stride = inner;
  return true;
}

static bool same_float_dtype(const bp_conv2d_args_t *a) {
  const bp_dtype_t dt = a->y.dtype;
  if (dt != BP_F32 && dt != BP_F16 && dt != BP_BF16 && dt != BP_F64) return false;
  return a->x.dtype == dt && a->w.dtype == dt && (!a->bias.rank || a->bias.dtype == dt);
}

/* The layer's GEMM dimensions; false when its views do not merge. */
static bool conv_dims_of(const bp_conv2d_args_t *a, conv_dims_t *d) {
  memset(d, 0, sizeof *d);
  d->N = a->y.shape[0];
  d->G = a->groups > 0 ? a->groups : 1;
  d->Cg = a->w.shape[1];
  d->Kg = a->y.shape[1] / d->G;
  d->KR = d->Cg * a->w.shape[2] * a->w.shape[3];
  d->PQ = a->y.shape[2] * a->y.shape[3];
  if (!axes_merge(&a->y, 2, 3, &d->y_pix) || !axes_merge(&a->w, 1, 3, &d->w_red)) return false;
  const bool unit = a->w.shape[2] == 1 && a->w.shape[3] == 1 && a->pad_h == 0 && a->pad_w == 0 &&
                    (a->stride_h <= 1 || a->y.shape[2] == 1) &&
                    (a->stride_w <= 1 || a->y.shape[3] == 1);
  d->x_is_patches = unit && a->x.shape[2] == a->y.shape[2] && a->x.shape[3] == a->y.shape[3] &&
                    axes_merge(&a->x, 2, 3, &d->x_pix);
  return true;
}

/* How many images' patches one scratch buffer holds; 0: not even one. */
static int64_t images_per_chunk(uint64_t per_image, int64_t n) {
  const char *v = gpu_env(GPU_CONV_SCRATCH_ENV);
  char *end = NULL;
  uint64_t cap = v ? (uint64_t)strtoull(v, &end, 10) : 0;
  if (!v || *end) /* unset or not a byte count: the default */
    cap = per_image <= CONV_WORKSPACE_CAP         ? CONV_WORKSPACE_CAP
          : per_image <= CONV_WORKSPACE_IMAGE_MAX ? per_image
                                                  : 0;
  const uint64_t fit = cap / per_image;
  return fit < (uint64_t)n ? (int64_t)fit : n;
}

static int conv_choice(void) {
  const char *v = gpu_env(GPU_CONV_CHOICE_ENV);
  return !v ? -1 : strcmp(v, "0") == 0 ? 0 : strcmp(v, "1") == 0 ? 1 : -1;
}

/* A rank-3 view [batch, rows, cols] of buffer ptr at byte offset off. */
static bp_plugin_tensor_t view3(uint64_t ptr, uint64_t off, bp_dtype_t dt, const int64_t shape[3],
                                const int64_t strides[3]) {
  bp_plugin_tensor_t t;
  memset(&t, 0, sizeof t);
  t.ptr = ptr, t.offset = off, t.dtype = dt, t.rank = 3;
  memcpy(t.shape, shape, 3 * sizeof *shape);
  memcpy(t.strides, strides, 3 * sizeof *strides);
  return t;
}

/* y[n0 .. n0+nb, group g] = w[g] · patches, the patches in b. */
static bp_status_t conv_gemm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                             const bp_conv2d_args_t *a, const conv_dims_t *d, int64_t n0,
                             int64_t nb, int64_t g, const bp_plugin_tensor_t *b) {
  const uint64_t es = (uint64_t)bp_gpu_dtype_size(a->y.dtype);
  const int64_t *ws = a->w.strides, *ys = a->y.strides;
  bp_gemm_args_t gm;
  memset(&gm, 0, sizeof gm);
  gm.struct_size = sizeof gm;
  gm.alpha = 1;
  gm.beta = a->bias.rank ? 1 : 0;
  const int64_t a_shape[3] = {nb, d->Kg, d->KR}, a_strides[3] = {0, ws[0], d->w_red};
  gm.a = view3(a->w.ptr, a->w.offset + (uint64_t)(g * d->Kg * ws[0]) * es, a->w.dtype, a_shape,
               a_strides);
  gm.b = *b;
  const int64_t c_shape[3] = {nb, d->Kg, d->PQ}, c_strides[3] = {ys[0], ys[1], d->y_pix};
  gm.c = view3(a->y.ptr, a->y.offset + (uint64_t)(n0 * ys[0] + g * d->Kg * ys[1]) * es,
               a->y.dtype, c_shape, c_strides);
  return gpu_op_gemm(device, stream, &gm);
}

static bp_status_t conv_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                               const char *name, int64_t pixels, int64_t jobs, void *params) {
  unsigned grid[3] = {(unsigned)((pixels + BPK_IM2COL_THREADS - 1) / BPK_IM2COL_THREADS),
                      (unsigned)(jobs < 65535 ? (jobs > 0 ? jobs : 1) : 65535), 1};
  unsigned block[3] = {BPK_IM2COL_THREADS, 1, 1};
  return gpu_launch(gpu_dev(device), stream, BP_GPU_MOD_CONV, name, grid, block, 0, params);
}

/* The patches of images n0 .. n0+nb of group g into work, then their GEMM. */
static bp_status_t conv_chunk(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                              const bp_conv2d_args_t *a, const conv_dims_t *d, int64_t n0,
                              int64_t nb, int64_t g, uint64_t work) {
  const uint64_t es = (uint64_t)bp_gpu_dtype_size(a->x.dtype);
  const int64_t *xs = a->x.strides;
  if (d->x_is_patches) {
    const int64_t shape[3] = {nb, d->Cg, d->PQ}, strides[3] = {xs[0], xs[1], d->x_pix};
    bp_plugin_tensor_t b = view3(a->x.ptr, a->x.offset + (uint64_t)(n0 * xs[0] + g * d->Cg * xs[1]) * es,
                                 a->x.dtype, shape, strides);
    return conv_gemm(device, stream, a, d, n0, nb, g, &b);
  }
  bpk_conv2d_im2col_args_t p;
  memset(&p, 0, sizeof p);
  bp_gpu_conv2d_args(a, &p.conv);
  p.col = work, p.n0 = n0, p.nb = nb, p.g = g;
  const int64_t chunks = (d->KR + BPK_IM2COL_ROWS - 1) / BPK_IM2COL_ROWS;
  bp_status_t st = conv_launch(device, stream, "bp_conv2d_im2col", d->PQ, nb * chunks, &p);
  if (st != BP_OK) return st;
  const int64_t shape[3] = {nb, d->KR, d->PQ}, strides[3] = {d->KR * d->PQ, d->PQ, 1};
  bp_plugin_tensor_t b = view3(work, 0, a->x.dtype, shape, strides);
  return conv_gemm(device, stream, a, d, n0, nb, g, &b);
}

bp_status_t gpu_conv2d_as_gemm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                               const bp_conv2d_args_t *a, bool *taken) {
  *taken = false;
  conv_dims_t d;
  const int choice = conv_choice();
  if (choice == 0 || !same_float_dtype(a) || !conv_dims_of(a, &d)) return BP_OK;
  if (d.N == 0 || d.Kg == 0 || d.KR == 0 || d.PQ == 0) return BP_OK; /* nothing to multiply */
  if (choice < 0 && (d.Kg < CONV_GEMM_MIN || d.KR < CONV_GEMM_MIN)) return BP_OK;
  /* The patch kernel indexes one image's patches with int. */
  if (d.KR * d.PQ > 0x7fffffffLL) return BP_OK;
  const uint64_t per_image = (uint64_t)(d.KR * d.PQ) * (uint64_t)bp_gpu_dtype_size(a->x.dtype);
  int64_t nb = d.N;
  uint64_t work = 0;
  if (!d.x_is_patches) {
    nb = images_per_chunk(per_image, d.N);
    if (nb == 0 || gpu_stream_workspace(device, stream, (uint64_t)nb * per_image, &work) != BP_OK)
      return BP_OK;
  }
  *taken = true;
  bp_status_t st = BP_OK;
  if (a->bias.rank) {
    bpk_conv2d_args_t p;
    bp_gpu_conv2d_args(a, &p);
    const int64_t rows = d.N * a->y.shape[1];
    st = conv_launch(device, stream, "bp_conv2d_bias_fill", d.PQ,
                     (rows + BPK_IM2COL_ROWS - 1) / BPK_IM2COL_ROWS, &p);
  }
  for (int64_t n0 = 0; st == BP_OK && n0 < d.N; n0 += nb)
    for (int64_t g = 0; st == BP_OK && g < d.G; g++)
      st = conv_chunk(device, stream, a, &d, n0, d.N - n0 < nb ? d.N - n0 : nb, g, work);
  gpu_log(BP_LOG_DEBUG, "conv2d as GEMMs: %lld image(s) x %lld group(s), %s, status %d",
          (long long)d.N, (long long)d.G, d.x_is_patches ? "x as the patches" : "im2col",
          (int)st);
  return st;
}
