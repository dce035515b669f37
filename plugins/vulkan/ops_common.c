/*
 * ops.c — shared op helpers, the capability table, and the data and
 * elementwise ops: fill, copy, cast, unary, binary.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

/* ---- helpers -------------------------------------------------------------*/

bool vkb_fits_i32(const bp_plugin_tensor_t *t) {
  int64_t span = 0;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0)
      return true;
    int64_t s = t->strides[i] < 0 ? -t->strides[i] : t->strides[i];
    if (t->shape[i] > INT32_MAX || s > INT32_MAX)
      return false;
    span += (t->shape[i] - 1) * s;
    if (span > INT32_MAX)
      return false;
  }
  return true;
}

bp_status_t vkb_nd_make(vkb_nd_t *nd, const bp_plugin_tensor_t *shape,
                        const bp_plugin_tensor_t *const *t, int count,
                        const char *op) {
  memset(nd, 0, sizeof *nd);
  int64_t n = 1;
  for (int i = 0; i < shape->rank; i++)
    n *= shape->shape[i];
  bool ok = n <= INT32_MAX;
  for (int k = 0; k < count && ok; k++) {
    ok = vkb_fits_i32(t[k]);
    for (int i = 0; i < t[k]->rank && ok; i++)
      ok = t[k]->strides[i] >= 0;
  }
  if (!ok)
    return vkb_fail(BP_ERR_UNSUPPORTED,
                    "vulkan: %s: sizes beyond int32 or negative strides are "
                    "not supported by this backend", op);
  nd->n = (int32_t)n;
  /* Walk dims from the innermost; drop size-1 dims; merge dim i into the
   * one inside it when every tensor is contiguous across the pair. */
  int r = 0;
  for (int i = shape->rank - 1; i >= 0; i--) {
    if (shape->shape[i] == 1)
      continue;
    bool merge = r > 0;
    for (int k = 0; k < count && merge; k++)
      merge = t[k]->strides[i] ==
              (int64_t)nd->strides[k][r - 1] * nd->shape[r - 1];
    if (merge) {
      nd->shape[r - 1] *= (int32_t)shape->shape[i];
      continue;
    }
    nd->shape[r] = (int32_t)shape->shape[i];
    for (int k = 0; k < count; k++)
      nd->strides[k][r] = (int32_t)t[k]->strides[i];
    r++;
  }
  /* Collected innermost first; kernels want outermost first. */
  for (int i = 0; i < r / 2; i++) {
    int j = r - 1 - i;
    int32_t tmp = nd->shape[i];
    nd->shape[i] = nd->shape[j];
    nd->shape[j] = tmp;
    for (int k = 0; k < count; k++) {
      tmp = nd->strides[k][i];
      nd->strides[k][i] = nd->strides[k][j];
      nd->strides[k][j] = tmp;
    }
  }
  nd->rank = r;
  return BP_OK;
}

uint32_t vkb_groups_1d(vkb_device_t *d, int64_t n, uint32_t per_group) {
  int64_t g = (n + per_group - 1) / per_group;
  int64_t cap = d->caps.max_groups[0] < 65535 ? d->caps.max_groups[0] : 65535;
  return (uint32_t)(g < cap ? g : cap);
}

const char *vkb_dtype_tag(bp_dtype_t dt) {
  switch (dt) {
  case BP_F32: return "f32";
  case BP_F16: return "f16";
  case BP_BF16: return "bf16";
  case BP_F64: return "f64";
  case BP_I32: return "i32";
  case BP_I64: return "i64";
  case BP_U8: return "u8";
  default: return NULL;
  }
}

size_t vkb_dtype_size(bp_dtype_t dt) {
  switch (dt) {
  case BP_F32: case BP_I32: return 4;
  case BP_F16: case BP_BF16: return 2;
  case BP_F64: case BP_I64: return 8;
  case BP_U8: return 1;
  default: return 0;
  }
}

/* Rounds x once to a float with ebits/mbits (f16: 5/10, bf16: 8/7). */
static uint16_t round_small(double x, int ebits, int mbits) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  uint16_t sign = (uint16_t)((u >> 63) << (ebits + mbits));
  uint16_t inf = (uint16_t)(((1u << ebits) - 1u) << mbits);
  if (isnan(x))
    return (uint16_t)(sign | inf | (1u << (mbits - 1)));
  double a = fabs(x);
  int bias = (1 << (ebits - 1)) - 1, e;
  if (a == 0 || isinf(x))
    return a == 0 ? sign : (uint16_t)(sign | inf);
  frexp(a, &e);
  e -= 1; /* a in [2^e, 2^(e+1)) */
  if (e < 1 - bias)
    e = 1 - bias; /* denormal: fixed quantum */
  double q = ldexp(a, mbits - e); /* units of the last mantissa bit */
  double r = nearbyint(q);        /* the default mode rounds to even */
  uint64_t m = (uint64_t)r;
  /* m >= 2^mbits is a normal (or the carry into the next binade). */
  uint64_t bits = m < (1ull << mbits)
                      ? m
                      : ((uint64_t)(e + bias) << mbits) + m - (1ull << mbits);
  return bits >= inf ? (uint16_t)(sign | inf) : (uint16_t)(sign | bits);
}

static int64_t to_int(double x, double lo, double hi) {
  if (isnan(x))
    return 0;
  if (x <= lo)
    return (int64_t)lo;
  if (x >= hi)
    return x >= 9.2233720368547758e18 ? INT64_MAX : (int64_t)hi;
  return (int64_t)nearbyint(x);
}

uint64_t vkb_dtype_bits(bp_dtype_t dt, double v) {
  uint64_t bits = 0;
  switch (dt) {
  case BP_F32: {
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
  }
  case BP_F64: memcpy(&bits, &v, 8); return bits;
  case BP_F16: return round_small(v, 5, 10);
  case BP_BF16: return round_small(v, 8, 7);
  case BP_I32: return (uint32_t)(int32_t)to_int(v, INT32_MIN, INT32_MAX);
  case BP_I64: return (uint64_t)to_int(v, -9.2233720368547758e18, 9.2233720368547758e18);
  case BP_U8: return (uint8_t)to_int(v, 0, 255);
  default: return 0;
  }
}

/* ---- capability table ----------------------------------------------------*/

/* Which dtypes the device can hold in storage buffers at all. */
static uint32_t storage_dtypes(const vkb_caps_t *c) {
  uint32_t m = BP_DTYPE_BIT(BP_F32) | BP_DTYPE_BIT(BP_I32) |
               BP_DTYPE_BIT(BP_I64) | BP_DTYPE_BIT(BP_F64);
  if (c->storage16)
    m |= BP_DTYPE_BIT(BP_F16) | BP_DTYPE_BIT(BP_BF16);
  if (c->storage8)
    m |= BP_DTYPE_BIT(BP_U8);
  return m;
}

/* Claims op for the float dtypes whose kernel variant `family_<dt>` is
 * built in and whose storage the device has. */
static uint32_t float_claims(const vkb_caps_t *c, const char *family) {
  static const bp_dtype_t fl[] = {BP_F32, BP_F16, BP_BF16};
  uint32_t m = 0, have = storage_dtypes(c);
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s_%s", family, vkb_dtype_tag(fl[i]));
    if ((have & BP_DTYPE_BIT(fl[i])) && vkb_kernel_present(name))
      m |= BP_DTYPE_BIT(fl[i]);
  }
  return m;
}

void vkb_claims(const vkb_caps_t *c, uint32_t op_dtypes[BP_OP_TABLE_SIZE]) {
  memset(op_dtypes, 0, BP_OP_TABLE_SIZE * sizeof *op_dtypes);
  if (!c->usable)
    return;
  uint32_t have = storage_dtypes(c);
  if (vkb_kernel_present("copy_b32") && vkb_kernel_present("copy_b64")) {
    uint32_t m = have;
    if (!vkb_kernel_present("copy_b16"))
      m &= ~(BP_DTYPE_BIT(BP_F16) | BP_DTYPE_BIT(BP_BF16));
    if (!vkb_kernel_present("copy_b8"))
      m &= ~BP_DTYPE_BIT(BP_U8);
    op_dtypes[BP_OP_FILL] = op_dtypes[BP_OP_COPY] = m;
  }
  /* cast: every pair among the claimed dtypes must have its kernel. */
  static const bp_dtype_t ct[] = {BP_F32, BP_F16, BP_BF16, BP_I32, BP_U8};
  uint32_t cast = 0;
  for (int i = 0; i < 5; i++)
    if (have & BP_DTYPE_BIT(ct[i]))
      cast |= BP_DTYPE_BIT(ct[i]);
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++) {
      char name[32];
      snprintf(name, sizeof name, "cast_%s_%s", vkb_dtype_tag(ct[i]),
               vkb_dtype_tag(ct[j]));
      if (!vkb_kernel_present(name))
        cast &= ~(BP_DTYPE_BIT(ct[i]) | BP_DTYPE_BIT(ct[j]));
    }
  op_dtypes[BP_OP_CAST] = cast;
  op_dtypes[BP_OP_UNARY] = op_dtypes[BP_OP_BINARY] = float_claims(c, "eltwise");
  op_dtypes[BP_OP_GEMM] = float_claims(c, "gemm");
  op_dtypes[BP_OP_GEMV] = op_dtypes[BP_OP_GEMM]; /* gemv runs on gemm */
  op_dtypes[BP_OP_REDUCE] = float_claims(c, "reduce");
  op_dtypes[BP_OP_SOFTMAX] = float_claims(c, "softmax");
  op_dtypes[BP_OP_LAYER_NORM] = op_dtypes[BP_OP_RMS_NORM] =
      float_claims(c, "norm");
  op_dtypes[BP_OP_ATTENTION] = float_claims(c, "attention");
  op_dtypes[BP_OP_CONV2D] = float_claims(c, "conv");
  op_dtypes[BP_OP_POOL2D] = float_claims(c, "pool");
  op_dtypes[BP_OP_BATCH_NORM] = float_claims(c, "bnorm");
  op_dtypes[BP_OP_ADAM] = float_claims(c, "adam");
  op_dtypes[BP_OP_RANDOM] = float_claims(c, "random");
  /* f64 only where the shader can compute in double (random's uniform and
   * normal f64 paths are double arithmetic, not just storage). */
  if (c->float64 && vkb_kernel_present("random_f64"))
    op_dtypes[BP_OP_RANDOM] |= BP_DTYPE_BIT(BP_F64);
}

/* ---- fill and copy ---------------------------------------------------------*/

/* Matches copy.comp's parameter block. */
typedef struct copy_params {
  uint64_t y, x;
  int32_t n, rank;
  uint32_t lo, hi;
  int32_t shape[BP_MAX_RANK], sy[BP_MAX_RANK], sx[BP_MAX_RANK];
} copy_params_t;

static bp_status_t copy_record(vkb_stream_t *s, const bp_plugin_tensor_t *y,
                               const bp_plugin_tensor_t *x, uint64_t bits,
                               const char *op) {
  const bp_plugin_tensor_t *ts[2] = {y, x ? x : y};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, y, ts, 2, op);
  if (st != BP_OK || nd.n == 0)
    return st;
  copy_params_t p = {.y = vkb_tensor_addr(y),
                     .x = x ? vkb_tensor_addr(x) : 0,
                     .n = nd.n,
                     .rank = nd.rank,
                     .lo = (uint32_t)bits,
                     .hi = (uint32_t)(bits >> 32)};
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sy, nd.strides[0], sizeof p.sy);
  memcpy(p.sx, nd.strides[1], sizeof p.sx);
  char name[16];
  snprintf(name, sizeof name, "copy_b%zu", 8 * vkb_dtype_size(y->dtype));
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p,
                      vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

bp_status_t vkb_op_fill(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                        const bp_fill_args_t *a) {
  VKB_ON_STREAM(dev, stream, s,
                copy_record(s, &a->y, NULL, vkb_dtype_bits(a->y.dtype, a->value),
                            "fill"))
}

bp_status_t vkb_op_copy(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                        const bp_copy_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, copy_record(s, &a->y, &a->x, 0, "copy"))
}

/* ---- cast, unary, binary --------------------------------------------------*/

/* Matches eltwise.comp's and cast.comp's parameter block. */
typedef struct eltwise_params {
  uint64_t y, a, b;
  int32_t n, rank, op, binary;
  int32_t shape[BP_MAX_RANK], sy[BP_MAX_RANK], sa[BP_MAX_RANK],
      sb[BP_MAX_RANK];
} eltwise_params_t;

/* A texel view of t's buffer from the 16-byte boundary at or below element
 * 0, covering count elements; *out_shift is element 0's index in it. */
static bp_status_t texel_view(vkb_stream_t *s, const bp_plugin_tensor_t *t,
                              int64_t count, VkBufferView *out_view,
                              int32_t *out_shift) {
  vkb_alloc_t *al = vkb_ptr(t->ptr);
  uint64_t byte = al->offset + t->offset, base = byte & ~(uint64_t)15;
  *out_shift = (int32_t)((byte - base) / 4);
  VkBufferViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                               .buffer = al->block->buf,
                               .format = VK_FORMAT_R32_SFLOAT,
                               .offset = base,
                               .range = (byte - base) + (uint64_t)count * 4};
  return vkb_check(s->d->fn.vkCreateBufferView(s->d->dev, &vi, NULL, out_view),
                   "vkCreateBufferView");
}

/* f32 eltwise of rank 1 (contiguous or broadcast scalar operands) through
 * r32f texel views, on devices where the texel kernels run (lavapipe);
 * BP_ERR_UNSUPPORTED, nothing recorded, otherwise. */
static bp_status_t eltwise_texel(vkb_stream_t *s, eltwise_params_t *p, const vkb_nd_t *nd,
                                 const bp_plugin_tensor_t *y, const bp_plugin_tensor_t *a,
                                 const bp_plugin_tensor_t *b, const uint32_t *spec) {
  /* Below 1024 elements the per-lane loads cost less than creating the
   * three views. */
  if (y->dtype != BP_F32 || nd->rank != 1 || nd->n < 1024 || nd->strides[0][0] != 1 || nd->strides[1][0] > 1 ||
      (b && nd->strides[2][0] > 1) || (uint64_t)nd->n + 4 > s->d->caps.max_texels ||
      !vkb_texel_wanted(s->d) || !vkb_kernel_present("eltwise_f32_tex"))
    return BP_ERR_UNSUPPORTED;
  const bp_plugin_tensor_t *t[3] = {y, a, b ? b : a};
  int32_t shift[3];
  VkBufferView v[3] = {VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE};
  bp_status_t st = BP_OK;
  for (int i = 0; i < 3 && st == BP_OK; i++)
    st = texel_view(s, t[i], nd->strides[i][0] ? nd->n : 1, &v[i], &shift[i]);
  if (st == BP_OK) {
    p->sy[1] = shift[0], p->sa[1] = shift[1], p->sb[1] = shift[2];
    st = vkb_dispatch_views(s, "eltwise_f32_tex", spec, 2, p, sizeof *p, v, 3,
                            vkb_groups_1d(s->d, nd->n, 256), 1, 1);
  }
  for (int i = 0; i < 3; i++) /* after recording: see vkb_texel_release */
    if (v[i])
      vkb_stream_release_view(s, v[i]);
  return st;
}

static bp_status_t eltwise_record(vkb_stream_t *s, const char *kernel,
                                  int op, const bp_plugin_tensor_t *y,
                                  const bp_plugin_tensor_t *a,
                                  const bp_plugin_tensor_t *b) {
  const bp_plugin_tensor_t *ts[3] = {y, a, b ? b : a};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, y, ts, 3, kernel);
  if (st != BP_OK || nd.n == 0)
    return st;
  eltwise_params_t p = {.y = vkb_tensor_addr(y),
                        .a = vkb_tensor_addr(a),
                        .b = b ? vkb_tensor_addr(b) : 0,
                        .n = nd.n,
                        .rank = nd.rank,
                        .op = op,
                        .binary = b != NULL};
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sy, nd.strides[0], sizeof p.sy);
  memcpy(p.sa, nd.strides[1], sizeof p.sa);
  memcpy(p.sb, nd.strides[2], sizeof p.sb);
  /* eltwise: op and arity as specialization constants, so the driver
   * compiles only that op (eltwise.comp says why); cast has none. */
  uint32_t spec[2] = {(uint32_t)op, b != NULL};
  bool specialise = strncmp(kernel, "eltwise_", 8) == 0;
  if (specialise) {
    st = eltwise_texel(s, &p, &nd, y, a, b, spec);
    if (st != BP_ERR_UNSUPPORTED)
      return st;
  }
  return vkb_dispatch(s, kernel, specialise ? spec : NULL, specialise ? 2 : 0,
                      &p, sizeof p, vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

static bp_status_t cast_record(vkb_stream_t *s, const bp_copy_args_t *a) {
  char name[32];
  snprintf(name, sizeof name, "cast_%s_%s", vkb_dtype_tag(a->x.dtype),
           vkb_dtype_tag(a->y.dtype));
  return eltwise_record(s, name, 0, &a->y, &a->x, NULL);
}

bp_status_t vkb_op_cast(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                        const bp_copy_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, cast_record(s, a))
}

static bp_status_t unary_record(vkb_stream_t *s, const bp_unary_args_t *a) {
  char name[32];
  snprintf(name, sizeof name, "eltwise_%s", vkb_dtype_tag(a->y.dtype));
  return eltwise_record(s, name, (int)a->op, &a->y, &a->x, NULL);
}

bp_status_t vkb_op_unary(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                         const bp_unary_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, unary_record(s, a))
}

static bp_status_t binary_record(vkb_stream_t *s, const bp_binary_args_t *a) {
  char name[32];
  snprintf(name, sizeof name, "eltwise_%s", vkb_dtype_tag(a->y.dtype));
  return eltwise_record(s, name, (int)a->op, &a->y, &a->a, &a->b);
}

bp_status_t vkb_op_binary(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                          const bp_binary_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, binary_record(s, a))
}
