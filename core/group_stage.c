/*
 * group_stage.c — running one op on one member of a group. The op's tensors
 * point into group memory, which is host memory. A member whose pointers
 * are host pointers takes them as they are. Any other member gets each
 * input's byte extent copied into a buffer of its own, and the output's
 * elements, runs the op there, and the output's elements are copied back:
 * only those the view names, never the gaps between them, which may belong
 * to a slice another member is writing at the same time.
 */
#include <stdlib.h>
#include <string.h>

#include "group.h"

#define MAX_TENSORS BP__OP_MAX_TENSORS
#define ARGS_MAX 2048 /* bytes: the staged copy of an op's argument struct */

#define ARGS_FIT(E, name, args_t, value, capture, tensors) \
  _Static_assert(sizeof(args_t) <= ARGS_MAX, #args_t " must fit the staged copy");
BP_OP_TABLE_ALL(ARGS_FIT)
#undef ARGS_FIT

/* The op's tensors in args, output last (as in BP_OP_TABLE's tensors
 * column: every op writes its last tensor). Adam (arrays) has none here. */
static int op_tensors(bp_op_t op, void *args, bp_plugin_tensor_t **t) {
  size_t off[BP__OP_MAX_TENSORS];
  int k = bp__op_tensor_offsets(op, off);
  for (int i = 0; i < k; i++) t[i] = (bp_plugin_tensor_t *)(void *)((char *)args + off[i]);
  return k;
}

static bool host_memory(const bp__device_t *d) { return (d->entry.info.flags & BP_DEVICE_FLAG_HOST_MEMORY) != 0; }

bool bp__group_member_can(const bp__device_t *d, bp_op_t op, const void *args) {
  bp_plugin_tensor_t *t[MAX_TENSORS];
  bp_dtype_t dt;
  if (op == BP_OP_ADAM) {
    const bp_adam_args_t *a = args;
    if (!host_memory(d) || a->count == 0) return false;
    dt = a->params[0].dtype;
  } else {
    int n = op_tensors(op, (void *)args, t);
    if (n == 0) return false;
    /* The first input's dtype is the one the core checks; a cast also
     * needs its output's. */
    dt = t[0]->dtype;
    if (op == BP_OP_CAST && bp__require_op(d, op, t[n - 1]->dtype, "group") != BP_OK) {
      bp__clear_error();
      return false;
    }
  }
  bool ok = bp__require_op(d, op, dt, "group") == BP_OK;
  bp__clear_error();
  return ok;
}

/* The bytes [lo, hi) a tensor may touch, relative to its ptr. */
static void extent(const bp_plugin_tensor_t *t, uint64_t *lo, uint64_t *hi) {
  int64_t es = (int64_t)bp_dtype_size(t->dtype), a = (int64_t)t->offset, b = (int64_t)t->offset;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) {
      *lo = *hi = t->offset;
      return;
    }
    int64_t span = (t->shape[i] - 1) * t->strides[i] * es;
    if (span < 0) a += span; else b += span;
  }
  *lo = (uint64_t)a;
  *hi = (uint64_t)(b + es);
}

/* Copies the elements of view t from src (t's layout, based at src_base)
 * to the same places under dst_base: row by row along the last axis. */
static void copy_view(const bp_plugin_tensor_t *t, char *dst_base, const char *src_base) {
  size_t es = bp_dtype_size(t->dtype);
  int r = t->rank;
  int64_t idx[BP_MAX_RANK] = {0};
  int64_t inner = r ? t->shape[r - 1] : 1, istride = r ? t->strides[r - 1] : 0;
  for (int i = 0; i < r; i++)
    if (t->shape[i] == 0) return;
  for (;;) {
    int64_t off = (int64_t)t->offset;
    for (int i = 0; i < r - 1; i++) off += idx[i] * t->strides[i] * (int64_t)es;
    if (istride == 1) {
      memcpy(dst_base + off, src_base + off, (size_t)inner * es);
    } else {
      for (int64_t j = 0; j < inner; j++)
        memcpy(dst_base + off + j * istride * (int64_t)es, src_base + off + j * istride * (int64_t)es, es);
    }
    int i = r - 2;
    for (; i >= 0; i--) {
      if (++idx[i] < t->shape[i]) break;
      idx[i] = 0;
    }
    if (i < 0) return;
  }
}

typedef struct stage {
  bp_plugin_tensor_t *t;
  uint64_t host_ptr; /* the group memory the tensor points at */
  uint64_t lo, len;  /* its extent */
  uint64_t dev;      /* the member's copy, 0: none */
} stage_t;

/* Copies the output's own elements into its member copy (zeros between
 * them): the gaps may hold elements another member is writing right now,
 * which this member must not even read. */
static bp_status_t stage_output_in(bp__device_t *d, const stage_t *out, const bp_plugin_tensor_t *rel) {
  char *tmp = calloc(1, (size_t)out->len);
  if (!tmp) return bp__fail(BP_ERR_OUT_OF_MEMORY, "group: no host memory to stage %llu bytes",
                            (unsigned long long)out->len);
  copy_view(rel, tmp, (const char *)(uintptr_t)out->host_ptr + out->lo);
  bp_status_t st = bp__call_mem_write(d, NULL, out->dev, 0, tmp, out->len);
  free(tmp);
  return st;
}

/* Copies each tensor into member memory and points it there: inputs by
 * their byte extent, the output (last) by its elements. */
static bp_status_t stage_in(bp__device_t *d, stage_t *st, int n) {
  for (int i = 0; i < n; i++) {
    bp_plugin_tensor_t *t = st[i].t;
    if (!t->ptr) continue; /* an absent optional tensor */
    uint64_t hi;
    extent(t, &st[i].lo, &hi);
    st[i].len = hi - st[i].lo;
    st[i].host_ptr = t->ptr;
    bp_status_t s = bp__call_mem_alloc(d, st[i].len ? st[i].len : 64, &st[i].dev);
    if (s != BP_OK) return s;
    t->ptr = st[i].dev;
    t->offset -= st[i].lo;
    if (!st[i].len) continue;
    if (i == n - 1) s = stage_output_in(d, &st[i], t);
    else s = bp__call_mem_write(d, NULL, st[i].dev, 0, (const char *)(uintptr_t)st[i].host_ptr + st[i].lo, st[i].len);
    if (s != BP_OK) return s;
  }
  return BP_OK;
}

/* Reads the output's extent back and scatters its elements into place. */
static bp_status_t stage_out(bp__device_t *d, const stage_t *out) {
  if (!out->dev || !out->len) return BP_OK;
  char *tmp = malloc((size_t)out->len);
  if (!tmp) return bp__fail(BP_ERR_OUT_OF_MEMORY, "group: no host memory to stage %llu bytes back",
                            (unsigned long long)out->len);
  bp_status_t st = bp__call_mem_read(d, NULL, tmp, out->dev, 0, out->len);
  if (st == BP_OK) {
    bp_plugin_tensor_t view = *out->t; /* offset relative to the member copy */
    copy_view(&view, (char *)(uintptr_t)out->host_ptr + out->lo, tmp);
  }
  free(tmp);
  return st;
}

static bp_status_t run_staged(bp__stream_t *s, bp_op_t op, const void *args) {
  bp__device_t *d = s->device;
  size_t size = bp__op_args_size(op);
  _Alignas(16) unsigned char copy[ARGS_MAX];
  if (size == 0 || size > sizeof copy) return bp__fail(BP_ERR_INTERNAL, "group: op %d cannot be staged", (int)op);
  memcpy(copy, args, size);
  bp__op_strip_hints(op, copy);
  bp_plugin_tensor_t *t[MAX_TENSORS];
  int n = op_tensors(op, copy, t);
  if (n == 0)
    return bp__fail(BP_ERR_UNSUPPORTED, "group: %s cannot be staged to '%s' (its memory is not host memory)",
                    bp_op_name(op), d->entry.info.name);
  stage_t st[MAX_TENSORS];
  memset(st, 0, sizeof st);
  for (int i = 0; i < n; i++) st[i].t = t[i];
  bp_status_t rc = stage_in(d, st, n);
  if (rc == BP_OK) rc = bp__call_op(s, op, copy);
  if (rc == BP_OK) rc = bp__call_stream_sync(d, s->handle);
  if (rc == BP_OK) rc = stage_out(d, &st[n - 1]);
  for (int i = 0; i < n; i++)
    if (st[i].dev) bp__call_mem_free(d, st[i].dev);
  return rc;
}

bp_status_t bp__group_run_on(bp__stream_t *s, bp_op_t op, const void *args) {
  if (!host_memory(s->device)) return run_staged(s, op, args);
  bp_status_t st = bp__call_op(s, op, args);
  if (st == BP_OK) st = bp__call_stream_sync(s->device, s->handle);
  return st;
}
