/*
 * ops_attention.c — bp_attention and bp_attention_ex: q, k, v and out
 * checked (naming the tensor in the wrong layout), then the masks of ABI
 * 1.5 (key lengths, sliding window, additive bias, ALiBi) checked and
 * normalised (the bias broadcast to [B, Hq, Sq, Skv] by stride 0), then
 * one plugin call. A device that does not claim a mask's feature bit is
 * refused at the door, which falls back to another device.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

#define NT(...) ((const bp_tensor_t *const[]){__VA_ARGS__})
#define NN(...) ((const char *const[]){__VA_ARGS__})

static bp_status_t expect_rank(const char *op, const bp_tensor_t *t, const char *what, int rank) {
  if (t->rank != rank)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s has rank %d; expected %d", op, what, t->rank,
                    rank);
  return BP_OK;
}

static bp_status_t expect_dim(const char *op, const char *what, int axis, int64_t got,
                              int64_t want) {
  if (got != want)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s.shape[%d] is %lld; expected %lld", op, what,
                    axis, (long long)got, (long long)want);
  return BP_OK;
}

/* Whether q reads right as [batch, seq, heads, head_dim] (the layout many
 * models keep their activations in) and wrong as the [batch, heads, seq,
 * head_dim] bp_attention takes: then q is the tensor to blame, though the
 * first dims that disagree are out's or the head counts. When q and out
 * differ by that swap and both readings of q have valid head counts, k's
 * sequence length decides which of the two is transposed. */
static bool attention_q_transposed(const bp_tensor_t *q, const bp_tensor_t *k,
                                   const bp_tensor_t *out) {
  int64_t d1 = q->shape[1], d2 = q->shape[2], hkv = k->shape[1], skv = k->shape[2];
  if (d1 == d2 || hkv <= 0) return false;
  bool heads_as_given = d1 % hkv == 0, heads_swapped = d2 % hkv == 0;
  bool out_as_q = out->shape[1] == d1 && out->shape[2] == d2;
  bool out_swapped = out->shape[1] == d2 && out->shape[2] == d1;
  if (!heads_as_given) return heads_swapped && (out_as_q || out_swapped);
  return heads_swapped && out_swapped && d1 == skv && d2 != skv;
}

/* When k and v differ by a swap of dims 1 and 2, the one whose dim 1 is
 * not a head count that divides q's heads is transposed: its name, or NULL
 * when that does not single one out. */
static const char *attention_kv_transposed(const bp_tensor_t *q, const bp_tensor_t *k,
                                           const bp_tensor_t *v) {
  if (k->shape[1] == v->shape[1] || k->shape[1] != v->shape[2] || k->shape[2] != v->shape[1])
    return NULL;
  bool k_heads = k->shape[1] > 0 && q->shape[1] % k->shape[1] == 0;
  bool v_heads = v->shape[1] > 0 && q->shape[1] % v->shape[1] == 0;
  return k_heads == v_heads ? NULL : k_heads ? "v" : "k";
}

/* Names the tensor whose shape is wrong: k or v when one of them is
 * transposed, q (every other shape is checked against it), then k and v
 * against q and each other, then out. */
static bp_status_t attention_check_shapes(const char *op, const bp_tensor_t *q,
                                          const bp_tensor_t *k, const bp_tensor_t *v,
                                          const bp_tensor_t *out) {
  const char *kv = attention_kv_transposed(q, k, v);
  if (kv) {
    const bp_tensor_t *t = kv[0] == 'k' ? k : v;
    return bp__fail(
        BP_ERR_INVALID_ARGUMENT,
        "%s: %s is [%lld, %lld, %lld, %lld], whose dims 1 and 2 are swapped against %s's and "
        "whose heads (%s.shape[1]) do not divide q's %lld; k and v are [batch, kv heads, seq, "
        "head_dim]",
        op, kv, (long long)t->shape[0], (long long)t->shape[1], (long long)t->shape[2],
        (long long)t->shape[3], kv[0] == 'k' ? "v" : "k", kv, (long long)q->shape[1]);
  }
  if (attention_q_transposed(q, k, out))
    return bp__fail(
        BP_ERR_INVALID_ARGUMENT,
        "%s: q is [%lld, %lld, %lld, %lld], which fits k (%lld heads) and out only as "
        "[batch, seq, heads, head_dim]; q, k, v and out are [batch, heads, seq, head_dim] "
        "(pass q as a view with dims 1 and 2 swapped)",
        op, (long long)q->shape[0], (long long)q->shape[1], (long long)q->shape[2],
        (long long)q->shape[3], (long long)k->shape[1]);
  int64_t B = q->shape[0], Hq = q->shape[1], Sq = q->shape[2], D = q->shape[3];
  int64_t Hkv = k->shape[1], Skv = k->shape[2], Dv = v->shape[3];
  bp_status_t st;
  if ((st = expect_dim(op, "k", 0, k->shape[0], B)) ||
      (st = expect_dim(op, "k", 3, k->shape[3], D)))
    return st;
  if (Hkv == 0 ? Hq != 0 : Hq % Hkv != 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: q's heads (q.shape[1], %lld) must be a multiple of k's "
                    "heads (k.shape[1], %lld)",
                    op, (long long)Hq, (long long)Hkv);
  if ((st = expect_dim(op, "v", 0, v->shape[0], B)) ||
      (st = expect_dim(op, "v", 1, v->shape[1], Hkv)) ||
      (st = expect_dim(op, "v", 2, v->shape[2], Skv)) ||
      (st = expect_dim(op, "out", 0, out->shape[0], B)) ||
      (st = expect_dim(op, "out", 1, out->shape[1], Hq)) ||
      (st = expect_dim(op, "out", 2, out->shape[2], Sq)) ||
      (st = expect_dim(op, "out", 3, out->shape[3], Dv)))
    return st;
  return BP_OK;
}

/* Checks an optional input of the masks: a valid tensor of this device,
 * not overlapping out, of dtype want. */
static bp_status_t check_mask_tensor(bp__stream_t *s, const char *op, const bp_tensor_t *t,
                                     const char *what, bp_dtype_t want, const bp_tensor_t *out) {
  bp_status_t st = bp__tensor_check(t, s->device, op, what);
  if (st != BP_OK) return st;
  if (t->dtype != want)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s is %s; expected %s", op, what,
                    bp_dtype_name(t->dtype), bp_dtype_name(want));
  if (bp__tensors_overlap(t, out))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: out overlaps %s", op, what);
  return BP_OK;
}

/* A rank-1 tensor of n elements. */
static bp_status_t expect_vector(const char *op, const bp_tensor_t *t, const char *what, int64_t n,
                                 const char *dims) {
  if (t->rank != 1 || t->shape[0] != n)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: %s must be [%lld] (%s); it has rank %d, shape[0] %lld", op, what,
                    (long long)n, dims, t->rank, (long long)(t->rank ? t->shape[0] : 0));
  return BP_OK;
}

/* Checks the masks of o against q and out and writes them into a. */
static bp_status_t masks_to_args(bp__stream_t *s, const char *op, const bp_attention_options_t *o,
                                 const bp_tensor_t *q, const bp_tensor_t *out,
                                 bp_attention_args_t *a) {
  bp_status_t st = BP_OK;
  int64_t B = q->shape[0], Hq = q->shape[1];
  if (o->window < 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: window %d is negative (0: none)", op,
                    (int)o->window);
  if (o->alibi && o->alibi_slopes)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: alibi and alibi_slopes are both set; pass one",
                    op);
  if (Hq > INT32_MAX) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: too many heads for ALiBi", op);
  a->window = o->window;
  if (o->kv_lens &&
      ((st = check_mask_tensor(s, op, o->kv_lens, "kv_lens", BP_I32, out)) ||
       (st = expect_vector(op, o->kv_lens, "kv_lens", B, "one length per batch entry"))))
    return st;
  if (o->alibi_slopes &&
      ((st = check_mask_tensor(s, op, o->alibi_slopes, "alibi_slopes", BP_F32, out)) ||
       (st = expect_vector(op, o->alibi_slopes, "alibi_slopes", Hq, "one slope per q head"))))
    return st;
  if (o->bias) {
    if ((st = check_mask_tensor(s, op, o->bias, "bias", q->dtype, out))) return st;
    bp_tensor_t b = *o->bias;
    int64_t shape[4] = {B, Hq, q->shape[2], a->k.shape[2]};
    if ((st = bp__tensor_broadcast(&b, 4, shape, op, "bias"))) return st;
    bp__tensor_to_plugin(&b, &a->bias);
  }
  if (o->kv_lens) bp__tensor_to_plugin(o->kv_lens, &a->kv_lens);
  if (o->alibi_slopes) bp__tensor_to_plugin(o->alibi_slopes, &a->alibi_slopes);
  if (o->alibi) a->alibi_heads = (int32_t)Hq;
  return BP_OK;
}

static bp_status_t attention_run(bp__stream_t *s, const char *op, const bp_tensor_t *q,
                                 const bp_tensor_t *k, const bp_tensor_t *v,
                                 const bp_attention_options_t *o, const bp_tensor_t *out) {
  bp_status_t st = bp__check_tensors(s, op, 4, NT(q, k, v, out), NN("q", "k", "v", "out"));
  if (st == BP_OK) st = bp__check_float_dtypes(op, 4, NT(q, k, v, out), NN("q", "k", "v", "out"));
  for (int i = 0; st == BP_OK && i < 4; i++)
    st = expect_rank(op, NT(q, k, v, out)[i], NN("q", "k", "v", "out")[i], 4);
  if (st != BP_OK || (st = attention_check_shapes(op, q, k, v, out)) != BP_OK) return st;
  int64_t D = q->shape[3];
  if (!isfinite(o->scale) || o->scale < 0)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "%s: scale must be finite and >= 0 (0 means 1/sqrt(D))", op);
  bp_attention_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.causal = o->causal;
  a.scale = o->scale > 0 ? o->scale : (D > 0 ? 1.0 / sqrt((double)D) : 1.0);
  bp__tensor_to_plugin(q, &a.q);
  bp__tensor_to_plugin(k, &a.k);
  bp__tensor_to_plugin(v, &a.v);
  bp__tensor_to_plugin(out, &a.out);
  if ((st = masks_to_args(s, op, o, q, out, &a)) ||
      (st = bp__check_output(op, out, "out", 3, NT(q, k, v), NN("q", "k", "v"), false)) ||
      (st = bp__require_op(s->device, BP_OP_ATTENTION, q->dtype, op)))
    return st;
  if (bp_tensor_numel(out) == 0) return BP_OK;
  return bp__call_op(s, BP_OP_ATTENTION, &a);
}

bp_status_t bp_attention(bp_stream_t *sh, const bp_tensor_t *q, const bp_tensor_t *k,
                         const bp_tensor_t *v, double scale, bool causal, const bp_tensor_t *out) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_attention", "stream");
  bp_attention_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.scale = scale;
  o.causal = causal;
  return attention_run(s, "bp_attention", q, k, v, &o, out);
}

bp_status_t bp_attention_ex(bp_stream_t *sh, const bp_tensor_t *q, const bp_tensor_t *k,
                            const bp_tensor_t *v, const bp_attention_options_t *options,
                            const bp_tensor_t *out) {
  bp__clear_error();
  BP__ENTER(bp__stream_t, s, sh, BP__H_STREAM, "bp_attention_ex", "stream");
  bp_attention_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  if (options) {
    if (options->struct_size < sizeof o)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: options->struct_size %u is less than %zu",
                      "bp_attention", options->struct_size, sizeof o);
    o = *options;
  }
  return attention_run(s, "bp_attention", q, k, v, &o, out);
}
