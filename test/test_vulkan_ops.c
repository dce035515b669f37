/*
 * test_vulkan_ops.c — reductions, normalisation, attention, DNN ops, gemv,
 * Adam, random and stream/event behaviour of the Vulkan backend against
 * cpu-ref (see test_vulkan.c). Ops the device does not claim are skipped.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_vulkan.h"

void vt_test_reduce(void **state) {
  (void)state;
  VT_NEED();
  bp_dtype_t dts[3];
  int ndt = vt_float_dtypes(BP_OP_REDUCE, dts);
  assert_true(ndt > 0); /* f32 at least is claimed */
  int64_t shape[3] = {4, 130, 6};
  for (int d = 0; d < ndt; d++) {
    bp_dtype_t dt = dts[d];
    vt_pair_t x = vt_rand(31, dt, 3, shape, TC_STRIDED, 0.5, 1.5);
    for (int axis = 0; axis < 3; axis++) {
      int64_t ys[3] = {4, 130, 6};
      ys[axis] = 1;
      for (int op = 0; op < BP_REDUCE_COUNT; op++) {
        bp_dtype_t ydt = op == BP_REDUCE_ARGMAX ? (axis ? BP_I64 : BP_I32) : dt;
        vt_pair_t y = vt_mk(ydt, 3, ys, TC_CONTIG, NULL);
        VT_BOTH(bp_reduce(E->s, (bp_reduce_op_t)op, &x.t[I].t, axis,
                          &y.t[I].t));
        char what[64];
        snprintf(what, sizeof what, "reduce op %d axis %d %s", op, axis,
                 bp_dtype_name(dt));
        bool exact = op == BP_REDUCE_ARGMAX || op == BP_REDUCE_MAX ||
                     op == BP_REDUCE_MIN;
        vt_check(&y, ydt, exact ? -1 : (double)shape[axis], what);
        vt_free(&y);
      }
    }
    vt_free(&x);
  }
  TC_END();
}

void vt_test_softmax_norms(void **state) {
  (void)state;
  VT_NEED();
  bp_dtype_t dts[3];
  int ndt = vt_float_dtypes(BP_OP_SOFTMAX, dts);
  assert_true(ndt > 0); /* f32 at least is claimed */
  int64_t shape[3] = {3, 5, 200}, last[1] = {200};
  for (int d = 0; d < ndt; d++) {
    bp_dtype_t dt = dts[d];
    vt_pair_t x = vt_rand(41, dt, 3, shape, TC_PERMUTED, -4, 4);
    vt_pair_t y = vt_mk(dt, 3, shape, TC_STRIDED, NULL);
    for (int axis = 0; axis < 3; axis++)
      for (int lg = 0; lg < 2; lg++) {
        VT_BOTH(bp_softmax(E->s, &x.t[I].t, axis - (axis == 2 ? 3 : 0), lg,
                           &y.t[I].t));
        char what[64];
        snprintf(what, sizeof what, "softmax axis %d log %d %s", axis, lg,
                 bp_dtype_name(dt));
        vt_check(&y, dt, (double)shape[axis], what);
      }
    if (!tc_supports(&vt_vk, BP_OP_LAYER_NORM, dt)) {
      vt_free(&x);
      vt_free(&y);
      continue;
    }
    vt_pair_t g = vt_rand(42, dt, 1, last, TC_STRIDED, 0.5, 1.5);
    vt_pair_t b = vt_rand(43, dt, 1, last, TC_CONTIG, -1, 1);
    VT_BOTH(bp_layer_norm(E->s, &x.t[I].t, &g.t[I].t, &b.t[I].t, 1e-5,
                          &y.t[I].t));
    vt_check(&y, dt, 200, "layer_norm");
    VT_BOTH(bp_layer_norm(E->s, &x.t[I].t, NULL, NULL, 1e-5, &y.t[I].t));
    vt_check(&y, dt, 200, "layer_norm no affine");
    VT_BOTH(bp_rms_norm(E->s, &x.t[I].t, &g.t[I].t, 1e-6, &y.t[I].t));
    vt_check(&y, dt, 200, "rms_norm");
    vt_free(&x);
    vt_free(&y);
    vt_free(&g);
    vt_free(&b);
  }
  TC_END();
}

static void gemv_case(bp_dtype_t dt) {
  int64_t m = 37, n = 300, lda = n + 5;
  int64_t na[1] = {m * lda}, nx[1] = {n * 2}, ny[1] = {n * 3};
  for (int t = 0; t < 2; t++) {
    bp_transpose_t tr = t ? BP_TRANS : BP_NO_TRANS;
    vt_pair_t a = vt_rand(21, dt, 1, na, TC_CONTIG, -1, 1);
    vt_pair_t x = vt_rand(22, dt, 1, nx, TC_CONTIG, -1, 1);
    vt_pair_t y = vt_rand(23, dt, 1, ny, TC_CONTIG, -1, 1);
    VT_BOTH(bp_gemv(E->s, dt, BP_ROW_MAJOR, tr, m, t ? 37 : n, 1.5,
                    a.t[I].buf, 0, lda, x.t[I].buf, 0, 2, 0.5, y.t[I].buf, 0,
                    3));
    vt_check(&y, dt, (double)n, t ? "gemv T" : "gemv N");
    vt_free(&a);
    vt_free(&x);
    vt_free(&y);
  }
}

void vt_test_gemv_adam(void **state) {
  (void)state;
  VT_NEED();
  bp_dtype_t dts[3];
  int ndt = vt_float_dtypes(BP_OP_GEMV, dts);
  assert_true(ndt > 0); /* f32 at least is claimed */
  for (int d = 0; d < ndt; d++)
    gemv_case(dts[d]);
  ndt = vt_float_dtypes(BP_OP_ADAM, dts);
  assert_true(ndt > 0);
  int64_t shape[2] = {7, 33};
  for (int d = 0; d < ndt; d++)
    for (int w = 0; w < 2; w++) {
      bp_dtype_t dt = dts[d];
      vt_pair_t prm = vt_rand(51, dt, 2, shape, TC_STRIDED, -1, 1);
      vt_pair_t g = vt_rand(52, dt, 2, shape, TC_PERMUTED, -1, 1);
      vt_pair_t m = vt_rand(53, dt, 2, shape, TC_CONTIG, -0.1, 0.1);
      vt_pair_t v = vt_rand(54, dt, 2, shape, TC_CONTIG, 0, 0.1);
      bp_adam_params_t ap = {.struct_size = sizeof ap, .lr = 1e-2,
                             .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                             .weight_decay = 0.01, .step = 3, .adamw = w};
      VT_BOTH(bp_adam(E->s, &ap, 1, &prm.t[I].t, &g.t[I].t, &m.t[I].t,
                      &v.t[I].t));
      vt_check(&prm, dt, 4, w ? "adamw param" : "adam param");
      vt_check(&m, dt, 4, "adam exp_avg");
      vt_check(&v, dt, 4, "adam exp_avg_sq");
      vt_free(&prm);
      vt_free(&g);
      vt_free(&m);
      vt_free(&v);
    }
  TC_END();
}

static void attn_case(bp_dtype_t dt, int64_t B, int64_t Hq, int64_t Hkv,
                      int64_t Sq, int64_t Skv, int64_t D, int64_t Dv,
                      bool causal) {
  int64_t qs[4] = {B, Hq, Sq, D}, ks[4] = {B, Hkv, Skv, D},
          vs[4] = {B, Hkv, Skv, Dv}, os[4] = {B, Hq, Sq, Dv};
  vt_pair_t q = vt_rand(61, dt, 4, qs, TC_CONTIG, -1, 1);
  vt_pair_t k = vt_rand(62, dt, 4, ks, TC_PERMUTED, -1, 1);
  vt_pair_t v = vt_rand(63, dt, 4, vs, TC_STRIDED, -1, 1);
  vt_pair_t o = vt_mk(dt, 4, os, TC_STRIDED, NULL);
  VT_BOTH(bp_attention(E->s, &q.t[I].t, &k.t[I].t, &v.t[I].t, 0.0, causal,
                       &o.t[I].t));
  char what[96];
  snprintf(what, sizeof what, "attention %s B%lld H%lld/%lld S%lld/%lld D%lld/%lld%s",
           bp_dtype_name(dt), (long long)B, (long long)Hq, (long long)Hkv,
           (long long)Sq, (long long)Skv, (long long)D, (long long)Dv,
           causal ? " causal" : "");
  vt_check(&o, dt, (double)Skv, what);
  vt_free(&q);
  vt_free(&k);
  vt_free(&v);
  vt_free(&o);
}

void vt_test_attention(void **state) {
  (void)state;
  VT_NEED();
  bp_dtype_t dts[3];
  int ndt = vt_float_dtypes(BP_OP_ATTENTION, dts);
  assert_true(ndt > 0);
  /* On software devices: the one-pass kernel (attnflash, every DV variant:
   * Dv 24, 32, 80, 128; several row blocks and key steps, GQA, causal with
   * Sq < Skv and Sq > Skv), then the three-kernel path it replaces
   * (BACKPLANE_VK_ATTN_FLASH=0), which also runs Dv past the kernel's
   * tiles (136) in either pass. */
  for (int flash = 1; flash >= 0; flash--) {
    if (!flash)
      setenv("BACKPLANE_VK_ATTN_FLASH", "0", 1);
    for (int d = 0; d < ndt; d++) {
      attn_case(dts[d], 2, 4, 2, 9, 70, 16, 24, false);
      attn_case(dts[d], 1, 4, 1, 70, 70, 32, 32, true);
      attn_case(dts[d], 1, 2, 2, 5, 3, 8, 8, true); /* Sq > Skv: empty rows */
      attn_case(dts[d], 1, 1, 1, 1, 130, 64, 80, true);
      attn_case(dts[d], 1, 3, 1, 150, 161, 40, 128, true);
      attn_case(dts[d], 2, 2, 2, 67, 19, 8, 136, false);
    }
    unsetenv("BACKPLANE_VK_ATTN_FLASH");
  }
  TC_END();
}

static void conv_case(bp_dtype_t dt, int64_t N, int64_t C, int64_t H,
                      int64_t W, int64_t K, int64_t R, int64_t S, int sh,
                      int pad, int dil, int groups, bool bias,
                      tc_layout_t xl, tc_layout_t yl) {
  bp_conv2d_params_t cp = {.struct_size = sizeof cp, .stride_h = sh,
                           .stride_w = 1, .pad_h = pad, .pad_w = pad,
                           .dilation_h = dil, .dilation_w = 1,
                           .groups = groups};
  int64_t P = (H + 2 * pad - dil * (R - 1) - 1) / sh + 1;
  int64_t Q = (W + 2 * pad - (S - 1) - 1) / 1 + 1;
  int64_t xs[4] = {N, C, H, W}, ws[4] = {K, C / groups, R, S}, bs[1] = {K},
          ys[4] = {N, K, P, Q};
  vt_pair_t x = vt_rand(81, dt, 4, xs, xl, -1, 1);
  vt_pair_t w = vt_rand(82, dt, 4, ws, TC_CONTIG, -1, 1);
  vt_pair_t b = vt_rand(83, dt, 1, bs, TC_CONTIG, -1, 1);
  vt_pair_t y = vt_mk(dt, 4, ys, yl, NULL);
  VT_BOTH(bp_conv2d(E->s, &cp, &x.t[I].t, &w.t[I].t, bias ? &b.t[I].t : NULL,
                    &y.t[I].t));
  char what[96];
  snprintf(what, sizeof what, "conv2d %s C%lld K%lld %lldx%lld g%d",
           bp_dtype_name(dt), (long long)C, (long long)K, (long long)R,
           (long long)S, groups);
  vt_check(&y, dt, (double)(C / groups * R * S), what);
  vt_free(&x);
  vt_free(&w);
  vt_free(&b);
  vt_free(&y);
}

void vt_test_dnn(void **state) {
  (void)state;
  VT_NEED();
  bp_dtype_t dts[3];
  int ndt = vt_float_dtypes(BP_OP_CONV2D, dts);
  assert_true(ndt > 0);
  for (int d = 0; d < ndt; d++) {
    conv_case(dts[d], 2, 3, 11, 9, 20, 3, 3, 1, 1, 1, 1, true, TC_STRIDED, TC_STRIDED);
    conv_case(dts[d], 1, 8, 10, 10, 6, 3, 2, 2, 2, 2, 2, false, TC_STRIDED, TC_STRIDED);
    conv_case(dts[d], 1, 4, 5, 5, 4, 1, 1, 1, 0, 1, 4, true, TC_STRIDED, TC_STRIDED);
    /* depthwise (convdw.comp; f32 through texel views on software
     * devices): a channel multiplier, dilation, more pixels than its grid
     * (the stride loop), and a strided 5x5 */
    conv_case(dts[d], 1, 3, 70, 71, 6, 3, 3, 1, 1, 2, 3, true, TC_CONTIG, TC_CONTIG);
    conv_case(dts[d], 2, 6, 9, 20, 6, 5, 5, 2, 2, 1, 6, false, TC_STRIDED, TC_STRIDED);
    /* the texel path of software devices (y contiguous across P, Q):
     * groups, stride, dilation, padding (the implicit GEMM's padded
     * copy), no padding (x read in place when f32: 1x1 and a strided,
     * dilated, grouped 3x3; bf16 too, through an r16ui view), a product
     * past one register tile; the same with BACKPLANE_VK_CONV_BX=0 sends
     * unpadded bf16 through the padded copy, with
     * BACKPLANE_VK_CONV_IMPLICIT=0 through the im2col panels */
    for (int mode = 0; mode < 3; mode++) {
      if (mode == 1)
        setenv("BACKPLANE_VK_CONV_BX", "0", 1);
      if (mode == 2)
        setenv("BACKPLANE_VK_CONV_IMPLICIT", "0", 1);
      conv_case(dts[d], 2, 8, 12, 10, 16, 3, 3, 2, 1, 2, 2, true, TC_STRIDED, TC_CONTIG);
      conv_case(dts[d], 2, 16, 7, 9, 12, 1, 1, 1, 0, 1, 1, true, TC_STRIDED, TC_CONTIG);
      conv_case(dts[d], 2, 8, 13, 11, 16, 3, 3, 2, 0, 2, 2, false, TC_CONTIG, TC_CONTIG);
      conv_case(dts[d], 1, 20, 17, 19, 40, 3, 3, 1, 1, 1, 1, true, TC_PERMUTED, TC_CONTIG);
      /* contiguous 1x1 (bp bench's layer, smaller): image 1 starts at an
       * odd element, half-way into a 32-bit word of x */
      conv_case(dts[d], 2, 33, 7, 9, 20, 1, 1, 1, 0, 1, 1, true, TC_CONTIG, TC_CONTIG);
      unsetenv("BACKPLANE_VK_CONV_BX");
      unsetenv("BACKPLANE_VK_CONV_IMPLICIT");
    }
  }
  ndt = vt_float_dtypes(BP_OP_BATCH_NORM, dts);
  assert_true(ndt > 0);
  int64_t xs[4] = {2, 3, 9, 11}, cs[1] = {3};
  for (int d = 0; d < ndt; d++) {
    bp_dtype_t dt = dts[d];
    vt_pair_t x = vt_rand(71, dt, 4, xs, TC_PERMUTED, -2, 2);
    vt_pair_t y = vt_mk(dt, 4, xs, TC_STRIDED, NULL);
    vt_pair_t mean = vt_rand(72, dt, 1, cs, TC_CONTIG, -1, 1);
    vt_pair_t var = vt_rand(73, dt, 1, cs, TC_STRIDED, 0.5, 2);
    vt_pair_t sc = vt_rand(74, dt, 1, cs, TC_CONTIG, 0.5, 2);
    vt_pair_t bi = vt_rand(75, dt, 1, cs, TC_CONTIG, -1, 1);
    VT_BOTH(bp_batch_norm(E->s, &x.t[I].t, &mean.t[I].t, &var.t[I].t,
                          &sc.t[I].t, &bi.t[I].t, 1e-5, &y.t[I].t));
    vt_check(&y, dt, 1, "batch_norm");
    for (int kind = 0; kind < 2; kind++)
      for (int inc = 0; inc < 2; inc++) {
        bp_pool2d_params_t pp = {.struct_size = sizeof pp,
                                 .kind = (bp_pool_kind_t)kind,
                                 .kernel_h = 3, .kernel_w = 2, .stride_h = 2,
                                 .stride_w = 1, .pad_h = 1, .pad_w = 1,
                                 .count_include_pad = inc};
        int64_t ps[4] = {2, 3, 5, 12};
        vt_pair_t py = vt_mk(dt, 4, ps, TC_STRIDED, NULL);
        VT_BOTH(bp_pool2d(E->s, &pp, &x.t[I].t, &py.t[I].t));
        vt_check(&py, dt, kind ? 6 : -1, kind ? "avg pool" : "max pool");
        vt_free(&py);
      }
    vt_free(&x);
    vt_free(&y);
    vt_free(&mean);
    vt_free(&var);
    vt_free(&sc);
    vt_free(&bi);
  }
  TC_END();
}

/* bp_random bit for bit against cpu-ref (both follow bp_philox.h), on
 * several layouts, seeds, offsets and both distributions, plus the header's
 * known answers so a shared mistake cannot pass unnoticed. */
void vt_test_random(void **state) {
  (void)state;
  VT_NEED();
  static const bp_dtype_t all[] = {BP_F32, BP_F16, BP_BF16, BP_F64};
  int64_t shape[3] = {5, 33, 17};
  int tested = 0;
  for (int d = 0; d < 4; d++) {
    bp_dtype_t dt = all[d];
    if (!tc_supports(&vt_vk, BP_OP_RANDOM, dt) ||
        !tc_supports(&vt_ref, BP_OP_RANDOM, dt))
      continue;
    tested++;
    for (int layout = 0; layout < TC_LAYOUT_COUNT; layout++)
      for (int dist = 0; dist < 2; dist++) {
        vt_pair_t y = vt_mk(dt, 3, shape, (tc_layout_t)layout, NULL);
        uint64_t seed = layout == 1 ? 0x123456789abcdefull : 42u + layout;
        uint64_t off = layout == 2 ? 0xfedcba9876543210ull : 7u * layout;
        double a = dist ? 1.5 : -3.0, b = dist ? 2.25 : 5.0;
        VT_BOTH(bp_random(E->s, (bp_random_dist_t)dist, seed, off, a, b,
                          &y.t[I].t));
        char what[96];
        snprintf(what, sizeof what, "random %s %s %s",
                 dist ? "normal" : "uniform", bp_dtype_name(dt),
                 tc_layout_names[layout]);
        vt_check(&y, dt, -1, what);
        vt_free(&y);
      }
  }
  assert_true(tested > 0); /* f32 at least is claimed */
  /* Known answers from kernels/common/bp_philox.h (seed 42, offset 0). */
  static const uint32_t want[2][2] = {{0x3f1ceaf0u, 0x3f7cdb21u},
                                      {0xbf785e5au, 0xbd95e014u}};
  int64_t two[1] = {2};
  for (int dist = 0; dist < 2; dist++) {
    tc_tensor_t y = tc_tensor(&vt_vk, BP_F32, 1, two, TC_CONTIG, NULL);
    tc_expect_status(&vt_vk,
                     bp_random(vt_vk.s, (bp_random_dist_t)dist, 42, 0, 0, 1,
                               &y.t),
                     BP_OK, "random known answer");
    uint32_t got[2] = {0, 0};
    tc_expect_status(&vt_vk, bp_buffer_read(y.buf, y.t.offset, got, 8),
                     BP_OK, "read known answer");
    for (int i = 0; i < 2; i++)
      if (got[i] != want[dist][i])
        tc_expect_status(&vt_vk, BP_ERR_INTERNAL, BP_OK,
                         "random dist %d i %d: %08x, want %08x", dist, i,
                         got[i], want[dist][i]);
    tc_tensor_free(&y);
  }
  TC_END();
}
/* Work on one stream, an event, a second stream that waits for it and
 * copies; then timing between two events. */
void vt_test_streams_events(void **state) {
  (void)state;
  VT_NEED();
  enum { N = 4096 };
  bp_stream_t *s1 = NULL, *s2 = NULL;
  bp_event_t *e0 = NULL, *e1 = NULL;
  bp_buffer_t *a = NULL, *b = NULL;
  assert_int_equal(bp_stream_create(vt_vk.dev, &s1), BP_OK);
  assert_int_equal(bp_stream_create(vt_vk.dev, &s2), BP_OK);
  assert_int_equal(bp_event_create(vt_vk.dev, &e0), BP_OK);
  assert_int_equal(bp_event_create(vt_vk.dev, &e1), BP_OK);
  assert_int_equal(bp_buffer_alloc(vt_vk.dev, N * 4, &a), BP_OK);
  assert_int_equal(bp_buffer_alloc(vt_vk.dev, N * 4, &b), BP_OK);
  int64_t n[1] = {N};
  bp_tensor_t ta, tb;
  assert_int_equal(bp_tensor_init(a, 0, BP_F32, 1, n, NULL, &ta), BP_OK);
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, n, NULL, &tb), BP_OK);
  assert_int_equal(bp_event_record(e0, s1), BP_OK);
  for (int i = 0; i < 50; i++) /* many ops: several batches */
    assert_int_equal(bp_fill(s1, &ta, (double)i), BP_OK);
  assert_int_equal(bp_event_record(e1, s1), BP_OK);
  assert_int_equal(bp_stream_wait_event(s2, e1), BP_OK);
  assert_int_equal(bp_copy(s2, &ta, &tb), BP_OK);
  assert_int_equal(bp_stream_synchronize(s2), BP_OK);
  float *h = malloc(N * 4);
  assert_int_equal(bp_buffer_read(b, 0, h, N * 4), BP_OK);
  for (int i = 0; i < N; i++) /* each element is a check (TC_END counts) */
    tc_expect_status(&vt_vk, h[i] == 49.0f ? BP_OK : BP_ERR_INTERNAL, BP_OK,
                     "b[%d] = %g", i, (double)h[i]);
  double ms = -1;
  assert_int_equal(bp_event_elapsed_ms(e0, e1, &ms), BP_OK);
  assert_true(ms >= 0);
  free(h);
  bp_buffer_free(a);
  bp_buffer_free(b);
  bp_event_destroy(e0);
  bp_event_destroy(e1);
  bp_stream_destroy(s1);
  bp_stream_destroy(s2);
  TC_END();
}
