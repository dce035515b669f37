/*
 * test_quant_u8.c — u8 in the quantized ops through the public API
 * (core/backplane_quant.h): bp_qgemm with a and b each i8 or u8 on "cpu"
 * and "cpu-ref" against this file's own sums (rank 3 with b shared and
 * batched, c i32 / f32 / i8), bp_quantize / bp_dequantize to and from u8
 * (rounding to nearest even, saturation to [0, 255], NaN to 0, per-row
 * scales); the errors (a dtype other than i8 / u8 names the operand,
 * nothing written); and the claim: device "i8only" (test plugin
 * test/fixtures/i8only_plugin.c, which claims i8 only, as every plugin did
 * before u8) is refused a u8 operand with the reason, its kernels never
 * see one, and with fallback on the call runs on cpu instead.
 */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/backplane.h"
#include "test/quant_test_util.h"

static bp_context_t *ctx;

static uint64_t rng = 11;

static uint8_t rand_byte(void) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint8_t)(rng >> 56);
}

static int32_t val(uint8_t x, bool u8) {
  return u8 ? x : (int8_t)x;
}

/* ---- qgemm through the public API ---------------------------------------- */

#define QB 2
#define QM 5
#define QN 19
#define QK 37

/* c (batch 2, [5, 19]) of one pair and c dtype on dev against the sums
 * here; b batched or shared. */
static void qgemm_pair(dev_t_ v, bool a_u8, bool b_u8, bp_dtype_t cdt, bool b_batched) {
  uint8_t a[QB * QM * QK], b[QB * QK * QN];
  for (size_t i = 0; i < sizeof a; i++) a[i] = i % 17 == 0 ? (a_u8 ? 255 : 0x80) : rand_byte();
  for (size_t i = 0; i < sizeof b; i++) b[i] = i % 13 == 0 ? (b_u8 ? 255 : 0x80) : rand_byte();
  float sa[QM], sb[QN], out_scale = 40.0f;
  for (int i = 0; i < QM; i++) sa[i] = 0.5f + 0.25f * (float)i;
  for (int j = 0; j < QN; j++) sb[j] = 0.01f * (float)(1 + j % 5);
  bp_buffer_t *ba = buf(v.d, a, sizeof a), *bb = buf(v.d, b, sizeof b);
  bp_buffer_t *bsa = buf(v.d, sa, sizeof sa), *bsb = buf(v.d, sb, sizeof sb);
  size_t es = cdt == BP_I8 ? 1 : 4, cbytes = QB * QM * QN * es;
  bp_buffer_t *bc = buf(v.d, NULL, cbytes);
  int64_t ash[3] = {QB, QM, QK}, ast[3] = {QM * QK, QK, 1};
  int64_t bsh[3] = {QB, QK, QN}, bst[3] = {QK * QN, QN, 1};
  int64_t csh[3] = {QB, QM, QN}, cst[3] = {QM * QN, QN, 1}, m = QM, n = QN, one = 1;
  bp_tensor_t ta = ten(ba, a_u8 ? BP_U8 : BP_I8, 3, ash, ast);
  bp_tensor_t tb = b_batched ? ten(bb, b_u8 ? BP_U8 : BP_I8, 3, bsh, bst)
                             : ten(bb, b_u8 ? BP_U8 : BP_I8, 2, bsh + 1, bst + 1);
  bp_tensor_t tc = ten(bc, cdt, 3, csh, cst);
  bp_tensor_t tsa = ten(bsa, BP_F32, 1, &m, &one), tsb = ten(bsb, BP_F32, 1, &n, &one);
  bool scaled = cdt != BP_I32;
  assert_int_equal(
      bp_qgemm(v.s, &ta, &tb, scaled ? &tsa : NULL, scaled ? &tsb : NULL, out_scale, &tc), BP_OK);
  assert_int_equal(bp_stream_synchronize(v.s), BP_OK);
  char *c = malloc(cbytes);
  read_into(bc, c, cbytes);
  for (int bi = 0; bi < QB; bi++)
    for (int i = 0; i < QM; i++)
      for (int j = 0; j < QN; j++) {
        int32_t acc = 0;
        for (int l = 0; l < QK; l++)
          acc += val(a[(bi * QM + i) * QK + l], a_u8) *
                 val(b[(b_batched ? bi * QK * QN : 0) + l * QN + j], b_u8);
        int e = (bi * QM + i) * QN + j;
        float f = (float)acc * sa[i] * sb[j];
        if (cdt == BP_I32) {
          assert_int_equal(((int32_t *)c)[e], acc);
        } else if (cdt == BP_F32) {
          assert_true(((float *)c)[e] == f);
        } else {
          float r = nearbyintf(f / out_scale);
          assert_int_equal(((int8_t *)c)[e], (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r));
        }
      }
  free(c);
  bp_buffer_free(ba), bp_buffer_free(bb), bp_buffer_free(bsa), bp_buffer_free(bsb),
      bp_buffer_free(bc);
}

static void test_qgemm_pairs(void **state) {
  (void)state;
  static const char *const devs[] = {"cpu", "cpu-ref"};
  static const bp_dtype_t cdt[3] = {BP_I32, BP_F32, BP_I8};
  for (int d = 0; d < 2; d++) {
    dev_t_ v = open_dev(ctx, devs[d], true);
    for (int pair = 0; pair < 4; pair++)
      for (int c = 0; c < 3; c++) qgemm_pair(v, pair & 1, pair >> 1, cdt[c], (pair + c) % 2);
    close_dev(v);
  }
}

/* ---- quantize / dequantize u8 --------------------------------------------- */

#define QROWS 2
#define QCOLS 8

static void test_quantize_u8(void **state) {
  (void)state;
  /* row 0 scale 1: ties to even, negatives and NaN to 0, past 255 to 255;
   * row 1 scale 0.5: x / 0.5 */
  const float x[QROWS * QCOLS] = {0.5f,  1.5f,  2.5f,  -3.0f,  254.5f, 255.5f, 1e6f,    NAN,
                                  0.25f, 0.75f, 10.0f, 127.6f, -0.2f,  100.0f, 127.25f, 200.0f};
  const uint8_t want[QROWS * QCOLS] = {0, 2, 2,  0,   254, 255, 255, 0,
                                       0, 2, 20, 255, 0,   200, 254, 255};
  const float scale[QROWS] = {1.0f, 0.5f};
  static const char *const devs[] = {"cpu", "cpu-ref"};
  for (int d = 0; d < 2; d++) {
    dev_t_ v = open_dev(ctx, devs[d], true);
    bp_buffer_t *bx = buf(v.d, x, sizeof x), *bs = buf(v.d, scale, sizeof scale);
    bp_buffer_t *bq = buf(v.d, NULL, sizeof want), *by = buf(v.d, NULL, sizeof x);
    int64_t sh[2] = {QROWS, QCOLS}, st[2] = {QCOLS, 1}, sst[2] = {1, 0};
    bp_tensor_t tx = ten(bx, BP_F32, 2, sh, st), tq = ten(bq, BP_U8, 2, sh, st);
    bp_tensor_t ty = ten(by, BP_F32, 2, sh, st), ts = ten(bs, BP_F32, 2, sh, sst);
    assert_int_equal(bp_quantize(v.s, &tx, &ts, &tq), BP_OK);
    assert_int_equal(bp_dequantize(v.s, &tq, &ts, &ty), BP_OK);
    assert_int_equal(bp_stream_synchronize(v.s), BP_OK);
    uint8_t q[QROWS * QCOLS];
    float y[QROWS * QCOLS];
    read_into(bq, q, sizeof q);
    read_into(by, y, sizeof y);
    for (int i = 0; i < QROWS * QCOLS; i++) {
      if (q[i] != want[i]) print_error("%s: element %d: %u, want %u\n", devs[d], i, q[i], want[i]);
      assert_int_equal(q[i], want[i]);
      assert_true(y[i] == (float)want[i] * scale[i / QCOLS]);
    }
    bp_buffer_free(bx), bp_buffer_free(bs), bp_buffer_free(bq), bp_buffer_free(by);
    close_dev(v);
  }
}

/* ---- errors ----------------------------------------------------------------- */

/* The call fails with st and a message holding `text`; c (if any) keeps
 * its 0xAB filler. */
static void expect_fail(bp_status_t got, bp_status_t st, const char *text, bp_buffer_t *c,
                        uint64_t bytes) {
  assert_int_equal(got, st);
  if (!strstr(bp_last_error(), text)) print_error("message: %s\nwant: %s\n", bp_last_error(), text);
  assert_non_null(strstr(bp_last_error(), text));
  if (!c) return;
  uint8_t *p = malloc(bytes);
  read_into(c, p, bytes);
  for (uint64_t i = 0; i < bytes; i++) assert_int_equal(p[i], 0xAB);
  free(p);
}

static void test_errors(void **state) {
  (void)state;
  dev_t_ v = open_dev(ctx, "cpu", true);
  bp_buffer_t *b = buf(v.d, NULL, 4096), *bc = buf(v.d, NULL, 128);
  int64_t sh[2] = {4, 4}, st[2] = {4, 1};
  bp_tensor_t u8 = ten(b, BP_U8, 2, sh, st), f32 = ten(b, BP_F32, 2, sh, st);
  bp_tensor_t i64 = ten(b, BP_I64, 2, sh, st), c = ten(bc, BP_I32, 2, sh, st);
  expect_fail(bp_qgemm(v.s, &f32, &u8, NULL, NULL, 1.0f, &c), BP_ERR_INVALID_ARGUMENT,
              "bp_qgemm: a has dtype f32; expected i8 or u8", bc, 128);
  expect_fail(bp_qgemm(v.s, &u8, &i64, NULL, NULL, 1.0f, &c), BP_ERR_INVALID_ARGUMENT,
              "bp_qgemm: b has dtype i64; expected i8 or u8", bc, 128);
  bp_tensor_t q = ten(bc, BP_U8, 2, sh, st), qi = ten(bc, BP_I64, 2, sh, st);
  expect_fail(bp_quantize(v.s, &f32, NULL, &q), BP_ERR_INVALID_ARGUMENT,
              "bp_quantize: y (u8) needs a scale", bc, 128);
  expect_fail(bp_quantize(v.s, &f32, &f32, &qi), BP_ERR_INVALID_ARGUMENT,
              "bp_quantize: y has dtype i64; expected i8, u8, q8_0 or q4_0", bc, 128);
  bp_buffer_free(b), bp_buffer_free(bc);
  close_dev(v);
}

/* ---- a device that claims i8 only ------------------------------------------ */

/* a u8 x i8 / i8 x u8 on i8only: refused with the reason and c untouched
 * without fallback; run on cpu (exact) with it. i8 x i8 runs on i8only. */
static void test_i8only_refuses_u8(void **state) {
  (void)state;
  for (int fb = 0; fb <= 1; fb++) {
    dev_t_ v = open_dev(ctx, "i8only", !fb);
    uint8_t a[6] = {255, 1, 2, 200, 0, 7}, bm[6] = {3, 250, 4, 5, 255, 6};
    bp_buffer_t *ba = buf(v.d, a, 6), *bb = buf(v.d, bm, 6), *bc = buf(v.d, NULL, 16);
    int64_t ash[2] = {2, 3}, ast[2] = {3, 1}, bsh[2] = {3, 2}, bst[2] = {2, 1};
    int64_t csh[2] = {2, 2}, cst[2] = {2, 1};
    bp_tensor_t tc = ten(bc, BP_I32, 2, csh, cst);
    for (int pair = 0; pair < 4; pair++) {
      bool a_u8 = pair & 1, b_u8 = pair >> 1;
      bp_tensor_t ta = ten(ba, a_u8 ? BP_U8 : BP_I8, 2, ash, ast);
      bp_tensor_t tb = ten(bb, b_u8 ? BP_U8 : BP_I8, 2, bsh, bst);
      bp_status_t st = bp_qgemm(v.s, &ta, &tb, NULL, NULL, 1.0f, &tc);
      if (!fb && pair) {
        expect_fail(st, BP_ERR_UNSUPPORTED, "does not support qgemm for u8", bc, 16);
        continue;
      }
      if (st != BP_OK) print_error("pair %d fallback %d: %s\n", pair, fb, bp_last_error());
      assert_int_equal(st, BP_OK);
      assert_int_equal(bp_stream_synchronize(v.s), BP_OK);
      int32_t c[4];
      read_into(bc, c, 16);
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
          int32_t want = 0;
          for (int l = 0; l < 3; l++) want += val(a[i * 3 + l], a_u8) * val(bm[l * 2 + j], b_u8);
          assert_int_equal(c[i * 2 + j], want);
        }
      uint8_t fill[16];
      memset(fill, 0xAB, 16);
      assert_int_equal(bp_buffer_write(bc, 0, fill, 16), BP_OK);
    }
    /* quantize / dequantize name their u8 side the same way */
    float x[4] = {1, 2, 3, 4}, one = 1.0f;
    bp_buffer_t *bx = buf(v.d, x, 16), *bs = buf(v.d, &one, 4), *bq = buf(v.d, NULL, 4);
    int64_t n = 4, s1 = 1, s0 = 0;
    bp_tensor_t tx = ten(bx, BP_F32, 1, &n, &s1), ts = ten(bs, BP_F32, 1, &n, &s0);
    bp_tensor_t tq = ten(bq, BP_U8, 1, &n, &s1);
    bp_status_t st = bp_quantize(v.s, &tx, &ts, &tq);
    if (!fb) {
      expect_fail(st, BP_ERR_UNSUPPORTED, "does not support quantize for u8", bq, 4);
      expect_fail(bp_dequantize(v.s, &tq, &ts, &tx), BP_ERR_UNSUPPORTED,
                  "does not support dequantize for u8", NULL, 0);
    } else {
      assert_int_equal(st, BP_OK);
      assert_int_equal(bp_stream_synchronize(v.s), BP_OK);
      uint8_t q[4];
      read_into(bq, q, 4);
      for (int i = 0; i < 4; i++) assert_int_equal(q[i], i + 1);
    }
    bp_buffer_free(bx), bp_buffer_free(bs), bp_buffer_free(bq);
    bp_buffer_free(ba), bp_buffer_free(bb), bp_buffer_free(bc);
    close_dev(v);
  }
}

static int setup(void **state) {
  (void)state;
  char exe[PATH_MAX], path[2 * PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(path, sizeof path, "%s/i8only-plugin:%s/../plugins", exe, exe);
  setenv("BACKPLANE_PLUGIN_PATH", path, 1);
  setenv("BACKPLANE_BACKENDS", "i8only,cpu,-opencl,-vulkan,-cuda,-rocm", 1);
  unsetenv("BACKPLANE_FALLBACK");
  bp_context_options_t opt = {.struct_size = sizeof opt, .in_process_probe = true};
  return bp_context_create(&opt, &ctx) == BP_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  bp_context_destroy(ctx);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_qgemm_pairs),
      cmocka_unit_test(test_quantize_u8),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_i8only_refuses_u8),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
