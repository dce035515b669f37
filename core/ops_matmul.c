/*
 * ops_matmul.c — bp_matmul and bp_matmul_ex: NumPy matmul shapes (any
 * number of batch dimensions, broadcasting between a's and b's, rank-1
 * operands) lowered to rank-3 strided batched GEMMs. The batch dimensions
 * are broadcast to the result's, then merged wherever every operand steps
 * through them with one stride; what is left beyond one dimension becomes
 * a loop here, one GEMM per outer index, so a plugin only ever sees
 * C[b] = alpha A[b]·B[b] + beta C[b] over rank-3 views.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

enum { A_, B_, C_, BIAS_, NT_ };

/* The operands as views of one common rank nb + 2: batch dims first. */
typedef struct mm_views {
  bp_tensor_t t[NT_];
  int nb; /* batch dimensions */
  bool has_bias;
} mm_views_t;

static void shape_text(const int64_t *shape, int rank, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < rank && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* A rank-1 a is one row [1, k]; a rank-1 b one column [k, 1]. */
static void as_matrix(const bp_tensor_t *t, bool row, bp_tensor_t *out) {
  *out = *t;
  if (t->rank != 1) return;
  out->rank = 2;
  int at = row ? 0 : 1;
  out->shape[1 - at] = t->shape[0];
  out->strides[1 - at] = t->strides[0];
  out->shape[at] = 1;
  out->strides[at] = 0;
}

/* The broadcast of a's and b's batch dimensions, right-aligned. */
static bp_status_t batch_shape(const char *op, const bp_tensor_t *a, const bp_tensor_t *b,
                               int64_t *shape, int *out_nb) {
  int na = a->rank - 2, nbb = b->rank - 2, nb = na > nbb ? na : nbb;
  for (int i = 0; i < nb; i++) {
    int ia = i - (nb - na), ib = i - (nb - nbb);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char sa[160], sb[160];
      shape_text(a->shape, a->rank, sa, sizeof sa);
      shape_text(b->shape, b->rank, sb, sizeof sb);
      return bp__fail(
          BP_ERR_INVALID_ARGUMENT,
          "%s: the batch dimensions of a %s and b %s do not broadcast (%lld against %lld)", op, sa,
          sb, (long long)da, (long long)db);
    }
    shape[i] = da == 1 ? db : da;
  }
  *out_nb = nb;
  return BP_OK;
}

/* Checks c against the result's shape and gives its view with the rank-1
 * operands' axes put back as size 1. */
static bp_status_t result_view(const char *op, const bp_tensor_t *a, const bp_tensor_t *b,
                               const bp_tensor_t *c, const int64_t *bshape, int nb,
                               bp_tensor_t *out) {
  int64_t want[BP_MAX_RANK + 2];
  int r = 0;
  for (int i = 0; i < nb; i++) want[r++] = bshape[i];
  if (a->rank > 1) want[r++] = a->shape[a->rank - 2];
  if (b->rank > 1) want[r++] = b->shape[b->rank - 1];
  bool same = c->rank == r;
  for (int i = 0; same && i < r; i++) same = c->shape[i] == want[i];
  if (!same) {
    char sc[160], sw[160];
    shape_text(c->shape, c->rank, sc, sizeof sc);
    shape_text(want, r, sw, sizeof sw);
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: c is %s; a · b is %s", op, sc, sw);
  }
  *out = *c;
  out->rank = nb + 2;
  int j = nb;
  for (int i = 0; i < nb; i++) out->shape[i] = c->shape[i], out->strides[i] = c->strides[i];
  out->shape[nb] = a->rank > 1 ? c->shape[j] : 1;
  out->strides[nb] = a->rank > 1 ? c->strides[j++] : 0;
  out->shape[nb + 1] = b->rank > 1 ? c->shape[j] : 1;
  out->strides[nb + 1] = b->rank > 1 ? c->strides[j] : 0;
  return BP_OK;
}

/* Broadcasts x's batch dimensions to bshape (stride 0), its matrix kept. */
static void broadcast_batch(bp_tensor_t *x, const int64_t *bshape, int nb) {
  bp_tensor_t r = *x;
  int shift = nb - (x->rank - 2);
  for (int i = 0; i < nb; i++) {
    int j = i - shift;
    int64_t dim = j >= 0 ? x->shape[j] : 1;
    r.shape[i] = bshape[i];
    r.strides[i] = dim == 1 ? 0 : x->strides[j];
  }
  for (int i = 0; i < 2; i++)
    r.shape[nb + i] = x->shape[x->rank - 2 + i], r.strides[nb + i] = x->strides[x->rank - 2 + i];
  r.rank = nb + 2;
  *x = r;
}

/* Drops batch dimensions of size 1 and merges neighbours that every
 * operand steps through with one stride (outer = inner stride * size). */
static void collapse_batch(mm_views_t *v) {
  int n = 0, nt = v->has_bias ? NT_ : BIAS_;
  for (int i = 0; i < v->nb; i++) {
    if (v->t[C_].shape[i] == 1) continue;
    bool merge = n > 0;
    for (int t = 0; merge && t < nt; t++)
      merge = v->t[t].strides[n - 1] == v->t[t].strides[i] * v->t[t].shape[i];
    for (int t = 0; t < nt; t++) {
      bp_tensor_t *x = &v->t[t];
      if (merge) {
        x->shape[n - 1] *= x->shape[i];
        x->strides[n - 1] = x->strides[i];
      } else {
        x->shape[n] = x->shape[i];
        x->strides[n] = x->strides[i];
      }
    }
    n += !merge;
  }
  for (int t = 0; t < nt; t++) {
    bp_tensor_t *x = &v->t[t];
    memmove(&x->shape[n], &x->shape[v->nb], 2 * sizeof x->shape[0]);
    memmove(&x->strides[n], &x->strides[v->nb], 2 * sizeof x->strides[0]);
    x->rank = n + 2;
  }
  v->nb = n;
}

/* The rank-3 view [batch, rows, cols] of x at outer index o (over every
 * batch dimension but the last), with a batch of 1 when it has none. */
static void slice3(const bp_tensor_t *x, int nb, int64_t o, bp_tensor_t *out) {
  *out = *x;
  int64_t off = 0;
  for (int i = nb - 2; i >= 0; i--) {
    off += (o % x->shape[i]) * x->strides[i];
    o /= x->shape[i];
  }
  out->offset = (uint64_t)((int64_t)x->offset + off * (int64_t)bp_dtype_size(x->dtype));
  out->rank = 3;
  out->shape[0] = nb ? x->shape[nb - 1] : 1;
  out->strides[0] = nb ? x->strides[nb - 1] : 0;
  for (int i = 0; i < 2; i++)
    out->shape[1 + i] = x->shape[nb + i], out->strides[1 + i] = x->strides[nb + i];
}

/* Builds the four views with the batch dimensions broadcast and merged. */
static bp_status_t build_views(bp__stream_t *s, const char *op, const bp_tensor_t *a,
                               const bp_tensor_t *b, const bp_tensor_t *c,
                               const bp_gemm_epilogue_t *epi, mm_views_t *v, bp__epilogue_t *e) {
  bp_tensor_t a2, b2;
  as_matrix(a, true, &a2);
  as_matrix(b, false, &b2);
  if (a2.shape[a2.rank - 1] != b2.shape[b2.rank - 2]) {
    char sa[160], sb[160];
    shape_text(a->shape, a->rank, sa, sizeof sa);
    shape_text(b->shape, b->rank, sb, sizeof sb);
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: a %s and b %s do not chain: a has %lld columns, b %lld rows", op, sa, sb,
                    (long long)a2.shape[a2.rank - 1], (long long)b2.shape[b2.rank - 2]);
  }
  int64_t bshape[BP_MAX_RANK];
  bp_status_t st = batch_shape(op, &a2, &b2, bshape, &v->nb);
  if (st == BP_OK) st = result_view(op, a, b, c, bshape, v->nb, &v->t[C_]);
  if (st == BP_OK) st = bp__epilogue_init(s, op, epi, c, e);
  if (st != BP_OK) return st;
  broadcast_batch(&a2, bshape, v->nb);
  broadcast_batch(&b2, bshape, v->nb);
  v->t[A_] = a2;
  v->t[B_] = b2;
  v->has_bias = e->has_bias;
  if (e->has_bias) {
    /* The bias has c's shape: give it c's view with the rank-1 axes back. */
    bp_tensor_t cb = *c;
    cb.buffer = e->bias.buffer, cb.offset = e->bias.offset;
    memcpy(cb.strides, e->bias.strides, sizeof cb.strides);
    if ((st = result_view(op, a, b, &cb, bshape, v->nb, &v->t[BIAS_])) != BP_OK) return st;
    v->t[BIAS_].dtype = e->bias.dtype;
  }
  collapse_batch(v);
  return BP_OK;
}

bp_status_t bp_matmul_ex(bp_stream_t *sh, double alpha, const bp_tensor_t *a, const bp_tensor_t *b,
                         double beta, const bp_tensor_t *c, const bp_gemm_epilogue_t *epilogue) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_matmul", "stream");
  const char *op = "bp_matmul";
  bp_status_t st = BP_OK;
  if (st == BP_OK) st = bp__tensor_check(a, s->device, op, "a");
  if (st == BP_OK) st = bp__tensor_check(b, s->device, op, "b");
  if (st == BP_OK) st = bp__tensor_check(c, s->device, op, "c");
  if (st != BP_OK) return st;
  if (a->rank < 1 || b->rank < 1)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s has rank 0; matmul needs rank >= 1", op,
                    a->rank < 1 ? "a" : "b");
  if (a->dtype != b->dtype || a->dtype != c->dtype || !bp__dtype_is_float(a->dtype))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: a, b, c must share one float dtype (%s, %s, %s)",
                    op, bp_dtype_name(a->dtype), bp_dtype_name(b->dtype), bp_dtype_name(c->dtype));
  mm_views_t v;
  bp__epilogue_t e;
  memset(&v, 0, sizeof v);
  if ((st = build_views(s, op, a, b, c, epilogue, &v, &e)) != BP_OK) return st;
  /* Checked whole here, so that no GEMM of the loop fails after another ran. */
  if (bp__tensors_overlap(c, a) || bp__tensors_overlap(c, b))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: c overlaps a or b", op);
  if ((st = bp__check_output(op, &v.t[C_], "c", 0, NULL, NULL, false)) != BP_OK) return st;
  /* An empty c is done: its outer batch count may still be huge (a zero
   * in its rows, columns or last batch dimension), and a loop of empty
   * GEMMs over it would run for ever. */
  for (int i = 0; i < v.t[C_].rank; i++)
    if (v.t[C_].shape[i] == 0) return BP_OK;
  int64_t outer = 1;
  for (int i = 0; i + 1 < v.nb; i++) outer *= v.t[C_].shape[i];
  for (int64_t o = 0; o < outer && st == BP_OK; o++) {
    bp_tensor_t t3[NT_];
    for (int t = 0; t < (v.has_bias ? NT_ : BIAS_); t++) slice3(&v.t[t], v.nb, o, &t3[t]);
    if (v.has_bias) e.bias = t3[BIAS_];
    st = bp__gemm_dispatch(s, op, alpha, &t3[A_], &t3[B_], beta, &t3[C_], &e);
  }
  return st;
}

bp_status_t bp_matmul(bp_stream_t *sh, double alpha, const bp_tensor_t *a, const bp_tensor_t *b,
                      double beta, const bp_tensor_t *c) {
  return bp_matmul_ex(sh, alpha, a, b, beta, c, NULL);
}
