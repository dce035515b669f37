/*
 * fast/conv/conv2d_relayout.c — conv2d over tensors whose planes are not
 * dense: a channels-last (NHWC) x or y seen through bp_tensor_permute, or
 * a y with gaps between rows. The routes of conv2d.c read x's rows and
 * write y's planes in NCHW order; rather than sending such calls to the
 * scalar reference, x is copied into a dense NCHW buffer when its rows
 * are not unit-strided, the call runs into a dense y, and that y is
 * copied into the caller's layout, each copy blocked through L1
 * (fast/elementwise/transpose.c) where the layouts cross. Nothing is
 * written to y when the dense call declines.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/conv/conv2d.h"
#include "plugins/cpu/fast/gemm/gemm_epilogue.h"
#include "plugins/cpu/tensor.h"

/* t's dims reordered by perm (dim d of the result is t's dim perm[d]). */
static bp_plugin_tensor_t permuted(const bp_plugin_tensor_t *t, const int32_t perm[4]) {
  bp_plugin_tensor_t p = *t;
  for (int d = 0; d < 4; d++) p.shape[d] = t->shape[perm[d]], p.strides[d] = t->strides[perm[d]];
  return p;
}

/* The NCHW-dense view of t's shape over buf. */
static bp_plugin_tensor_t dense_like(const bp_plugin_tensor_t *t, void *buf) {
  bp_plugin_tensor_t d = *t;
  d.ptr = (uint64_t)(uintptr_t)buf;
  d.offset = 0;
  d.strides[3] = 1;
  for (int k = 2; k >= 0; k--) d.strides[k] = d.strides[k + 1] * d.shape[k + 1];
  return d;
}

/* Rows along the last dim, unit-strided on both sides: one memcpy each. */
static void copy_rows(const bp_plugin_tensor_t *dst, const bp_plugin_tensor_t *src) {
  size_t es = cpu_dtype_size(dst->dtype), row = (size_t)dst->shape[3] * es;
  char *pd = cpu_tensor_base(dst);
  const char *ps = cpu_tensor_base(src);
  for (int64_t n = 0; n < dst->shape[0]; n++)
    for (int64_t c = 0; c < dst->shape[1]; c++)
      for (int64_t h = 0; h < dst->shape[2]; h++)
        memcpy(pd + (n * dst->strides[0] + c * dst->strides[1] + h * dst->strides[2]) * (int64_t)es,
               ps + (n * src->strides[0] + c * src->strides[1] + h * src->strides[2]) * (int64_t)es,
               row);
}

/* Element by element through double (f32 and bf16 convert exactly that
 * way), for layouts the blocked copies do not take. */
void cpu_fast_conv_copy_elements(const bp_plugin_tensor_t *dst, const bp_plugin_tensor_t *src) {
  void *pd = cpu_tensor_base(dst);
  const void *ps = cpu_tensor_base(src);
  const int64_t *n = dst->shape, *sd = dst->strides, *ss = src->strides;
  for (int64_t i = 0; i < n[0]; i++)
    for (int64_t j = 0; j < n[1]; j++)
      for (int64_t k = 0; k < n[2]; k++)
        for (int64_t l = 0; l < n[3]; l++)
          cpu_store(pd, dst->dtype, i * sd[0] + j * sd[1] + k * sd[2] + l * sd[3],
                    cpu_load(ps, src->dtype, i * ss[0] + j * ss[1] + k * ss[2] + l * ss[3]));
}

/* dst = src (same shape and dtype, 4-D). The dims go in the order of
 * dst's strides, largest first, so dst's unit stride is last: then whole
 * rows when src's is unit too, else the blocked transposing copy. */
static void copy_view(cpu_device_t *dev, const bp_plugin_tensor_t *dst,
                      const bp_plugin_tensor_t *src) {
  int32_t perm[4] = {0, 1, 2, 3};
  for (int i = 1; i < 4; i++) /* insertion sort: stable for equal strides */
    for (int k = i; k > 0 && dst->strides[perm[k - 1]] < dst->strides[perm[k]]; k--) {
      int32_t t = perm[k];
      perm[k] = perm[k - 1], perm[k - 1] = t;
    }
  bp_copy_args_t c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.x = permuted(src, perm);
  c.y = permuted(dst, perm);
  if (c.y.strides[3] == 1 && (c.x.strides[3] == 1 || c.y.shape[3] == 1))
    copy_rows(&c.y, &c.x);
  else if (!cpu_fast_copy_transposed(dev, &c))
    cpu_fast_conv_copy_elements(&c.y, &c.x);
}

/* Whether t's planes are what the routes read: unit-strided rows, one
 * after the other. */
static bool dense_planes(const bp_plugin_tensor_t *t) {
  return t->strides[3] == 1 && (t->shape[2] <= 1 || t->strides[2] == t->shape[3]);
}

bool cpu_fast_conv2d_needs_relayout(const bp_conv2d_args_t *a) { return !dense_planes(&a->y); }

/* Whether t's pixels (n, h, w) lie one stride apart, as rows of a matrix. */
static bool pixels_uniform(const bp_plugin_tensor_t *t) {
  return (t->shape[2] <= 1 || t->strides[2] == t->shape[3] * t->strides[3]) &&
         (t->shape[0] <= 1 || t->strides[0] == t->shape[2] * t->strides[2]);
}

/* A 1x1, stride-1, unpadded, ungrouped conv2d over channels-last x and y
 * is one GEMM as the tensors lie: Y[pixel][k] = X[pixel][c] · W[k][c]ᵀ,
 * the bias as the GEMM's epilogue (in y's dtype: f32 widened, bf16 only
 * when given in bf16, so it is not rounded twice). BP_ERR_UNIMPLEMENTED
 * when the layer or the layouts are not that, or the GEMM declines. */
static bp_status_t gemm_1x1(cpu_device_t *dev, const bp_conv2d_args_t *a, const float *bias) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  bool unit = w->shape[2] == 1 && w->shape[3] == 1 && a->stride_h == 1 && a->stride_w == 1 &&
              a->pad_h == 0 && a->pad_w == 0 && a->groups == 1;
  bool bias_ok = !bias || y->dtype == BP_F32 || a->bias.dtype == y->dtype;
  if (!unit || !bias_ok || !pixels_uniform(x) || !pixels_uniform(y) || x->strides[3] == 1)
    return BP_ERR_UNIMPLEMENTED;
  int64_t M = x->shape[0] * x->shape[2] * x->shape[3], C = x->shape[1], K = y->shape[1];
  bp_gemm_args_t g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.alpha = 1.0;
  g.a = (bp_plugin_tensor_t){x->ptr, x->offset, x->dtype, 3, {1, M, C}, {0, x->strides[3], x->strides[1]}};
  g.b = (bp_plugin_tensor_t){w->ptr, w->offset, w->dtype, 3, {1, C, K}, {0, w->strides[1], w->strides[0]}};
  g.c = (bp_plugin_tensor_t){y->ptr, y->offset, y->dtype, 3, {1, M, K}, {0, y->strides[3], y->strides[1]}};
  if (bias && y->dtype == BP_F32)
    g.bias = (bp_plugin_tensor_t){(uint64_t)(uintptr_t)bias, 0, BP_F32, 3, {1, M, K}, {0, 0, 1}};
  else if (bias)
    g.bias = (bp_plugin_tensor_t){a->bias.ptr, a->bias.offset, a->bias.dtype, 3, {1, M, K},
                                  {0, 0, a->bias.strides[0]}};
  return cpu_fast_gemm(dev, &g);
}

bp_status_t cpu_fast_conv2d_relayout(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                     const float *bias) {
  bp_status_t direct = gemm_1x1(dev, a, bias);
  if (direct != BP_ERR_UNIMPLEMENTED) return direct;
  size_t es = cpu_dtype_size(a->y.dtype);
  bool copy_x = a->x.strides[3] != 1;
  int64_t nx = copy_x ? cpu_numel(&a->x) : 0, ny = cpu_numel(&a->y);
  char *buf = malloc((size_t)(nx + ny) * es);
  if (!buf) return BP_ERR_UNIMPLEMENTED;
  bp_conv2d_args_t d = *a;
  d.x = copy_x ? dense_like(&a->x, buf) : a->x;
  d.y = dense_like(&a->y, buf + nx * (int64_t)es);
  if (copy_x) copy_view(dev, &d.x, &a->x);
  /* into the dense y first, so a decline leaves the caller's y untouched */
  bp_status_t st = cpu_fast_conv2d(dev, &d);
  if (st == BP_OK) copy_view(dev, &a->y, &d.y);
  free(buf);
  return st;
}
