/*
 * test_ops_blas.c — gemm (CBLAS row / column major, every transpose pair,
 * lda > minimum, offsets, beta 0 not reading C), strided batched gemm,
 * bp_matmul over tensor views, and gemv, on every float dtype the device
 * claims, against test/common/ref.c.
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

#include "ref.h"
#include "tc.h"

/* A [batch, rows, cols] view of op(X) stored with CBLAS conventions: the
 * stored matrix is rows x cols (or cols x rows when trans) with leading
 * dimension ld, matrix b starts bstride elements after matrix b-1, and the
 * first starts off elements into the buffer. vals is op(X), batch-major. */
static tc_tensor_t blas_mat(tc_env_t *e, bp_dtype_t dt, bp_layout_t layout,
                            bool trans, int64_t batch, int64_t rows,
                            int64_t cols, int64_t ld, int64_t bstride,
                            int64_t off, const double *vals) {
  int64_t si = layout == BP_ROW_MAJOR ? ld : 1;
  int64_t sj = layout == BP_ROW_MAJOR ? 1 : ld;
  int64_t shape[3] = {batch, rows, cols};
  int64_t strides[3] = {bstride, trans ? sj : si, trans ? si : sj};
  return tc_tensor_strided(e, dt, 3, shape, strides, off, vals);
}

/* Minimum leading dimension of op(X) [rows, cols] in layout. */
static int64_t min_ld(bp_layout_t layout, bool trans, int64_t rows,
                      int64_t cols) {
  int64_t sr = trans ? cols : rows, sc = trans ? rows : cols;
  int64_t v = layout == BP_ROW_MAJOR ? sc : sr;
  return v > 0 ? v : 1;
}

typedef struct gemm_case {
  int64_t m, n, k;
} gemm_case_t;

static const gemm_case_t gemm_cases[] = {
    {1, 1, 1}, {7, 13, 31}, {13, 7, 1}, {31, 1, 13}, {1, 31, 7},
    {127, 13, 31}, {0, 5, 3}, {5, 0, 3}, {4, 5, 0}, {16, 16, 127},
    /* big enough for the fast kernels' blocking and edge tiles */
    {67, 129, 257}, {130, 70, 600},
    /* one row / one column of C, large enough to be threaded (the CPU
     * device's matrix-vector forms) */
    {1, 301, 257}, {301, 1, 257},
    /* a few rows of C against a long k: B read in place, in k blocks */
    {7, 301, 600}, {12, 64, 700},
};

/* Runs one strided batched gemm case and checks C, including the bytes
 * around it. batch 1 with zero strides goes through bp_gemm. */
static void gemm_one(tc_env_t *e, bp_dtype_t dt, bp_layout_t layout, bool ta,
                     bool tb, gemm_case_t gc, double alpha, double beta,
                     int64_t batch, bool share_b, tc_rng_t *rng) {
  int64_t m = gc.m, n = gc.n, k = gc.k;
  int64_t lda = min_ld(layout, ta, m, k) + 3, ldb = min_ld(layout, tb, k, n) + 1;
  int64_t ldc = min_ld(layout, false, m, n) + 2;
  int64_t sa = (ta ? k : m) * lda + 5, sb = share_b ? 0 : (tb ? n : k) * ldb;
  int64_t sc = (layout == BP_ROW_MAJOR ? m : n) * ldc + 1;
  if (batch == 1)
    sa = sb = sc = 0;
  int64_t na = batch * m * k, nb = batch * k * n, nc = batch * m * n;
  double *a = malloc(sizeof(double) * (size_t)(na + 1));
  double *b = malloc(sizeof(double) * (size_t)(nb + 1));
  double *c = malloc(sizeof(double) * (size_t)(nc + 1));
  tc_rng_fill(rng, dt, -1, 1, a, na);
  tc_rng_fill(rng, dt, -1, 1, b, nb);
  if (share_b)
    for (int64_t i = k * n; i < nb; i++)
      b[i] = b[i % (k * n)];
  tc_rng_fill(rng, dt, -1, 1, c, nc);
  tc_tensor_t A = blas_mat(e, dt, layout, ta, batch, m, k, lda, sa, 2, a);
  tc_tensor_t B = blas_mat(e, dt, layout, tb, batch, k, n, ldb, sb, 1, b);
  /* beta 0: C holds NaN, which must not reach the result */
  tc_tensor_t C = blas_mat(e, dt, layout, false, batch, m, n, ldc, sc, 3,
                           beta == 0 ? NULL : c);
  size_t es = bp_dtype_size(dt);
  bp_transpose_t TA = ta ? BP_TRANS : BP_NO_TRANS, TB = tb ? BP_TRANS : BP_NO_TRANS;
  bp_status_t st;
  if (batch == 1)
    st = bp_gemm(e->s, dt, layout, TA, TB, m, n, k, alpha, A.buf, 2 * es, lda,
                 B.buf, 1 * es, ldb, beta, C.buf, 3 * es, ldc);
  else
    st = bp_gemm_strided_batched(e->s, dt, layout, TA, TB, m, n, k, alpha,
                                 A.buf, 2 * es, lda, sa, B.buf, 1 * es, ldb,
                                 sb, beta, C.buf, 3 * es, ldc, sc, batch);
  const char *lay = layout == BP_ROW_MAJOR ? "row" : "col";
  if (tc_expect_status(e, st, BP_OK, "gemm %s %c%c m=%lld n=%lld k=%lld batch=%lld",
                       lay, ta ? 'T' : 'N', tb ? 'T' : 'N', (long long)m,
                       (long long)n, (long long)k, (long long)batch)) {
    double *av = tc_values(&A), *bv = tc_values(&B);
    double *ref = malloc(sizeof(double) * (size_t)(nc + 1));
    memcpy(ref, c, sizeof(double) * (size_t)nc);
    for (int64_t i = 0; i < batch; i++)
      ref_gemm(m, n, k, alpha, av + i * m * k, bv + i * k * n, beta,
               ref + i * m * n);
    double *y = tc_download(&C);
    tc_expect_close(e, dt, y, ref, nc, (double)k,
                    "gemm %s %c%c m=%lld n=%lld k=%lld batch=%lld beta=%g", lay,
                    ta ? 'T' : 'N', tb ? 'T' : 'N', (long long)m, (long long)n,
                    (long long)k, (long long)batch, beta);
    int64_t out = tc_outside_changed(&C);
    if (out)
      print_error("FAIL [%s %s] gemm wrote %lld bytes outside C\n", e->name,
                  bp_dtype_name(dt), (long long)out),
          tc_failures++;
    free(av);
    free(bv);
    free(ref);
    free(y);
  }
  tc_tensor_free(&A);
  tc_tensor_free(&B);
  tc_tensor_free(&C);
  free(a);
  free(b);
  free(c);
}

static void test_gemm_cblas(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 1);
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_GEMM, dt))
        continue;
      for (int lay = 0; lay < 2; lay++)
        for (int tr = 0; tr < 4; tr++)
          for (size_t i = 0; i < sizeof gemm_cases / sizeof *gemm_cases; i++)
            gemm_one(&su->env[d], dt, lay ? BP_COL_MAJOR : BP_ROW_MAJOR, tr & 1,
                     tr & 2, gemm_cases[i], 1.5, i % 2 ? 0.0 : -0.5, 1, false,
                     &rng);
    }
  TC_END();
}

static void test_gemm_strided_batched(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 2);
  const gemm_case_t cases[] = {{7, 13, 31}, {1, 1, 1}, {13, 5, 7}, {0, 3, 3}};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_GEMM, dt))
        continue;
      for (int lay = 0; lay < 2; lay++)
        for (int tr = 0; tr < 4; tr++)
          for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            bp_layout_t L = lay ? BP_COL_MAJOR : BP_ROW_MAJOR;
            gemm_one(&su->env[d], dt, L, tr & 1, tr & 2, cases[i], 0.75, 0.0, 3,
                     false, &rng);
            gemm_one(&su->env[d], dt, L, tr & 1, tr & 2, cases[i], 1.0, 2.0, 5,
                     true, &rng); /* stride_b 0: one B for every batch */
          }
    }
  TC_END();
}

/* beta 0 must not read C (NaN there stays out), and NaN / Inf in A or B
 * propagate to exactly the elements the formula says. */
static void test_gemm_nan_inf(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_GEMM, dt))
        continue;
      enum { M = 5, N = 6, K = 7 };
      double a[M * K], b[K * N], ref[M * N];
      tc_rng_t rng;
      tc_rng_seed(&rng, 3);
      tc_rng_fill(&rng, dt, 0.25, 1, a, M * K); /* positive: no Inf - Inf */
      tc_rng_fill(&rng, dt, 0.25, 1, b, K * N);
      a[1 * K + 2] = NAN;      /* row 1 of C all NaN */
      a[3 * K + 4] = INFINITY; /* row 3 +Inf ... */
      b[4 * N + 2] = 0;        /* ... except column 2: Inf * 0 = NaN */
      b[6 * N + 5] = -INFINITY; /* column 5 -Inf (row 3: Inf - Inf = NaN) */
      int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
      tc_tensor_t A = tc_tensor(e, dt, 2, sa, TC_CONTIG, a);
      tc_tensor_t B = tc_tensor(e, dt, 2, sb, TC_STRIDED, b);
      tc_tensor_t C = tc_tensor(e, dt, 2, sc, TC_CONTIG, NULL); /* NaN */
      bp_status_t st = bp_matmul(e->s, 1.0, &A.t, &B.t, 0.0, &C.t);
      if (tc_expect_status(e, st, BP_OK, "matmul nan/inf")) {
        ref_gemm(M, N, K, 1.0, a, b, 0.0, ref);
        double *y = tc_download(&C);
        tc_expect_close(e, dt, y, ref, M * N, K, "gemm NaN/Inf propagation");
        free(y);
      }
      tc_tensor_free(&A);
      tc_tensor_free(&B);
      tc_tensor_free(&C);
    }
  TC_END();
}

/* bp_matmul over views: transposes, strided and permuted layouts, rank 3
 * with a broadcast batch of 1. */
static void test_matmul_views(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 4);
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      tc_env_t *e = &su->env[d];
      if (!tc_supports(e, BP_OP_GEMM, dt))
        continue;
      for (int la = 0; la < TC_LAYOUT_COUNT; la++)
        for (int lb = 0; lb < TC_LAYOUT_COUNT; lb++)
          for (int bcast = 0; bcast < 3; bcast++) {
            /* bcast 0: rank 2; 1: rank 3 batch 3; 2: rank 3, b batch 1 */
            int64_t Bt = bcast ? 3 : 1, m = 13, n = 7, k = 31;
            int64_t sa[3] = {Bt, k, m}; /* stored transposed, viewed as [m,k] */
            int64_t sb[3] = {bcast == 2 ? 1 : Bt, k, n}, sc[3] = {Bt, m, n};
            int r = bcast ? 3 : 2, off = bcast ? 0 : 1;
            int64_t na = Bt * m * k, nb = sb[0] * k * n, nc = Bt * m * n;
            double *a = malloc(sizeof(double) * (size_t)na);
            double *b = malloc(sizeof(double) * (size_t)nb);
            double *c = malloc(sizeof(double) * (size_t)nc);
            tc_rng_fill(&rng, dt, -1, 1, a, na);
            tc_rng_fill(&rng, dt, -1, 1, b, nb);
            tc_rng_fill(&rng, dt, -1, 1, c, nc);
            tc_tensor_t A = tc_tensor(e, dt, r, sa + off, (tc_layout_t)la, a);
            tc_tensor_t B = tc_tensor(e, dt, r, sb + off, (tc_layout_t)lb, b);
            tc_tensor_t C = tc_tensor(e, dt, r, sc + off, TC_STRIDED, c);
            bp_tensor_t at;
            assert_int_equal(bp_tensor_transpose(&A.t, r - 2, r - 1, &at), BP_OK);
            bp_status_t st = bp_matmul(e->s, -1.25, &at, &B.t, 0.5, &C.t);
            if (tc_expect_status(e, st, BP_OK, "matmul %s x %s bcast %d",
                                 tc_layout_names[la], tc_layout_names[lb], bcast)) {
              double *av = tc_values(&A), *bv = tc_values(&B);
              double *cv = tc_values(&C), *y = tc_download(&C);
              double *aT = malloc(sizeof(double) * (size_t)na);
              for (int64_t q = 0; q < Bt; q++) {
                for (int64_t i = 0; i < m; i++)
                  for (int64_t p = 0; p < k; p++)
                    aT[q * m * k + i * k + p] = av[q * m * k + p * m + i];
                ref_gemm(m, n, k, -1.25, aT + q * m * k,
                         bv + (bcast == 2 ? 0 : q * k * n), 0.5, cv + q * m * n);
              }
              tc_expect_close(e, dt, y, cv, nc, (double)k,
                              "matmul aT(%s) x b(%s) bcast %d",
                              tc_layout_names[la], tc_layout_names[lb], bcast);
              if (tc_outside_changed(&C))
                print_error("FAIL matmul wrote outside C\n"), tc_failures++;
              free(av), free(bv), free(cv), free(y), free(aT);
            }
            tc_tensor_free(&A);
            tc_tensor_free(&B);
            tc_tensor_free(&C);
            free(a), free(b), free(c);
          }
    }
  TC_END();
}

static void gemv_one(tc_env_t *e, bp_dtype_t dt, bp_layout_t layout,
                     bool trans, int64_t m, int64_t n, int64_t incx,
                     int64_t incy, double beta, tc_rng_t *rng) {
  /* A is m x n as stored; op(A) is rows x cols */
  int64_t rows = trans ? n : m, cols = trans ? m : n;
  int64_t lda = (layout == BP_ROW_MAJOR ? n : m) + 2;
  if (lda < 3)
    lda = 3;
  double *a = malloc(sizeof(double) * (size_t)(m * n + 1));
  double *x = malloc(sizeof(double) * (size_t)(cols + 1));
  double *y0 = malloc(sizeof(double) * (size_t)(rows + 1));
  tc_rng_fill(rng, dt, -1, 1, a, rows * cols);
  tc_rng_fill(rng, dt, -1, 1, x, cols);
  tc_rng_fill(rng, dt, -1, 1, y0, rows);
  int64_t si = layout == BP_ROW_MAJOR ? lda : 1, sj = layout == BP_ROW_MAJOR ? 1 : lda;
  int64_t ashape[2] = {rows, cols}, astr[2] = {trans ? sj : si, trans ? si : sj};
  tc_tensor_t A = tc_tensor_strided(e, dt, 2, ashape, astr, 1, a);
  tc_tensor_t X = tc_tensor_strided(e, dt, 1, &cols, &incx, 2, x);
  tc_tensor_t Y = tc_tensor_strided(e, dt, 1, &rows, &incy, 3, beta == 0 ? NULL : y0);
  size_t es = bp_dtype_size(dt);
  bp_status_t st = bp_gemv(e->s, dt, layout, trans ? BP_TRANS : BP_NO_TRANS, m, n,
                           0.5, A.buf, es, lda, X.buf, 2 * es, incx, beta, Y.buf,
                           3 * es, incy);
  const char *lay = layout == BP_ROW_MAJOR ? "row" : "col";
  if (tc_expect_status(e, st, BP_OK, "gemv %s %c m=%lld n=%lld", lay,
                       trans ? 'T' : 'N', (long long)m, (long long)n)) {
    double *av = tc_values(&A), *xv = tc_values(&X), *yv = tc_download(&Y);
    ref_gemv(rows, cols, 0.5, av, xv, beta, y0);
    tc_expect_close(e, dt, yv, y0, rows, (double)cols,
                    "gemv %s %c m=%lld n=%lld incx=%lld incy=%lld beta=%g", lay,
                    trans ? 'T' : 'N', (long long)m, (long long)n,
                    (long long)incx, (long long)incy, beta);
    if (tc_outside_changed(&Y))
      print_error("FAIL gemv wrote outside y\n"), tc_failures++;
    free(av), free(xv), free(yv);
  }
  tc_tensor_free(&A);
  tc_tensor_free(&X);
  tc_tensor_free(&Y);
  free(a), free(x), free(y0);
}

static void test_gemv(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_rng_t rng;
  tc_rng_seed(&rng, 5);
  const int64_t mn[][2] = {{1, 1}, {7, 13}, {127, 31}, {13, 1}, {0, 5}, {5, 0},
                          {301, 257} /* threaded on the CPU device */};
  for (int d = 0; d < su->count; d++)
    for (int t = 0; t < 4; t++) {
      bp_dtype_t dt = tc_float_dtypes[t];
      if (!tc_supports(&su->env[d], BP_OP_GEMV, dt))
        continue;
      for (int lay = 0; lay < 2; lay++)
        for (int tr = 0; tr < 2; tr++)
          for (size_t i = 0; i < sizeof mn / sizeof *mn; i++)
            gemv_one(&su->env[d], dt, lay ? BP_COL_MAJOR : BP_ROW_MAJOR, tr,
                     mn[i][0], mn[i][1], 1 + (int64_t)(i % 3), 1 + (int64_t)(i % 2),
                     i % 2 ? 0.0 : 1.5, &rng);
    }
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm_cblas),
      cmocka_unit_test(test_gemm_strided_batched),
      cmocka_unit_test(test_gemm_nan_inf),
      cmocka_unit_test(test_matmul_views),
      cmocka_unit_test(test_gemv),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
