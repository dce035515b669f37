/*
 * ops_common.c — helpers every ops_*.c file uses: strided index spaces that
 * fit the kernels' int32 arithmetic, grid sizes, dtype names, sizes and bit
 * patterns.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vkb.h"

/* ---- helpers -------------------------------------------------------------*/

bool vkb_fits_i32(const bp_plugin_tensor_t *t) {
  int64_t span = 0;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return true;
    int64_t s = t->strides[i] < 0 ? -t->strides[i] : t->strides[i];
    if (t->shape[i] > INT32_MAX || s > INT32_MAX) return false;
    span += (t->shape[i] - 1) * s;
    if (span > INT32_MAX) return false;
  }
  return true;
}

bp_status_t vkb_nd_make(vkb_nd_t *nd, const bp_plugin_tensor_t *shape,
                        const bp_plugin_tensor_t *const *t, int count, const char *op) {
  memset(nd, 0, sizeof *nd);
  int64_t n = 1;
  for (int i = 0; i < shape->rank; i++) n *= shape->shape[i];
  bool ok = n <= INT32_MAX;
  for (int k = 0; k < count && ok; k++) {
    ok = vkb_fits_i32(t[k]);
    for (int i = 0; i < t[k]->rank && ok; i++) ok = t[k]->strides[i] >= 0;
  }
  if (!ok)
    return vkb_fail(BP_ERR_UNSUPPORTED,
                    "vulkan: %s: sizes beyond int32 or negative strides are "
                    "not supported by this backend",
                    op);
  nd->n = (int32_t)n;
  /* Walk dims from the innermost; drop size-1 dims; merge dim i into the
   * one inside it when every tensor is contiguous across the pair. */
  int r = 0;
  for (int i = shape->rank - 1; i >= 0; i--) {
    if (shape->shape[i] == 1) continue;
    bool merge = r > 0;
    for (int k = 0; k < count && merge; k++)
      merge = t[k]->strides[i] == (int64_t)nd->strides[k][r - 1] * nd->shape[r - 1];
    if (merge) {
      nd->shape[r - 1] *= (int32_t)shape->shape[i];
      continue;
    }
    nd->shape[r] = (int32_t)shape->shape[i];
    for (int k = 0; k < count; k++) nd->strides[k][r] = (int32_t)t[k]->strides[i];
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
  case BP_F32:
    return "f32";
  case BP_F16:
    return "f16";
  case BP_BF16:
    return "bf16";
  case BP_F64:
    return "f64";
  case BP_I32:
    return "i32";
  case BP_I64:
    return "i64";
  case BP_U8:
    return "u8";
  case BP_I8:
    return "i8";
  case BP_FP8_E4M3:
    return "e4m3";
  case BP_FP8_E5M2:
    return "e5m2";
  default:
    return NULL;
  }
}

size_t vkb_dtype_size(bp_dtype_t dt) {
  switch (dt) {
  case BP_F32:
  case BP_I32:
    return 4;
  case BP_F16:
  case BP_BF16:
    return 2;
  case BP_F64:
  case BP_I64:
    return 8;
  case BP_U8:
  case BP_I8: /* i8 and fp8 copy as bytes */
  case BP_FP8_E4M3:
  case BP_FP8_E5M2:
    return 1;
  default:
    return 0;
  }
}

/* Rounds x once to a float with ebits/mbits (f16: 5/10, bf16: 8/7). */
static uint16_t round_small(double x, int ebits, int mbits) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  uint16_t sign = (uint16_t)((u >> 63) << (ebits + mbits));
  uint16_t inf = (uint16_t)(((1u << ebits) - 1u) << mbits);
  if (isnan(x)) return (uint16_t)(sign | inf | (1u << (mbits - 1)));
  double a = fabs(x);
  int bias = (1 << (ebits - 1)) - 1, e;
  if (a == 0 || isinf(x)) return a == 0 ? sign : (uint16_t)(sign | inf);
  frexp(a, &e);
  e -= 1;                         /* a in [2^e, 2^(e+1)) */
  if (e < 1 - bias) e = 1 - bias; /* denormal: fixed quantum */
  double q = ldexp(a, mbits - e); /* units of the last mantissa bit */
  double r = nearbyint(q);        /* the default mode rounds to even */
  uint64_t m = (uint64_t)r;
  /* m >= 2^mbits is a normal (or the carry into the next binade). */
  uint64_t bits = m < (1ull << mbits) ? m : ((uint64_t)(e + bias) << mbits) + m - (1ull << mbits);
  return bits >= inf ? (uint16_t)(sign | inf) : (uint16_t)(sign | bits);
}

static int64_t to_int(double x, double lo, double hi) {
  if (isnan(x)) return 0;
  if (x <= lo) return (int64_t)lo;
  if (x >= hi) return x >= 9.2233720368547758e18 ? INT64_MAX : (int64_t)hi;
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
  case BP_F64:
    memcpy(&bits, &v, 8);
    return bits;
  case BP_F16:
    return round_small(v, 5, 10);
  case BP_BF16:
    return round_small(v, 8, 7);
  case BP_I32:
    return (uint32_t)(int32_t)to_int(v, INT32_MIN, INT32_MAX);
  case BP_I64:
    return (uint64_t)to_int(v, -9.2233720368547758e18, 9.2233720368547758e18);
  case BP_U8:
    return (uint8_t)to_int(v, 0, 255);
  default:
    return 0;
  }
}
