/*
 * test_quant.c — the quantized ops (core/backplane_quant.h) on "cpu" and
 * "cpu-ref": q8_0 / q4_0 quantize and dequantize bit-exact against this
 * file's own scalar code of ggml's layout, i8 with scales, int8 GEMM exact
 * (odd sizes, a transposed b by strides, scales, requantize rounding and
 * saturation), GEMM / GEMV with block weights within docs/ops.md's
 * tolerance, and the bounds of block tensors to the byte.
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

#include "test/common/test_env.h"

/* A buffer of `bytes` holding src (or 0xAB filler) and a tensor on it. */
static bp_buffer_t *buf(env_t *e, uint64_t bytes, const void *src) {
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(e->dev, bytes, &b), BP_OK);
  void *fill = malloc(bytes);
  if (src) memcpy(fill, src, bytes);
  else memset(fill, 0xAB, bytes);
  assert_int_equal(bp_buffer_write(b, 0, fill, bytes), BP_OK);
  free(fill);
  return b;
}

static bp_tensor_t ten(bp_buffer_t *b, bp_dtype_t dt, int rank, const int64_t *shape,
                       const int64_t *strides) {
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, 0, dt, rank, shape, strides, &t), BP_OK);
  return t;
}

static void *readback(bp_buffer_t *b, uint64_t bytes) {
  void *p = malloc(bytes);
  assert_int_equal(bp_buffer_read(b, 0, p, bytes), BP_OK);
  return p;
}

static float *rand_f32(int64_t n, uint64_t seed, float lo, float hi) {
  float *v = malloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] = lo + (hi - lo) * (float)((seed >> 40) / 16777216.0);
  }
  return v;
}

/* ---- this test's own scalar code of ggml's Q8_0 / Q4_0 (docs/ops.md) ---- */

static void my_q8_0(const float *x, uint8_t *blk) {
  float amax = 0;
  for (int j = 0; j < 32; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
  float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  uint16_t h = bp_f64_to_f16(d);
  memcpy(blk, &h, 2);
  for (int j = 0; j < 32; j++) blk[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
}

static void my_q4_0(const float *x, uint8_t *blk) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; j++)
    if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
  float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  uint16_t h = bp_f64_to_f16(d);
  memcpy(blk, &h, 2);
  for (int j = 0; j < 16; j++) {
    int a = (int8_t)(x[j] * id + 8.5f), b = (int8_t)(x[16 + j] * id + 8.5f);
    blk[2 + j] = (uint8_t)((a > 15 ? 15 : a) | ((b > 15 ? 15 : b) << 4));
  }
}

static float my_deq(bp_dtype_t dt, const uint8_t *blk, int j) {
  uint16_t h;
  memcpy(&h, blk, 2);
  float d = bp_f16_to_f32(h);
  if (dt == BP_Q8_0) return (float)(int8_t)blk[2 + j] * d;
  int q = j < 16 ? (blk[2 + j] & 15) : (blk[2 + j - 16] >> 4);
  return (float)(q - 8) * d;
}

/* ---- quantize / dequantize of the block formats ---- */

static void block_roundtrip(const char *dev, bp_dtype_t dt) {
  env_t e = open_env(dev);
  const int64_t rows = 3, k = 96, nb = rows * k / 32, bs = dt == BP_Q8_0 ? 34 : 18;
  float *x = rand_f32(rows * k, 7 + dt, -3, 3);
  x[5] = 0, x[40] = 7.5f; /* a lone large value */
  for (int j = 64; j < 96; j++) x[j] = 0; /* an all-zero block: scale 0 */
  uint8_t *want = malloc((size_t)(nb * bs));
  for (int64_t b = 0; b < nb; b++) (dt == BP_Q8_0 ? my_q8_0 : my_q4_0)(x + b * 32, want + b * bs);
  int64_t shape[2] = {rows, k};
  bp_buffer_t *bx = buf(&e, rows * k * 4, x), *bq = buf(&e, nb * bs, NULL);
  bp_buffer_t *by = buf(&e, rows * k * 4, NULL);
  bp_tensor_t tx = ten(bx, BP_F32, 2, shape, NULL), tq = ten(bq, dt, 2, shape, NULL);
  bp_tensor_t ty = ten(by, BP_F32, 2, shape, NULL);
  assert_int_equal(bp_quantize(e.s, &tx, NULL, &tq), BP_OK);
  uint8_t *got = readback(bq, nb * bs);
  assert_memory_equal(got, want, (size_t)(nb * bs));
  assert_int_equal(bp_dequantize(e.s, &tq, NULL, &ty), BP_OK);
  float *y = readback(by, rows * k * 4);
  for (int64_t i = 0; i < rows * k; i++) {
    const uint8_t *blk = want + i / 32 * bs;
    uint16_t h;
    memcpy(&h, blk, 2);
    float d = fabsf(bp_f16_to_f32(h));
    assert_true(y[i] == my_deq(dt, blk, (int)(i % 32))); /* bit-exact */
    /* round trip within docs/ops.md: half a step (a whole one for q4_0's
     * clamp at 15) plus the f16 rounding of the scale, 2^-11 per step */
    assert_true(fabsf(y[i] - x[i]) <= (dt == BP_Q8_0 ? 0.5f + 127 * 0x1p-11f : 1.0f + 8 * 0x1p-11f) * d * 1.001f);
  }
  free(x), free(want), free(got), free(y);
  close_env(&e);
}

static void test_q8_0_roundtrip(void **st) { block_roundtrip(*st, BP_Q8_0); }
static void test_q4_0_roundtrip(void **st) { block_roundtrip(*st, BP_Q4_0); }

/* ---- i8 with per-row scales: rne, saturation, NaN ---- */

static void test_i8_scales(void **st) {
  env_t e = open_env(*st);
  float x[8] = {0.5f, 1.5f, 2.5f, -2.5f, 1000.0f, -1000.0f, NAN, 0.26f};
  float sc[2] = {1.0f, 0.5f};
  int8_t want[8] = {0, 2, 2, -2, 127, -128, 0, 1};
  int64_t shape[2] = {2, 4}, sshape[2] = {2, 1};
  bp_buffer_t *bx = buf(&e, 32, x), *bs = buf(&e, 8, sc), *bq = buf(&e, 8, NULL), *by = buf(&e, 32, NULL);
  bp_tensor_t tx = ten(bx, BP_F32, 2, shape, NULL), ts = ten(bs, BP_F32, 2, sshape, NULL);
  bp_tensor_t tq = ten(bq, BP_I8, 2, shape, NULL), ty = ten(by, BP_F32, 2, shape, NULL);
  assert_int_equal(bp_quantize(e.s, &tx, &ts, &tq), BP_OK);
  int8_t *q = readback(bq, 8);
  /* row 1 divides by 0.5: 1000 -> 127, -1000 -> -128, NaN -> 0, 0.52 -> 1 */
  assert_memory_equal(q, want, 8);
  assert_int_equal(bp_dequantize(e.s, &tq, &ts, &ty), BP_OK);
  float *y = readback(by, 32);
  for (int i = 0; i < 8; i++) assert_true(y[i] == (float)want[i] * sc[i / 4]);
  assert_int_equal(bp_quantize(e.s, &tx, NULL, &tq), BP_ERR_INVALID_ARGUMENT);
  free(q), free(y);
  close_env(&e);
}

/* ---- int8 GEMM ---- */

static int8_t *rand_i8(int64_t n, uint64_t seed) {
  int8_t *v = malloc((size_t)n);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] = (int8_t)(seed >> 56);
  }
  return v;
}

static void test_qgemm(void **st) {
  env_t e = open_env(*st);
  const int64_t m = 5, k = 67, n = 9;
  int8_t *a = rand_i8(m * k, 1), *bt = rand_i8(n * k, 2); /* b stored as [n, k] */
  float sa[5] = {0.5f, 1, 2, 0.25f, 3}, sb[9] = {1, 2, 3, 4, 5, 6, 7, 8, 0.001f};
  int64_t as[2] = {m, k}, bsh[2] = {k, n}, bstr[2] = {1, k}, cs[2] = {m, n}, sas = m, sbs = n;
  bp_buffer_t *ba = buf(&e, m * k, a), *bb = buf(&e, n * k, bt), *bc = buf(&e, m * n * 4, NULL);
  bp_buffer_t *bsa = buf(&e, 4 * m, sa), *bsb = buf(&e, 4 * n, sb);
  bp_tensor_t ta = ten(ba, BP_I8, 2, as, NULL), tb = ten(bb, BP_I8, 2, bsh, bstr);
  bp_tensor_t tsa = ten(bsa, BP_F32, 1, &sas, NULL), tsb = ten(bsb, BP_F32, 1, &sbs, NULL);
  bp_tensor_t c32 = ten(bc, BP_I32, 2, cs, NULL), cf = ten(bc, BP_F32, 2, cs, NULL);
  bp_tensor_t c8 = ten(bc, BP_I8, 2, cs, NULL);
  int32_t acc[45];
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      int32_t s = 0;
      for (int64_t l = 0; l < k; l++) s += a[i * k + l] * bt[j * k + l];
      acc[i * n + j] = s;
    }
  assert_int_equal(bp_qgemm(e.s, &ta, &tb, NULL, NULL, 0, &c32), BP_OK);
  int32_t *g = readback(bc, m * n * 4);
  assert_memory_equal(g, acc, sizeof acc);
  assert_int_equal(bp_qgemm(e.s, &ta, &tb, &tsa, &tsb, 0, &cf), BP_OK);
  float *gf = readback(bc, m * n * 4);
  for (int i = 0; i < 45; i++) assert_true(gf[i] == (float)acc[i] * sa[i / 9] * sb[i % 9]);
  assert_int_equal(bp_qgemm(e.s, &ta, &tb, &tsa, &tsb, 8.0f, &c8), BP_OK);
  int8_t *g8 = readback(bc, m * n);
  int sat = 0;
  for (int i = 0; i < 45; i++) {
    float v = nearbyintf((float)acc[i] * sa[i / 9] * sb[i % 9] / 8.0f);
    int8_t w = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    sat += v > 127 || v < -128;
    assert_int_equal(g8[i], w);
  }
  assert_true(sat > 0); /* saturation was exercised */
  /* an i32 c takes no scales; an i8 c needs a positive out_scale */
  assert_int_equal(bp_qgemm(e.s, &ta, &tb, &tsa, NULL, 0, &c32), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_qgemm(e.s, &ta, &tb, NULL, NULL, 0, &c8), BP_ERR_INVALID_ARGUMENT);
  free(a), free(bt), free(g), free(gf), free(g8);
  close_env(&e);
}

/* Batched, several column panels and row groups, k not a multiple of 4,
 * extreme values (-128 * -128 sums): the fast kernels' edges. */
static void test_qgemm_panels(void **st) {
  env_t e = open_env(*st);
  const int64_t bt = 2, m = 37, k = 130, n = 50;
  int8_t *a = rand_i8(bt * m * k, 5), *b = rand_i8(k * n, 6);
  for (int64_t l = 0; l < k; l++) a[l] = -128, b[l * n] = -128; /* row 0 x column 0 */
  int64_t as[3] = {bt, m, k}, bs[2] = {k, n}, cs[3] = {bt, m, n};
  bp_buffer_t *ba = buf(&e, bt * m * k, a), *bb = buf(&e, k * n, b), *bc = buf(&e, bt * m * n * 4, NULL);
  bp_tensor_t ta = ten(ba, BP_I8, 3, as, NULL), tb = ten(bb, BP_I8, 2, bs, NULL);
  bp_tensor_t tc = ten(bc, BP_I32, 3, cs, NULL);
  assert_int_equal(bp_qgemm(e.s, &ta, &tb, NULL, NULL, 0, &tc), BP_OK);
  int32_t *g = readback(bc, bt * m * n * 4);
  for (int64_t r = 0; r < bt * m; r++)
    for (int64_t j = 0; j < n; j++) {
      int32_t s = 0;
      for (int64_t l = 0; l < k; l++) s += a[r * k + l] * b[l * n + j];
      assert_int_equal(g[r * n + j], s);
    }
  free(a), free(b), free(g);
  close_env(&e);
}

/* ---- GEMM / GEMV with block weights ---- */

static void qmatmul_case(const char *dev, bp_dtype_t dt, int64_t m, int64_t n) {
  env_t e = open_env(dev);
  const int64_t k = 128, bs = dt == BP_Q8_0 ? 34 : 18, nb = n * k / 32;
  float *a = rand_f32(m * k, 3, -1, 1), *w = rand_f32(n * k, 4, -1, 1);
  uint8_t *wq = malloc((size_t)(nb * bs));
  for (int64_t b = 0; b < nb; b++) (dt == BP_Q8_0 ? my_q8_0 : my_q4_0)(w + b * 32, wq + b * bs);
  int64_t as[2] = {m, k}, ws[2] = {n, k}, ys[2] = {m, n};
  bp_buffer_t *ba = buf(&e, m * k * 4, a), *bw = buf(&e, nb * bs, wq), *by = buf(&e, m * n * 4, NULL);
  bp_tensor_t ta = ten(ba, BP_F32, 2, as, NULL), tw = ten(bw, dt, 2, ws, NULL);
  bp_tensor_t ty = ten(by, BP_F32, 2, ys, NULL);
  assert_int_equal(bp_qmatmul(e.s, &ta, &tw, &ty), BP_OK);
  float *y = readback(by, m * n * 4);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0, mag = 0, qerr = 0, amax = 0, wabs = 0;
      for (int64_t l = 0; l < k; l++) {
        double wl = my_deq(dt, wq + (j * k + l) / 32 * bs, (int)(l % 32)), p = (double)a[i * k + l] * wl;
        s += p, mag += fabs(p);
        amax = fmax(amax, fabs(a[i * k + l])), wabs += fabs(wl);
        if (l % 32 == 31) qerr += amax / 254 * wabs, amax = wabs = 0;
      }
      /* docs/ops.md: |y - exact| <= (1 + 2^-10) sum_b amax_b(a) / 254 *
       * sum_b |w| + 2^-12 sum |a w| (f32 output; the first term is the
       * int8 activations' rounding on "cpu") */
      assert_true(fabs(y[i * n + j] - s) <= (1 + 0x1p-10) * qerr + mag * 0x1p-12 + 1e-30);
    }
  free(a), free(w), free(wq), free(y);
  close_env(&e);
}

static void test_qmatmul_q8_0(void **st) { qmatmul_case(*st, BP_Q8_0, 7, 11); }
static void test_qmatmul_q4_0(void **st) { qmatmul_case(*st, BP_Q4_0, 7, 11); }
static void test_qgemv_q4_0(void **st) { qmatmul_case(*st, BP_Q4_0, 1, 11); }
/* several row tiles and column chunks of the fast path */
static void test_qmatmul_tiles(void **st) {
  qmatmul_case(*st, BP_Q4_0, 37, 70);
  qmatmul_case(*st, BP_Q8_0, 17, 33);
}

/* ---- bounds of block tensors, to the byte; bad shapes ---- */

static void test_block_bounds(void **st) {
  env_t e = open_env(*st);
  int64_t shape[2] = {2, 64}, bad[2] = {2, 48};
  float x[128];
  for (int i = 0; i < 128; i++) x[i] = (float)i;
  bp_buffer_t *bx = buf(&e, sizeof x, x), *exact = buf(&e, 4 * 34, NULL), *shrt = buf(&e, 4 * 34 - 1, NULL);
  bp_tensor_t tx = ten(bx, BP_F32, 2, shape, NULL), tq = ten(exact, BP_Q8_0, 2, shape, NULL);
  assert_int_equal(bp_quantize(e.s, &tx, NULL, &tq), BP_OK);
  bp_tensor_t ts = ten(shrt, BP_Q8_0, 2, shape, NULL);
  assert_int_equal(bp_quantize(e.s, &tx, NULL, &ts), BP_ERR_INVALID_ARGUMENT);
  uint8_t *g = readback(shrt, 4 * 34 - 1);
  for (int i = 0; i < 4 * 34 - 1; i++) assert_int_equal(g[i], 0xAB); /* nothing written */
  bp_tensor_t tb = ten(exact, BP_Q8_0, 2, bad, NULL), txb = ten(bx, BP_F32, 2, bad, NULL);
  assert_int_equal(bp_quantize(e.s, &txb, NULL, &tb), BP_ERR_INVALID_ARGUMENT); /* k % 32 */
  int64_t str[2] = {48, 1}; /* row stride not whole blocks */
  bp_tensor_t tst;
  assert_int_equal(bp_tensor_init(exact, 0, BP_Q8_0, 2, shape, str, &tst), BP_OK);
  assert_int_equal(bp_quantize(e.s, &tx, NULL, &tst), BP_ERR_INVALID_ARGUMENT);
  assert_int_equal(bp_quant_bytes(BP_Q4_0, 64), 36);
  assert_int_equal(bp_quant_bytes(BP_Q4_0, 63), 0);
  free(g);
  close_env(&e);
}

/* The VNNI-less AVX2 int8 kernel, chosen on this machine by the variable. */
static void test_qgemm_avx2(void **st) {
  setenv("BP_CPU_QGEMM_ISA", "avx2", 1);
  test_qgemm(st);
  test_qgemm_panels(st);
  unsetenv("BP_CPU_QGEMM_ISA");
}

int main(void) {
  static const char *const devs[] = {"cpu", "cpu-ref"};
  int fails = 0;
  for (int d = 0; d < 2; d++) {
    void *state = (void *)devs[d];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_q8_0_roundtrip, state),
        cmocka_unit_test_prestate(test_q4_0_roundtrip, state),
        cmocka_unit_test_prestate(test_i8_scales, state),
        cmocka_unit_test_prestate(test_qgemm, state),
        cmocka_unit_test_prestate(test_qgemm_panels, state),
        cmocka_unit_test_prestate(test_qgemm_avx2, state),
        cmocka_unit_test_prestate(test_qmatmul_q8_0, state),
        cmocka_unit_test_prestate(test_qmatmul_q4_0, state),
        cmocka_unit_test_prestate(test_qgemv_q4_0, state),
        cmocka_unit_test_prestate(test_qmatmul_tiles, state),
        cmocka_unit_test_prestate(test_block_bounds, state),
    };
    fails += _cmocka_run_group_tests(devs[d], tests, sizeof tests / sizeof tests[0], NULL, NULL);
  }
  return fails ? 1 : 0;
}
