/*
 * test_model_ops.c — the model ops of ABI 1.5 on every device
 * (model_ops_harness.h), each dtype the device claims, against the tests'
 * double reference: gather (i32 / i64 indices of several ranks, a rank-0
 * index, out-of-range indices giving zeros, strided tables), arange (every
 * dtype), binary with a scalar (every op, both orders, broadcast, in
 * place, a scalar not representable in the dtype), tanh GELU, GLU (every
 * kind, broadcast gate, in place), RoPE (both modes, partial rotary_dim,
 * positions absent / [seq] / [batch, seq], permuted x, in place). Odd
 * shapes throughout, so vector tails are exercised.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_ops_harness.h"
#include "ref.h"

/* ---- gather ------------------------------------------------------------ */

static void gather_one(tc_env_t *e, bp_dtype_t dt, int rt, const int64_t *ts, tc_layout_t tl,
                       bp_dtype_t it, int ri, const int64_t *is, const double *iv, int32_t axis) {
  tc_tensor_t tab = mo_rand(e, dt, rt, ts, tl, -50, 50, 3);
  tc_tensor_t idx = tc_tensor(e, it, ri, is, TC_CONTIG, iv);
  int32_t ax = axis < 0 ? axis + rt : axis;
  int64_t ys[BP_MAX_RANK];
  int ry = 0;
  for (int d = 0; d < ax; d++) ys[ry++] = ts[d];
  for (int d = 0; d < ri; d++) ys[ry++] = is[d];
  for (int d = ax + 1; d < rt; d++) ys[ry++] = ts[d];
  tc_tensor_t y = tc_tensor(e, dt, ry, ys, TC_STRIDED, NULL);
  bp_status_t st = bp_gather(e->s, &tab.t, &idx.t, axis, &y.t);
  if (tc_expect_status(e, st, BP_OK, "gather %s axis %d", bp_dtype_name(dt), axis)) {
    double *tv = tc_values(&tab), *got = tc_download(&y);
    int64_t n = tc_numel(ry, ys), ni = tc_numel(ri, is), inner = 1, outer = 1;
    for (int d = ax + 1; d < rt; d++) inner *= ts[d];
    for (int d = 0; d < ax; d++) outer *= ts[d];
    double *want = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < ni; j++)
        for (int64_t k = 0; k < inner; k++) {
          int64_t v = (int64_t)iv[j];
          bool in = v >= 0 && v < ts[ax];
          want[(o * ni + j) * inner + k] = in ? tv[(o * ts[ax] + v) * inner + k] : 0.0;
        }
    tc_expect_exact(e, dt, got, want, n, "gather %s axis %d (%s indices)", bp_dtype_name(dt), axis,
                    bp_dtype_name(it));
    tc_expect_status(e, tc_outside_changed(&y) ? BP_ERR_INTERNAL : BP_OK, BP_OK,
                     "gather wrote outside y");
    free(tv), free(got), free(want);
  }
  tc_tensor_free(&tab), tc_tensor_free(&idx), tc_tensor_free(&y);
}

static void c_gather(tc_env_t *e, bp_dtype_t dt) {
  const int64_t t2[2] = {11, 7}, i2[2] = {3, 4}, t3[3] = {5, 9, 3}, i1[1] = {6};
  const double v12[12] = {0, 10, 3, -1, 11, 5, 5, 2, 9, -7, 4, 1}, v6[6] = {8, 0, 9, 2, 2, 100};
  gather_one(e, dt, 2, t2, TC_CONTIG, BP_I32, 2, i2, v12, 0);
  gather_one(e, dt, 2, t2, TC_PERMUTED, BP_I64, 2, i2, v12, 0);
  gather_one(e, dt, 3, t3, TC_STRIDED, BP_I64, 1, i1, v6, 1);
  gather_one(e, dt, 3, t3, TC_CONTIG, BP_I32, 1, i1, v6, -1);
  const double v1[1] = {4};
  gather_one(e, dt, 2, t2, TC_CONTIG, BP_I64, 0, i1, v1, 0); /* rank-0 index */
}

/* ---- arange ------------------------------------------------------------ */

static void c_arange(tc_env_t *e, bp_dtype_t dt) {
  const int64_t s[2] = {5, 7};
  bool fl = dt == BP_F32 || dt == BP_F16 || dt == BP_BF16 || dt == BP_F64;
  double start = fl ? -3.0 : 3.0, step = fl ? 0.375 : 2.0;
  for (int l = 0; l < 2; l++) {
    tc_tensor_t y = tc_tensor(e, dt, 2, s, l ? TC_STRIDED : TC_CONTIG, NULL);
    if (tc_expect_status(e, bp_arange(e->s, start, step, &y.t), BP_OK, "arange %s",
                         bp_dtype_name(dt))) {
      double want[35], *got = tc_download(&y);
      for (int i = 0; i < 35; i++) want[i] = start + i * step;
      tc_expect_exact(e, dt, got, want, 35, "arange %s layout %d", bp_dtype_name(dt), l);
      free(got);
    }
    tc_tensor_free(&y);
  }
}

/* ---- binary with a scalar ----------------------------------------------- */

static void scalar_one(tc_env_t *e, bp_dtype_t dt, bp_binary_op_t op, bool first, int ra,
                       const int64_t *as, tc_layout_t la, bool in_place) {
  const int64_t ys[2] = {9, 21};
  double sc = op == BP_BINARY_POW ? 1.3 : -1.7; /* neither exact in f16 / bf16 */
  tc_tensor_t a = mo_rand(e, dt, ra, as, la, 0.25, 2, 7 + op);
  tc_tensor_t yt = in_place ? a : tc_tensor(e, dt, 2, ys, TC_CONTIG, NULL);
  bp_status_t st = first ? bp_binary_scalar_first(e->s, op, sc, &a.t, &yt.t)
                         : bp_binary_scalar(e->s, op, &a.t, sc, &yt.t);
  if (tc_expect_status(e, st, BP_OK, "binary_scalar op %d first %d", op, first)) {
    double *av = tc_values(&a), *got = tc_download(&yt), want[9 * 21];
    double s = tc_round(dt, sc);
    int64_t n = in_place ? a.numel : 9 * 21;
    for (int64_t i = 0; i < n; i++) {
      double x = av[in_place ? i : tc_bcast_index(2, ys, i, ra, as)];
      want[i] = first ? ref_binary(op, s, x) : ref_binary(op, x, s);
    }
    tc_expect_close(e, dt, got, want, n, 1, "binary_scalar %s op %d first %d in place %d",
                    bp_dtype_name(dt), op, first, in_place);
    free(av), free(got);
  }
  if (!in_place) tc_tensor_free(&yt);
  tc_tensor_free(&a);
}

/* The scalar is rounded to a's dtype before the add: base + s then ties
 * and rounds to even, where the unrounded scalar would round up. */
static void scalar_rounded_first(tc_env_t *e, bp_dtype_t dt) {
  /* s holds bits below the dtype's precision at 1 (but within f32's for
   * f16 / bf16, so a float path shows them too) */
  double base = dt == BP_F16 ? 2048 : dt == BP_BF16 ? 256 : 16777216;
  double s = dt == BP_F32 ? 1 + 0x1p-25 : 1 + 0x1p-15;
  if (dt == BP_F64) return;
  const int64_t n[1] = {5};
  double v[5] = {base, base, base, base, base}, want[5];
  tc_tensor_t a = tc_tensor(e, dt, 1, n, TC_CONTIG, v), y = tc_tensor(e, dt, 1, n, TC_CONTIG, NULL);
  if (tc_expect_status(e, bp_binary_scalar(e->s, BP_BINARY_ADD, &a.t, s, &y.t), BP_OK,
                       "scalar rounding")) {
    double *got = tc_download(&y);
    for (int i = 0; i < 5; i++) want[i] = base; /* base + 1 ties to even */
    tc_expect_exact(e, dt, got, want, 5, "%s + %.17g: the scalar rounded to %s first",
                    bp_dtype_name(dt), s, bp_dtype_name(dt));
    free(got);
  }
  tc_tensor_free(&a), tc_tensor_free(&y);
}

static void c_binary_scalar(tc_env_t *e, bp_dtype_t dt) {
  scalar_rounded_first(e, dt);
  const int64_t full[2] = {9, 21}, row[2] = {1, 21};
  for (int op = 0; op < BP_BINARY_COUNT; op++)
    for (int first = 0; first < 2; first++) {
      scalar_one(e, dt, (bp_binary_op_t)op, first, 2, full, (tc_layout_t)((op + first) % 3), false);
      scalar_one(e, dt, (bp_binary_op_t)op, first, 2, row, TC_CONTIG, false);
    }
  scalar_one(e, dt, BP_BINARY_MUL, false, 2, full, TC_CONTIG, true);
  scalar_one(e, dt, BP_BINARY_SUB, true, 2, full, TC_STRIDED, true);
}

/* ---- tanh GELU ---------------------------------------------------------- */

static void c_gelu_tanh(tc_env_t *e, bp_dtype_t dt) {
  if (!tc_unary_claimed(e, BP_UNARY_GELU_TANH)) {
    /* unary is claimed but not this op: refused, never run */
    const int64_t s1[1] = {3};
    tc_tensor_t x = mo_rand(e, dt, 1, s1, TC_CONTIG, -1, 1, 1),
                y = tc_tensor(e, dt, 1, s1, TC_CONTIG, NULL);
    tc_expect_reject(e, bp_unary(e->s, BP_UNARY_GELU_TANH, &x.t, &y.t), BP_ERR_UNSUPPORTED,
                     "gelu_tanh", "gelu_tanh on a device without the feature");
    printf("  gelu_tanh %s: refused (no BP_FEATURE_UNARY_GELU_TANH)\n", bp_dtype_name(dt));
    tc_tensor_free(&x), tc_tensor_free(&y);
    return;
  }
  const int64_t s[2] = {9, 37};
  for (int l = 0; l < TC_LAYOUT_COUNT; l++) {
    tc_tensor_t x = mo_rand(e, dt, 2, s, (tc_layout_t)l, -6, 6, 20 + l);
    /* contiguous x and y take the CPU's vector path */
    tc_tensor_t y =
        tc_tensor(e, dt, 2, s, l == TC_CONTIG ? TC_CONTIG : (tc_layout_t)((l + 1) % 3), NULL);
    if (tc_expect_status(e, bp_unary(e->s, BP_UNARY_GELU_TANH, &x.t, &y.t), BP_OK, "gelu_tanh")) {
      double *xv = tc_values(&x), *got = tc_download(&y), want[9 * 37];
      for (int i = 0; i < 9 * 37; i++) want[i] = mo_gelu_tanh(xv[i]);
      tc_expect_close(e, dt, got, want, 9 * 37, 1, "gelu_tanh %s layout %d", bp_dtype_name(dt), l);
      free(xv), free(got);
    }
    tc_tensor_free(&x), tc_tensor_free(&y);
  }
}

/* ---- GLU ---------------------------------------------------------------- */

/* l lays out gate and y, lu up: contiguous ones take the CPU's vector path,
 * strided or permuted ones the reference. */
static void glu_one(tc_env_t *e, bp_dtype_t dt, bp_glu_kind_t kind, int rg, const int64_t *gs,
                    tc_layout_t l, tc_layout_t lu, bool in_place) {
  const int64_t ys[2] = {7, 33};
  tc_tensor_t g = mo_rand(e, dt, rg, gs, l, -4, 4, 30 + kind);
  tc_tensor_t u = mo_rand(e, dt, 2, ys, lu, -2, 2, 40 + kind);
  tc_tensor_t y = in_place ? u : tc_tensor(e, dt, 2, ys, l, NULL);
  double *uv = tc_values(&u);
  if (tc_expect_status(e, bp_glu(e->s, kind, &g.t, &u.t, &y.t), BP_OK, "glu kind %d", kind)) {
    double *gv = tc_values(&g), *got = tc_download(&y), want[7 * 33];
    for (int64_t i = 0; i < 7 * 33; i++)
      want[i] = mo_glu(kind, gv[tc_bcast_index(2, ys, i, rg, gs)], uv[i]);
    tc_expect_close(e, dt, got, want, 7 * 33, 1, "glu %s kind %d in place %d", bp_dtype_name(dt),
                    kind, in_place);
    free(gv), free(got);
  }
  free(uv);
  if (!in_place) tc_tensor_free(&y);
  tc_tensor_free(&g), tc_tensor_free(&u);
}

static void c_glu(tc_env_t *e, bp_dtype_t dt) {
  const int64_t full[2] = {7, 33}, row[2] = {1, 33}, col[2] = {7, 1};
  for (int k = 0; k < BP_GLU_COUNT; k++) {
    glu_one(e, dt, (bp_glu_kind_t)k, 2, col, TC_CONTIG, TC_CONTIG, false); /* one gate per row */
    glu_one(e, dt, (bp_glu_kind_t)k, 2, full, TC_CONTIG, TC_CONTIG, false);
    glu_one(e, dt, (bp_glu_kind_t)k, 2, full, (tc_layout_t)(1 + k % 2), (tc_layout_t)(2 - k % 2),
            false);
    glu_one(e, dt, (bp_glu_kind_t)k, 2, row, TC_CONTIG, TC_CONTIG, false);
  }
  glu_one(e, dt, BP_GLU_SWIGLU, 2, full, TC_CONTIG, TC_CONTIG, true);
  glu_one(e, dt, BP_GLU_GEGLU, 2, full, TC_STRIDED, TC_STRIDED, true);
}

/* ---- RoPE --------------------------------------------------------------- */

/* pos_kind 0: positions NULL (offset 7), 1: i32 [S], 2: i64 [B, S]. */
static void rope_one(tc_env_t *e, bp_dtype_t dt, bp_rope_mode_t mode, int32_t rd, int pos_kind,
                     tc_layout_t lx, bool in_place) {
  const int64_t xs[4] = {2, 5, 3, 10}, ps1[1] = {5}, ps2[2] = {2, 5};
  int64_t pos[10];
  double pv[10];
  for (int i = 0; i < 10; i++) {
    pv[i] = pos_kind == 2 ? (double)(3 * i + (i % 3)) : (double)(i % 5) * 11 + 2;
    pos[i] = pos_kind == 0 ? 7 + i % 5 : (int64_t)pv[pos_kind == 1 ? i % 5 : i];
  }
  tc_tensor_t x = mo_rand(e, dt, 4, xs, lx, -2, 2, 50 + rd);
  /* a contiguous y takes the CPU's vector path, a strided one the reference */
  tc_tensor_t y =
      in_place ? x : tc_tensor(e, dt, 4, xs, lx == TC_CONTIG ? TC_CONTIG : TC_STRIDED, NULL);
  tc_tensor_t p = {0};
  if (pos_kind)
    p = tc_tensor(e, pos_kind == 1 ? BP_I32 : BP_I64, pos_kind, pos_kind == 1 ? ps1 : ps2,
                  TC_CONTIG, pv);
  double *xv = tc_values(&x);
  bp_status_t st = bp_rope(e->s, mode, rd, 10000.0, 7, pos_kind ? &p.t : NULL, &x.t, &y.t);
  if (tc_expect_status(e, st, BP_OK, "rope mode %d rd %d", mode, rd)) {
    double *got = tc_download(&y), want[300];
    mo_rope(mode, rd, 10000.0, xs, pos, xv, want);
    tc_expect_close(e, dt, got, want, 300, 2, "rope %s mode %d rd %d positions %d in place %d",
                    bp_dtype_name(dt), mode, rd, pos_kind, in_place);
    free(got);
  }
  free(xv);
  if (pos_kind) tc_tensor_free(&p);
  if (!in_place) tc_tensor_free(&y);
  tc_tensor_free(&x);
}

static void c_rope(tc_env_t *e, bp_dtype_t dt) {
  for (int m = 0; m < BP_ROPE_MODE_COUNT; m++) {
    rope_one(e, dt, (bp_rope_mode_t)m, 10, 0, TC_CONTIG, false);
    rope_one(e, dt, (bp_rope_mode_t)m, 8, 1, TC_PERMUTED, false);
    rope_one(e, dt, (bp_rope_mode_t)m, 6, 2, TC_STRIDED, false);
    rope_one(e, dt, (bp_rope_mode_t)m, 8, 2, TC_CONTIG, true);
  }
}

int main(void) {
  static const mo_case_t cases[] = {
      {"gather", BP_OP_GATHER, true, c_gather},
      {"arange", BP_OP_ARANGE, true, c_arange},
      /* a device without the op runs it composed by the core (bp_binary) */
      {"binary_scalar", BP_OP_BINARY, false, c_binary_scalar},
      {"gelu_tanh", BP_OP_UNARY, false, c_gelu_tanh},
      {"glu", BP_OP_GLU, false, c_glu},
      {"rope", BP_OP_ROPE, false, c_rope},
  };
  return mo_run("model ops", cases, (int)(sizeof cases / sizeof cases[0]));
}
