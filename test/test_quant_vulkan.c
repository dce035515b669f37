/*
 * test_quant_vulkan.c — the quantized ops of the Vulkan backend
 * (plugins/vulkan/ops_quant.c) against cpu-ref, for every (op, dtype) the
 * Vulkan device claims: quantize / dequantize of q8_0, q4_0 and i8 from and
 * to f32, f16 and bf16 (bytes and values exact), the int8 GEMM exact in its
 * three output dtypes, GEMM / GEMV with block weights within docs/ops.md's
 * tolerance, i8 / fp8 copies and casts (every code, every pair), and qgemm + qmatmul in a captured
 * graph. Odd sizes, transposed and strided views, offsets and batches throughout. Each case runs on
 * every kernel path the device can take: 8-bit storage or bytes through words
 * (BACKPLANE_VK_QUANT_BYTES=words), the integer dot product or the
 * widening multiply (BACKPLANE_VK_QUANT_DOT=0), and for qgemm its texel
 * variants or the direct ones (BACKPLANE_VK_GEMM_TEXEL=0).
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

#include "core/backplane.h"
#include "kernels/common/bp_half.h"
#include "test/quant_test_util.h"
#include "test/skip.h"

/* One device's handles; a case runs on two of them (cpu-ref, vulkan). */
typedef struct env {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
} env_t;

static env_t g_env[2]; /* [0] cpu-ref, [1] vulkan */

static void *readback(bp_buffer_t *b, uint64_t bytes) {
  void *p = malloc(bytes);
  assert_int_equal(bp_buffer_read(b, 0, p, bytes), BP_OK);
  return p;
}

/* A view of b: offset in bytes, shape and strides in elements. */
static bp_tensor_t view(bp_buffer_t *b, uint64_t off, bp_dtype_t dt, int rank, const int64_t *shape,
                        const int64_t *strides) {
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, off, dt, rank, shape, strides, &t), BP_OK);
  return t;
}

static uint64_t g_seed;
static uint32_t rnd(void) {
  g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(g_seed >> 32);
}

/* n floats in [-r, r) stored as dt (f32, f16 or bf16). */
static void *rand_floats(bp_dtype_t dt, int64_t n, float r) {
  size_t es = dt == BP_F32 ? 4 : 2;
  uint8_t *v = malloc((size_t)n * es);
  for (int64_t i = 0; i < n; i++) {
    float f = r * ((float)(rnd() >> 8) / 8388608.0f - 1.0f);
    if (dt == BP_F32)
      memcpy(v + i * 4, &f, 4);
    else {
      uint16_t h = dt == BP_F16 ? bp_f64_to_f16(f) : bp_f64_to_bf16(f);
      memcpy(v + i * 2, &h, 2);
    }
  }
  return v;
}

static float load_float(bp_dtype_t dt, const void *p, int64_t i) {
  uint16_t h;
  if (dt == BP_F32) return ((const float *)p)[i];
  memcpy(&h, (const uint8_t *)p + 2 * i, 2);
  return dt == BP_F16 ? bp_f16_to_f32(h) : bp_bf16_to_f32(h);
}

static void store_float(bp_dtype_t dt, void *p, int64_t i, float f) {
  if (dt == BP_F32) {
    ((float *)p)[i] = f;
    return;
  }
  uint16_t h = dt == BP_F16 ? bp_f64_to_f16(f) : bp_f64_to_bf16(f);
  memcpy((uint8_t *)p + 2 * i, &h, 2);
}

static size_t fsize(bp_dtype_t dt) {
  return dt == BP_F32 ? 4 : 2;
}

/* Vulkan's bytes equal cpu-ref's, buffer against buffer. */
static void same_bytes(bp_buffer_t *ref, bp_buffer_t *vk, uint64_t bytes, const char *what) {
  uint8_t *r = readback(ref, bytes), *v = readback(vk, bytes);
  for (uint64_t i = 0; i < bytes; i++)
    if (r[i] != v[i]) {
      print_error("%s: byte %llu: cpu-ref 0x%02x, vulkan 0x%02x\n", what, (unsigned long long)i,
                  r[i], v[i]);
      fail();
    }
  free(r), free(v);
}

/* ---- the kernel paths a case runs on ---- */

static void set_path(int p) {
  if (p & 1)
    setenv("BACKPLANE_VK_QUANT_BYTES", "words", 1);
  else
    unsetenv("BACKPLANE_VK_QUANT_BYTES");
  if (p & 2)
    setenv("BACKPLANE_VK_QUANT_DOT", "0", 1);
  else
    unsetenv("BACKPLANE_VK_QUANT_DOT");
  /* qgemm reads its panels through texel views on CPU implementations */
  if (p & 4)
    setenv("BACKPLANE_VK_GEMM_TEXEL", "0", 1);
  else
    unsetenv("BACKPLANE_VK_GEMM_TEXEL");
}

#define EACH_PATH(p) for (int p = (set_path(0), 0); p < 4; p++, set_path(p & 3))

/* ---- quantize / dequantize of the block formats ---- */

/* x [2, 3, k] in fdt viewed through a transposed layout (x stored [k, 6]),
 * to q [2, 3, k] in a layout with a padding block per row and one block of
 * offset; back to y [2, 3, k] with stride 2 along k. */
static void block_case(bp_dtype_t qdt, bp_dtype_t fdt, int64_t k) {
  const int64_t rows = 6, bs = qdt == BP_Q8_0 ? 34 : 18, qrow = k + 32;
  const int64_t xn = rows * k, qbytes = (1 + rows * qrow / 32) * bs;
  uint8_t *x = rand_floats(fdt, xn, 3.0f);
  /* ties of roundf and of the q4_0 nibble: a block whose scale is 1 */
  store_float(fdt, x, 0, 127.0f), store_float(fdt, x, rows, 2.5f);
  store_float(fdt, x, 2 * rows, -2.5f), store_float(fdt, x, 3 * rows, -8.0f);
  for (int64_t l = 0; l < 32; l++) store_float(fdt, x, l * rows + 1, 0.0f); /* a zero block */
  int64_t shape[3] = {2, 3, k}, xs[3] = {3, 1, rows}, qs[3] = {3 * qrow, qrow, 1};
  int64_t ys[3] = {3 * 2 * k, 2 * k, 2};
  for (int d = 0; d < 2; d++) {
    env_t *e = &g_env[d];
    bp_buffer_t *bx = buf(e->dev, x, xn * fsize(fdt)), *bq = buf(e->dev, NULL, qbytes);
    bp_buffer_t *by = buf(e->dev, NULL, 2 * xn * fsize(fdt));
    bp_tensor_t tx = view(bx, 0, fdt, 3, shape, xs), tq = view(bq, bs, qdt, 3, shape, qs);
    bp_tensor_t ty = view(by, 0, fdt, 3, shape, ys);
    assert_int_equal(bp_quantize(e->s, &tx, NULL, &tq), BP_OK);
    assert_int_equal(bp_dequantize(e->s, &tq, NULL, &ty), BP_OK);
    assert_int_equal(bp_stream_synchronize(e->s), BP_OK);
    static bp_buffer_t *keep[3];
    if (d == 0) {
      keep[0] = bq, keep[1] = by, keep[2] = bx;
      continue;
    }
    same_bytes(keep[0], bq, qbytes, "quantize");
    same_bytes(keep[1], by, 2 * xn * fsize(fdt), "dequantize");
    for (int i = 0; i < 3; i++) bp_buffer_free(keep[i]);
    bp_buffer_free(bx), bp_buffer_free(bq), bp_buffer_free(by);
  }
  free(x);
}

static void test_blocks(void **st) {
  (void)st;
  static const bp_dtype_t fl[] = {BP_F32, BP_F16, BP_BF16};
  EACH_PATH(p) {
    for (int f = 0; f < 3; f++) {
      block_case(BP_Q8_0, fl[f], 96);
      block_case(BP_Q4_0, fl[f], 160);
    }
  }
}

/* ---- i8 with scales ---- */

/* x [5, 37] (ties, saturation, NaN, a zero scale) to an i8 y stored
 * transposed, with per-row then per-column scales; back to floats. */
static void i8_case(bp_dtype_t fdt, int per_row) {
  const int64_t m = 5, n = 37;
  uint8_t *x = rand_floats(fdt, m * n, 300.0f);
  store_float(fdt, x, 0, 2.5f), store_float(fdt, x, 1, -3.5f), store_float(fdt, x, 2, NAN);
  store_float(fdt, x, 3, 1e6f), store_float(fdt, x, 4, -1e6f);
  float sc[37];
  for (int i = 0; i < 37; i++) sc[i] = i == 0 ? 1.0f : 0.1f + 0.37f * (float)i;
  if (!per_row) sc[6] = 0.0f; /* x / 0: +-inf saturates, 0 / 0 is NaN: 0 */
  int64_t shape[2] = {m, n}, ys[2] = {1, m}, ss[2] = {per_row ? m : 1, per_row ? 1 : n};
  for (int d = 0; d < 2; d++) {
    env_t *e = &g_env[d];
    bp_buffer_t *bx = buf(e->dev, x, m * n * fsize(fdt)), *bs = buf(e->dev, sc, sizeof sc);
    bp_buffer_t *bq = buf(e->dev, NULL, m * n + 3), *by = buf(e->dev, NULL, m * n * fsize(fdt));
    bp_tensor_t tx = view(bx, 0, fdt, 2, shape, NULL), ts = view(bs, 0, BP_F32, 2, ss, NULL);
    bp_tensor_t tq = view(bq, 3, BP_I8, 2, shape, ys), ty = view(by, 0, fdt, 2, shape, NULL);
    assert_int_equal(bp_quantize(e->s, &tx, &ts, &tq), BP_OK);
    assert_int_equal(bp_dequantize(e->s, &tq, &ts, &ty), BP_OK);
    assert_int_equal(bp_stream_synchronize(e->s), BP_OK);
    static bp_buffer_t *keep[4];
    if (d == 0) {
      keep[0] = bq, keep[1] = by, keep[2] = bx, keep[3] = bs;
      continue;
    }
    same_bytes(keep[0], bq, m * n + 3, "quantize i8");
    same_bytes(keep[1], by, m * n * fsize(fdt), "dequantize i8");
    for (int i = 0; i < 4; i++) bp_buffer_free(keep[i]);
    bp_buffer_free(bx), bp_buffer_free(bs), bp_buffer_free(bq), bp_buffer_free(by);
  }
  free(x);
}

static void test_i8(void **st) {
  (void)st;
  static const bp_dtype_t fl[] = {BP_F32, BP_F16, BP_BF16};
  EACH_PATH(p) {
    for (int f = 0; f < 3; f++) i8_case(fl[f], 1), i8_case(fl[f], 0);
  }
}

/* ---- int8 GEMM ---- */

typedef struct qgemm_shape {
  int64_t batch, m, k, n;
  int a_t, b_t, b_batched; /* a stored [k, m], b stored [n, k], b rank 3 */
  bp_dtype_t cdt;
  int scales; /* 0 none, 1 per row / column, 2 one value each */
} qgemm_shape_t;

static void qgemm_case(const qgemm_shape_t *q) {
  const int64_t B = q->batch, m = q->m, k = q->k, n = q->n, ldc = n + 3;
  const int64_t bb = q->b_batched ? B : 1, cbytes = B * m * ldc * 4 + 8;
  int8_t *a = malloc((size_t)(B * m * k)), *b = malloc((size_t)(bb * k * n));
  for (int64_t i = 0; i < B * m * k; i++) a[i] = (int8_t)rnd();
  for (int64_t i = 0; i < bb * k * n; i++) b[i] = (int8_t)rnd();
  for (int64_t l = 0; l < k; l++) a[l] = -128, b[l] = -128; /* extremes meet */
  float sa[64], sb[64];
  for (int i = 0; i < 64; i++) sa[i] = 0.013f * (float)(i + 1), sb[i] = 0.7f / (float)(i + 1);
  int r = B > 1 ? 3 : 2, rb = q->b_batched ? 3 : 2;
  int64_t as[3] = {B, m, k}, ast[3] = {m * k, q->a_t ? 1 : k, q->a_t ? m : 1};
  int64_t bsh[3] = {bb, k, n}, bst[3] = {k * n, q->b_t ? 1 : n, q->b_t ? k : 1};
  int64_t cs[3] = {B, m, n}, cst[3] = {m * ldc, ldc, 1}, sm = q->scales == 1 ? m : 1;
  int64_t sn = q->scales == 1 ? n : 1;
  for (int d = 0; d < 2; d++) {
    env_t *e = &g_env[d];
    bp_buffer_t *ba = buf(e->dev, a, B * m * k), *bbf = buf(e->dev, b, bb * k * n);
    bp_buffer_t *bc = buf(e->dev, NULL, cbytes), *bsa = buf(e->dev, sa, sizeof sa),
                *bsb = buf(e->dev, sb, sizeof sb);
    bp_tensor_t ta = view(ba, 0, BP_I8, r, as + 3 - r, ast + 3 - r);
    bp_tensor_t tb = view(bbf, 0, BP_I8, rb, bsh + 3 - rb, bst + 3 - rb);
    bp_tensor_t tc = view(bc, 4, q->cdt, r, cs + 3 - r, cst + 3 - r);
    bp_tensor_t tsa = view(bsa, 0, BP_F32, q->scales == 2 ? 0 : 1, &sm, NULL);
    bp_tensor_t tsb = view(bsb, 4, BP_F32, q->scales == 2 ? 0 : 1, &sn, NULL);
    const bp_tensor_t *psa = q->scales ? &tsa : NULL, *psb = q->scales ? &tsb : NULL;
    float os = q->cdt == BP_I8 ? 0.05f : 0.0f;
    assert_int_equal(bp_qgemm(e->s, &ta, &tb, psa, psb, os, &tc), BP_OK);
    assert_int_equal(bp_stream_synchronize(e->s), BP_OK);
    static bp_buffer_t *keep[5];
    if (d == 0) {
      keep[0] = bc, keep[1] = ba, keep[2] = bbf, keep[3] = bsa, keep[4] = bsb;
      continue;
    }
    same_bytes(keep[0], bc, cbytes, "qgemm");
    for (int i = 0; i < 5; i++) bp_buffer_free(keep[i]);
    bp_buffer_free(ba), bp_buffer_free(bbf), bp_buffer_free(bc), bp_buffer_free(bsa);
    bp_buffer_free(bsb);
  }
  free(a), free(b);
}

static void test_qgemm(void **st) {
  (void)st;
  static const qgemm_shape_t cases[] = {
      {1, 5, 67, 9, 0, 1, 0, BP_I32, 0},    {1, 1, 130, 50, 0, 0, 0, BP_I32, 0},
      {2, 37, 130, 50, 1, 0, 0, BP_I32, 0}, {3, 33, 45, 35, 0, 1, 1, BP_I32, 0},
      {1, 40, 3, 41, 1, 1, 0, BP_F32, 1},   {2, 9, 64, 17, 0, 0, 1, BP_F32, 2},
      {1, 13, 77, 29, 0, 1, 0, BP_I8, 1},   {2, 6, 20, 7, 1, 0, 0, BP_I8, 2},
  };
  for (int p = (set_path(0), 0); p < 8; p++, set_path(p & 7)) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) qgemm_case(&cases[i]);
  }
}

/* ---- GEMM / GEMV with block weights ---- */

/* Weight j of a block (docs/ops.md's table), in f32. */
static float deq(bp_dtype_t dt, const uint8_t *blk, int j) {
  uint16_t h;
  memcpy(&h, blk, 2);
  float d = bp_f16_to_f32(h);
  if (dt == BP_Q8_0) return (float)(int8_t)blk[2 + j] * d;
  int q = j < 16 ? (blk[2 + j] & 15) : (blk[2 + j - 16] >> 4);
  return (float)(q - 8) * d;
}

/* a [batch, m, k] (transposed storage when a_t) times w [n, k] (row
 * stride padded by a block, one block of offset) into y with ldy > n. */
static void qmatmul_case(bp_dtype_t wdt, bp_dtype_t adt, int64_t B, int64_t m, int64_t k, int64_t n,
                         int a_t) {
  const int64_t bs = wdt == BP_Q8_0 ? 34 : 18, wrow = k + 32, ldy = n + 1;
  const int64_t wbytes = (1 + n * wrow / 32) * bs, ybytes = B * m * ldy * fsize(adt);
  uint8_t *a = rand_floats(adt, B * m * k, 1.0f), *w = malloc((size_t)wbytes);
  for (int64_t i = 0; i < wbytes; i++) w[i] = (uint8_t)rnd();
  for (int64_t blk = 0; blk < wbytes / bs; blk++) { /* scales in [2^-8, 2^-7) */
    uint16_t h = (uint16_t)(0x1C00 | (rnd() & 0x3FF));
    memcpy(w + blk * bs, &h, 2);
  }
  int r = B > 1 ? 3 : 2;
  int64_t as[3] = {B, m, k}, ast[3] = {m * k, a_t ? 1 : k, a_t ? m : 1};
  int64_t ws[2] = {n, k}, wst[2] = {wrow, 1}, ys[3] = {B, m, n}, yst[3] = {m * ldy, ldy, 1};
  float *got[2];
  for (int d = 0; d < 2; d++) {
    env_t *e = &g_env[d];
    bp_buffer_t *ba = buf(e->dev, a, B * m * k * fsize(adt)), *bw = buf(e->dev, w, wbytes);
    bp_buffer_t *by = buf(e->dev, NULL, ybytes);
    bp_tensor_t ta = view(ba, 0, adt, r, as + 3 - r, ast + 3 - r);
    bp_tensor_t tw = view(bw, bs, wdt, 2, ws, wst),
                ty = view(by, 0, adt, r, ys + 3 - r, yst + 3 - r);
    assert_int_equal(bp_qmatmul(e->s, &ta, &tw, &ty), BP_OK);
    uint8_t *raw = readback(by, ybytes);
    got[d] = malloc((size_t)(B * m * ldy) * 4);
    for (int64_t i = 0; i < B * m * ldy; i++) got[d][i] = load_float(adt, raw, i);
    free(raw);
    bp_buffer_free(ba), bp_buffer_free(bw), bp_buffer_free(by);
  }
  /* docs/ops.md: |y - exact| <= 2^-12 sum |a w| each; f16 / bf16 add a
   * rounding of the output each. Columns past n stay the filler. */
  double ulp = adt == BP_F32 ? 0 : adt == BP_F16 ? 0x1p-10 : 0x1p-7;
  for (int64_t bi = 0; bi < B; bi++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < ldy; j++) {
        int64_t o = (bi * m + i) * ldy + j;
        if (j == n) {
          assert_memory_equal(&got[0][o], &got[1][o], 4);
          continue;
        }
        double mag = 0;
        for (int64_t l = 0; l < k; l++) {
          const uint8_t *blk = w + (1 + (j * wrow + l) / 32) * bs;
          int64_t ai = a_t ? bi * m * k + l * m + i : bi * m * k + i * k + l;
          mag += fabs((double)load_float(adt, a, ai) * deq(wdt, blk, (int)(l % 32)));
        }
        double tol = 2 * 0x1p-12 * mag + ulp * fabs(got[0][o]) * 2 + 1e-30;
        if (!(fabs((double)got[0][o] - got[1][o]) <= tol)) {
          print_error("qmatmul %lld,%lld,%lld: cpu-ref %.9g vulkan %.9g (tol %.3g)\n",
                      (long long)bi, (long long)i, (long long)j, got[0][o], got[1][o], tol);
          fail();
        }
      }
  free(a), free(w), free(got[0]), free(got[1]);
}

static void test_qmatmul(void **st) {
  (void)st;
  static const bp_dtype_t fl[] = {BP_F32, BP_F16, BP_BF16};
  for (int p = 0; p < 8; p += 4) { /* texel GEMV (CPU implementations), direct */
    set_path(p);
    for (int f = 0; f < 3; f++)
      for (int q = 0; q < 2; q++) {
        bp_dtype_t w = q ? BP_Q4_0 : BP_Q8_0;
        qmatmul_case(w, fl[f], 1, 1, 96, 11, 0);  /* GEMV */
        qmatmul_case(w, fl[f], 3, 1, 320, 9, 1);  /* batched GEMV, a by stride */
        qmatmul_case(w, fl[f], 1, 7, 128, 70, 0); /* GEMM, partial tiles */
        qmatmul_case(w, fl[f], 2, 37, 64, 33, 1); /* batched, transposed a */
      }
  }
  set_path(0);
}

/* ---- i8 / fp8 copies ---- */

static void test_bytes_copy(void **st) {
  (void)st;
  static const bp_dtype_t dts[] = {BP_I8, BP_FP8_E4M3, BP_FP8_E5M2};
  uint8_t src[7 * 9];
  for (int i = 0; i < 63; i++) src[i] = (uint8_t)rnd();
  int64_t shape[2] = {7, 9}, tr[2] = {1, 7};
  for (int t = 0; t < 3; t++) {
    bp_buffer_t *keep[2] = {0};
    for (int d = 0; d < 2; d++) {
      env_t *e = &g_env[d];
      bp_buffer_t *bx = buf(e->dev, src, 63), *by = buf(e->dev, NULL, 1 + 63);
      bp_tensor_t tx = view(bx, 0, dts[t], 2, shape, tr), ty = view(by, 1, dts[t], 2, shape, NULL);
      assert_int_equal(bp_copy(e->s, &tx, &ty), BP_OK); /* a transpose */
      assert_int_equal(bp_stream_synchronize(e->s), BP_OK);
      bp_buffer_free(bx);
      keep[d] = by;
    }
    same_bytes(keep[0], keep[1], 1 + 63, "copy");
    bp_buffer_free(keep[0]), bp_buffer_free(keep[1]);
  }
}

/* ---- casts from and to i8 and fp8 ---- */

static size_t esize(bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_I32 ? 4 : dt == BP_F16 || dt == BP_BF16 ? 2 : 1;
}

/* 256 source elements of dt: every code of a byte dtype; for floats the
 * fp8 edges (ties, overflow bounds, subnormals, NaN, inf, -0) and values
 * over fp8's range; for i32 small and saturating integers. */
static void *cast_source(bp_dtype_t dt) {
  static const float edges[] = {0.0f,     -0.0f,    NAN,      INFINITY, -INFINITY, 448.0f, 464.0f,
                                465.0f,   -480.0f,  57344.0f, 61440.0f, 61439.0f,  1e9f,   0x1p-9f,
                                0x1p-10f, 0x3p-11f, 0x1p-16f, 0x1p-17f, 0x3p-18f,  2.5f,   -3.5f,
                                127.5f,   -128.5f,  255.5f,   0.1f};
  uint8_t *v = calloc(256, esize(dt));
  for (int i = 0; i < 256; i++) {
    if (esize(dt) == 1) {
      v[i] = (uint8_t)i;
      continue;
    }
    if (dt == BP_I32) {
      int32_t x = i < 250 ? (int32_t)(rnd() % 601) - 300 : (int32_t)(rnd() | 0x10000u);
      memcpy(v + 4 * i, &x, 4);
      continue;
    }
    float f =
        i < 25 ? edges[i] : ldexpf((float)(rnd() % 2048) / 1024.0f - 1.0f, (int)(rnd() % 40) - 20);
    store_float(dt, v, i, f);
  }
  return v;
}

static void cast_case(bp_dtype_t from, bp_dtype_t to, uint32_t flags) {
  void *src = cast_source(from);
  int64_t shape[2] = {16, 16}, tr[2] = {1, 16};
  uint64_t ybytes = 256 * esize(to) + 4;
  bp_buffer_t *keep[2];
  for (int d = 0; d < 2; d++) {
    env_t *e = &g_env[d];
    bp_buffer_t *bx = buf(e->dev, src, 256 * esize(from)), *by = buf(e->dev, NULL, ybytes);
    bp_tensor_t tx = view(bx, 0, from, 2, shape, tr), ty = view(by, 4, to, 2, shape, NULL);
    assert_int_equal(bp_cast_ex(e->s, &tx, &ty, flags), BP_OK);
    assert_int_equal(bp_stream_synchronize(e->s), BP_OK);
    bp_buffer_free(bx);
    keep[d] = by;
  }
  char what[64];
  snprintf(what, sizeof what, "cast %s to %s%s", bp_dtype_name(from), bp_dtype_name(to),
           flags ? ", saturating" : "");
  same_bytes(keep[0], keep[1], ybytes, what);
  bp_buffer_free(keep[0]), bp_buffer_free(keep[1]);
  free(src);
}

static void test_casts(void **st) {
  (void)st;
  static const bp_dtype_t all[] = {BP_F32, BP_F16, BP_BF16,     BP_I32,
                                   BP_U8,  BP_I8,  BP_FP8_E4M3, BP_FP8_E5M2};
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++)
      if (i >= 5 || j >= 5) {
        cast_case(all[i], all[j], 0);
        if (j >= 6) cast_case(all[i], all[j], BP_CAST_SATURATE);
      }
}

/* ---- a captured graph (native on Vulkan: the packed panels of qgemm
 * live as long as the graph) ---- */

typedef struct graph_bufs {
  bp_buffer_t *a, *b, *sa, *sb, *c, *x, *w, *y;
  bp_tensor_t ta, tb, tsa, tsb, tc, tx, tw, ty;
} graph_bufs_t;

enum { GM = 37, GK = 70, GN = 45, GWN = 40, GWK = 64 };

static void graph_setup(env_t *e, graph_bufs_t *g, const int8_t *a, const int8_t *b,
                        const float *sc, const float *x, const uint8_t *w) {
  int64_t as[2] = {GM, GK}, bs[2] = {GK, GN}, cs[2] = {GM, GN}, m = GM, n = GN;
  int64_t xs[2] = {1, GWK}, ws[2] = {GWN, GWK}, ys[2] = {1, GWN};
  g->a = buf(e->dev, a, GM * GK), g->b = buf(e->dev, b, GK * GN), g->c = buf(e->dev, NULL, GM * GN);
  g->sa = buf(e->dev, sc, 4 * GM), g->sb = buf(e->dev, sc, 4 * GN);
  g->x = buf(e->dev, x, 4 * GWK), g->w = buf(e->dev, w, GWN * GWK / 32 * 18), g->y = buf(e->dev, NULL, 4 * GWN);
  g->ta = view(g->a, 0, BP_I8, 2, as, NULL), g->tb = view(g->b, 0, BP_I8, 2, bs, NULL);
  g->tc = view(g->c, 0, BP_I8, 2, cs, NULL);
  g->tsa = view(g->sa, 0, BP_F32, 1, &m, NULL), g->tsb = view(g->sb, 0, BP_F32, 1, &n, NULL);
  g->tx = view(g->x, 0, BP_F32, 2, xs, NULL), g->tw = view(g->w, 0, BP_Q4_0, 2, ws, NULL);
  g->ty = view(g->y, 0, BP_F32, 2, ys, NULL);
}

static void graph_issue(env_t *e, graph_bufs_t *g, bool qmatmul) {
  assert_int_equal(bp_qgemm(e->s, &g->ta, &g->tb, &g->tsa, &g->tsb, 0.3f, &g->tc), BP_OK);
  if (qmatmul) assert_int_equal(bp_qmatmul(e->s, &g->tx, &g->tw, &g->ty), BP_OK);
}

static void graph_free(graph_bufs_t *g) {
  bp_buffer_t *all[8] = {g->a, g->b, g->sa, g->sb, g->c, g->x, g->w, g->y};
  for (int i = 0; i < 8; i++) bp_buffer_free(all[i]);
}

static void test_graph(void **st) {
  (void)st;
  int8_t a[GM * GK], b[GK * GN];
  float sc[GM + GN], x[GWK];
  uint8_t w[GWN * GWK / 32 * 18];
  for (int i = 0; i < GM * GK; i++) a[i] = (int8_t)rnd();
  for (int i = 0; i < GK * GN; i++) b[i] = (int8_t)rnd();
  for (int i = 0; i < GM + GN; i++) sc[i] = 0.01f + 0.001f * (float)i;
  for (int i = 0; i < GWK; i++) x[i] = (float)(rnd() % 1000) / 500.0f - 1.0f;
  for (size_t i = 0; i < sizeof w; i++) w[i] = (uint8_t)rnd();
  for (int blk = 0; blk < GWN * GWK / 32; blk++) w[blk * 18 + 1] = 0x20; /* sane scales */
  graph_bufs_t r, v;
  graph_setup(&g_env[0], &r, a, b, sc, x, w);
  graph_setup(&g_env[1], &v, a, b, sc, x, w);
  graph_issue(&g_env[0], &r, false);
  graph_issue(&g_env[1], &v, true);
  assert_int_equal(bp_stream_synchronize(g_env[1].s), BP_OK);
  float *eager = readback(v.y, 4 * GWN);
  uint8_t filler[GM * GN];
  memset(filler, 0xAB, sizeof filler);
  assert_int_equal(bp_stream_begin_capture(g_env[1].s), BP_OK);
  graph_issue(&g_env[1], &v, true);
  bp_graph_t *graph;
  assert_int_equal(bp_stream_end_capture(g_env[1].s, &graph), BP_OK);
  for (int launch = 0; launch < 2; launch++) {
    assert_int_equal(bp_buffer_write(v.c, 0, filler, GM * GN), BP_OK);
    assert_int_equal(bp_buffer_write(v.y, 0, filler, 4 * GWN), BP_OK);
    assert_int_equal(bp_graph_launch(graph, g_env[1].s), BP_OK);
    assert_int_equal(bp_stream_synchronize(g_env[1].s), BP_OK);
    same_bytes(r.c, v.c, GM * GN, "qgemm in a graph");
    float *y = readback(v.y, 4 * GWN);
    assert_memory_equal(y, eager, 4 * GWN); /* the same kernel: the same bits */
    free(y);
  }
  assert_true(bp_graph_is_native(graph)); /* built at the first launch */
  bp_graph_destroy(graph);
  free(eager);
  graph_free(&r), graph_free(&v);
}

/* ---- what the device claims ---- */

/* Every case above runs only on what the device claims; this pins the
 * claims down, so a dropped claim does not pass silently. */
static bool claims(bp_op_t op, bp_dtype_t dt) {
  bool yes = false;
  assert_int_equal(bp_device_supports(g_env[1].dev, op, dt, &yes), BP_OK);
  return yes;
}

static void test_claims(void **st) {
  (void)st;
  static const bp_dtype_t q[] = {BP_I8, BP_Q8_0, BP_Q4_0, BP_FP8_E4M3};
  for (int i = 0; i < 4; i++) {
    bool want = i < 3; /* lavapipe has 16-bit storage and shaderFloat64 */
    assert_int_equal(claims(BP_OP_QUANTIZE, q[i]), want);
    assert_int_equal(claims(BP_OP_DEQUANTIZE, q[i]), want);
    assert_int_equal(claims(BP_OP_QGEMM, q[i]), q[i] == BP_I8 || q[i] == BP_FP8_E4M3);
    assert_int_equal(claims(BP_OP_QMATMUL, q[i]), q[i] == BP_Q8_0 || q[i] == BP_Q4_0);
    assert_int_equal(claims(BP_OP_COPY, q[i]), q[i] == BP_I8 || q[i] == BP_FP8_E4M3);
    assert_int_equal(claims(BP_OP_CAST, q[i]), q[i] == BP_I8 || q[i] == BP_FP8_E4M3);
    assert_false(claims(BP_OP_FILL, q[i])); /* as cpu-ref: no i8 / fp8 fill */
  }
}

static int open_env(env_t *e, bp_context_t *ctx, const char *name) {
  e->ctx = ctx;
  if (bp_device_open(ctx, name, NULL, &e->dev) != BP_OK) return -1;
  return bp_stream_create(e->dev, &e->s) == BP_OK ? 0 : -1;
}

int main(void) {
  bp_context_t *ctx;
  if (bp_context_create(NULL, &ctx) != BP_OK) return 1;
  if (open_env(&g_env[0], ctx, "cpu-ref") != 0) return 1;
  if (open_env(&g_env[1], ctx, "vulkan") != 0) {
    int rc = test_no_device("vulkan", bp_last_error());
    bp_context_destroy(ctx);
    return rc;
  }
  g_seed = 12345;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_claims),  cmocka_unit_test(test_blocks),
      cmocka_unit_test(test_i8),      cmocka_unit_test(test_qgemm),
      cmocka_unit_test(test_qmatmul), cmocka_unit_test(test_bytes_copy),
      cmocka_unit_test(test_casts),   cmocka_unit_test(test_graph),
  };
  int fails = cmocka_run_group_tests(tests, NULL, NULL);
  for (int d = 1; d >= 0; d--) {
    bp_stream_destroy(g_env[d].s);
    bp_device_close(g_env[d].dev);
  }
  bp_context_destroy(ctx);
  return fails ? 1 : 0;
}
