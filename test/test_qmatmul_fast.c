/*
 * test_qmatmul_fast.c — bp_qmatmul's fast paths on "cpu" (plugins/cpu/fast/
 * quant/qmatmul*.c) against this file's double-precision sums and against
 * "cpu-ref": GEMV and GEMM shapes, odd n and tails of every tile, batches,
 * strided a and y, a weight view with a wider row stride, f16 / bf16
 * activations, q8_0 and q4_0, the k split of narrow outputs, and each
 * kernel (AMX-INT8, VNNI, AVX2, the f32 path) forced by BP_CPU_QMATMUL_ISA.
 *
 * Two checks per output: docs/ops.md's tolerance against the exact sum
 * (what a user may rely on), and a tight one against the int8 scheme the
 * kernels compute (activations quantized per block of 32 with an f32 scale
 * amax / 127, rounded to nearest even; exact int8 dots), which catches a
 * dropped or misscaled block that the loose bound would let through.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/backplane.h"
#include "kernels/common/bp_half.h"
#include "test/skip.h"

#include "test/common/test_env.h"

static uint64_t rng(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 33;
}

/* One case: y [batch, m, n] = a [batch, m, k] x w [n, k]^T. */
typedef struct qcase {
  bp_dtype_t wt, at;
  int64_t batch, m, n, k;
  bool a_transposed; /* a stored k-major: strides {.., 1, m} */
  int64_t y_pad;     /* y's column stride is 1 + (y_pad > 0), its row stride n * that + y_pad */
  int64_t w_pad;     /* w's row stride is k + w_pad (a view of a wider matrix) */
} qcase_t;

/* ---- host side: values, weights, the two sums ---- */

static double a_value(bp_dtype_t at, float v) {
  if (at == BP_F16) return bp_f16_to_f32(bp_f32_to_f16(v));
  if (at == BP_BF16) return bp_bf16_to_f32(bp_f32_to_bf16(v));
  return v;
}

static uint16_t a_bits16(bp_dtype_t at, double v) {
  return at == BP_F16 ? bp_f32_to_f16((float)v) : bp_f32_to_bf16((float)v); /* exact: v is one */
}

static int64_t block_bytes(bp_dtype_t wt) { return wt == BP_Q8_0 ? 34 : 18; }

/* Random blocks: q8_0 bytes over all of -128..127, q4_0 nibbles 0..15,
 * scales f16 in [2^-10, 2^-6). */
static uint8_t *rand_weights(bp_dtype_t wt, int64_t nblocks, uint64_t seed) {
  int64_t bs = block_bytes(wt);
  uint8_t *w = malloc((size_t)(nblocks * bs));
  for (int64_t b = 0; b < nblocks; b++) {
    uint16_t h = bp_f32_to_f16(ldexpf(1.0f + (float)(rng(&seed) % 1000) / 1000.0f, -10 + (int)(rng(&seed) % 4)));
    memcpy(w + b * bs, &h, 2);
    for (int64_t j = 2; j < bs; j++) w[b * bs + j] = (uint8_t)rng(&seed);
  }
  return w;
}

static double w_at(bp_dtype_t wt, const uint8_t *blk, int j) {
  uint16_t h;
  memcpy(&h, blk, 2);
  double d = bp_f16_to_f32(h);
  if (wt == BP_Q8_0) return (int8_t)blk[2 + j] * d;
  return ((j < 16 ? blk[2 + j] & 0x0F : blk[2 + j - 16] >> 4) - 8) * d;
}

/* The kernels' activation block: d = amax / 127 (f32), q = rne(x * (1/d)). */
static void quantize_block(const double *x, float *d, int *q) {
  float amax = 0;
  for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf((float)x[j]));
  *d = amax / 127.0f;
  float inv = *d ? 1.0f / *d : 0.0f;
  for (int j = 0; j < 32; j++) q[j] = (int)nearbyintf((float)x[j] * inv);
}

/* Bounds for output (row of a x, weight row wr): exact sum, the int8
 * scheme's sum, docs/ops.md's tolerance, the scheme's tight tolerance. */
typedef struct sums {
  double exact, scheme, tol, tight;
} sums_t;

static sums_t expected(bp_dtype_t wt, const double *x, const uint8_t *wr, int64_t k) {
  sums_t s = {0};
  double mag = 0, qerr = 0, smag = 0;
  for (int64_t b = 0; b < k / 32; b++) {
    const uint8_t *blk = wr + b * block_bytes(wt);
    double wabs = 0, amax = 0, dot = 0;
    float d;
    int q[32];
    quantize_block(x + b * 32, &d, q);
    for (int j = 0; j < 32; j++) {
      double w = w_at(wt, blk, j);
      s.exact += x[b * 32 + j] * w;
      mag += fabs(x[b * 32 + j] * w);
      wabs += fabs(w);
      amax = fmax(amax, fabs(x[b * 32 + j]));
      dot += q[j] * w;
    }
    s.scheme += d * dot;
    smag += fabs(d) * wabs * 127;
    qerr += amax / 254 * wabs;
  }
  /* docs/ops.md, bp_qmatmul */
  s.tol = (1 + 0x1p-10) * qerr + 0x1p-12 * mag + 1e-30;
  s.tight = 0x1p-14 * smag + 1e-30;
  return s;
}

/* ---- device side ---- */

static bp_buffer_t *upload(env_t *e, const void *src, uint64_t bytes) {
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(e->dev, bytes, &b), BP_OK);
  if (src) assert_int_equal(bp_buffer_write(b, 0, src, bytes), BP_OK);
  else {
    void *z = calloc(1, bytes);
    assert_int_equal(bp_buffer_write(b, 0, z, bytes), BP_OK);
    free(z);
  }
  return b;
}

/* Runs the case on `dev`; x holds the activations as exact doubles in
 * row-major [rows, k] order; returns y [rows, n] as doubles. */
static double *run_case(const char *dev, const qcase_t *c, const double *x, const uint8_t *wq) {
  env_t e = open_env(dev);
  int64_t rows = c->batch * c->m, es = c->at == BP_F32 ? 4 : 2, wk = c->k + c->w_pad;
  int64_t ycs = c->y_pad ? 2 : 1, ystr = c->n * ycs + c->y_pad, ybytes = rows * ystr * es;
  uint8_t *ha = malloc((size_t)(rows * c->k * es));
  for (int64_t bi = 0; bi < c->batch; bi++)
    for (int64_t i = 0; i < c->m; i++)
      for (int64_t l = 0; l < c->k; l++) {
        int64_t src = (bi * c->m + i) * c->k + l;
        int64_t dst = bi * c->m * c->k + (c->a_transposed ? l * c->m + i : i * c->k + l);
        if (c->at == BP_F32) ((float *)ha)[dst] = (float)x[src];
        else ((uint16_t *)ha)[dst] = a_bits16(c->at, x[src]);
      }
  bp_buffer_t *ba = upload(&e, ha, rows * c->k * es), *bw = upload(&e, wq, c->n * wk / 32 * block_bytes(c->wt));
  bp_buffer_t *by = upload(&e, NULL, ybytes);
  int64_t r = c->batch > 1 ? 3 : 2, o = r - 2;
  int64_t as[3] = {c->batch, c->m, c->k}, ast[3] = {c->m * c->k, c->a_transposed ? 1 : c->k, c->a_transposed ? c->m : 1};
  int64_t ys[3] = {c->batch, c->m, c->n}, yst[3] = {c->m * ystr, ystr, ycs};
  int64_t ws[2] = {c->n, c->k}, wst[2] = {wk, 1};
  bp_tensor_t ta, tw, ty;
  assert_int_equal(bp_tensor_init(ba, 0, c->at, (int32_t)r, as + 1 - o, ast + 1 - o, &ta), BP_OK);
  assert_int_equal(bp_tensor_init(bw, 0, c->wt, 2, ws, wst, &tw), BP_OK);
  assert_int_equal(bp_tensor_init(by, 0, c->at, (int32_t)r, ys + 1 - o, yst + 1 - o, &ty), BP_OK);
  bp_status_t st = bp_qmatmul(e.s, &ta, &tw, &ty);
  if (st != BP_OK) fail_msg("%s: bp_qmatmul: %s", dev, bp_last_error());
  assert_int_equal(bp_stream_synchronize(e.s), BP_OK);
  uint8_t *hy = malloc((size_t)ybytes);
  assert_int_equal(bp_buffer_read(by, 0, hy, ybytes), BP_OK);
  double *y = malloc((size_t)(rows * c->n) * sizeof(double));
  for (int64_t q = 0; q < rows; q++)
    for (int64_t j = 0; j < c->n; j++) {
      int64_t at = q * ystr + j * ycs;
      y[q * c->n + j] = c->at == BP_F32   ? ((float *)hy)[at]
                        : c->at == BP_F16 ? bp_f16_to_f32(((uint16_t *)hy)[at])
                                          : bp_bf16_to_f32(((uint16_t *)hy)[at]);
    }
  free(ha), free(hy);
  bp_buffer_free(ba), bp_buffer_free(bw), bp_buffer_free(by);
  close_env(&e);
  return y;
}

/* The output dtype's rounding of v: half an ulp, relative. */
static double out_rounding(bp_dtype_t at, double v) {
  return fabs(v) * (at == BP_F16 ? 0x1p-11 : at == BP_BF16 ? 0x1p-8 : 0x1p-24) + (at == BP_F16 ? 0x1p-25 : 0);
}

/* The int8 kernels run where the CPU has AVX2 (else "cpu" runs the
 * reference, which docs/ops.md's bound covers, but not the tight check). */
static bool int8_kernels(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

/* Checks "cpu" (tight: the int8 scheme; loose: docs/ops.md) and "cpu-ref"
 * (docs/ops.md) on one case. */
static void check_case(const qcase_t *c, uint64_t seed) {
  int64_t rows = c->batch * c->m, wk = c->k + c->w_pad;
  double *x = malloc((size_t)(rows * c->k) * sizeof(double));
  for (int64_t i = 0; i < rows * c->k; i++) {
    /* mostly in [-1, 1], some blocks wider, so the block scales differ */
    float v = (float)((double)(rng(&seed) % 20001) / 10000.0 - 1.0) * (i / 32 % 5 == 3 ? 40.0f : 1.0f);
    x[i] = a_value(c->at, v);
  }
  uint8_t *wq = rand_weights(c->wt, c->n * wk / 32, seed + 1);
  double *fast = run_case("cpu", c, x, wq), *ref = run_case("cpu-ref", c, x, wq);
  for (int64_t q = 0; q < rows; q++)
    for (int64_t j = 0; j < c->n; j++) {
      sums_t s = expected(c->wt, x + q * c->k, wq + j * wk / 32 * block_bytes(c->wt), c->k);
      double f = fast[q * c->n + j], rf = ref[q * c->n + j];
      double round = out_rounding(c->at, s.exact);
      if (!(fabs(rf - s.exact) <= s.tol + round))
        fail_msg("cpu-ref: row %lld col %lld: %.9g, exact %.9g", (long long)q, (long long)j, rf, s.exact);
      if (!(fabs(f - s.exact) <= s.tol + round))
        fail_msg("cpu: row %lld col %lld: %.9g, exact %.9g (tolerance %.3g)", (long long)q, (long long)j, f,
                 s.exact, s.tol + round);
      if (int8_kernels() && !(fabs(f - s.scheme) <= s.tight + out_rounding(c->at, s.scheme)))
        fail_msg("cpu: row %lld col %lld: %.9g, the int8 scheme gives %.9g", (long long)q, (long long)j, f,
                 s.scheme);
    }
  free(x), free(wq), free(fast), free(ref);
}

/* ---- the cases ---- */

static const qcase_t gemv_cases[] = {
    {BP_Q4_0, BP_F32, 1, 1, 777, 4096, false, 0, 0}, /* odd n: a column tail in the last chunk */
    {BP_Q8_0, BP_F32, 1, 1, 301, 2048, false, 0, 0},
    {BP_Q4_0, BP_F32, 1, 1, 5, 8192, false, 0, 0}, /* narrow: k splits over the workers */
    {BP_Q8_0, BP_F32, 1, 3, 7, 4096, false, 0, 0}, /* a few rows, k split */
    {BP_Q4_0, BP_F32, 1, 1, 33, 96, false, 0, 0},  /* an odd block count: the lone last block */
    /* the GEMV's 16-block steps, then a whole group of 4 and a short one */
    {BP_Q4_0, BP_F32, 1, 1, 19, 672, false, 0, 0},
    /* k split in parts of 36 blocks: steps of 16 from a part's start, a group at its end */
    {BP_Q4_0, BP_F32, 1, 1, 5, 4224, false, 0, 0},
};

static const qcase_t gemm_cases[] = {
    {BP_Q4_0, BP_F32, 1, 67, 45, 320, false, 0, 0}, /* row blocks of 64 and 4-row tails, 4-col tails */
    {BP_Q8_0, BP_F32, 1, 70, 38, 160, false, 0, 0},
    {BP_Q4_0, BP_F32, 3, 5, 19, 160, false, 0, 0}, /* batched */
    {BP_Q8_0, BP_F32, 2, 6, 21, 96, false, 0, 0},
};

static const qcase_t strided_cases[] = {
    {BP_Q4_0, BP_F32, 1, 9, 23, 128, true, 3, 0},  /* a transposed, y strided */
    {BP_Q8_0, BP_F32, 2, 5, 17, 64, true, 1, 64},  /* and w a view of a wider matrix */
    {BP_Q4_0, BP_F32, 1, 1, 40, 256, false, 2, 96}, /* GEMV into a strided y */
};

static const qcase_t lowp_cases[] = {
    {BP_Q4_0, BP_F16, 1, 1, 101, 1024, false, 0, 0},
    {BP_Q8_0, BP_BF16, 1, 1, 99, 1024, false, 0, 0},
    {BP_Q4_0, BP_BF16, 2, 9, 30, 192, true, 2, 0},
    {BP_Q8_0, BP_F16, 1, 13, 27, 160, false, 1, 32},
};

#define RUN_ALL(cases)                                                                                 \
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i], 100 + i)

static void test_gemv(void **st) {
  (void)st;
  RUN_ALL(gemv_cases);
}
static void test_gemm(void **st) {
  (void)st;
  RUN_ALL(gemm_cases);
}
static void test_strided(void **st) {
  (void)st;
  RUN_ALL(strided_cases);
}
static void test_f16_bf16(void **st) {
  (void)st;
  RUN_ALL(lowp_cases);
}

/* The AVX2 kernel (vpmaddubsw), forced on this machine; q8_0's -128 meets
 * the largest activations, where the pair sums come closest to int16's
 * limit. */
static void test_avx2(void **st) {
  (void)st;
  if (!int8_kernels()) TEST_SKIP_CASE("no AVX2 + FMA on this CPU");
  setenv("BP_CPU_QMATMUL_ISA", "avx2", 1);
  check_case(&gemv_cases[0], 7);
  check_case(&gemv_cases[2], 8);
  check_case(&gemm_cases[1], 9);
  check_case(&gemm_cases[2], 10);
  check_case(&strided_cases[1], 11);
  check_case(&lowp_cases[1], 12);
  unsetenv("BP_CPU_QMATMUL_ISA");
}

/* The AMX-INT8 kernel (the default from 32 rows on), forced on every
 * shape: tails of its 32 x 32 tiles, batches, strides, f16 / bf16 (where
 * the CPU lacks AMX-INT8 the variable falls back to the other kernels). */
static void test_amx(void **st) {
  (void)st;
  setenv("BP_CPU_QMATMUL_ISA", "amx", 1);
  RUN_ALL(gemm_cases);
  RUN_ALL(strided_cases);
  RUN_ALL(lowp_cases);
  check_case(&gemv_cases[1], 13);
  check_case(&gemv_cases[4], 14);
  unsetenv("BP_CPU_QMATMUL_ISA");
}

/* The f32 path, kept for BP_CPU_QMATMUL_ISA=f32: f32 activations
 * contiguous along k, the f32 bound. */
static void test_f32_path(void **st) {
  (void)st;
  setenv("BP_CPU_QMATMUL_ISA", "f32", 1);
  const qcase_t c[2] = {{BP_Q4_0, BP_F32, 1, 19, 35, 128, false, 0, 0}, {BP_Q8_0, BP_F32, 1, 1, 70, 256, false, 1, 0}};
  for (int i = 0; i < 2; i++) {
    int64_t k = c[i].k, n = c[i].n, rows = c[i].m;
    uint64_t seed = 40 + (uint64_t)i;
    double *x = malloc((size_t)(rows * k) * sizeof(double));
    for (int64_t l = 0; l < rows * k; l++) x[l] = (float)((double)(rng(&seed) % 2001) / 1000.0 - 1.0);
    uint8_t *wq = rand_weights(c[i].wt, n * k / 32, seed);
    double *y = run_case("cpu", &c[i], x, wq);
    for (int64_t q = 0; q < rows; q++)
      for (int64_t j = 0; j < n; j++) {
        double ex = 0, mag = 0;
        for (int64_t l = 0; l < k; l++) {
          double p = x[q * k + l] * w_at(c[i].wt, wq + (j * k + l) / 32 * block_bytes(c[i].wt), (int)(l % 32));
          ex += p, mag += fabs(p);
        }
        assert_true(fabs(y[q * n + j] - ex) <= 0x1p-12 * mag + 1e-30);
      }
    free(x), free(wq), free(y);
  }
  unsetenv("BP_CPU_QMATMUL_ISA");
}

/* A NaN activation makes its row's outputs NaN (its block's scale is NaN),
 * never a finite wrong number; the other rows are untouched. */
static void test_nan_row(void **st) {
  (void)st;
  qcase_t c = {BP_Q4_0, BP_F32, 1, 2, 9, 64, false, 0, 0};
  double x[128];
  for (int i = 0; i < 128; i++) x[i] = (i % 7) * 0.125 - 0.375;
  x[70] = NAN;
  uint8_t *wq = rand_weights(c.wt, 9 * 2, 5);
  double *y = run_case("cpu", &c, x, wq);
  for (int j = 0; j < 9; j++) {
    assert_false(isnan(y[j]));
    assert_true(isnan(y[9 + j]));
  }
  free(wq), free(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemv),    cmocka_unit_test(test_gemm),     cmocka_unit_test(test_strided),
      cmocka_unit_test(test_f16_bf16), cmocka_unit_test(test_avx2),    cmocka_unit_test(test_amx), cmocka_unit_test(test_f32_path),
      cmocka_unit_test(test_nan_row),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
