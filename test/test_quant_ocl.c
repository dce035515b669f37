/*
 * test_quant_ocl.c — the quantized ops of ABI 1.5 and the i8 / fp8 casts on
 * the OpenCL backend (plugins/opencl/ops_quant*.c, kernels/opencl/quant.cl)
 * against cpu-ref, the scalar reference: every (op, dtype) the device
 * claims, opened with fallback off so nothing runs elsewhere. Exact where
 * docs/ops.md says so (quantize, dequantize, the int8 GEMM in its three
 * outputs, the casts); qmatmul within its tolerance. Odd sizes, strided and
 * transposed views, batches (shared and per-batch b), the int32 wrap past
 * k = 2^17, the GEMV (m = 1) and tiled (m > 1) paths. f16's cast pairs
 * run where the device claims f16 (BACKPLANE_OPENCL_F16=1 on PoCL).
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

/* ---- the two devices --------------------------------------------------- */

typedef struct side {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
} side_t;

static side_t ocl, ref;

static bp_status_t side_open(side_t *sd, const char *name) {
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .no_fallback = true};
  bp_status_t st = bp_context_create(NULL, &sd->ctx);
  if (st == BP_OK) st = bp_device_open(sd->ctx, name, &cfg, &sd->dev);
  if (st == BP_OK) st = bp_stream_create(sd->dev, &sd->s);
  return st;
}

static void side_close(side_t *sd) {
  if (sd->s) bp_stream_destroy(sd->s);
  if (sd->dev) bp_device_close(sd->dev);
  if (sd->ctx) bp_context_destroy(sd->ctx);
  memset(sd, 0, sizeof *sd);
}

/* ---- tensors described on the host, made on either device -------------- */

typedef struct tdesc {
  const void *host; /* NULL: an output, prefilled with 0xAB */
  uint64_t bytes;   /* of its buffer */
  bp_dtype_t dt;
  int rank;
  int64_t shape[3], strides[3]; /* strides[0] == 0 && !dense: given */
  bool dense;                   /* contiguous strides */
} tdesc_t;

typedef enum qop { Q_QUANT, Q_DEQUANT, Q_GEMM, Q_MATMUL, Q_CAST, Q_COPY, Q_CAST_SAT } qop_t;

/* Runs op on sd over tensors t (NULL slots absent) and returns the bytes of
 * output tensor t[out]'s buffer. */
static uint8_t *run_op(side_t *sd, qop_t op, tdesc_t *const *t, int nt, int out, float out_scale) {
  bp_buffer_t *b[5] = {0};
  bp_tensor_t tt[5];
  const bp_tensor_t *p[5] = {0};
  for (int i = 0; i < nt; i++) {
    if (!t[i]) continue;
    assert_int_equal(bp_buffer_alloc(sd->dev, t[i]->bytes, &b[i]), BP_OK);
    uint8_t *fill = malloc(t[i]->bytes);
    if (t[i]->host)
      memcpy(fill, t[i]->host, t[i]->bytes);
    else
      memset(fill, 0xAB, t[i]->bytes);
    assert_int_equal(bp_buffer_write(b[i], 0, fill, t[i]->bytes), BP_OK);
    free(fill);
    assert_int_equal(bp_tensor_init(b[i], 0, t[i]->dt, t[i]->rank, t[i]->shape,
                                    t[i]->dense ? NULL : t[i]->strides, &tt[i]),
                     BP_OK);
    p[i] = &tt[i];
  }
  bp_status_t st = BP_ERR_INTERNAL;
  switch (op) {
  case Q_QUANT:
    st = bp_quantize(sd->s, p[0], p[1], p[2]);
    break;
  case Q_DEQUANT:
    st = bp_dequantize(sd->s, p[0], p[1], p[2]);
    break;
  case Q_GEMM:
    st = bp_qgemm(sd->s, p[0], p[1], p[2], p[3], out_scale, p[4]);
    break;
  case Q_MATMUL:
    st = bp_qmatmul(sd->s, p[0], p[1], p[2]);
    break;
  case Q_CAST:
    st = bp_cast(sd->s, p[0], p[1]);
    break;
  case Q_COPY:
    st = bp_copy(sd->s, p[0], p[1]);
    break;
  case Q_CAST_SAT:
    st = bp_cast_ex(sd->s, p[0], p[1], BP_CAST_SATURATE);
    break;
  }
  if (st != BP_OK)
    fail_msg("op %d on %s: %s", (int)op, sd == &ocl ? "opencl" : "cpu-ref", bp_last_error());
  uint8_t *got = malloc(t[out]->bytes);
  assert_int_equal(bp_buffer_read(b[out], 0, got, t[out]->bytes), BP_OK);
  for (int i = 0; i < nt; i++) bp_buffer_free(b[i]);
  return got;
}

/* What the running case is, for failure messages. */
static char what[128];

/* Runs op on both devices and compares t[out]'s bytes exactly. */
static void same_bytes(qop_t op, tdesc_t *const *t, int nt, int out, float out_scale) {
  uint8_t *g = run_op(&ocl, op, t, nt, out, out_scale),
          *w = run_op(&ref, op, t, nt, out, out_scale);
  for (uint64_t i = 0; i < t[out]->bytes; i++)
    if (g[i] != w[i])
      fail_msg("%s: byte %llu is 0x%02x on opencl, 0x%02x on cpu-ref", what, (unsigned long long)i,
               g[i], w[i]);
  free(g), free(w);
}

/* ---- host data --------------------------------------------------------- */

static uint64_t rng = 1;
static uint32_t next_u32(void) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(rng >> 32);
}
static float next_f(float lo, float hi) {
  return lo + (hi - lo) * (float)(next_u32() >> 8) / 16777216.0f;
}

/* n values of dt (f32, f16, bf16) in [lo, hi). */
static void *rand_float(bp_dtype_t dt, int64_t n, float lo, float hi) {
  void *v = malloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) {
    float f = next_f(lo, hi);
    if (dt == BP_F32)
      ((float *)v)[i] = f;
    else if (dt == BP_F16)
      ((uint16_t *)v)[i] = bp_f32_to_f16(f);
    else
      ((uint16_t *)v)[i] = bp_f32_to_bf16(f);
  }
  return v;
}

static float load_float(bp_dtype_t dt, const void *p, int64_t i) {
  if (dt == BP_F32) return ((const float *)p)[i];
  if (dt == BP_F16) return bp_f16_to_f32(((const uint16_t *)p)[i]);
  return bp_bf16_to_f32(((const uint16_t *)p)[i]);
}

static int64_t dsize(bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_I32    ? 4
         : dt == BP_F16 || dt == BP_BF16 ? 2
         : dt == BP_F64 || dt == BP_I64  ? 8
                                         : 1;
}

/* Random blocks: a scale in [2^-8, 2^-4) of either sign, random quants. */
static uint8_t *rand_blocks(bp_dtype_t dt, int64_t nblocks) {
  int64_t bs = dt == BP_Q8_0 ? 34 : 18;
  uint8_t *v = malloc((size_t)(nblocks * bs));
  for (int64_t b = 0; b < nblocks; b++) {
    uint16_t h = bp_f32_to_f16(next_f(-1, 1) * 0.0625f);
    memcpy(v + b * bs, &h, 2);
    for (int64_t j = 2; j < bs; j++) v[b * bs + j] = (uint8_t)next_u32();
  }
  return v;
}

static float deq(bp_dtype_t dt, const uint8_t *blk, int j) {
  uint16_t h;
  memcpy(&h, blk, 2);
  float d = bp_f16_to_f32(h);
  if (dt == BP_Q8_0) return (float)(int8_t)blk[2 + j] * d;
  int q = j < 16 ? (blk[2 + j] & 15) : (blk[2 + j - 16] >> 4);
  return (float)(q - 8) * d;
}

static const bp_dtype_t acts[3] = {BP_F32, BP_F16, BP_BF16};
static const bp_dtype_t blocks[2] = {BP_Q8_0, BP_Q4_0};

/* ---- quantize / dequantize ---------------------------------------------- */

/* x [rows, k] in f (row stride xrs, or transposed: stored [k, rows]) to the
 * block dtype q and back, bytes and values equal to cpu-ref's. */
static void block_case(bp_dtype_t f, bp_dtype_t q, int64_t rows, int64_t k, bool transposed) {
  int64_t bs = q == BP_Q8_0 ? 34 : 18, nb = rows * k / 32, fs = dsize(f);
  snprintf(what, sizeof what, "%s <-> %s [%lld, %lld]%s", bp_dtype_name(f), bp_dtype_name(q),
           (long long)rows, (long long)k, transposed ? " transposed" : "");
  void *x = rand_float(f, rows * k, -3, 3);
  if (f == BP_F32) ((float *)x)[3] = 0, ((float *)x)[7] = 40.0f; /* lone large value */
  tdesc_t tx = {
      x,    (uint64_t)(rows * k * fs), f, 2, {rows, k}, {transposed ? 1 : k, transposed ? rows : 1},
      false};
  tdesc_t tq = {NULL, (uint64_t)(nb * bs), q, 2, {rows, k}, {0}, true};
  tdesc_t *tqs[3] = {&tx, NULL, &tq};
  same_bytes(Q_QUANT, tqs, 3, 2, 0);
  uint8_t *w = rand_blocks(q, nb);
  tdesc_t tw = {w, (uint64_t)(nb * bs), q, 2, {rows, k}, {0}, true};
  tdesc_t ty = {
      NULL, (uint64_t)(rows * k * fs), f, 2, {rows, k}, {transposed ? 1 : k, transposed ? rows : 1},
      false};
  tdesc_t *tds[3] = {&tw, NULL, &ty};
  same_bytes(Q_DEQUANT, tds, 3, 2, 0);
  free(x), free(w);
}

static void test_quantize_blocks(void **st) {
  (void)st;
  for (int a = 0; a < 3; a++)
    for (int q = 0; q < 2; q++) {
      block_case(acts[a], blocks[q], 3, 96, false);
      block_case(acts[a], blocks[q], 5, 64, true);
    }
}

/* A batch of rows with padded row strides (rank 3, weights' row stride
 * whole blocks past k). */
static void test_quantize_blocks_padded(void **st) {
  (void)st;
  for (int q = 0; q < 2; q++) {
    int64_t bs = blocks[q] == BP_Q8_0 ? 34 : 18;
    snprintf(what, sizeof what, "f32 -> %s padded rows", bp_dtype_name(blocks[q]));
    float *x = rand_float(BP_F32, 2 * 3 * 80, -2, 2);
    tdesc_t tx = {x, 2 * 3 * 80 * 4, BP_F32, 3, {2, 3, 64}, {240, 80, 1}, false};
    tdesc_t tq = {NULL, (uint64_t)(2 * 3 * 96 / 32 * bs), blocks[q], 3, {2, 3, 64}, {288, 96, 1},
                  false};
    tdesc_t *t[3] = {&tx, NULL, &tq};
    same_bytes(Q_QUANT, t, 3, 2, 0);
    free(x);
  }
}

/* i8 with per-row and per-column scales: ties, saturation, NaN. */
static void test_quantize_i8(void **st) {
  (void)st;
  for (int a = 0; a < 3; a++) {
    bp_dtype_t f = acts[a];
    int64_t rows = 5, cols = 7, fs = dsize(f);
    snprintf(what, sizeof what, "i8 <-> %s", bp_dtype_name(f));
    float *xf = rand_float(BP_F32, rows * cols, -300, 300);
    xf[0] = 2.5f, xf[1] = -2.5f, xf[2] = 1.5f, xf[3] = NAN, xf[4] = 1e6f, xf[5] = -1e6f;
    uint8_t *x = malloc((size_t)(rows * cols * fs));
    for (int64_t i = 0; i < rows * cols; i++) {
      if (f == BP_F32)
        ((float *)x)[i] = xf[i];
      else if (f == BP_F16)
        ((uint16_t *)x)[i] = bp_f32_to_f16(xf[i]);
      else
        ((uint16_t *)x)[i] = bp_f32_to_bf16(xf[i]);
    }
    float sc[7] = {1.0f, 0.5f, 3.0f, 0.7f, 2.0f, 1.25f, 0.1f};
    for (int per_col = 0; per_col < 2; per_col++) {
      tdesc_t tx = {x, (uint64_t)(rows * cols * fs), f, 2, {rows, cols}, {0}, true};
      tdesc_t ts = {sc, sizeof sc, BP_F32, 2, {per_col ? 1 : rows, per_col ? cols : 1}, {0}, true};
      tdesc_t tq = {NULL, (uint64_t)(rows * cols), BP_I8, 2, {rows, cols}, {1, rows}, false};
      tdesc_t *t[3] = {&tx, &ts, &tq};
      same_bytes(Q_QUANT, t, 3, 2, 0);
      int8_t q[35];
      for (int i = 0; i < 35; i++) q[i] = (int8_t)next_u32();
      q[0] = -128, q[1] = 127;
      tdesc_t tqi = {q, sizeof q, BP_I8, 2, {rows, cols}, {1, rows}, false};
      tdesc_t ty = {NULL, (uint64_t)(rows * cols * fs), f, 2, {rows, cols}, {0}, true};
      tdesc_t *u[3] = {&tqi, &ts, &ty};
      same_bytes(Q_DEQUANT, u, 3, 2, 0);
    }
    free(xf), free(x);
  }
}

/* ---- int8 GEMM ------------------------------------------------------------ */

typedef struct qg_case {
  int64_t batch, m, k, n; /* batch 0: rank 2 */
  bool a_t, b_t;          /* a stored [k, m] / b stored [n, k] */
  bool b_shared;          /* rank 3 a with a rank 2 b */
} qg_case_t;

static int8_t *rand_i8(int64_t n) {
  int8_t *v = malloc((size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = (int8_t)(next_u32() >> 24);
  return v;
}

/* Fills a rank 2/3 descriptor of a [.., r, c] matrix, stored transposed
 * ([.., c, r]) when t. */
static void mat(tdesc_t *d, const void *h, bp_dtype_t dt, int64_t batch, int64_t r, int64_t c,
                bool t) {
  memset(d, 0, sizeof *d);
  d->host = h, d->dt = dt, d->bytes = (uint64_t)((batch ? batch : 1) * r * c * dsize(dt));
  int o = batch ? 1 : 0;
  d->rank = 2 + o;
  if (batch) d->shape[0] = batch, d->strides[0] = r * c;
  d->shape[o] = r, d->shape[o + 1] = c;
  d->strides[o] = t ? 1 : c, d->strides[o + 1] = t ? r : 1;
}

static void qgemm_case(const qg_case_t *g) {
  int64_t bt = g->batch ? g->batch : 1;
  int8_t *a = rand_i8(bt * g->m * g->k), *b = rand_i8((g->b_shared ? 1 : bt) * g->k * g->n);
  if (g->m > 0 && g->k > 0) a[0] = -128;
  if (g->k > 0 && g->n > 0) b[0] = -128;
  float *sa = rand_float(BP_F32, g->m, 0.01f, 2), *sb = rand_float(BP_F32, g->n, 0.01f, 2);
  tdesc_t ta, tb, tc, tsa = {sa, (uint64_t)(g->m * 4), BP_F32, 1, {g->m}, {0}, true};
  tdesc_t tsb = {sb, (uint64_t)(g->n * 4), BP_F32, 1, {g->n}, {0}, true};
  tdesc_t tsa1 = {sa, 4, BP_F32, 1, {1}, {0}, true}; /* one value for every row */
  mat(&ta, a, BP_I8, g->batch, g->m, g->k, g->a_t);
  mat(&tb, b, BP_I8, g->b_shared ? 0 : g->batch, g->k, g->n, g->b_t);
  static const bp_dtype_t cds[3] = {BP_I32, BP_F32, BP_I8};
  for (int c = 0; c < 3; c++) {
    mat(&tc, NULL, cds[c], g->batch, g->m, g->n, false);
    snprintf(what, sizeof what, "qgemm %s [%lld x %lld x %lld x %lld]%s%s%s", bp_dtype_name(cds[c]),
             (long long)g->batch, (long long)g->m, (long long)g->k, (long long)g->n,
             g->a_t ? " a^T" : "", g->b_t ? " b^T" : "", g->b_shared ? " b shared" : "");
    bool scaled = cds[c] != BP_I32;
    tdesc_t *t[5] = {&ta, &tb, scaled ? (c == 2 ? &tsa1 : &tsa) : NULL, scaled ? &tsb : NULL, &tc};
    same_bytes(Q_GEMM, t, 5, 4, 40.0f);
  }
  free(a), free(b), free(sa), free(sb);
}

static void test_qgemm_shapes(void **st) {
  (void)st;
  static const qg_case_t cases[] = {
      {0, 1, 67, 9, false, false, false},    {0, 5, 67, 9, false, true, false},
      {0, 37, 130, 50, false, false, false}, {0, 33, 31, 65, true, false, false},
      {0, 32, 64, 32, true, true, false},    {2, 13, 33, 17, false, false, false},
      {3, 9, 20, 40, true, false, true},     {2, 1, 100, 3, false, true, false},
      {0, 4, 1, 4, false, false, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) qgemm_case(&cases[i]);
}

/* Past k = 2^17 of -128 * -128 the int32 sum wraps modulo 2^32. */
static void test_qgemm_wrap(void **st) {
  (void)st;
  const int64_t k = 140000;
  int8_t *a = malloc(k);
  memset(a, 0x80, k);
  tdesc_t ta, tb, tc;
  mat(&ta, a, BP_I8, 0, 1, k, false);
  mat(&tb, a, BP_I8, 0, k, 1, false);
  mat(&tc, NULL, BP_I32, 0, 1, 1, false);
  tdesc_t *t[5] = {&ta, &tb, NULL, NULL, &tc};
  int32_t *g = (int32_t *)run_op(&ocl, Q_GEMM, t, 5, 4, 0);
  assert_int_equal(g[0], (int32_t)(uint32_t)((uint64_t)k * 16384u));
  free(g), free(a);
}

/* ---- qmatmul ----------------------------------------------------------- */

/* y [batch, m, n] = a [batch, m, k] w [n, k]^T; a transposed when a_t; w's
 * rows padded to wk >= k weights. */
static void qmatmul_case(bp_dtype_t f, bp_dtype_t q, int64_t batch, int64_t m, int64_t n, int64_t k,
                         int64_t wk, bool a_t) {
  int64_t bs = q == BP_Q8_0 ? 34 : 18, bt = batch ? batch : 1;
  void *a = rand_float(f, bt * m * k, -1, 1);
  uint8_t *w = rand_blocks(q, n * wk / 32);
  tdesc_t ta, ty, tw = {w, (uint64_t)(n * wk / 32 * bs), q, 2, {n, k}, {wk, 1}, false};
  mat(&ta, a, f, batch, m, k, a_t);
  mat(&ty, NULL, f, batch, m, n, false);
  tdesc_t *t[3] = {&ta, &tw, &ty};
  uint8_t *g = run_op(&ocl, Q_MATMUL, t, 3, 2, 0), *r = run_op(&ref, Q_MATMUL, t, 3, 2, 0);
  for (int64_t e = 0; e < bt * m * n; e++) {
    int64_t bi = e / (m * n), i = e / n % m, j = e % n;
    double mag = 0;
    for (int64_t l = 0; l < k; l++) {
      int64_t ai = bi * m * k + (a_t ? l * m + i : i * k + l);
      mag += fabs((double)load_float(f, a, ai) * deq(q, w + (j * wk + l) / 32 * bs, (int)(l % 32)));
    }
    double want = load_float(f, r, e), got = load_float(f, g, e);
    /* docs/ops.md: 2^-12 sum |a w| each; f16 / bf16 round the output once */
    double out_ulp = f == BP_F32 ? 0 : f == BP_F16 ? 0x1p-10 : 0x1p-7;
    double tol = 2 * mag * 0x1p-12 + fabs(want) * out_ulp + 1e-30;
    if (!(fabs(got - want) <= tol))
      fail_msg("qmatmul %s/%s [%lld] y[%lld,%lld,%lld] = %g on opencl, %g on cpu-ref (tol %g)",
               bp_dtype_name(f), bp_dtype_name(q), (long long)m, (long long)bi, (long long)i,
               (long long)j, got, want, tol);
  }
  free(a), free(w), free(g), free(r);
}

static void test_qmatmul_gemv(void **st) {
  (void)st;
  for (int a = 0; a < 3; a++)
    for (int q = 0; q < 2; q++) {
      qmatmul_case(acts[a], blocks[q], 0, 1, 11, 128, 128, false);
      qmatmul_case(acts[a], blocks[q], 2, 1, 70, 2048, 2080, true);
    }
}

static void test_qmatmul_tiled(void **st) {
  (void)st;
  for (int a = 0; a < 3; a++)
    for (int q = 0; q < 2; q++) {
      qmatmul_case(acts[a], blocks[q], 0, 7, 11, 128, 128, false);
      qmatmul_case(acts[a], blocks[q], 0, 37, 70, 256, 288, true);
      qmatmul_case(acts[a], blocks[q], 3, 33, 33, 64, 64, false);
    }
}

/* ---- casts and copies of i8 and fp8 ------------------------------------ */

/* The source values: every byte for the 1-byte types; else random values
 * around fp8's range and the edges of its rounding and overflow. */
static void *cast_source(bp_dtype_t dt, int64_t n) {
  static const double edge[] = {0.0,  -0.0,         NAN, INFINITY,    -INFINITY,   448,
                                464,  464.5,        480, 57344,       61440,       61439,
                                1e-9, 0.0009765625, 0.5, -2.5,        127.5,       -128.5,
                                300,  -1e12,        1.5, 0.001953125, 0.0029296875};
  uint8_t *v = malloc((size_t)(n * 8));
  for (int64_t i = 0; i < n; i++) {
    double x = i < (int64_t)(sizeof edge / sizeof edge[0])
                   ? edge[i]
                   : ldexp(next_f(-1, 1), (int)(next_u32() % 40) - 20);
    switch (dt) {
    case BP_F32:
      ((float *)v)[i] = (float)x;
      break;
    case BP_F16:
      ((uint16_t *)v)[i] = bp_f64_to_f16(x);
      break;
    case BP_BF16:
      ((uint16_t *)v)[i] = bp_f64_to_bf16(x);
      break;
    case BP_F64:
      ((double *)v)[i] = x;
      break;
    case BP_I32:
      ((int32_t *)v)[i] = isfinite(x) ? (int32_t)fmax(fmin(x * 100, 2e9), -2e9) : 7;
      break;
    case BP_I64:
      ((int64_t *)v)[i] = isfinite(x) ? (int64_t)(x * 1e6) : -7;
      break;
    default:
      v[i] = (uint8_t)i;
      break;
    }
  }
  return v;
}

static bool claims(bp_op_t op, bp_dtype_t dt) {
  bool yes = false;
  return bp_device_supports(ocl.dev, op, dt, &yes) == BP_OK && yes;
}

static void test_casts(void **st) {
  (void)st;
  static const bp_dtype_t all[] = {BP_F32, BP_F16, BP_BF16, BP_F64,      BP_I32,
                                   BP_I64, BP_U8,  BP_I8,   BP_FP8_E4M3, BP_FP8_E5M2};
  int ran = 0;
  for (int s = 0; s < 10; s++)
    for (int d = 0; d < 10; d++) {
      bp_dtype_t x = all[s], y = all[d];
      bool mine = x == BP_I8 || y == BP_I8 || x >= BP_FP8_E4M3 || y >= BP_FP8_E4M3;
      if (x == y || !mine || !claims(BP_OP_CAST, x) || !claims(BP_OP_CAST, y)) continue;
      const int64_t n = 256;
      snprintf(what, sizeof what, "cast %s -> %s", bp_dtype_name(x), bp_dtype_name(y));
      void *src = cast_source(x, n);
      /* [16, 16] read transposed: strided source, dense target */
      tdesc_t tx = {src, (uint64_t)(n * dsize(x)), x, 2, {16, 16}, {1, 16}, false};
      tdesc_t ty = {NULL, (uint64_t)(n * dsize(y)), y, 2, {16, 16}, {0}, true};
      tdesc_t *t[2] = {&tx, &ty};
      same_bytes(Q_CAST, t, 2, 1, 0);
      if (y == BP_FP8_E4M3 || y == BP_FP8_E5M2) {
        strncat(what, " saturating", sizeof what - strlen(what) - 1);
        same_bytes(Q_CAST_SAT, t, 2, 1, 0);
      }
      free(src);
      ran++;
    }
  /* i8 <-> f32 both ways, fp8 from f32 and back, at least */
  assert_true(ran >= 6);
  static const bp_dtype_t ones[] = {BP_I8, BP_FP8_E4M3, BP_FP8_E5M2};
  for (int i = 0; i < 3; i++) {
    if (!claims(BP_OP_COPY, ones[i])) fail_msg("copy of %s not claimed", bp_dtype_name(ones[i]));
    snprintf(what, sizeof what, "copy %s", bp_dtype_name(ones[i]));
    void *src = cast_source(ones[i], 256);
    tdesc_t tx = {src, 256, ones[i], 2, {16, 16}, {1, 16}, false};
    tdesc_t ty = {NULL, 256, ones[i], 2, {16, 16}, {0}, true};
    tdesc_t *t[2] = {&tx, &ty};
    same_bytes(Q_COPY, t, 2, 1, 0);
    free(src);
  }
}

/* The claims this file covers, so a new one without a test fails here. */
static void test_claims(void **st) {
  (void)st;
  static const struct {
    bp_op_t op;
    bp_dtype_t dt;
  } want[] = {
      {BP_OP_QUANTIZE, BP_I8},   {BP_OP_QUANTIZE, BP_Q8_0},   {BP_OP_QUANTIZE, BP_Q4_0},
      {BP_OP_DEQUANTIZE, BP_I8}, {BP_OP_DEQUANTIZE, BP_Q8_0}, {BP_OP_DEQUANTIZE, BP_Q4_0},
      {BP_OP_QGEMM, BP_I8},      {BP_OP_QMATMUL, BP_Q8_0},    {BP_OP_QMATMUL, BP_Q4_0},
      {BP_OP_CAST, BP_I8},       {BP_OP_COPY, BP_I8},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!claims(want[i].op, want[i].dt))
      fail_msg("opencl does not claim %s for %s", bp_op_name(want[i].op),
               bp_dtype_name(want[i].dt));
  assert_false(claims(BP_OP_QGEMM, BP_F32));
  assert_false(claims(BP_OP_QMATMUL, BP_I8));
}

int main(void) {
  bp_status_t st = side_open(&ocl, "opencl");
  if (st != BP_OK) {
    char why[512];
    snprintf(why, sizeof why, "%s", bp_last_error());
    side_close(&ocl);
    return test_no_device("opencl", why);
  }
  if (side_open(&ref, "cpu-ref") != BP_OK) {
    printf("FAIL: cpu-ref: %s\n", bp_last_error());
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_claims),
      cmocka_unit_test(test_quantize_blocks),
      cmocka_unit_test(test_quantize_blocks_padded),
      cmocka_unit_test(test_quantize_i8),
      cmocka_unit_test(test_qgemm_shapes),
      cmocka_unit_test(test_qgemm_wrap),
      cmocka_unit_test(test_qmatmul_gemv),
      cmocka_unit_test(test_qmatmul_tiled),
      cmocka_unit_test(test_casts),
  };
  int fails = cmocka_run_group_tests(tests, NULL, NULL);
  side_close(&ocl);
  side_close(&ref);
  return fails ? 1 : 0;
}
