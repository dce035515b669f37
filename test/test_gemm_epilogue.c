/*
 * test_gemm_epilogue.c — c = act(alpha a·b + beta c + bias) through
 * bp_matmul_ex and bp_gemm_ex on every device the context lists, against a
 * double reference: odd sizes, batches, each bias broadcast ([n], [m, 1],
 * [m, n], [batch, m, n]), each activation the fused paths take and none,
 * beta 0 and the residual add (beta 1), every float dtype the device
 * claims. Devices that claim BP_FEATURE_GEMM_BIAS / _ACT run it fused; the
 * others through the core's composition. The composition is proven on the
 * "plaingemm" test plugin, whose GEMM fails any call carrying an epilogue,
 * and which counts the GEMM, add and unary calls it gets. A device group
 * of cpu and cpu-ref splits it with the bias; a captured graph replays it
 * with its bias rebound. Bad epilogues are rejected
 * with a message naming the fault.
 */
#include <dlfcn.h>
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

#include "nn_harness.h"
#include "tc.h"

#define NO_ACT (-1)

typedef struct ep_case {
  int64_t batch, m, n, k;
  int bias; /* 0 none, 1 [n], 2 [m, 1], 3 [m, n], 4 [batch, m, n] */
  int act;  /* a bp_unary_op_t or NO_ACT */
  double beta;
} ep_case_t;

static double act_ref(int op, double x) {
  switch (op) {
  case BP_UNARY_RELU:
    return x > 0 ? x : 0;
  case BP_UNARY_GELU:
    return 0.5 * x * erfc(-x * M_SQRT1_2);
  case BP_UNARY_SILU:
    return x / (1 + exp(-x));
  case BP_UNARY_SIGMOID:
    return 1 / (1 + exp(-x));
  case BP_UNARY_TANH:
    return tanh(x);
  default:
    return x;
  }
}

/* The bias's shape for kind (rank returned). */
static int bias_shape(const ep_case_t *c, int64_t *s) {
  switch (c->bias) {
  case 1:
    s[0] = c->n;
    return 1;
  case 2:
    s[0] = c->m, s[1] = 1;
    return 2;
  case 3:
    s[0] = c->m, s[1] = c->n;
    return 2;
  case 4:
    s[0] = c->batch, s[1] = c->m, s[2] = c->n;
    return 3;
  default:
    return 0;
  }
}

/* act(alpha a·b + beta c + bias) in double over [batch, m, n]; b is [k, n]
 * shared by the batch when shared_b. */
static void ep_reference(const ep_case_t *c, double alpha, const double *a, const double *b,
                         bool shared_b, const double *c0, const double *bias, double *out) {
  int64_t bs[3], cs[3] = {c->batch, c->m, c->n};
  int br = bias_shape(c, bs);
  for (int64_t t = 0; t < c->batch * c->m * c->n; t++) {
    int64_t bt = t / (c->m * c->n), i = t / c->n % c->m, j = t % c->n;
    double acc = 0;
    for (int64_t p = 0; p < c->k; p++)
      acc += a[(bt * c->m + i) * c->k + p] * b[((shared_b ? 0 : bt) * c->k + p) * c->n + j];
    double v = alpha * acc + (c->beta != 0 ? c->beta * c0[t] : 0);
    if (br) v += bias[tc_bcast_index(3, cs, t, br, bs)];
    out[t] = act_ref(c->act, v);
  }
}

static const ep_case_t ep_cases[] = {
    {1, 1, 1, 1, 1, BP_UNARY_RELU, 0},    {1, 7, 13, 5, 1, NO_ACT, 0},
    {1, 7, 13, 5, 0, BP_UNARY_GELU, 1},   {2, 9, 11, 6, 2, BP_UNARY_SILU, 1},
    {3, 5, 17, 9, 3, BP_UNARY_TANH, 0.5}, {2, 33, 29, 19, 4, BP_UNARY_SIGMOID, 0},
    {1, 70, 67, 64, 1, BP_UNARY_GELU, 1}, {2, 64, 96, 80, 1, BP_UNARY_RELU, 0},
    {1, 40, 36, 33, 3, NO_ACT, 1},        {2, 6, 5, 4, 4, BP_UNARY_GELU, 0},
    /* bf16 / f16 of these take the epilogue in the AMX merge: a bias of
     * one value per row (stride 0 along n), odd tails, beta with act */
    {1, 48, 40, 24, 2, BP_UNARY_SILU, 0.5}, {2, 35, 33, 40, 0, BP_UNARY_TANH, 0},
    {1, 33, 47, 70, 1, BP_UNARY_GELU, 0.5},
    /* a bias alone into beta 0: CUDA / ROCm write it into an f16 / bf16 C
     * before the vendor call (each broadcast) */
    {2, 9, 11, 6, 2, NO_ACT, 0}, {3, 5, 17, 9, 3, NO_ACT, 0}, {2, 33, 29, 19, 4, NO_ACT, 0},
    /* one row of C: PoCL's matrix-vector kernels, k split in slices */
    {2, 1, 301, 403, 4, BP_UNARY_GELU, 0.5}, {1, 1, 517, 300, 1, BP_UNARY_SILU, 1},
};

/* Runs one case with matmul_ex (b [k, n] shared when the case index is
 * even) and checks it; true when it ran. */
static void ep_one(tc_env_t *e, bp_dtype_t dt, const ep_case_t *c, bool shared_b, tc_rng_t *rng,
                   int c_layout) {
  int64_t as[3] = {c->batch, c->m, c->k}, bsh[3] = {c->batch, c->k, c->n},
          cs[3] = {c->batch, c->m, c->n};
  int64_t bias_s[3];
  int br = bias_shape(c, bias_s);
  int64_t na = tc_numel(3, as), nb = shared_b ? c->k * c->n : tc_numel(3, bsh),
          nc = tc_numel(3, cs);
  int64_t nbias = br ? tc_numel(br, bias_s) : 1;
  double *a = malloc(sizeof(double) * (size_t)na), *b = malloc(sizeof(double) * (size_t)nb);
  double *c0 = malloc(sizeof(double) * (size_t)nc), *bias = malloc(sizeof(double) * (size_t)nbias);
  double *ref = malloc(sizeof(double) * (size_t)nc);
  tc_rng_fill(rng, dt, -1, 1, a, na);
  tc_rng_fill(rng, dt, -1, 1, b, nb);
  tc_rng_fill(rng, dt, -1, 1, c0, nc);
  tc_rng_fill(rng, dt, -1, 1, bias, nbias);
  /* a dense A with a dense C: a vendor BLAS can take the call */
  tc_tensor_t A = tc_tensor(e, dt, 3, as, c_layout == TC_CONTIG ? TC_CONTIG : TC_STRIDED, a);
  tc_tensor_t B = tc_tensor(e, dt, shared_b ? 2 : 3, shared_b ? bsh + 1 : bsh, TC_PERMUTED, b);
  tc_tensor_t C = tc_tensor(e, dt, 3, cs, c_layout, c0);
  tc_tensor_t Bias = tc_tensor(e, dt, br ? br : 1, br ? bias_s : &nbias, TC_CONTIG, bias);
  bp_gemm_epilogue_t ep = {sizeof ep, br ? &Bias.t : NULL, c->act != NO_ACT,
                           c->act != NO_ACT ? (bp_unary_op_t)c->act : BP_UNARY_NEG};
  double alpha = 0.75;
  char what[160];
  snprintf(what, sizeof what, "matmul_ex batch %lld m %lld n %lld k %lld bias %d act %d beta %g%s",
           (long long)c->batch, (long long)c->m, (long long)c->n, (long long)c->k, c->bias, c->act,
           c->beta, shared_b ? " b shared" : "");
  bp_status_t st = bp_matmul_ex(e->s, alpha, &A.t, &B.t, c->beta, &C.t, &ep);
  if (tc_expect_status(e, st, BP_OK, "%s", what)) {
    double *y = tc_download(&C);
    ep_reference(c, alpha, a, b, shared_b, c0, bias, ref);
    tc_expect_close(e, dt, y, ref, nc, (double)c->k, "%s", what);
    if (tc_outside_changed(&C))
      print_error("FAIL [%s] %s wrote outside c\n", e->name, what), tc_failures++;
    free(y);
  }
  tc_tensor_free(&A), tc_tensor_free(&B), tc_tensor_free(&C), tc_tensor_free(&Bias);
  free(a), free(b), free(c0), free(bias), free(ref);
}

static void ep_device(tc_env_t *e, tc_rng_t *rng, int *ran) {
  for (int t = 0; t < 4; t++) {
    bp_dtype_t dt = tc_float_dtypes[t];
    if (!tc_supports(e, BP_OP_GEMM, dt)) continue;
    for (size_t i = 0; i < sizeof ep_cases / sizeof *ep_cases; i++) {
      ep_one(e, dt, &ep_cases[i], i % 2 == 0, rng, TC_STRIDED);
      /* row-major C too: the vector merge of the bf16 / f16 AMX kernel */
      if (dt == BP_BF16 || dt == BP_F16) ep_one(e, dt, &ep_cases[i], i % 2 == 0, rng, TC_CONTIG);
      (*ran)++;
    }
  }
}

/* Every device of a default context. */
static void test_epilogue_every_device(void **state) {
  (void)state;
  TC_BEGIN();
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  uint32_t count = 0;
  assert_int_equal(bp_context_device_count(ctx, &count), BP_OK);
  tc_rng_t rng;
  tc_rng_seed(&rng, 2801);
  for (uint32_t rank = 0; rank < count; rank++) {
    tc_env_t e;
    bp_device_entry_t entry;
    if (!nn_open_rank(ctx, rank, &e, &entry)) continue;
    int ran = 0;
    ep_device(&e, &rng, &ran);
    printf("device %s: %d epilogue cases, %s\n", e.name, ran,
           (entry.info.op_features[BP_OP_GEMM] & (BP_FEATURE_GEMM_BIAS | BP_FEATURE_GEMM_ACT)) ==
                   (BP_FEATURE_GEMM_BIAS | BP_FEATURE_GEMM_ACT)
               ? "fused"
               : "composed by the core");
    tc_env_close(&e);
  }
  bp_context_destroy(ctx);
  TC_END();
}

/* bp_gemm_ex: the CBLAS form, a [n] bias, column-major. */
static void test_gemm_ex(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  for (int d = 0; d < su->count; d++) {
    tc_env_t *e = &su->env[d];
    const int64_t m = 5, n = 7, k = 3;
    double a[15], b[21], c[35], bias[7], ref[35];
    for (int i = 0; i < 15; i++) a[i] = (i % 7) * 0.25 - 0.5;
    for (int i = 0; i < 21; i++) b[i] = (i % 5) * 0.5 - 1;
    for (int i = 0; i < 35; i++) c[i] = i * 0.125 - 2;
    for (int i = 0; i < 7; i++) bias[i] = i - 3.0;
    int64_t as[1] = {15}, bs[1] = {21}, cs[1] = {35}, ns[1] = {7};
    tc_tensor_t A = tc_tensor(e, BP_F32, 1, as, TC_CONTIG, a),
                B = tc_tensor(e, BP_F32, 1, bs, TC_CONTIG, b);
    tc_tensor_t C = tc_tensor(e, BP_F32, 1, cs, TC_CONTIG, c),
                Bias = tc_tensor(e, BP_F32, 1, ns, TC_CONTIG, bias);
    bp_gemm_epilogue_t ep = {sizeof ep, &Bias.t, true, BP_UNARY_RELU};
    /* column-major: a (i, p) at a[p * m + i], b (p, j) at b[j * k + p], c (i, j) at c[j * m + i] */
    bp_status_t st = bp_gemm_ex(e->s, BP_F32, BP_COL_MAJOR, BP_NO_TRANS, BP_NO_TRANS, m, n, k, 2.0,
                                A.buf, 0, m, B.buf, 0, k, 1.0, C.buf, 0, m, &ep);
    if (tc_expect_status(e, st, BP_OK, "gemm_ex col-major")) {
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double acc = 0;
          for (int64_t p = 0; p < k; p++) acc += a[p * m + i] * b[j * k + p];
          double v = 2.0 * acc + c[j * m + i] + bias[j];
          ref[j * m + i] = v > 0 ? v : 0;
        }
      double *y = tc_download(&C);
      tc_expect_close(e, BP_F32, y, ref, 35, 3, "gemm_ex col-major relu");
      free(y);
    }
    tc_tensor_free(&A), tc_tensor_free(&B), tc_tensor_free(&C), tc_tensor_free(&Bias);
  }
  TC_END();
}

/* Bad epilogues: rejected, naming the fault, c untouched. */
static void test_epilogue_errors(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_env_t *e = &su->env[0];
  int64_t as[2] = {3, 4}, bs[2] = {4, 5}, cs[2] = {3, 5}, wrong[1] = {4}, five[1] = {5};
  tc_tensor_t A = tc_tensor(e, BP_F32, 2, as, TC_CONTIG, NULL),
              B = tc_tensor(e, BP_F32, 2, bs, TC_CONTIG, NULL);
  tc_tensor_t C = tc_tensor(e, BP_F32, 2, cs, TC_CONTIG, NULL);
  tc_tensor_t W = tc_tensor(e, BP_F32, 1, wrong, TC_CONTIG, NULL),
              H = tc_tensor(e, BP_F64, 1, five, TC_CONTIG, NULL);
  bp_gemm_epilogue_t ep = {sizeof ep, &W.t, false, BP_UNARY_NEG};
  tc_expect_reject(e, bp_matmul_ex(e->s, 1, &A.t, &B.t, 0, &C.t, &ep), BP_ERR_INVALID_ARGUMENT,
                   "bias", "bias [4] against c [3, 5]");
  ep.bias = &H.t;
  tc_expect_reject(e, bp_matmul_ex(e->s, 1, &A.t, &B.t, 0, &C.t, &ep), BP_ERR_INVALID_ARGUMENT,
                   "dtype", "f64 bias, f32 c");
  ep.bias = &C.t;
  tc_expect_reject(e, bp_matmul_ex(e->s, 1, &A.t, &B.t, 0, &C.t, &ep), BP_ERR_INVALID_ARGUMENT,
                   "overlaps", "bias is c");
  ep.bias = NULL, ep.activate = true, ep.activation = (bp_unary_op_t)99;
  tc_expect_reject(e, bp_matmul_ex(e->s, 1, &A.t, &B.t, 0, &C.t, &ep), BP_ERR_INVALID_ARGUMENT,
                   "activation", "activation 99");
  ep.struct_size = 4;
  tc_expect_reject(e, bp_matmul_ex(e->s, 1, &A.t, &B.t, 0, &C.t, &ep), BP_ERR_INVALID_ARGUMENT,
                   "struct_size", "short struct");
  if (tc_bytes_changed(&C)) print_error("FAIL a rejected call wrote c\n"), tc_failures++;
  tc_tensor_free(&A), tc_tensor_free(&B), tc_tensor_free(&C), tc_tensor_free(&W),
      tc_tensor_free(&H);
  TC_END();
}

/* A group of cpu and cpu-ref splits the GEMM over the batch, M or N: the
 * bias slice must follow c's. */
static void test_epilogue_group(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  tc_env_t g;
  char dir[64] = "/tmp/bp-test-ep-XXXXXX";
  nn_group_open(su->ctx, dir, &g);
  bp_device_entry_t entry;
  assert_int_equal(bp_device_entry(g.dev, &entry), BP_OK);
  assert_int_equal(entry.info.op_features[BP_OP_GEMM], BP_FEATURE_GEMM_BIAS | BP_FEATURE_GEMM_ACT);
  tc_rng_t rng;
  tc_rng_seed(&rng, 2805);
  const ep_case_t cases[] = {{4, 9, 11, 6, 4, BP_UNARY_SILU, 1},  /* over the batch */
                             {1, 40, 7, 5, 3, BP_UNARY_GELU, 0},  /* over M */
                             {1, 5, 40, 7, 1, BP_UNARY_RELU, 1}}; /* over N */
  for (size_t i = 0; i < 3; i++) ep_one(&g, BP_F32, &cases[i], false, &rng, TC_STRIDED);
  nn_group_close(&g, dir);
  TC_END();
}

/* A captured matmul_ex replays with its bias, and with the bias buffer
 * rebound to another (the op table lists bias among gemm's tensors). */
static void test_epilogue_graph(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  for (int d = 0; d < su->count; d++) {
    tc_env_t *e = &su->env[d];
    const ep_case_t c = {2, 5, 7, 3, 1, BP_UNARY_RELU, 0};
    int64_t as[3] = {2, 5, 3}, bs[2] = {3, 7}, cs[3] = {2, 5, 7}, ns[1] = {7};
    double a[30], b[21], bias1[7], bias2[7], ref[70];
    for (int i = 0; i < 30; i++) a[i] = (i % 7) * 0.25 - 0.75;
    for (int i = 0; i < 21; i++) b[i] = (i % 5) * 0.5 - 1;
    for (int i = 0; i < 7; i++) bias1[i] = i * 0.5 - 1.5, bias2[i] = 2.0 - i;
    tc_tensor_t A = tc_tensor(e, BP_F32, 3, as, TC_CONTIG, a),
                B = tc_tensor(e, BP_F32, 2, bs, TC_CONTIG, b);
    tc_tensor_t C = tc_tensor(e, BP_F32, 3, cs, TC_CONTIG, NULL);
    tc_tensor_t B1 = tc_tensor(e, BP_F32, 1, ns, TC_CONTIG, bias1),
                B2 = tc_tensor(e, BP_F32, 1, ns, TC_CONTIG, bias2);
    bp_gemm_epilogue_t ep = {sizeof ep, &B1.t, true, BP_UNARY_RELU};
    bp_graph_t *g = NULL;
    assert_int_equal(bp_stream_begin_capture(e->s), BP_OK);
    bp_status_t st = bp_matmul_ex(e->s, 0.75, &A.t, &B.t, 0, &C.t, &ep);
    assert_int_equal(bp_stream_end_capture(e->s, &g), BP_OK);
    if (tc_expect_status(e, st, BP_OK, "captured matmul_ex")) {
      const double *biases[2] = {bias1, bias2};
      for (int run = 0; run < 2; run++) {
        if (run == 1) assert_int_equal(bp_graph_rebind(g, B1.buf, B2.buf), BP_OK);
        tc_expect_status(e, bp_graph_launch(g, e->s), BP_OK, "graph launch %d", run);
        double *y = tc_download(&C);
        ep_reference(&c, 0.75, a, b, true, NULL, biases[run], ref);
        tc_expect_close(e, BP_F32, y, ref, 70, 3, "graph launch %d (bias %s)", run,
                        run ? "rebound" : "as captured");
        free(y);
      }
    }
    bp_graph_destroy(g);
    tc_tensor_free(&A), tc_tensor_free(&B), tc_tensor_free(&C), tc_tensor_free(&B1),
        tc_tensor_free(&B2);
  }
  TC_END();
}

/* ---- the composition, on a device without the features ------------------- */

static void plugin_dir(char *out, size_t size) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  assert_true(n > 0);
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(out, size, "%s/plain-gemm-plugin", exe);
}

static void test_epilogue_composed(void **state) {
  (void)state;
  TC_BEGIN();
  char dir[PATH_MAX], path[PATH_MAX + 64];
  plugin_dir(dir, sizeof dir);
  setenv("BACKPLANE_PLUGIN_PATH", dir, 1);
  setenv("BACKPLANE_BACKENDS", "plaingemm", 1);
  bp_context_options_t opt = {.struct_size = sizeof opt, .in_process_probe = true};
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(&opt, &ctx), BP_OK);
  unsetenv("BACKPLANE_PLUGIN_PATH");
  unsetenv("BACKPLANE_BACKENDS");
  tc_env_t e;
  assert_true(tc_env_open(&e, ctx, "plaingemm"));
  snprintf(path, sizeof path, "%s/backend-plaingemm.so", dir);
  void *so = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(so);
  int *calls = dlsym(so, "plain_gemm_calls");
  assert_non_null(calls);
  bp_device_entry_t entry;
  assert_int_equal(bp_device_entry(e.dev, &entry), BP_OK);
  assert_int_equal(entry.info.op_features[BP_OP_GEMM], 0);
  tc_rng_t rng;
  tc_rng_seed(&rng, 2802);
  int before[3] = {calls[0], calls[1], calls[2]};
  const ep_case_t c = {2, 9, 11, 6, 1, BP_UNARY_GELU, 1};
  ep_one(&e, BP_F32, &c, true, &rng, TC_STRIDED);
  /* one GEMM, one add, one unary */
  assert_int_equal(calls[0] - before[0], 1);
  assert_int_equal(calls[1] - before[1], 1);
  assert_int_equal(calls[2] - before[2], 1);
  int ran = 0;
  ep_device(&e, &rng, &ran);
  assert_true(ran > 0);
  dlclose(so);
  tc_env_close(&e);
  bp_context_destroy(ctx);
  TC_END();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_epilogue_every_device), cmocka_unit_test(test_gemm_ex),
      cmocka_unit_test(test_epilogue_errors),       cmocka_unit_test(test_epilogue_group),
      cmocka_unit_test(test_epilogue_graph),        cmocka_unit_test(test_epilogue_composed),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
