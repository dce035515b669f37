/*
 * test_attention_mask.c — bp_attention_ex's masks beyond causal on every
 * device the context lists, against a double reference of its own: key
 * lengths (padding, with a length of 0: a fully masked row), sliding
 * windows (window 1, and wider, with Sq != Skv), an additive bias
 * broadcast from [Sq, Skv], [B, 1, Sq, Skv] and [B, Hq, Sq, Skv], with
 * -inf entries that mask whole rows, ALiBi with the standard slopes (8 and
 * 6 heads: the non-power-of-two rule) and with a slopes tensor, combined
 * with causal and GQA, on every float dtype the device claims. Fully
 * masked rows must be exactly zero. A device that does not claim a mask's
 * feature must refuse it naming the mask (BP_ERR_UNSUPPORTED; these suites
 * open devices without fallback); with fallback on, such a device runs it
 * on one that claims it (PoCL, lavapipe). A group of cpu and cpu-ref splits the
 * masked call over heads and batch; a captured graph replays the masks with
 * the key lengths rebound. Bad options are rejected.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nn_harness.h"
#include "tc.h"

typedef struct mask_case {
  int64_t B, Hq, Hkv, Sq, Skv, D;
  bool causal;
  int window;
  bool lens; /* kv_lens: Skv, then shorter, then 0 */
  int bias;  /* 0 none, 1 [Sq, Skv], 2 [B, 1, Sq, Skv], 3 [B, Hq, Sq, Skv] with -inf rows */
  int alibi; /* 0 none, 1 standard, 2 slopes tensor */
  uint32_t feature;
} mask_case_t;

#define F_LENS BP_FEATURE_ATTENTION_KV_LENS
#define F_WIN BP_FEATURE_ATTENTION_WINDOW
#define F_BIAS BP_FEATURE_ATTENTION_BIAS
#define F_ALIBI BP_FEATURE_ATTENTION_ALIBI

static const mask_case_t mask_cases[] = {
    {3, 2, 1, 5, 7, 4, false, 0, true, 0, 0, F_LENS},
    {3, 4, 2, 7, 7, 8, true, 0, true, 0, 0, F_LENS},
    {1, 2, 2, 9, 9, 4, false, 1, false, 0, 0, F_WIN},
    {2, 3, 1, 6, 11, 5, false, 3, false, 0, 0, F_WIN},
    {1, 2, 1, 13, 5, 4, true, 2, false, 0, 0, F_WIN}, /* Sq > Skv: rows fully masked */
    {2, 2, 2, 5, 6, 3, false, 0, false, 1, 0, F_BIAS},
    {2, 4, 2, 5, 6, 7, true, 0, false, 2, 0, F_BIAS},
    {2, 2, 1, 4, 9, 4, false, 0, false, 3, 0, F_BIAS},
    {1, 8, 8, 6, 6, 4, true, 0, false, 0, 1, F_ALIBI},
    {1, 6, 3, 3, 10, 4, false, 0, false, 0, 1, F_ALIBI},
    {2, 4, 2, 5, 5, 4, false, 0, false, 0, 2, F_ALIBI},
    {2, 4, 2, 9, 12, 8, true, 4, true, 1, 1, F_LENS | F_WIN | F_BIAS | F_ALIBI},
};

static double std_slope(int64_t h, int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return h < p ? pow(2.0, -8.0 * (double)(h + 1) / (double)p)
               : pow(2.0, -4.0 * (double)(2 * (h - p) + 1) / (double)p);
}

typedef struct mask_data {
  double *q, *k, *v, *bias, *slopes;
  int32_t *lens;
  int64_t bias_shape[4];
  int bias_rank;
} mask_data_t;

static int64_t lens_of(const mask_case_t *c, int64_t b) {
  return b == 0 ? c->Skv : b == 1 ? 0 : c->Skv / 2 + 1;
}

/* out[b,h,i,:] in double; returns the number of fully masked rows. */
static int64_t mask_reference(const mask_case_t *c, const mask_data_t *d, double scale,
                              double *out) {
  int64_t D = c->D, masked = 0, bs4[4] = {c->B, c->Hq, c->Sq, c->Skv};
  double *s = malloc(sizeof(double) * (size_t)(c->Skv + 1));
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t h = 0; h < c->Hq; h++)
      for (int64_t i = 0; i < c->Sq; i++) {
        int64_t g = h / (c->Hq / c->Hkv), at = i + c->Skv - c->Sq;
        double mx = -INFINITY, slope = c->alibi == 1   ? std_slope(h, c->Hq)
                                       : c->alibi == 2 ? d->slopes[h]
                                                       : 0;
        for (int64_t j = 0; j < c->Skv; j++) {
          bool vis = !((c->causal || c->window) && j > at) && !(c->window && j <= at - c->window) &&
                     !(c->lens && j >= d->lens[b]);
          double dot = 0;
          for (int64_t x = 0; x < D; x++)
            dot += d->q[((b * c->Hq + h) * c->Sq + i) * D + x] *
                   d->k[((b * c->Hkv + g) * c->Skv + j) * D + x];
          double sc = scale * dot - slope * fabs((double)(at - j));
          if (c->bias)
            sc += d->bias[tc_bcast_index(4, bs4, ((b * c->Hq + h) * c->Sq + i) * c->Skv + j,
                                         d->bias_rank, d->bias_shape)];
          s[j] = vis ? sc : -INFINITY;
          if (s[j] > mx) mx = s[j];
        }
        double sum = 0;
        for (int64_t j = 0; j < c->Skv; j++) sum += s[j] = mx == -INFINITY ? 0 : exp(s[j] - mx);
        masked += mx == -INFINITY;
        for (int64_t x = 0; x < D; x++) {
          double acc = 0;
          for (int64_t j = 0; j < c->Skv && mx != -INFINITY; j++)
            acc += s[j] * d->v[((b * c->Hkv + g) * c->Skv + j) * D + x];
          out[((b * c->Hq + h) * c->Sq + i) * D + x] = mx == -INFINITY ? 0 : acc / sum;
        }
      }
  free(s);
  return masked;
}

/* The bias values: mostly small, with a -inf row per case kind 3. */
static void fill_bias(const mask_case_t *c, mask_data_t *d, bp_dtype_t dt, tc_rng_t *rng) {
  int64_t *s = d->bias_shape;
  d->bias_rank = c->bias == 1 ? 2 : 4;
  if (c->bias == 1)
    s[0] = c->Sq, s[1] = c->Skv;
  else
    s[0] = c->B, s[1] = c->bias == 2 ? 1 : c->Hq, s[2] = c->Sq, s[3] = c->Skv;
  int64_t n = tc_numel(d->bias_rank, s);
  d->bias = malloc(sizeof(double) * (size_t)n);
  tc_rng_fill(rng, dt, -2, 2, d->bias, n);
  if (c->bias == 3) /* row 1 of every (b, h): all keys -inf */
    for (int64_t r = 0; r < c->B * c->Hq; r++)
      for (int64_t j = 0; j < c->Skv; j++) d->bias[(r * c->Sq + 1) * c->Skv + j] = -INFINITY;
}

static void mask_one(tc_env_t *e, uint32_t claimed, bp_dtype_t dt, const mask_case_t *c,
                     tc_rng_t *rng) {
  int64_t qs[4] = {c->B, c->Hq, c->Sq, c->D}, ks[4] = {c->B, c->Hkv, c->Skv, c->D};
  int64_t nq = tc_numel(4, qs), nk = tc_numel(4, ks), hs[1] = {c->Hq}, bsz[1] = {c->B};
  mask_data_t d = {0};
  d.q = malloc(sizeof(double) * (size_t)nq), d.k = malloc(sizeof(double) * (size_t)nk);
  d.v = malloc(sizeof(double) * (size_t)nk);
  double *ref = malloc(sizeof(double) * (size_t)nq), lensd[8],
         *slopes = malloc(sizeof(double) * (size_t)c->Hq);
  d.lens = malloc(sizeof(int32_t) * (size_t)c->B);
  tc_rng_fill(rng, dt, -1, 1, d.q, nq), tc_rng_fill(rng, dt, -1, 1, d.k, nk),
      tc_rng_fill(rng, dt, -1, 1, d.v, nk);
  for (int64_t b = 0; b < c->B; b++) d.lens[b] = (int32_t)lens_of(c, b), lensd[b] = d.lens[b];
  for (int64_t h = 0; h < c->Hq; h++) slopes[h] = 0.125 * (double)(h + 1);
  d.slopes = slopes;
  if (c->bias) fill_bias(c, &d, dt, rng);
  tc_tensor_t Q = tc_tensor(e, dt, 4, qs, TC_STRIDED, d.q),
              K = tc_tensor(e, dt, 4, ks, TC_CONTIG, d.k);
  tc_tensor_t V = tc_tensor(e, dt, 4, ks, TC_PERMUTED, d.v),
              O = tc_tensor(e, dt, 4, qs, TC_STRIDED, NULL);
  tc_tensor_t L = tc_tensor(e, BP_I32, 1, bsz, TC_CONTIG, lensd),
              S = tc_tensor(e, BP_F32, 1, hs, TC_CONTIG, slopes);
  tc_tensor_t Bi =
      tc_tensor(e, dt, c->bias ? d.bias_rank : 1, c->bias ? d.bias_shape : hs, TC_STRIDED, d.bias);
  bp_attention_options_t o = {.struct_size = sizeof o,
                              .causal = c->causal,
                              .window = c->window,
                              .kv_lens = c->lens ? &L.t : NULL,
                              .bias = c->bias ? &Bi.t : NULL,
                              .alibi = c->alibi == 1,
                              .alibi_slopes = c->alibi == 2 ? &S.t : NULL};
  char what[200];
  snprintf(what, sizeof what,
           "attention_ex B%lld Hq%lld Hkv%lld Sq%lld Skv%lld D%lld causal %d window %d lens %d "
           "bias %d alibi %d",
           (long long)c->B, (long long)c->Hq, (long long)c->Hkv, (long long)c->Sq,
           (long long)c->Skv, (long long)c->D, c->causal, c->window, c->lens, c->bias, c->alibi);
  bp_status_t st = bp_attention_ex(e->s, &Q.t, &K.t, &V.t, &o, &O.t);
  if ((claimed & c->feature) != c->feature) {
    tc_expect_reject(e, st, BP_ERR_UNSUPPORTED, NULL, "%s on a device without the feature", what);
  } else if (tc_expect_status(e, st, BP_OK, "%s", what)) {
    double *y = tc_download(&O);
    int64_t masked = mask_reference(c, &d, 1 / sqrt((double)c->D), ref);
    tc_expect_close(e, dt, y, ref, nq, (double)c->Skv, "%s", what);
    for (int64_t i = 0; i < nq; i++)
      if (ref[i] == 0 && y[i] != 0 && masked) {
        print_error("FAIL [%s %s] %s: masked row element %lld is %g, not 0\n", e->name,
                    bp_dtype_name(dt), what, (long long)i, y[i]);
        tc_failures++;
        break;
      }
    free(y);
  }
  tc_tensor_free(&Q), tc_tensor_free(&K), tc_tensor_free(&V), tc_tensor_free(&O);
  tc_tensor_free(&L), tc_tensor_free(&S), tc_tensor_free(&Bi);
  free(d.q), free(d.k), free(d.v), free(d.bias), free(d.lens), free(ref), free(slopes);
}

static void test_masks_every_device(void **state) {
  (void)state;
  TC_BEGIN();
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  uint32_t count = 0;
  assert_int_equal(bp_context_device_count(ctx, &count), BP_OK);
  tc_rng_t rng;
  tc_rng_seed(&rng, 2804);
  for (uint32_t rank = 0; rank < count; rank++) {
    tc_env_t e;
    bp_device_entry_t entry;
    if (!nn_open_rank(ctx, rank, &e, &entry)) continue;
    uint32_t claimed = entry.info.op_features[BP_OP_ATTENTION];
    int ran = 0;
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&e, BP_OP_ATTENTION, dt)) continue;
      for (size_t i = 0; i < sizeof mask_cases / sizeof *mask_cases; i++, ran++)
        mask_one(&e, claimed, dt, &mask_cases[i], &rng);
    }
    printf("device %s: %d mask cases, features 0x%x\n", e.name, ran, claimed);
    tc_env_close(&e);
  }
  bp_context_destroy(ctx);
  TC_END();
}

/* On a device that does not claim the masks (PoCL, lavapipe), automatic
 * fallback runs a masked call on a device that does, with the same result,
 * and records the reason BP_FALLBACK_FEATURE. */
static void test_masks_fall_back(void **state) {
  (void)state;
  TC_BEGIN();
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  uint32_t count = 0, tried = 0;
  assert_int_equal(bp_context_device_count(ctx, &count), BP_OK);
  tc_rng_t rng;
  tc_rng_seed(&rng, 2807);
  for (uint32_t rank = 0; rank < count; rank++) {
    bp_device_entry_t entry;
    assert_int_equal(bp_context_device_entry(ctx, rank, &entry), BP_OK);
    if (entry.info.op_features[BP_OP_ATTENTION] & F_WIN) continue;
    char sel[16];
    snprintf(sel, sizeof sel, "%u", rank);
    tc_env_t e = {.ctx = ctx};
    assert_int_equal(bp_device_open(ctx, sel, NULL, &e.dev), BP_OK); /* fallback on */
    assert_int_equal(bp_stream_create(e.dev, &e.s), BP_OK);
    snprintf(e.name, sizeof e.name, "%s with fallback", entry.info.name);
    if (tc_supports(&e, BP_OP_ATTENTION, BP_F32)) {
      const mask_case_t c = {2, 3, 1, 6, 11, 5, false, 3, true, 1, 0, F_LENS | F_WIN | F_BIAS};
      mask_one(&e, c.feature, BP_F32, &c, &rng);
      bp_fallback_stat_t st[8] = {{.struct_size = sizeof st[0]}};
      uint32_t n = 0;
      assert_int_equal(bp_device_fallback_stats(e.dev, st, 8, &n), BP_OK);
      bool seen = false;
      for (uint32_t i = 0; i < n && i < 8; i++)
        seen |= st[i].op == BP_OP_ATTENTION && st[i].reason == BP_FALLBACK_FEATURE;
      tc_expect_status(&e, seen ? BP_OK : BP_ERR_INTERNAL, BP_OK,
                       "a fallback for the feature is recorded");
      tried++;
    }
    bp_stream_destroy(e.s);
    bp_device_close(e.dev);
  }
  printf("%u device(s) without the masks fell back\n", tried);
  if (!tried) tc_checks++; /* every device here claims them: nothing to fall back from */
  bp_context_destroy(ctx);
  TC_END();
}

/* The cpu devices claim every mask (the reference runs them). */
static void test_masks_claimed_on_cpu(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  for (int d = 0; d < su->count; d++) {
    bp_device_entry_t entry;
    assert_int_equal(bp_device_entry(su->env[d].dev, &entry), BP_OK);
    tc_checks++;
    if (entry.info.op_features[BP_OP_ATTENTION] != (F_LENS | F_WIN | F_BIAS | F_ALIBI))
      print_error("FAIL %s claims masks 0x%x\n", su->env[d].name,
                  entry.info.op_features[BP_OP_ATTENTION]),
          tc_failures++;
  }
  TC_END();
}

/* A group of cpu and cpu-ref splits attention over kv heads or the batch:
 * the bias, key lengths and slopes must follow, and standard ALiBi keep
 * each head's slope. */
static void test_masks_group(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_env_t g;
  char dir[64] = "/tmp/bp-test-mask-XXXXXX";
  nn_group_open(su->ctx, dir, &g);
  bp_device_entry_t entry;
  assert_int_equal(bp_device_entry(g.dev, &entry), BP_OK);
  tc_rng_t rng;
  tc_rng_seed(&rng, 2806);
  const mask_case_t cases[] = {
      {1, 8, 4, 5, 7, 4, true, 0, false, 3, 1, F_BIAS | F_ALIBI},       /* over kv heads */
      {1, 4, 2, 5, 7, 4, false, 0, false, 0, 2, F_ALIBI},               /* slopes tensor */
      {3, 2, 1, 6, 6, 4, true, 3, true, 2, 0, F_LENS | F_WIN | F_BIAS}, /* over the batch */
  };
  for (size_t i = 0; i < 3; i++)
    mask_one(&g, entry.info.op_features[BP_OP_ATTENTION], BP_F32, &cases[i], &rng);
  assert_int_equal(entry.info.op_features[BP_OP_ATTENTION], F_LENS | F_WIN | F_BIAS | F_ALIBI);
  nn_group_close(&g, dir);
  TC_END();
}

/* A captured attention_ex replays its masks, and with the key lengths'
 * buffer rebound to other lengths (the op table lists the masks among
 * attention's tensors). */
static void test_masks_graph(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  const mask_case_t c = {2, 2, 1, 4, 6, 4, true, 0, true, 1, 0, F_LENS | F_BIAS};
  for (int dv = 0; dv < su->count; dv++) {
    tc_env_t *e = &su->env[dv];
    int64_t qs[4] = {2, 2, 4, 4}, ks[4] = {2, 1, 6, 4}, bsz[1] = {2}, bias_s[2] = {4, 6};
    double q[64], k[48], v[48], bias[24], ref[64], l1[2] = {6, 0}, l2[2] = {3, 5};
    for (int i = 0; i < 64; i++) q[i] = (i % 9) * 0.25 - 1;
    for (int i = 0; i < 48; i++) k[i] = (i % 7) * 0.25 - 0.75, v[i] = (i % 5) * 0.5 - 1;
    for (int i = 0; i < 24; i++) bias[i] = (i % 4) * 0.5 - 0.75;
    tc_tensor_t Q = tc_tensor(e, BP_F32, 4, qs, TC_CONTIG, q),
                K = tc_tensor(e, BP_F32, 4, ks, TC_CONTIG, k);
    tc_tensor_t V = tc_tensor(e, BP_F32, 4, ks, TC_CONTIG, v),
                O = tc_tensor(e, BP_F32, 4, qs, TC_CONTIG, NULL);
    tc_tensor_t L1 = tc_tensor(e, BP_I32, 1, bsz, TC_CONTIG, l1),
                L2 = tc_tensor(e, BP_I32, 1, bsz, TC_CONTIG, l2);
    tc_tensor_t Bi = tc_tensor(e, BP_F32, 2, bias_s, TC_CONTIG, bias);
    bp_attention_options_t o = {
        .struct_size = sizeof o, .causal = true, .kv_lens = &L1.t, .bias = &Bi.t};
    bp_graph_t *g = NULL;
    assert_int_equal(bp_stream_begin_capture(e->s), BP_OK);
    bp_status_t st = bp_attention_ex(e->s, &Q.t, &K.t, &V.t, &o, &O.t);
    assert_int_equal(bp_stream_end_capture(e->s, &g), BP_OK);
    if (tc_expect_status(e, st, BP_OK, "captured attention_ex")) {
      const double *lens[2] = {l1, l2};
      for (int run = 0; run < 2; run++) {
        if (run == 1) assert_int_equal(bp_graph_rebind(g, L1.buf, L2.buf), BP_OK);
        tc_expect_status(e, bp_graph_launch(g, e->s), BP_OK, "graph launch %d", run);
        int32_t li[2] = {(int32_t)lens[run][0], (int32_t)lens[run][1]};
        mask_data_t d = {q, k, v, bias, NULL, li, {4, 6}, 2};
        mask_reference(&c, &d, 0.5, ref);
        double *y = tc_download(&O);
        tc_expect_close(e, BP_F32, y, ref, 64, 6, "graph launch %d (kv_lens %s)", run,
                        run ? "rebound" : "as captured");
        free(y);
      }
    }
    bp_graph_destroy(g);
    tc_tensor_free(&Q), tc_tensor_free(&K), tc_tensor_free(&V), tc_tensor_free(&O);
    tc_tensor_free(&L1), tc_tensor_free(&L2), tc_tensor_free(&Bi);
  }
  TC_END();
}

static void test_mask_errors(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_env_t *e = &su->env[0];
  int64_t qs[4] = {2, 4, 3, 8}, ks[4] = {2, 2, 5, 8}, l3[1] = {3}, h3[1] = {3}, bb[2] = {4, 5};
  tc_tensor_t Q = tc_tensor(e, BP_F32, 4, qs, TC_CONTIG, NULL),
              K = tc_tensor(e, BP_F32, 4, ks, TC_CONTIG, NULL);
  tc_tensor_t V = tc_tensor(e, BP_F32, 4, ks, TC_CONTIG, NULL),
              O = tc_tensor(e, BP_F32, 4, qs, TC_CONTIG, NULL);
  tc_tensor_t L3 = tc_tensor(e, BP_I32, 1, l3, TC_CONTIG, NULL),
              LF = tc_tensor(e, BP_F32, 1, l3, TC_CONTIG, NULL);
  tc_tensor_t S3 = tc_tensor(e, BP_F32, 1, h3, TC_CONTIG, NULL),
              BB = tc_tensor(e, BP_F32, 2, bb, TC_CONTIG, NULL);
  bp_attention_options_t o = {.struct_size = sizeof o, .window = -1};
  tc_expect_reject(e, bp_attention_ex(e->s, &Q.t, &K.t, &V.t, &o, &O.t), BP_ERR_INVALID_ARGUMENT,
                   "window", "window -1");
  o.window = 0, o.kv_lens = &L3.t;
  tc_expect_reject(e, bp_attention_ex(e->s, &Q.t, &K.t, &V.t, &o, &O.t), BP_ERR_INVALID_ARGUMENT,
                   "kv_lens", "kv_lens [3] for batch 2");
  o.kv_lens = &LF.t;
  tc_expect_reject(e, bp_attention_ex(e->s, &Q.t, &K.t, &V.t, &o, &O.t), BP_ERR_INVALID_ARGUMENT,
                   "kv_lens", "f32 kv_lens");
  o.kv_lens = NULL, o.alibi_slopes = &S3.t;
  tc_expect_reject(e, bp_attention_ex(e->s, &Q.t, &K.t, &V.t, &o, &O.t), BP_ERR_INVALID_ARGUMENT,
                   "alibi_slopes", "3 slopes for 4 heads");
  o.alibi = true;
  tc_expect_reject(e, bp_attention_ex(e->s, &Q.t, &K.t, &V.t, &o, &O.t), BP_ERR_INVALID_ARGUMENT,
                   "alibi", "alibi and slopes");
  o.alibi = false, o.alibi_slopes = NULL, o.bias = &BB.t;
  tc_expect_reject(e, bp_attention_ex(e->s, &Q.t, &K.t, &V.t, &o, &O.t), BP_ERR_INVALID_ARGUMENT,
                   "bias", "bias [4, 5] against [.., 3, 5]");
  o.bias = &O.t;
  tc_expect_reject(e, bp_attention_ex(e->s, &Q.t, &K.t, &V.t, &o, &O.t), BP_ERR_INVALID_ARGUMENT,
                   "overlaps", "bias is out");
  o.bias = NULL, o.struct_size = 8;
  tc_expect_reject(e, bp_attention_ex(e->s, &Q.t, &K.t, &V.t, &o, &O.t), BP_ERR_INVALID_ARGUMENT,
                   "struct_size", "short options");
  if (tc_bytes_changed(&O)) print_error("FAIL a rejected call wrote out\n"), tc_failures++;
  tc_tensor_free(&Q), tc_tensor_free(&K), tc_tensor_free(&V), tc_tensor_free(&O);
  tc_tensor_free(&L3), tc_tensor_free(&LF), tc_tensor_free(&S3), tc_tensor_free(&BB);
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_masks_every_device), cmocka_unit_test(test_masks_claimed_on_cpu),
      cmocka_unit_test(test_masks_fall_back),    cmocka_unit_test(test_masks_group),
      cmocka_unit_test(test_masks_graph),        cmocka_unit_test(test_mask_errors),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
