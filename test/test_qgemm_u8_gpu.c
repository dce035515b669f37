/*
 * test_qgemm_u8_gpu.c — u8 operands of the quantized ops on the GPU
 * backends (OpenCL, Vulkan, CUDA and ROCm; the last two over their CPU
 * shims here), against cpu-ref in the same context, bit for bit. Fallback
 * is off, so what a device claims runs on it; a device that claims i8 for
 * an op must claim u8 too (every GPU backend has the u8 kernels).
 *
 *  - qgemm: a and b each i8 or u8 (all four pairs; the same random bytes,
 *    so a kernel that reads one operand with the other signedness gives
 *    other sums), c i32, f32 with per-row / per-column scales, i8
 *    requantized with per-row and per-tensor scales; odd sizes over
 *    several tiles, transposed a and b, batches with b shared and per
 *    batch, the extremes (255, -128) along row 0 of a and column 0 of b,
 *    and a k of 140000 whose u8 x u8 sums wrap past 2^32.
 *  - quantize to u8 from f32, f16 and bf16 (ties, negatives, values past
 *    255, NaN, infinities; per-row and per-tensor scales; x transposed),
 *    and dequantize every byte value 0..255.
 *
 * Each backend runs every kernel path it has, chosen by its environment
 * knobs: OpenCL's integer dot product or widened products
 * (BACKPLANE_OPENCL_QUANT_DOT=0); Vulkan's 8-bit storage or words, dot
 * product or widening, texel panels or buffers; CUDA's tensor-core and
 * dp4a kernels (BACKPLANE_CUDA_QGEMM=dp4a).
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
#include "test/gpu_paths.h"

/* One tensor argument: rank 0 with no bytes is absent (NULL); strides all
 * 0: contiguous; init NULL: 0xAB filler. */
typedef struct arg {
  bp_dtype_t dt;
  int rank;
  int64_t shape[3], strides[3];
  uint64_t bytes;
  const void *init;
} arg_t;

enum { MAXA = 5 };
typedef bp_status_t (*issue_fn)(bp_stream_t *s, const bp_tensor_t *const *t, const void *ctx);

static size_t esize(bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_I32 ? 4 : dt == BP_F16 || dt == BP_BF16 ? 2 : 1;
}

static bool claims(bp_device_t *d, bp_op_t op, bp_dtype_t dt) {
  bool yes = false;
  return bp_device_supports(d, op, dt, &yes) == BP_OK && yes;
}

/* Fails when the device claims i8 for op but not u8; false (skip the
 * case) when it claims neither. */
static bool claims_u8(const gp_pair_t *p, bp_op_t op, const char *name) {
  bool i8 = claims(p->gpu.dev, op, BP_I8), u8 = claims(p->gpu.dev, op, BP_U8);
  if (i8 && !u8) fail_msg("%s claims %s for i8 but not u8", p->backend, name);
  return u8;
}

static arg_t ten(bp_dtype_t dt, int rank, const int64_t *shape, const int64_t *strides,
                 uint64_t bytes, const void *init) {
  arg_t a = {.dt = dt, .rank = rank, .bytes = bytes, .init = init};
  for (int i = 0; i < rank; i++) a.shape[i] = shape[i], a.strides[i] = strides ? strides[i] : 0;
  return a;
}

static const arg_t absent = {0};

/* Runs fn over args on one side; returns the output argument's bytes. */
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
    assert_int_equal(
        bp_tensor_init(bufs[i], 0, a->dt, a->rank, a->shape, dense ? NULL : a->strides, &ts[i]),
        BP_OK);
    tp[i] = &ts[i];
  }
  if (fn(sd->s, tp, ctx) != BP_OK) fail_msg("op failed: %s", bp_last_error());
  assert_int_equal(bp_stream_synchronize(sd->s), BP_OK);
  uint8_t *got = malloc(args[out].bytes);
  assert_int_equal(bp_buffer_read(bufs[out], 0, got, args[out].bytes), BP_OK);
  for (int i = 0; i < n; i++) bp_buffer_free(bufs[i]);
  return got;
}

/* Runs one case on both sides; the output buffers' bytes must be equal
 * (the outputs here are integers, or f32 products without NaN). */
static void run_exact(gp_pair_t *p, const char *what, const arg_t *args, int n, int out,
                      issue_fn fn, const void *ctx) {
  uint8_t *got = run_side(&p->gpu, args, n, out, fn, ctx);
  uint8_t *want = run_side(&p->ref, args, n, out, fn, ctx);
  for (uint64_t b = 0; b < args[out].bytes; b++)
    if (got[b] != want[b])
      fail_msg("%s on %s (%s): byte %llu is 0x%02x, cpu-ref 0x%02x", what, p->backend, p->path,
               (unsigned long long)b, got[b], want[b]);
  free(got), free(want);
}

static uint8_t *rand_bytes(int64_t n, uint64_t seed) {
  uint8_t *v = malloc((size_t)n);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] = (uint8_t)(seed >> 40);
  }
  return v;
}

/* ---- qgemm ------------------------------------------------------------------------ */

typedef struct qgemm_ctx {
  float out_scale;
} qgemm_ctx_t;

static bp_status_t do_qgemm(bp_stream_t *s, const bp_tensor_t *const *t, const void *c) {
  return bp_qgemm(s, t[0], t[1], t[2], t[3], ((const qgemm_ctx_t *)c)->out_scale, t[4]);
}

typedef struct qshape {
  int64_t B, M, N, K;
  bool at, bt, b3; /* a stored [K, M], b stored [N, K], b rank 3 per batch */
} qshape_t;

/* c = a . b for one shape and one dtype pair, with each c dtype. */
static void qgemm_case(gp_pair_t *p, const qshape_t *q, bp_dtype_t adt, bp_dtype_t bdt) {
  const int64_t B = q->B, M = q->M, N = q->N, K = q->K, nb = q->b3 ? B : 1;
  uint8_t *a = rand_bytes(B * M * K, 100 + M), *b = rand_bytes(nb * K * N, 200 + N);
  /* row 0 of a and column 0 of b at their dtype's extreme */
  for (int64_t l = 0; l < K; l++) {
    a[q->at ? l * M : l] = adt == BP_U8 ? 255 : 0x80;
    b[q->bt ? l : l * N] = bdt == BP_U8 ? 255 : 0x80;
  }
  int64_t ash[3] = {B, M, K}, astr[3] = {M * K, q->at ? 1 : K, q->at ? M : 1};
  int64_t bsh[3] = {nb, K, N}, bstr[3] = {K * N, q->bt ? 1 : N, q->bt ? K : 1};
  int64_t csh[3] = {B, M, N};
  float *sa = malloc(4 * M), *sb = malloc(4 * N), one = 0.0375f;
  for (int64_t i = 0; i < M; i++) sa[i] = 0.001f * (float)(i + 1);
  for (int64_t j = 0; j < N; j++) sb[j] = 0.5f + 0.25f * (float)(j % 5);
  const int ar = B > 1 ? 3 : 2, br = q->b3 ? 3 : 2;
  arg_t A = ten(adt, ar, ash + (3 - ar), astr + (3 - ar), B * M * K, a);
  arg_t Bm = ten(bdt, br, bsh + (3 - br), bstr + (3 - br), nb * K * N, b);
  int64_t msh = M, nsh = N, one_sh = 1;
  arg_t SA = ten(BP_F32, 1, &msh, NULL, 4 * M, sa), SB = ten(BP_F32, 1, &nsh, NULL, 4 * N, sb);
  arg_t S1 = ten(BP_F32, 1, &one_sh, NULL, 4, &one);
  static const bp_dtype_t cdt[3] = {BP_I32, BP_F32, BP_I8};
  for (int v = 0; v < 4; v++) {
    bp_dtype_t ct = cdt[v < 3 ? v : 2];
    arg_t C = ten(ct, ar, csh + (3 - ar), NULL, B * M * N * esize(ct), NULL);
    arg_t args[5] = {A, Bm, v == 0 ? absent : v == 3 ? S1 : SA, v == 0 ? absent : SB, C};
    qgemm_ctx_t ctx = {v == 3 ? 0.5f : 40.0f};
    char what[128];
    snprintf(what, sizeof what, "qgemm %s x %s -> %s %lldx(%lldx%lldx%lld)%s%s%s%s",
             bp_dtype_name(adt), bp_dtype_name(bdt), bp_dtype_name(ct), (long long)B, (long long)M,
             (long long)N, (long long)K, q->at ? " a^T" : "", q->bt ? " b^T" : "",
             q->b3 ? " b batched" : "", v == 3 ? " per-tensor" : "");
    run_exact(p, what, args, 5, 4, do_qgemm, &ctx);
  }
  free(a), free(b), free(sa), free(sb);
}

static void qgemm_on(gp_pair_t *p) {
  if (!claims_u8(p, BP_OP_QGEMM, "qgemm")) return;
  static const qshape_t shapes[] = {
      {1, 5, 9, 67, false, true, false},
      {1, 70, 130, 37, true, false, false},  /* several tiles, k % 4 != 0 */
      {2, 37, 50, 130, false, false, false}, /* b shared by the batch */
      {3, 65, 17, 33, true, true, true},     /* b per batch */
      {1, 1, 1, 1, false, false, false},
  };
  static const bp_dtype_t pairs[4][2] = {
      {BP_U8, BP_I8}, {BP_I8, BP_U8}, {BP_U8, BP_U8}, {BP_I8, BP_I8}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int d = 0; d < 4; d++) qgemm_case(p, &shapes[s], pairs[d][0], pairs[d][1]);
  /* 255 * 255 * 140000 is past 2^32: the u8 x u8 sums of row 0 by column
   * 0 wrap (and u8 x i8 ones pass 2^31) */
  const qshape_t wrap = {1, 2, 3, 140000, false, true, false};
  for (int d = 0; d < 3; d++) qgemm_case(p, &wrap, pairs[d][0], pairs[d][1]);
}

/* ---- quantize / dequantize --------------------------------------------------------- */

static bp_status_t do_quantize(bp_stream_t *s, const bp_tensor_t *const *t, const void *c) {
  (void)c;
  return bp_quantize(s, t[0], t[1], t[2]);
}
static bp_status_t do_dequantize(bp_stream_t *s, const bp_tensor_t *const *t, const void *c) {
  (void)c;
  return bp_dequantize(s, t[0], t[1], t[2]);
}

/* x [R, C] of ft stored transposed; scales per row or per tensor. */
static void u8_case(gp_pair_t *p, bp_dtype_t ft, bool per_row) {
  enum { R = 3, C = 12 };
  /* [R, C] row-major */
  static const float xv[R * C] = {
      0.5f,   1.5f,   2.5f,   -2.5f,  1000.0f, -1000.0f, NAN,     0.26f,    254.5f,
      255.5f, 253.5f, 127.5f, -0.5f,  3.5f,    127.4f,   -128.6f, INFINITY, -INFINITY,
      0.0f,   -0.0f,  128.5f, 300.0f, -0.49f,  64.5f,    7.0f,    9.25f,    -9.75f,
      63.5f,  64.5f,  -63.5f, 1e-3f,  200.0f,  85.25f,   85.5f,   86.5f,    -1.0f};
  uint8_t x[R * C * 4];
  for (int i = 0; i < R * C; i++) {
    int r = i / C, c = i % C;
    uint16_t h = ft == BP_F16 ? bp_f32_to_f16(xv[i]) : bp_f32_to_bf16(xv[i]);
    if (ft == BP_F32)
      memcpy(x + 4 * (c * R + r), &xv[i], 4);
    else
      memcpy(x + 2 * (c * R + r), &h, 2);
  }
  float sc[R] = {1.0f, 0.5f, 3.0f};
  int64_t shape[2] = {R, C}, xstr[2] = {1, R}, sshape[2] = {per_row ? R : 1, 1};
  const size_t fe = esize(ft);
  arg_t q[3] = {ten(ft, 2, shape, xstr, R * C * fe, x),
                ten(BP_F32, 2, sshape, NULL, 4 * (uint64_t)sshape[0], sc),
                ten(BP_U8, 2, shape, NULL, R * C, NULL)};
  char what[64];
  snprintf(what, sizeof what, "quantize u8 from %s%s", bp_dtype_name(ft),
           per_row ? " per row" : "");
  if (claims_u8(p, BP_OP_QUANTIZE, "quantize")) run_exact(p, what, q, 3, 2, do_quantize, NULL);
  /* every byte value, dequantized into a transposed y */
  enum { DR = 4, DC = 64 };
  uint8_t qv[DR * DC];
  for (int i = 0; i < DR * DC; i++) qv[i] = (uint8_t)(i * 7 + 3);
  float dsc[DR] = {1.0f, 0.5f, 3.0f, 0.0078125f};
  int64_t dshape[2] = {DR, DC}, ystr[2] = {1, DR}, dsshape[2] = {per_row ? DR : 1, 1};
  arg_t d[3] = {ten(BP_U8, 2, dshape, NULL, DR * DC, qv),
                ten(BP_F32, 2, dsshape, NULL, 4 * (uint64_t)dsshape[0], dsc),
                ten(ft, 2, dshape, ystr, DR * DC * fe, NULL)};
  snprintf(what, sizeof what, "dequantize u8 to %s%s", bp_dtype_name(ft),
           per_row ? " per row" : "");
  if (claims_u8(p, BP_OP_DEQUANTIZE, "dequantize"))
    run_exact(p, what, d, 3, 2, do_dequantize, NULL);
}

static void quant_on(gp_pair_t *p) {
  static const bp_dtype_t fts[] = {BP_F32, BP_F16, BP_BF16};
  for (int i = 0; i < 3; i++) u8_case(p, fts[i], true), u8_case(p, fts[i], false);
}

/* ---- the devices and their kernel paths --------------------------------------------- */

static const gp_path_t ocl_paths[] = {{"default", {NULL}},
                                      {"widened", {"BACKPLANE_OPENCL_QUANT_DOT=0", NULL}}};
static const gp_path_t vk_paths[] = {
    {"default", {NULL}},
    {"widening", {"BACKPLANE_VK_QUANT_DOT=0", NULL}},
    {"buffers", {"BACKPLANE_VK_GEMM_TEXEL=0", NULL}},
    {"widening buffers", {"BACKPLANE_VK_QUANT_DOT=0", "BACKPLANE_VK_GEMM_TEXEL=0", NULL}},
    {"words", {"BACKPLANE_VK_QUANT_BYTES=words", NULL}},
    {"words widening buffers",
     {"BACKPLANE_VK_QUANT_BYTES=words", "BACKPLANE_VK_QUANT_DOT=0", "BACKPLANE_VK_GEMM_TEXEL=0",
      NULL}},
};
static const gp_path_t cuda_paths[] = {{"default", {NULL}},
                                       {"dp4a", {"BACKPLANE_CUDA_QGEMM=dp4a", NULL}}};
static const gp_backend_t backends[] = {
    GP_BACKEND("opencl", ocl_paths), GP_BACKEND("vulkan", vk_paths), GP_BACKEND("cuda", cuda_paths),
    GP_BACKEND("rocm", gp_default_path)};
static const gp_plan_t plan = {backends, sizeof backends / sizeof backends[0], gp_quant_knobs};

static void test_qgemm_u8(void **st) {
  (void)st, gp_on_devices(&plan, qgemm_on);
}
static void test_quantize_u8(void **st) {
  (void)st, gp_on_devices(&plan, quant_on);
}

int main(void) {
  gp_use_shims();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_qgemm_u8),
      cmocka_unit_test(test_quantize_u8),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
