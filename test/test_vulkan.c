/*
 * test_vulkan.c — every op the Vulkan backend claims, through the public
 * API, against the "cpu-ref" device on identical inputs (test/common/tc.h
 * tolerances; exact ops bit for bit). Without a Vulkan device it skips
 * (exit 77) or, where lavapipe is installed, fails: see test/skip.h. Shapes
 * stay small: lavapipe runs on the CPU cores and compiles every pipeline on
 * first use.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "skip.h"
#include "test_vulkan.h"

bp_context_t *vt_ctx;
tc_env_t vt_vk, vt_ref;
bool vt_have_vk;

static int setup(void **state) {
  (void)state;
  if (bp_context_create(NULL, &vt_ctx) != BP_OK)
    return -1;
  vt_have_vk = tc_env_open(&vt_vk, vt_ctx, "vulkan");
  return tc_env_open(&vt_ref, vt_ctx, "cpu-ref") ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  if (vt_have_vk)
    tc_env_close(&vt_vk);
  tc_env_close(&vt_ref);
  bp_context_destroy(vt_ctx);
  return 0;
}

vt_pair_t vt_mk(bp_dtype_t dt, int rank, const int64_t *shape,
                tc_layout_t layout, const double *vals) {
  vt_pair_t p;
  p.t[0] = tc_tensor(&vt_vk, dt, rank, shape, layout, vals);
  p.t[1] = tc_tensor(&vt_ref, dt, rank, shape, layout, vals);
  return p;
}

vt_pair_t vt_rand(uint64_t seed, bp_dtype_t dt, int rank,
                  const int64_t *shape, tc_layout_t layout, double lo,
                  double hi) {
  int64_t n = tc_numel(rank, shape);
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  tc_rng_t r;
  tc_rng_seed(&r, seed);
  tc_rng_fill(&r, dt, lo, hi, v, n);
  vt_pair_t p = vt_mk(dt, rank, shape, layout, v);
  free(v);
  return p;
}

void vt_free(vt_pair_t *p) {
  tc_tensor_free(&p->t[0]);
  tc_tensor_free(&p->t[1]);
}

void vt_check(vt_pair_t *y, bp_dtype_t dt, double red, const char *what) {
  double *a = tc_download(&y->t[0]), *b = tc_download(&y->t[1]);
  if (red < 0)
    tc_expect_exact(&vt_vk, dt, a, b, y->t[0].numel, "%s", what);
  else
    tc_expect_close(&vt_vk, dt, a, b, y->t[0].numel, red, "%s", what);
  if (tc_outside_changed(&y->t[0]))
    tc_expect_status(&vt_vk, BP_ERR_INTERNAL, BP_OK, "%s wrote outside y",
                     what);
  free(a);
  free(b);
}

int vt_float_dtypes(bp_op_t op, bp_dtype_t *out) {
  static const bp_dtype_t all[] = {BP_F32, BP_F16, BP_BF16};
  int n = 0;
  for (int i = 0; i < 3; i++)
    if (tc_supports(&vt_vk, op, all[i]) && tc_supports(&vt_ref, op, all[i]))
      out[n++] = all[i];
  return n;
}

static void test_device_info(void **state) {
  (void)state;
  VT_NEED();
  bp_device_entry_t e;
  assert_int_equal(bp_device_entry(vt_vk.dev, &e), BP_OK);
  print_message("vulkan device: %s (%s), %s\n", e.info.name, e.info.vendor,
                e.info.description);
  assert_string_equal(e.backend, "vulkan");
  assert_true(e.info.op_dtypes[BP_OP_GEMM] & BP_DTYPE_BIT(BP_F32));
  assert_true(strncmp(e.info.identity, "pci:", 4) == 0 ||
              strncmp(e.info.identity, "uuid:", 5) == 0);
  /* No TC_END: the asserts above are the checks, none is a tc_expect_*. */
}

static void test_fill_copy_cast(void **state) {
  (void)state;
  VT_NEED();
  int64_t shape[3] = {3, 5, 7};
  const bp_dtype_t dts[] = {BP_F32, BP_F16, BP_BF16, BP_I32,
                            BP_I64, BP_U8,  BP_F64};
  for (int i = 0; i < 7; i++) {
    bp_dtype_t dt = dts[i];
    if (!tc_supports(&vt_vk, BP_OP_FILL, dt))
      continue;
    vt_pair_t y = vt_mk(dt, 3, shape, TC_STRIDED, NULL);
    VT_BOTH(bp_fill(E->s, &y.t[I].t, -2.5));
    vt_check(&y, dt, -1, "fill");
    vt_pair_t x = vt_rand(1 + i, dt, 3, shape, TC_PERMUTED, -100, 100);
    VT_BOTH(bp_copy(E->s, &x.t[I].t, &y.t[I].t));
    vt_check(&y, dt, -1, "copy permuted -> strided");
    vt_free(&x);
    vt_free(&y);
  }
  for (int i = 0; i < 7; i++)
    for (int j = 0; j < 7; j++) {
      if (i == j || !tc_supports(&vt_vk, BP_OP_CAST, dts[i]) ||
          !tc_supports(&vt_vk, BP_OP_CAST, dts[j]))
        continue;
      double v[10] = {1.5, 2.5, -1.5, NAN, 1e20, -1e20, 300.7, -0.4,
                      65519.0, 1e-6};
      int64_t n10[1] = {10};
      vt_pair_t x = vt_mk(dts[i], 1, n10, TC_CONTIG, v);
      vt_pair_t y = vt_mk(dts[j], 1, n10, TC_STRIDED, NULL);
      VT_BOTH(bp_cast(E->s, &x.t[I].t, &y.t[I].t));
      char what[64];
      snprintf(what, sizeof what, "cast %s -> %s", bp_dtype_name(dts[i]),
               bp_dtype_name(dts[j]));
      vt_check(&y, dts[j], -1, what);
      vt_free(&x);
      vt_free(&y);
    }
  TC_END();
}

static void test_unary_binary(void **state) {
  (void)state;
  VT_NEED();
  bp_dtype_t dts[3];
  int ndt = vt_float_dtypes(BP_OP_UNARY, dts);
  assert_true(ndt > 0); /* f32 at least is claimed */
  int64_t shape[2] = {13, 29}, row[2] = {1, 29}, col[2] = {13, 1};
  for (int d = 0; d < ndt; d++) {
    bp_dtype_t dt = dts[d];
    vt_pair_t x = vt_rand(7, dt, 2, shape, TC_PERMUTED, -3, 3);
    vt_pair_t xp = vt_rand(7, dt, 2, shape, TC_CONTIG, 0.1, 3);
    vt_pair_t y = vt_mk(dt, 2, shape, TC_STRIDED, NULL);
    for (int op = 0; op < BP_UNARY_COUNT; op++) {
      if (!tc_unary_claimed(&vt_vk, (bp_unary_op_t)op)) continue; /* test_model_ops */
      /* log, sqrt, rsqrt on positive inputs; the rest on both signs */
      bool pos = op == BP_UNARY_LOG || op == BP_UNARY_SQRT ||
                 op == BP_UNARY_RSQRT;
      vt_pair_t *in = pos ? &xp : &x;
      VT_BOTH(bp_unary(E->s, (bp_unary_op_t)op, &in->t[I].t, &y.t[I].t));
      char what[64];
      snprintf(what, sizeof what, "unary %d %s", op, bp_dtype_name(dt));
      vt_check(&y, dt, 1, what);
    }
    vt_pair_t b = vt_rand(8, dt, 2, row, TC_CONTIG, 0.5, 2);
    vt_pair_t c = vt_rand(9, dt, 2, col, TC_STRIDED, 0.5, 2);
    for (int op = 0; op < BP_BINARY_COUNT; op++) {
      vt_pair_t *a = op == BP_BINARY_POW ? &xp : &x;
      VT_BOTH(bp_binary(E->s, (bp_binary_op_t)op, &a->t[I].t, &b.t[I].t,
                        &y.t[I].t));
      char what[64];
      snprintf(what, sizeof what, "binary %d %s (row)", op,
               bp_dtype_name(dt));
      vt_check(&y, dt, 1, what);
      VT_BOTH(bp_binary(E->s, (bp_binary_op_t)op, &c.t[I].t, &b.t[I].t,
                        &y.t[I].t));
      snprintf(what, sizeof what, "binary %d %s (col x row)", op,
               bp_dtype_name(dt));
      vt_check(&y, dt, 1, what);
    }
    vt_free(&x);
    vt_free(&xp);
    vt_free(&b);
    vt_free(&c);
    vt_free(&y);
  }
  TC_END();
}

static bool g_share_a; /* A's batch stride 0: one A for the whole batch */

/* Contiguous f32 elementwise ops: the texel-view path of software devices
 * (eltwise_f32_tex), with element offsets that are not 16-byte aligned,
 * in place, and with a broadcast scalar operand (stride 0). */
static bp_tensor_t vt_view(const vt_pair_t *p, int I, int64_t off, int64_t n,
                           int64_t stride) {
  bp_tensor_t t = p->t[I].t;
  t.offset += (uint64_t)off * 4;
  t.rank = 1;
  t.shape[0] = n;
  t.strides[0] = stride;
  return t;
}

enum { EV_N = 1500 }; /* >= 1024: the texel path */

static bp_status_t ev_unary(tc_env_t *E, int I, int op, const vt_pair_t *x, int offx,
                            const vt_pair_t *y, int offy) {
  bp_tensor_t a = vt_view(x, I, offx, EV_N, 1), o = vt_view(y, I, offy, EV_N, 1);
  return bp_unary(E->s, (bp_unary_op_t)op, &a, &o);
}

static bp_status_t ev_binary(tc_env_t *E, int I, int op, const vt_pair_t *x, int offx,
                             const vt_pair_t *b, int offb, int64_t sb) {
  bp_tensor_t a = vt_view(x, I, offx, EV_N, 1), c = vt_view(b, I, offb, EV_N, sb);
  return bp_binary(E->s, (bp_binary_op_t)op, &a, &c, &a); /* in place */
}

static void test_eltwise_views(void **state) {
  (void)state;
  VT_NEED();
  int64_t len[1] = {EV_N + 4};
  for (int off = 0; off < 4; off++) {
    vt_pair_t x = vt_rand(21 + off, BP_F32, 1, len, TC_CONTIG, 0.1, 3);
    vt_pair_t b = vt_rand(31 + off, BP_F32, 1, len, TC_CONTIG, 0.5, 2);
    vt_pair_t y = vt_rand(41 + off, BP_F32, 1, len, TC_CONTIG, -1, 1);
    char what[64];
    for (int op = 0; op < BP_UNARY_COUNT; op++) {
      if (!tc_unary_claimed(&vt_vk, (bp_unary_op_t)op)) continue; /* test_model_ops */
      VT_BOTH(ev_unary(E, I, op, &x, off, &y, (off + 1) % 4));
      snprintf(what, sizeof what, "unary %d f32, offsets %d/%d", op, off, (off + 1) % 4);
      vt_check(&y, BP_F32, 1, what);
    }
    for (int op = 0; op < BP_BINARY_COUNT; op++) {
      /* odd ops: b is one element broadcast by stride 0 */
      VT_BOTH(ev_binary(E, I, op, &x, off, &b, 3 - off, op % 2 ? 0 : 1));
      snprintf(what, sizeof what, "binary %d f32 in place, offset %d", op, off);
      vt_check(&x, BP_F32, 1, what);
    }
    vt_free(&x);
    vt_free(&b);
    vt_free(&y);
  }
  TC_END();
}

static void gemm_pair(bp_dtype_t dt, bp_transpose_t ta, bp_transpose_t tb,
                      int64_t m, int64_t n, int64_t k, int64_t batch,
                      double alpha, double beta, bool aligned) {
  /* aligned: leading dimensions multiples of 4; else odd padding (the
   * texel kernel's packing absorbs both). */
  int64_t lda = (ta == BP_NO_TRANS ? k : m) + (aligned ? 4 : 1);
  int64_t ldb = (tb == BP_NO_TRANS ? n : k) + (aligned ? 4 : 2);
  int64_t ldc = n + 3;
  int64_t ra = ta == BP_NO_TRANS ? m : k, rb = tb == BP_NO_TRANS ? k : n;
  int64_t sa = g_share_a ? 0 : ra * lda, sb = rb * ldb, sc = m * ldc;
  int64_t na[1] = {g_share_a ? ra * lda : batch * sa}, nb[1] = {batch * sb}, nc[1] = {batch * sc};
  vt_pair_t a = vt_rand(11, dt, 1, na, TC_CONTIG, -1, 1);
  vt_pair_t b = vt_rand(12, dt, 1, nb, TC_CONTIG, -1, 1);
  vt_pair_t c = vt_rand(13, dt, 1, nc, TC_CONTIG, -1, 1);
  VT_BOTH(bp_gemm_strided_batched(
      E->s, dt, BP_ROW_MAJOR, ta, tb, m, n, k, alpha, a.t[I].buf,
      a.t[I].t.offset, lda, sa, b.t[I].buf, b.t[I].t.offset, ldb, sb, beta,
      c.t[I].buf, c.t[I].t.offset, ldc, sc, batch));
  char what[96];
  snprintf(what, sizeof what, "gemm %s %c%c %lldx%lldx%lld batch %lld",
           bp_dtype_name(dt), ta == BP_TRANS ? 'T' : 'N',
           tb == BP_TRANS ? 'T' : 'N', (long long)m, (long long)n,
           (long long)k, (long long)batch);
  vt_check(&c, dt, (double)k, what);
  vt_free(&a);
  vt_free(&b);
  vt_free(&c);
}

static void test_gemm(void **state) {
  (void)state;
  VT_NEED();
  bp_dtype_t dts[3];
  int ndt = vt_float_dtypes(BP_OP_GEMM, dts);
  assert_true(ndt > 0); /* f32 at least is claimed */
  for (int d = 0; d < ndt; d++) {
    gemm_pair(dts[d], BP_NO_TRANS, BP_NO_TRANS, 7, 5, 3, 2, 1.0, 0.0, false);
    gemm_pair(dts[d], BP_TRANS, BP_NO_TRANS, 67, 45, 33, 1, 0.5, -1.0, false);
    gemm_pair(dts[d], BP_NO_TRANS, BP_TRANS, 100, 70, 64, 3, 1.0, 0.0, false);
    gemm_pair(dts[d], BP_TRANS, BP_TRANS, 65, 129, 17, 1, -1.0, 2.0, false);
    gemm_pair(dts[d], BP_NO_TRANS, BP_NO_TRANS, 1, 1, 1, 1, 1.0, 0.0, false);
    gemm_pair(dts[d], BP_NO_TRANS, BP_NO_TRANS, 130, 131, 0, 1, 1.0, 0.5, false);
    gemm_pair(dts[d], BP_NO_TRANS, BP_NO_TRANS, 67, 44, 36, 2, 1.0, 0.5, true);
    gemm_pair(dts[d], BP_NO_TRANS, BP_NO_TRANS, 128, 136, 64, 1, 1.0, 0.0, true);
  }
  /* Every register tile of the texel kernel (gemmtex.comp), and the
   * generic kernels with the texel path off. */
  static const char *tiles[] = {"t8844",   "t4888",   "t8888",   "t8448",
                                "t81644",  "t8844u4", "t4888u4", "t8448u4",
                                "t81644u4", "t8888u4", NULL};
  for (int i = 0; tiles[i]; i++) {
    setenv("BACKPLANE_VK_GEMM_TILE", tiles[i], 1);
    gemm_pair(BP_F32, BP_TRANS, BP_NO_TRANS, 67, 45, 33, 2, 0.5, -1.0, false);
    gemm_pair(BP_F32, BP_NO_TRANS, BP_TRANS, 37, 70, 9, 1, 1.0, 0.0, false);
    /* C not f32 (written through its address, not a texel view) */
    gemm_pair(BP_BF16, BP_NO_TRANS, BP_NO_TRANS, 33, 40, 13, 1, 1.0, 0.5, false);
  }
  unsetenv("BACKPLANE_VK_GEMM_TILE");
  g_share_a = true;
  gemm_pair(BP_F32, BP_NO_TRANS, BP_NO_TRANS, 40, 36, 20, 3, 1.0, 0.0, false);
  g_share_a = false;
  setenv("BACKPLANE_VK_GEMM_TEXEL", "0", 1);
  gemm_pair(BP_F32, BP_TRANS, BP_TRANS, 65, 129, 17, 2, -1.0, 2.0, false);
  unsetenv("BACKPLANE_VK_GEMM_TEXEL");
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_info),
      cmocka_unit_test(test_fill_copy_cast),
      cmocka_unit_test(test_unary_binary),
      cmocka_unit_test(test_eltwise_views),
      cmocka_unit_test(test_gemm),
      VT_MORE_TESTS};
  /* No device is a skip, or a failure where lavapipe is installed (skip.h). */
  if (setup(NULL) != 0)
    return 1;
  if (!vt_have_vk) {
    char why[600];
    tc_plugin_reason(vt_ctx, "vulkan", why, sizeof why);
    teardown(NULL);
    return test_no_device("vulkan", why);
  }
  int failed = cmocka_run_group_tests_name("vulkan vs cpu-ref", tests, NULL, NULL);
  teardown(NULL);
  return failed;
}
