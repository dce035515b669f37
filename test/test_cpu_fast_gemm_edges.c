/*
 * test_cpu_fast_gemm_edges.c — C's last rows on the CPU fast path's
 * AVX-512 and AVX2 GEMM (plugins/cpu/fast/gemm/), where a panel shorter
 * than the kernel's MR takes a shorter kernel. AVX-512: f32 rows of 1-4,
 * 5-8 and 9-11 (4, 8 or 12 rows of FMAs; the packed path's edge tiles,
 * the unpacked path with A row- and column-major, a few rows of C), f64
 * rows of 1-2, 3-4, 5-8 and 9-13 (2, 4, 8 or 14 rows read from the 14-row
 * panels); AVX2: rows of 1-2, 3-4 and 5 (2, 4 or 6 rows, f32 and f64). Every
 * remainder of m against MR, k past one k block, beta 0 over NaN and
 * beta != 0, C row- and column-major (the latter computes Cᵀ = Bᵀ Aᵀ, so
 * the remainder falls on n), against a double-precision reference.
 * Also the blocking and the split over threads: k, m and n past one
 * block (cut into even blocks, cpu_fast_gemm_even_block) and C no taller
 * than wide split by columns on two threads.
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
#include "plugins/cpu/fast/gemm/gemm.h"
#include "plugins/cpu/fast/gemm/gemm_driver.h"
#include "plugins/cpu/tensor.h"
#include "test/gemm_vals.h"
#include "test/skip.h"

static int fails, checks;

/* One d1 x d2 matrix as a batch of one (its batch stride past its end). */
static bp_plugin_tensor_t t3(void *p, bool f64, int64_t d1, int64_t d2, int64_t s1, int64_t s2) {
  return cpu_tensor_view3(p, f64 ? BP_F64 : BP_F32, 1, d1, d2, d1 * d2 + 64, s1, s2);
}

/* C (m x n) = alpha A B + beta C; ta: A column-major, tc: C column-major. */
static void run_case(cpu_device_t *dev, bool f64, int64_t m, int64_t n, int64_t k, bool ta, bool tc,
                     double alpha, double beta) {
  size_t es = f64 ? 8 : 4;
  int64_t lda = (ta ? m : k) + 3, ldb = n + 5, ldc = (tc ? m : n) + 2;
  int64_t na = (ta ? k : m) * lda, nb = k * ldb, nc = (tc ? n : m) * ldc;
  void *a = malloc(es * (size_t)na), *b = malloc(es * (size_t)nb), *c = malloc(es * (size_t)nc);
  double *want = malloc(sizeof(double) * (size_t)(m * n));
  for (int64_t i = 0; i < na; i++) setv(a, f64, i, (rand() % 2001 - 1000) / 1000.0);
  for (int64_t i = 0; i < nb; i++) setv(b, f64, i, (rand() % 2001 - 1000) / 1000.0);
  for (int64_t i = 0; i < nc; i++)
    setv(c, f64, i, beta == 0 ? NAN : (rand() % 2001 - 1000) / 1000.0);
  int64_t sam = ta ? 1 : lda, sak = ta ? lda : 1, scm = tc ? 1 : ldc, scn = tc ? ldc : 1;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++)
        s += getv(a, f64, i * sam + p * sak) * getv(b, f64, p * ldb + j);
      want[i * n + j] = alpha * s + (beta == 0 ? 0 : beta * getv(c, f64, i * scm + j * scn));
    }
  bp_gemm_args_t g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.alpha = alpha;
  g.beta = beta;
  g.a = t3(a, f64, m, k, sam, sak);
  g.b = t3(b, f64, k, n, ldb, 1);
  g.c = t3(c, f64, m, n, scm, scn);
  checks++;
  bp_status_t st = cpu_fast_gemm(dev, &g);
  double tol = f64 ? 1e-12 : 1e-5;
  if (st != BP_OK) {
    printf("status %d for %s m%ld n%ld k%ld\n", st, f64 ? "f64" : "f32", (long)m, (long)n, (long)k);
    fails++;
  } else
    for (int64_t i = 0; i < m * n; i++) {
      double got = getv(c, f64, (i / n) * scm + (i % n) * scn), r = want[i];
      if (!(fabs(got - r) <= tol * (sqrt((double)k) + 1) * 2 + tol * fabs(r))) {
        printf("MISMATCH %s thr%u m%ld n%ld k%ld ta%d tc%d beta %g at %ld,%ld: %g vs %g\n",
               f64 ? "f64" : "f32", dev->threads, (long)m, (long)n, (long)k, ta, tc, beta,
               (long)(i / n), (long)(i % n), got, r);
        fails++;
        break;
      }
    }
  free(a);
  free(b);
  free(c);
  free(want);
}

/* The ISA levels with kernels of their own this CPU runs, each with its
 * f32 and f64 MR. */
typedef struct isa_case {
  bp_isa_level_t isa;
  int mr32, mr64;
  bool ok;
} isa_case_t;

static int isa_cases(isa_case_t out[2]) {
  const cpu_features_t *f = cpu_features_get();
  out[0] = (isa_case_t){BP_ISA_AVX2, 6, 6, f->avx2 && f->fma};
  out[1] = (isa_case_t){BP_ISA_AVX512, 12, 14, f->avx512f && f->avx512vl};
  return out[0].ok + out[1].ok;
}

/* A grid of cases on one device, for one ISA level. */
typedef void (*grid_fn)(cpu_device_t *dev, const isa_case_t *isa);

/* grid on every ISA level this CPU runs, on devices of 1 to max_threads
 * threads (a pool of their own), after srand(seed); then what found
 * counts, and the test fails on any failure or when nothing ran. Skips
 * the case without AVX2 + FMA. */
static void on_each_isa(const char *what, unsigned seed, unsigned max_threads, grid_fn grid) {
  isa_case_t isas[2];
  if (!isa_cases(isas)) {
    TEST_SKIP_CASE("no AVX2 + FMA on this CPU");
    return;
  }
  srand(seed);
  fails = checks = 0;
  for (int i = 0; i < 2; i++)
    for (unsigned thr = 1; thr <= max_threads && isas[i].ok; thr++) {
      cpu_device_t dev;
      memset(&dev, 0, sizeof dev);
      dev.isa = isas[i].isa;
      dev.threads = thr;
      dev.pool = cpu_pool_create(thr);
      grid(&dev, &isas[i]);
      cpu_pool_destroy(dev.pool);
    }
  printf("%s: %d cases, %d failures\n", what, checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0);
}

/* Every remainder of m against the kernel's MR, m past GEMM_DIRECT_MAX
 * (224) so f32 packs; k past one k block (KC 256 / 384). */
static void packed_grid(cpu_device_t *dev, bool f64, int mr) {
  for (int r = 1; r < mr; r++) {
    int64_t m = (mr > 6 ? 20 : 40) * mr + r;
    run_case(dev, f64, m, 40, 400, r % 2, false, 1.5, r % 3 ? 0.5 : 0);
    run_case(dev, f64, m, 33, 400, r % 2 == 0, false, 1, r % 3 ? 0 : 1);
    /* C column-major: the remainder of m lands on the columns */
    run_case(dev, f64, 40, m, 50, false, true, -1, 0.5);
  }
  /* a few rows of C (the transformer's m = 16 is 12 + 4), packed */
  run_case(dev, f64, 16, 300, 500, false, false, 1, 0);
  run_case(dev, f64, 16 + mr, 260, 300, true, false, 0.5, 1);
}

static void packed_grids(cpu_device_t *dev, const isa_case_t *isa) {
  packed_grid(dev, false, isa->mr32);
  packed_grid(dev, true, isa->mr64);
}

static void test_packed_edges(void **state) {
  (void)state;
  on_each_isa("gemm edges (packed)", 22, 2, packed_grids);
}

/* f32 run unpacked (m, n <= 224): the row-major A kernel and the
 * column-major A kernel on every remainder of m against MR. */
static void unpacked_grid(cpu_device_t *dev, const isa_case_t *isa) {
  int mr = isa->mr32;
  for (int r = 1; r <= mr; r++) {
    int64_t m = 2 * mr + r;
    run_case(dev, false, m, 70, 100, false, false, 1, r % 2 ? 0 : 0.5);
    run_case(dev, false, m, 70, 500, true, false, -0.5, r % 2 ? 1 : 0);
    /* a few rows (at most two panels): the skinny unpacked path */
    run_case(dev, false, r + mr, 300, 300, false, false, 1, 0);
  }
}

static void test_unpacked_edges(void **state) {
  (void)state;
  on_each_isa("gemm edges (unpacked)", 23, 1, unpacked_grid);
}

/* Every length against the blocks of the kernels: as few blocks as max
 * allows, each a multiple of align but the last, none empty, and the last
 * short of the others by less than an align per block. */
static void test_even_block(void **state) {
  (void)state;
  static const int64_t maxes[] = {256, 384, 480, 512, 640, 1024, 1536, 3066, 3072};
  static const int64_t aligns[] = {1, 6, 8, 12, 14, 16, 32};
  int bad = 0;
  for (size_t mi = 0; mi < sizeof maxes / sizeof *maxes; mi++)
    for (size_t ai = 0; ai < sizeof aligns / sizeof *aligns; ai++) {
      int64_t max = maxes[mi], align = aligns[ai];
      if (max % align) continue; /* the kernels' blocks are whole tiles */
      for (int64_t len = 1; len <= 4 * max + 3; len += len < 2 * max ? 1 : 7) {
        int64_t b = cpu_fast_gemm_even_block(len, max, align);
        int64_t want = (len + max - 1) / max, blocks = b > 0 ? (len + b - 1) / b : 0;
        int64_t last = len - (blocks - 1) * b;
        bool ok = b > 0 && b <= max && blocks == want && last > 0 &&
                  (len <= max ? b == len : b % align == 0 && b - last < blocks * align);
        if (!ok && bad++ < 5)
          printf("even_block(%ld, %ld, %ld) = %ld\n", (long)len, (long)max, (long)align, (long)b);
      }
    }
  assert_int_equal(bad, 0);
}

/* k, n and m past one block of each kernel (even blocks), and C no taller
 * than wide on two threads (split by columns when that evens out the
 * parts: 256 and 512 in rows of MR = 12 do not), on both ISA levels. */
static void block_grid(cpu_device_t *dev, bool f64) {
  run_case(dev, f64, 256, 256, 300, false, false, 1, 0);
  run_case(dev, f64, 512, 512, 90, true, false, -0.5, 1);
  run_case(dev, f64, 300, 320, 200, false, true, 1, 0.5);
  run_case(dev, f64, 250, 40, 769, true, false, 1, 0);
  run_case(dev, f64, 250, 40, 1040, false, false, 2, 0.5);
  run_case(dev, f64, 250, 1100, 60, false, false, 1, 0);
  run_case(dev, f64, 3100, 40, 60, false, false, 1, 1);
}

static void block_grids(cpu_device_t *dev, const isa_case_t *isa) {
  (void)isa;
  block_grid(dev, false);
  block_grid(dev, true);
}

static void test_blocks_and_splits(void **state) {
  (void)state;
  on_each_isa("gemm blocks and splits", 24, 2, block_grids);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_packed_edges),
      cmocka_unit_test(test_unpacked_edges),
      cmocka_unit_test(test_even_block),
      cmocka_unit_test(test_blocks_and_splits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
