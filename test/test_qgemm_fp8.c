/*
 * test_qgemm_fp8.c — bp_qgemm with fp8 a and b (core/backplane_quant.h)
 * through the public API on "cpu" (AMX-BF16 tiles where the CPU has them)
 * and "cpu-ref": every e4m3 / e5m2 pair, c f32 / f16 / bf16, scales per
 * row / per tensor / none, odd sizes past the k blocks, transposed views
 * of a, b and c, batches with b shared and batched, all 256 codes of each
 * format in a and in b (NaN and infinities propagate as the double sum
 * here gives them); each result within docs/ops.md's tolerance of this
 * file's own double sums, and cpu within twice that of cpu-ref; again
 * through the f32 GEMM (BP_CPU_QGEMM_ISA=avx2, a CPU without AMX). The
 * errors (fp8 with i8, a c of i32 / i8) name the operands and write
 * nothing; device "i8only" (test/fixtures/i8only_plugin.c, no fp8 claim)
 * refuses fp8 with the reason, or falls back to cpu.
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

#include "qgemm_fp8_ref.h"

/* ---- one GEMM -------------------------------------------------------------- */

/* Runs the case on v; returns c (stored layout) as read back. */
static char *run(dev_t_ v, const gcase_t *g, const gdata_t *d, bp_dtype_t adt, bp_dtype_t bdt,
                 bp_dtype_t cdt) {
  int64_t asz = g->batch * g->m * g->k, bsz = (g->b_batched ? g->batch : 1) * g->k * g->n;
  size_t es = cdt == BP_F32 ? 4 : 2, cbytes = (size_t)(g->batch * g->m * g->n) * es;
  bp_buffer_t *ba = buf(v.d, d->a, (uint64_t)asz), *bb = buf(v.d, d->b, (uint64_t)bsz);
  bp_buffer_t *bsa = buf(v.d, d->sa, sizeof d->sa), *bsb = buf(v.d, d->sb, sizeof d->sb);
  bp_buffer_t *bc = buf(v.d, NULL, cbytes);
  int64_t ash[3] = {g->batch, g->m, g->k},
          ast[3] = {g->m * g->k, g->at ? 1 : g->k, g->at ? g->m : 1};
  int64_t bsh[3] = {g->batch, g->k, g->n},
          bst[3] = {g->k * g->n, g->bt ? 1 : g->n, g->bt ? g->k : 1};
  int64_t csh[3] = {g->batch, g->m, g->n},
          cst[3] = {g->m * g->n, g->ct ? 1 : g->n, g->ct ? g->m : 1};
  bp_tensor_t ta = ten(ba, adt, 3, ash, ast), tc = ten(bc, cdt, 3, csh, cst);
  bp_tensor_t tb = g->b_batched ? ten(bb, bdt, 3, bsh, bst) : ten(bb, bdt, 2, bsh + 1, bst + 1);
  int64_t one = 1, zero = 0;
  bp_tensor_t tsa =
      g->scales == 2 ? ten(bsa, BP_F32, 1, &g->m, &one) : ten(bsa, BP_F32, 0, NULL, NULL);
  bp_tensor_t tsb =
      g->scales == 2 ? ten(bsb, BP_F32, 1, &g->n, &one) : ten(bsb, BP_F32, 0, NULL, NULL);
  (void)zero;
  bp_status_t st =
      bp_qgemm(v.s, &ta, &tb, g->scales ? &tsa : NULL, g->scales ? &tsb : NULL, 0.0f, &tc);
  if (st != BP_OK) print_error("bp_qgemm: %s\n", bp_last_error());
  assert_int_equal(st, BP_OK);
  assert_int_equal(bp_stream_synchronize(v.s), BP_OK);
  char *c = malloc(cbytes);
  assert_int_equal(bp_buffer_read(bc, 0, c, cbytes), BP_OK);
  bp_buffer_free(ba), bp_buffer_free(bb), bp_buffer_free(bsa), bp_buffer_free(bsb),
      bp_buffer_free(bc);
  return c;
}

/* The case on cpu and cpu-ref, each against the sums here, cpu against
 * cpu-ref. */
static void check_case(dev_t_ cpu, dev_t_ ref, const gcase_t *g, const gdata_t *d, bp_dtype_t adt,
                       bp_dtype_t bdt, bp_dtype_t cdt) {
  char *c = run(cpu, g, d, adt, bdt, cdt), *r = run(ref, g, d, adt, bdt, cdt);
  for (int64_t bi = 0; bi < g->batch; bi++)
    for (int64_t i = 0; i < g->m; i++)
      for (int64_t j = 0; j < g->n; j++) {
        double s = 0, t = 0;
        for (int64_t l = 0; l < g->k; l++) {
          double p =
              fp8_value(d->a[a_off(g, bi, i, l)], adt) * fp8_value(d->b[b_off(g, bi, l, j)], bdt);
          s += p;
          t += fabs(p);
        }
        double sa = g->scales == 2 ? d->sa[i] : g->scales ? d->sa[0] : 1;
        double sb = g->scales == 2 ? d->sb[j] : g->scales ? d->sb[0] : 1;
        double x = s * sa * sb, tt = t * fabs(sa * sb);
        int64_t e = c_off(g, bi, i, j);
        double gc = c_value(c, cdt, e), gr = c_value(r, cdt, e);
        bool ok = within(gc, x, tt, g->k, cdt, 1) && within(gr, x, tt, g->k, cdt, 1) &&
                  (isnan(x) || isinf(x) || within(gc, gr, tt, g->k, cdt, 2));
        if (!ok)
          print_error(
              "%s x %s -> %s [%lld,%lld,%lld] %lldx%lldx%lld: cpu %.9g ref %.9g want %.9g\n",
              bp_dtype_name(adt), bp_dtype_name(bdt), bp_dtype_name(cdt), (long long)bi,
              (long long)i, (long long)j, (long long)g->m, (long long)g->n, (long long)g->k, gc, gr,
              x);
        assert_true(ok);
      }
  free(c), free(r);
}

static const bp_dtype_t fmts[2] = {BP_FP8_E4M3, BP_FP8_E5M2};
static const bp_dtype_t cdts[3] = {BP_F32, BP_F16, BP_BF16};

static void fill(gdata_t *d, const gcase_t *g, bp_dtype_t adt, bp_dtype_t bdt) {
  int64_t asz = g->batch * g->m * g->k, bsz = (g->b_batched ? g->batch : 1) * g->k * g->n;
  d->a = malloc((size_t)asz), d->b = malloc((size_t)bsz);
  for (int64_t i = 0; i < asz; i++) d->a[i] = rand_code(adt);
  for (int64_t i = 0; i < bsz; i++) d->b[i] = rand_code(bdt);
  /* e5m2 x e5m2 sums reach 1e12: small scales keep an f16 c mostly finite */
  float base = adt == BP_FP8_E5M2 && bdt == BP_FP8_E5M2 ? 1.0f / 65536 : 0.125f;
  for (int i = 0; i < 512; i++) {
    d->sa[i] = base * (0.5f + 0.125f * (float)(i % 7));
    d->sb[i] = 0.25f + 0.0625f * (float)(i % 5);
  }
}

/* ---- tests ------------------------------------------------------------------ */

static void test_pairs(void **state) {
  (void)state;
  static const gcase_t cases[] = {
      {2, 37, 45, 70, true, false, false, false, 2},
      {2, 33, 40, 300, false, false, false, false, 1},
      {1, 70, 66, 600, false, true, true, false, 2},
      {3, 5, 3, 1, true, false, true, true, 0},
      {1, 64, 96, 33, false, true, false, true, 2},
  };
  dev_t_ cpu = open_dev(ctx, "cpu", true), ref = open_dev(ctx, "cpu-ref", true);
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
    for (int p = 0; p < 4; p++)
      for (int cd = 0; cd < 3; cd++) {
        if (ci >= 2 && (p + cd) % 2) continue; /* the big ones: half the grid */
        gdata_t d;
        fill(&d, &cases[ci], fmts[p & 1], fmts[p >> 1]);
        check_case(cpu, ref, &cases[ci], &d, fmts[p & 1], fmts[p >> 1], cdts[cd]);
        free(d.a), free(d.b);
      }
  close_dev(cpu), close_dev(ref);
}

/* All 256 codes in a [16, 16], then in b (stored transposed): NaN codes
 * give NaN, infinities infinities (or NaN against a zero), the rest within
 * the bound. */
static void test_all_codes(void **state) {
  (void)state;
  dev_t_ cpu = open_dev(ctx, "cpu", true), ref = open_dev(ctx, "cpu-ref", true);
  for (int side = 0; side < 2; side++)
    for (int p = 0; p < 4; p++) {
      bp_dtype_t adt = fmts[p & 1], bdt = fmts[p >> 1];
      gcase_t g = {1, 16, 16, 16, false, false, side == 1, false, 2};
      gdata_t d;
      fill(&d, &g, adt, bdt);
      /* row (column of b) r, element l: code 16 l + (r + l) % 16, so e5m2's
       * +inf (124) is alone in row 5 without a NaN code, -inf (252) in 13 */
      for (int r = 0; r < 16; r++)
        for (int l = 0; l < 16; l++)
          (side == 0 ? d.a : d.b)[r * 16 + l] = (uint8_t)(l * 16 + (r + l) % 16);
      /* and a zero meets the infinity once: inf x 0 gives NaN */
      if (side == 0)
        d.b[7 * 16 + 5] = 0;
      else
        d.a[5 * 16 + 7] = 0;
      for (int cd = 0; cd < 3; cd++) check_case(cpu, ref, &g, &d, adt, bdt, cdts[cd]);
      free(d.a), free(d.b);
    }
  close_dev(cpu), close_dev(ref);
}

/* The call fails with st and a message holding text; c keeps its filler. */
/* The same grid and codes through the f32 GEMM, the path of a CPU
 * without AMX-BF16. */
static void test_f32_path(void **state) {
  setenv("BP_CPU_QGEMM_ISA", "avx2", 1);
  test_pairs(state);
  test_all_codes(state);
  unsetenv("BP_CPU_QGEMM_ISA");
}

static void expect_fail(bp_status_t got, bp_status_t st, const char *text, bp_buffer_t *c,
                        uint64_t bytes) {
  assert_int_equal(got, st);
  if (!strstr(bp_last_error(), text)) print_error("message: %s\nwant: %s\n", bp_last_error(), text);
  assert_non_null(strstr(bp_last_error(), text));
  uint8_t *p = malloc(bytes);
  assert_int_equal(bp_buffer_read(c, 0, p, bytes), BP_OK);
  for (uint64_t i = 0; i < bytes; i++) assert_int_equal(p[i], 0xAB);
  free(p);
}

static void test_errors(void **state) {
  (void)state;
  dev_t_ v = open_dev(ctx, "cpu", true);
  bp_buffer_t *b = buf(v.d, NULL, 4096), *bc = buf(v.d, NULL, 128);
  int64_t sh[2] = {4, 4}, st[2] = {4, 1};
  bp_tensor_t e4 = ten(b, BP_FP8_E4M3, 2, sh, st), e5 = ten(b, BP_FP8_E5M2, 2, sh, st);
  bp_tensor_t i8 = ten(b, BP_I8, 2, sh, st), u8 = ten(b, BP_U8, 2, sh, st);
  bp_tensor_t c32 = ten(bc, BP_F32, 2, sh, st), ci32 = ten(bc, BP_I32, 2, sh, st);
  bp_tensor_t ci8 = ten(bc, BP_I8, 2, sh, st);
  expect_fail(bp_qgemm(v.s, &e4, &i8, NULL, NULL, 1.0f, &c32), BP_ERR_INVALID_ARGUMENT,
              "bp_qgemm: a (fp8_e4m3) and b (i8): fp8 operands do not mix with i8 or u8", bc, 128);
  expect_fail(bp_qgemm(v.s, &u8, &e5, NULL, NULL, 1.0f, &c32), BP_ERR_INVALID_ARGUMENT,
              "bp_qgemm: a (u8) and b (fp8_e5m2): fp8 operands do not mix", bc, 128);
  expect_fail(bp_qgemm(v.s, &e4, &e5, NULL, NULL, 1.0f, &ci32), BP_ERR_INVALID_ARGUMENT,
              "bp_qgemm: c has dtype i32; expected f32, f16 or bf16 with fp8 a and b", bc, 128);
  expect_fail(bp_qgemm(v.s, &e5, &e5, NULL, NULL, 1.0f, &ci8), BP_ERR_INVALID_ARGUMENT,
              "bp_qgemm: c has dtype i8; expected f32, f16 or bf16", bc, 128);
  bp_buffer_free(b), bp_buffer_free(bc);
  close_dev(v);
}

/* i8only claims no fp8: refused with the reason and c untouched without
 * fallback (its kernels would fail an fp8 operand), run on cpu with it. */
static void test_i8only_refuses_fp8(void **state) {
  (void)state;
  for (int fb = 0; fb <= 1; fb++) {
    dev_t_ v = open_dev(ctx, "i8only", !fb);
    uint8_t a[6] = {0x38, 0x40, 0xB8, 0x30, 0x00, 0x44},
            bm[6] = {0x3C, 0x40, 0x44, 0xBC, 0x38, 0x00};
    bp_buffer_t *ba = buf(v.d, a, 6), *bb = buf(v.d, bm, 6), *bc = buf(v.d, NULL, 16);
    int64_t ash[2] = {2, 3}, ast[2] = {3, 1}, bsh[2] = {3, 2}, bst[2] = {2, 1};
    int64_t csh[2] = {2, 2}, cst[2] = {2, 1};
    bp_tensor_t tc = ten(bc, BP_F32, 2, csh, cst);
    for (int p = 0; p < 4; p++) {
      bp_dtype_t adt = fmts[p & 1], bdt = fmts[p >> 1];
      bp_tensor_t ta = ten(ba, adt, 2, ash, ast), tb = ten(bb, bdt, 2, bsh, bst);
      bp_status_t st = bp_qgemm(v.s, &ta, &tb, NULL, NULL, 1.0f, &tc);
      if (!fb) {
        expect_fail(st, BP_ERR_UNSUPPORTED, "does not support qgemm for fp8_e", bc, 16);
        continue;
      }
      if (st != BP_OK) print_error("pair %d: %s\n", p, bp_last_error());
      assert_int_equal(st, BP_OK);
      assert_int_equal(bp_stream_synchronize(v.s), BP_OK);
      float c[4];
      assert_int_equal(bp_buffer_read(bc, 0, c, 16), BP_OK);
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
          double want = 0;
          for (int l = 0; l < 3; l++)
            want += fp8_value(a[i * 3 + l], adt) * fp8_value(bm[l * 2 + j], bdt);
          assert_true(c[i * 2 + j] == (float)want);
        }
    }
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
      cmocka_unit_test(test_pairs),
      cmocka_unit_test(test_all_codes),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_i8only_refuses_fp8),
      /* last: a failure leaves BP_CPU_QGEMM_ISA set */
      cmocka_unit_test(test_f32_path),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
