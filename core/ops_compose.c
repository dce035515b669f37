/*
 * ops_compose.c — model ops the core builds from other calls, so they run
 * on every device and are captured by graphs without a plugin op of their
 * own: the narrowing view, concat and KV-cache append (bp_copy into
 * views), and binary with a scalar on a device that only runs bp_binary.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "kernels/common/bp_half.h"
#include "ops_model.h"

bp_status_t bp_tensor_narrow(const bp_tensor_t *t, int32_t axis, int64_t start, int64_t length,
                             bp_tensor_t *out) {
  bp__clear_error();
  const char *op = "bp_tensor_narrow";
  if (!out) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: out_tensor is NULL", op);
  if (!t) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: tensor is NULL", op);
  if (t->rank < 1 || t->rank > BP_MAX_RANK)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: tensor has rank %d; expected 1 to %d", op,
                    t->rank, BP_MAX_RANK);
  int32_t ax;
  bp_status_t st = bp__normalize_axis(op, axis, t->rank, &ax);
  if (st != BP_OK) return st;
  if (start < 0 || length < 0 || start > t->shape[ax] || length > t->shape[ax] - start)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: [start %lld, + length %lld) is outside axis %d's %lld", op,
                    (long long)start, (long long)length, ax, (long long)t->shape[ax]);
  __int128 off =
      (__int128)t->offset + (__int128)start * t->strides[ax] * (int64_t)bp_dtype_size(t->dtype);
  if (off < 0 || off > (__int128)UINT64_MAX)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: the view starts before the buffer", op);
  *out = *t;
  out->offset = (uint64_t)off;
  out->shape[ax] = length;
  return BP_OK;
}

/* ---- gather with a rank-0 index --------------------------------------------- */

void bp__model_gather_scalar_index(bp_gather_args_t *a) {
  a->indices.rank = 1;
  a->indices.shape[0] = 1;
  a->indices.strides[0] = 1;
  bp_plugin_tensor_t *y = &a->y;
  for (int32_t d = y->rank; d > a->axis; d--) {
    y->shape[d] = y->shape[d - 1];
    y->strides[d] = y->strides[d - 1];
  }
  y->shape[a->axis] = 1;
  y->strides[a->axis] = 0;
  y->rank++;
}

/* ---- binary with a scalar, composed ----------------------------------------- */

static void scalar_bytes(bp_dtype_t dt, double v, unsigned char out[8]) {
  float f = (float)v;
  uint16_t h = dt == BP_F16 ? bp_f64_to_f16(v) : bp_f64_to_bf16(v);
  if (dt == BP_F64)
    memcpy(out, &v, sizeof v);
  else if (dt == BP_F32)
    memcpy(out, &f, sizeof f);
  else
    memcpy(out, &h, sizeof h);
}

bp_status_t bp__model_binary_scalar_composed(bp__stream_t *s, const char *op,
                                             const bp_binary_scalar_args_t *a, const bp_tensor_t *x,
                                             const bp_tensor_t *y) {
  pthread_mutex_lock(&s->lock);
  bool capturing = s->capture != NULL;
  pthread_mutex_unlock(&s->lock);
  /* The one-element tensor lives for this call only; a graph would keep
   * reading it after it is freed. */
  if (capturing)
    return bp__fail(BP_ERR_UNSUPPORTED,
                    "%s: device '%s' has no binary_scalar op, and the composed form "
                    "cannot be captured: use bp_binary with a one-element tensor",
                    op, s->device->entry.info.name);
  if (bp_tensor_numel(y) == 0) return BP_OK;
  unsigned char bytes[8];
  scalar_bytes(x->dtype, a->scalar, bytes);
  bp_buffer_t *buf = NULL;
  bp_tensor_t sc;
  bp_status_t st = bp_buffer_alloc(s->device->h, 8, &buf);
  if (st == BP_OK) st = bp_buffer_write(buf, 0, bytes, bp_dtype_size(x->dtype));
  if (st == BP_OK) st = bp_tensor_init(buf, 0, x->dtype, 0, NULL, NULL, &sc);
  if (st == BP_OK)
    st = a->scalar_first ? bp_binary(s->h, a->op, &sc, x, y) : bp_binary(s->h, a->op, x, &sc, y);
  /* bp_buffer_free waits for the device's queued work, the add included. */
  if (buf) bp_buffer_free(buf);
  return st;
}

/* ---- concat ------------------------------------------------------------------ */

/* inputs[i] matches y but along axis; the extents along axis add up to y's. */
static bp_status_t concat_check(bp__stream_t *s, const char *op, uint32_t count,
                                const bp_tensor_t *in, int32_t ax, const bp_tensor_t *y) {
  int64_t total = 0;
  char what[32];
  for (uint32_t i = 0; i < count; i++) {
    const bp_tensor_t *t = &in[i];
    snprintf(what, sizeof what, "inputs[%u]", i);
    bp_status_t st =
        bp__check_tensors(s, op, 1, (const bp_tensor_t *const[]){t}, (const char *const[]){what});
    if (st != BP_OK) return st;
    if (t->dtype != y->dtype || t->rank != y->rank)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s is %s rank %d; y is %s rank %d", op, what,
                      bp_dtype_name(t->dtype), t->rank, bp_dtype_name(y->dtype), y->rank);
    for (int32_t d = 0; d < y->rank; d++)
      if (d != ax && t->shape[d] != y->shape[d])
        return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s.shape[%d] is %lld; y's is %lld", op, what,
                        d, (long long)t->shape[d], (long long)y->shape[d]);
    if (bp__tensors_overlap(t, y))
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: y overlaps %s", op, what);
    total += t->shape[ax];
  }
  if (total != y->shape[ax])
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: the inputs' extents along axis %d add up to %lld; y has %lld", op, ax,
                    (long long)total, (long long)y->shape[ax]);
  return bp__check_output(op, y, "y", 0, NULL, NULL, false);
}

bp_status_t bp_concat(bp_stream_t *sh, uint32_t count, const bp_tensor_t *inputs, int32_t axis,
                      const bp_tensor_t *y) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_concat", "stream");
  const char *op = "bp_concat";
  bp_status_t st =
      bp__check_tensors(s, op, 1, (const bp_tensor_t *const[]){y}, (const char *const[]){"y"});
  if (st != BP_OK) return st;
  if (count == 0 || !inputs)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s", op, count ? "inputs is NULL" : "count is 0");
  int32_t ax;
  if (y->rank < 1)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: y has rank 0; nothing to concatenate along", op);
  if ((st = bp__normalize_axis(op, axis, y->rank, &ax)) ||
      (st = concat_check(s, op, count, inputs, ax, y)))
    return st;
  int64_t at = 0;
  for (uint32_t i = 0; i < count && st == BP_OK; i++) {
    bp_tensor_t slot;
    int64_t n = inputs[i].shape[ax];
    st = bp_tensor_narrow(y, ax, at, n, &slot);
    if (st == BP_OK && n > 0) st = bp_copy(sh, &inputs[i], &slot);
    at += n;
  }
  return st;
}

/* ---- KV-cache append ---------------------------------------------------------- */

bp_status_t bp_kv_append(bp_stream_t *sh, const bp_tensor_t *cache, const bp_tensor_t *fresh,
                         int32_t seq_axis, int64_t position) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_kv_append", "stream");
  const char *op = "bp_kv_append";
  bp_status_t st = bp__check_tensors(s, op, 2, (const bp_tensor_t *const[]){cache, fresh},
                                     (const char *const[]){"cache", "fresh"});
  if (st != BP_OK) return st;
  if (cache->dtype != fresh->dtype || cache->rank != fresh->rank)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: fresh is %s rank %d; cache is %s rank %d", op,
                    bp_dtype_name(fresh->dtype), fresh->rank, bp_dtype_name(cache->dtype),
                    cache->rank);
  if (cache->rank < 1) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: cache has rank 0", op);
  int32_t ax;
  if ((st = bp__normalize_axis(op, seq_axis, cache->rank, &ax))) return st;
  for (int32_t d = 0; d < cache->rank; d++)
    if (d != ax && cache->shape[d] != fresh->shape[d])
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: fresh.shape[%d] is %lld; cache's is %lld", op,
                      d, (long long)fresh->shape[d], (long long)cache->shape[d]);
  int64_t n = fresh->shape[ax], len = cache->shape[ax];
  if (position < 0 || position > len || n > len - position)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: position %lld + %lld new entries is beyond the cache length %lld "
                    "(seq_axis %d)",
                    op, (long long)position, (long long)n, (long long)len, ax);
  bp_tensor_t slot;
  if ((st = bp_tensor_narrow(cache, ax, position, n, &slot))) return st;
  if ((st = bp__check_output(op, &slot, "the cache slot", 1, (const bp_tensor_t *const[]){fresh},
                             (const char *const[]){"fresh"}, false)))
    return st;
  if (n == 0) return BP_OK;
  return bp_copy(sh, fresh, &slot);
}
