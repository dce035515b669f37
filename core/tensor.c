/*
 * tensor.c — dtypes, tensor views, and the checks every op runs on its
 * tensors before a plugin sees them: live buffer of the right device, valid
 * dtype and rank, non-negative shapes, and every byte reachable through the
 * shape and strides inside the buffer, computed without overflow.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Dimensions and strides beyond this are rejected as absurd: no device has
 * 2^48 elements, and the bound keeps every product below 2^96 for the
 * overflow-checked arithmetic below. */
#define MAX_EXTENT (INT64_C(1) << 48)

static const struct {
  const char *name;
  size_t size;
} dtypes[BP_DTYPE_COUNT] = {
    [BP_F32] = {"f32", 4}, [BP_F16] = {"f16", 2}, [BP_BF16] = {"bf16", 2},
    [BP_F64] = {"f64", 8}, [BP_I32] = {"i32", 4}, [BP_I64] = {"i64", 8},
    [BP_U8] = {"u8", 1}, [BP_I8] = {"i8", 1}, [BP_FP8_E4M3] = {"fp8_e4m3", 1},
    [BP_FP8_E5M2] = {"fp8_e5m2", 1},
    /* block dtypes: the size is one block's (BP_QUANT_BLOCK weights) */
    [BP_Q8_0] = {"q8_0", 34}, [BP_Q4_0] = {"q4_0", 18},
};

bool bp__dtype_valid(int dtype) { return dtype >= 0 && dtype < BP_DTYPE_COUNT; }

bool bp__dtype_is_float(bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_F16 || dt == BP_BF16 || dt == BP_F64;
}

size_t bp_dtype_size(bp_dtype_t dt) { return bp__dtype_valid(dt) ? dtypes[dt].size : 0; }

const char *bp_dtype_name(bp_dtype_t dt) { return bp__dtype_valid(dt) ? dtypes[dt].name : "?"; }

bp_status_t bp_dtype_parse(const char *name, bp_dtype_t *out_dtype) {
  bp__clear_error();
  if (!out_dtype) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_dtype_parse: out_dtype is NULL");
  *out_dtype = BP_F32;
  for (int i = 0; name && i < BP_DTYPE_COUNT; i++)
    if (!strcmp(name, dtypes[i].name)) {
      *out_dtype = (bp_dtype_t)i;
      return BP_OK;
    }
  return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_dtype_parse: unknown dtype '%s'", name ? name : "(null)");
}

bool bp__mul_overflows(uint64_t a, uint64_t b, uint64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

bp_status_t bp_tensor_init(bp_buffer_t *buffer, uint64_t offset, bp_dtype_t dtype, int32_t rank,
                           const int64_t *shape, const int64_t *strides, bp_tensor_t *out) {
  bp__clear_error();
  if (!out) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_init: out_tensor is NULL");
  memset(out, 0, sizeof *out);
  if (!bp__dtype_valid(dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_init: dtype %d invalid", (int)dtype);
  if (rank < 0 || rank > BP_MAX_RANK)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_init: rank %d not in [0, %d]", rank, BP_MAX_RANK);
  if (rank > 0 && !shape) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_init: shape is NULL");
  for (int i = 0; i < rank; i++)
    if (shape[i] < 0 || shape[i] > MAX_EXTENT)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_init: shape[%d] = %lld out of range", i,
                      (long long)shape[i]);
  out->buffer = buffer;
  out->offset = offset;
  out->dtype = dtype;
  out->rank = rank;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; i--) {
    out->shape[i] = shape[i];
    out->strides[i] = strides ? strides[i] : stride;
    /* Saturate: an absurd contiguous shape is rejected when an op checks
     * its bounds, never wrapped around here. */
    if (shape[i] > 0) stride = stride > INT64_MAX / shape[i] ? INT64_MAX : stride * shape[i];
  }
  return BP_OK;
}

bp_status_t bp_tensor_permute(const bp_tensor_t *t, const int32_t *perm, bp_tensor_t *out) {
  bp__clear_error();
  if (!out) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_permute: out_tensor is NULL");
  memset(out, 0, sizeof *out);
  if (!t || !perm) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_permute: %s is NULL", t ? "perm" : "tensor");
  if (t->rank < 0 || t->rank > BP_MAX_RANK)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_permute: rank %d invalid", t->rank);
  bool seen[BP_MAX_RANK] = {false};
  for (int i = 0; i < t->rank; i++) {
    if (perm[i] < 0 || perm[i] >= t->rank || seen[perm[i]])
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_permute: perm is not a permutation of 0..%d",
                      t->rank - 1);
    seen[perm[i]] = true;
  }
  *out = *t;
  for (int i = 0; i < t->rank; i++) {
    out->shape[i] = t->shape[perm[i]];
    out->strides[i] = t->strides[perm[i]];
  }
  return BP_OK;
}

bp_status_t bp_tensor_transpose(const bp_tensor_t *t, int32_t a, int32_t b, bp_tensor_t *out) {
  bp__clear_error();
  if (!out) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_transpose: out_tensor is NULL");
  memset(out, 0, sizeof *out);
  if (!t) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_transpose: tensor is NULL");
  if (t->rank < 0 || t->rank > BP_MAX_RANK || a < 0 || b < 0 || a >= t->rank || b >= t->rank)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_tensor_transpose: axes %d, %d invalid for rank %d", a,
                    b, t->rank);
  int32_t perm[BP_MAX_RANK];
  for (int i = 0; i < t->rank; i++) perm[i] = i;
  perm[a] = b;
  perm[b] = a;
  return bp_tensor_permute(t, perm, out);
}

int64_t bp_tensor_numel(const bp_tensor_t *t) {
  if (!t || t->rank < 0 || t->rank > BP_MAX_RANK) return 0;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] <= 0) return 0;
    if (__builtin_mul_overflow(n, t->shape[i], &n)) return 0;
  }
  return n;
}

/* Lowest and highest element offsets (relative to the tensor's offset) its
 * shape and strides reach. False when some dimension is 0 (nothing touched).
 */
static bool element_extent(const bp_tensor_t *t, __int128 *lo, __int128 *hi) {
  *lo = *hi = 0;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return false;
    __int128 span = (__int128)(t->shape[i] - 1) * t->strides[i];
    if (span < 0) *lo += span; else *hi += span;
  }
  return true;
}

/* A block dtype's view (plugin-api.h, "quantized ops"): shape and strides
 * count weights, the last dim is contiguous and whole blocks, the other
 * strides are whole blocks and non-negative, so weight i sits in block
 * i / 32 and the bytes touched are exactly [offset, offset + (hi + 1) / 32
 * blocks). */
static bp_status_t block_check(const bp_tensor_t *t, const bp__buffer_t *b, const char *op,
                               const char *what) {
  const int64_t q = BP_QUANT_BLOCK;
  size_t bs = bp_dtype_size(t->dtype);
  if (t->rank < 1 || t->strides[t->rank - 1] != 1 || t->shape[t->rank - 1] % q)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: %s is %s: needs rank >= 1 and a contiguous last dim that is a multiple of "
                    "%lld weights",
                    op, what, bp_dtype_name(t->dtype), (long long)q);
  for (int i = 0; i < t->rank - 1; i++)
    if (t->strides[i] < 0 || t->strides[i] % q)
      return bp__fail(BP_ERR_INVALID_ARGUMENT,
                      "%s: %s.strides[%d] = %lld is not a non-negative multiple of %lld weights", op,
                      what, i, (long long)t->strides[i], (long long)q);
  if (t->offset % bs || t->offset > b->size)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: %s.offset %llu is not a whole %zu-byte block inside its %llu-byte buffer", op,
                    what, (unsigned long long)t->offset, bs, (unsigned long long)b->size);
  __int128 lo, hi;
  if (!element_extent(t, &lo, &hi)) return BP_OK;
  __int128 end = (__int128)t->offset + (hi + 1) / q * (__int128)bs;
  if (end > (__int128)b->size)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: %s reaches bytes [%llu, %lld) outside its buffer of %llu bytes", op, what,
                    (unsigned long long)t->offset, (long long)end, (unsigned long long)b->size);
  return BP_OK;
}

bp_status_t bp__tensor_check(const bp_tensor_t *t, const bp__device_t *d, const char *op,
                             const char *what) {
  if (!t) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, what);
  const bp__buffer_t *b = bp__handle_get_on(t->buffer, BP__H_BUFFER, d->gate);
  if (!b) {
    if (bp__handle_get(t->buffer, BP__H_BUFFER))
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s.buffer belongs to another device than the stream",
                      op, what);
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s.buffer is %s", op, what,
                    t->buffer ? "not a live buffer (freed or foreign)" : "NULL");
  }
  if (!bp__dtype_valid(t->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s.dtype %d invalid", op, what, (int)t->dtype);
  if (t->rank < 0 || t->rank > BP_MAX_RANK)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s.rank %d not in [0, %d]", op, what, t->rank,
                    BP_MAX_RANK);
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] < 0 || t->shape[i] > MAX_EXTENT)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s.shape[%d] = %lld out of range [0, 2^48]", op,
                      what, i, (long long)t->shape[i]);
    if (t->strides[i] < -MAX_EXTENT || t->strides[i] > MAX_EXTENT)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s.strides[%d] = %lld out of range", op, what, i,
                      (long long)t->strides[i]);
  }
  if (BP_DTYPE_IS_BLOCK(t->dtype)) return block_check(t, b, op, what);
  size_t es = bp_dtype_size(t->dtype);
  if (t->offset % es)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s.offset %llu is not a multiple of the %zu-byte element",
                    op, what, (unsigned long long)t->offset, es);
  if (t->offset > b->size) /* even an empty view must start inside */
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s.offset %llu is past the end of its %llu-byte buffer", op,
                    what, (unsigned long long)t->offset, (unsigned long long)b->size);
  __int128 lo, hi;
  if (!element_extent(t, &lo, &hi)) return BP_OK;
  __int128 first = (__int128)t->offset + lo * (__int128)es;
  __int128 end = (__int128)t->offset + (hi + 1) * (__int128)es;
  if (first < 0 || end > (__int128)b->size)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: %s reaches bytes [%lld, %lld) outside its buffer of %llu bytes", op, what,
                    (long long)first, (long long)end, (unsigned long long)b->size);
  return BP_OK;
}

void bp__tensor_to_plugin(const bp_tensor_t *t, bp_plugin_tensor_t *out) {
  memset(out, 0, sizeof *out);
  if (!t) return; /* absent optional tensor: rank 0, ptr 0 */
  /* t passed bp__tensor_check in this call, so its buffer is live. */
  const bp__buffer_t *b = bp__handle_get(t->buffer, BP__H_BUFFER);
  out->ptr = b->ptr;
  out->offset = b->origin + t->offset;
  out->dtype = t->dtype;
  out->rank = t->rank;
  for (int i = 0; i < t->rank; i++) {
    out->shape[i] = t->shape[i];
    out->strides[i] = t->strides[i];
  }
}

bp_status_t bp__broadcast_to(bp_plugin_tensor_t *x, int32_t rank, const int64_t *shape,
                             const char *op, const char *what) {
  if (x->rank > rank)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s has rank %d, more than the output's %d", op,
                    what, x->rank, rank);
  bp_plugin_tensor_t r = *x;
  int shift = rank - x->rank;
  for (int i = rank - 1; i >= 0; i--) {
    int j = i - shift;
    int64_t dim = j >= 0 ? x->shape[j] : 1;
    int64_t stride = j >= 0 ? x->strides[j] : 0;
    if (dim != shape[i] && dim != 1)
      return bp__fail(BP_ERR_INVALID_ARGUMENT,
                      "%s: %s dimension %d (%lld) does not broadcast to %lld", op, what, j,
                      (long long)dim, (long long)shape[i]);
    r.shape[i] = shape[i];
    r.strides[i] = dim == 1 ? 0 : stride;
  }
  r.rank = rank;
  *x = r;
  return BP_OK;
}

/* The bytes [first, end) elements lo..hi of t reach (whole blocks for a
 * block dtype, whose strides are non-negative). */
static void byte_range(const bp_tensor_t *t, __int128 lo, __int128 hi, __int128 *first,
                       __int128 *end) {
  __int128 es = bp_dtype_size(t->dtype);
  if (BP_DTYPE_IS_BLOCK(t->dtype)) {
    *first = t->offset + lo / BP_QUANT_BLOCK * es;
    *end = t->offset + (hi / BP_QUANT_BLOCK + 1) * es;
    return;
  }
  *first = t->offset + lo * es;
  *end = t->offset + (hi + 1) * es;
}

bool bp__tensors_overlap(const bp_tensor_t *a, const bp_tensor_t *b) {
  if (!a || !b || a->buffer != b->buffer) return false;
  __int128 alo, ahi, blo, bhi;
  if (!element_extent(a, &alo, &ahi) || !element_extent(b, &blo, &bhi)) return false;
  __int128 a0, a1, b0, b1;
  byte_range(a, alo, ahi, &a0, &a1);
  byte_range(b, blo, bhi, &b0, &b1);
  return a0 < b1 && b0 < a1;
}

bp_status_t bp__same_shape(const bp_tensor_t *a, const bp_tensor_t *b, const char *op,
                           const char *wa, const char *wb) {
  bool same = a->rank == b->rank;
  for (int i = 0; same && i < a->rank; i++) same = a->shape[i] == b->shape[i];
  if (!same)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s and %s have different shapes", op, wa, wb);
  return BP_OK;
}

bp_status_t bp__check_tensors(const bp__stream_t *s, const char *op, int n,
                              const bp_tensor_t *const *ts, const char *const *names) {
  bp_status_t st = BP_OK;
  for (int i = 0; st == BP_OK && i < n; i++) st = bp__tensor_check(ts[i], s->device, op, names[i]);
  return st;
}

bp_status_t bp__check_float_dtypes(const char *op, int n, const bp_tensor_t *const *ts,
                                   const char *const *names) {
  for (int i = 0; i < n; i++) {
    if (!ts[i]) continue;
    if (!bp__dtype_is_float(ts[i]->dtype))
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s has dtype %s; expected a float type", op,
                      names[i], bp_dtype_name(ts[i]->dtype));
    if (ts[i]->dtype != ts[0]->dtype)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s has dtype %s but %s has %s", op, names[i],
                      bp_dtype_name(ts[i]->dtype), names[0], bp_dtype_name(ts[0]->dtype));
  }
  return BP_OK;
}

bool bp__same_view(const bp_tensor_t *a, const bp_tensor_t *b) {
  if (a->buffer != b->buffer || a->offset != b->offset || a->dtype != b->dtype || a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i] || (a->shape[i] > 1 && a->strides[i] != b->strides[i]))
      return false;
  return true;
}

bp_status_t bp__check_output(const char *op, const bp_tensor_t *y, const char *yname, int n,
                             const bp_tensor_t *const *ins, const char *const *names,
                             bool in_place_ok) {
  bp_status_t st = bp__tensor_writable(op, y, yname);
  if (st != BP_OK) return st;
  for (int i = 0; i < n; i++) {
    if (!ins[i] || !bp__tensors_overlap(y, ins[i])) continue;
    if (in_place_ok && bp__same_view(y, ins[i])) continue;
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s overlaps %s%s", op, yname, names[i],
                    in_place_ok ? " (only an identical view may be updated in place)" : "");
  }
  int axis = bp__self_overlap_axis(y);
  if (axis >= 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: %s's strides make elements share memory (axis %d, stride %lld): an output "
                    "would be written twice", op, yname, axis, (long long)y->strides[axis]);
  return BP_OK;
}

bp_status_t bp__tensor_writable(const char *op, const bp_tensor_t *t, const char *name) {
  const bp__buffer_t *b = t->buffer ? bp__handle_get(t->buffer, BP__H_BUFFER) : NULL;
  return b ? bp__buffer_writable(b, op, name) : BP_OK;
}

uint64_t bp__tensor_const_id(const bp_tensor_t *t) {
  const bp__buffer_t *b = t && t->buffer ? bp__handle_get(t->buffer, BP__H_BUFFER) : NULL;
  return b ? __atomic_load_n(&b->const_id, __ATOMIC_ACQUIRE) : 0;
}

int bp__self_overlap_axis(const bp_tensor_t *t) {
  /* Sorted by |stride|, each axis must step past everything the smaller
   * axes reach; that proves every element has its own address. (A few exotic
   * interleaved layouts that are also one-to-one are refused too.) */
  int order[BP_MAX_RANK], n = 0;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return -1; /* no elements at all */
    if (t->shape[i] > 1) order[n++] = i;
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && llabs(t->strides[order[j]]) < llabs(t->strides[order[j - 1]]); j--) {
      int tmp = order[j];
      order[j] = order[j - 1];
      order[j - 1] = tmp;
    }
  __int128 reach = 0;
  for (int i = 0; i < n; i++) {
    int a = order[i];
    __int128 step = llabs(t->strides[a]);
    if (step <= reach || step == 0) return a;
    reach += step * (t->shape[a] - 1);
  }
  return -1;
}

bp_status_t bp__normalize_axis(const char *op, int32_t axis, int32_t rank, int32_t *out) {
  int32_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: axis %d out of range for rank %d", op, axis, rank);
  *out = a;
  return BP_OK;
}
