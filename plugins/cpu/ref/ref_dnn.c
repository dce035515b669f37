/*
 * ref/ref_dnn.c — scalar reference for the DNN family: conv2d, pool2d,
 * batch norm, layer norm, RMS norm, softmax / log-softmax and the fused
 * Adam step. (Attention lives in ref/ref_attention.c.)
 *
 * Everything computes in double from cpu_load and rounds once on store.
 * Tasks are output elements or output rows, so ranges never share writes.
 */
#include <math.h>
#include <stdlib.h>

#include "ref.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

/* Unravels a row-major linear index over a 4-d shape. */
static void unravel4(int64_t lin, const int64_t *shape, int64_t out[4]) {
  for (int d = 3; d >= 0; d--) {
    out[d] = lin % shape[d];
    lin /= shape[d];
  }
}

static int64_t off4(const bp_plugin_tensor_t *t, int64_t i0, int64_t i1,
                    int64_t i2, int64_t i3) {
  return i0 * t->strides[0] + i1 * t->strides[1] + i2 * t->strides[2] +
         i3 * t->strides[3];
}

/* ---- conv2d: one task per output element of y [N, K, P, Q] --------------*/

/* The core validates shapes; these guards only keep a malformed call from
 * dividing by zero or indexing outside the shape arrays. */
int64_t cpu_ref_conv2d_tasks(const bp_conv2d_args_t *a) {
  if (a->x.rank != 4 || a->w.rank != 4 || a->y.rank != 4 || a->groups <= 0 ||
      a->y.shape[1] % a->groups != 0)
    return BP_ERR_INVALID_ARGUMENT;
  return cpu_numel(&a->y);
}

int64_t cpu_ref_conv2d_grain(const bp_conv2d_args_t *a) {
  return cpu_ref_grain_for(a->w.shape[1] * a->w.shape[2] * a->w.shape[3]);
}

static double conv_point(const bp_conv2d_args_t *a, const int64_t o[4]) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w;
  const void *px = cpu_tensor_base(x), *pw = cpu_tensor_base(w);
  int64_t H = x->shape[2], W = x->shape[3];
  int64_t cg = w->shape[1], R = w->shape[2], S = w->shape[3];
  int64_t kg = a->y.shape[1] / a->groups; /* output channels per group */
  int64_t c0 = (o[1] / kg) * cg;
  double acc = 0.0;
  for (int64_t c = 0; c < cg; c++)
    for (int64_t r = 0; r < R; r++) {
      int64_t h = o[2] * a->stride_h - a->pad_h + r * a->dilation_h;
      if (h < 0 || h >= H)
        continue; /* zero padding */
      for (int64_t s = 0; s < S; s++) {
        int64_t ww = o[3] * a->stride_w - a->pad_w + s * a->dilation_w;
        if (ww < 0 || ww >= W)
          continue;
        acc += cpu_load(px, x->dtype, off4(x, o[0], c0 + c, h, ww)) *
               cpu_load(pw, w->dtype, off4(w, o[1], c, r, s));
      }
    }
  if (!cpu_tensor_absent(&a->bias))
    acc += cpu_load(cpu_tensor_base(&a->bias), a->bias.dtype,
                    o[1] * a->bias.strides[0]);
  return acc;
}

bp_status_t cpu_ref_conv2d_range(const bp_conv2d_args_t *a, int64_t begin,
                                 int64_t end) {
  const bp_plugin_tensor_t *y = &a->y;
  void *py = cpu_tensor_base(y);
  for (int64_t t = begin; t < end; t++) {
    int64_t o[4];
    unravel4(t, y->shape, o);
    cpu_store(py, y->dtype, off4(y, o[0], o[1], o[2], o[3]), conv_point(a, o));
  }
  return BP_OK;
}

/* ---- pool2d: one task per output element of y [N, C, P, Q] --------------*/

int64_t cpu_ref_pool2d_tasks(const bp_pool2d_args_t *a) {
  if (a->x.rank != 4 || a->y.rank != 4 ||
      (a->kind != BP_POOL_MAX && a->kind != BP_POOL_AVG))
    return BP_ERR_INVALID_ARGUMENT;
  return cpu_numel(&a->y);
}

int64_t cpu_ref_pool2d_grain(const bp_pool2d_args_t *a) {
  return cpu_ref_grain_for((int64_t)a->kernel_h * a->kernel_w);
}

/* Max over the window (padding is -inf; NaN propagates, as in PyTorch) or
 * the average (PyTorch's divisor: the window clipped to the padded input
 * when count_include_pad, else the number of real input cells). */
static double pool_point(const bp_pool2d_args_t *a, const int64_t o[4]) {
  const bp_plugin_tensor_t *x = &a->x;
  const void *px = cpu_tensor_base(x);
  int64_t H = x->shape[2], W = x->shape[3];
  int64_t h0 = o[2] * a->stride_h - a->pad_h;
  int64_t w0 = o[3] * a->stride_w - a->pad_w;
  int64_t h1 = h0 + a->kernel_h, w1 = w0 + a->kernel_w;
  double best = -INFINITY, sum = 0.0;
  int64_t valid = 0;
  for (int64_t h = h0 < 0 ? 0 : h0; h < h1 && h < H; h++)
    for (int64_t w = w0 < 0 ? 0 : w0; w < w1 && w < W; w++) {
      double v = cpu_load(px, x->dtype, off4(x, o[0], o[1], h, w));
      if (v > best || v != v)
        best = best != best ? best : v; /* keep the first NaN */
      sum += v;
      valid++;
    }
  if (a->kind == BP_POOL_MAX)
    return best;
  int64_t divisor = valid;
  if (a->count_include_pad) {
    int64_t he = h1 < H + a->pad_h ? h1 : H + a->pad_h;
    int64_t we = w1 < W + a->pad_w ? w1 : W + a->pad_w;
    divisor = (he - h0) * (we - w0);
  }
  return divisor > 0 ? sum / (double)divisor : 0.0;
}

bp_status_t cpu_ref_pool2d_range(const bp_pool2d_args_t *a, int64_t begin,
                                 int64_t end) {
  const bp_plugin_tensor_t *y = &a->y;
  void *py = cpu_tensor_base(y);
  for (int64_t t = begin; t < end; t++) {
    int64_t o[4];
    unravel4(t, y->shape, o);
    cpu_store(py, y->dtype, off4(y, o[0], o[1], o[2], o[3]), pool_point(a, o));
  }
  return BP_OK;
}

/* ---- batch norm: one task per element; the channel is coordinate 1 ------*/

int64_t cpu_ref_batch_norm_tasks(const bp_batch_norm_args_t *a) {
  if (a->x.rank < 2)
    return BP_ERR_INVALID_ARGUMENT;
  return cpu_numel(&a->x);
}

int64_t cpu_ref_batch_norm_grain(const bp_batch_norm_args_t *a) {
  (void)a;
  return CPU_REF_ELEMENT_GRAIN;
}

static double load_channel(const bp_plugin_tensor_t *t, int64_t c) {
  return cpu_load(cpu_tensor_base(t), t->dtype, c * t->strides[0]);
}

bp_status_t cpu_ref_batch_norm_range(const bp_batch_norm_args_t *a,
                                     int64_t begin, int64_t end) {
  const bp_plugin_tensor_t *ts[2] = {&a->x, &a->y};
  const void *px = cpu_tensor_base(&a->x);
  void *py = cpu_tensor_base(&a->y);
  cpu_iter_t it;
  cpu_iter_init(&it, a->x.rank, a->x.shape, 2, ts, begin);
  for (int64_t t = begin; t < end; t++, cpu_iter_next(&it)) {
    int64_t c = it.idx[1];
    double v = cpu_load(px, a->x.dtype, it.off[0]);
    double inv = 1.0 / sqrt(load_channel(&a->var, c) + a->eps);
    v = (v - load_channel(&a->mean, c)) * inv * load_channel(&a->scale, c) +
        load_channel(&a->bias, c);
    cpu_store(py, a->y.dtype, it.off[1], v);
  }
  return BP_OK;
}

/* ---- row helpers: rows of x are the lines along one axis ----------------*/

/* Offset of line `line` of t when lines run along `axis`: the linear index
 * enumerates the shape with that axis collapsed to 1. */
static int64_t line_offset(const bp_plugin_tensor_t *t, int32_t axis,
                           int64_t line) {
  int64_t shape[BP_MAX_RANK];
  for (int32_t d = 0; d < t->rank; d++)
    shape[d] = d == axis ? 1 : t->shape[d];
  return cpu_offset_of(t, shape, t->rank, line);
}

static int64_t line_count(const bp_plugin_tensor_t *t, int32_t axis) {
  if (axis < 0 || axis >= t->rank)
    return BP_ERR_INVALID_ARGUMENT;
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; d++)
    n *= d == axis ? 1 : t->shape[d];
  return t->shape[axis] == 0 ? 0 : n;
}

/* ---- layer norm / RMS norm: one task per row over the last axis ---------*/

int64_t cpu_ref_layer_norm_tasks(const bp_norm_args_t *a) {
  return line_count(&a->x, a->x.rank - 1);
}
int64_t cpu_ref_rms_norm_tasks(const bp_norm_args_t *a) {
  return line_count(&a->x, a->x.rank - 1);
}
int64_t cpu_ref_layer_norm_grain(const bp_norm_args_t *a) {
  return cpu_ref_grain_for(4 * a->x.shape[a->x.rank - 1]);
}
int64_t cpu_ref_rms_norm_grain(const bp_norm_args_t *a) {
  return cpu_ref_grain_for(3 * a->x.shape[a->x.rank - 1]);
}

static double opt_param(const bp_plugin_tensor_t *t, int64_t j, double dflt) {
  if (cpu_tensor_absent(t))
    return dflt;
  return cpu_load(cpu_tensor_base(t), t->dtype, j * t->strides[0]);
}

/* rms != 0: y = x / sqrt(mean(x^2) + eps) * gamma; else layer norm with
 * population variance, both two-pass in double. The row is scaled by 2^-k,
 * 2^k its largest magnitude's power of two (exact), so that neither the
 * squares nor the sums overflow or underflow (f64 rows past 1e154 or under
 * 1e-154): y = (x' - m) / sqrt(v + eps 2^-2k) with m, v the mean and
 * variance of x' = x 2^-k. When eps 2^-2k is past double's range the
 * variance is nothing beside it, and y = (x' - m) 2^k / sqrt(eps). */
static void norm_row(const bp_norm_args_t *a, int64_t row, int rms) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y;
  int32_t last = x->rank - 1;
  int64_t n = x->shape[last], sx = x->strides[last], sy = y->strides[last];
  const void *px = cpu_tensor_base(x);
  void *py = cpu_tensor_base(y);
  int64_t ox = line_offset(x, last, row), oy = line_offset(y, last, row);
  double amax = 0.0, mean = 0.0, var = 0.0;
  for (int64_t j = 0; j < n; j++)
    amax = fmax(amax, fabs(cpu_load(px, x->dtype, ox + j * sx)));
  /* 0, inf or NaN rows unscaled: their answer (NaN, or 0 / 0) stays */
  int k = amax > 0.0 && isfinite(amax) ? ilogb(amax) : 0;
  if (!rms) {
    for (int64_t j = 0; j < n; j++)
      mean += ldexp(cpu_load(px, x->dtype, ox + j * sx), -k);
    mean /= (double)n;
  }
  for (int64_t j = 0; j < n; j++) {
    double d = ldexp(cpu_load(px, x->dtype, ox + j * sx), -k) - mean;
    var += d * d;
  }
  double e2 = ldexp(a->eps, -2 * k);
  double inv = isinf(e2) ? ldexp(1.0 / sqrt(a->eps), k) : 1.0 / sqrt(var / (double)n + e2);
  for (int64_t j = 0; j < n; j++) {
    double v = (ldexp(cpu_load(px, x->dtype, ox + j * sx), -k) - mean) * inv;
    v = v * opt_param(&a->gamma, j, 1.0);
    if (!rms)
      v += opt_param(&a->beta, j, 0.0);
    cpu_store(py, y->dtype, oy + j * sy, v);
  }
}

bp_status_t cpu_ref_layer_norm_range(const bp_norm_args_t *a, int64_t begin,
                                     int64_t end) {
  for (int64_t r = begin; r < end; r++)
    norm_row(a, r, 0);
  return BP_OK;
}

bp_status_t cpu_ref_rms_norm_range(const bp_norm_args_t *a, int64_t begin,
                                   int64_t end) {
  for (int64_t r = begin; r < end; r++)
    norm_row(a, r, 1);
  return BP_OK;
}

/* ---- softmax / log-softmax: one task per line along axis ----------------*/

int64_t cpu_ref_softmax_tasks(const bp_softmax_args_t *a) {
  return line_count(&a->x, a->axis);
}

int64_t cpu_ref_softmax_grain(const bp_softmax_args_t *a) {
  return cpu_ref_grain_for(8 * a->x.shape[a->axis]);
}

/* Max-subtracted, so large inputs do not overflow. A NaN anywhere makes the
 * max NaN and so the whole line NaN; a line of -inf gives -inf - -inf = NaN,
 * as PyTorch does. */
static void softmax_line(const bp_softmax_args_t *a, int64_t line) {
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y;
  int64_t n = x->shape[a->axis], sx = x->strides[a->axis];
  int64_t sy = y->strides[a->axis];
  const void *px = cpu_tensor_base(x);
  void *py = cpu_tensor_base(y);
  int64_t ox = line_offset(x, a->axis, line),
          oy = line_offset(y, a->axis, line);
  double mx = -INFINITY, sum = 0.0;
  for (int64_t j = 0; j < n; j++) {
    double v = cpu_load(px, x->dtype, ox + j * sx);
    if (v > mx || v != v)
      mx = mx != mx ? mx : v;
  }
  for (int64_t j = 0; j < n; j++)
    sum += exp(cpu_load(px, x->dtype, ox + j * sx) - mx);
  double lse = log(sum);
  for (int64_t j = 0; j < n; j++) {
    double d = cpu_load(px, x->dtype, ox + j * sx) - mx;
    cpu_store(py, y->dtype, oy + j * sy, a->log ? d - lse : exp(d) / sum);
  }
}

bp_status_t cpu_ref_softmax_range(const bp_softmax_args_t *a, int64_t begin,
                                  int64_t end) {
  for (int64_t l = begin; l < end; l++)
    softmax_line(a, l);
  return BP_OK;
}

/* ---- Adam / AdamW: tasks are the elements of all tensors, in order ------*/

int64_t cpu_ref_adam_tasks(const bp_adam_args_t *a) {
  if (a->count && (!a->params || !a->grads || !a->exp_avg || !a->exp_avg_sq))
    return BP_ERR_INVALID_ARGUMENT;
  int64_t n = 0;
  for (uint32_t t = 0; t < a->count; t++)
    n += cpu_numel(&a->params[t]);
  return n;
}

int64_t cpu_ref_adam_grain(const bp_adam_args_t *a) {
  (void)a;
  return CPU_REF_ELEMENT_GRAIN / 4;
}

/* PyTorch's update for one element (p, g, m, v loaded; p, m, v returned). */
static void adam_element(const bp_adam_args_t *a, double bc1, double bc2,
                         double *p, double g, double *m, double *v) {
  if (a->adamw)
    *p -= a->lr * a->weight_decay * *p;
  else
    g += a->weight_decay * *p;
  *m = a->beta1 * *m + (1.0 - a->beta1) * g;
  *v = a->beta2 * *v + (1.0 - a->beta2) * g * g;
  double mhat = *m / bc1, vhat = *v / bc2;
  *p -= a->lr * mhat / (sqrt(vhat) + a->eps);
}

/* Runs elements [begin, end) of tensor set t (4 views of one shape). */
static void adam_tensor(const bp_adam_args_t *a, uint32_t t, int64_t begin,
                        int64_t end, double bc1, double bc2) {
  const bp_plugin_tensor_t *ts[4] = {&a->params[t], &a->grads[t],
                                     &a->exp_avg[t], &a->exp_avg_sq[t]};
  void *base[4];
  for (int k = 0; k < 4; k++)
    base[k] = cpu_tensor_base(ts[k]);
  cpu_iter_t it;
  cpu_iter_init(&it, ts[0]->rank, ts[0]->shape, 4, ts, begin);
  for (int64_t i = begin; i < end; i++, cpu_iter_next(&it)) {
    double p = cpu_load(base[0], ts[0]->dtype, it.off[0]);
    double g = cpu_load(base[1], ts[1]->dtype, it.off[1]);
    double m = cpu_load(base[2], ts[2]->dtype, it.off[2]);
    double v = cpu_load(base[3], ts[3]->dtype, it.off[3]);
    adam_element(a, bc1, bc2, &p, g, &m, &v);
    cpu_store(base[0], ts[0]->dtype, it.off[0], p);
    cpu_store(base[2], ts[2]->dtype, it.off[2], m);
    cpu_store(base[3], ts[3]->dtype, it.off[3], v);
  }
}

bp_status_t cpu_ref_adam_range(const bp_adam_args_t *a, int64_t begin,
                               int64_t end) {
  double bc1 = 1.0 - pow(a->beta1, (double)a->step);
  double bc2 = 1.0 - pow(a->beta2, (double)a->step);
  int64_t first = 0; /* task index of tensor t's first element */
  for (uint32_t t = 0; t < a->count && first < end; t++) {
    int64_t n = cpu_numel(&a->params[t]);
    int64_t lo = begin > first ? begin - first : 0;
    int64_t hi = end - first < n ? end - first : n;
    if (lo < hi)
      adam_tensor(a, t, lo, hi, bc1, bc2);
    first += n;
  }
  return BP_OK;
}
