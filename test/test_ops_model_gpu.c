/*
 * test_ops_model_gpu.c — the model ops of ABI 1.5 (gather, arange, binary
 * with a scalar, GLU, RoPE, tanh GELU) on the GPU backends: OpenCL (PoCL),
 * Vulkan (lavapipe), and CUDA and ROCm over their CPU shims. Fallback is
 * off, so every op runs on the device under test.
 *
 * One sequence of every op per float dtype the device claims (inputs cast
 * on the device from f32, results cast back), run eagerly, then captured
 * into a graph and launched twice with every output overwritten by a
 * sentinel first: an op the graph did not record, or recorded with another
 * op's arguments (several commands share one kernel here: four GLU kinds,
 * two RoPEs), shows as a wrong value. The graph must be native where the
 * backend records natively (PoCL, lavapipe, the CUDA and ROCm shims).
 * Then the integer paths: arange's cast rules and gather of i32 rows along
 * axis 1. Everything is checked against the host in double.
 */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"
#include "kernels/common/bp_half.h"
#include "test/skip.h"

#define SENTINEL (-7.0f)

/* ---- sizes of the sequence ----------------------------------------------- */
enum { V = 7, D = 6, IR = 2, IC = 3, GN = IR * IC * D }; /* gather */
enum { AN = 24 };                                        /* arange */
enum { PR = 6, PC = 12, GLN = PR * PC / 2 };             /* glu: packed [PR, PC] */
enum { RB = 2, RS = 3, RH = 2, RD = 8, RDIM = 6, RN = RB * RS * RH * RD }; /* rope */

static const int64_t gather_idx[IR * IC] = {3, -1, 0, 6, 7, 2}; /* -1 and 7: zeros */
static const int32_t rope_pos[RB * RS] = {0, 1, 2, 40, 1000, 5};

/* Host inputs and device buffers of one dtype's run. Every tensor the ops
 * touch lives in dt; f32 twins carry the inputs in and the results out. */
typedef struct seq {
  bp_device_t *dev;
  bp_stream_t *s;
  bp_dtype_t dt;
  float table[V * D], packed[PR * PC], rope_x[RN], gelu_x[AN];
  /* f32 buffers: inputs, then results */
  bp_buffer_t *in_table, *in_packed, *in_rope, *in_gelu;
  bp_buffer_t *out_arange, *out_gather, *out_scalar, *out_glu[4], *out_rope[2], *out_gelu;
  /* dt buffers */
  bp_buffer_t *table_t, *packed_t, *rope_t, *gelu_t, *idx, *pos;
  bp_buffer_t *arange_t, *gather_t, *scalar_t, *glu_t[4], *rope2_t, *gelu_y;
} seq_t;

static size_t dsize(bp_dtype_t dt) {
  return dt == BP_F64 || dt == BP_I64 ? 8 : dt == BP_F16 || dt == BP_BF16 ? 2 : dt == BP_U8 ? 1 : 4;
}

static bp_buffer_t *alloc(bp_device_t *d, size_t bytes) {
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(d, bytes, &b), BP_OK);
  return b;
}

static bp_tensor_t tensor(bp_buffer_t *b, bp_dtype_t dt, int rank, const int64_t *shape,
                          const int64_t *strides, uint64_t offset) {
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, offset, dt, rank, shape, strides, &t), BP_OK);
  return t;
}

static bp_tensor_t flat(bp_buffer_t *b, bp_dtype_t dt, int64_t n) {
  return tensor(b, dt, 1, &n, NULL, 0);
}

/* v rounded to dt, as the device holds it. */
static double in_dt(bp_dtype_t dt, double v) {
  if (dt == BP_F16) return bp_f16_to_f64(bp_f64_to_f16(v));
  if (dt == BP_BF16) return bp_bf16_to_f64(bp_f64_to_bf16(v));
  if (dt == BP_F32) return (float)v;
  return v;
}

static double tolerance(bp_dtype_t dt) {
  /* every result comes back through an f32 cast */
  return dt == BP_BF16 ? 1.6e-2 : dt == BP_F16 ? 2e-3 : 2e-6;
}

static void fill_values(float *v, int n, unsigned seed) {
  for (int i = 0; i < n; i++) v[i] = (float)((i * 7 + seed * 13) % 31) / 8.0f - 1.9f;
}

static void seq_setup(seq_t *q, bp_device_t *dev, bp_dtype_t dt) {
  memset(q, 0, sizeof *q);
  q->dev = dev;
  q->dt = dt;
  assert_int_equal(bp_stream_create(dev, &q->s), BP_OK);
  fill_values(q->table, V * D, 1), fill_values(q->packed, PR * PC, 2);
  fill_values(q->rope_x, RN, 3), fill_values(q->gelu_x, AN, 4);
  /* tanh GELU is NaN at -inf (-inf times 0), +inf at +inf, -0 far left */
  q->gelu_x[AN - 1] = -INFINITY, q->gelu_x[AN - 2] = INFINITY, q->gelu_x[AN - 3] = -30.0f;
  size_t es = dsize(dt);
  q->in_table = alloc(dev, sizeof q->table), q->in_packed = alloc(dev, sizeof q->packed);
  q->in_rope = alloc(dev, sizeof q->rope_x), q->in_gelu = alloc(dev, sizeof q->gelu_x);
  assert_int_equal(bp_buffer_write(q->in_table, 0, q->table, sizeof q->table), BP_OK);
  assert_int_equal(bp_buffer_write(q->in_packed, 0, q->packed, sizeof q->packed), BP_OK);
  assert_int_equal(bp_buffer_write(q->in_rope, 0, q->rope_x, sizeof q->rope_x), BP_OK);
  assert_int_equal(bp_buffer_write(q->in_gelu, 0, q->gelu_x, sizeof q->gelu_x), BP_OK);
  q->out_arange = alloc(dev, AN * 4), q->out_gather = alloc(dev, GN * 4);
  q->out_scalar = alloc(dev, GN * 4), q->out_gelu = alloc(dev, AN * 4);
  for (int k = 0; k < 4; k++)
    q->out_glu[k] = alloc(dev, GLN * 4), q->glu_t[k] = alloc(dev, GLN * es);
  for (int k = 0; k < 2; k++) q->out_rope[k] = alloc(dev, RN * 4);
  q->table_t = alloc(dev, V * D * es), q->packed_t = alloc(dev, PR * PC * es);
  q->rope_t = alloc(dev, RN * es), q->gelu_t = alloc(dev, AN * es), q->gelu_y = alloc(dev, AN * es);
  q->arange_t = alloc(dev, AN * es), q->gather_t = alloc(dev, GN * es);
  q->scalar_t = alloc(dev, GN * es), q->rope2_t = alloc(dev, RN * es);
  q->idx = alloc(dev, sizeof gather_idx), q->pos = alloc(dev, sizeof rope_pos);
  assert_int_equal(bp_buffer_write(q->idx, 0, gather_idx, sizeof gather_idx), BP_OK);
  assert_int_equal(bp_buffer_write(q->pos, 0, rope_pos, sizeof rope_pos), BP_OK);
}

static void cast(bp_stream_t *s, bp_buffer_t *from, bp_dtype_t fd, bp_buffer_t *to, bp_dtype_t td,
                 int64_t n) {
  bp_tensor_t x = flat(from, fd, n), y = flat(to, td, n);
  assert_int_equal(bp_cast(s, &x, &y), BP_OK);
}

/* The whole sequence on q->s (eager or captured). */
static void seq_issue(seq_t *q) {
  bp_stream_t *s = q->s;
  const bp_dtype_t dt = q->dt;
  const size_t es = dsize(dt);
  cast(s, q->in_table, BP_F32, q->table_t, dt, V * D);
  cast(s, q->in_packed, BP_F32, q->packed_t, dt, PR * PC);
  cast(s, q->in_rope, BP_F32, q->rope_t, dt, RN);
  cast(s, q->in_gelu, BP_F32, q->gelu_t, dt, AN);

  int64_t ash[2] = {4, 6};
  bp_tensor_t ar = tensor(q->arange_t, dt, 2, ash, NULL, 0);
  assert_int_equal(bp_arange(s, -3.0, 0.25, &ar), BP_OK);

  int64_t tsh[2] = {V, D}, ish[2] = {IR, IC}, gsh[3] = {IR, IC, D};
  bp_tensor_t tb = tensor(q->table_t, dt, 2, tsh, NULL, 0);
  bp_tensor_t ix = tensor(q->idx, BP_I64, 2, ish, NULL, 0);
  bp_tensor_t gy = tensor(q->gather_t, dt, 3, gsh, NULL, 0);
  assert_int_equal(bp_gather(s, &tb, &ix, 0, &gy), BP_OK);
  bp_tensor_t sy = tensor(q->scalar_t, dt, 3, gsh, NULL, 0);
  assert_int_equal(bp_binary_scalar_first(s, BP_BINARY_SUB, 1.5, &gy, &sy), BP_OK);

  /* gate and up: the two halves of each packed row (strided views) */
  int64_t hsh[2] = {PR, PC / 2}, hst[2] = {PC, 1};
  bp_tensor_t gate = tensor(q->packed_t, dt, 2, hsh, hst, 0);
  bp_tensor_t up = tensor(q->packed_t, dt, 2, hsh, hst, (PC / 2) * es);
  for (int k = 0; k < 4; k++) {
    bp_tensor_t y = tensor(q->glu_t[k], dt, 2, hsh, NULL, 0);
    assert_int_equal(bp_glu(s, (bp_glu_kind_t)k, &gate, &up, &y), BP_OK);
  }

  /* RoPE: half-split in place with positions, interleaved out of place
   * from pos_offset; the second reads the first's result. */
  int64_t rsh[4] = {RB, RS, RH, RD}, psh[2] = {RB, RS};
  bp_tensor_t rx = tensor(q->rope_t, dt, 4, rsh, NULL, 0);
  bp_tensor_t pos = tensor(q->pos, BP_I32, 2, psh, NULL, 0);
  assert_int_equal(bp_rope(s, BP_ROPE_HALF, RDIM, 10000.0, 0, &pos, &rx, &rx), BP_OK);
  bp_tensor_t ry = tensor(q->rope2_t, dt, 4, rsh, NULL, 0);
  assert_int_equal(bp_rope(s, BP_ROPE_INTERLEAVED, RDIM, 500.0, 17, NULL, &rx, &ry), BP_OK);

  bp_tensor_t gx = flat(q->gelu_t, dt, AN), gyy = flat(q->gelu_y, dt, AN);
  assert_int_equal(bp_unary(s, BP_UNARY_GELU_TANH, &gx, &gyy), BP_OK);

  cast(s, q->arange_t, dt, q->out_arange, BP_F32, AN);
  cast(s, q->gather_t, dt, q->out_gather, BP_F32, GN);
  cast(s, q->scalar_t, dt, q->out_scalar, BP_F32, GN);
  for (int k = 0; k < 4; k++) cast(s, q->glu_t[k], dt, q->out_glu[k], BP_F32, GLN);
  cast(s, q->rope_t, dt, q->out_rope[0], BP_F32, RN);
  cast(s, q->rope2_t, dt, q->out_rope[1], BP_F32, RN);
  cast(s, q->gelu_y, dt, q->out_gelu, BP_F32, AN);
}

/* ---- the host's answers, in double ---------------------------------------- */

static double gelu_tanh(double x) {
  return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

static double glu_ref(int kind, double g, double u) {
  double a = kind == 0   ? g / (1 + exp(-g))
             : kind == 1 ? 0.5 * g * (1 + erf(g / sqrt(2.0)))
             : kind == 2 ? gelu_tanh(g)
                         : (g > 0 ? g : 0);
  return a * u;
}

/* x, y [RB, RS, RH, RD] row-major; pos per (b, s). */
static void rope_ref(bool interleaved, double theta, const double *pos, const double *x,
                     double *y) {
  for (int r = 0; r < RB * RS * RH; r++) {
    const double *xr = x + r * RD;
    double *yr = y + r * RD;
    double p = pos[r / RH];
    for (int d = RDIM; d < RD; d++) yr[d] = xr[d];
    for (int j = 0; j < RDIM / 2; j++) {
      double a = p * pow(theta, -2.0 * j / RDIM), c = cos(a), sn = sin(a);
      int d1 = interleaved ? 2 * j : j, d2 = interleaved ? 2 * j + 1 : j + RDIM / 2;
      yr[d1] = xr[d1] * c - xr[d2] * sn;
      yr[d2] = xr[d1] * sn + xr[d2] * c;
    }
  }
}

static void expect_close(const char *what, const char *dev, bp_dtype_t dt, const float *got,
                         const double *want, int n) {
  double tol = tolerance(dt);
  for (int i = 0; i < n; i++) {
    double w = want[i], err = fabs(got[i] - w) / fmax(1.0, fabs(w));
    if (isnan(w) || isinf(w)) err = (isnan(w) ? isnan(got[i]) : got[i] == w) ? 0 : INFINITY;
    if (!(err <= tol))
      fail_msg("%s on %s (%s): [%d] is %.9g, the host says %.9g", what, dev, bp_dtype_name(dt), i,
               got[i], w);
  }
}

static void read_f32(bp_buffer_t *b, float *out, int n) {
  assert_int_equal(bp_buffer_read(b, 0, out, (size_t)n * sizeof *out), BP_OK);
}

static void seq_check(seq_t *q, const char *dev) {
  const bp_dtype_t dt = q->dt;
  assert_int_equal(bp_stream_synchronize(q->s), BP_OK);
  float got[RN];
  double want[RN];
  for (int i = 0; i < AN; i++) want[i] = in_dt(dt, -3.0 + 0.25 * i);
  read_f32(q->out_arange, got, AN);
  expect_close("arange", dev, dt, got, want, AN);

  double gat[GN];
  for (int i = 0; i < IR * IC; i++)
    for (int d = 0; d < D; d++) {
      int64_t k = gather_idx[i];
      gat[i * D + d] = k >= 0 && k < V ? in_dt(dt, q->table[k * D + d]) : 0;
    }
  read_f32(q->out_gather, got, GN);
  expect_close("gather", dev, dt, got, gat, GN); /* exact moves: within rounding */
  for (int i = 0; i < GN; i++) want[i] = in_dt(dt, 1.5) - gat[i];
  read_f32(q->out_scalar, got, GN);
  expect_close("binary_scalar_first(sub)", dev, dt, got, want, GN);

  for (int k = 0; k < 4; k++) {
    for (int r = 0; r < PR; r++)
      for (int c = 0; c < PC / 2; c++)
        want[r * (PC / 2) + c] =
            glu_ref(k, in_dt(dt, q->packed[r * PC + c]), in_dt(dt, q->packed[r * PC + PC / 2 + c]));
    read_f32(q->out_glu[k], got, GLN);
    char what[32];
    snprintf(what, sizeof what, "glu kind %d", k);
    expect_close(what, dev, dt, got, want, GLN);
  }

  double x[RN], y1[RN], y2[RN], pos1[RB * RS], pos2[RB * RS];
  for (int i = 0; i < RN; i++) x[i] = in_dt(dt, q->rope_x[i]);
  for (int i = 0; i < RB * RS; i++) pos1[i] = rope_pos[i], pos2[i] = 17 + i % RS;
  rope_ref(false, 10000.0, pos1, x, y1);
  for (int i = 0; i < RN; i++) y1[i] = in_dt(dt, y1[i]); /* the device stores it in dt */
  rope_ref(true, 500.0, pos2, y1, y2);
  read_f32(q->out_rope[0], got, RN);
  expect_close("rope half-split, in place", dev, dt, got, y1, RN);
  read_f32(q->out_rope[1], got, RN);
  expect_close("rope interleaved", dev, dt, got, y2, RN);

  for (int i = 0; i < AN; i++) want[i] = gelu_tanh(in_dt(dt, q->gelu_x[i]));
  read_f32(q->out_gelu, got, AN);
  expect_close("unary gelu_tanh", dev, dt, got, want, AN);
}

/* Every f32 result overwritten, so a result the graph did not write shows. */
static void seq_sentinel(seq_t *q) {
  bp_buffer_t *outs[] = {q->out_arange,  q->out_gather, q->out_scalar, q->out_glu[0],
                         q->out_glu[1],  q->out_glu[2], q->out_glu[3], q->out_rope[0],
                         q->out_rope[1], q->out_gelu};
  int64_t sizes[] = {AN, GN, GN, GLN, GLN, GLN, GLN, RN, RN, AN};
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
    bp_tensor_t t = flat(outs[i], BP_F32, sizes[i]);
    assert_int_equal(bp_fill(q->s, &t, SENTINEL), BP_OK);
  }
}

/* ---- devices ------------------------------------------------------------- */

static bool gpu_backend(const char *b) {
  return !strcmp(b, "opencl") || !strcmp(b, "vulkan") || !strcmp(b, "cuda") || !strcmp(b, "rocm");
}

/* Backends whose graphs must be native here: PoCL's command buffers,
 * lavapipe's reused command buffers, CUDA / HIP graphs on the shims. */
static bool expect_native(const bp_device_entry_t *e) {
  return !strcmp(e->backend, "cuda") || !strcmp(e->backend, "rocm") ||
         (!strcmp(e->backend, "opencl") && strstr(e->info.name, "pthread")) ||
         (!strcmp(e->backend, "vulkan") && strstr(e->info.name, "llvmpipe"));
}

typedef void (*device_fn)(bp_device_t *dev, const bp_device_entry_t *e);

static bool claims(bp_device_t *d, bp_op_t op, bp_dtype_t dt) {
  bool yes = false;
  return bp_device_supports(d, op, dt, &yes) == BP_OK && yes;
}

/* Runs fn on every GPU-backend device with fallback off; none is a skip
 * (or a failure where BP_REQUIRE_DEVICES names the backend). */
static void on_gpu_devices(device_fn fn) {
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  uint32_t count = 0, ran = 0;
  bool seen_opencl = false, seen_vulkan = false;
  assert_int_equal(bp_context_device_count(ctx, &count), BP_OK);
  for (uint32_t r = 0; r < count; r++) {
    bp_device_entry_t e;
    assert_int_equal(bp_context_device_entry(ctx, r, &e), BP_OK);
    if (!gpu_backend(e.backend)) continue;
    seen_opencl |= !strcmp(e.backend, "opencl");
    seen_vulkan |= !strcmp(e.backend, "vulkan");
    char sel[16];
    snprintf(sel, sizeof sel, "%u", e.rank);
    bp_device_config_t cfg = {.struct_size = sizeof cfg, .no_fallback = true};
    bp_device_t *dev;
    assert_int_equal(bp_device_open(ctx, sel, &cfg, &dev), BP_OK);
    fn(dev, &e);
    bp_device_close(dev);
    ran++;
  }
  bp_context_destroy(ctx);
  if (!seen_opencl && test_device_required("opencl")) fail_msg("no opencl device, though required");
  if (!seen_vulkan && test_device_required("vulkan")) fail_msg("no vulkan device, though required");
  if (!ran) TEST_SKIP_CASE("no OpenCL, Vulkan, CUDA or ROCm device");
}

static bool runs_sequence(bp_device_t *d, bp_dtype_t dt) {
  static const bp_op_t ops[] = {BP_OP_ARANGE, BP_OP_GATHER, BP_OP_BINARY_SCALAR,
                                BP_OP_GLU,    BP_OP_ROPE,   BP_OP_UNARY};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!claims(d, ops[i], dt)) return false;
  return claims(d, BP_OP_CAST, dt);
}

static void sequence_on(bp_device_t *dev, const bp_device_entry_t *e) {
  static const bp_dtype_t dts[] = {BP_F32, BP_F16, BP_BF16, BP_F64};
  int ran = 0;
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    if (!runs_sequence(dev, dts[i])) continue;
    seq_t q;
    seq_setup(&q, dev, dts[i]);
    seq_issue(&q);
    seq_check(&q, e->info.name);
    assert_int_equal(bp_stream_begin_capture(q.s), BP_OK);
    seq_issue(&q);
    bp_graph_t *g;
    assert_int_equal(bp_stream_end_capture(q.s, &g), BP_OK);
    for (int launch = 0; launch < 2; launch++) {
      seq_sentinel(&q);
      assert_int_equal(bp_graph_launch(g, q.s), BP_OK);
      seq_check(&q, e->info.name);
    }
    bool native = bp_graph_is_native(g);
    printf("  %-7s %-44s %-5s eager and %s: ok\n", e->backend, e->info.name, bp_dtype_name(dts[i]),
           native ? "native graph" : "replayed graph");
    if (expect_native(e)) assert_true(native);
    bp_graph_destroy(g);
    ran++;
  }
  if (!ran) fail_msg("%s (%s) runs the sequence in no float dtype", e->info.name, e->backend);
}

static void test_sequence_eager_and_captured(void **state) {
  (void)state;
  on_gpu_devices(sequence_on);
}

/* ---- integer paths ------------------------------------------------------- */

/* arange into i32 (halves to even), u8 (saturating) and i64; then i32 rows
 * gathered along axis 1 with i32 indices (one out of range). */
static void integers_on(bp_device_t *dev, const bp_device_entry_t *e) {
  bp_stream_t *s;
  assert_int_equal(bp_stream_create(dev, &s), BP_OK);
  const char *name = e->info.name;
  int64_t n4 = 4;
  if (claims(dev, BP_OP_ARANGE, BP_I32) && claims(dev, BP_OP_ARANGE, BP_U8) &&
      claims(dev, BP_OP_ARANGE, BP_I64)) {
    bp_buffer_t *bi = alloc(dev, 16), *bu = alloc(dev, 4), *bl = alloc(dev, 32);
    bp_tensor_t ti = flat(bi, BP_I32, n4), tu = flat(bu, BP_U8, n4), tl = flat(bl, BP_I64, n4);
    assert_int_equal(bp_arange(s, 0.5, 1.0, &ti), BP_OK);
    assert_int_equal(bp_arange(s, 250.0, 3.0, &tu), BP_OK);
    assert_int_equal(bp_arange(s, 4e15, -1.5e15, &tl), BP_OK);
    assert_int_equal(bp_stream_synchronize(s), BP_OK);
    int32_t gi[4], wi[4] = {0, 2, 2, 4};
    uint8_t gu[4], wu[4] = {250, 253, 255, 255};
    int64_t gl[4], wl[4] = {4000000000000000, 2500000000000000, 1000000000000000, -500000000000000};
    assert_int_equal(bp_buffer_read(bi, 0, gi, sizeof gi), BP_OK);
    assert_int_equal(bp_buffer_read(bu, 0, gu, sizeof gu), BP_OK);
    assert_int_equal(bp_buffer_read(bl, 0, gl, sizeof gl), BP_OK);
    for (int i = 0; i < 4; i++) {
      if (gi[i] != wi[i]) fail_msg("arange i32 on %s: [%d] is %d, want %d", name, i, gi[i], wi[i]);
      if (gu[i] != wu[i]) fail_msg("arange u8 on %s: [%d] is %d, want %d", name, i, gu[i], wu[i]);
      if (gl[i] != wl[i])
        fail_msg("arange i64 on %s: [%d] is %lld, want %lld", name, i, (long long)gl[i],
                 (long long)wl[i]);
    }
  } else {
    fail_msg("%s (%s) does not claim arange for i32, u8 and i64", name, e->backend);
  }
  if (!claims(dev, BP_OP_GATHER, BP_I32))
    fail_msg("%s (%s) does not claim gather for i32", name, e->backend);
  enum { TR = 3, TC = 5, NI = 4 };
  int32_t table[TR * TC], idx[NI] = {4, 0, 5, 2}, got[TR * NI];
  for (int i = 0; i < TR * TC; i++) table[i] = 100 + i;
  bp_buffer_t *bt = alloc(dev, sizeof table), *bx = alloc(dev, sizeof idx),
              *by = alloc(dev, sizeof got);
  assert_int_equal(bp_buffer_write(bt, 0, table, sizeof table), BP_OK);
  assert_int_equal(bp_buffer_write(bx, 0, idx, sizeof idx), BP_OK);
  int64_t tsh[2] = {TR, TC}, ysh[2] = {TR, NI}, nx = NI;
  bp_tensor_t tt = tensor(bt, BP_I32, 2, tsh, NULL, 0), tx = tensor(bx, BP_I32, 1, &nx, NULL, 0);
  bp_tensor_t ty = tensor(by, BP_I32, 2, ysh, NULL, 0);
  assert_int_equal(bp_gather(s, &tt, &tx, 1, &ty), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  assert_int_equal(bp_buffer_read(by, 0, got, sizeof got), BP_OK);
  for (int r = 0; r < TR; r++)
    for (int j = 0; j < NI; j++) {
      int32_t want = idx[j] < TC ? table[r * TC + idx[j]] : 0;
      if (got[r * NI + j] != want)
        fail_msg("gather i32 axis 1 on %s: [%d, %d] is %d, want %d", name, r, j, got[r * NI + j],
                 want);
    }
  printf("  %-7s %-44s integers: ok\n", e->backend, name);
}

static void test_integer_paths(void **state) {
  (void)state;
  on_gpu_devices(integers_on);
}

/* Points the CUDA and ROCm plugins at the CPU shims built beside the test,
 * unless the caller chose drivers or asks for the real ones
 * (CUDA_OPS_REAL_DRIVER, ROCM_OPS_REAL_RUNTIME: tools/gpu-check.sh, as for
 * test_cuda_ops); left out under a sanitizer, as in test_model (the shims'
 * kernels run in unloaded libraries there). */
static void use_shims(void) {
  char dir[PATH_MAX], path[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
  if (n <= 0 || getenv("BP_UNDER_SANITIZER")) return;
  dir[n] = 0;
  *strrchr(dir, '/') = 0;
  const char *env[][2] = {{"BACKPLANE_CUDA_DRIVER", "shims/cuda/libcuda.so.1"},
                          {"BACKPLANE_CUBLAS", "shims/cublas/libcublas.so.13"},
                          {"BACKPLANE_HIP_RUNTIME", "shims/hip/libamdhip64.so"},
                          {"BACKPLANE_HIPRTC", "shims/hip/libhiprtc.so"},
                          {"BACKPLANE_ROCBLAS", "shims/rocblas/librocblas.so.4"}};
  const bool real_cuda = getenv("CUDA_OPS_REAL_DRIVER"),
             real_rocm = getenv("ROCM_OPS_REAL_RUNTIME");
  for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, env[i][1]);
    if ((i < 2 ? real_cuda : real_rocm) || getenv(env[i][0]) || access(path, R_OK) != 0) continue;
    setenv(env[i][0], path, 1);
    /* kept loaded for the whole run: every context opens this instance */
    if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) fprintf(stderr, "shims: %s\n", dlerror());
  }
}

int main(void) {
  use_shims();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sequence_eager_and_captured),
      cmocka_unit_test(test_integer_paths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
