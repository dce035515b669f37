/*
 * test_cpu_fast.c — the fast paths of the "cpu" device (plugins/cpu/fast/)
 * against a plain double-precision reference written here, linked straight
 * from the plugin's objects so every ISA level and thread count can be
 * forced: GEMM (f32, f64, bf16 incl. AMX, f16) with odd sizes, k == 0,
 * transposed / strided / column-major / batch-broadcast operands, alpha and
 * beta variants, beta == 0 over NaN; fused attention with GQA, causal masks
 * (including fully masked rows) and permuted layouts; row-major GEMV.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/gemm/gemm.h"
#include "test/skip.h"

static int fails, checks;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static uint16_t f2bf(float f) { uint32_t u; memcpy(&u, &f, 4); if ((u & 0x7fffffff) > 0x7f800000) return 0x7fc0; u += 0x7fff + ((u >> 16) & 1); return u >> 16; }
static float bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
static float h2f(uint16_t h) { _Float16 x; memcpy(&x, &h, 2); return (float)x; }
static uint16_t f2h(float f) { _Float16 x = (_Float16)f; uint16_t h; memcpy(&h, &x, 2); return h; }
static double getv(const void *p, int dt, int64_t i) {
  switch (dt) { case BP_F32: return ((const float *)p)[i]; case BP_F64: return ((const double *)p)[i];
  case BP_BF16: return bf2f(((const uint16_t *)p)[i]); default: return h2f(((const uint16_t *)p)[i]); } }
static void setv(void *p, int dt, int64_t i, double v) {
  switch (dt) { case BP_F32: ((float *)p)[i] = v; break; case BP_F64: ((double *)p)[i] = v; break;
  case BP_BF16: ((uint16_t *)p)[i] = f2bf(v); break; default: ((uint16_t *)p)[i] = f2h(v); } }
static size_t esz(int dt) { return dt == BP_F64 ? 8 : dt == BP_F32 ? 4 : 2; }
static bp_plugin_tensor_t T3(void *p, int dt, int64_t d0, int64_t d1, int64_t d2, int64_t s0, int64_t s1, int64_t s2) {
  bp_plugin_tensor_t t; memset(&t, 0, sizeof t); t.ptr = (uint64_t)(uintptr_t)p; t.dtype = dt; t.rank = 3;
  t.shape[0] = d0; t.shape[1] = d1; t.shape[2] = d2; t.strides[0] = s0; t.strides[1] = s1; t.strides[2] = s2; return t; }
static void run(cpu_device_t *dev, int dt, int64_t B, int64_t m, int64_t n, int64_t k, int ta, int tb, int tc, int bcastb, double alpha, double beta) {
  int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = (tc ? m : n) + 2;
  int64_t sa = (ta ? k * lda : m * lda), sb = bcastb ? 0 : (tb ? n * ldb : k * ldb), sc = tc ? n * ldc : m * ldc;
  size_t es = esz(dt);
  void *A = malloc(es * (B * sa + 16)), *Bm = malloc(es * ((bcastb ? 1 : B) * (tb ? n * ldb : k * ldb) + 16)), *C = malloc(es * (B * sc + 16));
  double *R = malloc(sizeof(double) * (B * m * n + 1));
  for (int64_t i = 0; i < B * sa + 16; i++) setv(A, dt, i, (rand() % 2001 - 1000) / 1000.0);
  for (int64_t i = 0; i < (bcastb ? 1 : B) * (tb ? n * ldb : k * ldb) + 16; i++) setv(Bm, dt, i, (rand() % 2001 - 1000) / 1000.0);
  for (int64_t i = 0; i < B * sc + 16; i++) setv(C, dt, i, beta == 0 ? NAN : (rand() % 2001 - 1000) / 1000.0);
  int64_t asm_ = ta ? 1 : lda, ask = ta ? lda : 1, bsk = tb ? 1 : ldb, bsn = tb ? ldb : 1, csm = tc ? 1 : ldc, csn = tc ? ldc : 1;
  for (int64_t b = 0; b < B; b++) for (int64_t i = 0; i < m; i++) for (int64_t j = 0; j < n; j++) {
    double s = 0; for (int64_t p = 0; p < k; p++) s += getv(A, dt, b * sa + i * asm_ + p * ask) * getv(Bm, dt, b * sb + p * bsk + j * bsn);
    double c0 = beta == 0 ? 0 : getv(C, dt, b * sc + i * csm + j * csn);
    R[(b * m + i) * n + j] = alpha * s + beta * c0; }
  bp_gemm_args_t g; memset(&g, 0, sizeof g); g.struct_size = sizeof g; g.alpha = alpha; g.beta = beta;
  g.a = T3(A, dt, B, m, k, sa, asm_, ask); g.b = T3(Bm, dt, B, k, n, sb, bsk, bsn); g.c = T3(C, dt, B, m, n, sc, csm, csn);
  bp_status_t st = cpu_fast_gemm(dev, &g);
  checks++;
  if (st != BP_OK) { printf("status %d dt%d B%ld m%ld n%ld k%ld\n", st, dt, B, m, n, k); fails++; goto out; }
  double tol = dt == BP_F64 ? 1e-12 : dt == BP_F32 ? 1e-5 : 1e-2;
  for (int64_t b = 0; b < B; b++) for (int64_t i = 0; i < m; i++) for (int64_t j = 0; j < n; j++) {
    double r = R[(b * m + i) * n + j], g2 = getv(C, dt, b * sc + i * csm + j * csn);
    if (!(fabs(r - g2) <= tol * (sqrt((double)k) + 1) * (1 + fabs(alpha)) + tol * fabs(r))) {
      printf("MISMATCH dt%d isa%d thr%u B%ld m%ld n%ld k%ld ta%d tb%d tc%d bb%d a%g b%g at %ld,%ld,%ld: %g vs %g\n", dt, dev->isa, dev->threads, B, m, n, k, ta, tb, tc, bcastb, alpha, beta, b, i, j, g2, r);
      fails++; goto out; } }
out: free(A); free(Bm); free(C); free(R);
}
static bp_plugin_tensor_t T4(float *p, int64_t a, int64_t b, int64_t c, int64_t d, int perm) {
  bp_plugin_tensor_t t; memset(&t, 0, sizeof t); t.ptr = (uint64_t)(uintptr_t)p; t.dtype = BP_F32; t.rank = 4;
  t.shape[0] = a; t.shape[1] = b; t.shape[2] = c; t.shape[3] = d;
  if (perm) { /* [B, S, H, D] memory layout */ t.strides[3] = 1; t.strides[1] = d; t.strides[2] = b * d; t.strides[0] = b * c * d; }
  else { t.strides[3] = 1; t.strides[2] = d; t.strides[1] = c * d; t.strides[0] = b * c * d; }
  return t; }
static float *rnd(int64_t n) { float *p = malloc(4 * (n + 1)); for (int64_t i = 0; i < n; i++) p[i] = (rand() % 2001 - 1000) / 500.0f; return p; }
static void run_att(cpu_device_t *dev, int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Skv, int64_t D, int64_t Dv, int causal, int perm, int bench) {
  float *q = rnd(B * Hq * Sq * D), *k = rnd(B * Hkv * Skv * D), *v = rnd(B * Hkv * Skv * Dv), *o = rnd(B * Hq * Sq * Dv);
  bp_attention_args_t a; memset(&a, 0, sizeof a); a.struct_size = sizeof a; a.causal = causal; a.scale = 1.0 / sqrt((double)D);
  a.q = T4(q, B, Hq, Sq, D, perm); a.k = T4(k, B, Hkv, Skv, D, perm); a.v = T4(v, B, Hkv, Skv, Dv, 0); a.out = T4(o, B, Hq, Sq, Dv, perm);
  double t0 = now();
  bp_status_t st = cpu_fast_attention(dev, &a);
  double t = now() - t0;
  if (st) { printf("status %d\n", st); fails++; return; }
  checks++;
  if (bench) { printf("attention B%ld H%ld S%ld D%ld causal%d: %.2f ms, %.1f GF/s\n", B, Hq, Sq, D, causal, t * 1e3, 2.0 * B * Hq * Sq * Skv * (D + Dv) / (causal ? 2 : 1) / t * 1e-9); }
  if (bench) goto out;
  double *s = malloc(8 * (Skv + 1));
  for (int64_t b = 0; b < B; b++) for (int64_t h = 0; h < Hq; h++) for (int64_t i = 0; i < Sq; i++) {
    int64_t g = h / (Hq / Hkv); int64_t lim = causal ? i + Skv - Sq + 1 : Skv; if (lim < 0) lim = 0; if (lim > Skv) lim = Skv;
    double mx = -INFINITY;
    for (int64_t j = 0; j < lim; j++) { double d = 0; for (int64_t x = 0; x < D; x++) d += (double)q[b * a.q.strides[0] + h * a.q.strides[1] + i * a.q.strides[2] + x] * k[b * a.k.strides[0] + g * a.k.strides[1] + j * a.k.strides[2] + x]; s[j] = d * a.scale; if (s[j] > mx) mx = s[j]; }
    double l = 0; for (int64_t j = 0; j < lim; j++) { s[j] = exp(s[j] - mx); l += s[j]; }
    for (int64_t x = 0; x < Dv; x++) { double acc = 0; for (int64_t j = 0; j < lim; j++) acc += s[j] * v[b * a.v.strides[0] + g * a.v.strides[1] + j * a.v.strides[2] + x];
      double r = lim ? acc / l : 0, gt = o[b * a.out.strides[0] + h * a.out.strides[1] + i * a.out.strides[2] + x];
      if (!(fabs(r - gt) <= 1e-4 * (1 + fabs(r)))) { printf("MISMATCH B%ld Hq%ld Hkv%ld Sq%ld Skv%ld D%ld Dv%ld c%d p%d at %ld %ld %ld %ld: %g vs %g\n", B, Hq, Hkv, Sq, Skv, D, Dv, causal, perm, b, h, i, x, gt, r); fails++; free(s); goto out; } }
  }
  free(s);
out: free(q); free(k); free(v); free(o);
}

static void test_gemm(void **state) {
  (void)state;
  int dts[] = {BP_F32, BP_F64, BP_BF16, BP_F16};
  int64_t sz[] = {1, 2, 7, 17, 31, 64, 127};
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  srand(1);
  fails = checks = 0;
  for (int isa = 1; isa <= 3; isa++)
    for (int thr = 1; thr <= 2; thr++)
      for (int d = 0; d < 4; d++) {
        dev.isa = isa;
        dev.threads = thr;
        dev.pool = cpu_pool_create(thr);
        for (int x = 0; x < 25; x++) {
          int64_t m = sz[rand() % 7], n = sz[rand() % 7];
          int64_t k = rand() % 8 == 0 ? 0 : sz[rand() % 7];
          double al = rand() % 3 == 0 ? -1.5 : 1;
          double be = (double[]){0, 1, 0.5}[rand() % 3];
          run(&dev, dts[d], 1 + rand() % 3 * (rand() % 2), m, n, k, rand() % 2,
              rand() % 2, rand() % 2, rand() % 2, al, be);
        }
        /* past one k block (KC) and one m / n block, threaded */
        if (thr == 2) {
          run(&dev, dts[d], 1, 200, 700, 500, 0, 0, 0, 0, 1, 0);
          run(&dev, dts[d], 2, 257, 129, 800, 1, 1, 0, 0, 0.5, 2);
          /* more batch entries than workers: claimed as workers come
           * free; packed, with ragged row and column panels (edge tiles
           * in place for f32) */
          run(&dev, dts[d], 5, 250, 263, 64, 0, 0, 0, 0, 1, 0.5);
          run(&dev, dts[d], 3, 231, 300, 70, 1, 0, 0, 1, -1.5, 0);
        }
        run(&dev, dts[d], 1, 130, 100, 45, 0, 1, 1, 0, 1, 1);
        /* f16 / bf16 past one k block in several f32 bands of C (the
         * band shrunk to a few rows), C row- and column-major */
        dev.tune.gemm_band_floats = 1500;
        run(&dev, dts[d], 1, 67, 90, 300, 0, 1, 0, 0, 0.5, 1);
        run(&dev, dts[d], 2, 41, 77, 290, 1, 0, 1, 0, 1, 0);
        dev.tune.gemm_band_floats = 0; /* the default */
        cpu_pool_destroy(dev.pool);
      }
  printf("gemm: %d cases, %d failures\n", checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* Small f32 problems, which run unpacked (m, n, k <= 224, or m, n <= 224
 * and any k): every ragged MR / NR edge around 64, row- and column-major
 * A, C both ways, beta 0 over NaN, on every ISA level and 1 or 2 threads. */
static void test_gemm_small(void **state) {
  (void)state;
  int64_t sz[] = {1, 5, 6, 11, 12, 13, 16, 17, 33, 63, 64, 65, 96, 128, 160, 197, 224};
  int nsz = (int)(sizeof sz / sizeof *sz);
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  srand(7);
  fails = checks = 0;
  for (int isa = 1; isa <= 3; isa++)
    for (int thr = 1; thr <= 2; thr++) {
      dev.isa = isa;
      dev.threads = thr;
      dev.pool = cpu_pool_create(thr);
      for (int x = 0; x < 40; x++) {
        int64_t m = sz[rand() % nsz], n = sz[rand() % nsz], k = sz[rand() % nsz];
        double al = rand() % 3 == 0 ? -1.5 : 1;
        double be = (double[]){0, 1, 0.5}[rand() % 3];
        run(&dev, BP_F32, 1 + rand() % 2, m, n, k, rand() % 2, 0, rand() % 4 == 0,
            0, al, be);
      }
      run(&dev, BP_F32, 1, 64, 64, 64, 0, 0, 0, 0, 1, 0);
      run(&dev, BP_F32, 1, 128, 128, 128, 1, 0, 0, 0, 1, 1);
      /* small C, long k: unpacked too, in k blocks (beta on the first) */
      run(&dev, BP_F32, 1, 100, 150, 700, 0, 0, 0, 0, -1.5, 0.5);
      run(&dev, BP_F32, 1, 37, 224, 1300, 1, 0, 0, 0, 1, 1);
      run(&dev, BP_F32, 2, 13, 20, 2000, 0, 0, 0, 0, 1, 0);
      cpu_pool_destroy(dev.pool);
    }
  printf("gemm small: %d cases, %d failures\n", checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* One problem run by the 1-thread loops and by the 2-worker team (shared
 * A and B panels, claimed row chunks): the same blocking, so the same bits. When
 * nested, the team's call is made from inside a pool task and runs inline
 * on that worker alone. */
typedef struct team_case {
  cpu_device_t *dev;
  bp_gemm_args_t *g;
  bp_status_t st;
} team_case_t;

static void team_call(void *ctx, int64_t b, int64_t e, unsigned w) {
  (void)e, (void)w;
  team_case_t *c = ctx;
  if (b == 1) c->st = cpu_fast_gemm(c->dev, c->g);
}

/* The threaded device's tune.gemm_row_split_panels and tune.gemm_band_floats
 * in team_compare. */
static int64_t team_row_split, team_band_floats;

static void team_compare(int isa, int dt, int64_t m, int64_t n, int64_t k, int ta,
                         int tb, int tc, double alpha, double beta, int nested) {
  size_t es = esz(dt);
  void *A = malloc(es * m * k), *B = malloc(es * k * n), *C1 = malloc(es * m * n),
       *C2 = malloc(es * m * n);
  for (int64_t i = 0; i < m * k; i++) setv(A, dt, i, (rand() % 2001 - 1000) / 997.0);
  for (int64_t i = 0; i < k * n; i++) setv(B, dt, i, (rand() % 2001 - 1000) / 991.0);
  for (int64_t i = 0; i < m * n; i++) setv(C1, dt, i, (rand() % 2001 - 1000) / 983.0);
  memcpy(C2, C1, es * m * n);
  bp_gemm_args_t g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.alpha = alpha;
  g.beta = beta;
  g.a = ta ? T3(A, dt, 1, m, k, m * k, 1, m) : T3(A, dt, 1, m, k, m * k, k, 1);
  g.b = tb ? T3(B, dt, 1, k, n, k * n, 1, k) : T3(B, dt, 1, k, n, k * n, n, 1);
  g.c = tc ? T3(C1, dt, 1, m, n, m * n, 1, m) : T3(C1, dt, 1, m, n, m * n, n, 1);
  cpu_device_t one = {.isa = isa, .threads = 1, .pool = cpu_pool_create(1)};
  cpu_device_t two = {.isa = isa, .threads = 2, .pool = cpu_pool_create(2),
                      .tune.gemm_row_split_panels = team_row_split,
                      .tune.gemm_band_floats = team_band_floats};
  assert_int_equal(cpu_fast_gemm(&one, &g), BP_OK);
  g.c.ptr = (uint64_t)(uintptr_t)C2;
  team_case_t c = {&two, &g, BP_ERR_INTERNAL};
  if (nested) cpu_pool_run(two.pool, 2, 1, team_call, &c); /* on worker 1 */
  else team_call(&c, 1, 2, 0);
  assert_int_equal(c.st, BP_OK);
  checks++;
  if (memcmp(C1, C2, es * m * n) != 0) {
    printf("TEAM MISMATCH isa%d dt%d %ldx%ldx%ld ta%d tb%d tc%d nested%d\n", isa, dt,
           (long)m, (long)n, (long)k, ta, tb, tc, nested);
    fails++;
  }
  cpu_pool_destroy(one.pool);
  cpu_pool_destroy(two.pool);
  free(A), free(B), free(C1), free(C2);
}

/* The team's shapes for every dtype: several k blocks and n blocks (the
 * blocks of B alternate buffers), ragged rows, transposes, C column-major,
 * beta 0 / 1 / -0.5; the fourth called from inside a pool task when
 * `nested` (it runs inline). */
static void team_shapes(int isa, int dt, int nested) {
  team_compare(isa, dt, 200, 2100, 600, 0, 0, 0, 1, 0, 0);
  team_compare(isa, dt, 61, 1100, 530, 1, 1, 0, -1.5, 1, 0);
  team_compare(isa, dt, 500, 40, 700, 0, 1, 1, 0.5, -0.5, 0);
  team_compare(isa, dt, 301, 517, 257, 1, 0, 0, 1, 1, nested);
}

static void test_gemm_team(void **state) {
  (void)state;
  srand(11);
  fails = checks = 0;
  /* the shapes below are few rows against many columns: lowered, the
   * driver runs them as a team (rows) all the same; at the default, the
   * first two split by columns */
  for (int pass = 0; pass < 2; pass++) {
    team_row_split = pass ? 0 : 1; /* 0: the default */
    for (int isa = 1; isa <= 3; isa++)
      for (int d = 0; d < 2; d++) {
        int dt = d ? BP_F64 : BP_F32;
        team_shapes(isa, dt, 1);
        /* taller than MC (512 portable, 1536 AVX2): row groups in turn */
        team_compare(isa, dt, 1600, 232, 520, 0, 0, 0, 1, 0.5, 0);
      }
  }
  /* f16 / bf16 C: the team sums a row group in f32 and rounds each chunk
   * after its last k block; the one thread sums bands the same way (k past
   * one block) or keeps k in the registers (k within one), so the bits
   * agree. Row- and column-major C (the vector and the scalar rounding),
   * and a row group cut to a few rows (several groups in turn). */
  team_row_split = 1;
  for (int isa = 1; isa <= 3; isa++)
    for (int d = 0; d < 2; d++) {
      int dt = d ? BP_F16 : BP_BF16;
      team_shapes(isa, dt, 0);
      team_band_floats = 232 * 50;
      team_compare(isa, dt, 400, 232, 520, 0, 0, 0, 1, 0.5, 0);
      team_band_floats = 0;
    }
  /* at the default floor, where the AVX2 kernel counts its FLOPs twice:
   * 1024^3 runs as a team, in several k blocks of row chunks */
  team_row_split = 0;
  team_compare(BP_ISA_AVX2, BP_F32, 1024, 1024, 1024, 0, 0, 0, 1, 0.5, 0);
  /* and against the reference: several blocks both ways, threaded */
  cpu_device_t dev = {.isa = 2, .threads = 2, .pool = cpu_pool_create(2)};
  run(&dev, BP_F32, 1, 130, 2100, 600, 0, 0, 0, 0, 1, 0.5);
  run(&dev, BP_F64, 1, 97, 1300, 520, 1, 1, 0, 0, -1, 0);
  cpu_pool_destroy(dev.pool);
  printf("gemm team: %d cases, %d failures\n", checks, fails);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

static void test_attention(void **state) {
  (void)state;
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  dev.isa = BP_ISA_AVX512;
  dev.threads = 2;
  dev.pool = cpu_pool_create(2);
  srand(2);
  fails = checks = 0;
  if (!cpu_features_get()->avx512f) TEST_SKIP_CASE("no AVX-512F on this CPU");
  int64_t S[] = {1, 2, 17, 31, 64, 65, 127, 200};
  for (int it = 0; it < 100; it++) {
    int64_t hk = 1 + rand() % 3, grp = 1 + rand() % 3;
    run_att(&dev, 1 + rand() % 2, hk * grp, hk, S[rand() % 8], S[rand() % 8],
            (int64_t[]){1, 7, 16, 64, 80}[rand() % 5],
            (int64_t[]){1, 5, 16, 64, 100}[rand() % 5], rand() % 2, rand() % 2, 0);
  }
  run_att(&dev, 1, 2, 1, 0, 5, 8, 8, 1, 0, 0);
  run_att(&dev, 1, 2, 1, 5, 0, 8, 8, 1, 0, 0);
  run_att(&dev, 1, 2, 1, 9, 3, 8, 8, 1, 0, 0); /* rows 0..5 see no key */
  cpu_pool_destroy(dev.pool);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

static void test_gemv(void **state) {
  (void)state;
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  dev.pool = cpu_pool_create(2);
  int64_t shapes[][2] = {{1, 1}, {17, 31}, {127, 9}, {600, 1000}, {3, 0}};
  for (int t = 0; t < 5; t++)
    for (int sx = 1; sx <= 2; sx++) {
      int64_t m = shapes[t][0], n = shapes[t][1], lda = n + 3;
      float *A = malloc(sizeof(float) * (size_t)(m * lda + 1));
      float *x = malloc(sizeof(float) * (size_t)(n * sx + 1));
      float *y = malloc(sizeof(float) * (size_t)(m * 2 + 1));
      for (int64_t i = 0; i < m * lda; i++) A[i] = (float)((i * 7) % 13 - 6) / 8;
      for (int64_t i = 0; i < n * sx; i++) x[i] = (float)(i % 5 - 2) / 4;
      for (int64_t i = 0; i < m * 2; i++) y[i] = sx == 1 ? NAN : 1;
      bp_gemv_args_t g;
      memset(&g, 0, sizeof g);
      g.alpha = 0.5, g.beta = sx == 1 ? 0 : 2;
      g.a = (bp_plugin_tensor_t){(uint64_t)(uintptr_t)A, 0, BP_F32, 2, {m, n}, {lda, 1}};
      g.x = (bp_plugin_tensor_t){(uint64_t)(uintptr_t)x, 0, BP_F32, 1, {n}, {sx}};
      g.y = (bp_plugin_tensor_t){(uint64_t)(uintptr_t)y, 0, BP_F32, 1, {m}, {2}};
      assert_int_equal(cpu_fast_gemv(&dev, &g), BP_OK);
      for (int64_t i = 0; i < m; i++) {
        double acc = 0;
        for (int64_t p = 0; p < n; p++) acc += (double)A[i * lda + p] * x[p * sx];
        double want = 0.5 * acc + (sx == 1 ? 0 : 2);
        assert_true(fabs(y[2 * i] - want) <= 1e-5 * (1 + fabs(want)) + 1e-6 * n);
      }
      free(A), free(x), free(y);
    }
  cpu_pool_destroy(dev.pool);
}

/* Not a test: BP_FAST_BENCH=1 prints attention throughput. */
static void bench_attention(void **state) {
  (void)state;
  if (!getenv("BP_FAST_BENCH")) TEST_SKIP_CASE("benchmark: set BP_FAST_BENCH=1 to run it");
  if (!cpu_features_get()->avx512f) TEST_SKIP_CASE("no AVX-512F on this CPU");
  cpu_device_t dev;
  memset(&dev, 0, sizeof dev);
  dev.isa = BP_ISA_AVX512;
  dev.threads = 2;
  dev.pool = cpu_pool_create(2);
  run_att(&dev, 1, 16, 16, 2048, 2048, 64, 64, 0, 0, 1);
  run_att(&dev, 1, 16, 16, 2048, 2048, 64, 64, 1, 0, 1);
  cpu_pool_destroy(dev.pool);
}

/* The vector merge of an f32 tile into f16 / bf16 C rounds exactly as the
 * scalar one (cpu_*_from_double of the f32 value alpha * t + beta * c):
 * every 4099th f32 bit pattern plus halfway cases, overflow, denormals,
 * NaNs and infinities, beta 0 and not, full rows and ragged ones. */
/* Where alpha * tile and beta * C are both NaN, IEEE leaves open whose
 * payload the sum keeps, and the compiler may order the scalar sum either
 * way: any NaN is right there. */
static bool half_nan(int dt, uint16_t h) {
  return dt == BP_F16 ? (h & 0x7c00) == 0x7c00 && (h & 0x3ff) : (h & 0x7f80) == 0x7f80 && (h & 0x7f);
}

static bool narrow_same(int dt, uint16_t got, uint16_t want) {
  return got == want || (half_nan(dt, got) && half_nan(dt, want));
}

static void test_gemm_narrow_merge(void **state) {
  (void)state;
  const cpu_features_t *f = cpu_features_get();
  if (!f->avx2 || !f->fma || !f->f16c) TEST_SKIP_CASE("no AVX2 with FMA and F16C on this CPU");
  enum { NR = 16, ROWS = 4096 };
  float *tile = malloc(sizeof(float) * NR * ROWS);
  uint16_t *c = malloc(2 * NR * ROWS), *c0 = malloc(2 * NR * ROWS), *want = malloc(2 * NR * ROWS);
  int dts[2] = {BP_F16, BP_BF16};
  uint32_t u = 0;
  fails = checks = 0;
  for (int pass = 0; pass < 120; pass++)
    for (int d = 0; d < 2; d++) {
      for (int i = 0; i < NR * ROWS; i++, u += 4099u) {
        uint32_t bits = u;
        if (i % 7 == 0) bits = (u & 0xffff0000u) | 0x8000u; /* bf16 halfway */
        if (i % 11 == 0) bits = (u & 0xffffe000u) | 0x1000u; /* f16 halfway */
        memcpy(&tile[i], &bits, 4);
        c0[i] = (uint16_t)(u >> 7);
      }
      tile[0] = NAN, tile[1] = INFINITY, tile[2] = -INFINITY, tile[3] = 65520.0f;
      tile[4] = 1e-8f, tile[5] = -0.0f, tile[6] = 3.4e38f;
      float alpha = pass % 3 == 0 ? 1.0f : -1.5f, beta = (float[]){0, 1, 0.5f}[pass % 3];
      int64_t nb = pass % 2 ? NR : 13, mb = ROWS;
      memcpy(c, c0, 2 * NR * ROWS);
      memcpy(want, c0, 2 * NR * ROWS);
      for (int64_t i = 0; i < mb; i++)
        for (int64_t j = 0; j < nb; j++) {
          uint16_t *w = &want[i * NR + j];
          float cv = dts[d] == BP_F16 ? cpu_f16_to_float(*w) : cpu_bf16_to_float(*w);
          float v = alpha * tile[i * NR + j];
          if (beta != 0) v = v + beta * cv;
          *w = dts[d] == BP_F16 ? cpu_f16_from_double(v) : cpu_bf16_from_double(v);
        }
      assert_true(cpu_fast_wmerge_avx2(dts[d], tile, NR, c, NR, 1, mb, nb, alpha, beta));
      checks++;
      for (int i = 0; i < NR * ROWS; i++)
        if (!narrow_same(dts[d], c[i], want[i])) {
          if (fails < 5)
            printf("narrow merge dt%d pass %d at %d: tile %a -> %04x, want %04x\n", dts[d], pass, i,
                   tile[i], c[i], want[i]);
          fails++;
          break;
        }
    }
  assert_false(cpu_fast_wmerge_avx2(BP_F16, tile, NR, c, NR, 2, 1, 1, 1.0f, 0.0f)); /* strided C */
  /* rows of 13 sums in a buffer of exactly 3 rows: the last row's tail is
   * read under a mask, not a full vector past the buffer's end (which
   * make check-asan reports; in the team driver the floats past a chunk's
   * columns are another worker's, which make check-tsan reports) */
  float *exact = malloc(sizeof(float) * 3 * 13);
  for (int i = 0; i < 3 * 13; i++) exact[i] = (float)i * 0.25f;
  assert_true(cpu_fast_wmerge_avx2(BP_F16, exact, 13, c, 13, 1, 3, 13, 1.0f, 0.0f));
  for (int i = 0; i < 3 * 13; i++) {
    checks++;
    if (c[i] != cpu_f16_from_double(exact[i])) fails++;
  }
  free(exact);
  printf("narrow merge: %d cases, %d failures\n", checks, fails);
  free(tile), free(c), free(c0), free(want);
  assert_int_equal(fails, 0);
  assert_true(checks > 0); /* a suite that compared nothing must not pass */
}

/* Blocking from the caches: the tuning machine's caches give the tuned
 * blocks back; others scale kc with L1 and the KC x NC bytes with L2,
 * clamped; unknown caches keep the constants. */
static void test_gemm_block_for_caches(void **state) {
  (void)state;
  cpu_fast_gemm_kernel_t k = cpu_fast_sgemm_avx2;
  cpu_fast_gemm_block_for(&k, 32 << 10, 1 << 20); /* Zen 4, where it was tuned */
  assert_int_equal(k.kc, 256);
  assert_int_equal(k.nc, 1024);
  k = cpu_fast_sgemm_avx2;
  cpu_fast_gemm_block_for(&k, 48 << 10, 2 << 20);
  assert_int_equal(k.kc, 384);
  assert_int_equal(k.nc, 1360); /* 2 MiB / (384 x 4 B), a multiple of 16 */
  k = cpu_fast_sgemm_avx2;
  cpu_fast_gemm_block_for(&k, 16 << 10, 256 << 10);
  assert_int_equal(k.kc, 128);
  assert_int_equal(k.nc, 512); /* 128 x 512 x 4 B = 256 KiB */
  k = cpu_fast_sgemm_avx2;
  cpu_fast_gemm_block_for(&k, 1 << 30, 1ull << 40); /* absurd: clamped to 4x */
  assert_int_equal(k.kc, 1024);
  assert_int_equal(k.nc, 4096);
  k = cpu_fast_sgemm_avx512;
  cpu_fast_gemm_block_for(&k, 48 << 10, 2 << 20); /* its own tuning machine */
  assert_int_equal(k.kc, cpu_fast_sgemm_avx512.kc);
  assert_int_equal(k.nc, cpu_fast_sgemm_avx512.nc);
  k = cpu_fast_sgemm_avx2;
  cpu_fast_gemm_block_for(&k, 0, 0); /* unknown */
  assert_int_equal(k.kc, 256);
  assert_int_equal(k.nc, 1024);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm),
      cmocka_unit_test(test_gemm_small),
      cmocka_unit_test(test_gemm_team),
      cmocka_unit_test(test_gemm_narrow_merge),
      cmocka_unit_test(test_gemm_block_for_caches),
      cmocka_unit_test(test_attention),
      cmocka_unit_test(test_gemv),
      cmocka_unit_test(bench_attention),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
