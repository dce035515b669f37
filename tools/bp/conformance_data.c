/*
 * conformance_data.c — test tensors for the conformance runner: the same
 * logical values on the device under test and on the reference, in any
 * layout, and comparison by normalised error.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "kernels/common/bp_half.h"
#include "kernels/common/bp_qcodec.h"

/* ---- host conversions: kernels/common/bp_half.h (no plugin's code) ------*/

static void store(void *p, bp_dtype_t dt, double v) {
  switch (dt) {
  case BP_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
  case BP_F64: memcpy(p, &v, 8); break;
  case BP_F16: { uint16_t h = bp_f32_to_f16((float)v); memcpy(p, &h, 2); break; }
  case BP_BF16: { uint16_t h = bp_f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
  case BP_I32: { int32_t i = isnan(v) ? 0 : (int32_t)fmax(fmin(v, 2147483647.0), -2147483648.0); memcpy(p, &i, 4); break; }
  case BP_I64: { int64_t i = isnan(v) ? 0 : (int64_t)v; memcpy(p, &i, 8); break; }
  case BP_U8: { uint8_t i = isnan(v) || v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v; memcpy(p, &i, 1); break; }
  case BP_I8: { int8_t i = isnan(v) ? 0 : v < -128 ? -128 : v > 127 ? 127 : (int8_t)v; memcpy(p, &i, 1); break; }
  case BP_FP8_E4M3: *(uint8_t *)p = bp_fp8_encode(v, 3); break;
  case BP_FP8_E5M2: *(uint8_t *)p = bp_fp8_encode(v, 2); break;
  default: break;
  }
}

static double load(const void *p, bp_dtype_t dt) {
  switch (dt) {
  case BP_F32: { float f; memcpy(&f, p, 4); return f; }
  case BP_F64: { double d; memcpy(&d, p, 8); return d; }
  case BP_F16: { uint16_t h; memcpy(&h, p, 2); return bp_f16_to_f32(h); }
  case BP_BF16: { uint16_t h; memcpy(&h, p, 2); return bp_bf16_to_f32(h); }
  case BP_I32: { int32_t i; memcpy(&i, p, 4); return i; }
  case BP_I64: { int64_t i; memcpy(&i, p, 8); return (double)i; }
  case BP_U8: return *(const uint8_t *)p;
  case BP_I8: return *(const int8_t *)p;
  case BP_FP8_E4M3: return bp_fp8_decode(*(const uint8_t *)p, 3);
  case BP_FP8_E5M2: return bp_fp8_decode(*(const uint8_t *)p, 2);
  default: return 0;
  }
}

/* ---- deterministic values ------------------------------------------------*/

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) { return (double)(splitmix(s) >> 11) * 0x1p-53; }

static double value_for(cf_fill_t fill, uint64_t *s, bp_dtype_t dt) {
  double u1 = uniform01(s), u2 = uniform01(s);
  double normal = sqrt(-2 * log(u1 + 1e-300)) * cos(6.283185307179586 * u2);
  switch (fill) {
  case CF_FILL_POSITIVE: return 0.5 + 2 * u1;
  case CF_FILL_SMALL_INT: return floor(u1 * 9) - 4;
  case CF_FILL_NAN: return NAN;
  case CF_FILL_SPECIAL: {
    uint64_t pick = splitmix(s) % 16;
    double tiny = dt == BP_F64 ? 1e-310 : dt == BP_F32 ? 1e-40 : 1e-6;
    if (pick == 0) return NAN;
    if (pick == 1) return INFINITY;
    if (pick == 2) return -INFINITY;
    if (pick == 3) return -0.0;
    if (pick == 4) return tiny;
    return normal;
  }
  case CF_FILL_NORMAL: break;
  }
  return normal;
}

/* ---- runs ----------------------------------------------------------------*/

void cf_run_init(cf_run_t *r, bp_device_t *dev, bp_stream_t *s) {
  memset(r, 0, sizeof *r);
  r->dev = dev;
  r->s = s;
}

void cf_run_free(cf_run_t *r) {
  for (int i = 0; i < r->nbufs; i++) bp_buffer_free(r->bufs[i]);
  r->nbufs = 0;
}

static bp_buffer_t *run_alloc(cf_run_t *r, uint64_t bytes) {
  bp_buffer_t *b = NULL;
  if (r->nbufs == (int)(sizeof r->bufs / sizeof r->bufs[0])) {
    r->failed = true;
    snprintf(r->err, sizeof r->err, "too many buffers in one case");
    return NULL;
  }
  if (bp_buffer_alloc(r->dev, bytes ? bytes : 1, &b) != BP_OK) {
    r->failed = true;
    snprintf(r->err, sizeof r->err, "alloc %llu bytes: %s", (unsigned long long)bytes, bp_last_error());
    return NULL;
  }
  r->bufs[r->nbufs++] = b;
  return b;
}

/* Storage strides for a layout, and the element count of the allocation. */
static int64_t layout_strides(int rank, const int64_t *shape, cf_layout_t layout, int64_t *strides) {
  int64_t order[BP_MAX_RANK];
  for (int i = 0; i < rank; i++) order[i] = i;
  if (layout == CF_TRANSPOSED && rank >= 2) {
    order[rank - 2] = rank - 1;
    order[rank - 1] = rank - 2;
  }
  int64_t gap = layout == CF_STRIDED ? 2 : 1, stride = gap;
  for (int j = rank - 1; j >= 0; j--) {
    int64_t axis = order[j];
    strides[axis] = stride;
    stride *= (shape[axis] > 0 ? shape[axis] : 1) + (layout == CF_STRIDED ? 1 : 0);
  }
  return stride;
}

bp_tensor_t cf_tensor(cf_run_t *r, bp_dtype_t dt, int rank, const int64_t *shape, cf_layout_t layout,
                      cf_fill_t fill, uint64_t seed) {
  bp_tensor_t t;
  memset(&t, 0, sizeof t);
  int64_t strides[BP_MAX_RANK];
  int64_t total = layout_strides(rank, shape, layout, strides);
  size_t es = bp_dtype_size(dt);
  bp_buffer_t *b = run_alloc(r, (uint64_t)total * es);
  unsigned char *host = calloc((size_t)total, es);
  if (!b || !host) {
    free(host);
    return t;
  }
  int64_t n = 1, idx[BP_MAX_RANK] = {0};
  for (int i = 0; i < rank; i++) n *= shape[i];
  uint64_t st = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t e = 0; e < n; e++) {
    int64_t off = 0;
    for (int i = 0; i < rank; i++) off += idx[i] * strides[i];
    store(host + off * es, dt, value_for(fill, &st, dt));
    for (int i = rank - 1; i >= 0 && ++idx[i] == shape[i]; i--) idx[i] = 0;
  }
  if (bp_buffer_write(b, 0, host, (uint64_t)total * es) != BP_OK) {
    r->failed = true;
    snprintf(r->err, sizeof r->err, "upload: %s", bp_last_error());
  }
  free(host);
  bp_tensor_init(b, 0, dt, rank, shape, strides, &t);
  return t;
}

double *cf_read(cf_run_t *r, const bp_tensor_t *t, int64_t *n) {
  *n = bp_tensor_numel(t);
  uint64_t size = 0;
  if (!t->buffer || bp_buffer_size(t->buffer, &size) != BP_OK) return NULL;
  unsigned char *host = malloc(size);
  double *out = malloc((size_t)(*n ? *n : 1) * sizeof *out);
  if (!host || !out || bp_buffer_read(t->buffer, 0, host, size) != BP_OK) {
    snprintf(r->err, sizeof r->err, "read back: %s", bp_last_error());
    free(host);
    free(out);
    return NULL;
  }
  size_t es = bp_dtype_size(t->dtype);
  int64_t idx[BP_MAX_RANK] = {0};
  for (int64_t e = 0; e < *n; e++) {
    int64_t off = 0;
    for (int i = 0; i < t->rank; i++) off += idx[i] * t->strides[i];
    out[e] = load(host + t->offset + off * es, t->dtype);
    for (int i = t->rank - 1; i >= 0 && ++idx[i] == t->shape[i]; i--) idx[i] = 0;
  }
  free(host);
  return out;
}

double cf_tolerance(bp_dtype_t dt, int64_t reduction) {
  double base = dt == BP_F64 ? 1e-12 : dt == BP_F16 ? 2e-3 : dt == BP_BF16 ? 1.6e-2 : 2e-6;
  return base * sqrt((double)(reduction > 1 ? reduction : 1));
}

bool cf_compare(const double *got, const double *ref, int64_t n, double tol, char *detail, size_t size) {
  double scale = 0;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(ref[i]) && fabs(ref[i]) > scale) scale = fabs(ref[i]);
  if (scale < 1e-30) scale = 1;
  double worst = 0;
  int64_t worst_i = -1;
  for (int64_t i = 0; i < n; i++) {
    bool ok_special = isnan(ref[i]) ? isnan(got[i]) : isinf(ref[i]) ? got[i] == ref[i] : isfinite(got[i]);
    double err = ok_special ? (isfinite(ref[i]) ? fabs(got[i] - ref[i]) / scale : 0) : INFINITY;
    if (err > worst || (worst_i < 0 && err > tol)) {
      worst = err;
      worst_i = i;
    }
  }
  snprintf(detail, size, worst_i < 0 ? "max normalised error 0" : "max normalised error %.3g at %lld (got %.9g, want %.9g)",
           worst, (long long)worst_i, worst_i < 0 ? 0.0 : got[worst_i], worst_i < 0 ? 0.0 : ref[worst_i]);
  return worst <= tol;
}
