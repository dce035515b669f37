/*
 * test_parity.c — every device in the ranked list other than "cpu-ref"
 * (the fast "cpu", Vulkan on lavapipe, OpenCL on PoCL, ... whatever
 * loads) runs each op family and dtype it claims (bp_device_supports) on a
 * moderate shape set, and must agree with "cpu-ref" within the dtype's
 * tolerance (tc.h); random must agree bit for bit. A family / dtype the
 * device does not claim is printed as "unsupported" and must be refused
 * with BP_ERR_UNSUPPORTED, never run. Sizes are small so software devices
 * finish quickly.
 * test_numerics_all_devices runs fixed inputs with known answers on every
 * device, cpu-ref included: tanh near zero and through the denormals,
 * pow's C99 special values, layer / RMS norm of rows whose squares
 * overflow or underflow the accumulator, and uniform random's [a, b) after
 * rounding to f16 / bf16 / f32 / f64 (bit-identical to cpu-ref).
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

#include "tc.h"

/* A case builds its inputs from a fixed seed (the same on every device),
 * runs one call and returns the output values (malloc'd) in *out. */
typedef bp_status_t (*case_fn)(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n);

static tc_tensor_t in(tc_env_t *e, bp_dtype_t dt, int r, const int64_t *s, tc_layout_t l,
                      double lo, double hi, uint64_t seed) {
  tc_rng_t rng;
  tc_rng_seed(&rng, seed);
  int64_t n = tc_numel(r, s);
  double *v = malloc(sizeof(double) * (size_t)(n + 1));
  tc_rng_fill(&rng, dt, lo, hi, v, n);
  tc_tensor_t t = tc_tensor(e, dt, r, s, l, v);
  free(v);
  return t;
}

/* Finishes a case: downloads y when st is OK, frees the tensors. */
static bp_status_t finish(bp_status_t st, tc_tensor_t *y, double **out, int64_t *n, int nfree,
                          tc_tensor_t *f) {
  if (st == BP_OK) {
    *out = tc_download(y);
    *n = y->numel;
  }
  for (int i = 0; i < nfree; i++)
    tc_tensor_free(&f[i]);
  tc_tensor_free(y);
  return st;
}

static bp_status_t c_matmul(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t sa[2] = {31, 13}, sb[2] = {31, 7}, sc[2] = {13, 7};
  tc_tensor_t t[2] = {in(e, dt, 2, sa, TC_STRIDED, -1, 1, 1), in(e, dt, 2, sb, TC_CONTIG, -1, 1, 2)};
  tc_tensor_t y = in(e, dt, 2, sc, TC_CONTIG, -1, 1, 3);
  bp_tensor_t at;
  bp_tensor_transpose(&t[0].t, 0, 1, &at);
  return finish(bp_matmul(e->s, 0.5, &at, &t[1].t, -1.0, &y.t), &y, out, n, 2, t);
}

static bp_status_t c_gemm_batched(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t s1[1] = {3 * 33 * 17}, s2[1] = {3 * 33 * 9}, s3[1] = {3 * 17 * 9};
  tc_tensor_t t[2] = {in(e, dt, 1, s1, TC_CONTIG, -1, 1, 4), in(e, dt, 1, s2, TC_CONTIG, -1, 1, 5)};
  tc_tensor_t y = in(e, dt, 1, s3, TC_CONTIG, -1, 1, 6);
  bp_status_t st = bp_gemm_strided_batched(e->s, dt, BP_COL_MAJOR, BP_TRANS, BP_NO_TRANS, 17, 9, 33, 1.0,
                                           t[0].buf, 0, 33, 33 * 17, t[1].buf, 0, 33, 33 * 9, 0.0,
                                           y.buf, 0, 17, 17 * 9, 3);
  return finish(st, &y, out, n, 2, t);
}

static bp_status_t c_gemv(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t sa[1] = {31 * 13}, sx[1] = {31}, sy[1] = {13};
  tc_tensor_t t[2] = {in(e, dt, 1, sa, TC_CONTIG, -1, 1, 7), in(e, dt, 1, sx, TC_CONTIG, -1, 1, 8)};
  tc_tensor_t y = in(e, dt, 1, sy, TC_CONTIG, -1, 1, 9);
  bp_status_t st = bp_gemv(e->s, dt, BP_ROW_MAJOR, BP_TRANS, 31, 13, 1.5, t[0].buf, 0, 13, t[1].buf,
                           0, 1, 0.5, y.buf, 0, 1);
  return finish(st, &y, out, n, 2, t);
}

static bp_status_t c_conv(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t sx[4] = {2, 4, 9, 9}, sw[4] = {6, 2, 3, 3}, sb[1] = {6}, sy[4] = {2, 6, 5, 9};
  tc_tensor_t t[3] = {in(e, dt, 4, sx, TC_CONTIG, -1, 1, 10), in(e, dt, 4, sw, TC_CONTIG, -1, 1, 11),
                      in(e, dt, 1, sb, TC_CONTIG, -1, 1, 12)};
  tc_tensor_t y = tc_tensor(e, dt, 4, sy, TC_CONTIG, NULL);
  bp_conv2d_params_t p = {.struct_size = sizeof p, .stride_h = 2, .pad_h = 1, .pad_w = 2,
                          .dilation_w = 2, .groups = 2};
  return finish(bp_conv2d(e->s, &p, &t[0].t, &t[1].t, &t[2].t, &y.t), &y, out, n, 3, t);
}

static bp_status_t pool(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n, bool max) {
  const int64_t sx[4] = {2, 3, 9, 11}, sy[4] = {2, 3, 5, 6};
  tc_tensor_t t[1] = {in(e, dt, 4, sx, TC_STRIDED, -2, 2, 13)};
  tc_tensor_t y = tc_tensor(e, dt, 4, sy, TC_CONTIG, NULL);
  bp_pool2d_params_t p = {.struct_size = sizeof p, .kind = max ? BP_POOL_MAX : BP_POOL_AVG,
                          .kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2,
                          .pad_h = 1, .pad_w = 1, .count_include_pad = !max};
  return finish(bp_pool2d(e->s, &p, &t[0].t, &y.t), &y, out, n, 1, t);
}
static bp_status_t c_maxpool(tc_env_t *e, bp_dtype_t dt, double **o, int64_t *n) { return pool(e, dt, o, n, true); }
static bp_status_t c_avgpool(tc_env_t *e, bp_dtype_t dt, double **o, int64_t *n) { return pool(e, dt, o, n, false); }

static bp_status_t c_batch_norm(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t sx[4] = {2, 5, 3, 7}, sc[1] = {5};
  tc_tensor_t t[5] = {in(e, dt, 4, sx, TC_CONTIG, -2, 2, 14), in(e, dt, 1, sc, TC_CONTIG, -1, 1, 15),
                      in(e, dt, 1, sc, TC_CONTIG, 0.5, 2, 16), in(e, dt, 1, sc, TC_CONTIG, -1, 1, 17),
                      in(e, dt, 1, sc, TC_CONTIG, -1, 1, 18)};
  tc_tensor_t y = tc_tensor(e, dt, 4, sx, TC_CONTIG, NULL);
  return finish(bp_batch_norm(e->s, &t[0].t, &t[1].t, &t[2].t, &t[3].t, &t[4].t, 1e-5, &y.t), &y,
                out, n, 5, t);
}

static bp_status_t norm(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n, bool rms) {
  const int64_t sx[2] = {9, 61}, sg[1] = {61};
  tc_tensor_t t[3] = {in(e, dt, 2, sx, TC_PERMUTED, -2, 2, 19), in(e, dt, 1, sg, TC_CONTIG, 0.5, 1.5, 20),
                      in(e, dt, 1, sg, TC_CONTIG, -1, 1, 21)};
  tc_tensor_t y = tc_tensor(e, dt, 2, sx, TC_CONTIG, NULL);
  bp_status_t st = rms ? bp_rms_norm(e->s, &t[0].t, &t[1].t, 1e-6, &y.t)
                       : bp_layer_norm(e->s, &t[0].t, &t[1].t, &t[2].t, 1e-5, &y.t);
  return finish(st, &y, out, n, 3, t);
}
static bp_status_t c_layer_norm(tc_env_t *e, bp_dtype_t dt, double **o, int64_t *n) { return norm(e, dt, o, n, false); }
static bp_status_t c_rms_norm(tc_env_t *e, bp_dtype_t dt, double **o, int64_t *n) { return norm(e, dt, o, n, true); }

static bp_status_t softmax(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n, int axis) {
  const int64_t sx[3] = {3, 17, 29};
  tc_tensor_t t[1] = {in(e, dt, 3, sx, TC_CONTIG, -5, 5, 22)};
  tc_tensor_t y = tc_tensor(e, dt, 3, sx, TC_STRIDED, NULL);
  return finish(bp_softmax(e->s, &t[0].t, axis, axis == 1, &y.t), &y, out, n, 1, t);
}
static bp_status_t c_softmax_last(tc_env_t *e, bp_dtype_t dt, double **o, int64_t *n) { return softmax(e, dt, o, n, -1); }
static bp_status_t c_logsoftmax_mid(tc_env_t *e, bp_dtype_t dt, double **o, int64_t *n) { return softmax(e, dt, o, n, 1); }

static bp_status_t c_attention(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t sq[4] = {2, 4, 5, 16}, sk[4] = {2, 2, 9, 16}, sv[4] = {2, 2, 9, 8}, so[4] = {2, 4, 5, 8};
  tc_tensor_t t[3] = {in(e, dt, 4, sq, TC_CONTIG, -1, 1, 23), in(e, dt, 4, sk, TC_STRIDED, -1, 1, 24),
                      in(e, dt, 4, sv, TC_CONTIG, -1, 1, 25)};
  tc_tensor_t y = tc_tensor(e, dt, 4, so, TC_CONTIG, NULL);
  return finish(bp_attention(e->s, &t[0].t, &t[1].t, &t[2].t, 0, true, &y.t), &y, out, n, 3, t);
}

static bp_status_t c_adam(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t s[1] = {97};
  tc_tensor_t t[3] = {in(e, dt, 1, s, TC_CONTIG, 0.25, 1, 27), in(e, dt, 1, s, TC_CONTIG, -0.5, 0.5, 28),
                      in(e, dt, 1, s, TC_CONTIG, 0.01, 1, 29)};
  tc_tensor_t p = in(e, dt, 1, s, TC_CONTIG, -1, 1, 26);
  bp_adam_params_t prm = {.struct_size = sizeof prm, .lr = 0.05, .beta1 = 0.9, .beta2 = 0.99,
                          .eps = 1e-8, .weight_decay = 0.01, .step = 3, .adamw = true};
  return finish(bp_adam(e->s, &prm, 1, &p.t, &t[0].t, &t[1].t, &t[2].t), &p, out, n, 3, t);
}

static bp_status_t c_unary(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  /* every unary op of ABI 1.4, one row each, on positive inputs (log /
   * sqrt); gelu_tanh, which a device claims apart, is in test_model_ops */
  const int64_t sx[2] = {1, 53}, sy[2] = {BP_UNARY_GELU_TANH, 53};
  tc_tensor_t x = in(e, dt, 2, sx, TC_CONTIG, 0.125, 3, 30);
  tc_tensor_t y = tc_tensor(e, dt, 2, sy, TC_CONTIG, NULL);
  bp_status_t st = BP_OK;
  for (int op = 0; op < BP_UNARY_GELU_TANH && st == BP_OK; op++) {
    bp_tensor_t row = y.t;
    row.shape[0] = 1;
    row.offset += (uint64_t)op * 53 * bp_dtype_size(dt);
    st = bp_unary(e->s, (bp_unary_op_t)op, &x.t, &row);
  }
  return finish(st, &y, out, n, 1, &x);
}

static bp_status_t c_binary(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t sa[2] = {7, 1}, sb[1] = {29}, sy[3] = {BP_BINARY_COUNT, 7, 29};
  tc_tensor_t t[2] = {in(e, dt, 2, sa, TC_CONTIG, 0.25, 2, 31), in(e, dt, 1, sb, TC_STRIDED, 0.5, 2, 32)};
  tc_tensor_t y = tc_tensor(e, dt, 3, sy, TC_CONTIG, NULL);
  bp_status_t st = BP_OK;
  for (int op = 0; op < BP_BINARY_COUNT && st == BP_OK; op++) {
    bp_tensor_t slice = y.t;
    slice.rank = 2;
    slice.shape[0] = 7, slice.shape[1] = 29, slice.strides[0] = 29, slice.strides[1] = 1;
    slice.offset += (uint64_t)op * 7 * 29 * bp_dtype_size(dt);
    st = bp_binary(e->s, (bp_binary_op_t)op, &t[0].t, &t[1].t, &slice);
  }
  return finish(st, &y, out, n, 2, t);
}

static bp_status_t c_reduce(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t sx[3] = {5, 37, 3}, sy[2] = {BP_REDUCE_COUNT, 15};
  tc_tensor_t x = in(e, dt, 3, sx, TC_PERMUTED, 0.8, 1.25, 33);
  tc_tensor_t y = tc_tensor(e, dt, 2, sy, TC_CONTIG, NULL);
  tc_tensor_t idx = tc_tensor(e, BP_I32, 2, sx, TC_CONTIG, NULL); /* [5,3] used */
  bp_status_t st = BP_OK;
  for (int op = 0; op < BP_REDUCE_COUNT && st == BP_OK; op++) {
    bp_tensor_t r = op == BP_REDUCE_ARGMAX ? idx.t : y.t;
    r.rank = 2, r.shape[0] = 5, r.shape[1] = 3, r.strides[0] = 3, r.strides[1] = 1;
    if (op != BP_REDUCE_ARGMAX)
      r.offset += (uint64_t)op * 15 * bp_dtype_size(dt);
    st = bp_reduce(e->s, (bp_reduce_op_t)op, &x.t, 1, &r);
  }
  if (st == BP_OK) { /* argmax indices go into the last row as values */
    double *iv = tc_download(&idx);
    *out = tc_download(&y);
    for (int i = 0; i < 15; i++)
      (*out)[BP_REDUCE_ARGMAX * 15 + i] = iv[i];
    *n = y.numel;
    free(iv);
  }
  tc_tensor_free(&x), tc_tensor_free(&y), tc_tensor_free(&idx);
  return st;
}

static bp_status_t c_fill(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t s[2] = {13, 7};
  tc_tensor_t y = tc_tensor(e, dt, 2, s, TC_STRIDED, NULL);
  return finish(bp_fill(e->s, &y.t, -2.5), &y, out, n, 0, NULL);
}

static bp_status_t c_copy(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t s[3] = {3, 5, 7}, sy[3] = {7, 3, 5};
  const int32_t perm[3] = {2, 0, 1};
  tc_tensor_t x = in(e, dt, 3, s, TC_CONTIG, -50, 50, 34);
  tc_tensor_t y = tc_tensor(e, dt, 3, sy, TC_STRIDED, NULL);
  bp_tensor_t xp;
  bp_tensor_permute(&x.t, perm, &xp);
  return finish(bp_copy(e->s, &xp, &y.t), &y, out, n, 1, &x);
}

static bp_status_t c_cast(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n) {
  const int64_t s[1] = {64};
  tc_tensor_t x = in(e, BP_F32, 1, s, TC_CONTIG, -300, 300, 35);
  tc_tensor_t y = tc_tensor(e, dt, 1, s, TC_STRIDED, NULL);
  return finish(bp_cast(e->s, &x.t, &y.t), &y, out, n, 1, &x);
}

static bp_status_t rnd(tc_env_t *e, bp_dtype_t dt, double **out, int64_t *n, bool normal) {
  const int64_t s[2] = {17, 33};
  tc_tensor_t y = tc_tensor(e, dt, 2, s, TC_PERMUTED, NULL);
  return finish(bp_random(e->s, normal, 77, 3, normal ? 1 : -1, 2, &y.t), &y, out, n, 0, NULL);
}
static bp_status_t c_uniform(tc_env_t *e, bp_dtype_t dt, double **o, int64_t *n) { return rnd(e, dt, o, n, false); }
static bp_status_t c_normal(tc_env_t *e, bp_dtype_t dt, double **o, int64_t *n) { return rnd(e, dt, o, n, true); }

static const struct {
  const char *name;
  bp_op_t op;
  double red;
  bool exact, all_dtypes;
  case_fn fn;
} cases[] = {
    {"matmul", BP_OP_GEMM, 31, false, false, c_matmul},
    {"gemm batched", BP_OP_GEMM, 33, false, false, c_gemm_batched},
    {"gemv", BP_OP_GEMV, 31, false, false, c_gemv},
    {"conv2d", BP_OP_CONV2D, 18, false, false, c_conv},
    {"max pool", BP_OP_POOL2D, 1, true, false, c_maxpool},
    {"avg pool", BP_OP_POOL2D, 9, false, false, c_avgpool},
    {"batch_norm", BP_OP_BATCH_NORM, 1, false, false, c_batch_norm},
    {"layer_norm", BP_OP_LAYER_NORM, 61, false, false, c_layer_norm},
    {"rms_norm", BP_OP_RMS_NORM, 61, false, false, c_rms_norm},
    {"softmax", BP_OP_SOFTMAX, 29, false, false, c_softmax_last},
    {"log_softmax", BP_OP_SOFTMAX, 17, false, false, c_logsoftmax_mid},
    {"attention", BP_OP_ATTENTION, 16, false, false, c_attention},
    {"adam", BP_OP_ADAM, 1, false, false, c_adam},
    {"unary", BP_OP_UNARY, 1, false, false, c_unary},
    {"binary", BP_OP_BINARY, 1, false, false, c_binary},
    {"reduce", BP_OP_REDUCE, 37, false, false, c_reduce},
    {"fill", BP_OP_FILL, 1, true, true, c_fill},
    {"copy", BP_OP_COPY, 1, true, true, c_copy},
    {"cast f32->", BP_OP_CAST, 1, true, true, c_cast},
    {"uniform", BP_OP_RANDOM, 1, true, false, c_uniform},
    {"normal", BP_OP_RANDOM, 1, true, false, c_normal},
};

static const bp_dtype_t every_dtype[BP_DTYPE_COUNT] = {BP_F32, BP_F16, BP_BF16, BP_F64,
                                                       BP_I32, BP_I64, BP_U8};

static void parity_device(tc_env_t *ref, tc_env_t *e, int *ran, int *skipped) {
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
    for (int t = 0; t < (cases[c].all_dtypes ? BP_DTYPE_COUNT : 4); t++) {
      bp_dtype_t dt = every_dtype[t];
      bool claimed = tc_supports(e, cases[c].op, dt) &&
                     (cases[c].op != BP_OP_CAST || tc_supports(e, BP_OP_CAST, BP_F32));
      if (!tc_supports(ref, cases[c].op, dt))
        continue; /* nothing to compare with */
      double *y = NULL, *r = NULL;
      int64_t n = 0, nr = 0;
      bp_status_t st = cases[c].fn(e, dt, &y, &n);
      if (!claimed) {
        printf("  %-14s %-4s unsupported\n", cases[c].name, bp_dtype_name(dt));
        tc_expect_status(e, st, BP_ERR_UNSUPPORTED, "%s on a device that does not claim it",
                         cases[c].name);
        (*skipped)++;
        free(y);
        continue;
      }
      (*ran)++;
      if (tc_expect_status(e, st, BP_OK, "%s", cases[c].name) &&
          tc_expect_status(ref, cases[c].fn(ref, dt, &r, &nr), BP_OK, "%s (reference)", cases[c].name)) {
        assert_int_equal(n, nr);
        bool ok = cases[c].exact
                      ? tc_expect_exact(e, dt, y, r, n, "%s vs cpu-ref", cases[c].name)
                      : tc_expect_close(e, dt, y, r, n, cases[c].red, "%s vs cpu-ref", cases[c].name);
        printf("  %-14s %-4s %s\n", cases[c].name, bp_dtype_name(dt), ok ? "ok" : "FAILED");
      }
      free(y);
      free(r);
    }
}

static void test_parity_all_devices(void **state) {
  (void)state;
  TC_BEGIN();
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  tc_env_t ref;
  assert_true(tc_env_open(&ref, ctx, "cpu-ref"));
  uint32_t count = 0;
  assert_int_equal(bp_context_device_count(ctx, &count), BP_OK);
  int compared = 0;
  char seen[512] = ","; /* backends compared, ",cpu,cuda," */
  for (uint32_t rank = 0; rank < count; rank++) {
    bp_device_entry_t entry;
    assert_int_equal(bp_context_device_entry(ctx, rank, &entry), BP_OK);
    if (!strcmp(entry.info.name, "cpu-ref"))
      continue;
    char sel[16];
    snprintf(sel, sizeof sel, "%u", rank);
    tc_env_t e;
    printf("device %u: %s (%s)\n", rank, entry.info.name, entry.backend);
    if (!tc_env_open(&e, ctx, sel)) {
      print_error("FAIL device '%s' is listed but does not open\n", entry.info.name);
      tc_failures++;
      continue;
    }
    int ran = 0, skipped = 0;
    parity_device(&ref, &e, &ran, &skipped);
    printf("device %s: %d compared, %d unsupported\n", e.name, ran, skipped);
    if (ran == 0) { /* a device that passes by comparing nothing */
      print_error("FAIL device '%s' (%s) compared nothing: it claims none of the parity cases\n",
                  entry.info.name, entry.backend);
      tc_failures++;
    } else if (strlen(seen) + strlen(entry.backend) + 2 < sizeof seen) {
      strcat(seen, entry.backend), strcat(seen, ",");
    }
    compared += ran;
    tc_env_close(&e);
  }
  tc_env_close(&ref);
  bp_context_destroy(ctx);
  assert_true(compared > 0); /* at least "cpu" ran */
  /* A backend a suite asks for (test_gpu_ops.sh: TC_DEVICES=cuda,cpu-ref)
   * must have been compared, not silently absent. */
  char want[256];
  snprintf(want, sizeof want, "%s", getenv("TC_DEVICES") ? getenv("TC_DEVICES") : "");
  char *save = NULL;
  for (char *tok = strtok_r(want, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    tok[strcspn(tok, ":")] = '\0';
    char key[80];
    snprintf(key, sizeof key, ",%s,", tok);
    if (strcmp(tok, "cpu-ref") && !strstr(seen, key)) {
      print_error("FAIL TC_DEVICES names '%s', but no such device was compared\n", tok);
      tc_failures++;
    }
  }
  TC_END();
}

/* ---- numerics: fixed inputs with known answers, on every device -------------
 * Cases an independent harness found wrong (issue 18, items 13 and 14),
 * run on every device, cpu-ref included, against answers computed here, so
 * a wrong reference cannot hide a wrong device: tanh near zero (relative
 * accuracy down through the denormals), pow's IEEE special values, RMS /
 * layer norm of rows whose squares overflow or underflow the dtype, and
 * uniform random's half-open [a, b) after rounding to the dtype (plus bit
 * identity with cpu-ref). */

/* 2^-(p-1) for dtype dt's p significand bits, and its smallest denormal. */
static double dt_eps(bp_dtype_t dt) {
  return dt == BP_F16 ? 0x1p-10 : dt == BP_BF16 ? 0x1p-7 : dt == BP_F64 ? 0x1p-52 : 0x1p-23;
}
static double dt_tiny(bp_dtype_t dt) {
  return dt == BP_F16 ? 0x1p-24 : dt == BP_BF16 ? 0x1p-133 : dt == BP_F64 ? 0x1p-1074 : 0x1p-149;
}

/* Every element within ulps * eps(dt) of the rounded exact value, relative
 * to that value (one denormal step of slack); non-finite values exactly. */
static bool expect_rel(const tc_env_t *e, bp_dtype_t dt, const double *y, const double *exact,
                       const double *x, int64_t n, double ulps, const char *what) {
  for (int64_t i = 0; i < n; i++) {
    double r = tc_round(dt, exact[i]);
    bool ok = isfinite(r) ? fabs(y[i] - r) <= ulps * dt_eps(dt) * fabs(r) + dt_tiny(dt)
                          : (isnan(r) ? isnan(y[i]) : y[i] == r);
    if (!ok) {
      print_error("FAIL [%s %s] %s: x = %.9g gives %.9g, want %.9g (%g ulp allowed)\n", e->name,
                  bp_dtype_name(dt), what, x[i], y[i], r, ulps);
      tc_failures++;
      return false;
    }
  }
  return true;
}

static bool num_tanh(tc_env_t *e, bp_dtype_t dt) {
  /* special points, then a sweep of 10^-6 .. 10^1.2 of alternating sign */
  double xs[19 + 120] = {1e-7, -1e-7, 3e-4, -0.01, 0.1, 0.3, -0.6, 0.7, 2, -5, 20,
                         1e-20, -1e-38, 1e-40, -0x1p-149, 0.0, -0.0, 6e-8, -2e-5};
  for (int k = 0; k < 120; k++)
    xs[19 + k] = (k & 1 ? -1 : 1) * pow(10, -6 + k * 0.06);
  const int64_t n = sizeof xs / sizeof *xs;
  tc_tensor_t X = tc_tensor(e, dt, 1, &n, TC_CONTIG, xs), Y = tc_tensor(e, dt, 1, &n, TC_CONTIG, NULL);
  bool ok = false;
  if (tc_expect_status(e, bp_unary(e->s, BP_UNARY_TANH, &X.t, &Y.t), BP_OK, "tanh")) {
    double *x = tc_values(&X), *y = tc_download(&Y), r[sizeof xs / sizeof *xs];
    for (int64_t i = 0; i < n; i++)
      r[i] = tanh(x[i]);
    /* f16 / bf16 compute in f32 and round once */
    ok = expect_rel(e, dt, y, r, x, n, dt == BP_F16 || dt == BP_BF16 ? 1 : 8, "tanh near zero");
    free(x), free(y);
  }
  tc_tensor_free(&X), tc_tensor_free(&Y);
  return ok;
}

static bool num_pow(tc_env_t *e, bp_dtype_t dt) {
  const double I = INFINITY;
  const double av[] = {-1, -1, -I, -I, -I, -I, -I, -I, -0.5, -0.5, -2, -2, -I, -I,
                       -0.0, -0.0, -0.0, -0.0, 0.0, I, I, 1, NAN, -8, 0.5, 2};
  const double bv[] = {I, -I, 0.5, -0.5, 3, -3, 2, -2, I, -I, I, -I, I, -I,
                       -0.5, 0.5, -3, 3, -I, 0.5, -0.5, NAN, 0, 1.0 / 3, I, -I};
  const int64_t n = sizeof av / sizeof *av;
  tc_tensor_t A = tc_tensor(e, dt, 1, &n, TC_CONTIG, av), B = tc_tensor(e, dt, 1, &n, TC_STRIDED, bv);
  tc_tensor_t Y = tc_tensor(e, dt, 1, &n, TC_CONTIG, NULL);
  bool ok = false;
  if (tc_expect_status(e, bp_binary(e->s, BP_BINARY_POW, &A.t, &B.t, &Y.t), BP_OK, "pow")) {
    double *a = tc_values(&A), *b = tc_values(&B), *y = tc_download(&Y), r[sizeof av / sizeof *av];
    for (int64_t i = 0; i < n; i++)
      r[i] = pow(a[i], b[i]);
    ok = tc_expect_exact(e, dt, y, r, n, "pow special values (C99 Annex F)");
    for (int64_t i = 0; !ok && i < n; i++)
      if (memcmp(&y[i], &r[i], sizeof(double)) && !(isnan(y[i]) && isnan(r[i])))
        printf("    pow(%g, %g) = %g, want %g\n", a[i], b[i], y[i], r[i]);
    free(a), free(b), free(y);
  }
  tc_tensor_free(&A), tc_tensor_free(&B), tc_tensor_free(&Y);
  return ok;
}

/* Layer norm (rms false) or RMS norm of 4 rows of 8 in double, scaled by
 * each row's largest magnitude s so that nothing overflows: y = (x/s - m)
 * / sqrt(v + eps/s^2), with eps/s^2 past double's range meaning y = (x/s -
 * m) * s / sqrt(eps). */
static void norm_exact(const double *x, bool rms, double eps, double *y) {
  for (int r = 0; r < 4; r++) {
    const double *xr = x + 8 * r;
    double s = 0, m = 0, v = 0;
    for (int j = 0; j < 8; j++)
      s = fmax(s, fabs(xr[j]));
    s = s > 0 ? s : 1;
    for (int j = 0; j < 8 && !rms; j++)
      m += xr[j] / s / 8;
    for (int j = 0; j < 8; j++)
      v += (xr[j] / s - m) * (xr[j] / s - m) / 8;
    double e2 = eps / s / s;
    for (int j = 0; j < 8; j++)
      y[8 * r + j] = isinf(e2) ? (xr[j] / s - m) * (s / sqrt(eps)) : (xr[j] / s - m) / sqrt(v + e2);
  }
}

static bool num_norm(tc_env_t *e, bp_dtype_t dt, bool rms) {
  /* per dtype: squares past the accumulator's range (f32 for f32 / bf16,
   * double for f64; f16's range is inside f32's, so its rows only guard),
   * sums past it, and squares under it */
  double big = dt == BP_F64 ? 1e200 : dt == BP_F16 ? 6e4 : 2e19;
  double huge = dt == BP_F64 ? 1e307 : dt == BP_F16 ? 6.5e4 : 3e38;
  double tiny = dt == BP_F64 ? 1e-200 : dt == BP_F16 ? 1e-4 : 1e-30;
  double x[32];
  const double pat[8] = {1, -1, 1, -1, 1, -1, 1, -1}, mix[8] = {1, -1, 0.5, -0.25, 1, 0.75, -1, 0.125},
               sm[8] = {1, -1, 2, -3, 1, 1, -2, 0.5};
  for (int j = 0; j < 8; j++) {
    x[j] = big * pat[j];
    x[8 + j] = huge * mix[j];
    x[16 + j] = tiny * sm[j];
    x[24 + j] = (double)j - 2.5;
  }
  const int64_t shape[2] = {4, 8};
  bool ok = true;
  for (int k = 0; k < 2; k++) {
    double eps = k ? 1e-5 : 0, ref[32];
    tc_tensor_t X = tc_tensor(e, dt, 2, shape, TC_CONTIG, x), Y = tc_tensor(e, dt, 2, shape, TC_CONTIG, NULL);
    bp_status_t st = rms ? bp_rms_norm(e->s, &X.t, NULL, eps, &Y.t) : bp_layer_norm(e->s, &X.t, NULL, NULL, eps, &Y.t);
    ok = ok && tc_expect_status(e, st, BP_OK, "%s", rms ? "rms_norm" : "layer_norm");
    if (st == BP_OK) {
      double *xv = tc_values(&X), *y = tc_download(&Y);
      norm_exact(xv, rms, eps, ref);
      for (int r = 0; r < 4; r++)
        ok = tc_expect_close(e, dt, y + 8 * r, ref + 8 * r, 8, 8, "%s eps %g of row %d (x up to %g)",
                             rms ? "rms_norm" : "layer_norm", eps, r, xv[8 * r]) && ok;
      free(xv), free(y);
    }
    tc_tensor_free(&X), tc_tensor_free(&Y);
  }
  return ok;
}

/* Uniform over ranges where rounding to the dtype reaches b: every value in
 * [a, b), the same bits as cpu-ref. */
static bool num_uniform(tc_env_t *ref, tc_env_t *e, bp_dtype_t dt) {
  const double ab[][2] = {{0, 1}, {1000, 1001}, {0x1p20, 0x1p20 + 1}, {0, 1e5}, {-3, -2}};
  const int64_t n = 1 << 16;
  bool ok = true;
  for (size_t k = 0; k < sizeof ab / sizeof *ab; k++) {
    double a = ab[k][0], b = ab[k][1];
    if (dt == BP_F16 && b > 65504)
      continue; /* a past f16's range: nothing to keep below b */
    double *y[2] = {NULL, NULL};
    for (int d = 0; d < 2; d++) {
      tc_env_t *env = d ? ref : e;
      if (d && env == e)
        break;
      tc_tensor_t Y = tc_tensor(env, dt, 1, &n, TC_CONTIG, NULL);
      if (tc_expect_status(env, bp_random(env->s, BP_RANDOM_UNIFORM, 1234, 0, a, b, &Y.t), BP_OK,
                           "uniform"))
        y[d] = tc_download(&Y);
      tc_tensor_free(&Y);
    }
    for (int64_t i = 0; y[0] && i < n; i++)
      if (!(y[0][i] >= a && y[0][i] < b)) {
        print_error("FAIL [%s %s] uniform [%g, %g): element %lld is %.9g\n", e->name,
                    bp_dtype_name(dt), a, b, (long long)i, y[0][i]);
        tc_failures++;
        ok = false;
        break;
      }
    if (y[0] && y[1])
      ok = tc_expect_exact(e, dt, y[0], y[1], n, "uniform [%g, %g) vs cpu-ref", a, b) && ok;
    ok = ok && y[0];
    free(y[0]), free(y[1]);
  }
  return ok;
}

static void numerics_device(tc_env_t *ref, tc_env_t *e, int *ran) {
  static const char *const names[5] = {"tanh", "pow", "rms_norm", "layer_norm", "uniform"};
  static const bp_op_t ops[5] = {BP_OP_UNARY, BP_OP_BINARY, BP_OP_RMS_NORM, BP_OP_LAYER_NORM,
                                 BP_OP_RANDOM};
  for (int c = 0; c < 5; c++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(e, ops[c], dt))
        continue;
      bool ok = c == 0 ? num_tanh(e, dt) : c == 1 ? num_pow(e, dt) : c == 4 ? num_uniform(ref, e, dt)
                                                                            : num_norm(e, dt, c == 2);
      printf("  %-14s %-4s %s\n", names[c], bp_dtype_name(dt), ok ? "ok" : "FAILED");
      (*ran)++;
    }
}

static void test_numerics_all_devices(void **state) {
  (void)state;
  TC_BEGIN();
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  tc_env_t ref;
  assert_true(tc_env_open(&ref, ctx, "cpu-ref"));
  uint32_t count = 0;
  assert_int_equal(bp_context_device_count(ctx, &count), BP_OK);
  int ran = 0;
  for (uint32_t rank = 0; rank < count; rank++) {
    bp_device_entry_t entry;
    assert_int_equal(bp_context_device_entry(ctx, rank, &entry), BP_OK);
    printf("device %u: %s (%s)\n", rank, entry.info.name, entry.backend);
    if (!strcmp(entry.info.name, "cpu-ref")) {
      numerics_device(&ref, &ref, &ran);
      continue;
    }
    char sel[16];
    snprintf(sel, sizeof sel, "%u", rank);
    tc_env_t e;
    if (!tc_env_open(&e, ctx, sel)) {
      print_error("FAIL device '%s' is listed but does not open\n", entry.info.name);
      tc_failures++;
      continue;
    }
    numerics_device(&ref, &e, &ran);
    tc_env_close(&e);
  }
  tc_env_close(&ref);
  bp_context_destroy(ctx);
  assert_true(ran > 0);
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parity_all_devices),
      cmocka_unit_test(test_numerics_all_devices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
