/*
 * test_quant_gpu.c — the quantized ops of ABI 1.5 and the i8 / fp8 data
 * moves on the CUDA and ROCm backends (over their CPU shims here, on a GPU
 * under tools/gpu-check.sh's real drivers), against cpu-ref in the same
 * context. Fallback is off, so every claimed (op, dtype) runs on the
 * device under test; each case checks that the device claims it.
 *
 *  - quantize / dequantize: q8_0, q4_0 and i8 (per-row and per-tensor
 *    scales; ties, saturation, NaN) from and to f32, f16 and bf16, through
 *    transposed views, padded block rows, an offset and a batch: the bytes
 *    of the whole output buffer equal cpu-ref's (nothing written outside).
 *  - qgemm: i32, f32-scaled and i8-requantized c, exact, at odd sizes over
 *    several tiles, transposed a and b, -128 extremes, batches with b
 *    shared and per batch.
 *  - qmatmul: q8_0 / q4_0 weights with f32, f16 and bf16 activations, the
 *    GEMV (m = 1, and a batch of small m) and the tiled GEMM, a transposed
 *    a, padded weight rows: within docs/ops.md's bound of the exact sum.
 *  - cast between every dtype and i8 / e4m3 / e5m2 both ways (all 256
 *    codes, overflow midpoints, ties, NaN, inf, subnormals), fill and a
 *    strided copy: bit-exact against cpu-ref (NaN matches any NaN).
 *  - qgemm, quantize and qmatmul captured into a graph: native, launched
 *    twice over overwritten outputs, the eager bytes each time.
 *  - the kernels' integer f16 / fp8 code (kernels/common/bp_qcodec.h)
 *    against the CPU's (plugins/cpu/fp8.h, bp_half.h) on the host.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/backplane.h"
#include "kernels/common/bp_half.h"
#include "kernels/common/bp_qcodec.h"
#include "plugins/cpu/fp8.h"
#include "test/gpu_paths.h"

/* One tensor argument: rank 0 with no bytes is absent (NULL). strides all
 * 0: contiguous. init NULL: 0xAB filler. */
typedef struct arg {
  bp_dtype_t dt;
  int rank;
  int64_t shape[3], strides[3];
  uint64_t offset, bytes;
  const void *init;
} arg_t;

#define MAXA 5
typedef bp_status_t (*issue_fn)(bp_stream_t *s, const bp_tensor_t *const *t, const void *ctx);

static size_t esize(bp_dtype_t dt) {
  switch (dt) {
  case BP_F64:
  case BP_I64:
    return 8;
  case BP_F32:
  case BP_I32:
    return 4;
  case BP_F16:
  case BP_BF16:
    return 2;
  default:
    return 1;
  }
}

static bool claims(bp_device_t *d, bp_op_t op, bp_dtype_t dt) {
  bool yes = false;
  return bp_device_supports(d, op, dt, &yes) == BP_OK && yes;
}

/* Runs fn over args on one side; returns the output argument's buffer. */
static uint8_t *run_side(gp_side_t *sd, const arg_t *args, int n, int out, issue_fn fn,
                         const void *ctx) {
  bp_buffer_t *bufs[MAXA] = {0};
  bp_tensor_t ts[MAXA];
  const bp_tensor_t *tp[MAXA] = {0};
  for (int i = 0; i < n; i++) {
    const arg_t *a = &args[i];
    if (!a->bytes) continue;
    assert_int_equal(bp_buffer_alloc(sd->dev, a->bytes, &bufs[i]), BP_OK);
    uint8_t *fill = malloc(a->bytes);
    if (a->init)
      memcpy(fill, a->init, a->bytes);
    else
      memset(fill, 0xAB, a->bytes);
    assert_int_equal(bp_buffer_write(bufs[i], 0, fill, a->bytes), BP_OK);
    free(fill);
    bool dense = !a->strides[0] && !a->strides[1] && !a->strides[2];
    assert_int_equal(bp_tensor_init(bufs[i], a->offset, a->dt, a->rank, a->shape,
                                    dense ? NULL : a->strides, &ts[i]),
                     BP_OK);
    tp[i] = &ts[i];
  }
  bp_status_t st = fn(sd->s, tp, ctx);
  if (st != BP_OK) fail_msg("op failed: %s", bp_last_error());
  assert_int_equal(bp_stream_synchronize(sd->s), BP_OK);
  uint8_t *got = malloc(args[out].bytes);
  assert_int_equal(bp_buffer_read(bufs[out], 0, got, args[out].bytes), BP_OK);
  for (int i = 0; i < n; i++) bp_buffer_free(bufs[i]);
  return got;
}

static bool is_float(bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_F16 || dt == BP_BF16 || dt == BP_F64;
}

static double load(const uint8_t *p, bp_dtype_t dt, size_t i) {
  switch (dt) {
  case BP_F32: {
    float v;
    memcpy(&v, p + 4 * i, 4);
    return v;
  }
  case BP_F64: {
    double v;
    memcpy(&v, p + 8 * i, 8);
    return v;
  }
  case BP_F16: {
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return bp_f16_to_f32(h);
  }
  case BP_BF16: {
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return bp_bf16_to_f32(h);
  }
  default:
    return 0;
  }
}

/* The output bytes of both sides equal; in a float output any NaN matches
 * any NaN (drivers differ in the NaN they write). */
static void expect_same(const gp_pair_t *p, const char *what, bp_dtype_t dt, const uint8_t *got,
                        const uint8_t *want, uint64_t bytes) {
  const size_t es = esize(dt);
  for (uint64_t i = 0; i < bytes; i += es) {
    if (!memcmp(got + i, want + i, es)) continue;
    if (is_float(dt) && bytes % es == 0 && isnan(load(got, dt, i / es)) &&
        isnan(load(want, dt, i / es)))
      continue;
    uint64_t b = i;
    while (got[b] == want[b]) b++; /* the element's first differing byte */
    fail_msg("%s on %s: byte %llu differs from cpu-ref (0x%02x, want 0x%02x)", what, p->backend,
             (unsigned long long)b, got[b], want[b]);
  }
}

/* Runs one case on both sides and compares the output bit for bit. */
static void run_exact(gp_pair_t *p, const char *what, const arg_t *args, int n, int out,
                      issue_fn fn, const void *ctx) {
  uint8_t *got = run_side(&p->gpu, args, n, out, fn, ctx);
  uint8_t *want = run_side(&p->ref, args, n, out, fn, ctx);
  expect_same(p, what, args[out].dt, got, want, args[out].bytes);
  free(got), free(want);
}

static uint64_t rng(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 24;
}

/* n values in [lo, hi) stored as dt (f32 / f16 / bf16). */
static void *rand_float(bp_dtype_t dt, int64_t n, uint64_t seed, float lo, float hi) {
  uint8_t *v = malloc((size_t)n * esize(dt));
  for (int64_t i = 0; i < n; i++) {
    float f = lo + (hi - lo) * (float)((rng(&seed) & 0xFFFFFF) / 16777216.0);
    uint16_t h = dt == BP_F16 ? bp_f32_to_f16(f) : bp_f32_to_bf16(f);
    if (dt == BP_F32)
      memcpy(v + 4 * i, &f, 4);
    else
      memcpy(v + 2 * i, &h, 2);
  }
  return v;
}

static int8_t *rand_i8(int64_t n, uint64_t seed) {
  int8_t *v = malloc((size_t)n);
  for (int64_t i = 0; i < n; i++) v[i] = (int8_t)(rng(&seed) >> 16);
  return v;
}

static arg_t ten(bp_dtype_t dt, int rank, const int64_t *shape, const int64_t *strides,
                 uint64_t offset, uint64_t bytes, const void *init) {
  arg_t a = {.dt = dt, .rank = rank, .offset = offset, .bytes = bytes, .init = init};
  for (int i = 0; i < rank; i++) a.shape[i] = shape[i], a.strides[i] = strides ? strides[i] : 0;
  return a;
}

static const arg_t absent = {0};

/* ---- quantize / dequantize ------------------------------------------------------ */

static bp_status_t do_quantize(bp_stream_t *s, const bp_tensor_t *const *t, const void *c) {
  (void)c;
  return bp_quantize(s, t[0], t[1], t[2]);
}
static bp_status_t do_dequantize(bp_stream_t *s, const bp_tensor_t *const *t, const void *c) {
  (void)c;
  return bp_dequantize(s, t[0], t[1], t[2]);
}

static const bp_dtype_t acts[] = {BP_F32, BP_F16, BP_BF16};

/* Blocks: x [2, 5, 96] viewed transposed from [2, 96, 5] storage (f32,
 * f16, bf16), q with rows padded by a block and a one-block offset; then
 * dequantize those blocks into a transposed y. */
static void block_case(gp_pair_t *p, bp_dtype_t qt, bp_dtype_t ft) {
  const int64_t B = 2, R = 5, K = 96, bs = qt == BP_Q8_0 ? 34 : 18, row_blocks = K / 32 + 1;
  const size_t fe = esize(ft);
  void *x = rand_float(ft, B * R * K, 11 + qt + 3 * ft, -2, 2);
  ((uint8_t *)x)[fe * 7] = 0; /* a zero among them */
  int64_t shape[3] = {B, R, K}, xstr[3] = {R * K, 1, R},
          qstr[3] = {R * row_blocks * 32, row_blocks * 32, 1};
  uint64_t qbytes = (uint64_t)(1 + B * R * row_blocks) * bs;
  arg_t q[3] = {ten(ft, 3, shape, xstr, 0, B * R * K * fe, x), absent,
                ten(qt, 3, shape, qstr, bs, qbytes, NULL)};
  if (!claims(p->gpu.dev, BP_OP_QUANTIZE, qt))
    fail_msg("%s does not claim quantize %s", p->backend, bp_dtype_name(qt));
  char what[64];
  snprintf(what, sizeof what, "quantize %s from %s", bp_dtype_name(qt), bp_dtype_name(ft));
  run_exact(p, what, q, 3, 2, do_quantize, NULL);
  /* the blocks cpu-ref wrote, dequantized into y = x's transposed layout */
  uint8_t *blocks = run_side(&p->ref, q, 3, 2, do_quantize, NULL);
  arg_t d[3] = {ten(qt, 3, shape, qstr, bs, qbytes, blocks), absent,
                ten(ft, 3, shape, xstr, 0, B * R * K * fe, NULL)};
  snprintf(what, sizeof what, "dequantize %s to %s", bp_dtype_name(qt), bp_dtype_name(ft));
  run_exact(p, what, d, 3, 2, do_dequantize, NULL);
  free(x), free(blocks);
}

static void blocks_on(gp_pair_t *p) {
  for (size_t i = 0; i < 3; i++) block_case(p, BP_Q8_0, acts[i]), block_case(p, BP_Q4_0, acts[i]);
}

/* i8 with a per-row scale [R, 1] and a per-tensor one [1, 1]; x holds
 * ties, saturating values and NaN; x transposed. */
static void i8_case(gp_pair_t *p, bp_dtype_t ft, bool per_row) {
  enum { R = 3, C = 8 };
  float xv[R * C] = {0.5f,  1.5f,  2.5f,   -2.5f,   1000.0f,  -1000.0f,  NAN,   0.26f,
                     -0.5f, 3.5f,  127.4f, -128.6f, INFINITY, -INFINITY, 0.0f,  -0.0f,
                     7.0f,  9.25f, -9.75f, 63.5f,   64.5f,    -63.5f,    1e-3f, 200.0f};
  uint8_t x[R * C * 4];
  for (int i = 0; i < R * C; i++) { /* stored transposed: [C, R] */
    int r = i / C, c = i % C;
    uint16_t h = ft == BP_F16 ? bp_f32_to_f16(xv[i]) : bp_f32_to_bf16(xv[i]);
    if (ft == BP_F32)
      memcpy(x + 4 * (c * R + r), &xv[i], 4);
    else
      memcpy(x + 2 * (c * R + r), &h, 2);
  }
  float sc[R] = {1.0f, 0.5f, 3.0f};
  int8_t qv[R * C];
  for (int i = 0; i < R * C; i++) qv[i] = (int8_t)(i * 37 - 300);
  int64_t shape[2] = {R, C}, xstr[2] = {1, R}, sshape[2] = {per_row ? R : 1, 1};
  const size_t fe = esize(ft);
  arg_t q[3] = {ten(ft, 2, shape, xstr, 0, R * C * fe, x),
                ten(BP_F32, 2, sshape, NULL, 0, 4 * sshape[0], sc),
                ten(BP_I8, 2, shape, NULL, 0, R * C, NULL)};
  if (!claims(p->gpu.dev, BP_OP_QUANTIZE, BP_I8))
    fail_msg("%s does not claim quantize i8", p->backend);
  run_exact(p, "quantize i8", q, 3, 2, do_quantize, NULL);
  arg_t d[3] = {ten(BP_I8, 2, shape, NULL, 0, R * C, qv), q[1],
                ten(ft, 2, shape, xstr, 0, R * C * fe, NULL)};
  run_exact(p, "dequantize i8", d, 3, 2, do_dequantize, NULL);
}

static void i8_on(gp_pair_t *p) {
  for (size_t i = 0; i < 3; i++) i8_case(p, acts[i], true), i8_case(p, acts[i], false);
}

#include "test/test_quant_gpu_ops.inc"
