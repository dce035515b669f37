/*
 * test_cpu_fast_gemm_dot.c — the CPU fast path's inner-product GEMM route
 * (plugins/cpu/fast/gemm/gemm_dot.c, kernel fast/gemm/gemm_dot_ukr.h) and
 * the matrix-vector forms beside it: C with a few columns against a
 * row-major B (Bᵀ copied), a few rows or columns against B given as Bᵀ
 * (read in place), C one row against Bᵀ and one column against a
 * column-major A (gemv.c), and a C of one column panel on the unpacked
 * path. On both ISA levels with kernels of their own, f32 and f64, one and
 * two threads, against a double-precision reference: rows and columns
 * past whole tiles, k past whole vectors and past one k block (each block
 * after the first adds into C), beta 0 over NaN and beta != 0, padded
 * leading dimensions, C column-major (C^T = B^T A^T), batches. The route's
 * choice is checked too, so a route that stops being taken fails here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/gemm/gemm.h"
#include "plugins/cpu/fast/gemm/gemm_driver.h"
#include "plugins/cpu/tensor.h"
#include "test/gemm_half_check.h"
#include "test/gemm_vals.h"
#include "test/skip.h"

static int fails, checks;

/* One GEMM case: batch entries of C (m x n) = alpha A B + beta C with A
 * row-major (or column-major: ta), B row-major or given as Bᵀ (tb), C
 * row- or column-major (tc); every leading dimension padded. */
typedef struct dot_case {
  bool f64;
  int64_t batch, m, n, k;
  bool ta, tb, tc;
  double alpha, beta;
  bool bgap; /* B row-major with every other column (column stride 2) */
} dot_case_t;

static void run_case(cpu_device_t *dev, dot_case_t q) {
  bool f64 = q.f64;
  size_t es = f64 ? 8 : 4;
  int64_t m = q.m, n = q.n, k = q.k;
  int64_t gap = q.bgap ? 2 : 1;
  int64_t lda = (q.ta ? m : k) + 3, ldb = (q.tb ? k : gap * n) + 5, ldc = (q.tc ? m : n) + 2;
  int64_t sa = (q.ta ? k : m) * lda + 7, sb = (q.tb ? n : k) * ldb + 9,
          sc = (q.tc ? n : m) * ldc + 11;
  int64_t na = sa * q.batch, nb = sb * q.batch, nc = sc * q.batch;
  void *a = malloc(es * (size_t)na), *b = malloc(es * (size_t)nb), *c = malloc(es * (size_t)nc);
  double *want = malloc(sizeof(double) * (size_t)(q.batch * m * n));
  for (int64_t i = 0; i < na; i++) setv(a, f64, i, (rand() % 2001 - 1000) / 1000.0);
  for (int64_t i = 0; i < nb; i++) setv(b, f64, i, (rand() % 2001 - 1000) / 1000.0);
  for (int64_t i = 0; i < nc; i++)
    setv(c, f64, i, q.beta == 0 ? NAN : (rand() % 2001 - 1000) / 1000.0);
  int64_t sam = q.ta ? 1 : lda, sak = q.ta ? lda : 1;
  int64_t sbk = q.tb ? 1 : ldb, sbn = q.tb ? ldb : gap;
  int64_t scm = q.tc ? 1 : ldc, scn = q.tc ? ldc : 1;
  for (int64_t e = 0; e < q.batch; e++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t p = 0; p < k; p++)
          s += getv(a, f64, e * sa + i * sam + p * sak) * getv(b, f64, e * sb + p * sbk + j * sbn);
        double old = q.beta == 0 ? 0 : q.beta * getv(c, f64, e * sc + i * scm + j * scn);
        want[(e * m + i) * n + j] = q.alpha * s + old;
      }
  bp_gemm_args_t g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.alpha = q.alpha;
  g.beta = q.beta;
  bp_dtype_t dt = f64 ? BP_F64 : BP_F32;
  g.a = cpu_tensor_view3(a, dt, q.batch, m, k, sa, sam, sak);
  g.b = cpu_tensor_view3(b, dt, q.batch, k, n, sb, sbk, sbn);
  g.c = cpu_tensor_view3(c, dt, q.batch, m, n, sc, scm, scn);
  checks++;
  bp_status_t st = cpu_fast_gemm(dev, &g);
  double tol = f64 ? 1e-12 : 1e-5;
  if (st != BP_OK) {
    printf("status %d for %s m%ld n%ld k%ld\n", st, f64 ? "f64" : "f32", (long)m, (long)n, (long)k);
    fails++;
  } else
    for (int64_t i = 0; i < q.batch * m * n; i++) {
      int64_t e = i / (m * n), r = i % (m * n) / n, col = i % n;
      double got = getv(c, f64, e * sc + r * scm + col * scn), w = want[i];
      if (!(fabs(got - w) <= tol * (sqrt((double)k) + 1) * 2 + tol * fabs(w))) {
        printf("MISMATCH %s isa%d thr%u b%ld m%ld n%ld k%ld ta%d tb%d tc%d beta %g at %ld,%ld,%ld: "
               "%g vs %g\n",
               f64 ? "f64" : "f32", (int)dev->isa, dev->threads, (long)q.batch, (long)m, (long)n,
               (long)k, q.ta, q.tb, q.tc, q.beta, (long)e, (long)r, (long)col, got, w);
        fails++;
        break;
      }
    }
  free(a);
  free(b);
  free(c);
  free(want);
}

/* The ISA levels this CPU runs that have kernels of their own. */
static int isa_levels(bp_isa_level_t out[2]) {
  const cpu_features_t *f = cpu_features_get();
  int n = 0;
  if (f->avx2 && f->fma) out[n++] = BP_ISA_AVX2;
  if (f->avx512f && f->avx512vl) out[n++] = BP_ISA_AVX512;
  return n;
}

typedef void (*grid_fn)(cpu_device_t *dev, bool f64);

/* grid for f32 and f64 on every ISA level, one and two threads; fails on
 * any failure or when nothing ran, skips without AVX2 + FMA. */
static void on_each_device(const char *what, unsigned seed, grid_fn grid) {
  bp_isa_level_t isas[2];
  int nisa = isa_levels(isas);
  if (!nisa) {
    TEST_SKIP_CASE("no AVX2 + FMA on this CPU");
    return;
  }
  srand(seed);
  fails = checks = 0;
  for (int i = 0; i < nisa; i++)
    for (unsigned thr = 1; thr <= 2; thr++) {
      cpu_device_t dev;
      memset(&dev, 0, sizeof dev);
      dev.isa = isas[i];
      dev.threads = thr;
      dev.pool = cpu_pool_create(thr);
      grid(&dev, false);
      grid(&dev, true);
      cpu_pool_destroy(dev.pool);
    }
  printf("%s: %d cases, %d failures\n", what, checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0);
}

/* A few columns of C against a row-major B: every count of columns past
 * whole tiles of 4, rows past whole tiles of the kernel's RA, k past a
 * whole vector and past one k block (512 f32 / 256 f64 elements). */
static void narrow_cols_grid(cpu_device_t *dev, bool f64) {
  for (int64_t n = 2; n <= 8; n++) {
    run_case(dev, (dot_case_t){f64, 1, 301, n, 77, false, false, false, 1.5, 0, false});
    run_case(dev, (dot_case_t){f64, 1, 97 + n, n, 1100, false, false, false, -1, 0.5, false});
  }
  run_case(dev, (dot_case_t){f64, 1, 500, 12, 2048, false, false, false, 1, 1, false});
  run_case(dev, (dot_case_t){f64, 1, 130, 40, 300, false, false, false, 1, 0, false});
  run_case(dev, (dot_case_t){f64, 1, 200, 16, 33, false, false, false, 0.5, 0, false});
  /* a batch, each entry its own Bᵀ */
  run_case(dev, (dot_case_t){f64, 3, 50, 5, 300, false, false, false, 1, 0.25, false});
  /* B's columns not adjacent */
  run_case(dev, (dot_case_t){f64, 1, 40, 6, 150, false, false, false, 1, 0, true});
  /* C column-major: C^T = B^T A^T, the few rows of C become its columns */
  run_case(dev, (dot_case_t){f64, 1, 6, 250, 640, false, true, true, 2, 0, false});
}

/* B given as Bᵀ: a few rows (decode against a linear layer's weights) and
 * a few columns, both read in place. */
static void transposed_b_grid(cpu_device_t *dev, bool f64) {
  for (int64_t m = 2; m <= 7; m++)
    run_case(dev,
             (dot_case_t){f64, 1, m, 203, 700 + m, false, true, false, 1, m % 2 ? 0 : 0.5, false});
  run_case(dev, (dot_case_t){f64, 1, 32, 130, 515, false, true, false, -0.5, 1, false});
  run_case(dev, (dot_case_t){f64, 1, 333, 3, 96, false, true, false, 1, 0, false});
  run_case(dev, (dot_case_t){f64, 1, 190, 29, 1030, false, true, false, 1, 0.5, false});
  run_case(dev, (dot_case_t){f64, 2, 9, 66, 260, false, true, false, 1, 0, false});
}

/* The matrix-vector forms: one row of C against Bᵀ (dots over B's
 * columns), one column of C against a column-major A (A's columns
 * summed). */
static void vector_grid(cpu_device_t *dev, bool f64) {
  run_case(dev, (dot_case_t){f64, 1, 1, 300, 517, false, true, false, 1, 0, false});
  run_case(dev, (dot_case_t){f64, 1, 1, 1000, 129, false, true, false, -2, 0.5, false});
  run_case(dev, (dot_case_t){f64, 1, 300, 1, 517, true, false, false, 1, 0, false});
  run_case(dev, (dot_case_t){f64, 1, 1025, 1, 64, true, false, false, 0.5, 1, false});
}

/* One column panel of C on the unpacked path, A row- and column-major. */
static void one_panel_grid(cpu_device_t *dev, bool f64) {
  int64_t nr = dev->isa == BP_ISA_AVX512 ? 32 : 16;
  run_case(dev, (dot_case_t){f64, 1, 700, nr, 300, false, false, false, 1, 0, false});
  run_case(dev, (dot_case_t){f64, 1, 450, nr - 1, 800, true, false, false, 1, 0.5, false});
  run_case(dev, (dot_case_t){f64, 1, 260, nr, 20, false, false, false, -1, 1, false});
}

/* ---- bf16 and f16: the widening kernels, called through the route ---- */

static double bf2d(uint16_t h) {
  return cpu_bf16_to_float(h);
}
static double hf2d(uint16_t h) {
  return cpu_f16_to_float(h);
}

/* One bf16 / f16 case (B as Bᵀ: tb) through cpu_fast_gemm_dot on the f32
 * kernel kr, or through cpu_fast_gemm (whole): C rounded once from f32
 * sums, within a rounding of C's type, f32 accumulation of k exact
 * products and the f32 roundings of alpha * s and beta * C. */
static void run_half_case(cpu_device_t *dev, const cpu_fast_gemm_kernel_t *kr, bool bf,
                          dot_case_t q, bool whole) {
  /* q.bgap here: A all ones and each column of B its first half's values
   * negated in its second half, so C is 0 and a partial sum rounded to
   * C's type on the way would show */
  bool cancel = q.bgap;
  int64_t m = q.m, n = q.n, k = q.k, nb = q.batch;
  int64_t lda = k + 3, ldb = (q.tb ? k : n) + 5, ldc = n + 2;
  int64_t sa = m * lda + 7, sb = (q.tb ? n : k) * ldb + 9, sc = m * ldc + 11;
  uint16_t *A = malloc(2 * (size_t)(nb * sa)), *B = malloc(2 * (size_t)(nb * sb)),
           *C = malloc(2 * (size_t)(nb * sc));
  uint16_t (*enc)(double) = bf ? cpu_bf16_from_double : cpu_f16_from_double;
  double (*dec)(uint16_t) = bf ? bf2d : hf2d;
  for (int64_t i = 0; i < nb * sa; i++) A[i] = enc(cancel ? 1 : (rand() % 20001 - 10000) / 5003.0);
  for (int64_t i = 0; i < nb * sb; i++) B[i] = enc((rand() % 20001 - 10000) / 5003.0);
  int64_t bk0 = q.tb ? 1 : ldb, bn0 = q.tb ? ldb : 1;
  for (int64_t b = 0; cancel && b < nb; b++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t p = 0; p < k / 2; p++) {
        B[b * sb + p * bk0 + j * bn0] = enc(1 + (rand() % 1000) / 1000.0);
        B[b * sb + (p + k / 2) * bk0 + j * bn0] = B[b * sb + p * bk0 + j * bn0] ^ 0x8000;
      }
  for (int64_t i = 0; i < nb * sc; i++)
    C[i] = q.beta == 0 ? 0x7fc0 : enc((rand() % 2001 - 1000) / 1000.0);
  int64_t bk = q.tb ? 1 : ldb, bn = q.tb ? ldb : 1;
  double *R = malloc(sizeof(double) * (size_t)(nb * m * n)),
         *T = malloc(sizeof(double) * (size_t)(nb * m * n));
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double acc = 0, mag = 0;
        for (int64_t p = 0; p < k; p++) {
          double x = dec(A[b * sa + i * lda + p]) * dec(B[b * sb + p * bk + j * bn]);
          acc += x, mag += fabs(x);
        }
        double c0 = q.beta == 0 ? 0 : dec(C[b * sc + i * ldc + j]);
        double r = q.alpha * acc + q.beta * c0;
        R[(b * m + i) * n + j] = r;
        T[(b * m + i) * n + j] = ldexp(fabs(r), bf ? -7 : -10) + ldexp(fabs(q.beta * c0), -22) +
                                 (double)(k + 4) * ldexp(mag * fabs(q.alpha), -23) + ldexp(1, -24);
      }
  bp_dtype_t dt = bf ? BP_BF16 : BP_F16;
  bp_gemm_args_t g = test_gemm_args(q.alpha, q.beta, cpu_tensor_view3(A, dt, nb, m, k, sa, lda, 1),
                                    cpu_tensor_view3(B, dt, nb, k, n, sb, bk, bn),
                                    cpu_tensor_view3(C, dt, nb, m, n, sc, ldc, 1));
  const gemm_type_t *t = bf ? &cpu_fast_gemm_type_bf16 : &cpu_fast_gemm_type_f16;
  gemm_view_t v = {m, n, k, (const char *)A, (const char *)B, (char *)C, lda, 1, bk, bn, ldc, 1};
  float alpha = (float)q.alpha, beta = (float)q.beta, one = 1;
  checks++;
  bool ran = whole ? cpu_fast_gemm(dev, &g) == BP_OK
                   : cpu_fast_gemm_dot_fits(t, kr, &v) &&
                         cpu_fast_gemm_dot(dev, t, kr, &v, nb, sa, sb, sc, &alpha, &beta, &one);
  int64_t miss = ran ? test_gemm_first_miss(C, dec, nb, m, n, sc, ldc, 1, R, T) : 0;
  if (miss >= 0) {
    printf("%s %s thr%u b%ld m%ld n%ld k%ld tb%d: %s", bf ? "bf16" : "f16", whole ? "gemm" : "dot",
           dev->threads, (long)nb, (long)m, (long)n, (long)k, q.tb, ran ? "" : "not taken\n");
    if (ran)
      printf("at %ld: %g vs %g\n", (long)miss,
             dec(C[miss / (m * n) * sc + miss % (m * n) / n * ldc + miss % n]), R[miss]);
    fails++;
  }
  free(A), free(B), free(C), free(R), free(T);
}

static void half_grid(cpu_device_t *dev, bool bf) {
  const cpu_fast_gemm_kernel_t *kr =
      dev->isa == BP_ISA_AVX512 ? &cpu_fast_sgemm_avx512 : &cpu_fast_sgemm_avx2;
  for (int64_t n = 2; n <= 7; n++)
    run_half_case(
        dev, kr, bf,
        (dot_case_t){false, 1, 61, n, 37 + 50 * n, false, false, false, 1, n % 2 ? 0 : 0.5, false},
        false);
  run_half_case(dev, kr, bf, (dot_case_t){false, 2, 19, 12, 700, false, false, false, -1, 0, false},
                false);
  for (int64_t m = 1; m <= 4; m++)
    run_half_case(dev, kr, bf,
                  (dot_case_t){false, 1, m, 70, 515, false, true, false, 1, m == 2 ? 1 : 0, false},
                  false);
  run_half_case(dev, kr, bf, (dot_case_t){false, 1, 9, 33, 1030, false, true, false, 0.5, 0, false},
                false);
  /* past one k block of f32 sums: C rounded once, at the end */
  run_half_case(dev, kr, bf, (dot_case_t){false, 1, 13, 6, 3000, false, false, false, 1, 0, true},
                false);
  /* through the whole GEMM: the route where no native kernel takes it */
  run_half_case(dev, kr, bf, (dot_case_t){false, 1, 1, 300, 640, false, true, false, 1, 0, false},
                true);
  run_half_case(dev, kr, bf,
                (dot_case_t){false, 1, 200, 8, 300, false, false, false, 1, 0.5, false}, true);
}

static void half_grids(cpu_device_t *dev, bool f64) {
  half_grid(dev, !f64); /* the grid's second pass takes f16 */
}

static void test_half_types(void **state) {
  (void)state;
  on_each_device("bf16 and f16", 15, half_grids);
}

static void test_narrow_cols(void **state) {
  (void)state;
  on_each_device("narrow columns", 11, narrow_cols_grid);
}

static void test_transposed_b(void **state) {
  (void)state;
  on_each_device("B given as B^T", 12, transposed_b_grid);
}

static void test_vector_forms(void **state) {
  (void)state;
  on_each_device("matrix-vector forms", 13, vector_grid);
}

static void test_one_panel(void **state) {
  (void)state;
  on_each_device("one column panel", 14, one_panel_grid);
}

/* The route is chosen where it should be and only there. */
static void test_dot_choice(void **state) {
  (void)state;
  bp_isa_level_t isas[2];
  int nisa = isa_levels(isas);
  if (!nisa) {
    TEST_SKIP_CASE("no AVX2 + FMA on this CPU");
    return;
  }
  for (int i = 0; i < nisa; i++) {
    bool avx512 = isas[i] == BP_ISA_AVX512;
    const cpu_fast_gemm_kernel_t *f32 = avx512 ? &cpu_fast_sgemm_avx512 : &cpu_fast_sgemm_avx2;
    const cpu_fast_gemm_kernel_t *f64 = avx512 ? &cpu_fast_dgemm_avx512 : &cpu_fast_dgemm_avx2;
    assert_non_null(f32->ukr_dot);
    assert_non_null(f64->ukr_dot);
    /* row-major A and B, n columns (m x n x k, strides sam sak sbk sbn) */
    gemm_view_t nn = {2048, 8, 2048, NULL, NULL, NULL, 2048, 1, 8, 1, 8, 1};
    assert_true(cpu_fast_gemm_dot_fits(&cpu_fast_gemm_type_f32, f32, &nn));
    assert_true(cpu_fast_gemm_dot_fits(&cpu_fast_gemm_type_f64, f64, &nn));
    nn.n = nn.sbk = f32->nr; /* one whole panel: the unpacked path */
    assert_false(cpu_fast_gemm_dot_fits(&cpu_fast_gemm_type_f32, f32, &nn));
    assert_true(cpu_fast_gemm_direct_fits(&cpu_fast_gemm_type_f32, f32, &nn));
    nn.n = nn.sbk = 2 * f32->nr; /* two: the blocked path */
    assert_false(cpu_fast_gemm_direct_fits(&cpu_fast_gemm_type_f32, f32, &nn));
    assert_false(cpu_fast_gemm_dot_fits(&cpu_fast_gemm_type_f32, f32, &nn));
    nn.n = nn.sbk = f32->nr + 8; /* a panel and a part of one */
    assert_true(cpu_fast_gemm_dot_fits(&cpu_fast_gemm_type_f32, f32, &nn));
    nn.n = nn.sbk = 4 * f64->nr; /* wide: the blocked path */
    assert_false(cpu_fast_gemm_dot_fits(&cpu_fast_gemm_type_f64, f64, &nn));
    nn.n = nn.sbk = 8;
    nn.k = 16; /* too short a sum */
    assert_false(cpu_fast_gemm_dot_fits(&cpu_fast_gemm_type_f32, f32, &nn));
    nn.k = 2048;
    nn.sak = 2048, nn.sam = 1; /* A column-major */
    assert_false(cpu_fast_gemm_dot_fits(&cpu_fast_gemm_type_f32, f32, &nn));
    /* B given as Bᵀ: a few rows, then many of both */
    gemm_view_t nt = {8, 4096, 4096, NULL, NULL, NULL, 4096, 1, 1, 4096, 4096, 1};
    assert_true(cpu_fast_gemm_dot_fits(&cpu_fast_gemm_type_f32, f32, &nt));
    assert_true(cpu_fast_gemm_dot_fits(&cpu_fast_gemm_type_f64, f64, &nt));
    nt.m = 256;
    assert_false(cpu_fast_gemm_dot_fits(&cpu_fast_gemm_type_f32, f32, &nt));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dot_choice),   cmocka_unit_test(test_narrow_cols),
      cmocka_unit_test(test_transposed_b), cmocka_unit_test(test_vector_forms),
      cmocka_unit_test(test_one_panel),    cmocka_unit_test(test_half_types),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
