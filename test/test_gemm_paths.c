/*
 * test_gemm_paths.c — the GPU backends' ops built on their tuned GEMM tiles
 * (issue 28, item 6), through the public API, against "cpu-ref" on the
 * same inputs, on every OpenCL and Vulkan device the build finds:
 *   - skinny GEMM: m = 1 .. 16 rows of C, odd n and k (vector tails), B
 *     with contiguous rows or transposed, A transposed, batches, beta;
 *   - attention through Q Kt / softmax / P V: odd sizes, GQA and MQA,
 *     causal with Sq < Skv and Sq > Skv (rows that see no key), Dv != D;
 *   - conv2d through im2col + GEMM: stride, padding, dilation, groups,
 *     bias, odd and rectangular kernels, batches.
 * The shapes are above each path's threshold (ops_blas.c, ops_conv_gemm.c,
 * ops_attention_gemm.c, ops_blas_skinny.c) and small enough for 2 cores.
 * Skips (exit 77) when neither backend has a device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "skip.h"
#include "tc.h"

static bp_context_t *ctx;
static tc_env_t dev, ref;

/* One logical tensor on both devices: [0] the device under test, [1] cpu-ref. */
typedef struct pair {
  tc_tensor_t t[2];
} pair_t;

static pair_t mk(bp_dtype_t dt, int rank, const int64_t *shape, tc_layout_t layout,
                 const double *vals) {
  pair_t p;
  p.t[0] = tc_tensor(&dev, dt, rank, shape, layout, vals);
  p.t[1] = tc_tensor(&ref, dt, rank, shape, layout, vals);
  return p;
}

static pair_t mk_rand(uint64_t seed, bp_dtype_t dt, int rank, const int64_t *shape,
                      tc_layout_t layout) {
  int64_t n = tc_numel(rank, shape);
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  tc_rng_t r;
  tc_rng_seed(&r, seed);
  tc_rng_fill(&r, dt, -1, 1, v, n);
  pair_t p = mk(dt, rank, shape, layout, v);
  free(v);
  return p;
}

static void pfree(pair_t *p) {
  tc_tensor_free(&p->t[0]);
  tc_tensor_free(&p->t[1]);
}

static void check(pair_t *y, bp_dtype_t dt, double red, const char *what) {
  double *a = tc_download(&y->t[0]), *b = tc_download(&y->t[1]);
  tc_expect_close(&dev, dt, a, b, y->t[0].numel, red, "%s on %s", what, dev.name);
  if (tc_outside_changed(&y->t[0]))
    tc_expect_status(&dev, BP_ERR_INTERNAL, BP_OK, "%s wrote outside y", what);
  free(a);
  free(b);
}

#define BOTH(stmt)                                                                                 \
  do {                                                                                             \
    for (int I = 0; I < 2; I++) {                                                                  \
      tc_env_t *E = I ? &ref : &dev;                                                               \
      bp_status_t st_ = (stmt);                                                                    \
      tc_expect_status(E, st_, BP_OK, "%s", #stmt);                                                \
    }                                                                                              \
  } while (0)

static int float_dtypes(bp_op_t op, bp_dtype_t *out) {
  static const bp_dtype_t all[] = {BP_F32, BP_BF16, BP_F16};
  int n = 0;
  for (int i = 0; i < 3; i++)
    if (tc_supports(&dev, op, all[i]) && tc_supports(&ref, op, all[i])) out[n++] = all[i];
  return n;
}

/* ---- skinny GEMM ----------------------------------------------------------*/

static void gemm_case(bp_dtype_t dt, bp_transpose_t ta, bp_transpose_t tb, int64_t m, int64_t n,
                      int64_t k, int64_t batch, double beta) {
  /* padded leading dimensions, rows kept contiguous (the fast paths' case) */
  int64_t lda = (ta == BP_NO_TRANS ? k : m) + 3, ldb = (tb == BP_NO_TRANS ? n : k) + 4;
  int64_t ldc = n + 1, ra = ta == BP_NO_TRANS ? m : k, rb = tb == BP_NO_TRANS ? k : n;
  int64_t sa = ra * lda, sb = rb * ldb, sc = m * ldc;
  int64_t na[1] = {batch * sa}, nb[1] = {batch * sb}, nc[1] = {batch * sc};
  pair_t a = mk_rand(11, dt, 1, na, TC_CONTIG), b = mk_rand(12, dt, 1, nb, TC_CONTIG);
  pair_t c = mk_rand(13, dt, 1, nc, TC_CONTIG);
  BOTH(bp_gemm_strided_batched(E->s, dt, BP_ROW_MAJOR, ta, tb, m, n, k, 0.75, a.t[I].buf,
                               a.t[I].t.offset, lda, sa, b.t[I].buf, b.t[I].t.offset, ldb, sb, beta,
                               c.t[I].buf, c.t[I].t.offset, ldc, sc, batch));
  char what[96];
  snprintf(what, sizeof what, "gemm %s %c%c m %lld n %lld k %lld batch %lld beta %g",
           bp_dtype_name(dt), ta == BP_TRANS ? 'T' : 'N', tb == BP_TRANS ? 'T' : 'N', (long long)m,
           (long long)n, (long long)k, (long long)batch, beta);
  check(&c, dt, (double)k, what);
  pfree(&a);
  pfree(&b);
  pfree(&c);
}

static void test_skinny_gemm(void **state) {
  (void)state;
  TC_BEGIN();
  bp_dtype_t dts[3];
  int ndt = float_dtypes(BP_OP_GEMM, dts);
  static const int64_t ms[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16};
  for (int d = 0; d < ndt; d++)
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
      /* n and k off every vector width; m * n * k above the direct kernel's */
      gemm_case(dts[d], BP_NO_TRANS, BP_NO_TRANS, ms[i], 301, 403, 1, 0.0);
      gemm_case(dts[d], BP_NO_TRANS, BP_TRANS, ms[i], 299, 405, 1, 0.5);
    }
  for (int d = 0; d < ndt; d++) {
    gemm_case(dts[d], BP_TRANS, BP_NO_TRANS, 6, 260, 333, 2, -1.0);
    gemm_case(dts[d], BP_NO_TRANS, BP_NO_TRANS, 16, 512, 256, 3, 0.0); /* whole vectors */
    gemm_case(dts[d], BP_NO_TRANS, BP_TRANS, 1, 1024, 129, 2, 0.0);
    /* matrix-vector: k slices with a short last one, n off the vectors */
    gemm_case(dts[d], BP_NO_TRANS, BP_NO_TRANS, 1, 133, 2100, 3, 0.5);
  }
  TC_END();
}

/* ---- attention --------------------------------------------------------------*/

static void attention_case(bp_dtype_t dt, int64_t b, int64_t hq, int64_t hkv, int64_t sq,
                           int64_t skv, int64_t d, int64_t dv, bool causal, tc_layout_t lq) {
  int64_t qs[4] = {b, hq, sq, d}, ks[4] = {b, hkv, skv, d};
  int64_t vs[4] = {b, hkv, skv, dv}, os[4] = {b, hq, sq, dv};
  pair_t q = mk_rand(51, dt, 4, qs, lq), k = mk_rand(52, dt, 4, ks, TC_PERMUTED);
  pair_t v = mk_rand(53, dt, 4, vs, TC_CONTIG), o = mk(dt, 4, os, lq, NULL);
  BOTH(bp_attention(E->s, &q.t[I].t, &k.t[I].t, &v.t[I].t, 0.0, causal, &o.t[I].t));
  char what[112];
  snprintf(what, sizeof what, "attention %s B%lld H%lld/%lld Sq %lld Skv %lld D %lld/%lld%s",
           bp_dtype_name(dt), (long long)b, (long long)hq, (long long)hkv, (long long)sq,
           (long long)skv, (long long)d, (long long)dv, causal ? " causal" : "");
  check(&o, dt, (double)skv, what);
  pfree(&q);
  pfree(&k);
  pfree(&v);
  pfree(&o);
}

static void test_attention_gemm(void **state) {
  (void)state;
  TC_BEGIN();
  bp_dtype_t dts[3];
  int ndt = float_dtypes(BP_OP_ATTENTION, dts);
  for (int i = 0; i < ndt; i++) {
    attention_case(dts[i], 2, 4, 2, 77, 77, 40, 24, true, TC_CONTIG);    /* GQA */
    attention_case(dts[i], 1, 4, 1, 100, 70, 64, 64, true, TC_STRIDED);  /* MQA, Sq > Skv */
    attention_case(dts[i], 1, 2, 2, 33, 200, 17, 9, true, TC_CONTIG);    /* Sq < Skv */
    attention_case(dts[i], 2, 3, 3, 65, 130, 40, 72, false, TC_STRIDED); /* Dv > D */
    attention_case(dts[i], 1, 2, 1, 130, 64, 8, 8, true, TC_CONTIG);     /* rows with no key */
    attention_case(dts[i], 1, 2, 2, 129, 129, 64, 64, true, TC_CONTIG);  /* tile edges */
  }
  TC_END();
}

/* ---- conv2d ------------------------------------------------------------------*/

static void conv_case(bp_dtype_t dt, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                      int64_t r, int64_t s, int stride, int pad, int dil, int groups, bool bias) {
  bp_conv2d_params_t p = {sizeof p, stride, stride, pad, pad, dil, dil, groups};
  int64_t ph = (h + 2 * pad - dil * (r - 1) - 1) / stride + 1;
  int64_t pw = (w + 2 * pad - dil * (s - 1) - 1) / stride + 1;
  int64_t xs[4] = {n, c, h, w}, wsh[4] = {k, c / groups, r, s};
  int64_t ys[4] = {n, k, ph, pw}, bs[1] = {k};
  pair_t x = mk_rand(61, dt, 4, xs, TC_STRIDED), wt = mk_rand(62, dt, 4, wsh, TC_PERMUTED);
  pair_t bb = mk_rand(63, dt, 1, bs, TC_STRIDED), y = mk(dt, 4, ys, TC_CONTIG, NULL);
  BOTH(bp_conv2d(E->s, &p, &x.t[I].t, &wt.t[I].t, bias ? &bb.t[I].t : NULL, &y.t[I].t));
  char what[112];
  snprintf(what, sizeof what, "conv2d %s N%lld C%lld %lldx%lld K%lld %lldx%lld s%d p%d d%d g%d%s",
           bp_dtype_name(dt), (long long)n, (long long)c, (long long)h, (long long)w, (long long)k,
           (long long)r, (long long)s, stride, pad, dil, groups, bias ? " bias" : "");
  check(&y, dt, (double)(c / groups * r * s), what);
  pfree(&x);
  pfree(&wt);
  pfree(&bb);
  pfree(&y);
}

static void test_conv_gemm(void **state) {
  (void)state;
  TC_BEGIN();
  bp_dtype_t dts[3];
  int ndt = float_dtypes(BP_OP_CONV2D, dts);
  for (int i = 0; i < ndt; i++) {
    bp_dtype_t dt = dts[i];
    conv_case(dt, 2, 16, 13, 14, 24, 3, 3, 1, 1, 1, 1, true);
    conv_case(dt, 1, 8, 17, 17, 32, 3, 3, 2, 2, 2, 2, false);
    conv_case(dt, 3, 12, 9, 10, 40, 1, 1, 1, 0, 1, 4, true);
    conv_case(dt, 1, 3, 31, 29, 17, 5, 5, 2, 1, 1, 1, true);
    conv_case(dt, 2, 10, 12, 15, 16, 3, 2, 1, 2, 1, 1, true); /* rectangular */
  }
  TC_END();
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_skinny_gemm),
    cmocka_unit_test(test_attention_gemm),
    cmocka_unit_test(test_conv_gemm),
};

int main(void) {
  static const char *const backends[] = {"opencl", "vulkan"};
  if (bp_context_create(NULL, &ctx) != BP_OK || !tc_env_open(&ref, ctx, "cpu-ref")) return 1;
  int ran = 0, failed = 0;
  for (int i = 0; i < 2; i++) {
    if (!tc_env_open(&dev, ctx, backends[i])) {
      if (test_device_required(backends[i])) failed++;
      continue;
    }
    failed += cmocka_run_group_tests_name(backends[i], tests, NULL, NULL);
    tc_env_close(&dev);
    ran++;
  }
  tc_env_close(&ref);
  bp_context_destroy(ctx);
  if (!ran && !failed) return test_skip_suite("no OpenCL or Vulkan device");
  return failed ? 1 : 0;
}
